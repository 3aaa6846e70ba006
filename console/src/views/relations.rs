//! Related objects of a grant or a pod (issue 31): one line per object,
//! indented by how far it is from the anchor, the selected one reversed;
//! Enter hops (a grant or a pod opens its own relations, anything else its
//! details). Recomputed from the store on every draw.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::{Component, clean, tone_style};
use crate::model::{App, Screen, Viewport};
use crate::rows::relations::relations;

/// The relations screen.
pub struct RelationsView;

impl Component for RelationsView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        let Screen::Relations(cluster, anchor) = app.screen() else {
            return;
        };
        let Some(c) = app.cluster(cluster) else {
            return;
        };
        let at = if app.fleet() {
            format!(" in {cluster}")
        } else {
            String::new()
        };
        let block = Block::bordered().title(format!(
            " Related to {}{at} · Enter: go there · r: its relations · Esc: back ",
            clean(&anchor.label())
        ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let all = relations(&c.data.store, anchor);
        let height = inner.height as usize;
        fit.page = height;
        // The scroll is the selection here: j/k move it over the lines.
        fit.scroll_max = all.len().saturating_sub(1);
        let selected = app.ui.scroll.min(fit.scroll_max);
        let first = selected.saturating_sub(height.saturating_sub(1));
        let w_rel = 2 * all.iter().map(|l| l.depth).max().unwrap_or(0) + 9;
        let lines: Vec<Line> = all
            .iter()
            .enumerate()
            .skip(first)
            .take(height)
            .map(|(i, l)| {
                let rel = format!("{}{}", "  ".repeat(l.depth), l.relation);
                let kind = l
                    .target
                    .as_ref()
                    .map(|(k, _)| k.label())
                    .unwrap_or_default();
                let mut style = tone_style(l.tone);
                if i == selected {
                    style = style.add_modifier(Modifier::REVERSED);
                }
                Line::from(vec![
                    Span::styled(format!("{rel:<w_rel$} {kind:<13} "), style),
                    Span::styled(clean(&l.name()), style.add_modifier(Modifier::BOLD)),
                    Span::styled(format!("  {}", clean(&l.state)), style),
                ])
            })
            .collect();
        let body = if lines.is_empty() {
            vec![Line::styled("loading…", Style::new())]
        } else {
            lines
        };
        frame.render_widget(Paragraph::new(body), inner);
    }
}
