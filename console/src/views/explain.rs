//! Explain (`x`): the agent's own decision for the selected Runtime,
//! workload or pod, step by step, recomputed from the store on every draw
//! so it follows the cluster live. The first failing step is the answer
//! to "why is this blocked?". The console's view writes nothing, so the
//! admission step is not a dry-run here; `berth explain` makes one.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Block;

use berth_shared::explain::Admission;

use super::Component;
use crate::model::{App, Screen, Viewport};
use crate::rows::explain::{Target, explain, lines as explain_lines};

/// Why the console's view has no admission verdict.
pub const NO_DRY_RUN: &str =
    "the console's view writes nothing; `berth explain KIND/NS/NAME` runs the server-side dry-run";

/// The Explain view.
pub struct ExplainView;

fn style_of(line: &str) -> Style {
    if line.starts_with("FAIL") {
        Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
    } else if line.starts_with("pass") {
        Style::new().fg(Color::Green)
    } else if line.starts_with("unknown") {
        Style::new().fg(Color::Yellow)
    } else if !line.starts_with(' ') && !line.starts_with("skipped") {
        Style::new().add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    }
}

/// Every line of the explanation of the screen's target.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let Screen::Explain(cluster, kind, key) = app.screen() else {
        return Vec::new();
    };
    let Some(c) = app.cluster(cluster) else {
        return Vec::new();
    };
    let target = Target {
        kind: *kind,
        key: key.clone(),
    };
    let admission = Admission::NotChecked {
        why: NO_DRY_RUN.into(),
    };
    match explain(&c.data.store, &target, None, Some(&admission)) {
        Some(e) => explain_lines(&e)
            .into_iter()
            .map(|l| {
                let style = style_of(&l);
                Line::styled(l, style)
            })
            .collect(),
        None => vec![Line::raw(format!(
            "{} {}/{} is not known (yet): waiting for the watch.",
            kind.label(),
            super::clean(&key.0),
            super::clean(&key.1)
        ))],
    }
}

impl Component for ExplainView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        let title = match app.screen().cluster() {
            Some(c) if app.fleet() => {
                format!(" Explain: the agent's decision in {c}, step by step ")
            }
            _ => " Explain: the agent's decision, step by step ".to_string(),
        };
        super::draw_scrolled(
            app,
            frame,
            area,
            fit,
            Block::bordered().title(title),
            lines(app),
            super::Overflow::Clip,
        );
    }
}
