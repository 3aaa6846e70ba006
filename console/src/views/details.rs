//! Details of any row: the object's YAML (managedFields and large
//! annotations already stripped at ingest; fetched whole for the kinds the
//! store keeps reduced), workloads using a class, and the object's events.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Block;

use super::Component;
use crate::model::{App, Kind, Screen, Viewport};
use crate::rows;
use crate::store::compact::compacted;

/// The details view.
pub struct DetailsView;

/// Every line of the details of the shown object.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let Screen::Details(cluster, kind, key) = app.screen() else {
        return Vec::new();
    };
    let Some(c) = app.cluster(cluster) else {
        return Vec::new();
    };
    let store = &c.data.store;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut out = Vec::new();
    let note = Style::new().fg(Color::Yellow);
    // Kinds the store keeps reduced are shown whole once fetched; until
    // then (or if the read fails) the reduced copy, said so.
    let fetched = match &app.ui.details {
        Some((dc, k, dk, r)) if dc == cluster && k == kind && dk == key => Some(r),
        _ => None,
    };
    let obj = match fetched {
        Some(Ok(Some(o))) => Some(o.clone()),
        Some(Ok(None)) => None,
        Some(Err(e)) => {
            out.push(Line::styled(
                format!("# cannot read the whole object: {}", super::clean(e)),
                note,
            ));
            store.get(*kind, key)
        }
        None => {
            if compacted(*kind) {
                out.push(Line::styled("# summary; reading the whole object…", note));
            }
            store.get(*kind, key)
        }
    };
    match obj {
        Some(obj) => {
            for l in obj.to_yaml().lines() {
                out.push(Line::raw(l.to_string()));
            }
        }
        None => out.push(Line::styled(
            format!("{} not found (deleted, or not loaded yet)", kind.label()),
            note,
        )),
    }
    if *kind == Kind::RuntimeClass
        && let Some(h) = c.rows.handlers.iter().find(|h| h.class == key.1)
    {
        out.push(Line::raw(""));
        out.push(Line::styled(
            format!("Workloads using {} ({})", h.class, h.verdict),
            bold,
        ));
        for w in &h.workloads {
            out.push(Line::raw(format!(
                "  {:<12} {}/{}  {}/{} {}{}",
                w.kind,
                w.namespace,
                w.name,
                w.ready,
                w.replicas,
                if w.managed_by_berth { "berth " } else { "" },
                w.note
            )));
        }
    }
    out.push(Line::raw(""));
    out.push(Line::styled("Events", bold));
    let events = rows::events_of(store, *kind, key, app.now);
    if events.is_empty() {
        out.push(Line::raw("  (none)"));
    }
    for e in events {
        out.push(Line::raw(format!(
            "  {:>4} {:<8} {:<20} {}",
            e.age, e.type_, e.reason, e.message
        )));
    }
    out
}

impl Component for DetailsView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect, fit: &mut Viewport) {
        let Screen::Details(_, kind, (ns, name)) = app.screen() else {
            return;
        };
        let title = if ns.is_empty() {
            format!(" {} {name} ", kind.label())
        } else {
            format!(" {} {ns}/{name} ", kind.label())
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
