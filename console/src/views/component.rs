//! What every component shares: the [`Component`] trait, text made safe
//! to draw, the style of a row's tone and the scrolled block of text most
//! screens draw. Kept apart from the views' own file, which names every
//! component, so that no component imports the file that draws it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use crate::model::{App, RowTone, Viewport};

/// One drawable part of the screen.
pub trait Component {
    /// Draws into `area`, noting in `fit` what its layout measured.
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport);
}

/// Text typed by the user or taken from anywhere, made safe to draw.
pub use berth_shared::sanitize::short as clean;

/// The style of a row tone.
pub fn tone_style(t: RowTone) -> Style {
    match t {
        RowTone::Normal => Style::new(),
        RowTone::Problem => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        RowTone::Good => Style::new().fg(Color::Green),
        RowTone::Warn => Style::new().fg(Color::Yellow),
    }
}

/// What a line wider than the block does ([`draw_scrolled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// It is cut at the border.
    Clip,
    /// It goes on in the next row (the scroll still counts lines).
    Wrap,
}

/// A bordered block of text lines scrolled by `app.ui.scroll` (explain,
/// findings, plan, details, attestation, the handler matrix): the block,
/// then [`draw_scrolled_unbordered`] inside it.
pub(crate) fn draw_scrolled(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    fit: &mut Viewport,
    block: ratatui::widgets::Block,
    all: Vec<Line>,
    overflow: Overflow,
) {
    let inner = block.inner(area);
    frame.render_widget(block, area);
    draw_scrolled_unbordered(app, frame, inner, fit, all, overflow);
}

/// Text lines scrolled by `app.ui.scroll` filling `area` (a bordered
/// block's inside, or the part of a screen under its header, as in the
/// rollout): records the page and the furthest scroll in `fit` and draws
/// the visible lines, cut or wrapped at the edge as `overflow` says.
pub(crate) fn draw_scrolled_unbordered(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    fit: &mut Viewport,
    all: Vec<Line>,
    overflow: Overflow,
) {
    fit.page = area.height as usize;
    fit.scroll_max = all.len().saturating_sub(area.height as usize);
    let start = app.ui.scroll.min(fit.scroll_max);
    let visible: Vec<Line> = all
        .into_iter()
        .skip(start)
        .take(area.height as usize)
        .collect();
    let text = ratatui::widgets::Paragraph::new(visible);
    let text = match overflow {
        Overflow::Clip => text,
        Overflow::Wrap => text.wrap(ratatui::widgets::Wrap { trim: false }),
    };
    frame.render_widget(text, area);
}
