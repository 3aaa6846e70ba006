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
use crate::model::{App, ListState, ListView, Screen, Viewport};

/// Widest a column grows before it is cut.
const MAX_COLUMN: usize = 48;

/// A list view.
pub struct List(pub ListView);

impl Component for List {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        draw_table(app, frame, area, self.0, fit);
    }
}

/// Draws the table of `view` in `area` with a bordered title: the title,
/// then (with rows) the window that keeps the selection in view, its
/// column widths and its rows; without rows, why there are none.
fn draw_table(app: &App, frame: &mut Frame, area: Rect, view: ListView, fit: &mut Viewport) {
    let (t, l) = (app.table(view), app.list(view));
    let len = t.len();
    let headers = t.headers();
    // The rows of a cluster are the last data known while a watch they
    // come from is failing there: dimmed, and said in words (dim alone may
    // not show on every terminal), naming the clusters in a fleet.
    let stale: Vec<bool> = app
        .clusters
        .iter()
        .map(|c| c.data.reconnecting(view))
        .collect();
    let block = titled_block(app, view, heading(app, view, &headers, &stale));
    let inner = block.inner(area);
    let body = inner.height.saturating_sub(1) as usize;
    fit.page = body;

    if len == 0 {
        frame.render_widget(block, area);
        frame.render_widget(
            Paragraph::new(Line::styled(
                why_empty(app, view),
                Style::new().fg(Color::DarkGray),
            )),
            inner,
        );
        return;
    }

    let sel = l.selected.min(len - 1);
    let off = scroll(fit, view, sel, body, len);
    let window = &t.visible[off..(off + body).min(len)];
    // Ages are computed here from the rows' timestamps (see
    // `TableData::text`), once per visible cell.
    let columns = t.columns();
    let texts: Vec<Vec<std::borrow::Cow<'_, str>>> = window
        .iter()
        .map(|&at| (0..columns).map(|c| t.text(at, c, app.now)).collect())
        .collect();
    let constraints = column_widths(&headers, &texts);
    let rows = window
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(pos, (&at, row))| {
            let mut style = tone_style(t.tone(at));
            if off + pos == sel {
                style = style.add_modifier(Modifier::REVERSED);
            }
            if stale.get(at.part as usize).copied().unwrap_or(false) {
                style = style.add_modifier(Modifier::DIM);
            }
            Row::new(row.into_iter().map(Cell::from)).style(style)
        });
    let table = Table::new(rows, constraints)
        .header(header_row(&headers, l))
        .block(block);
    frame.render_widget(table, area);
}

/// The title: the view, its scope and counts, its filter and sort, and
/// which clusters' rows are the last data known (`stale`).
fn heading(app: &App, view: ListView, headers: &[&str], stale: &[bool]) -> String {
    let (t, l) = (app.table(view), app.list(view));
    let title = view.title();
    let loaded = app.loaded(view);
    let mut heading = if loaded {
        format!(
            " {title} [{}] {}/{} ",
            app.session.scope.label(),
            t.len(),
            t.total()
        )
    } else {
        format!(" {title} [{}] … ", app.session.scope.label())
    };
    if !l.filter.is_empty() {
        heading.push_str(&format!("filter: /{}/ ", super::clean(&l.filter)));
    }
    if let Some((c, desc)) = l.sort {
        let name = headers.get(c).copied().unwrap_or("?");
        heading.push_str(&format!("sort: {name}{} ", if desc { "▼" } else { "▲" }));
    }
    if loaded && stale.iter().any(|s| *s) {
        if app.fleet() {
            let names: Vec<String> = app
                .clusters
                .iter()
                .zip(stale)
                .filter(|(_, s)| **s)
                .map(|(c, _)| c.id.shown())
                .collect();
            heading.push_str(&format!(
                "· {}: last known data, reconnecting… ",
                names.join(", ")
            ));
        } else {
            heading.push_str("· last known data, reconnecting… ");
        }
    }
    heading
}

/// The bordered block, with a warning on the right where a view showing
/// the agent's status has no agent leader to keep it.
fn titled_block(app: &App, view: ListView, heading: String) -> Block<'static> {
    let block = Block::bordered().title(heading);
    if !view.agent_status() {
        return block;
    }
    let without_leader = app.stale_clusters();
    if without_leader.is_empty() {
        return block;
    }
    let text = if app.fleet() {
        let names: Vec<String> = without_leader.iter().map(|c| c.id.shown()).collect();
        format!(
            " no agent leader in {}: status may be stale ",
            names.join(", ")
        )
    } else {
        " no agent leader: status may be stale ".to_string()
    };
    block.title(
        Line::styled(
            text,
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        )
        .right_aligned(),
    )
}

/// Why a view has no row. Only refusals of what this view needs explain
/// its emptiness.
fn why_empty(app: &App, view: ListView) -> String {
    let t = app.table(view);
    let kinds = Screen::List(view).kinds();
    let denied: Vec<_> = app
        .clusters
        .iter()
        .flat_map(|c| c.data.denied().into_iter().map(move |d| (c, d)))
        .filter(|(_, (k, _))| kinds.contains(k))
        .collect();
    if t.total() == 0 && !denied.is_empty() {
        let (c, (kind, err)) = denied[0];
        if app.fleet() {
            format!(
                "cannot read {} in {}: {}",
                kind.label(),
                c.id.shown(),
                super::clean(err)
            )
        } else {
            format!("cannot read {}: {}", kind.label(), super::clean(err))
        }
    } else if t.total() == 0 && !app.loaded(view) {
        "loading…".to_string()
    } else if t.total() == 0 {
        "nothing here".to_string()
    } else {
        "no row matches the filter".to_string()
    }
}

/// The first row shown: where the last frame started, moved only as far
/// as keeps the selection `sel` in view (and remembered for the next).
fn scroll(fit: &mut Viewport, view: ListView, sel: usize, body: usize, len: usize) -> usize {
    let mut off = fit.offsets[view.index()];
    if sel < off {
        off = sel;
    }
    if body > 0 && sel >= off + body {
        off = sel + 1 - body;
    }
    off = off.min(len.saturating_sub(body.max(1)));
    fit.offsets[view.index()] = off;
    off
}

/// Each column as wide as its header and the widest cell shown (up to
/// `MAX_COLUMN`); the last one takes what is left.
fn column_widths(headers: &[&str], texts: &[Vec<std::borrow::Cow<'_, str>>]) -> Vec<Constraint> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count() + 1).collect();
    for row in texts {
        for (c, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(c) {
                *w = (*w).max(width(cell).min(MAX_COLUMN));
            }
        }
    }
    let last = widths.len().saturating_sub(1);
    widths
        .iter()
        .enumerate()
        .map(|(c, w)| {
            if c == last {
                Constraint::Fill(1)
            } else {
                Constraint::Length(*w as u16)
            }
        })
        .collect()
}

/// The header row: the sorted column marked, the selected one underlined.
fn header_row(headers: &[&str], l: &ListState) -> Row<'static> {
    Row::new(headers.iter().enumerate().map(|(c, h)| {
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
    }))
}

/// Display width without pulling in another crate.
mod unicode_width_shim {
    /// Columns a string takes (wide CJK characters count two).
    pub fn width(s: &str) -> usize {
        ratatui::text::Span::raw(s).width()
    }
}
