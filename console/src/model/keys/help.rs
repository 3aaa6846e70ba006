//! Keys while help is open.

use crossterm::event::KeyEvent;

use super::super::keymap::{self, Action as KeyAction};
use super::super::{App, Effect};

/// While help is open: scroll keys scroll it (it may not fit, e.g. at
/// 80×24), `q` still quits, any other key closes it and is swallowed.
pub(super) fn help_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let page = app.ui.viewport.page.max(1);
    let max = app.ui.viewport.help_scroll_max;
    let action = keymap::lookup(&key, app.screen()).map(|(b, _)| b.action);
    let scroll = |app: &mut App, delta: i64| {
        app.ui.help_scroll = (app.ui.help_scroll as i64)
            .saturating_add(delta)
            .clamp(0, max.min(100_000) as i64) as usize;
    };
    match action {
        Some(KeyAction::Down) => scroll(app, 1),
        Some(KeyAction::Up) => scroll(app, -1),
        Some(KeyAction::PageDown | KeyAction::HalfPageDown) => scroll(app, page as i64),
        Some(KeyAction::PageUp | KeyAction::HalfPageUp) => scroll(app, -(page as i64)),
        Some(KeyAction::First) => app.ui.help_scroll = 0,
        Some(KeyAction::Last) => app.ui.help_scroll = max,
        Some(KeyAction::Quit) => {
            app.ui.quit = true;
            return vec![Effect::Quit];
        }
        _ => app.ui.show_help = false,
    }
    Vec::new()
}
