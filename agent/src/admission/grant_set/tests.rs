use super::*;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn granted() -> Verdict {
    Verdict::Allowed {
        reason: reasons::GRANTED,
        warning: None,
    }
}

fn published(digest: &str) -> Leader {
    Leader::Published {
        holder: "agent-0".into(),
        digest: digest.into(),
    }
}

#[test]
fn digests() {
    assert!(is_digest(A));
    assert!(is_digest(NO_FILE));
    assert!(!is_digest(""));
    assert!(!is_digest(&A[1..]));
    assert!(!is_digest(&A.to_uppercase()));
    assert!(!is_digest(&format!("{}\u{202e}", &A[1..])));
    assert_eq!(own_digest(None), NO_FILE);
}

#[test]
fn the_lease_says_who_leads_with_what() {
    assert_eq!(leader_from_lease(None, Some(A)), Leader::Nobody);
    assert_eq!(leader_from_lease(Some(""), Some(A)), Leader::Nobody);
    assert_eq!(leader_from_lease(Some("agent-0"), Some(A)), published(A));
    // An older agent, or a planted value that is no digest.
    for bad in [None, Some("yes"), Some("AAAA")] {
        assert_eq!(
            leader_from_lease(Some("agent-0"), bad),
            Leader::Unpublished {
                holder: "agent-0".into()
            }
        );
    }
}

#[test]
fn only_the_same_digest_agrees() {
    assert_eq!(agreement(A, &published(A)), Agreement::Same);
    assert_eq!(agreement(NO_FILE, &published(NO_FILE)), Agreement::Same);
    for leader in [
        published(B),
        published(NO_FILE),
        Leader::Nobody,
        Leader::Unseen,
        Leader::Unpublished {
            holder: "agent-0".into(),
        },
    ] {
        assert!(
            matches!(agreement(A, &leader), Agreement::Unconfirmed(_)),
            "{leader:?}"
        );
    }
    let Agreement::Unconfirmed(why) = agreement(A, &published(B)) else {
        panic!("differs")
    };
    assert!(
        why.contains("aaaaaaaaaaaa") && why.contains("bbbbbbbbbbbb"),
        "{why}"
    );
    assert!(why.contains("agent-0"), "{why}");
}

#[test]
fn a_holder_name_from_the_cluster_is_sanitized() {
    let Agreement::Unconfirmed(why) = agreement(
        A,
        &Leader::Unpublished {
            holder: "evil\u{1b}[2J\u{202e}".into(),
        },
    ) else {
        panic!("unconfirmed")
    };
    assert!(
        !why.contains('\u{1b}') && !why.contains('\u{202e}'),
        "{why:?}"
    );
}

#[test]
fn a_grant_is_refused_with_retry_unless_confirmed() {
    let unconfirmed = Agreement::Unconfirmed("the leader differs".into());
    match gate(granted(), &unconfirmed, false) {
        Verdict::Denied { reason, message } => {
            assert_eq!(reason, RELOADING);
            assert!(
                message.starts_with("grants are being reloaded, retry: the leader differs"),
                "{message}"
            );
        }
        other => panic!("admitted: {other:?}"),
    }
    // Suspending, or a metadata-only update, of a Runtime whose profile is
    // granted here: every grant set admits it.
    assert_eq!(gate(granted(), &unconfirmed, true), granted());
    // But "admitted anyway" never turns a refusal into an admission.
    let refused = Verdict::Denied {
        reason: reasons::NOT_GRANTED,
        message: "m".into(),
    };
    assert!(!gate(refused, &unconfirmed, true).is_allowed());
    // Normal operation: unchanged.
    assert_eq!(gate(granted(), &Agreement::Same, false), granted());
    assert_eq!(gate(granted(), &Agreement::Alone, false), granted());
}

#[test]
fn what_does_not_depend_on_grants_is_judged_as_always() {
    let unconfirmed = Agreement::Unconfirmed("no agent leads".into());
    // No profile, a suspended or metadata-only change, a deleting Runtime,
    // another Runtime holding the identity, a failed read.
    let independent = [
        Verdict::Allowed {
            reason: reasons::NOT_REQUESTED,
            warning: None,
        },
        Verdict::Allowed {
            reason: reasons::NOT_GRANTED,
            warning: Some("accepted because spec.suspend is true".into()),
        },
        Verdict::Allowed {
            reason: "Deleting",
            warning: None,
        },
        Verdict::Allowed {
            reason: reasons::IDENTITY_TAKEN,
            warning: Some("accepted because spec is unchanged".into()),
        },
        Verdict::Denied {
            reason: reasons::IDENTITY_TAKEN,
            message: "taken".into(),
        },
        Verdict::Denied {
            reason: "LookupFailed",
            message: "x".into(),
        },
    ];
    for v in independent {
        assert_eq!(gate(v.clone(), &unconfirmed, false), v);
    }
}

