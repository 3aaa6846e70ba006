//! `?`: every key of the current screen and every command.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::Component;
use crate::model::App;
use crate::model::keys::{COMMANDS, help_keys};

/// The help popup.
pub struct Help;

impl Component for Help {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect) {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let mut lines = vec![Line::styled("Keys", bold)];
        for (k, d) in help_keys(app.screen()) {
            lines.push(Line::raw(format!("  {k:<16} {d}")));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("Commands", bold));
        for (name, aliases, d) in COMMANDS {
            let names = if aliases.is_empty() {
                format!(":{name}")
            } else {
                format!(":{name} ({})", aliases.join(","))
            };
            lines.push(Line::raw(format!("  {names:<40} {d}")));
        }
        let h = (lines.len() as u16 + 2).min(area.height);
        let w = 96.min(area.width);
        let popup = Rect {
            x: area.x + (area.width - w) / 2,
            y: area.y + (area.height - h) / 2,
            width: w,
            height: h,
        };
        frame.render_widget(Clear, popup);
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(" Help (any key closes) ")),
            popup,
        );
    }
}
