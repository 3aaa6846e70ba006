//! What to build and how long to watch: `berth-bench`'s command line.

/// What to build and how long to watch.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Runtimes (100 per namespace).
    #[arg(long, default_value_t = 2000)]
    pub runtimes: usize,
    /// Replicas of each Runtime.
    #[arg(long, default_value_t = 10)]
    pub replicas: usize,
    /// Simulated nodes.
    #[arg(long, default_value_t = 200)]
    pub nodes: usize,
    /// Granted Runtimes (the first ones), spread over the classes.
    #[arg(long, default_value_t = 64)]
    pub granted: usize,
    /// RuntimeClasses.
    #[arg(long, default_value_t = 20)]
    pub classes: usize,
    /// The agent's `--concurrency`, and the floor's.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// The resync of the agent that converges the world (the agent's own
    /// default).
    #[arg(long, default_value_t = 300)]
    pub resync_seconds: u64,
    /// The resync of the agent restarted for the idle-writes window (forced
    /// short, so that the window sees every Runtime resynced).
    #[arg(long, default_value_t = 15)]
    pub idle_resync_seconds: u64,
    /// How long the world may take to have every Runtime Ready (its pods
    /// running) before the run goes on without; the floor waits as long
    /// for its pods.
    #[arg(long, default_value_t = 3600)]
    pub ready_timeout_seconds: u64,
    /// Length of the idle-writes window.
    #[arg(long, default_value_t = 45)]
    pub idle_seconds: u64,
    /// Length of the console's idle-CPU window.
    #[arg(long, default_value_t = 20)]
    pub console_idle_seconds: u64,
    /// Pods created by another Deployment while the console's CPU is
    /// measured.
    #[arg(long, default_value_t = 2000)]
    pub churn_pods: usize,
    /// Samples of each `berth get` and each first frame, every one right
    /// after a floor of its own; the table gives the median of each.
    #[arg(long, default_value_t = 3)]
    pub samples: usize,
    /// Key presses (and watch events) timed on the model.
    #[arg(long, default_value_t = 30)]
    pub presses: usize,
    /// Skip the console figures.
    #[arg(long)]
    pub no_console: bool,
    /// Pause the floor's Deployments: no pods are made, so the floor only
    /// applies (cheaper, but unlike the agent's work) and there is no
    /// floor for "every Runtime Ready". By default the control plane makes
    /// the floor's pods as it does the agent's, the floor waits until they
    /// are Ready, then until they are gone before the agent starts.
    #[arg(long)]
    pub floor_paused: bool,
    /// Profile the agent while it converges: needs an agent built with
    /// `--features profile` (BERTH_AGENT_BIN); writes `agent.folded` and
    /// `agent.top.txt` into the run's directory and prints the top.
    #[arg(long)]
    pub profile: bool,
    /// After the figures, print the table and keep the control plane and
    /// the (restarted) agent up for this long, for profiling the agent and
    /// the console at this size by hand (docs/bench-runs.md, "How the memory grows").
    #[arg(long, default_value_t = 0)]
    pub hold_seconds: u64,
    /// Also measure the peer consoles (k9s) on the same cluster, after
    /// berth's console: built by `tests/k8s/build.sh --peers` (docs/benchmark.md,
    /// "The peers").
    #[arg(long)]
    pub peers: bool,
    /// Record the apiserver's CPU profile over each half's Ready phase and
    /// print where it went (`bench/apiserver_profile.rs`); the cluster is
    /// started with `--profiling`. Needs `go` on the PATH to print.
    #[arg(long)]
    pub profile_apiserver: bool,
    /// Instead of the agent and one console: N clusters of this size each,
    /// and the console on one of them against the console on all N
    /// (`bench/fleet.rs`; issue 56). 0: the usual run.
    #[arg(long, default_value_t = 0)]
    pub fleet: usize,
    /// Run the agent's canary scheduler (issue 53): the agent starts with
    /// `--canary-image` and `--canary-period-seconds`, and the table gives
    /// the canary Jobs it created and the (class, node) pairs by verdict.
    /// Without it the agent has no canary image: canaries off. kwok's
    /// nodes are simulated, so no canary runs on them: what a run with
    /// them shows is the scheduler's own cost (docs/benchmark.md).
    #[arg(long)]
    pub canaries: bool,
    /// The agent's `--canary-period-seconds` with `--canaries`.
    #[arg(long, default_value_t = 600)]
    pub canary_period_seconds: u64,
    /// With `--canaries`: the budget the canary-cost phase runs under
    /// (`--canary-budget-per-hour`; a number, or `unlimited`). The phase
    /// then also runs without a budget, to show what it saves.
    #[arg(long, default_value = "360")]
    pub canary_budget_per_hour: String,
    /// With `--canaries`: the length of each measured window of the
    /// canary-cost phase (canaries off, on with the budget, on without),
    /// after a warm-up of its own.
    #[arg(long, default_value_t = 300)]
    pub canary_window_seconds: u64,
}
