//! The chart's canaries (issue 53, docs/attestation.md): on by default,
//! with the agent's own image and the release namespace, a deny-all
//! NetworkPolicy for the canary pods; `canaries.enabled=false` passes
//! `--canaries=off` and ships no policy; the values reach the flags, and
//! a period the agent would refuse is refused by the schema.

use yaml_serde::Value;

use super::{ObjectKey, agent_container, args_of, objects, template, template_ok};

/// The canary pods' NetworkPolicy, if rendered.
fn canary_policy(objs: &std::collections::BTreeMap<ObjectKey, Value>) -> Option<&Value> {
    objs.iter()
        .find(|((k, _, n), _)| k == "NetworkPolicy" && n.ends_with("-canary"))
        .map(|(_, v)| v)
}

#[test]
fn canaries_are_on_by_default_with_the_agents_image_and_a_deny_all_policy() {
    let objs = objects(&template_ok(&[]));
    let container = agent_container(&objs);
    let args = args_of(container);
    for want in [
        "--canary-namespace=$(POD_NAMESPACE)",
        "--canary-period-seconds=600",
        "--canary-max-active=4",
        "--canary-budget-per-hour=360",
    ] {
        assert!(args.iter().any(|a| a == want), "{want}: {args:?}");
    }
    assert!(!args.iter().any(|a| a == "--canaries=off"), "{args:?}");
    // The image canaries run is the container's own.
    let env = container["env"].as_sequence().expect("env");
    let image = env
        .iter()
        .find(|e| e["name"] == "BERTH_CANARY_IMAGE")
        .map(|e| e["value"].clone())
        .expect("BERTH_CANARY_IMAGE");
    assert_eq!(image, container["image"]);

    let policy = canary_policy(&objs).expect("the canaries' NetworkPolicy");
    assert_eq!(policy["metadata"]["namespace"], "berth-system");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["berth.dev/canary"],
        "true"
    );
    // Both directions governed, no rule: nothing in, nothing out.
    assert_eq!(
        policy["spec"]["policyTypes"],
        yaml_serde::to_value(["Ingress", "Egress"]).expect("yaml")
    );
    assert!(policy["spec"]["ingress"].is_null() && policy["spec"]["egress"].is_null());
    // The kustomize base ships the same policy.
    let base: Value = yaml_serde::from_str(
        &std::fs::read_to_string(
            crate::alerts::repo().join("assets/deploy/canary-network-policy.yaml"),
        )
        .expect("canary-network-policy.yaml"),
    )
    .expect("yaml");
    assert_eq!(base["spec"], policy["spec"]);
}

#[test]
fn canary_values_reach_the_flags_and_off_says_so() {
    let objs = objects(&template_ok(&[
        "--set",
        "canaries.period=90s",
        "--set",
        "canaries.maxActive=2",
        "--set",
        "canaries.budgetPerHour=1000000",
    ]));
    let args = args_of(agent_container(&objs));
    for want in [
        "--canary-period-seconds=90",
        "--canary-max-active=2",
        "--canary-budget-per-hour=1000000",
    ] {
        assert!(args.iter().any(|a| a == want), "{want}: {args:?}");
    }
    let unlimited = objects(&template_ok(&["--set", "canaries.budgetPerHour=unlimited"]));
    let args = args_of(agent_container(&unlimited));
    assert!(
        args.iter()
            .any(|a| a == "--canary-budget-per-hour=unlimited"),
        "{args:?}"
    );
    // The benchmark's flag is no value of the chart's: no rendering has it.
    for objs in [&objs, &unlimited] {
        let args = args_of(agent_container(objs));
        assert!(!args.iter().any(|a| a.contains("simulated")), "{args:?}");
    }

    let off = objects(&template_ok(&["--set", "canaries.enabled=false"]));
    let container = agent_container(&off);
    let args = args_of(container);
    assert!(args.iter().any(|a| a == "--canaries=off"), "{args:?}");
    assert!(!args.iter().any(|a| a.starts_with("--canary-")), "{args:?}");
    assert!(
        !container["env"]
            .as_sequence()
            .expect("env")
            .iter()
            .any(|e| e["name"] == "BERTH_CANARY_IMAGE")
    );
    assert!(canary_policy(&off).is_none());

    // Under the agent's 10 s floor, not whole seconds, or no number.
    for bad in ["5s", "10m", "0s", "600"] {
        let err = template(&["--set-string", &format!("canaries.period={bad}")]).expect_err(bad);
        assert!(
            err.contains("canaries") && err.contains("period"),
            "{bad}: {err}"
        );
    }
    let err = template(&["--set", "canaries.maxActive=0"]).expect_err("maxActive 0");
    assert!(err.contains("maxActive"), "{err}");
    // A budget of none, a negative one, or a word other than unlimited.
    for bad in ["0", "-5", "1000001", "lots"] {
        let err = template(&["--set", &format!("canaries.budgetPerHour={bad}")]).expect_err(bad);
        assert!(err.contains("budgetPerHour"), "{bad}: {err}");
    }
}
