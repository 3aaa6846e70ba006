//! The fleet header (issue 56): with more than one cluster, one line per
//! cluster under the tabs — its connection state (with the age of its
//! last data while it is unreachable, the line dimmed), its agent's leader
//! and the digest of the grants file its agent loaded — so that a cluster
//! that dropped out, or runs another grants file, shows at a glance.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Component, clean};
use crate::model::{App, Cluster, LeaderState, Viewport, WatchState};

/// Most clusters given a line of their own; the rest are summed up.
pub const MAX_LINES: usize = 4;

/// How many lines the header takes (none with one cluster).
pub fn height(app: &App) -> u16 {
    if !app.fleet() {
        return 0;
    }
    let n = app.clusters.len();
    (n.min(MAX_LINES) + usize::from(n > MAX_LINES)) as u16
}

/// The header.
pub struct FleetHeader;

/// The digest of the grants file a cluster's agent loaded, as the
/// RuntimeGrants it published say (first 12 hex digits; `mixed` while
/// they disagree, `-` without grants). `publisher`: the agent's Lease
/// name.
pub fn grants_digest(c: &Cluster, publisher: &str) -> String {
    let digests = crate::rows::grants::grants_file_digests(&c.data.store, publisher);
    match digests.len() {
        0 => "-".into(),
        1 => digests
            .iter()
            .next()
            .map(|d| d.chars().take(12).collect())
            .unwrap_or_default(),
        _ => "mixed".into(),
    }
}

/// A cluster's connection in words, and whether it is failing.
pub fn connection_words(app: &App, c: &Cluster) -> (String, bool) {
    let age = c
        .heard
        .map(|t| crate::rows::human_duration(app.now.as_second() - t.as_second()));
    match c.data.connection() {
        None if c.data.watches.is_empty() => ("connecting…".into(), false),
        None => ("connected".into(), false),
        Some((kind, WatchState::Reconnecting(e))) => {
            let since = age.map_or_else(
                || "no data yet".to_string(),
                |a| format!("last data {a} ago"),
            );
            (
                format!("unreachable ({since}): {}: {}", kind.label(), clean(e)),
                true,
            )
        }
        Some((kind, _)) => (format!("syncing {}…", kind.label()), false),
    }
}

fn line(app: &App, c: &Cluster, width: usize) -> Line<'static> {
    let dim = Style::new().fg(Color::DarkGray);
    let (conn, failing) = connection_words(app, c);
    let leader = match c.leader_state(&app.session.agent_lease, app.now) {
        LeaderState::Live(h) => clean(&h),
        LeaderState::Expired(_) | LeaderState::NoLease => "none".into(),
        LeaderState::Unknown => "?".into(),
    };
    let conn_style = if failing {
        Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
    } else if conn == "connected" {
        Style::new().fg(Color::Green)
    } else {
        Style::new().fg(Color::Yellow)
    };
    let name = format!(" {:<w$}", c.id.shown(), w = width);
    let mut line = Line::from(vec![
        Span::styled(name, Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(" │ ", dim),
        Span::styled(conn, conn_style),
        Span::styled(" │ leader ", dim),
        Span::raw(leader),
        Span::styled(" │ grants ", dim),
        Span::raw(grants_digest(c, &app.session.agent_lease.1)),
    ]);
    if failing {
        line = line.style(Style::new().add_modifier(Modifier::DIM));
    }
    line
}

impl Component for FleetHeader {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, _fit: &mut Viewport) {
        let width = app
            .clusters
            .iter()
            .map(|c| c.id.shown().chars().count())
            .max()
            .unwrap_or(0)
            .min(32);
        let mut lines: Vec<Line> = app
            .clusters
            .iter()
            .take(MAX_LINES)
            .map(|c| line(app, c, width))
            .collect();
        let rest = &app.clusters[MAX_LINES.min(app.clusters.len())..];
        if !rest.is_empty() {
            let failing = rest.iter().filter(|c| connection_words(app, c).1).count();
            lines.push(Line::styled(
                format!(
                    " … and {} more cluster(s), {failing} unreachable (/cluster=NAME shows one)",
                    rest.len()
                ),
                Style::new().fg(Color::DarkGray),
            ));
        }
        frame.render_widget(ratatui::widgets::Paragraph::new(lines), area);
    }
}
