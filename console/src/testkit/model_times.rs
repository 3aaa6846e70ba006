//! The model's figures, one loop for every benchmark that drives it
//! (`berth-bench`'s model times on a cluster's store, `benches/fleet_keys`
//! and `benches/frame_time` on the world): key press → redrawn frame and a
//! watch event → rebuilt frame, against redrawing the same frame with
//! nothing changed.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::{median, screen_text};
use crate::model::{App, Kind, Msg, update};

/// A 160x50 test terminal the console draws on, as a person's would be.
pub struct Redraw {
    term: Terminal<TestBackend>,
}

impl Default for Redraw {
    fn default() -> Self {
        Self {
            term: Terminal::new(TestBackend::new(160, 50)).expect("test terminal"),
        }
    }
}

impl Redraw {
    /// What the console does for a frame: its model refreshed (stale rows
    /// rebuilt), then drawn.
    pub fn frame(&mut self, app: &mut App) {
        app.refresh();
        self.term
            .draw(|f| {
                crate::views::draw(f, app);
            })
            .expect("draw");
    }

    /// The last frame's text (read apart from [`Self::frame`], so that a
    /// timed frame does not include it).
    pub fn screen(&self) -> String {
        screen_text(self.term.backend().buffer())
    }
}

/// Key press → redrawn frame on the model, and a watch event → redrawn
/// frame (both median of `n`), against the floor of drawing the same
/// frame again with nothing changed.
pub struct ModelTimes {
    pub key_to_frame: Duration,
    /// Of the key presses, those that switch the view (its rows rebuilt
    /// where a watch event made them stale) and those that move the
    /// selection (a redraw): the median of all mixes the two.
    pub switch_to_frame: Duration,
    pub move_to_frame: Duration,
    pub event_to_frame: Duration,
    pub redraw_floor: Duration,
    /// The same event → frame, per view on screen (median of its rounds):
    /// which view's rebuild costs what.
    pub event_to_frame_by_view: Vec<(&'static str, Duration)>,
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Times `n` rounds on `app`: a view switch (Runtimes, Handlers, Retained
/// in turn), a selection move, and a watch event on what the view on
/// screen reads, from one cluster at a time as watch events come.
pub fn model_times(app: &mut App, n: usize) -> ModelTimes {
    let mut redraw = Redraw::default();
    redraw.frame(app);
    let (mut keys, mut events, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let (mut switches, mut moves) = (Vec::new(), Vec::new());
    let views = [KeyCode::Char('1'), KeyCode::Char('3'), KeyCode::Char('4')];
    let names = ["Runtimes", "Handlers", "Retained"];
    let mut by_view: Vec<Vec<Duration>> = vec![Vec::new(); views.len()];
    for i in 0..n {
        let t = Instant::now();
        update(app, key(views[i % views.len()]));
        redraw.frame(app);
        keys.push(t.elapsed());
        switches.push(t.elapsed());
        let t = Instant::now();
        update(app, key(KeyCode::Char('j')));
        redraw.frame(app);
        keys.push(t.elapsed());
        moves.push(t.elapsed());
        // A watch event on what the view on screen reads (Runtimes for
        // view 1, workloads for Handlers and Retained): rows are rebuilt.
        let t = Instant::now();
        let c = i % app.clusters.len();
        app.clusters[c].data.store.touch(Kind::Runtime);
        app.clusters[c].data.store.touch(Kind::Pod);
        redraw.frame(app);
        let took = t.elapsed();
        events.push(took);
        by_view[i % views.len()].push(took);
        let t = Instant::now();
        redraw.frame(app);
        floor.push(t.elapsed());
    }
    ModelTimes {
        key_to_frame: median(keys),
        switch_to_frame: median(switches),
        move_to_frame: median(moves),
        event_to_frame: median(events),
        redraw_floor: median(floor),
        event_to_frame_by_view: names
            .into_iter()
            .zip(by_view)
            .filter(|(_, v)| !v.is_empty())
            .map(|(name, v)| (name, median(v)))
            .collect(),
    }
}
