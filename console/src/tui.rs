//! The app's hold on the terminal: the restore guard and the input thread.
//! It can be suspended — terminal restored, input thread stopped — while a
//! kubeconfig credential plugin that may prompt owns the terminal, and
//! resumed afterwards.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
use tokio::sync::mpsc::UnboundedSender;

use crate::model::Msg;
use crate::terminal::{self, Guard, Term};

/// The terminal while the app runs.
pub struct Tui {
    guard: Option<Guard>,
    stop: Arc<AtomicBool>,
    input: Option<JoinHandle<()>>,
    mouse: bool,
    tx: UnboundedSender<Msg>,
}

impl Tui {
    /// Sets the terminal up and starts reading input into `tx`.
    pub fn start(mouse: bool, tx: UnboundedSender<Msg>) -> std::io::Result<Tui> {
        let mut tui = Tui {
            guard: None,
            stop: Arc::new(AtomicBool::new(false)),
            input: None,
            mouse,
            tx,
        };
        tui.resume()?;
        Ok(tui)
    }

    /// The terminal to draw on (`None` while suspended).
    pub fn terminal(&mut self) -> Option<&mut Term> {
        self.guard.as_mut().map(|g| &mut g.terminal)
    }

    /// Gives the terminal back: input thread stopped (so that it reads no
    /// keystroke meant for someone else), screen and modes restored.
    pub fn suspend(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(input) = self.input.take() {
            let _ = input.join();
        }
        self.guard = None;
    }

    /// Takes the terminal again after [`Tui::suspend`] (or at start).
    pub fn resume(&mut self) -> std::io::Result<()> {
        if self.guard.is_some() {
            return Ok(());
        }
        let mut guard = terminal::setup(self.mouse)?;
        guard.terminal.clear()?;
        self.guard = Some(guard);
        self.stop = Arc::new(AtomicBool::new(false));
        self.input = Some(spawn_input(self.tx.clone(), self.stop.clone()));
        Ok(())
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.suspend();
    }
}

fn spawn_input(tx: UnboundedSender<Msg>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            match event::poll(Duration::from_millis(100)) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => return,
            }
            let msg = match event::read() {
                Ok(TermEvent::Key(k)) => Msg::Key(k),
                Ok(TermEvent::Resize(..)) => Msg::Resize,
                Ok(TermEvent::Paste(text)) => Msg::Paste(text),
                // Mouse events arrive only with --mouse (capture is off
                // otherwise).
                Ok(TermEvent::Mouse(m)) => match m.kind {
                    MouseEventKind::ScrollDown => {
                        Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE))
                    }
                    MouseEventKind::ScrollUp => {
                        Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE))
                    }
                    _ => continue,
                },
                Ok(_) => continue,
                Err(_) => return,
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
    })
}
