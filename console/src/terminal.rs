//! Terminal setup and restore. The terminal is restored on quit (the
//! guard's drop), on error (the guard drops while the error propagates) and
//! on panic (a hook restores before the panic message is printed): raw
//! mode off, main screen back, cursor shown, mouse capture (if `--mouse`
//! turned it on) and bracketed paste off.

use std::io::{self, Stdout, Write};
use std::sync::Once;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The terminal type of the app.
pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped.
pub struct Guard {
    /// The terminal to draw on.
    pub terminal: Term,
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

static HOOK: Once = Once::new();

/// Enters raw mode and the alternate screen, hides the cursor, enables
/// bracketed paste (and mouse capture only when asked: it takes the
/// terminal's own text selection away), and installs the panic hook.
pub fn setup(mouse: bool) -> io::Result<Guard> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
    enable_raw_mode()?;
    let mut out = io::stdout();
    let entered = execute!(out, EnterAlternateScreen, EnableBracketedPaste).and_then(|()| {
        if mouse {
            execute!(out, EnableMouseCapture)
        } else {
            Ok(())
        }
    });
    if let Err(e) = entered {
        restore();
        return Err(e);
    }
    let mut terminal = match Terminal::new(CrosstermBackend::new(io::stdout())) {
        Ok(t) => t,
        Err(e) => {
            restore();
            return Err(e);
        }
    };
    terminal.hide_cursor()?;
    terminal.clear()?;
    Ok(Guard { terminal })
}

/// Puts the terminal back. Safe to call more than once; errors are
/// ignored (there is nothing better to do with them at this point).
pub fn restore() {
    let mut out = io::stdout();
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}
