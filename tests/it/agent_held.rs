//! Issue 27, point 4 on the real control plane: Blocked stops the
//! tenant's changes, not the protection. For every Blocked reason an
//! integration test can bring about on a running Runtime (Revoked,
//! NotGranted, ClassMissing, HandlerMismatch, ClassUnsupported,
//! ClassDeleting, IdentityIncomplete), the tenant changes the image (not
//! rolled out: the Deployment is not even written), then an adversary
//! (another field manager) deletes the PodDisruptionBudget and sets
//! `hostNetwork: true` on the Deployment: both are repaired, the pods keep
//! their class, image and template, and the agent is silent at rest.
//! (IdentityTaken cannot happen to a running Runtime under a
//! namespace-scoped agent — an older holder always blocked the copy from
//! its creation; the apply step's protect mode does not depend on the
//! reason, and `status::hold`'s table covers the reason.)

use std::time::Duration;

use berth_shared::api::Runtime;
use berth_tests::harness::{TestNamespace, wait_for_value};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::agent_support::{
    Agent, AgentOpts, binding, binding_for_service, condition, create_class, create_runtime, setup,
    wait_condition, wait_reconciles, write_grants,
};
use crate::support::at_rest::silent_at_rest;
use crate::support::class_hold;

const WAIT: Duration = Duration::from_secs(120);
const INTRUDER: &str = "intruder";
const HANDLER: &str = "bounded-runc";

/// A Blocked reason and the Runtime that will be held for it.
struct Case {
    reason: &'static str,
    runtime: &'static str,
}

const CASES: [Case; 6] = [
    Case {
        reason: "Revoked",
        runtime: "revoked",
    },
    Case {
        reason: "NotGranted",
        runtime: "notgranted",
    },
    Case {
        reason: "ClassMissing",
        runtime: "missing",
    },
    Case {
        reason: "HandlerMismatch",
        runtime: "mismatch",
    },
    Case {
        reason: "ClassUnsupported",
        runtime: "unsupported",
    },
    Case {
        reason: "ClassDeleting",
        runtime: "deleting",
    },
];

fn class_of(ns: &TestNamespace, runtime: &str) -> String {
    format!("{}-{runtime}", ns.name)
}

fn alias_of(ns: &TestNamespace, runtime: &str) -> String {
    format!("{}-{runtime}-p", ns.name)
}

async fn merge_runtime(ns: &TestNamespace, name: &str, patch: serde_json::Value) {
    Api::<Runtime>::namespaced(ns.client.clone(), &ns.name)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("patch {name}: {e}"));
}

async fn recreate_class(client: &Client, name: &str, class: serde_json::Value) {
    let api: Api<RuntimeClass> = Api::all(client.clone());
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete class");
    wait_for_value(&format!("class {name} gone"), WAIT, || {
        let api = api.clone();
        async move { matches!(api.get_opt(name).await, Ok(None)).then_some(()) }
    })
    .await;
    let mut class = class;
    class["metadata"] = json!({"name": name});
    let rc: RuntimeClass = serde_json::from_value(class).expect("class");
    api.create(&PostParams::default(), &rc)
        .await
        .expect("recreate class");
}

/// Brings `case` about while the agent is away.
async fn induce(ns: &TestNamespace, case: &Case) {
    let class = class_of(ns, case.runtime);
    let classes: Api<RuntimeClass> = Api::all(ns.client.clone());
    match case.reason {
        // The restarted agent's grants file lacks the binding.
        "Revoked" => {}
        "NotGranted" => {
            merge_runtime(
                ns,
                case.runtime,
                json!({"spec": {"runtimeProfile": format!("{}-nope", ns.name)}}),
            )
            .await;
        }
        "ClassMissing" => {
            classes
                .delete(&class, &DeleteParams::default())
                .await
                .expect("delete class");
        }
        "HandlerMismatch" => {
            recreate_class(&ns.client, &class, json!({"handler": "runc"})).await;
        }
        "ClassUnsupported" => {
            recreate_class(
                &ns.client,
                &class,
                json!({"handler": HANDLER, "overhead": {"podFixed": {"cpu": "100m"}}}),
            )
            .await;
        }
        "ClassDeleting" => {
            class_hold::hold(&ns.client, &class)
                .await
                .expect("finalizer");
            classes
                .delete(&class, &DeleteParams::default())
                .await
                .expect("delete class");
        }
        other => panic!("no way to bring about {other}"),
    }
}

