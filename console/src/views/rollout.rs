//! Rollout: one Runtime live — revision, image from → to, gauges for
//! updated/ready/available against desired, old and new ReplicaSets with
//! their pods, the progress deadline and recent events.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Gauge, Paragraph};

use super::Component;
use crate::model::{App, Screen, Viewport};
use crate::rows::{self, RolloutRow};

/// The Rollout view.
pub struct RolloutView;

/// The body while the screen's watches still list.
pub const LOADING: &str = "loading… (listing the Runtime's ReplicaSets, Pods and Events)";

fn phase_style(phase: &str, blocked: bool) -> Style {
    if blocked {
        return Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
    }
    match phase {
        "Complete" => Style::new().fg(Color::Green),
        "Failed" | "Blocked" => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        "Progressing" | "Pending" => Style::new().fg(Color::Yellow),
        _ => Style::new(),
    }
}

impl Component for RolloutView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        let Screen::Rollout(cluster, key) = app.screen() else {
            return;
        };
        let Some(c) = app.cluster(cluster) else {
            return;
        };
        let title = if app.fleet() {
            format!(" Rollout {}/{} in {cluster} ", key.0, key.1)
        } else {
            format!(" Rollout {}/{} ", key.0, key.1)
        };
        let mut block = Block::bordered().title(title);
        // Phase and counts are the agent's status: say when nobody updates it.
        if app.stale_status(c) {
            block = block.title(
                Line::styled(
                    " no agent leader: status may be stale ",
                    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
                )
                .right_aligned(),
            );
        }
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let Some(r) = rows::rollout(&c.data.store, key, app.now) else {
            frame.render_widget(
                Paragraph::new("Runtime not found (yet): waiting for the watch…"),
                inner,
            );
            return;
        };
        let [head, g1, g2, g3, rest] = Layout::vertical([
            Constraint::Length(4),
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(0),
        ])
        .areas(inner);
        frame.render_widget(Paragraph::new(head_lines(&r)), head);
        for (area, label, n) in [
            (g1, "updated", r.updated),
            (g2, "ready", r.ready),
            (g3, "available", r.available),
        ] {
            let ratio = if r.desired > 0 {
                (f64::from(n) / f64::from(r.desired)).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let color = if n >= r.desired {
                Color::Green
            } else {
                Color::Yellow
            };
            frame.render_widget(
                Gauge::default()
                    .ratio(ratio)
                    .label(format!("{label} {n}/{}", r.desired))
                    .gauge_style(Style::new().fg(color).bg(Color::Black)),
                area,
            );
        }
        // Until every watch of the screen has listed, an empty ReplicaSet
        // or event list means "not read yet", not "none".
        let lines = if app.screen_listed(app.screen()) {
            body_lines(&r)
        } else {
            vec![Line::raw(LOADING)]
        };
        super::draw_scrolled_unbordered(app, frame, rest, fit, lines, super::Overflow::Clip);
    }
}

fn head_lines(r: &RolloutRow) -> Vec<Line<'static>> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    vec![
        Line::from(vec![
            Span::styled("revision ", bold),
            Span::raw(r.revision.clone()),
            Span::styled("  phase ", bold),
            Span::styled(r.phase.clone(), phase_style(&r.phase, r.blocked)),
            Span::styled("  deadline ", bold),
            Span::raw(r.deadline.clone()),
            Span::styled("  unavailable ", bold),
            Span::raw(r.unavailable.to_string()),
        ]),
        if r.image_from == r.image_to || r.image_from == rows::NONE {
            Line::from(vec![
                Span::styled("image ", bold),
                Span::raw(r.image_to.clone()),
            ])
        } else {
            Line::from(vec![
                Span::styled("image ", bold),
                Span::raw(r.image_from.clone()),
                Span::styled(" → ", Style::new().fg(Color::Yellow)),
                Span::raw(r.image_to.clone()),
            ])
        },
        Line::from(vec![
            Span::styled("last successful ", bold),
            Span::raw(r.last_successful_image.clone()),
        ]),
        if r.blocked {
            Line::styled(
                "BLOCKED: the agent changes nothing for this Runtime",
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            )
        } else {
            Line::raw("")
        },
    ]
}

fn body_lines(r: &RolloutRow) -> Vec<Line<'static>> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut out = vec![Line::styled("ReplicaSets", bold)];
    if r.replica_sets.is_empty() {
        out.push(Line::raw("  (none)"));
    }
    for rs in &r.replica_sets {
        let (mark, style) = if rs.current {
            ("new", Style::new().fg(Color::Green))
        } else {
            ("old", Style::new().fg(Color::DarkGray))
        };
        out.push(Line::from(vec![
            Span::styled(format!("  {mark} rev {:<4}", rs.revision), style),
            Span::raw(format!(
                " {}  {}/{}  {}",
                rs.name, rs.ready, rs.desired, rs.image
            )),
        ]));
        for p in &rs.pods {
            let st = if p.ready {
                Style::new().fg(Color::Green)
            } else {
                Style::new().fg(Color::Yellow)
            };
            out.push(Line::from(vec![
                Span::raw(format!("      {} ", p.name)),
                Span::styled(
                    format!("{}{}", p.phase, if p.ready { " ready" } else { "" }),
                    st,
                ),
                Span::raw(format!("  {}", p.node)),
            ]));
        }
    }
    out.push(Line::raw(""));
    out.push(Line::styled("Events", bold));
    if r.events.is_empty() {
        out.push(Line::raw("  (none)"));
    }
    for e in &r.events {
        let st = if e.type_ == "Warning" {
            Style::new().fg(Color::Yellow)
        } else {
            Style::new()
        };
        out.push(Line::styled(
            format!(
                "  {:>4} {:<8} {:<20} {} {}",
                e.age, e.type_, e.reason, e.object, e.message
            ),
            st,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::LOADING;
    use crate::fixtures;
    use crate::model::{Kind, Msg, Scope, Screen, WatchEvent, WatchKey, update};

    fn text(app: &crate::model::App) -> String {
        let mut term = Terminal::new(TestBackend::new(140, 30)).expect("terminal");
        term.draw(|f| {
            super::super::draw(f, app);
        })
        .expect("draw");
        crate::testkit::screen_text(term.backend().buffer())
    }

    #[test]
    fn says_loading_until_every_watch_of_the_screen_has_listed() {
        let mut app = fixtures::app();
        let rollout = Screen::Rollout(fixtures::cluster(), ("demo".into(), "web".into()));
        app.open(rollout.clone());
        let whole = text(&app);
        // The current ReplicaSet's line.
        assert!(whole.contains("new rev") && !whole.contains(LOADING));
        // As after the grace period: the ReplicaSets' watch is relisting.
        app.clusters[0]
            .data
            .synced
            .remove(&WatchKey::all(Kind::ReplicaSet));
        let scoped = rollout
            .watches(&Scope::All)
            .into_iter()
            .find(|k| k.kind == Kind::ReplicaSet)
            .expect("a ReplicaSet watch");
        let loading = text(&app);
        assert!(loading.contains(LOADING), "{loading}");
        assert!(!loading.contains("new rev"), "{loading}");
        let g = fixtures::origin(&app);
        update(
            &mut app,
            Msg::Watched(g.clone(), scoped.clone(), WatchEvent::Init),
        );
        assert!(text(&app).contains(LOADING));
        update(&mut app, Msg::Watched(g, scoped, WatchEvent::InitDone));
        assert!(!text(&app).contains(LOADING));
    }
}
