//! What wakes a reconcile, and when it comes back by itself (issue 14).
//! Measured at 2,000 Runtimes, the reconcile queue was full of work that
//! could not change anything: status-only updates of owned PDBs, HPAs, Jobs
//! and CronJobs (the disruption controller rewrites a PDB's status for
//! every pod that becomes ready), and resyncs of every Runtime falling due
//! together. New Runtimes waited behind them. Status-only updates of
//! owned Deployments, whose status the Runtime's status is computed from,
//! are paced instead (`super::deployment_status`).
//!
//! Not used: kube-runtime's debounce. It is trailing-edge: every new
//! trigger pushes the reconcile back, and a RuntimeClass or Node change
//! triggers every Runtime — in a cluster where those change more often
//! than the debounce period, no Runtime was reconciled at all (seen in the
//! integration suite, where tests add classes and nodes all the time).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use kube::Resource;

/// What of an owned object a reconcile reads when it has no status the
/// Runtime's status is computed from (PDB, HPA, Job, CronJob,
/// NetworkPolicy): its spec (through `generation`), labels, annotations,
/// owners and deletion. A status-only update leaves this unchanged and is
/// filtered out; the resync still looks at everything.
pub fn spec_fingerprint<K: Resource>(obj: &K) -> Option<u64> {
    let m = obj.meta();
    let mut h = DefaultHasher::new();
    m.generation.hash(&mut h);
    m.labels.hash(&mut h);
    m.annotations.hash(&mut h);
    // A Runtime's own object keeps a digest of its labels and annotations
    // in the store in their place.
    crate::controller::cache::reduce::kept_metadata_digest(m).hash(&mut h);
    for r in m.owner_references.iter().flatten() {
        r.uid.hash(&mut h);
        r.controller.hash(&mut h);
    }
    m.deletion_timestamp.as_ref().map(|t| t.0).hash(&mut h);
    Some(h.finish())
}

/// When a settled Runtime is looked at again: the resync, spread by up to
/// a tenth over Runtimes (by uid, so one Runtime keeps its slot) instead
/// of every Runtime reconciled in one burst falling due in the same second.
pub fn resync_after(resync: Duration, uid: &str) -> Duration {
    let mut h = DefaultHasher::new();
    uid.hash(&mut h);
    let spread = resync / 10;
    let millis = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX);
    if millis == 0 {
        return resync;
    }
    resync + Duration::from_millis(h.finish() % millis)
}

/// The controller's own backoff over its merged trigger streams: none.
///
/// kube-runtime wraps *all* trigger streams of a Controller in one
/// exponential backoff (up to a minute, reset only after two quiet
/// minutes): one watch error anywhere stops every watch, the Runtimes'
/// own included. After a kube-apiserver restart each of the ~15 watches
/// reports its expired resourceVersion in turn, each such error restarted
/// the shared wait, and Runtime changes went unseen for minutes (seen in
/// the fault suite: a spec change not reconciled 4 minutes later). Every
/// watch backs off on its own errors instead (`watch_backoff` on each),
/// so a failing watch waits alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSharedBackoff;

impl Iterator for NoSharedBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        // `None` would end the stream; zero lets the next poll continue.
        Some(Duration::ZERO)
    }
}

