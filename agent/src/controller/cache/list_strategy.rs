//! How the caches fill: streaming lists where the apiserver serves them,
//! pages of [`super::watches::LIST_PAGE_SIZE`] otherwise (issue 32).
//!
//! A streaming list (a watch with `sendInitialEvents`, the apiserver's
//! WatchList feature) delivers the initial objects one event at a time,
//! so no page of full objects is ever parsed at once: at a quarter of
//! scale S a restarted agent held 20 MB of anonymous memory instead of
//! 26 MB. Older apiservers refuse the parameter (the feature gate off) or
//! ignore it (before v1.27) and then never send the bookmark that ends the
//! initial events, so a cache would never sync. `auto`, the default, asks
//! once at start with one metadata-only streaming list of the Runtimes it
//! reconciles and uses streaming lists only if that list ends.

use std::time::Duration;

use berth_shared::api::Runtime;
use futures::{Stream, StreamExt};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use kube::{Api, Client};

/// `--streaming-lists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamingLists {
    /// Probe the apiserver at start; stream where it ends the probe's list.
    Auto,
    /// Always stream (caches never sync on an apiserver without WatchList).
    #[value(name = "true", alias = "on")]
    On,
    /// Always list in pages.
    #[value(name = "false", alias = "off")]
    Off,
}

/// How long the probe's streaming list may take to end. Its objects are
/// metadata only (at 2,000 Runtimes well under a second); an apiserver
/// that ignores `sendInitialEvents` never ends it.
pub const PROBE_WITHIN: Duration = Duration::from_secs(10);

/// What the probe saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The initial events ended with the apiserver's bookmark.
    Served,
    /// The apiserver refused the watch (or the connection failed).
    Refused(String),
    /// No end of the initial events within [`PROBE_WITHIN`].
    NoEnd,
}

/// Whether the caches stream, for `mode`; with `auto`, from a probe.
pub async fn resolve(client: &Client, namespace: Option<&str>, mode: StreamingLists) -> bool {
    match mode {
        StreamingLists::On => true,
        StreamingLists::Off => false,
        StreamingLists::Auto => match probe(client, namespace).await {
            Probe::Served => {
                tracing::info!("caches fill with streaming lists (the apiserver serves WatchList)");
                true
            }
            Probe::Refused(why) => {
                tracing::warn!(%why, "the apiserver refused a streaming list: caches fill with paged lists");
                false
            }
            Probe::NoEnd => {
                tracing::warn!(
                    within_seconds = PROBE_WITHIN.as_secs(),
                    "a streaming list did not end (an apiserver without WatchList): caches fill with paged lists"
                );
                false
            }
        },
    }
}

/// One metadata-only streaming list of the Runtimes in scope.
pub async fn probe(client: &Client, namespace: Option<&str>) -> Probe {
    let api: Api<PartialObjectMeta<Runtime>> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    // The server ends the watch a little after the client stops waiting.
    let server_timeout = u32::try_from(PROBE_WITHIN.as_secs() + 5).unwrap_or(u32::MAX);
    let config = watcher::Config::default()
        .streaming_lists()
        .timeout(server_timeout);
    judge(watcher(api, config), PROBE_WITHIN).await
}

/// The probe's verdict on a watcher's first events: served once the
/// initial events end, refused at the first error, otherwise no end.
pub async fn judge<K, S>(events: S, within: Duration) -> Probe
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    let verdict = async {
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::InitDone) => return Probe::Served,
                Ok(_) => {}
                Err(e) => return Probe::Refused(e.to_string()),
            }
        }
        Probe::NoEnd
    };
    tokio::time::timeout(within, verdict)
        .await
        .unwrap_or(Probe::NoEnd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    type Events = Vec<Result<watcher::Event<u8>, watcher::Error>>;

    #[tokio::test]
    async fn the_end_of_the_initial_events_means_served() {
        let events: Events = vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(1)),
            Ok(watcher::Event::InitDone),
        ];
        assert_eq!(
            judge(stream::iter(events), PROBE_WITHIN).await,
            Probe::Served
        );
    }

    #[tokio::test]
    async fn an_error_before_the_end_means_refused() {
        let events: Events = vec![
            Ok(watcher::Event::Init),
            Err(watcher::Error::NoResourceVersion),
            Ok(watcher::Event::InitDone),
        ];
        assert!(matches!(
            judge(stream::iter(events), PROBE_WITHIN).await,
            Probe::Refused(_)
        ));
    }

    /// An apiserver that ignores `sendInitialEvents` sends the objects as
    /// a plain watch would, and then nothing.
    #[tokio::test(start_paused = true)]
    async fn objects_without_an_end_mean_no_end() {
        let events: Events = vec![Ok(watcher::Event::Init), Ok(watcher::Event::InitApply(1))];
        let silent = stream::iter(events).chain(stream::pending());
        assert_eq!(judge(silent, PROBE_WITHIN).await, Probe::NoEnd);
        let closed: Events = vec![Ok(watcher::Event::Apply(2))];
        assert_eq!(
            judge(stream::iter(closed), PROBE_WITHIN).await,
            Probe::NoEnd
        );
    }
}
