//! The retirement review and confirmation screen: the action, the user,
//! the spec diff, the effect on the rendered pod templates, the dry-run
//! verdict, and the confirmation line (the name typed for destructive
//! actions). Drawn over the main area while a review is open.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{Component, clean};
use crate::model::{App, ReviewState, Viewport};
use crate::retire::{self, Tone};

/// The review popup.
pub struct ReviewView;

fn style(t: Tone) -> Style {
    match t {
        Tone::Heading => Style::new().add_modifier(Modifier::BOLD),
        Tone::Plain => Style::new(),
        Tone::Added => Style::new().fg(Color::Green),
        Tone::Removed => Style::new().fg(Color::Red),
        Tone::Good => Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
        Tone::Bad => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        Tone::Dim => Style::new().fg(Color::DarkGray),
    }
}

impl Component for ReviewView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        let Some(state) = &app.ui.review else {
            return;
        };
        frame.render_widget(Clear, area);
        // In a fleet the title names the cluster from the start (the
        // review's own first line names it in every case).
        let at = |cluster: &crate::store::ClusterId| {
            if app.fleet() {
                format!(" in cluster {cluster}")
            } else {
                String::new()
            }
        };
        let (title, body, footer): (String, Vec<Line>, Line) = match state {
            ReviewState::Loading {
                cluster,
                title,
                target,
                ..
            } => (
                format!(
                    " Review{}: {} {} ",
                    at(cluster),
                    clean(title),
                    clean(target)
                ),
                vec![Line::raw(
                    "checking permission, reading, and asking the API server for a dry-run …",
                )],
                Line::styled("Esc cancel", Style::new().fg(Color::DarkGray)),
            ),
            ReviewState::Failed {
                cluster,
                title,
                target,
                error,
            } => (
                format!(
                    " Review{}: {} {} ",
                    at(cluster),
                    clean(title),
                    clean(target)
                ),
                vec![
                    Line::styled(clean(error), style(Tone::Bad)),
                    Line::raw(""),
                    Line::raw("Nothing was changed."),
                ],
                Line::styled("Esc close", Style::new().fg(Color::DarkGray)),
            ),
            ReviewState::Ready { review, typed } | ReviewState::Running { review, typed } => {
                let lines: Vec<Line> = retire::lines(review)
                    .into_iter()
                    .map(|(t, s)| Line::styled(clean_long(&s), style(t)))
                    .collect();
                let running = matches!(state, ReviewState::Running { .. });
                let footer = ready_footer(review, typed, running, app.fleet());
                (
                    format!(
                        " Review{}: {} ",
                        at(&review.cluster),
                        clean(&review.plan.action.title())
                    ),
                    lines,
                    footer,
                )
            }
        };
        let block = Block::bordered().title(title);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [body_area, footer_area] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        let max = (body.len() as u16).saturating_sub(body_area.height) as usize;
        let scroll = app.ui.scroll.min(max) as u16;
        fit.scroll_max = max;
        frame.render_widget(
            Paragraph::new(body)
                .wrap(Wrap { trim: false })
                .scroll((scroll, 0)),
            body_area,
        );
        frame.render_widget(Paragraph::new(footer), footer_area);
    }
}

/// The footer of a review that came back: sending, the confirmation
/// prompt with what is typed so far, or why it cannot be confirmed.
fn ready_footer(review: &retire::Review, typed: &str, running: bool, fleet: bool) -> Line<'static> {
    if running {
        Line::raw("sending …")
    } else if review.can_execute() {
        Line::from(vec![
            Span::styled(
                clean(&retire::prompt(review, fleet)),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(clean(typed)),
            Span::styled("█", Style::new().fg(Color::Cyan)),
            Span::styled(
                "   Enter confirm · Esc cancel",
                Style::new().fg(Color::DarkGray),
            ),
        ])
    } else if review.plan.nothing.is_some() {
        Line::styled("nothing to do · Esc close", style(Tone::Dim))
    } else {
        Line::styled(
            "cannot be confirmed: the dry-run was refused · Esc close",
            style(Tone::Bad),
        )
    }
}

fn clean_long(s: &str) -> String {
    berth_shared::sanitize::line(s, 1024)
}
