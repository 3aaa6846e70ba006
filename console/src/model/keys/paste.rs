//! Pasted text (bracketed paste).

use super::super::{App, Effect, Mode, ReviewState};
// Text typed or pasted by the user, made safe to show.
use berth_shared::sanitize::short as clean;

/// Most characters one paste adds (a paste is a name or two, not a file).
const PASTE_MAX: usize = 256;

/// Pasted text (bracketed paste) goes where typed text would: the `:` line,
/// the `/` filter or a review's typed confirmation; one line only, made
/// safe like any other text. Elsewhere it is ignored.
pub fn on_paste(app: &mut App, text: &str) -> Vec<Effect> {
    // A trailing newline comes with most copied names; never run on it.
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let text = clean(first.trim());
    if text.is_empty() {
        return Vec::new();
    }
    app.ui.dirty = true;
    let append = |s: &mut String, limit: usize| {
        let room = limit.saturating_sub(s.chars().count());
        s.extend(text.chars().take(room.min(PASTE_MAX)));
    };
    if let Some(ReviewState::Ready { typed, .. }) = app.ui.review.as_mut() {
        append(typed, 256);
        return Vec::new();
    }
    if app.ui.review.is_some() {
        return Vec::new();
    }
    match &mut app.ui.mode {
        Mode::Command { input, completion } => {
            append(input, 256);
            *completion = None;
        }
        Mode::Filter => {
            if let Some(v) = app.current_list() {
                append(&mut app.ui.lists[v.index()].filter, 128);
                app.reapply(v);
            }
        }
        Mode::Normal => {}
    }
    Vec::new()
}
