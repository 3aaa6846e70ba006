//! Leader election: two agents on one Lease → one leader; when it dies the
//! standby takes over. Only the leader reports /health/leader; both report
//! /health/ready (so the agent's own rolling update can finish).

use std::time::Duration;

use berth_tests::harness::wait_for;
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, Granted, binding, create_runtime, metric_sum, setup, setup_granted,
    wait_condition, write_grants,
};

#[tokio::test]
async fn agent_two_agents_one_leader_and_failover() {
    let Granted { ns, bw, grants, .. } = setup_granted("agent-lead").await;
    let mut a = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.identity = format!("{}-b", ns.name);
    let b = Agent::spawn(opts).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(a.is_ready().await, "the first agent leads");
    assert!(!b.is_ready().await, "the second one stands by");
    assert_eq!(
        b.get("/health/ready").await.map(|(code, _)| code),
        Some(200),
        "a standby is ready to serve"
    );
    let leader = |m: &str| metric_sum(m, "berth_agent_leader", |_| true);
    assert_eq!(leader(&a.metrics().await), 1.0);
    assert_eq!(leader(&b.metrics().await), 0.0);

    a.kill();
    assert!(a.exit_code().is_some());
    wait_for("standby takes over", Duration::from_secs(60), || {
        b.is_ready()
    })
    .await;
    create_runtime(&ns, "web", json!({"runtimeProfile": bw})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
}

/// Expiry is judged by observed time, never by comparing the holder's
/// `renewTime` with the local clock: a holder whose clock runs an hour
/// behind but renews keeps the lease; once it stops renewing, the standby
/// takes over after one lease duration of its own clock.
#[tokio::test]
async fn agent_standby_judges_expiry_by_observed_time_not_renew_time() {
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    use kube::Api;
    use kube::api::{ObjectMeta, Patch, PatchParams};

    let (ns, class) = setup("agent-skew").await;
    let grants = write_grants(&[binding(&format!("{}-bw", ns.name), &class, "bounded-runc")]);
    let opts = AgentOpts::new(&ns.name, Some(&grants));
    let leases: Api<Lease> = Api::namespaced(ns.client.clone(), &ns.name);
    let lease_name = opts.lease_name.clone();
    // A live holder with a skewed clock: renews every second, writing a
    // renewTime an hour in the past.
    let renew = {
        let leases = leases.clone();
        let name = lease_name.clone();
        move || {
            let leases = leases.clone();
            let name = name.clone();
            async move {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some("skewed-holder".into()),
                        lease_duration_seconds: Some(4),
                        renew_time: Some(MicroTime(
                            Timestamp::now() - SignedDuration::from_hours(1),
                        )),
                        ..Default::default()
                    }),
                };
                leases
                    .patch(
                        &name,
                        &PatchParams::apply("skewed-holder").force(),
                        &Patch::Apply(&lease),
                    )
                    .await
                    .expect("renew the skewed lease");
            }
        }
    };
    renew().await;
    let ghost = tokio::spawn({
        let renew = renew.clone();
        async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                renew().await;
            }
        }
    });
    let agent = Agent::spawn(opts).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let holder = |l: Option<Lease>| l.and_then(|l| l.spec?.holder_identity);
    assert_eq!(
        holder(leases.get_opt(&lease_name).await.expect("lease")).as_deref(),
        Some("skewed-holder"),
        "a renewing holder keeps the lease whatever its renewTime says"
    );
    assert!(!agent.is_ready().await, "the standby does not lead");
    assert!(
        !agent.log_text().contains("acquired leadership"),
        "the standby never took the lease from a renewing holder:\n{}",
        agent.log_text()
    );

    ghost.abort();
    let stopped = std::time::Instant::now();
    wait_for("the standby takes over", Duration::from_secs(30), || {
        agent.is_ready()
    })
    .await;
    let took = stopped.elapsed();
    assert!(
        took >= Duration::from_secs(3),
        "took over {took:?} after the last renewal: not before a lease duration had passed"
    );
}

/// `berth-agent run` arguments that make it the admission webhook for the
/// namespaces labelled `berth.dev/it-webhook=<selector>` (self-signed, on
/// loopback, its own configuration).
fn webhook_args(selector: &str) -> Vec<String> {
    let port = berth_tests::bench::process::free_port();
    vec![
        "--webhook-listen".into(),
        format!("127.0.0.1:{port}"),
        "--self-signed".into(),
        "--webhook-url".into(),
        format!("https://127.0.0.1:{port}"),
        "--webhook-config-name".into(),
        format!("berth-it-{selector}"),
        "--webhook-namespace-label".into(),
        format!("{}={selector}", crate::support::webhook::WEBHOOK_LABEL),
    ]
}

