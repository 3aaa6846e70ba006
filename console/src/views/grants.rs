//! Grants: every RuntimeGrant with its class/handler check, node coverage,
//! runtimes using it, retained workloads, file digest and load time, and
//! "restart required" when the agent's file changed on disk.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::Component;
use super::table::draw_table;
use crate::model::rows::GrantRow;
use crate::model::{App, ListView, RowRef, RowTone, TableData};

/// Column headers.
pub const HEADERS: [&str; 11] = [
    "NAME",
    "PROJECT/ENV",
    "APPLICATION/SERVICE",
    "CLASS",
    "HANDLER",
    "CHECK",
    "NODES",
    "RUNTIMES",
    "RETAINED",
    "FILE",
    "LOADED",
];

/// The table of the view.
pub fn table(rows: &[GrantRow]) -> TableData {
    let mut t = TableData::new(HEADERS.to_vec());
    for r in rows {
        let tone = if r.check != "ok" {
            RowTone::Problem
        } else if r.problem {
            RowTone::Warn
        } else {
            RowTone::Normal
        };
        let file = if r.restart_required {
            format!("{} restart required", r.digest)
        } else {
            r.digest.clone()
        };
        t.push(
            vec![
                r.name.clone(),
                format!("{}/{}", r.project, r.environment),
                format!("{}/{}", r.application, r.service),
                r.class.clone(),
                r.handler.clone(),
                r.check.clone(),
                r.nodes.clone(),
                r.runtimes.to_string(),
                r.retained.to_string(),
                file,
                r.loaded.clone(),
            ],
            tone,
            RowRef::Grant(r.name.clone()),
        );
    }
    t
}

/// The Grants view.
pub struct GrantsView;

impl Component for GrantsView {
    fn draw(&self, app: &App, frame: &mut Frame, area: Rect) {
        draw_table(
            app,
            frame,
            area,
            "Grants",
            app.table(ListView::Grants),
            app.list(ListView::Grants),
        );
    }
}
