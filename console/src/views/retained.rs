//! Retained: workloads that still reference a class no current grant covers
//! for them (grant gone, or never granted), from the shared analysis.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::Component;
use super::table::draw_table;
use crate::model::rows::{RetainedRow, store_kind};
use crate::model::{App, Kind, ListView, RowRef, RowTone, TableData};

/// Column headers.
pub const HEADERS: [&str; 9] = [
    "KIND",
    "NAMESPACE",
    "NAME",
    "CLASS",
    "HANDLER",
    "REASON",
    "READY",
    "BERTH",
    "NOTE",
];

/// The table of the view.
pub fn table(rows: &[RetainedRow]) -> TableData {
    let mut t = TableData::new(HEADERS.to_vec());
    for r in rows {
        let tone = if r.reason.starts_with("grant gone") || r.handler == "(class missing)" {
            RowTone::Problem
        } else {
            RowTone::Warn
        };
        t.push(
            vec![
                r.kind.clone(),
                r.namespace.clone(),
                r.name.clone(),
                r.class.clone(),
                r.handler.clone(),
                r.reason.clone(),
                format!("{}/{}", r.ready, r.replicas),
                if r.managed_by_berth { "yes" } else { "no" }.to_string(),
                r.note.clone(),
            ],
            tone,
            RowRef::Workload(
                store_kind(&r.kind).unwrap_or(Kind::Pod),
                (r.namespace.clone(), r.name.clone()),
            ),
        );
    }
    t
}

/// The Retained view.
pub struct RetainedView;

impl Component for RetainedView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect) {
        draw_table(
            app,
            frame,
            area,
            "Retained",
            app.table(ListView::Retained),
            app.list(ListView::Retained),
        );
    }
}
