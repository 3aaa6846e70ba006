//! `?`: every key of the current screen (from the one key table), every
//! command, and the read-only state. It scrolls when it does not fit
//! (80×24 shows about half of it).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::Component;
use crate::model::commands::COMMANDS;
use crate::model::keymap::help_lines;
use crate::model::{App, Viewport};

/// The help popup.
pub struct Help;

/// Every line of help for the current screen.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::styled("Keys", bold)];
    for (k, d) in help_lines(app.screen()) {
        lines.push(Line::raw(format!("  {k:<16} {d}")));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Commands", bold));
    for (name, aliases, d) in COMMANDS {
        let name = format!(":{name}");
        let also = if aliases.is_empty() {
            String::new()
        } else {
            let a: Vec<String> = aliases.iter().map(|a| format!(":{a}")).collect();
            format!(" (also {})", a.join(" "))
        };
        lines.push(Line::raw(format!("  {name:<16} {d}{also}")));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Changes", bold));
    lines.push(Line::raw(if app.session.read_only {
        "  read-only (--read-only): R S D P are disabled".to_string()
    } else {
        "  R S D P always show a review first; --read-only disables them".to_string()
    }));
    lines
}

impl Component for Help {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        let all = lines(app);
        let h = (all.len() as u16 + 2).min(area.height);
        let w = 96.min(area.width);
        let popup = Rect {
            x: area.x + (area.width - w) / 2,
            y: area.y + (area.height - h) / 2,
            width: w,
            height: h,
        };
        let inner_h = h.saturating_sub(2) as usize;
        let max = all.len().saturating_sub(inner_h);
        fit.help_scroll_max = max;
        let start = app.ui.help_scroll.min(max);
        let mut block = Block::bordered().title(" Help: j/k scroll, any other key closes ");
        if max > 0 {
            let more = if start < max { "↓ more" } else { "end" };
            block = block.title_bottom(
                Line::raw(format!(" {}/{} {more} ", start + inner_h, all.len())).right_aligned(),
            );
        }
        let visible: Vec<Line> = all.into_iter().skip(start).take(inner_h).collect();
        frame.render_widget(Clear, popup);
        frame.render_widget(Paragraph::new(visible).block(block), popup);
    }
}
