//! The benchmark's world: RuntimeClasses, labeled namespaces and Runtimes
//! (some granted, most on the default runtime), and the grants file that
//! grants them. Shared by the floor (which renders the same objects) and
//! the agent run.

use std::path::{Path, PathBuf};

use berth_shared::api::Runtime;
use berth_shared::decide::{Decision, Identity};
use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use crate::grants_file::{self, TestBinding};
use crate::harness;

/// Identity labels of every benchmark namespace.
pub const PROJECT: &str = "bench";
pub const ENVIRONMENT: &str = "production";
/// Runtimes per namespace.
pub const PER_NAMESPACE: usize = 100;
/// The handler every class names (every kwok node reports it).
pub const HANDLER: &str = "bounded-runc";

/// The size of the world.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub runtimes: usize,
    pub replicas: usize,
    pub granted: usize,
    pub classes: usize,
}

/// One Runtime of the world, as planned.
#[derive(Clone, Debug)]
pub struct Planned {
    pub namespace: String,
    pub name: String,
    pub service: String,
    /// `(alias, class)` when granted.
    pub grant: Option<(String, String)>,
}

impl Size {
    /// Every Runtime of the world, in creation order.
    pub fn plan(&self) -> Vec<Planned> {
        (0..self.runtimes)
            .map(|i| Planned {
                namespace: namespace_of(i),
                name: format!("rt-{i}"),
                service: format!("svc-{i}"),
                grant: (i < self.granted)
                    .then(|| (format!("b{i}"), class_name(i % self.classes.max(1)))),
            })
            .collect()
    }

    /// The benchmark's namespaces.
    pub fn namespaces(&self) -> Vec<String> {
        (0..self.runtimes.div_ceil(PER_NAMESPACE))
            .map(|k| format!("bench-{k}"))
            .collect()
    }
}

pub fn class_name(c: usize) -> String {
    format!("bench-class-{c}")
}

fn namespace_of(i: usize) -> String {
    format!("bench-{}", i / PER_NAMESPACE)
}

impl Planned {
    /// The Runtime object to create.
    pub fn runtime(&self, replicas: usize, index: usize) -> Runtime {
        let mut spec = json!({
            "application": "app", "service": self.service,
            "image": {"repository": "registry.invalid/berth/app", "tag": "1"},
            "replicas": replicas,
        });
        if let Some((alias, _)) = &self.grant {
            spec["runtimeProfile"] = json!(alias);
        }
        if index.is_multiple_of(2) {
            // Non-canonical quantities, as teams write them.
            spec["resources"] = json!({"requests": {"cpu": "0.5", "memory": "1024Mi"}});
        }
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }))
        .expect("a valid Runtime literal")
    }

    /// The identity the agent derives from the namespace labels.
    pub fn identity(&self) -> Identity {
        Identity {
            project: PROJECT.into(),
            environment: ENVIRONMENT.into(),
            application: "app".into(),
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

/// Writes the grants file (0600 in a 0700 directory, as the agent's
/// file-safety rules require).
pub fn write_grants(dir: &Path, plan: &[Planned]) -> std::io::Result<PathBuf> {
    let bindings: Vec<String> = plan
        .iter()
        .filter_map(|p| {
            let (alias, class) = p.grant.as_ref()?;
            Some(
                TestBinding {
                    name: alias,
                    project: PROJECT,
                    environment: ENVIRONMENT,
                    application: "app",
                    service: &p.service,
                    runtime_class: class,
                    handler: HANDLER,
                }
                .toml(),
            )
        })
        .collect();
    grants_file::write_private(dir, "grants.toml", &grants_file::text(&bindings))
}

/// Creates the classes, the namespaces and every Runtime (16 at a time).
pub async fn create(client: &Client, size: &Size, plan: &[Planned]) {
    harness::install_crds(client).await;
    for c in 0..size.classes {
        harness::create_runtime_class(client, &class_name(c), HANDLER).await;
    }
    let labels = [
        ("berth.dev/project", PROJECT),
        ("berth.dev/environment", ENVIRONMENT),
    ];
    for ns in size.namespaces() {
        harness::TestNamespace::create(client.clone(), ns, &labels).await;
    }
    futures::stream::iter(plan.iter().enumerate())
        .map(|(i, p)| {
            let api: Api<Runtime> = Api::namespaced(client.clone(), &p.namespace);
            let rt = p.runtime(size.replicas, i);
            async move { api.create(&PostParams::default(), &rt).await.map(|_| ()) }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .expect("create the benchmark's Runtimes");
}

/// Every Runtime of the world as stored (with uids), in plan order.
pub async fn stored(client: &Client, plan: &[Planned]) -> Vec<Runtime> {
    let all: Vec<Runtime> = Api::<Runtime>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list Runtimes")
        .items;
    plan.iter()
        .map(|p| {
            all.iter()
                .find(|r| r.name_any() == p.name && r.namespace().as_deref() == Some(&p.namespace))
                .cloned()
                .expect("every planned Runtime exists")
        })
        .collect()
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
    }

    #[test]
    fn grants_file_loads_with_the_agents_loader() {
        // Not under /tmp: the loader refuses a file below a world-writable
        // directory.
        let dir = crate::harness::profile_dir()
            .join(format!("berth-bench-grants-{}", std::process::id()));
        let size = Size {
            runtimes: 10,
            replicas: 1,
            granted: 3,
            classes: 2,
        };
        let path = write_grants(&dir, &size.plan()).expect("write");
        let loaded = berth_shared::grants::load(&path);
        let _ = std::fs::remove_dir_all(&dir);
        let loaded = loaded.expect("the agent's loader accepts the file");
        assert_eq!(loaded.bindings.len(), 3);
    }
}