/// The live Deployment's pod template, as JSON.
async fn template(deps: &Api<Deployment>, name: &str) -> serde_json::Value {
    let d = deps.get(name).await.expect("deployment");
    serde_json::to_value(d.spec.expect("spec").template).expect("json")
}

/// What every held Runtime must show: the tenant's change not rolled out,
/// then the adversary's PDB delete and `hostNetwork: true` repaired with
/// the class, image and template kept.
struct Held {
    name: &'static str,
    reason: &'static str,
    generation: Option<i64>,
    template: serde_json::Value,
    pdb_uid: Option<String>,
}

impl Held {
    async fn before(ns: &TestNamespace, name: &'static str, reason: &'static str) -> Held {
        let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
        let d = deps.get(name).await.expect("deployment");
        let pdb = Api::<PodDisruptionBudget>::namespaced(ns.client.clone(), &ns.name)
            .get(name)
            .await
            .expect("pdb");
        Held {
            name,
            reason,
            generation: d.metadata.generation,
            template: template(&deps, name).await,
            pdb_uid: pdb.metadata.uid,
        }
    }

    /// Blocked for its reason; the tenant's change not applied.
    async fn check_blocked(&self, ns: &TestNamespace) {
        let rt = wait_condition(ns, self.name, "Blocked", "True", Some(self.reason)).await;
        let ready = condition(&rt, "Ready").expect("Ready");
        assert_eq!(ready.status, "False", "{}", self.name);
        let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
        let d = deps.get(self.name).await.expect("deployment");
        assert_eq!(
            d.metadata.generation, self.generation,
            "{} ({}): the Deployment was written while held",
            self.name, self.reason
        );
    }

    async fn attack(&self, ns: &TestNamespace) {
        Api::<PodDisruptionBudget>::namespaced(ns.client.clone(), &ns.name)
            .delete(self.name, &DeleteParams::default())
            .await
            .expect("delete pdb");
        Api::<Deployment>::namespaced(ns.client.clone(), &ns.name)
            .patch(
                self.name,
                &PatchParams {
                    field_manager: Some(INTRUDER.into()),
                    ..Default::default()
                },
                &Patch::Merge(json!({"spec": {"template": {"spec": {"hostNetwork": true}}}})),
            )
            .await
            .expect("hostNetwork");
    }

    async fn check_repaired(&self, ns: &TestNamespace) {
        let pdbs: Api<PodDisruptionBudget> = Api::namespaced(ns.client.clone(), &ns.name);
        let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
        let what = format!(
            "{} ({}): PDB recreated, hostNetwork removed",
            self.name, self.reason
        );
        wait_for_value(&what, WAIT, || {
            let (pdbs, deps) = (pdbs.clone(), deps.clone());
            async move {
                let pdb = pdbs.get_opt(self.name).await.ok().flatten()?;
                let d = deps.get(self.name).await.ok()?;
                let host = d.spec?.template.spec?.host_network;
                (pdb.metadata.uid != self.pdb_uid && host != Some(true)).then_some(())
            }
        })
        .await;
        let now = template(&deps, self.name).await;
        assert_eq!(
            now, self.template,
            "{} ({}): the pods keep their class, image and template",
            self.name, self.reason
        );
        let rt = wait_condition(ns, self.name, "Blocked", "True", Some(self.reason)).await;
        assert_ne!(
            rt.status
                .as_ref()
                .and_then(|s| s.rollout.as_ref())
                .map(|r| r.phase.as_str()),
            Some("Complete")
        );
    }
}