/// A namespace whose admissions go to the webhook of an agent started with
/// [`webhook_args`] for the returned selector, with a RuntimeClass of
/// handler `bounded-runc`: (namespace, selector, class).
async fn webhook_namespace(prefix: &str) -> (berth_tests::harness::TestNamespace, String, String) {
    use crate::agent_support::{ENVIRONMENT, PROJECT, create_class};
    use crate::support::webhook::{WEBHOOK_LABEL, unique};

    let selector = unique(prefix);
    let ns = berth_tests::harness::TestNamespace::with_labels(
        &format!("agent-{prefix}"),
        &[
            ("berth.dev/project", PROJECT),
            ("berth.dev/environment", ENVIRONMENT),
            (WEBHOOK_LABEL, &selector),
        ],
    )
    .await;
    berth_tests::harness::install_crds(&ns.client).await;
    let class = format!("{}-bounded", ns.name);
    create_class(&ns.client, &class, "bounded-runc").await;
    (ns, selector, class)
}

/// One grant set per cluster (issue 27, point 7). Two replicas on one Lease
/// with DIFFERENT grants files: the leader's file grants `bw` to service
/// worker; the standby's also grants `bx` to service extra. Only the
/// standby is registered as the webhook, so every review of the test
/// namespace goes to it. Without the rule it would admit `bx`, which the
/// leader blocks (NotGranted) at reconcile; with it, it refuses with
/// "grants are being reloaded, retry" anything a binding would grant, and
/// still judges what needs no grant. Restarted with the leader's file, it
/// admits normally.
#[tokio::test]
async fn agent_standby_with_another_grants_file_never_admits_what_the_leader_blocks() {
    use berth_tests::harness::wait_for_value;
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::Api;

    use crate::agent_support::binding_for_service;
    use crate::support::webhook::{dry_run, refusal, runtime_for, runtimes};

    let (ns, selector, class) = webhook_namespace("gset").await;
    let (bw, bx) = (format!("{}-bw", ns.name), format!("{}-bx", ns.name));
    let leader_file = write_grants(&[binding(&bw, &class, "bounded-runc")]);
    let other_file = write_grants(&[
        binding(&bw, &class, "bounded-runc"),
        binding_for_service(&bx, &class, "bounded-runc", "extra"),
    ]);

    let a = Agent::start(AgentOpts::new(&ns.name, Some(&leader_file))).await;
    let mut opts = AgentOpts::new(&ns.name, Some(&other_file));
    opts.identity = format!("{}-b", ns.name);
    opts.extra_args = webhook_args(&selector);
    let mut b = Agent::spawn(opts.clone()).await;

    // The leader published the digest of the file it loaded on the Lease.
    let leases: Api<Lease> = Api::namespaced(ns.client.clone(), &ns.name);
    let lease_name = opts.lease_name.clone();
    let lease = leases.get(&lease_name).await.expect("lease");
    let published = lease
        .metadata
        .annotations
        .unwrap_or_default()
        .get("berth.dev/grants-sha256")
        .cloned();
    let leader_sha = berth_shared::grants::sha256_hex(&std::fs::read(&leader_file).expect("read"));
    assert_eq!(published.as_deref(), Some(leader_sha.as_str()));

    // The standby's webhook answers (a profile granted nowhere is refused
    // with or without the rule).
    let api = runtimes(&ns.client, &ns.name);
    wait_for_value(
        "the standby's webhook answers",
        Duration::from_secs(90),
        || {
            let api = api.clone();
            async move {
                match api
                    .create(
                        &dry_run(),
                        &runtime_for("probe", "worker", Some("nope"), false),
                    )
                    .await
                {
                    Err(kube::Error::Api(s)) if s.message.contains("NotGranted") => Some(()),
                    _ => None,
                }
            }
        },
    )
    .await;
    assert!(!b.is_ready().await, "b stands by");

    // The adversary: a tenant asks the standby for what only its file grants.
    let (code, msg) = refusal(
        api.create(&dry_run(), &runtime_for("extra", "extra", Some(&bx), false))
            .await,
        "bx through the standby",
    );
    assert_eq!(code, 403, "{msg}");
    assert!(
        msg.contains("grants are being reloaded, retry"),
        "the standby refuses what the leader would block: {msg}"
    );
    // The same for a real create, not only a dry-run.
    let (_, msg) = refusal(
        api.create(
            &Default::default(),
            &runtime_for("extra", "extra", Some(&bx), false),
        )
        .await,
        "real create of bx through the standby",
    );
    assert!(msg.contains("grants are being reloaded, retry"), "{msg}");
    // Fail closed: even what both files grant waits for agreeing files.
    let (_, msg) = refusal(
        api.create(&dry_run(), &runtime_for("web", "worker", Some(&bw), false))
            .await,
        "bw through the standby",
    );
    assert!(msg.contains("grants are being reloaded, retry"), "{msg}");
    // What needs no grant is judged as always: no profile, and suspend.
    api.create(&dry_run(), &runtime_for("plain", "worker", None, false))
        .await
        .expect("no profile: admitted by a disagreeing replica");
    api.create(&dry_run(), &runtime_for("parked", "extra", Some(&bx), true))
        .await
        .expect("suspend: admitted by a disagreeing replica");
    let mismatch = |m: &str| metric_sum(m, "berth_agent_grants_digest_mismatch", |_| true);
    assert_eq!(mismatch(&b.metrics().await), 1.0);
    assert_eq!(mismatch(&a.metrics().await), 0.0);
    assert!(
        b.log_text()
            .contains("grants digest not confirmed as the leader's"),
        "{}",
        b.log_text()
    );

    // Another field manager plants the standby's digest on the Lease: the
    // leader writes its own back with its next renewal, and the standby
    // refuses again.
    let other_sha = berth_shared::grants::sha256_hex(&std::fs::read(&other_file).expect("read"));
    leases
        .patch(
            &lease_name,
            &kube::api::PatchParams {
                field_manager: Some("intruder".into()),
                ..Default::default()
            },
            &kube::api::Patch::Merge(json!({"metadata": {"annotations": {
                "berth.dev/grants-sha256": other_sha}}})),
        )
        .await
        .expect("plant a digest");
    wait_for_value(
        "the leader re-asserts its digest",
        Duration::from_secs(60),
        || {
            let leases = leases.clone();
            let (name, want) = (lease_name.clone(), leader_sha.clone());
            async move {
                let l = leases.get(&name).await.ok()?;
                (l.metadata.annotations?.get("berth.dev/grants-sha256") == Some(&want))
                    .then_some(())
            }
        },
    )
    .await;
    wait_for_value("the standby refuses again", Duration::from_secs(60), || {
        let (api, bx) = (api.clone(), bx.clone());
        async move {
            match api
                .create(&dry_run(), &runtime_for("extra", "extra", Some(&bx), false))
                .await
            {
                Err(kube::Error::Api(s)) if s.message.contains("being reloaded") => Some(()),
                _ => None,
            }
        }
    })
    .await;

    // Restarted with the leader's file: normal admission again.
    b.kill();
    let mut opts = AgentOpts::new(&ns.name, Some(&leader_file));
    opts.identity = format!("{}-b2", ns.name);
    opts.extra_args = webhook_args(&selector);
    let b2 = Agent::spawn(opts).await;
    wait_for_value(
        "the restarted standby admits bw",
        Duration::from_secs(90),
        || {
            let (api, bw) = (api.clone(), bw.clone());
            async move {
                api.create(&dry_run(), &runtime_for("web", "worker", Some(&bw), false))
                    .await
                    .ok()
            }
        },
    )
    .await;
    let (_, msg) = refusal(
        api.create(&dry_run(), &runtime_for("extra", "extra", Some(&bx), false))
            .await,
        "bx after the restart",
    );
    assert!(
        msg.contains("NotGranted") && !msg.contains("reloaded"),
        "judged by the cluster's grant set, as the leader does: {msg}"
    );
    assert_eq!(mismatch(&b2.metrics().await), 0.0);
    assert!(!b2.is_ready().await, "b2 stands by");
    drop(a);
    drop(b2);
    let _ = Api::<ValidatingWebhookConfiguration>::all(ns.client.clone())
        .delete(&format!("berth-it-{selector}"), &Default::default())
        .await;
}