#[test]
fn a_refusal_about_a_binding_stays_a_refusal_and_says_it_may_pass_later() {
    let unconfirmed = Agreement::Unconfirmed("the leader differs".into());
    let v = Verdict::Denied {
        reason: reasons::NOT_GRANTED,
        message: "NotGranted: profile x".into(),
    };
    match gate(v, &unconfirmed, false) {
        Verdict::Denied { reason, message } => {
            assert_eq!(reason, reasons::NOT_GRANTED);
            assert!(message.starts_with("NotGranted: profile x ("), "{message}");
            assert!(message.contains(RETRY), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_following_replica_tracks_the_lease_and_the_gauge() {
    let gauge = Gauge::default();
    let set = GrantSet::following(A.into(), gauge.clone());
    // Not read yet: fail closed.
    assert!(matches!(set.agreement(), Agreement::Unconfirmed(_)));
    assert_eq!(gauge.get(), 1);
    set.observe(published(A));
    assert_eq!(set.agreement(), Agreement::Same);
    assert_eq!(gauge.get(), 0);
    // A new leader with another file.
    set.observe(published(B));
    assert!(matches!(set.agreement(), Agreement::Unconfirmed(_)));
    assert_eq!(gauge.get(), 1);
    set.observe(Leader::Nobody);
    assert_eq!(gauge.get(), 1);
    set.observe(published(A));
    assert_eq!(gauge.get(), 0);

    // Without leader election the own file rules, whatever is observed.
    let alone = GrantSet::alone(B.into());
    alone.observe(published(A));
    assert_eq!(alone.agreement(), Agreement::Alone);
    assert_eq!(gate(granted(), &alone.agreement(), false), granted());
}

/// A Lease that says `says` (or fails with `None`), counting reads; with
/// `overtaken`, the elector observes that leader while the read is out.
struct FakeLease {
    says: Option<Leader>,
    reads: std::sync::atomic::AtomicUsize,
    overtaken: Option<(GrantSet, Leader)>,
}

impl FakeLease {
    fn saying(says: Option<Leader>) -> Self {
        Self {
            says,
            reads: std::sync::atomic::AtomicUsize::new(0),
            overtaken: None,
        }
    }
}

impl LeaseSource for Arc<FakeLease> {
    fn read(&self) -> Pin<Box<dyn Future<Output = Option<Leader>> + Send + '_>> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Some((set, leader)) = &self.overtaken {
            set.observe(leader.clone());
        }
        let says = self.says.clone();
        Box::pin(async move { says })
    }
}

fn reads(lease: &FakeLease) -> usize {
    lease.reads.load(std::sync::atomic::Ordering::SeqCst)
}

#[tokio::test]
async fn an_unconfirmed_replica_reads_the_lease_before_it_refuses() {
    // Ready, but its last read said nobody leads; the Lease now names a
    // leader with the same file: confirmed, after one read.
    let set = GrantSet::following(A.into(), Gauge::default());
    set.observe(Leader::Nobody);
    let lease = Arc::new(FakeLease::saying(Some(published(A))));
    set.read_lease_from(Box::new(lease.clone()));
    assert_eq!(set.confirmed().await, Agreement::Same);
    assert_eq!(reads(&lease), 1);
    // Confirmed: judged without another read.
    assert_eq!(set.confirmed().await, Agreement::Same);
    assert_eq!(reads(&lease), 1);
}

#[tokio::test]
async fn a_flood_of_admissions_is_one_read_per_interval() {
    // The Lease really names a leader with another file: refused, and the
    // admissions right after are judged on that one read.
    let set = GrantSet::following(A.into(), Gauge::default());
    let lease = Arc::new(FakeLease::saying(Some(published(B))));
    set.read_lease_from(Box::new(lease.clone()));
    for _ in 0..20 {
        assert!(matches!(
            set.confirmed().await,
            Agreement::Unconfirmed(why) if why.contains("restart the replicas")
        ));
    }
    assert_eq!(reads(&lease), 1);
    std::thread::sleep(REREAD_EVERY);
    let _ = set.confirmed().await;
    assert_eq!(reads(&lease), 2);
}

#[tokio::test]
async fn a_failed_read_or_no_source_keeps_the_replica_closed() {
    let set = GrantSet::following(A.into(), Gauge::default());
    assert!(matches!(set.confirmed().await, Agreement::Unconfirmed(_)));
    let lease = Arc::new(FakeLease::saying(None));
    set.read_lease_from(Box::new(lease.clone()));
    assert!(matches!(
        set.confirmed().await,
        Agreement::Unconfirmed(why) if why.contains("not read the leader's Lease yet")
    ));
    assert_eq!(reads(&lease), 1);
    // Without leader election nothing is read.
    let alone = GrantSet::alone(B.into());
    let lease = Arc::new(FakeLease::saying(Some(published(A))));
    alone.read_lease_from(Box::new(lease.clone()));
    assert_eq!(alone.confirmed().await, Agreement::Alone);
    assert_eq!(reads(&lease), 0);
}

#[tokio::test]
async fn a_read_the_elector_overtook_is_dropped() {
    // While the on-demand read is out, the elector observes a leader with
    // another file; the read (an older "same") must not overwrite it.
    let set = GrantSet::following(A.into(), Gauge::default());
    let lease = Arc::new(FakeLease {
        overtaken: Some((set.clone(), published(B))),
        ..FakeLease::saying(Some(published(A)))
    });
    set.read_lease_from(Box::new(lease.clone()));
    assert!(matches!(
        set.confirmed().await,
        Agreement::Unconfirmed(why) if why.contains("restart the replicas")
    ));
    assert_eq!(reads(&lease), 1);
}
