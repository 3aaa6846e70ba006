//! The benchmark's world, one for every use: `berth-bench` creates its
//! classes, namespaces and Runtimes in a cluster and lets the agent and the
//! controllers make the rest; the console's benchmarks build the cluster
//! that results, without one ([`Size::runtime_values`] and the rest: every
//! object as the apiserver serves it once everything has converged).
//!
//! Scale S of issue 14 ([`Size::S`]): 2,000 Runtimes, each a Deployment of
//! 10 replicas (2,000 Deployments, 2,000 ReplicaSets, 20,000 Pods), 200
//! nodes, 20 RuntimeClasses, 64 Runtimes granted and the rest on the
//! default runtime.
//!
//! A crate of its own rather than a part of the shared test kit:
//! `berth-bench` needs it as a normal dependency, and in a workspace build
//! the features of every member's normal dependencies are unified, so a
//! `berth-shared` feature for it would compile test code into the shipped
//! binaries too.

mod converged;
#[cfg(test)]
mod layering_tests;

use serde_json::{Value, json};

use berth_shared::api::Runtime;
use berth_shared::decide::{Decision, Identity};

/// Identity labels of every namespace of the world.
pub const PROJECT: &str = "bench";
pub const ENVIRONMENT: &str = "production";
/// The application of every Runtime (each is its own service).
pub const APPLICATION: &str = "app";
/// Runtimes per namespace.
pub const PER_NAMESPACE: usize = 100;
/// The handler every class names (every node reports it).
pub const HANDLER: &str = "bounded-runc";
/// When every object of a built world was created.
pub const CREATED: &str = "2026-11-28T12:00:00Z";

/// The size of the world.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub runtimes: usize,
    pub replicas: usize,
    pub granted: usize,
    pub classes: usize,
    pub nodes: usize,
}

/// One Runtime of the world, as planned.
#[derive(Clone, Debug)]
pub struct Planned {
    /// Its place in creation order.
    pub index: usize,
    pub namespace: String,
    pub name: String,
    pub service: String,
    /// `(alias, class)` when granted.
    pub grant: Option<(String, String)>,
}

impl Size {
    /// Scale S of issue 14.
    pub const S: Size = Size {
        runtimes: 2_000,
        replicas: 10,
        granted: 64,
        classes: 20,
        nodes: 200,
    };

    /// Every Runtime of the world, in creation order.
    pub fn plan(&self) -> Vec<Planned> {
        (0..self.runtimes).map(|i| self.planned(i)).collect()
    }

    /// The `index`th Runtime of [`Size::plan`].
    pub fn planned(&self, index: usize) -> Planned {
        Planned {
            index,
            namespace: format!("bench-{}", index / PER_NAMESPACE),
            name: format!("rt-{index}"),
            service: format!("svc-{index}"),
            grant: (index < self.granted)
                .then(|| (format!("b{index}"), class_name(index % self.classes.max(1)))),
        }
    }

    /// The world's namespaces.
    pub fn namespaces(&self) -> Vec<String> {
        (0..self.runtimes.div_ceil(PER_NAMESPACE))
            .map(|k| format!("bench-{k}"))
            .collect()
    }
}

/// The name of the `c`th RuntimeClass.
pub fn class_name(c: usize) -> String {
    format!("bench-class-{c}")
}

impl Planned {
    /// The Runtime's spec as its team writes it; every other one asks for
    /// resources in non-canonical quantities, as teams write them.
    pub fn spec(&self, replicas: usize) -> Value {
        let mut spec = json!({
            "application": APPLICATION, "service": self.service,
            "image": {"repository": "registry.invalid/berth/app", "tag": "1"},
            "replicas": replicas,
        });
        if let Some((alias, _)) = &self.grant {
            spec["runtimeProfile"] = json!(alias);
        }
        if self.index.is_multiple_of(2) {
            spec["resources"] = json!({"requests": {"cpu": "0.5", "memory": "1024Mi"}});
        }
        spec
    }

    /// The Runtime object to create.
    pub fn runtime(&self, replicas: usize) -> Runtime {
        from(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": self.spec(replicas),
        }))
    }

    /// The identity the agent derives from the namespace labels.
    pub fn identity(&self) -> Identity {
        Identity {
            project: PROJECT.into(),
            environment: ENVIRONMENT.into(),
            application: APPLICATION.into(),
            service: self.service.clone(),
        }
    }

    /// The decision the agent reaches for it.
    pub fn decision(&self) -> Decision {
        match &self.grant {
            Some((alias, class)) => Decision::Granted {
                alias: alias.clone(),
                runtime_class: class.clone(),
                handler: HANDLER.into(),
            },
            None => Decision::NotRequested,
        }
    }
}

fn from<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("the world's object: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_spreads_grants_over_classes_and_namespaces() {
        let size = Size {
            runtimes: 250,
            replicas: 1,
            granted: 5,
            classes: 2,
            nodes: 1,
        };
        let plan = size.plan();
        assert_eq!(plan.len(), 250);
        assert_eq!(size.namespaces(), ["bench-0", "bench-1", "bench-2"]);
        assert_eq!(plan[249].namespace, "bench-2");
        let classes: Vec<_> = plan
            .iter()
            .filter_map(|p| p.grant.as_ref().map(|g| g.1.as_str()))
            .collect();
        assert_eq!(
            classes,
            [
                "bench-class-0",
                "bench-class-1",
                "bench-class-0",
                "bench-class-1",
                "bench-class-0"
            ]
        );
        assert!(matches!(plan[0].decision(), Decision::Granted { .. }));
        assert!(matches!(plan[5].decision(), Decision::NotRequested));
        assert!(plan[0].runtime(1).spec.resources.is_some());
        assert!(plan[1].runtime(1).spec.resources.is_none());
    }
}
