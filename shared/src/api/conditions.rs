//! Condition types and reasons with stable strings: the console, alerts and
//! tests match on these, so they never change once released.

/// Condition types on a Runtime (docs/architecture.md §6).
pub mod condition_types {
    /// The requested profile is granted (or none is requested).
    pub const PROFILE_GRANTED: &str = "ProfileGranted";
    /// The handler is present on every node the pods may land on.
    pub const HANDLER_READY: &str = "HandlerReady";
    /// A rollout is under way.
    pub const PROGRESSING: &str = "Progressing";
    /// Enough replicas are available.
    pub const AVAILABLE: &str = "Available";
    /// The Runtime is fully rolled out and available.
    pub const READY: &str = "Ready";
    /// Something needs attention but the service still runs.
    pub const DEGRADED: &str = "Degraded";
    /// The agent does not carry out this Runtime's spec changes (only the
    /// protection runs).
    pub const BLOCKED: &str = "Blocked";
    /// The image is changing.
    pub const UPGRADING: &str = "Upgrading";
    /// Something that is not the Runtime's own reaches or runs as its pods
    /// (a foreign NetworkPolicy admitting more, a foreign Service or
    /// EndpointSlice, an orphan on a granted class).
    pub const EXPOSED: &str = "Exposed";

    /// Every Runtime condition type, in display order.
    pub const ALL: [&str; 9] = [
        PROFILE_GRANTED,
        HANDLER_READY,
        PROGRESSING,
        AVAILABLE,
        READY,
        DEGRADED,
        BLOCKED,
        UPGRADING,
        EXPOSED,
    ];
}

/// Condition types on a RuntimeGrant (docs/architecture.md §6).
pub mod grant_condition_types {
    /// The granted class exists, names the handler and is supported.
    pub const CLASS_READY: &str = "ClassReady";
    /// The grants file on disk changed since it was loaded.
    pub const RESTART_REQUIRED: &str = "RestartRequired";
    /// The binding left the grants file but workloads still need the
    /// class's handler.
    pub const RETIRED: &str = "Retired";
    /// Whether bare pods (pods without a controller) were looked at for
    /// `retained`: only an agent started with `--watch-bare-pods` reads Pods.
    pub const BARE_PODS_CHECKED: &str = "BarePodsChecked";
}

/// Condition reasons. Grant decisions use the reasons of
/// [`crate::decide::Decision::reason`], listed here too.
pub mod reasons {
    /// No `runtimeProfile` requested.
    pub const NOT_REQUESTED: &str = "NotRequested";
    /// A binding for the identity exists and the class matches it.
    pub const GRANTED: &str = "Granted";
    /// No binding with that alias exists for the identity.
    pub const NOT_GRANTED: &str = "NotGranted";
    /// The Runtime ran with the profile before and the binding is gone.
    pub const REVOKED: &str = "Revoked";
    /// The Namespace lacks `berth.dev/project` or `berth.dev/environment`.
    pub const IDENTITY_INCOMPLETE: &str = "IdentityIncomplete";
    /// An older Runtime holds the same (project, environment, application,
    /// service): one Runtime per identity.
    pub const IDENTITY_TAKEN: &str = "IdentityTaken";
    /// The Runtime is being deleted: nothing of its spec is carried out any
    /// more, and its objects keep their protection until it is gone.
    pub const DELETING: &str = "Deleting";
    /// The granted RuntimeClass does not exist.
    pub const CLASS_MISSING: &str = "ClassMissing";
    /// The RuntimeClass names another handler than the binding.
    pub const HANDLER_MISMATCH: &str = "HandlerMismatch";
    /// The RuntimeClass sets overhead or scheduling.
    pub const CLASS_UNSUPPORTED: &str = "ClassUnsupported";
    /// The RuntimeClass is being deleted.
    pub const CLASS_DELETING: &str = "ClassDeleting";

    /// Every node the pods may land on reports the handler.
    pub const HANDLER_PRESENT: &str = "HandlerPresent";
    /// Some allowed Ready nodes do not report the handler.
    pub const PLACEMENT_INCOMPLETE: &str = "PlacementIncomplete";
    /// No node in the placement reports a handler list: presence unknown.
    pub const HANDLER_UNKNOWN: &str = "HandlerUnknown";
    /// No node reports the handler.
    pub const HANDLER_ABSENT: &str = "HandlerAbsent";
    /// Nodes the pods may land on report the handler, and its canary
    /// fails there: pods landing there would not start, or not in the
    /// sandbox the class claims (`berth_shared::attest`).
    pub const HANDLER_FAILING: &str = "HandlerFailing";
    /// No profile, so no handler is needed.
    pub const NO_HANDLER_NEEDED: &str = "NoHandlerNeeded";

