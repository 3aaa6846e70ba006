//! Test support shared by the integration test modules: `agent` runs the
//! real agent binary (`berth-agent run`), `webhook` runs `berth-agent
//! webhook` on its own.

pub mod agent;
pub mod webhook;
