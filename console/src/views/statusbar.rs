//! The status bar. Safety states come first, so that a narrow terminal or a
//! long context name cuts the least important part (the line is cut on the
//! right): read-only, refused watches ("no access"), a dead agent ("no
//! leader"), a `:ctx` switch in flight, the connection state; then the
//! context, namespace and the agent's live leader (from its Lease).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Component, clean};
use crate::model::{App, LeaderState, Viewport, WatchState};

/// The status bar.
pub struct StatusBar;

/// Longest context name shown (longer ones are cut with `…`).
const CONTEXT_CHARS: usize = 32;

/// The connection state as text and whether it is bad: one cluster's
/// words as they always were; in a fleet, which clusters are unreachable
/// or syncing (the header has each cluster's line).
pub fn connection_text(app: &App) -> (String, Style) {
    let Some(c) = app.single() else {
        let failing: Vec<String> = app
            .clusters
            .iter()
            .filter(|c| matches!(c.data.connection(), Some((_, WatchState::Reconnecting(_)))))
            .map(|c| c.id.shown())
            .collect();
        let syncing = app
            .clusters
            .iter()
            .any(|c| c.data.watches.is_empty() || c.data.connection().is_some());
        return if !failing.is_empty() {
            (
                format!("reconnecting… {}", failing.join(", ")),
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            )
        } else if syncing {
            ("syncing…".into(), Style::new().fg(Color::Yellow))
        } else {
            (
                format!("{} clusters connected", app.clusters.len()),
                Style::new().fg(Color::Green),
            )
        };
    };
    match c.data.connection() {
        None if c.data.watches.is_empty() => ("connecting…".into(), Style::new().fg(Color::Yellow)),
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

/// The spans of the status bar, most important first.
pub fn spans(app: &App) -> Vec<Span<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let mut items = alerts(app);
    let (conn, conn_style) = connection_text(app);
    items.push(Span::styled(conn, conn_style));
    items.push(Span::styled("ctx ", dim));
    let mut spans = vec![Span::raw(" ")];
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" │ ", dim));
        }
        spans.push(item);
    }
    let contexts: Vec<&str> = app.clusters.iter().map(|c| c.id.context()).collect();
    let mut ctx = berth_shared::sanitize::line(&contexts.join(","), CONTEXT_CHARS);
    if ctx.is_empty() {
        ctx = "-".into();
    }
    spans.push(Span::raw(ctx));
    spans.push(Span::styled(" │ ns ", dim));
    spans.push(Span::raw(clean(app.session.scope.label())));
    // One cluster's leader; a fleet's are in the header.
    if let Some(c) = app.single() {
        spans.push(Span::styled(" │ leader ", dim));
        spans.push(Span::raw(
            match c.leader_state(&app.session.agent_lease, app.now) {
                LeaderState::Live(h) => clean(&h),
                LeaderState::Expired(_) | LeaderState::NoLease => "none".into(),
                LeaderState::Unknown => "?".into(),
            },
        ));
    }
    spans.push(Span::styled(" │ ? help", dim));
    spans
}

/// What the user must know first, left of the connection: read-only, the
/// kinds not readable, no agent leader, a restart required, a context
/// switch under way.
fn alerts(app: &App) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    if app.session.read_only {
        out.push(Span::styled(
            "read-only",
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        ));
    }
    let fleet = app.fleet();
    // In a fleet each cluster names itself: `b: Pod`.
    let of = |c: &crate::model::Cluster, what: &str| {
        if fleet {
            format!("{}: {what}", c.id.shown())
        } else {
            what.to_string()
        }
    };
    let denied: Vec<String> = app
        .clusters
        .iter()
        .filter_map(|c| {
            let kinds: Vec<&str> = c.data.denied().iter().map(|(k, _)| k.label()).collect();
            (!kinds.is_empty()).then(|| of(c, &kinds.join(",")))
        })
        .collect();
    if !denied.is_empty() {
        out.push(Span::styled(
            format!("no access: {}", denied.join("; ")),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    let without_leader = app.stale_clusters();
    if !without_leader.is_empty() {
        let text = if fleet {
            let names: Vec<String> = without_leader.iter().map(|c| c.id.shown()).collect();
            format!("no leader in {}: status may be stale", names.join(", "))
        } else {
            "no leader: status may be stale".to_string()
        };
        out.push(Span::styled(
            text,
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    // An agent's grants file changed on disk: say so, and where the
    // plan of the change is.
    if app
        .clusters
        .iter()
        .any(|c| c.rows.grants.iter().any(|g| g.restart_required))
    {
        out.push(Span::styled(
            "restart required: :plan",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(target) = &app.session.switching {
        out.push(Span::styled(
            format!("switching to {}…", clean(&target.join(","))),
            Style::new().fg(Color::Yellow),
        ));
    }
    out
}

impl Component for StatusBar {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, _fit: &mut Viewport) {
        frame.render_widget(
            Line::from(spans(app)).style(Style::new().bg(Color::Rgb(30, 30, 30))),
            area,
        );
    }
}
