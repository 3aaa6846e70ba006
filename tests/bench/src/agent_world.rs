//! Where the agent runs and on what: what the agent's run
//! (`agent_run`) and the canaries' cost (`canary_cost`) both measure on.

use std::path::Path;
use std::time::Instant;

use kube::Client;

use super::Options;
use super::world::{Planned, Size};

/// Where the agent runs and on what.
pub struct AgentWorld<'a> {
    pub started: Instant,
    pub opts: &'a Options,
    pub size: &'a Size,
    pub plan: &'a [Planned],
    pub client: &'a Client,
    pub cluster_dir: &'a Path,
    pub kubeconfig: &'a Path,
    pub agent_bin: &'a Path,
    pub work: &'a Path,
}