/// Waits until each Deployment has rolled back onto its template (the
/// adversary's `hostNetwork` rolled pods, the repair rolls them back):
/// until then the pods' progress is news, and the agent writes it.
async fn settled(ns: &TestNamespace, names: &[&str]) {
    let deps: Api<Deployment> = Api::namespaced(ns.client.clone(), &ns.name);
    for name in names {
        wait_for_value(&format!("{name} rolled back and settled"), WAIT, || {
            let deps = deps.clone();
            async move {
                let d = deps.get(name).await.ok()?;
                let want = d.spec.as_ref()?.replicas?;
                let s = d.status?;
                (s.observed_generation >= d.metadata.generation
                    && s.replicas == Some(want)
                    && s.updated_replicas == Some(want)
                    && s.ready_replicas == Some(want)
                    && s.available_replicas == Some(want))
                .then_some(())
            }
        })
        .await;
    }
}

#[tokio::test]
async fn agent_held_runtimes_keep_their_protection_for_every_grant_reason() {
    let (ns, _class) = setup("agent-held").await;
    let mut bindings = Vec::new();
    for case in &CASES {
        let class = class_of(&ns, case.runtime);
        create_class(&ns.client, &class, HANDLER).await;
        bindings.push(binding_for_service(
            &alias_of(&ns, case.runtime),
            &class,
            HANDLER,
            case.runtime,
        ));
    }
    let grants = write_grants(&bindings);
    let mut agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    for case in &CASES {
        create_runtime(
            &ns,
            case.runtime,
            json!({"service": case.runtime, "replicas": 1,
                   "runtimeProfile": alias_of(&ns, case.runtime)}),
        )
        .await;
    }
    let mut held = Vec::new();
    for case in &CASES {
        wait_condition(&ns, case.runtime, "Ready", "True", None).await;
        held.push(Held::before(&ns, case.runtime, case.reason).await);
    }

    // While the agent is away: every reason is brought about and every
    // tenant changes its image.
    agent.kill();
    for case in &CASES {
        induce(&ns, case).await;
        merge_runtime(&ns, case.runtime, json!({"spec": {"image": {"tag": "2"}}})).await;
    }
    let kept: Vec<String> = CASES
        .iter()
        .filter(|c| c.reason != "Revoked")
        .map(|c| {
            binding_for_service(
                &alias_of(&ns, c.runtime),
                &class_of(&ns, c.runtime),
                HANDLER,
                c.runtime,
            )
        })
        .collect();
    let grants = write_grants(&kept);
    let mut opts = AgentOpts::new(&ns.name, Some(&grants));
    opts.identity = format!("{}-b", ns.name);
    let agent = Agent::start(opts).await;
    for h in &held {
        h.check_blocked(&ns).await;
    }
    wait_reconciles(&agent, 3.0).await;
    for h in &held {
        h.check_blocked(&ns).await;
    }

    for h in &held {
        h.attack(&ns).await;
    }
    for h in &held {
        h.check_repaired(&ns).await;
    }
    let names: Vec<&str> = CASES.iter().map(|c| c.runtime).collect();
    settled(&ns, &names).await;
    silent_at_rest(&agent, &ns.client, "a held Runtime at rest").await;

    // Let the deleting class go.
    class_hold::let_go(&ns.client, &class_of(&ns, "deleting"))
        .await
        .expect("drop finalizer");
}

#[tokio::test]
async fn agent_held_for_an_incomplete_identity_keeps_its_protection() {
    let (ns, class) = setup("agent-held-id").await;
    let alias = format!("{}-bw", ns.name);
    let grants = write_grants(&[binding(&alias, &class, HANDLER)]);
    let agent = Agent::start(AgentOpts::new(&ns.name, Some(&grants))).await;
    create_runtime(&ns, "web", json!({"replicas": 1, "runtimeProfile": alias})).await;
    wait_condition(&ns, "web", "Ready", "True", None).await;
    let held = Held::before(&ns, "web", "IdentityIncomplete").await;

    Api::<Namespace>::all(ns.client.clone())
        .patch(
            &ns.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"berth.dev/project": null}}})),
        )
        .await
        .expect("drop the project label");
    merge_runtime(&ns, "web", json!({"spec": {"image": {"tag": "2"}}})).await;
    held.check_blocked(&ns).await;
    wait_reconciles(&agent, 3.0).await;
    held.check_blocked(&ns).await;

    held.attack(&ns).await;
    held.check_repaired(&ns).await;
    settled(&ns, &["web"]).await;
    silent_at_rest(&agent, &ns.client, "a held Runtime at rest").await;
}
