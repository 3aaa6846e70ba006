//! Key handling, one file per input mode: [`normal`] keys through the one
//! key table ([`super::keymap::KEYS`]) and [`help`] while it is open, the
//! `:` [`command`] line with completion, the `/` [`filter`] line, the
//! typed confirmation of a [`review`], and [`paste`]d text.

mod command;
mod filter;
mod help;
mod normal;
mod paste;
mod related;
mod review;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, Effect, Mode};

pub use command::{complete, run_command};
pub use paste::on_paste;
pub use review::{Retirement, TargetError, retire_target};

/// Handles one key.
pub fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    app.ui.dirty = true;
    // Ctrl-c quits from every mode, even while typing (in normal mode it is
    // also the key table's Quit binding, which is what help lists).
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        app.ui.quit = true;
        return vec![Effect::Quit];
    }
    if app.ui.review.is_some() {
        return review::review_key(app, key);
    }
    match app.ui.mode.clone() {
        Mode::Command { input, completion } => command::command_key(app, key, input, completion),
        Mode::Filter => filter::filter_key(app, key),
        Mode::Normal => normal::normal_key(app, key),
    }
}
