//! The bottom line: `:` command mode with its completion candidates, the
//! `/` filter, or the last message.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::{Component, clean};
use crate::model::{App, Mode, Viewport};

/// The command/filter line.
pub struct CommandLine;

impl Component for CommandLine {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, _fit: &mut Viewport) {
        let line = match &app.ui.mode {
            Mode::Command { input, completion } => {
                let mut spans = vec![
                    Span::styled(":", Style::new().fg(Color::Cyan)),
                    Span::raw(clean(input)),
                    Span::styled("█", Style::new().fg(Color::Cyan)),
                ];
                if let Some((cands, idx)) = completion
                    && cands.len() > 1
                {
                    spans.push(Span::styled(
                        format!(
                            "   [{}/{}] {}",
                            idx + 1,
                            cands.len(),
                            clean(&cands.join("  "))
                        ),
                        Style::new().fg(Color::DarkGray),
                    ));
                }
                Line::from(spans)
            }
            Mode::Filter => {
                let f = app
                    .current_list()
                    .map(|v| app.list(v).filter.clone())
                    .unwrap_or_default();
                Line::from(vec![
                    Span::styled("/", Style::new().fg(Color::Cyan)),
                    Span::raw(clean(&f)),
                    Span::styled("█", Style::new().fg(Color::Cyan)),
                ])
            }
            Mode::Normal => match &app.ui.flash {
                Some(m) => Line::styled(clean(m), Style::new().fg(Color::Yellow)),
                None => Line::raw(""),
            },
        };
        frame.render_widget(line, area);
    }
}
