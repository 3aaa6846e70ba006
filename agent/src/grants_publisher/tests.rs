use super::*;

#[test]
fn without_pod_access_the_status_says_bare_pods_were_not_checked() {
    let c = bare_pods_condition(false, Some(3));
    assert_eq!(c.type_, "BarePodsChecked");
    assert_eq!(c.status, "False");
    assert_eq!(c.reason, "NoPodAccess");
    assert!(
        c.message
            .starts_with("bare pods not checked (agent has no Pod access)")
    );
    assert_eq!(c.observed_generation, Some(3));

    let c = bare_pods_condition(true, None);
    assert_eq!(c.status, "True");
    assert_eq!(c.reason, "PodsWatched");
}

#[test]
fn a_retired_grant_never_claims_nothing_needs_it_from_missing_data() {
    let m = retired_message(0, "runsc", "gvisor", false);
    assert!(m.contains("bare pods were not checked"), "{m}");
    assert!(
        m.contains("delete this RuntimeGrant once no bare pod uses RuntimeClass gvisor"),
        "{m}"
    );
    let m = retired_message(2, "runsc", "gvisor", false);
    assert!(m.contains("2 workload(s) still need handler runsc"), "{m}");
    assert!(m.contains("bare pods not checked"), "{m}");
    let m = retired_message(2, "runsc", "gvisor", true);
    assert!(!m.contains("not checked"), "{m}");
}