impl kube::runtime::utils::Backoff for NoSharedBackoff {
    fn reset(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use std::collections::BTreeMap;

    fn pdb(generation: i64) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("web".into()),
                generation: Some(generation),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_status_only_update_keeps_the_fingerprint_and_anything_else_changes_it() {
        let base = pdb(1);
        let mut status_only = base.clone();
        status_only.metadata.resource_version = Some("2".into());
        status_only.status = Some(PodDisruptionBudgetStatus {
            current_healthy: 3,
            ..Default::default()
        });
        assert_eq!(spec_fingerprint(&base), spec_fingerprint(&status_only));

        let mut changes = Vec::new();
        changes.push(pdb(2)); // the spec changed
        let mut labelled = base.clone();
        labelled.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]));
        changes.push(labelled);
        let mut annotated = base.clone();
        annotated.metadata.annotations = Some(BTreeMap::from([("a".into(), "b".into())]));
        changes.push(annotated);
        let mut owned = base.clone();
        owned.metadata.owner_references = Some(vec![Default::default()]);
        changes.push(owned);
        let mut deleting = base.clone();
        deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
        changes.push(deleting);
        for changed in changes {
            assert_ne!(
                spec_fingerprint(&base),
                spec_fingerprint(&changed),
                "{:?}",
                changed.metadata
            );
        }
    }

    #[test]
    fn resyncs_are_spread_over_a_tenth_and_stable_per_runtime() {
        let resync = Duration::from_secs(300);
        let after: Vec<Duration> = (0..200)
            .map(|i| resync_after(resync, &format!("uid-{i}")))
            .collect();
        assert!(
            after
                .iter()
                .all(|d| *d >= resync && *d < resync + resync / 10)
        );
        let distinct: std::collections::BTreeSet<_> = after.iter().collect();
        assert!(
            distinct.len() > 150,
            "spread, not one slot: {}",
            distinct.len()
        );
        assert_eq!(resync_after(resync, "uid-7"), resync_after(resync, "uid-7"));
        assert_eq!(
            resync_after(Duration::from_millis(5), "x"),
            Duration::from_millis(5)
        );
    }

    /// The Runtime's own watch is not held back by another watch's error
    /// (after a kube-apiserver restart every watch reports an expired
    /// resourceVersion). Paused time: the delay is virtual and exact.
    #[tokio::test(start_paused = true)]
    async fn an_error_in_one_watch_does_not_hold_back_the_runtime_watch() {
        for (shared_backoff, held_back) in [(false, false), (true, true)] {
            assert_eq!(
                runtime_trigger_waited(shared_backoff).await >= Duration::from_millis(500),
                held_back,
                "kube-runtime's own shared backoff: {shared_backoff}"
            );
        }
    }

    /// How long (virtual time) a Runtime's trigger waits for its reconcile
    /// when an owned watch failed just before.
    async fn runtime_trigger_waited(shared_backoff: bool) -> Duration {
        use berth_shared::api::{Runtime, RuntimeSpec};
        use futures::StreamExt;
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::runtime::controller::Action;
        use kube::runtime::{Controller, reflector, watcher};
        use std::sync::Arc;

        let mut rt = Runtime::new("web", RuntimeSpec::default());
        rt.metadata.namespace = Some("team-a".into());
        let (store, mut writer) = reflector::store::<Runtime>();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(rt.clone()));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let (runtime_tx, runtime_rx) = futures::channel::mpsc::unbounded();
        let (owned_tx, owned_rx) =
            futures::channel::mpsc::unbounded::<Result<ConfigMap, watcher::Error>>();
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut controller = Controller::for_stream(runtime_rx, store).owns_stream(owned_rx);
        if !shared_backoff {
            controller = controller.trigger_backoff(NoSharedBackoff);
        }
        let run = tokio::spawn(
            controller
                .run(
                    move |_rt: Arc<Runtime>, _ctx: Arc<()>| {
                        let done = done_tx.clone();
                        async move {
                            let _ = done.send(());
                            Ok::<_, std::io::Error>(Action::await_change())
                        }
                    },
                    |_, _, _| Action::await_change(),
                    Arc::new(()),
                )
                .for_each(|_| async {}),
        );
        // The owned watch fails (as an expired resourceVersion would), and
        // the controller takes the error before the Runtime changes.
        let _ = owned_tx.unbounded_send(Err(watcher::Error::NoResourceVersion));
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        let t0 = tokio::time::Instant::now();
        let _ = runtime_tx.unbounded_send(Ok(rt));
        let reconciled = tokio::time::timeout(Duration::from_secs(600), done_rx.recv()).await;
        run.abort();
        assert!(reconciled.is_ok(), "the Runtime was never reconciled");
        t0.elapsed()
    }
}
