//! Drawing: one component per file behind [`Component`]; every list view
//! is the one generic [`list::List`]. Everything here reads the [`App`] and
//! draws; nothing changes state. What fitted (page height, scroll limits,
//! list offsets) is returned as a [`Viewport`], which the caller hands to
//! the model as [`crate::model::Msg::Drawn`]. What the components share
//! (the trait, `clean`, tone styles, the scrolled block) is in
//! `component.rs`, not here, so no component imports this file, which
//! names them all. The top layer: nothing below imports it.

pub mod attestation;
pub mod command;
mod component;
pub mod details;
pub mod explain;
pub mod findings;
pub mod fleet_header;
pub mod help;
pub mod list;
pub mod matrix;
pub mod plan;
pub mod relations;
pub mod review;
pub mod rollout;
pub mod statusbar;

#[cfg(test)]
mod explain_tests;
#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod matrix_tests;
#[cfg(test)]
pub(crate) mod tests;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::model::{App, ListView, Screen, Viewport};

pub use component::{Component, clean, tone_style};
pub(crate) use component::{Overflow, draw_scrolled, draw_scrolled_unbordered};

/// Draws the whole app: view tabs, the current screen, the status bar, the
/// command/filter line, and the help on top when open. Returns what fitted,
/// starting from what the last frame measured.
pub fn draw(frame: &mut Frame, app: &App) -> Viewport {
    let mut fit = app.ui.viewport.clone();
    let [tabs, header, main, status, bottom] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(fleet_header::height(app)),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_tabs(app, frame, tabs);
    if app.fleet() {
        fleet_header::FleetHeader.draw(app, frame, header, &mut fit);
    }
    match app.screen() {
        Screen::List(v) => list::List(*v).draw(app, frame, main, &mut fit),
        Screen::Rollout(..) => rollout::RolloutView.draw(app, frame, main, &mut fit),
        Screen::Details(..) => details::DetailsView.draw(app, frame, main, &mut fit),
        Screen::Plan(_) => plan::PlanView.draw(app, frame, main, &mut fit),
        Screen::Matrix => matrix::MatrixView.draw(app, frame, main, &mut fit),
        Screen::Relations(..) => relations::RelationsView.draw(app, frame, main, &mut fit),
        Screen::Explain(..) => explain::ExplainView.draw(app, frame, main, &mut fit),
        Screen::Findings => findings::FindingsView.draw(app, frame, main, &mut fit),
        Screen::Attestation(..) => attestation::AttestationView.draw(app, frame, main, &mut fit),
    }
    statusbar::StatusBar.draw(app, frame, status, &mut fit);
    command::CommandLine.draw(app, frame, bottom, &mut fit);
    if app.ui.review.is_some() {
        review::ReviewView.draw(app, frame, main, &mut fit);
    }
    if app.ui.show_help {
        help::Help.draw(app, frame, main, &mut fit);
    }
    if app.ui.no_color {
        strip_colors(frame);
    }
    fit
}

/// `--no-color` / `NO_COLOR`: every cell back to the terminal's own
/// colours. Bold, underline and reverse stay, so the selection, the sorted
/// column and problems remain visible.
fn strip_colors(frame: &mut Frame) {
    for cell in frame.buffer_mut().content.iter_mut() {
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

fn draw_tabs(app: &App, frame: &mut Frame, area: Rect) {
    let current = app.current_list();
    let mut spans = vec![Span::styled(
        " berth ",
        Style::new().fg(Color::Black).bg(Color::Cyan),
    )];
    for (i, v) in ListView::TABS.iter().enumerate() {
        // Until the first list completes the count is unknown, not zero;
        // so it is while the view was never built (Handlers and Retained
        // are built only when shown: see `App::live_views`).
        let n = if app.counted(*v) {
            app.table(*v).total().to_string()
        } else {
            "…".to_string()
        };
        let label = format!(" {}:{} ({n}) ", i + 1, v.title());
        let style = if current == Some(*v) {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(label, style));
    }
    // A screen of one cluster says which, in a fleet.
    let at = match app.screen().cluster() {
        Some(c) if app.fleet() => format!("@{c} "),
        _ => String::new(),
    };
    let crumb = match app.screen() {
        Screen::Rollout(_, (ns, n)) => Some(format!(" › rollout {ns}/{n} {at}")),
        Screen::Details(_, k, (ns, n)) => {
            let name = if ns.is_empty() {
                n.clone()
            } else {
                format!("{ns}/{n}")
            };
            Some(format!(" › {} {name} {at}", k.label()))
        }
        Screen::List(ListView::Namespaces) => Some(" › namespaces: Enter switches ".into()),
        Screen::Plan(_) => Some(format!(" › plan of the pending grants file {at}")),
        Screen::Matrix => Some(" › handler matrix ".into()),
        Screen::Relations(_, a) => Some(format!(" › related: {} {at}", clean(&a.label()))),
        Screen::Explain(_, k, (ns, n)) => Some(format!(
            " › explain {} {}/{} {at}",
            k.label(),
            clean(ns),
            clean(n)
        )),
        Screen::Findings => Some(" › findings ".into()),
        Screen::Attestation(_, class, node) => Some(format!(
            " › canary {} on {} {at}",
            clean(class),
            clean(node)
        )),
        Screen::List(_) => None,
    };
    if let Some(crumb) = crumb {
        spans.push(Span::styled(
            crumb,
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ));
    }
    frame.render_widget(Line::from(spans), area);
}
