//! The status bar: context, namespace, the agent's leader (from its Lease),
//! read-only mode and the connection state ("reconnecting…" with the error
//! while a watch is down).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Component, clean};
use crate::model::{App, WatchState};

/// The status bar.
pub struct StatusBar;

/// The connection state as text and whether it is bad.
pub fn connection_text(app: &App) -> (String, Style) {
    match app.connection() {
        None if app.watches.is_empty() => ("connecting…".into(), Style::new().fg(Color::Yellow)),
        None => ("connected".into(), Style::new().fg(Color::Green)),
        Some((kind, WatchState::Reconnecting(e))) => (
            format!("reconnecting… {}: {}", kind.label(), clean(e)),
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
        Some((kind, _)) => (
            format!("syncing {}…", kind.label()),
            Style::new().fg(Color::Yellow),
        ),
    }
}

impl Component for StatusBar {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect) {
        let dim = Style::new().fg(Color::DarkGray);
        let (conn, conn_style) = connection_text(app);
        let mut spans = vec![
            Span::styled(" ctx ", dim),
            Span::raw(clean(&app.context)),
            Span::styled(" │ ns ", dim),
            Span::raw(clean(app.scope.label())),
            Span::styled(" │ leader ", dim),
            Span::raw(app.leader().unwrap_or_else(|| "-".into())),
            Span::styled(" │ ", dim),
            Span::styled(conn, conn_style),
        ];
        let denied = app.denied();
        if !denied.is_empty() {
            let kinds: Vec<&str> = denied.iter().map(|(k, _)| k.label()).collect();
            spans.push(Span::styled(
                format!(" │ no access: {}", kinds.join(",")),
                Style::new().fg(Color::Yellow),
            ));
        }
        if app.read_only {
            spans.push(Span::styled(" │ read-only", Style::new().fg(Color::Cyan)));
        }
        spans.push(Span::styled(" │ ? help", dim));
        frame.render_widget(
            Line::from(spans).style(Style::new().bg(Color::Rgb(30, 30, 30))),
            area,
        );
    }
}