/// A Ready standby that last read the Lease before a new leader took it
/// (right after an install, or a failover) must not refuse with "grants are
/// being reloaded" what the new leader's grant set admits: before it
/// refuses, it reads the Lease again (docs/admission.md). The leader here
/// is played by another writer of the Lease (as a replica of another
/// process would), and the standby looks at the Lease only every 60 s on
/// its own (`--lease-retry-period-seconds 60`), so only the on-demand read
/// can explain an admission within a second of the change. Nothing is
/// waited for between the change and the admission beyond the re-read
/// interval.
#[tokio::test]
async fn agent_standby_reads_the_lease_again_before_it_refuses() {
    use berth_tests::harness::wait_for_value;
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use k8s_openapi::jiff::Timestamp;
    use kube::Api;
    use kube::api::{ObjectMeta, Patch, PatchParams};

    use crate::support::webhook::{dry_run, refusal, runtime_for, runtimes};

    let (ns, selector, class) = webhook_namespace("reread").await;
    let bw = format!("{}-bw", ns.name);
    let file = write_grants(&[binding(&bw, &class, "bounded-runc")]);
    let sha = berth_shared::grants::sha256_hex(&std::fs::read(&file).expect("read"));

    // Another process holds the Lease, with another grants file, for long.
    let mut opts = AgentOpts::new(&ns.name, Some(&file));
    opts.identity = format!("{}-standby", ns.name);
    let leases: Api<Lease> = Api::namespaced(ns.client.clone(), &ns.name);
    let lease_as = |holder: &str, digest: &str| Lease {
        metadata: ObjectMeta {
            name: Some(opts.lease_name.clone()),
            annotations: Some([("berth.dev/grants-sha256".to_string(), digest.to_string())].into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(600),
            acquire_time: Some(MicroTime(Timestamp::now())),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..Default::default()
        }),
    };
    let other = "0".repeat(64);
    let leader_writes = PatchParams::apply("another-agent").force();
    let lease_name = opts.lease_name.clone();
    let take_lease = |holder: &'static str, digest: String| {
        let (leases, lease_name, leader_writes) =
            (leases.clone(), lease_name.clone(), leader_writes.clone());
        let lease = lease_as(holder, &digest);
        async move {
            leases
                .patch(&lease_name, &leader_writes, &Patch::Apply(lease))
                .await
                .unwrap_or_else(|e| panic!("{holder} takes the Lease: {e}"));
        }
    };
    take_lease("old-leader", other).await;

    opts.extra_args = webhook_args(&selector);
    opts.lease_seconds = (120, 60, 90);
    let standby = Agent::spawn(opts.clone()).await;
    let api = runtimes(&ns.client, &ns.name);
    // Its webhook answers, and refuses the grant: the leader's file differs.
    let msg = wait_for_value(
        "the standby's webhook refuses bw while the leader's file differs",
        Duration::from_secs(90),
        || {
            let (api, bw) = (api.clone(), bw.clone());
            async move {
                match api
                    .create(&dry_run(), &runtime_for("web", "worker", Some(&bw), false))
                    .await
                {
                    Err(kube::Error::Api(s)) if s.message.contains("being reloaded") => {
                        Some(s.message)
                    }
                    other => {
                        eprintln!("reread: not yet: {other:?}");
                        None
                    }
                }
            }
        },
    )
    .await;
    assert!(msg.contains("restart the replicas"), "{msg}");
    assert!(!standby.is_ready().await, "it stands by");

    // A new leader, with the standby's file, takes the Lease. The standby's
    // own next look is up to 60 s away; one re-read interval later an
    // admission is judged on what the Lease says now.
    take_lease("new-leader", sha.clone()).await;
    let changed = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(600)).await;
    api.create(&dry_run(), &runtime_for("web", "worker", Some(&bw), false))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "refused {:?} after the new leader published the same file: {e}",
                changed.elapsed()
            )
        });
    let mismatch = |m: &str| metric_sum(m, "berth_agent_grants_digest_mismatch", |_| true);
    assert_eq!(mismatch(&standby.metrics().await), 0.0);

    // Judged by the grants as the leader's: an ungranted profile is a
    // plain refusal, not a retry.
    let (_, msg) = refusal(
        api.create(&dry_run(), &runtime_for("x", "worker", Some("nope"), false))
            .await,
        "an ungranted profile",
    );
    assert!(
        msg.contains("NotGranted") && !msg.contains("reloaded"),
        "{msg}"
    );
    drop(standby);
    let _ = Api::<ValidatingWebhookConfiguration>::all(ns.client.clone())
        .delete(&format!("berth-it-{selector}"), &Default::default())
        .await;
}
