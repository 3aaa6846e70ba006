//! The `/` filter line: edits the current list's filter live.

use crossterm::event::{KeyCode, KeyEvent};

use super::super::{App, Effect, Mode};

pub(super) fn filter_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let Some(v) = app.current_list() else {
        app.ui.mode = Mode::Normal;
        return Vec::new();
    };
    match key.code {
        KeyCode::Esc => {
            app.ui.lists[v.index()].filter.clear();
            app.ui.mode = Mode::Normal;
        }
        KeyCode::Enter => app.ui.mode = Mode::Normal,
        KeyCode::Backspace => {
            app.ui.lists[v.index()].filter.pop();
        }
        KeyCode::Char(c) if !c.is_control() => {
            if app.ui.lists[v.index()].filter.chars().count() < 128 {
                app.ui.lists[v.index()].filter.push(c);
            }
        }
        _ => return Vec::new(),
    }
    // The selection stays on its object while it still matches.
    app.reapply(v);
    Vec::new()
}