    /// The Deployment is rolling out a new template.
    pub const ROLLING_OUT: &str = "RollingOut";
    /// The rollout finished.
    pub const ROLLOUT_COMPLETE: &str = "RolloutComplete";
    /// The Deployment exceeded its progress deadline.
    pub const PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
    /// Enough replicas are available.
    pub const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
    /// Too few replicas are available.
    pub const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";
    /// `spec.suspend` is true.
    pub const SUSPENDED: &str = "Suspended";
    /// Everything is as desired.
    pub const AS_EXPECTED: &str = "AsExpected";
    /// An object with a managed name exists and is not owned by the Runtime.
    pub const CONFLICT: &str = "Conflict";
    /// An object the pods reference (the ConfigMap, the ServiceAccount)
    /// exists and is not owned by the Runtime: the Deployment, Jobs and
    /// CronJobs are not created or changed while it is in the way.
    pub const DEPENDENCY_NOT_OWNED: &str = "DependencyNotOwned";
    /// Applying a managed object failed (the server-side apply itself).
    pub const APPLY_FAILED: &str = "ApplyFailed";
    /// Reading a managed object before writing it failed.
    pub const READ_FAILED: &str = "ReadFailed";
    /// Removing what the production contract forbids from a managed object
    /// failed.
    pub const CORRECTION_FAILED: &str = "CorrectionFailed";
    /// Replacing the desired fields after an apply that left drift failed.
    pub const REPLACE_FAILED: &str = "ReplaceFailed";
    /// Handing the replica count over to the HorizontalPodAutoscaler failed.
    pub const HANDOVER_FAILED: &str = "HandoverFailed";
    /// Deleting an owned object no longer desired failed.
    pub const DELETE_FAILED: &str = "DeleteFailed";
    /// An object could not be encoded or decoded.
    pub const ENCODE_FAILED: &str = "EncodeFailed";
    /// An object stopped being the Runtime's between read and write.
    pub const OWNERSHIP_LOST: &str = "OwnershipLost";
    /// Every reason an apply failure can give `Degraded` (and its Event),
    /// one per step of the apply.
    pub const APPLY_FAILURES: [&str; 8] = [
        APPLY_FAILED,
        READ_FAILED,
        CORRECTION_FAILED,
        REPLACE_FAILED,
        HANDOVER_FAILED,
        DELETE_FAILED,
        ENCODE_FAILED,
        OWNERSHIP_LOST,
    ];
    /// Rendering the desired objects failed.
    pub const RENDER_FAILED: &str = "RenderFailed";
    /// `podMetadata.annotations` holds keys the allowlist refuses (a
    /// Runtime stored before the rule): rendered without them.
    pub const POD_ANNOTATION_REFUSED: &str = "PodAnnotationRefused";
    /// The image is changing.
    pub const IMAGE_CHANGING: &str = "ImageChanging";
    /// The image is the one last rolled out.
    pub const IMAGE_CURRENT: &str = "ImageCurrent";

    /// A workload with the Runtime's labels and no controller runs on a
    /// granted class (`Exposed`).
    pub const ORPHANED: &str = "Orphaned";
    /// A NetworkPolicy that is not the Runtime's admits more to its pods
    /// than the Runtime's own (`Exposed`).
    pub const FOREIGN_NETWORK_POLICY: &str = "ForeignNetworkPolicy";
    /// A Service that is not the Runtime's selects its pods (`Exposed`).
    pub const FOREIGN_SERVICE: &str = "ForeignService";
    /// An EndpointSlice the EndpointSlice controller does not manage lists
    /// the Runtime's pods (`Exposed`).
    pub const FOREIGN_ENDPOINT_SLICE: &str = "ForeignEndpointSlice";
    /// Every reason `Exposed=True` can give, most urgent first.
    pub const EXPOSURES: [&str; 4] = [
        ORPHANED,
        FOREIGN_NETWORK_POLICY,
        FOREIGN_SERVICE,
        FOREIGN_ENDPOINT_SLICE,
    ];

    /// The grant's RuntimeClass is usable (reason of `ClassReady`).
    pub const CLASS_READY: &str = "ClassReady";
    /// The grants file on disk differs from the one loaded.
    pub const FILE_CHANGED: &str = "FileChanged";
    /// The grants file on disk is the one loaded.
    pub const FILE_CURRENT: &str = "FileCurrent";
    /// The grant's binding left the grants file.
    pub const BINDING_REMOVED: &str = "BindingRemoved";
    /// The agent watches Pods: bare pods are counted (`BarePodsChecked`).
    pub const PODS_WATCHED: &str = "PodsWatched";
    /// The agent has no Pod access: bare pods were not checked.
    pub const NO_POD_ACCESS: &str = "NoPodAccess";
}
