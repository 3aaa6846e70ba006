//! How long the status step lets a Runtime's progress-only status writes
//! wait (docs/architecture.md §5, step 5).

use std::time::Duration;

/// How long a status change that only moves counts or messages may wait
/// after the previous status write of the same Runtime (see
/// `berth_shared::status::progress_only`): pods coming up one by one then
/// cost one write per interval, not one per pod.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// Progress-only status writes per second the agent aims at across all
/// Runtimes: when many roll out at once, each Runtime's progress interval
/// stretches so that together they stay near this rate
/// ([`LastStatusWrites::progress_interval`](super::last_status_writes::LastStatusWrites::progress_interval)). One Runtime rolling out is still
/// written every [`PROGRESS_INTERVAL`]. At S/4 (issue 32) 500 Runtimes
/// rolling out together wrote 2,333 progress-only statuses in 200 s,
/// each an 8 kB object the apiserver stores and sends to every watcher,
/// on a control plane whose apiserver was the busiest process while the
/// same pods came up.
pub const PROGRESS_WRITES_PER_SECOND: u32 = 5;

/// The longest such a wait lasts while other Runtimes still wait for their
/// first reconcile at their generation
/// (`berth_shared::status::awaiting_first_pass`): many Runtimes created or
/// changed at once. kube-runtime picks the next reconcile from a set in no
/// order, so a Runtime never reconciled waits behind others' progress
/// writes; deferring those gives the apiserver to the first passes. A
/// deferred write is woken as soon as no Runtime waits any more
/// ([`DeferredStatusWrites`](super::deferred_status::DeferredStatusWrites)), and is at most this late while they keep coming.
/// Transitions an operator acts on are still written at once (issues 14
/// and 32).
pub const FIRST_PASS_PROGRESS_INTERVAL: Duration = Duration::from_secs(120);
