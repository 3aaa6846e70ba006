//! The handler matrix (issue 31): RuntimeClasses down, node groups across
//! (nodes that give the same answer for every class form one column, so
//! 200 nodes of a few kinds fit), each cell saying whether the class's
//! scheduling allows the nodes, whether they report its handler and with
//! which features, and how many of its pods run there. Columns that do not
//! fit are named below with the way to see them all; the nodes of each
//! shown column are listed under the legend. Recomputed from the store on
//! every draw (classes × nodes, cheap), like the plan.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use berth_shared::matrix::{Matrix, MatrixCell};

use super::{Component, Overflow, clean, tone_style};
use crate::model::{App, RowTone, Viewport};
use crate::rows::matrix::{LEGEND, group_heading, locate, matrices};

/// The matrix screen.
pub struct MatrixView;

/// Widest a class, handler or group column gets (longer names are cut).
const MAX_COL: usize = 22;

fn cut(s: &str, w: usize) -> String {
    let s = clean(s);
    if s.chars().count() <= w {
        format!("{s:<w$}")
    } else {
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn tone(c: &MatrixCell) -> RowTone {
    if c.broken() {
        RowTone::Problem
    } else if c.unknown() {
        RowTone::Warn
    } else if c.pods > 0 {
        RowTone::Good
    } else {
        RowTone::Normal
    }
}

/// Every line of the matrix at `width` columns, the `selected` cell
/// (class row, node group) reversed, ages of the evidence at `now`
/// (seconds since the epoch).
pub fn lines(
    m: &Matrix,
    width: usize,
    selected: Option<(usize, usize)>,
    now: i64,
) -> Vec<Line<'static>> {
    if m.classes.is_empty() {
        return vec![Line::raw("No RuntimeClass in the cluster.")];
    }
    let cols = Columns::of(m, now);
    let (first, shown) = cols.window(width, selected);
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut out = Vec::new();
    let mut head = vec![
        Span::styled(cut("CLASS", cols.class), bold),
        Span::raw(" "),
        Span::styled(cut("HANDLER", cols.handler), bold),
    ];
    for (h, w) in cols
        .headings
        .iter()
        .zip(&cols.groups)
        .skip(first)
        .take(shown)
    {
        head.push(Span::raw("  "));
        head.push(Span::styled(cut(h, *w), bold));
    }
    out.push(Line::from(head));
    for (i, c) in m.classes.iter().enumerate() {
        let mut spans = vec![
            Span::raw(cut(&c.class, cols.class)),
            Span::raw(" "),
            Span::raw(cut(&c.handler, cols.handler)),
        ];
        for (j, (g, w)) in m
            .groups
            .iter()
            .zip(&cols.groups)
            .enumerate()
            .skip(first)
            .take(shown)
        {
            spans.push(Span::raw("  "));
            match g.cells.get(i) {
                Some(cell) => {
                    let mut style = tone_style(tone(cell));
                    if selected == Some((i, j)) {
                        style = style.add_modifier(Modifier::REVERSED);
                    }
                    spans.push(Span::styled(cut(&cell.short_at(Some(now)), *w), style))
                }
                None => spans.push(Span::raw(" ".repeat(*w))),
            }
        }
        out.push(Line::from(spans));
    }
    out.extend(footer(m, &cols.headings, first, shown));
    out
}

/// The columns' widths: class, handler, and each node group's (as wide
/// as its heading and its widest cell, up to `MAX_COL`).
struct Columns {
    class: usize,
    handler: usize,
    headings: Vec<String>,
    groups: Vec<usize>,
}

impl Columns {
    fn of(m: &Matrix, now: i64) -> Self {
        let widest = |names: &mut dyn Iterator<Item = usize>, least: usize| {
            names.chain([least]).max().unwrap_or(least).min(MAX_COL)
        };
        let class = widest(&mut m.classes.iter().map(|c| c.class.chars().count()), 5);
        let handler = widest(&mut m.classes.iter().map(|c| c.handler.chars().count()), 7);
        let headings: Vec<String> = m
            .groups
            .iter()
            .map(|g| group_heading(&g.label, g.nodes.len(), g.state))
            .collect();
        let groups: Vec<usize> = m
            .groups
            .iter()
            .zip(&headings)
            .map(|(g, h)| {
                g.cells
                    .iter()
                    .map(|c| c.short_at(Some(now)).chars().count())
                    .chain([h.chars().count()])
                    .max()
                    .unwrap_or(1)
                    .min(MAX_COL)
            })
            .collect();
        Columns {
            class,
            handler,
            headings,
            groups,
        }
    }

    /// As many groups as fit after the class and handler columns, from the
    /// first one that keeps the selected group in view: (first, how many).
    fn window(&self, width: usize, selected: Option<(usize, usize)>) -> (usize, usize) {
        let fits = |from: usize| {
            let mut used = self.class + 1 + self.handler;
            let mut n = 0;
            for w in &self.groups[from..] {
                if used + 2 + w > width {
                    break;
                }
                used += 2 + w;
                n += 1;
            }
            n
        };
        let want = selected.map_or(0, |(_, c)| c.min(self.groups.len().saturating_sub(1)));
        let mut first = 0;
        while first < want && fits(first) <= want - first {
            first += 1;
        }
        (first, fits(first))
    }
}

/// Below the table: the groups out of view, the legend, and each group's
/// nodes.
fn footer(m: &Matrix, headings: &[String], first: usize, shown: usize) -> Vec<Line<'static>> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut out = Vec::new();
    let hidden = m.groups.len() - first - shown;
    if first > 0 {
        out.push(Line::styled(
            format!("{first} node group(s) to the left (h)"),
            Style::new().add_modifier(Modifier::DIM),
        ));
    }
    if hidden > 0 {
        out.push(Line::styled(
            format!(
                "{hidden} more node group(s) do not fit: widen the terminal, or `berth get handlers --matrix`"
            ),
            Style::new().add_modifier(Modifier::DIM),
        ));
    }
    out.push(Line::raw(""));
    out.push(Line::styled(
        LEGEND,
        Style::new().add_modifier(Modifier::DIM),
    ));
    out.push(Line::raw(""));
    for (g, h) in m.groups.iter().zip(headings) {
        let names: Vec<String> = g.nodes.iter().take(8).map(|n| clean(n)).collect();
        let more = g.nodes.len() - names.len();
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        out.push(Line::from(vec![
            Span::styled(format!("{}: ", clean(h)), bold),
            Span::raw(format!("{}{tail}", names.join(", "))),
        ]));
    }
    out
}

