//! Plan: what the agent's pending grants file would do on its next restart
//! (the plan `berth plan-grants --pending` prints), recomputed from the
//! store on every draw so it follows the cluster live. Runtimes that would
//! lose their grant come first (the plan sorts them so).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Block;

use berth_shared::plan::candidate_from_pending;

use super::Component;
use crate::model::{App, Screen, Viewport};
use crate::rows::plan::{plan_from_store, plan_lines};

/// The Plan view.
pub struct PlanView;

fn style_of(line: &str) -> Style {
    let red = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
    if line.contains("REVOKE")
        || line.contains("REFUSE")
        || line.contains(" stalls on ")
        || line.contains("refused")
        || line.starts_with("Plan for ")
            && (line.contains("Disruptive") || line.contains("Invalid"))
    {
        red
    } else if line.contains("GRANT") || line.contains("ROLL") || line.contains("STILL NEEDED") {
        Style::new().fg(Color::Yellow)
    } else if line.starts_with("Plan for ") || line.ends_with(':') && !line.starts_with(' ') {
        Style::new().add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    }
}

/// Every line of the plan of the agent's pending file.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let Screen::Plan(cluster) = app.screen() else {
        return Vec::new();
    };
    let Some(c) = app.cluster(cluster) else {
        return Vec::new();
    };
    let store = &c.data.store;
    let publisher = &app.session.agent_lease.1;
    let Some(pending) = store.pending_files.get(&(String::new(), publisher.clone())) else {
        return vec![
            Line::styled(
                "No pending grants file.",
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Line::raw(format!(
                "The agent's grants file on disk is the one it loaded (no PendingGrantsFile {}).",
                super::clean(publisher)
            )),
            Line::raw(
                "Edit the file on the agent's disk: the plan of the new content shows here, live.",
            ),
        ];
    };
    let candidate = candidate_from_pending(format!("PendingGrantsFile/{publisher}"), &pending.spec);
    let plan = plan_from_store(store, publisher, &candidate);
    plan_lines(&plan)
        .into_iter()
        .map(|l| {
            let style = style_of(&l);
            Line::styled(l, style)
        })
        .collect()
}

impl Component for PlanView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        super::draw_scrolled(
            app,
            frame,
            area,
            fit,
            Block::bordered().title(match app.screen().cluster() {
                Some(c) if app.fleet() => {
                    format!(" Plan: {c}'s pending grants file, on the next agent restart there ")
                }
                _ => " Plan: the pending grants file, on the next agent restart ".to_string(),
            }),
            lines(app),
            super::Overflow::Clip,
        );
    }
}
