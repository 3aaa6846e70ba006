//! Status writes deferred behind the first-pass backlog, and their release.
//!
//! While any Runtime still waits for its first reconcile at its generation,
//! progress and a rollout's own transitions wait up to
//! [`FIRST_PASS_PROGRESS_INTERVAL`](super::intervals::FIRST_PASS_PROGRESS_INTERVAL)
//! (see `status::pacing`): those writes share the apiserver with
//! the first passes (issue 32). A Runtime deferred so is remembered here, and
//! woken as soon as no Runtime waits any more, so that the wait ends with
//! the backlog rather than at the interval's end.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use berth_shared::api::Runtime;
use futures::channel::mpsc::UnboundedSender;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::Notify;

/// How often the backlog is looked at while writes are deferred: a scan of
/// the Runtime cache.
pub const BACKLOG_POLL: Duration = Duration::from_secs(2);

/// The Runtimes whose status write waits behind the backlog.
#[derive(Debug, Default)]
pub struct DeferredStatusWrites {
    keys: Mutex<HashSet<ObjectRef<Runtime>>>,
    deferred: Notify,
}

impl DeferredStatusWrites {
    /// Remembers that `runtime`'s status write waits behind the backlog.
    pub fn defer(&self, runtime: ObjectRef<Runtime>) {
        let mut keys = berth_shared::sync::lock(&self.keys);
        keys.insert(runtime);
        self.deferred.notify_one();
    }

    /// Every Runtime deferred, forgotten here.
    fn take(&self) -> Vec<ObjectRef<Runtime>> {
        let mut keys = berth_shared::sync::lock(&self.keys);
        keys.drain().collect()
    }

    /// Runs until `wake` is closed: whenever writes are deferred, looks at
    /// `backlog` every `poll` and, once it is clear, sends every deferred
    /// Runtime to `wake` (the controller's `reconcile_on`).
    pub async fn release(
        &self,
        backlog: impl Fn() -> bool,
        poll: Duration,
        wake: UnboundedSender<ObjectRef<Runtime>>,
    ) {
        loop {
            self.deferred.notified().await;
            loop {
                tokio::time::sleep(poll).await;
                if !backlog() {
                    break;
                }
            }
            for r in self.take() {
                if wake.unbounded_send(r).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DeferredStatusWrites;
    use futures::StreamExt;
    use kube::runtime::reflector::ObjectRef;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn held_runtimes_are_woken_once_the_backlog_clears() {
        let deferred = Arc::new(DeferredStatusWrites::default());
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        // The backlog clears on its third look.
        let looks = Arc::new(AtomicUsize::new(0));
        let backlog = {
            let looks = looks.clone();
            move || looks.fetch_add(1, Ordering::SeqCst) < 2
        };
        let task = {
            let deferred = deferred.clone();
            tokio::spawn(async move { deferred.release(backlog, Duration::from_secs(2), tx).await })
        };
        deferred.defer(ObjectRef::new("a").within("ns"));
        deferred.defer(ObjectRef::new("b").within("ns"));
        deferred.defer(ObjectRef::new("a").within("ns"));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            rx.try_recv().is_err(),
            "nothing woken while the backlog lasts"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut woken = vec![rx.next().await.unwrap(), rx.next().await.unwrap()];
        woken.sort_by_key(|r| r.name.clone());
        assert_eq!(
            woken,
            vec![
                ObjectRef::new("a").within("ns"),
                ObjectRef::new("b").within("ns")
            ]
        );
        assert!(rx.try_recv().is_err(), "each Runtime once");
        assert_eq!(looks.load(Ordering::SeqCst), 3);
        // Nothing held: the backlog is not looked at.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(looks.load(Ordering::SeqCst), 3);
        // Deferred again later: woken again.
        deferred.defer(ObjectRef::new("c").within("ns"));
        assert_eq!(rx.next().await.unwrap(), ObjectRef::new("c").within("ns"));
        drop(rx);
        deferred.defer(ObjectRef::new("d").within("ns"));
        task.await.expect("the release ends once nobody listens");
    }
}