impl Component for MatrixView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        // Each cluster's matrix (node groups never span clusters), one
        // under the other in a fleet, each under its cluster's name.
        let ms = matrices(app.clusters.iter().map(|c| (&c.id, &c.data.store)));
        let selected = locate(&ms, app.ui.matrix_cell.0);
        let classes: std::collections::BTreeSet<&str> = ms
            .iter()
            .flat_map(|(_, m)| m.classes.iter().map(|c| c.class.as_str()))
            .collect();
        let nodes: usize = ms
            .iter()
            .flat_map(|(_, m)| m.groups.iter().map(|g| g.nodes.len()))
            .sum();
        let groups: usize = ms.iter().map(|(_, m)| m.groups.len()).sum();
        let mut title = format!(
            " Handler matrix: {} class(es) × {nodes} node(s) in {groups} group(s)",
            classes.len()
        );
        if app.fleet() {
            title.push_str(&format!(" in {} clusters", ms.len()));
        }
        title.push_str("; Enter: a cell's canary ");
        let block = Block::bordered().title(title);
        // The block draws itself in draw_scrolled; its inside is as wide here.
        let width = block.inner(area).width as usize;
        let mut all = Vec::new();
        for (k, (id, m)) in ms.iter().enumerate() {
            if app.fleet() {
                all.push(Line::styled(
                    format!("── cluster {id} ──"),
                    Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED),
                ));
            }
            let cell = selected
                .filter(|(of, _)| *of == k)
                .map(|(_, row)| (row, app.ui.matrix_cell.1));
            all.extend(lines(m, width, cell, app.now.as_second()));
            if app.fleet() {
                all.push(Line::raw(""));
            }
        }
        super::draw_scrolled(app, frame, area, fit, block, all, Overflow::Wrap);
    }
}
