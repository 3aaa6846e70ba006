//! How every cache watches: the watch settings (page size, server-side
//! timeout, `--streaming-lists`) and the progress of each cache's first
//! list ([`ListProgress`]). One value, made at start and handed to
//! whatever builds a watch (`context::Settings::watches`), where these
//! were process-wide statics the start had to set before any watch.

use std::fmt::Debug;

use futures::{Stream, StreamExt};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use super::list_progress::{self, ListProgress};
use super::watch_backoff::WatchBackoff;

/// The agent's watch settings and its caches' list progress (cloned, it
/// is the same progress).
#[derive(Clone, Debug, Default)]
pub struct Watches {
    /// `--streaming-lists`, as resolved at start (`list_strategy`).
    streaming_lists: bool,
    /// Events received per cache.
    progress: ListProgress,
}

impl Watches {
    /// Watches filling with streaming lists (`true`) or pages.
    pub fn new(streaming_lists: bool) -> Self {
        Self {
            streaming_lists,
            progress: ListProgress::default(),
        }
    }

    /// What every cache's first list received so far.
    pub fn progress(&self) -> &ListProgress {
        &self.progress
    }

    /// The watch of every cache: `watcher` with this agent's own backoff
    /// ([`WatchBackoff`]; the controller shares none, see
    /// [`crate::controller::wake::triggers::NoSharedBackoff`]).
    pub fn watch<K>(
        &self,
        api: Api<K>,
        config: watcher::Config,
    ) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static + use<K>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
        K::DynamicType: Default,
    {
        // What the kind's first list received counts as its progress (see
        // `list_progress`).
        let received = self
            .progress
            .counter(&K::plural(&K::DynamicType::default()));
        watcher(api, config)
            .backoff(WatchBackoff::default())
            .inspect(move |event| {
                if list_progress::is_progress(event) {
                    received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
    }

    /// The watch settings of every cache: the server ends each watch well
    /// inside the client's read timeout (see
    /// [`crate::kube_client::READ_TIMEOUT`]), and lists come in pages of
    /// [`LIST_PAGE_SIZE`] or, with `--streaming-lists`, streamed.
    pub fn config(&self) -> watcher::Config {
        let config = watcher::Config::default()
            .timeout(crate::kube_client::WATCH_TIMEOUT_SECONDS)
            .page_size(LIST_PAGE_SIZE);
        if self.streaming_lists {
            config.streaming_lists()
        } else {
            config
        }
    }
}

/// Objects per page of a cache's (re)list. Every page is parsed whole,
/// managedFields included, before the reduction drops most of it, and the
/// ~18 caches list at once when the agent starts: the parsed pages, not
/// the caches, set the agent's peak heap (issue 14, heaptrack at 500
/// Runtimes: 71 MB peak, 24 MB live; a page of 500 Pods with their
/// managedFields is several MB parsed). kube's default is 500; at 100
/// the pages cost a fifth, for more requests of the same total size.
pub const LIST_PAGE_SIZE: u32 = 100;
