//! Builders for tests, in one place for every crate: the bindings,
//! classes, nodes and Runtimes the unit tests of `shared`, the agent and the
//! console are made of, the status tables' fixtures ([`status`]) and the
//! import-circle scan of every crate's layering test ([`layering`]).
//!
//! Compiled only for tests and for crates that ask for the `testkit`
//! feature as a dev-dependency, never into a shipped binary: no crate of
//! the workspace turns it on for its normal build (a workspace build
//! unifies those features into the agent's). The benchmark's world, which
//! `berth-bench` needs in its normal build, is its own crate, `berth-world`.
//!
//! Each builder takes what tests vary and fixes the rest to something
//! plain; a test that needs more sets fields on what it gets back
//! (`NodeInfo { labels, ..node("n1", &["runsc"]) }`).

pub mod layering;
pub mod shop;
pub mod status;
pub mod worker;

use std::collections::BTreeSet;

use crate::analysis::NodeInfo;
use crate::api::{ImageSpec, ProfileState, ProfileStatus, Runtime, RuntimeSpec, RuntimeStatus};
use crate::binding::Identity;
use crate::decide::{GrantBinding, ObservedClass};

/// The identity a binding grants and a Runtime derives.
pub fn identity(project: &str, environment: &str, application: &str, service: &str) -> Identity {
    Identity {
        project: project.into(),
        environment: environment.into(),
        application: application.into(),
        service: service.into(),
    }
}

/// A binding granting `identity` the class `runtime_class` on `handler`.
pub fn binding(name: &str, identity: Identity, runtime_class: &str, handler: &str) -> GrantBinding {
    GrantBinding {
        name: name.into(),
        identity,
        runtime_class: runtime_class.into(),
        handler: handler.into(),
    }
}

/// A RuntimeClass as the decision sees it: no overhead, no scheduling, not
/// being deleted.
pub fn class(name: &str, handler: &str) -> ObservedClass {
    ObservedClass {
        name: name.into(),
        handler: handler.into(),
        ..ObservedClass::default()
    }
}

/// A Ready, schedulable node reporting exactly `handlers`; no labels, no
/// taints.
pub fn node(name: &str, handlers: &[&str]) -> NodeInfo {
    NodeInfo {
        name: name.into(),
        ready: true,
        handlers: handlers
            .iter()
            .map(|h| (*h).to_string())
            .collect::<BTreeSet<_>>(),
        reports_handlers: true,
        ..NodeInfo::default()
    }
}

/// A node whose kubelet reports no handler list at all (unknown, not
/// absent).
pub fn silent_node(name: &str) -> NodeInfo {
    NodeInfo {
        reports_handlers: false,
        ..node(name, &[])
    }
}

/// A Runtime `namespace/name` for `application`/`service`, asking for
/// `profile`, on image `img:1`; no status.
pub fn runtime(
    namespace: &str,
    name: &str,
    application: &str,
    service: &str,
    profile: Option<&str>,
) -> Runtime {
    let mut rt = Runtime::new(
        name,
        RuntimeSpec {
            application: application.into(),
            service: service.into(),
            runtime_profile: profile.map(str::to_string),
            image: ImageSpec {
                repository: "img".into(),
                tag: Some("1".into()),
                digest: None,
            },
            ..Default::default()
        },
    );
    rt.metadata.namespace = Some(namespace.into());
    rt
}

/// `rt` with its last decision recorded in its status: `state` for the
/// profile it asks for, on `class` with `handler`.
pub fn decided(mut rt: Runtime, state: ProfileState, class: &str, handler: &str) -> Runtime {
    rt.status = Some(RuntimeStatus {
        profile: Some(ProfileStatus {
            alias: rt.spec.runtime_profile.clone(),
            class: Some(class.into()),
            handler: Some(handler.into()),
            state,
        }),
        ..Default::default()
    });
    rt
}
