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
