//! Handlers: every RuntimeClass, granted or not (and referenced classes that
//! no longer exist), its handler, flags, node coverage, the workloads that
//! reference it and the shared analysis's "safe to remove" verdict.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::Component;
use super::table::draw_table;
use crate::model::rows::HandlerRow;
use crate::model::{App, ListView, RowRef, RowTone, TableData};

/// Column headers.
pub const HEADERS: [&str; 8] = [
    "CLASS",
    "HANDLER",
    "GRANTED BY",
    "FLAGS",
    "NODES",
    "WORKLOADS",
    "REMOVE",
    "VERDICT",
];

/// The table of the view.
pub fn table(rows: &[HandlerRow]) -> TableData {
    let mut t = TableData::new(HEADERS.to_vec());
    for r in rows {
        let tone = if !r.present {
            RowTone::Problem
        } else if r.safe_to_remove {
            RowTone::Good
        } else if !r.flags.is_empty() {
            RowTone::Warn
        } else {
            RowTone::Normal
        };
        let granted = if r.granted_by.is_empty() {
            "-".to_string()
        } else {
            r.granted_by.join(",")
        };
        t.push(
            vec![
                r.class.clone(),
                r.handler.clone(),
                granted,
                r.flags.clone(),
                r.nodes.clone(),
                r.workloads.len().to_string(),
                if r.safe_to_remove { "safe" } else { "unsafe" }.to_string(),
                r.verdict.clone(),
            ],
            tone,
            RowRef::Class(r.class.clone()),
        );
    }
    t
}

/// The Handlers view.
pub struct HandlersView;

impl Component for HandlersView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect) {
        draw_table(
            app,
            frame,
            area,
            "Handlers",
            app.table(ListView::Handlers),
            app.list(ListView::Handlers),
        );
    }
}
