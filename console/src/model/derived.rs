//! Rows derived from each cluster's store, per list view, merged over the
//! clusters ([`crate::rows::Merged`]) with each view's filter and sort
//! applied and its selection kept on its object (in its cluster) across
//! rebuilds. A cluster's part of a view is rebuilt only when that
//! cluster's inputs changed, so a fleet of N clusters costs each cluster's
//! own rebuilds, not N times every rebuild.

use crate::rows::{GrantRow, HandlerRow, Merged, NamespaceRow, RetainedRow, Row, RuntimeRow};
use crate::store::ClusterId;

use super::screen::ListView;

/// One cluster's rows of each list view. A view is rebuilt only when one
/// of the kinds it reads changed ([`ListView::inputs`]) and only while it
/// is live ([`super::App::live_views`]); the others keep their last rows, stale,
/// until shown again.
#[derive(Clone, Debug, Default)]
pub struct ClusterRows {
    /// Per view ([`ListView::index`]): the [`crate::store::Store::stamp`]
    /// of its inputs its rows were built from (`None`: never built).
    pub built: [Option<u64>; 5],
    pub runtimes: Vec<RuntimeRow>,
    pub grants: Vec<GrantRow>,
    pub handlers: Vec<HandlerRow>,
    pub retained: Vec<RetainedRow>,
    pub namespaces: Vec<NamespaceRow>,
    /// Per view: when (seconds) it was last rebuilt off screen for its tab
    /// count ([`super::App::refresh`]).
    pub counted_at: [Option<i64>; 5],
}

/// The list views' tables, merged over the clusters.
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// Indexed by [`ListView`].
    pub tables: [Merged; 5],
}

impl Derived {
    /// Empty tables over `clusters`.
    pub fn for_clusters(clusters: &[ClusterId]) -> Self {
        Derived {
            tables: ListView::ALL.map(|v| Merged::new(clusters, headers(v))),
        }
    }
}

/// The column headers of a view's rows.
pub(super) fn headers(v: ListView) -> &'static [&'static str] {
    match v {
        ListView::Runtimes => RuntimeRow::headers(),
        ListView::Grants => GrantRow::headers(),
        ListView::Handlers => HandlerRow::headers(),
        ListView::Retained => RetainedRow::headers(),
        ListView::Namespaces => NamespaceRow::headers(),
    }
}

/// How often a tab off screen is rebuilt for its count at most: Handlers
/// and Retained run the analysis over every classed workload, so a view
/// not shown follows a busy cluster a few seconds behind rather than
/// doubling the cost of every frame.
pub const COUNT_REFRESH_SECONDS: i64 = 5;

/// How complete the screen is before or after a batch of messages: the list
/// view's kinds listed, and no watch still syncing (or reconnecting: the
/// status bar says so until every watch runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub(super) loaded: Option<bool>,
    pub(super) synced: bool,
}

impl Completion {
    /// Whether going from `self` to `after` completes the screen: its last
    /// list came in, or the last watch still syncing caught up. That frame
    /// is what the user waits for, so the event loop draws it at once
    /// instead of coalescing it with later watch events (a frame due only
    /// 50 ms after the previous one: issue 32 measured a fixed ~60 ms on
    /// the first complete Grants frame).
    pub fn completed_by(self, after: Completion) -> bool {
        (self.loaded == Some(false) && after.loaded == Some(true)) || (!self.synced && after.synced)
    }
}
