//! Leader election: two agents on one Lease → one leader; when it dies the
//! standby takes over. Only the leader reports /health/leader; both report
//! /health/ready (so the agent's own rolling update can finish).

use std::time::Duration;

use berth_tests::harness::wait_for;
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, binding, create_runtime, metric_sum, setup, wait_condition, write_grants,
};

#[tokio::test]
async fn agent_two_agents_one_leader_and_failover() {
    let (ns, class) = setup("agent-lead").await;
    let bw = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&bw, &class, "bounded-runc")]);
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
