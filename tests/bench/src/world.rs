//! The benchmark's world (`berth_world`, the one the
//! console's benchmarks build without a cluster): its classes, labeled
//! namespaces and Runtimes (some granted, most on the default runtime) made
//! in the cluster, and the grants file that grants them. Shared by the
//! floor (which renders the same objects) and the agent run.

use std::path::{Path, PathBuf};

use berth_shared::api::Runtime;
use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};

pub use berth_world::{APPLICATION, ENVIRONMENT, HANDLER, PROJECT, Planned, Size, class_name};

use berth_test_support::grants_file::{self, TestBinding};
use berth_test_support::harness;

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
                    application: APPLICATION,
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
    futures::stream::iter(plan)
        .map(|p| {
            let api: Api<Runtime> = Api::namespaced(client.clone(), &p.namespace);
            let rt = p.runtime(size.replicas);
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
    fn grants_file_loads_with_the_agents_loader() {
        // Not under /tmp: the loader refuses a file below a world-writable
        // directory.
        let dir = berth_test_support::harness::profile_dir()
            .join(format!("berth-bench-grants-{}", std::process::id()));
        let size = Size {
            runtimes: 10,
            replicas: 1,
            granted: 3,
            classes: 2,
            nodes: 1,
        };
        let path = write_grants(&dir, &size.plan()).expect("write");
        let loaded = berth_shared::grants::load(&path);
        let _ = std::fs::remove_dir_all(&dir);
        let loaded = loaded.expect("the agent's loader accepts the file");
        assert_eq!(loaded.bindings.len(), 3);
    }
}
