//! [`update`]: the one function that changes the app state, a pure
//! function of the state and one [`Msg`].

use super::msg::{Effect, Msg, Origin, WatchEvent};
use super::screen::Screen;
use super::ui::ReviewState;
use super::watches::WatchKey;
use super::{App, keys};

/// Applies one message. Pure: no I/O, the caller carries out the effects.
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Key(k) => keys::on_key(app, k),
        Msg::Paste(text) => keys::on_paste(app, &text),
        Msg::Connected {
            asked,
            contexts,
            conns,
            problems,
        } => app.connected(asked, contexts, conns, problems),
        Msg::SwitchFailed { asked, error } => app.switch_failed(&asked, &error),
        Msg::Resize => {
            app.ui.dirty = true;
            Vec::new()
        }
        // Layout only: nothing to draw again.
        Msg::Drawn(viewport) => {
            app.ui.viewport = viewport;
            Vec::new()
        }
        Msg::Tick(now) => {
            let before = app.now.as_second();
            app.now = now;
            if now.as_second() - before >= 1 {
                app.ui.dirty = true;
            }
            // Watches whose grace period ran out stop here.
            app.update_watches()
                .into_iter()
                .map(|i| app.watch_effect_of(i))
                .collect()
        }
        Msg::Watch(kind, ev) => {
            app.ui.dirty = true;
            let now = app.now;
            let c = &mut app.clusters[0];
            c.heard_from(&ev, now);
            c.data.on_watch(WatchKey::all(kind), ev);
            Vec::new()
        }
        Msg::Watched(origin, key, ev) => on_watched(app, origin, key, ev),
        Msg::Fetched(origin, kind, key, result) => {
            if origin.generation == app.session.generation
                && matches!(app.screen(), Screen::Details(c, k, sk) if *c == origin.cluster && *k == kind && *sk == key)
            {
                app.ui.details = Some((origin.cluster, kind, key, result));
                app.ui.dirty = true;
            }
            Vec::new()
        }
        Msg::Reviewed { id, result } => on_reviewed(app, id, *result),
        Msg::Executed(result) => {
            app.ui.dirty = true;
            app.ui.review = None;
            app.ui.flash = Some(match *result {
                Ok(o) => match o.event_error {
                    None => o.message,
                    Some(e) => format!("{} (the Event could not be recorded: {e})", o.message),
                },
                Err(e) => e.to_string(),
            });
            Vec::new()
        }
    }
}

/// A watch event of one cluster: applied to its data (unless it comes
/// from an earlier session or a stopped watch); the object shown whole
/// is read again when it changed.
fn on_watched(app: &mut App, origin: Origin, key: WatchKey, ev: WatchEvent) -> Vec<Effect> {
    if origin.generation != app.session.generation {
        return Vec::new();
    }
    let Some(i) = app.cluster_index(&origin.cluster) else {
        return Vec::new();
    };
    if app.clusters[i].data.stopped.contains(&key) {
        return Vec::new();
    }
    let kind = key.kind;
    // The object shown whole changed: read it again.
    let shown = match (&ev, app.screen()) {
        (WatchEvent::Apply(o), Screen::Details(c, k, key)) => {
            *c == origin.cluster && *k == kind && o.key() == *key
        }
        _ => false,
    };
    app.ui.dirty = true;
    let now = app.now;
    let c = &mut app.clusters[i];
    c.heard_from(&ev, now);
    c.data.on_watch(key, ev);
    if shown {
        app.fetch_details().into_iter().collect()
    } else {
        Vec::new()
    }
}

/// A retirement review came back: shown, unless the review it answers was
/// closed or replaced since.
fn on_reviewed(
    app: &mut App,
    id: u64,
    result: Result<crate::retire::Review, crate::retire::RetireError>,
) -> Vec<Effect> {
    app.ui.dirty = true;
    match app.ui.review.take() {
        Some(ReviewState::Loading {
            id: asked,
            cluster,
            title,
            target,
        }) if asked == id => {
            app.ui.scroll = 0;
            app.ui.review = Some(match result {
                Ok(review) if review.cluster == cluster => ReviewState::Ready {
                    review: Box::new(review),
                    typed: String::new(),
                },
                Ok(review) => ReviewState::Failed {
                    error: format!(
                        "the review came back from cluster {}, not {cluster}; nothing was changed",
                        review.cluster
                    ),
                    cluster,
                    title,
                    target,
                },
                Err(e) => ReviewState::Failed {
                    cluster,
                    title,
                    target,
                    error: e.to_string(),
                },
            });
        }
        // The answer of a review closed (or replaced) since.
        other => app.ui.review = other,
    }
    Vec::new()
}
