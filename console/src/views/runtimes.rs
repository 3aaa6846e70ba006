//! Runtimes: identity, profile, grant state, handler, ready/desired,
//! rollout phase, age. Blocked Runtimes are red.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::Component;
use super::table::draw_table;
use crate::model::rows::RuntimeRow;
use crate::model::{App, ListView, RowRef, RowTone, TableData};

/// Column headers.
pub const HEADERS: [&str; 10] = [
    "NAMESPACE",
    "NAME",
    "APPLICATION/SERVICE",
    "PROFILE",
    "GRANT",
    "HANDLER",
    "READY",
    "PHASE",
    "AGE",
    "MESSAGE",
];

/// The table of the view.
pub fn table(rows: &[RuntimeRow]) -> TableData {
    let mut t = TableData::new(HEADERS.to_vec());
    for r in rows {
        let tone = if r.blocked {
            RowTone::Problem
        } else if r.phase == "Progressing" || r.phase == "Failed" || r.ready < r.desired {
            RowTone::Warn
        } else {
            RowTone::Normal
        };
        t.push(
            vec![
                r.namespace.clone(),
                r.name.clone(),
                format!("{}/{}", r.application, r.service),
                r.profile.clone(),
                r.grant.clone(),
                r.handler.clone(),
                format!("{}/{}", r.ready, r.desired),
                r.phase.clone(),
                r.age.clone(),
                r.message.clone(),
            ],
            tone,
            RowRef::Runtime((r.namespace.clone(), r.name.clone())),
        );
    }
    t
}

/// The Runtimes view.
pub struct RuntimesView;

impl Component for RuntimesView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect) {
        draw_table(
            app,
            frame,
            area,
            "Runtimes",
            app.table(ListView::Runtimes),
            app.list(ListView::Runtimes),
        );
    }
}
