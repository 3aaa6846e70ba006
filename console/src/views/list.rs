//! The one list component of every list view: a virtualized table (only
//! the rows that fit are turned into widgets, so a frame costs the same for
//! 100 and 50,000 rows) of any [`crate::rows::Row`] family.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};
use unicode_width_shim::width;

use super::{Component, tone_style};
use crate::model::{App, ListView, Screen, Viewport};

/// Widest a column grows before it is cut.
const MAX_COLUMN: usize = 48;

/// A list view.
pub struct List(pub ListView);

impl Component for List {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        draw_table(app, frame, area, self.0, fit);
    }
}

/// Draws the table of `view` in `area` with a bordered title.
fn draw_table(app: &App, frame: &mut Frame, area: Rect, view: ListView, fit: &mut Viewport) {
    let (t, l) = (app.table(view), app.list(view));
    let title = view.title();
    let len = t.visible.len();
    let loaded = app.data.loaded(view);
    let mut heading = if loaded {
        format!(
            " {title} [{}] {len}/{} ",
            app.session.scope.label(),
            t.cells.len()
        )
    } else {
        format!(" {title} [{}] … ", app.session.scope.label())
    };
    if !l.filter.is_empty() {
        heading.push_str(&format!("filter: /{}/ ", super::clean(&l.filter)));
    }
    if let Some((c, desc)) = l.sort {
        let name = t.headers.get(c).copied().unwrap_or("?");
        heading.push_str(&format!("sort: {name}{} ", if desc { "▼" } else { "▲" }));
    }
    // The rows are the last data known while a watch they come from is
    // failing: dimmed, and said in words (dim alone may not show on every
    // terminal).
    let stale = app.data.reconnecting(view);
    if stale && loaded {
        heading.push_str("· last known data, reconnecting… ");
    }
    let mut block = Block::bordered().title(heading);
    if view.agent_status() && app.status_may_be_stale() {
        block = block.title(
            Line::styled(
                " no agent leader: status may be stale ",
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            )
            .right_aligned(),
        );
    }
    let inner = block.inner(area);
    let body = inner.height.saturating_sub(1) as usize;
    fit.page = body;

    if len == 0 {
        frame.render_widget(block, area);
        // Only refusals of what this view needs explain its emptiness.
        let kinds = Screen::List(view).kinds();
        let denied: Vec<_> = app
            .data
            .denied()
            .into_iter()
            .filter(|(k, _)| kinds.contains(k))
            .collect();
        let msg = if t.cells.is_empty() && !denied.is_empty() {
            let (kind, err) = denied[0];
            format!("cannot read {}: {}", kind.label(), super::clean(err))
        } else if t.cells.is_empty() && !loaded {
            "loading…".to_string()
        } else if t.cells.is_empty() {
            "nothing here".to_string()
        } else {
            "no row matches the filter".to_string()
        };
        frame.render_widget(
            Paragraph::new(Line::styled(msg, Style::new().fg(Color::DarkGray))),
            inner,
        );
        return;
    }

    let sel = l.selected.min(len - 1);
    // Where the last frame started, moved only as far as keeps the
    // selection in view.
    let mut off = fit.offsets[view.index()];
    if sel < off {
        off = sel;
    }
    if body > 0 && sel >= off + body {
        off = sel + 1 - body;
    }
    off = off.min(len.saturating_sub(body.max(1)));
    fit.offsets[view.index()] = off;
    let window = &t.visible[off..(off + body).min(len)];

    let mut widths: Vec<usize> = t.headers.iter().map(|h| h.chars().count() + 1).collect();
    // Ages are computed here from the rows' timestamps (see
    // `TableData::text`), once per visible cell.
    let texts: Vec<Vec<std::borrow::Cow<'_, str>>> = window
        .iter()
        .map(|&i| {
            (0..t.cells[i].len())
                .map(|c| t.text(i, c, app.now))
                .collect()
        })
        .collect();
    for row in &texts {
        for (c, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(c) {
                *w = (*w).max(width(cell).min(MAX_COLUMN));
            }
        }
    }
    let last = widths.len().saturating_sub(1);
    let constraints: Vec<Constraint> = widths
        .iter()
        .enumerate()
        .map(|(c, w)| {
            if c == last {
                Constraint::Fill(1)
            } else {
                Constraint::Length(*w as u16)
            }
        })
        .collect();

    let header = Row::new(t.headers.iter().enumerate().map(|(c, h)| {
        let mut text = (*h).to_string();
        if let Some((sc, desc)) = l.sort
            && sc == c
        {
            text.push(if desc { '▼' } else { '▲' });
        }
        let style = if c == l.column {
            Style::new()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        };
        Cell::from(text).style(style)
    }));
    let rows = window
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(pos, (&i, row))| {
            let mut style = tone_style(t.tones[i]);
            if off + pos == sel {
                style = style.add_modifier(Modifier::REVERSED);
            }
            if stale {
                style = style.add_modifier(Modifier::DIM);
            }
            Row::new(row.into_iter().map(Cell::from)).style(style)
        });
    let table = Table::new(rows, constraints).header(header).block(block);
    frame.render_widget(table, area);
}

/// Display width without pulling in another crate.
mod unicode_width_shim {
    /// Columns a string takes (wide CJK characters count two).
    pub fn width(s: &str) -> usize {
        ratatui::text::Span::raw(s).width()
    }
}
