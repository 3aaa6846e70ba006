//! Findings (`:findings`): what needs attention, worst first, each with
//! the objects concerned and the fix (the same list `berth check`
//! prints), recomputed from the store on every draw.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Block;

use berth_shared::findings::Severity;
use berth_shared::sanitize;

use super::Component;
use crate::model::{App, Viewport};
use crate::rows::findings::{ClusterInputs, fleet_findings};
use crate::store::{ClusterId, Kind};

/// Every finding of every cluster and across them, each with the
/// clusters it is about, worst first.
pub fn app_findings(app: &App) -> Vec<(Vec<ClusterId>, berth_shared::findings::Finding)> {
    let refused: Vec<Vec<(Kind, String)>> = app
        .clusters
        .iter()
        .map(|c| {
            c.data
                .denied()
                .into_iter()
                .map(|(k, e)| (k, e.to_string()))
                .collect()
        })
        .collect();
    let inputs: Vec<ClusterInputs> = app
        .clusters
        .iter()
        .zip(&refused)
        .map(|(c, refused)| ClusterInputs {
            cluster: c.id.clone(),
            store: &c.data.store,
            refused,
        })
        .collect();
    fleet_findings(
        &inputs,
        &[],
        &app.session.agent_lease,
        app.now,
        &app.session.same_grants,
    )
}

/// The Findings view.
pub struct FindingsView;

/// Every line of the findings.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let findings = app_findings(app);
    if findings.is_empty() {
        return vec![Line::styled(
            "No findings: nothing needs attention.",
            Style::new().fg(Color::Green),
        )];
    }
    let clean = |s: &str| sanitize::line(s, sanitize::MAX_VALUE_CHARS);
    let mut out = Vec::new();
    for (clusters, f) in &findings {
        let style = match f.severity {
            Severity::Error => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            Severity::Warning => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Severity::Info => Style::new().add_modifier(Modifier::BOLD),
        };
        let at = if app.fleet() {
            let names: Vec<String> = clusters.iter().map(|c| c.shown()).collect();
            format!("[{}] ", names.join(","))
        } else {
            String::new()
        };
        out.push(Line::styled(
            format!(
                "{:<7} {at}{}: {}",
                f.severity.word(),
                f.kind.id(),
                clean(&f.message)
            ),
            style,
        ));
        if !f.objects.is_empty() {
            out.push(Line::raw(format!(
                "        objects: {}",
                clean(&f.objects.join(", "))
            )));
        }
        out.push(Line::raw(format!("        fix: {}", clean(&f.fix))));
    }
    out
}

impl Component for FindingsView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        super::draw_scrolled(
            app,
            frame,
            area,
            fit,
            Block::bordered().title(" Findings: worst first (berth check prints the same) "),
            lines(app),
            super::Overflow::Clip,
        );
    }
}
