//! [`update`]: the one function that changes the app state, a pure
//! function of the state and one [`Msg`].

use super::msg::{Effect, Msg, WatchEvent};
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
            context,
            contexts,
            conn,
        } => app.connected(context, contexts, conn),
        Msg::SwitchFailed { context, error } => app.switch_failed(&context, &error),
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
            if app.update_watches() {
                vec![Effect::Watch(app.data.watch_set.running())]
            } else {
                Vec::new()
            }
        }
        Msg::Watch(kind, ev) => {
            app.ui.dirty = true;
            app.data.on_watch(WatchKey::all(kind), ev);
            Vec::new()
        }
        Msg::Watched(generation, key, ev) => {
            if generation != app.session.generation || app.data.stopped.contains(&key) {
                return Vec::new();
            }
            let kind = key.kind;
            // The object shown whole changed: read it again.
            let shown = match (&ev, app.screen()) {
                (WatchEvent::Apply(o), Screen::Details(k, key)) => *k == kind && o.key() == *key,
                _ => false,
            };
            app.ui.dirty = true;
            app.data.on_watch(key, ev);
            if shown {
                app.fetch_details().into_iter().collect()
            } else {
                Vec::new()
            }
        }
        Msg::Fetched(generation, kind, key, result) => {
            if generation == app.session.generation
                && matches!(app.screen(), Screen::Details(k, sk) if *k == kind && *sk == key)
            {
                app.ui.details = Some((kind, key, result));
                app.ui.dirty = true;
            }
            Vec::new()
        }
        Msg::Reviewed(result) => {
            app.ui.dirty = true;
            if let Some(ReviewState::Loading { title, target }) = app.ui.review.take() {
                app.ui.scroll = 0;
                app.ui.review = Some(match *result {
                    Ok(review) => ReviewState::Ready {
                        review: Box::new(review),
                        typed: String::new(),
                    },
                    Err(e) => ReviewState::Failed {
                        title,
                        target,
                        error: e.to_string(),
                    },
                });
            }
            Vec::new()
        }
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
