//! The label sets of the agent's metric families. Each field is one label;
//! its name is the label name (documented in `docs/metrics.md`, whose
//! label column is checked against a live scrape).

use prometheus_client::encoding::EncodeLabelSet;

/// `result` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `ok`, `blocked` or `error`.
    pub result: String,
}

/// `error` label of failed reconciles.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The failed stage: `apply` or `status`.
    pub error: String,
}

/// `kind` + `verb` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// Object kind.
    pub kind: String,
    /// `apply`, `delete`, `status`, `event`.
    pub verb: String,
}

/// `kind` + `reason` labels of apply failures.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApplyErrorLabels {
    /// Object kind.
    pub kind: String,
    /// The failed step's reason (`ApplyFailed`, `CorrectionFailed`, …), the
    /// same word as the `Degraded` reason and the Warning Event's.
    pub reason: String,
}

/// `method` + `resource` labels of raw API requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// HTTP method.
    pub method: String,
    /// Resource plural from the path (`leases`, `deployments`, …).
    pub resource: String,
}

/// `state` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// Profile (grant decision) state, or a RuntimeGrant's state.
    pub state: String,
}

/// `phase` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    /// The Runtime's `status.rollout.phase`.
    pub phase: String,
}

/// One Runtime's condition in its problem status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProblemLabels {
    /// The Runtime's namespace (not `namespace`: Prometheus Operator sets
    /// that target label to the agent's own namespace and would rename
    /// this one to `exported_namespace`).
    pub runtime_namespace: String,
    /// The Runtime's name.
    pub runtime: String,
    /// `Blocked`, `Degraded` or `HandlerReady`.
    pub condition: String,
    /// The condition's reason.
    pub reason: String,
}

/// `runtime_class` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabels {
    /// RuntimeClass name.
    pub runtime_class: String,
}

/// One RuntimeGrant.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GrantLabels {
    /// The RuntimeGrant's (binding's) name.
    pub grant: String,
    /// Its RuntimeClass.
    pub runtime_class: String,
}

/// One RuntimeGrant's node coverage.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CoverageLabels {
    /// The RuntimeGrant's name.
    pub grant: String,
    /// Its handler.
    pub handler: String,
    /// `with_handler`, `without_handler` or `unknown`.
    pub coverage: String,
}

/// `sha256` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DigestLabels {
    /// sha256 of the grants file.
    pub sha256: String,
}

/// `verdict` label of the pending grants file.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabels {
    /// `Valid`, `Invalid` or `Unreadable`.
    pub verdict: String,
}

/// Build information.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    /// The crate version.
    pub version: String,
    /// The git commit the binary was built from.
    pub commit: String,
}

/// `state` label of the allocator's figures.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AllocatorLabels {
    /// `allocated`, `active`, `resident`, `metadata`, `mapped` or
    /// `retained` (jemalloc's `stats.*`).
    pub state: String,
}

/// A granted class's handler and one attestation state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandlerNodeLabels {
    /// The RuntimeClass.
    pub runtime_class: String,
    /// Its handler.
    pub handler: String,
    /// `verified`, `failing` or `unverified`.
    pub state: String,
}
