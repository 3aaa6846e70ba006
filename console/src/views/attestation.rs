//! A matrix cell opened (Enter): what the class's canary saw on the node
//! — the verdict, its reason, the age of the evidence, what was checked —
//! and the node's failing sandboxes of the class with their Warning
//! events (the kubelet's `FailedCreatePodSandBox` says why a sandbox was
//! not created). Recomputed from the store on every draw.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Block;

use berth_shared::api::AttestationState;
use berth_shared::sanitize;

use super::Component;
use crate::model::{App, Screen, Viewport};
use crate::rows::attestation::{AttestationDetail, attestation_detail};
use crate::rows::human_duration;

/// The screen.
pub struct AttestationView;

fn state_style(s: AttestationState) -> Style {
    match s {
        AttestationState::Verified => Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
        AttestationState::Failing => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        AttestationState::Unverified => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
    }
}

/// Every line of the screen at `now` (seconds since the epoch).
pub fn lines(d: &AttestationDetail, now: i64) -> Vec<Line<'static>> {
    let clean = |s: &str| sanitize::line(s, sanitize::MAX_VALUE_CHARS);
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut out = Vec::new();
    match (&d.attestation, &d.verdict) {
        (None, _) => out.push(Line::raw(format!(
            "No grant names RuntimeClass {}: canaries attest granted classes only.",
            clean(&d.class)
        ))),
        (Some(a), _) if !a.canaries => out.push(Line::styled(
            format!(
                "Canaries are off: {}",
                clean(a.off_reason.as_deref().unwrap_or("no reason given"))
            ),
            state_style(AttestationState::Unverified),
        )),
        (Some(_), None) => out.push(Line::raw(format!(
            "Node {} is not listed in the grant's attestation (it does not report handler {}, or the list is cut).",
            clean(&d.node),
            clean(&d.handler)
        ))),
        (Some(a), Some(v)) => {
            let age = v
                .at
                .as_ref()
                .map(|t| format!(", {} ago", human_duration(now - t.0.as_second())))
                .unwrap_or_default();
            out.push(Line::styled(
                format!("Verdict: {} ({}{age})", v.state.word(), clean(&v.reason)),
                state_style(v.state),
            ));
            out.push(Line::raw(format!("  {}", clean(&v.message))));
            if let Some(job) = &v.job {
                out.push(Line::raw(format!("  canary Job: {}", clean(job))));
            }
            if !a.checks.is_empty() {
                out.push(Line::raw(format!("  checks: {}", clean(&a.checks.join(", ")))));
            }
            out.push(Line::raw(format!(
                "  class {}: {} ({})",
                clean(&d.class),
                clean(&a.summary),
                cadence(a)
            )));
        }
    }
    out.push(Line::raw(""));
    out.push(Line::styled(
        format!(
            "Failing sandboxes of {} on {} (its pods that are not running):",
            clean(&d.class),
            clean(&d.node)
        ),
        bold,
    ));
    if d.sandboxes.is_empty() {
        out.push(Line::raw("  none"));
    }
    for s in &d.sandboxes {
        out.push(Line::raw(format!(
            "  {}/{}  {}",
            clean(&s.namespace),
            clean(&s.pod),
            clean(&s.phase)
        )));
        if s.events.is_empty() {
            out.push(Line::raw("    (no Warning event)"));
        }
        for e in &s.events {
            out.push(Line::raw(format!(
                "    {} ago  {}  {}",
                clean(&e.age),
                clean(&e.reason),
                clean(&e.message)
            )));
        }
    }
    out
}

impl Component for AttestationView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        let Screen::Attestation(cluster, class, node) = app.screen() else {
            return;
        };
        let Some(c) = app.cluster(cluster) else {
            return;
        };
        let d = attestation_detail(&c.data.store, class, node, app.now);
        super::draw_scrolled(
            app,
            frame,
            area,
            fit,
            Block::bordered().title(format!(
                " {} on {}: the canary's verdict and failing sandboxes ",
                super::clean(class),
                super::clean(node)
            )),
            lines(&d, app.now.as_second()),
            super::Overflow::Clip,
        );
    }
}

/// How often a node's canary runs: the period, or the budget's stretch of
/// it (a verdict older than that is overdue, not fresh).
fn cadence(a: &berth_shared::api::HandlerAttestation) -> String {
    match (a.effective_period_seconds, a.budget_per_hour) {
        (Some(e), Some(b)) if e > a.period_seconds => format!(
            "a canary every {e}s: the period of {}s stretched to fit the budget of {b} canaries an hour",
            a.period_seconds
        ),
        _ => format!("a canary every {}s", a.period_seconds),
    }
}
