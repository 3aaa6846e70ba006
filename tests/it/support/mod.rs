//! Test support shared by the integration test modules: `agent` runs the
//! real agent binary (`berth-agent run`), `webhook` runs `berth-agent
//! webhook` on its own, `berth` runs the console's CLI, `unmanaged`
//! creates workloads berth does not manage.

pub mod agent;
pub mod berth;
pub mod series_world;
pub mod unmanaged;
pub mod webhook;
