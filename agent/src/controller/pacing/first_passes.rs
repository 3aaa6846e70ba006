//! The first-pass backlog ([`FailedFirstPasses::any_awaiting`]): whether
//! any Runtime still waits for its first reconcile at its generation.
//! While one does, progress and rollout transitions are held (up to
//! `pacing::FIRST_PASS_PROGRESS_INTERVAL`, see `status::pacing`).
//!
//! The cache says a Runtime waits while no status of its generation shows.
//! A Runtime whose status write keeps failing (RBAC refusing
//! `runtimes/status`, a webhook refusing the write) would so wait forever,
//! and with it every other Runtime's progress would be written at most
//! every 120 s. Its first pass did happen, though: its objects were
//! applied and its status tried. So a Runtime whose status write failed
//! at its generation counts as done; it still retries (the reconcile's
//! error requeues it) and its errors are in the log and metrics.

use std::collections::HashMap;
use std::sync::Mutex;

use berth_shared::api::Runtime;
use berth_shared::status::awaiting_first_pass;

use super::key::key;

/// Runtimes whose status write failed, with the generation it was for,
/// keyed `namespace/name`. Holds only Runtimes whose cache still shows no
/// status of that generation: a scan that finds nothing waiting forgets
/// the rest.
#[derive(Debug, Default)]
pub struct FailedFirstPasses(Mutex<HashMap<String, Option<i64>>>);

impl FailedFirstPasses {
    /// The status write of `runtime` at its generation failed.
    pub fn failed(&self, runtime: &Runtime) {
        let mut map = berth_shared::sync::lock(&self.0);
        map.insert(key(runtime), runtime.metadata.generation);
    }

    /// Whether any of `runtimes` (the cache) still waits for its first
    /// pass at its generation and has not failed one there.
    pub fn any_awaiting<'a>(&self, runtimes: impl IntoIterator<Item = &'a Runtime>) -> bool {
        let mut map = berth_shared::sync::lock(&self.0);
        if map.is_empty() {
            return runtimes.into_iter().any(awaiting_first_pass);
        }
        let mut still_failing = HashMap::new();
        for r in runtimes.into_iter().filter(|r| awaiting_first_pass(r)) {
            let key = key(r);
            match map.remove(&key) {
                Some(generation) if generation == r.metadata.generation => {
                    still_failing.insert(key, generation);
                }
                _ => {
                    // Waiting and not failed at this generation: put back
                    // what was taken out, stop here.
                    map.extend(still_failing);
                    return true;
                }
            }
        }
        // Every Runtime was looked at: what is not failing any more (its
        // status shows, it changed generation, it is gone) is forgotten.
        *map = still_failing;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::FailedFirstPasses;
    use berth_shared::api::{Runtime, RuntimeStatus};
    use kube::api::ObjectMeta;

    fn runtime(name: &str, generation: i64, observed: Option<i64>) -> Runtime {
        Runtime {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                generation: Some(generation),
                ..Default::default()
            },
            status: observed.map(|g| RuntimeStatus {
                observed_generation: Some(g),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_runtime_whose_status_write_failed_does_not_hold_the_backlog_open() {
        let failed = FailedFirstPasses::default();
        let done = runtime("done", 1, Some(1));
        let stuck = runtime("stuck", 1, None);
        let new = runtime("new", 1, None);
        assert!(!failed.any_awaiting([&done]));
        assert!(failed.any_awaiting([&done, &stuck]), "stuck awaits");

        failed.failed(&stuck);
        assert!(!failed.any_awaiting([&done, &stuck]), "its pass failed");
        assert!(failed.any_awaiting([&stuck, &new]), "another still awaits");
        assert!(
            !failed.any_awaiting([&done, &stuck]),
            "the failure is remembered through a scan that stopped early"
        );

        // A new generation is a new first pass.
        let changed = runtime("stuck", 2, Some(1));
        assert!(failed.any_awaiting([&done, &changed]));
        failed.failed(&changed);
        assert!(!failed.any_awaiting([&done, &changed]));

        // Once its status shows (or it is gone), the failure is forgotten:
        // a later first pass at the same name counts again.
        let written = runtime("stuck", 2, Some(2));
        assert!(!failed.any_awaiting([&done, &written]));
        assert!(failed.any_awaiting([&done, &changed]), "forgotten");
    }
}
