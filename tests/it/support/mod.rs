//! Test support shared by the integration test modules: `agent` runs the
//! real agent binary (`berth-agent run`), `webhook` runs `berth-agent
//! webhook` on its own, `berth` runs the console's CLI, `unmanaged`
//! creates workloads berth does not manage, `at_rest` checks that the
//! agent writes nothing at rest, `class_hold` keeps a RuntimeClass in
//! deletion.

pub mod agent;
pub mod at_rest;
pub mod berth;
pub mod class_hold;
pub mod own_node;
pub mod series_world;
pub mod unmanaged;
pub mod webhook;
