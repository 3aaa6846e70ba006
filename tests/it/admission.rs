//! Acceptance on a real control plane (issue 6): the API server calls the
//! agent's webhook (`berth-agent webhook`, self-signed, on loopback) for
//! every Runtime create/update, including server-side dry-runs. The
//! harness is `support::webhook`.

use std::time::{Duration, Instant};

use berth_tests::harness::{create_runtime_class, wait_for};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::webhook::*;

pub(crate) mod replicas;

const SCOPE: &str = "project = \"demo\", environment = \"production\", application = \"analytics\", service = \"worker\"";

#[tokio::test]
async fn refuses_ungranted_profiles_and_dry_run_plans_the_same() {
    let id = unique("acc");
    let ns = namespace("adm-acc", &id, true).await;
    let bare = namespace("adm-acc-bare", &id, false).await;
    let client = ns.client.clone();
    let (bounded, mismatch, missing) = (
        format!("{id}-bounded"),
        format!("{id}-mismatch"),
        format!("{id}-missing"),
    );
    create_runtime_class(&client, &bounded, "bounded-runc").await;
    create_runtime_class(&client, &mismatch, "runc").await;
    let grants = grants_file(
        &id,
        &[
            ("bounded-worker", &bounded, "bounded-runc"),
            ("mismatch", &mismatch, "bounded-runc"),
            ("missing", &missing, "bounded-runc"),
        ],
    );
    let hook = Webhook::start(&client, &ns.name, &WebhookOptions::new(&id, &grants)).await;
    let api = runtimes(&client, &ns.name);

    // Denied create, with the reason and the exact scope in the error.
    let (code, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime("denied", Some("gvisor"), false),
        )
        .await,
        "ungranted create",
    );
    assert_eq!(code, 403, "{msg}");
    assert!(
        msg.contains("admission webhook \"runtimes.berth.dev\" denied the request"),
        "{msg}"
    );
    assert!(msg.contains("NotGranted"), "{msg}");
    assert!(msg.contains("profile gvisor is not granted"), "{msg}");
    assert!(
        msg.contains(&format!("name = \"gvisor\", {SCOPE}")),
        "{msg}"
    );
    assert!(api.get_opt("denied").await.expect("get").is_none());

    // The alias exists, but for another service: refused, naming this scope.
    let (_, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime_for("other-service", "api", Some("bounded-worker"), false),
        )
        .await,
        "other identity",
    );
    assert!(msg.contains("exists but not for"), "{msg}");
    assert!(msg.contains("service = \"api\""), "{msg}");

    // Class problems.
    let (_, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime("mm", Some("mismatch"), false),
        )
        .await,
        "handler mismatch",
    );
    assert!(msg.contains("HandlerMismatch"), "{msg}");
    assert!(
        msg.contains("names handler runc, but the grant expects bounded-runc"),
        "{msg}"
    );
    let (_, msg) = refusal(
        api.create(
            &PostParams::default(),
            &runtime("ms", Some("missing"), false),
        )
        .await,
        "class missing",
    );
    assert!(msg.contains("ClassMissing"), "{msg}");
    assert!(
        msg.contains(&format!("RuntimeClass {missing} does not exist")),
        "{msg}"
    );

    // A namespace without identity labels.
    let (_, msg) = refusal(
        runtimes(&client, &bare.name)
            .create(
                &PostParams::default(),
                &runtime("bare", Some("bounded-worker"), false),
            )
            .await,
        "no identity labels",
    );
    assert!(msg.contains("IdentityIncomplete"), "{msg}");
    assert!(msg.contains("berth.dev/project"), "{msg}");

    // Server-side dry-run: the same verdicts, and nothing changes.
    let (_, msg) = refusal(
        api.create(&dry_run(), &runtime("dry-denied", Some("gvisor"), false))
            .await,
        "dry-run ungranted create",
    );
    assert!(msg.contains("NotGranted") && msg.contains(SCOPE), "{msg}");
    api.create(
        &dry_run(),
        &runtime("dry-granted", Some("bounded-worker"), false),
    )
    .await
    .expect("dry-run granted create is admitted");
    assert!(api.get_opt("dry-granted").await.expect("get").is_none());
    assert!(api.get_opt("dry-denied").await.expect("get").is_none());

    // Allowed create (granted), and a profile-less one once it is gone
    // (one Runtime per identity: see agent_identity.rs).
    api.create(
        &PostParams::default(),
        &runtime("granted", Some("bounded-worker"), false),
    )
    .await
    .expect("granted profile is admitted");
    api.delete("granted", &DeleteParams::default())
        .await
        .expect("delete granted");
    api.create(&PostParams::default(), &runtime("plain", None, false))
        .await
        .expect("no profile is admitted");

    // …also for an apply (what `kubectl apply --dry-run=server` sends).
    let before = api.get("plain").await.expect("get plain");
    let apply_dry = PatchParams {
        dry_run: true,
        ..PatchParams::apply("berth-it").force()
    };
    let mut change = runtime("plain", Some("gvisor"), false);
    change.metadata.namespace = Some(ns.name.clone());
    let (_, msg) = refusal(
        api.patch("plain", &apply_dry, &Patch::Apply(&change)).await,
        "dry-run apply of an ungranted profile",
    );
    assert!(msg.contains("NotGranted"), "{msg}");
    let granted_change = runtime("plain", Some("bounded-worker"), false);
    let planned = api
        .patch("plain", &apply_dry, &Patch::Apply(&granted_change))
        .await
        .expect("dry-run apply of a granted profile");
    assert_eq!(planned.data["spec"]["runtimeProfile"], "bounded-worker");
    let after = api.get("plain").await.expect("get plain");
    assert_eq!(
        before.metadata.resource_version, after.metadata.resource_version,
        "a dry-run changed the object"
    );
    assert!(after.data["spec"].get("runtimeProfile").is_none());

    hook.remove(&client).await;
    delete_classes(&client, &[&bounded, &mismatch]).await;
}

#[tokio::test]
async fn retiring_a_revoked_profile_is_always_accepted() {
    let id = unique("rev");
    let ns = namespace("adm-rev", &id, true).await;
    let client = ns.client.clone();
    let class = format!("{id}-bounded");
    create_runtime_class(&client, &class, "bounded-runc").await;
    // One alias and service per Runtime: none of them is a copy of another.
    let names = ["clear-me", "suspend-me", "change-me"];
    let bindings: Vec<_> = names
        .iter()
        .map(|n| (*n, class.as_str(), "bounded-runc", *n))
        .collect();
    let with_grant = grants_file_with(&id, &bindings);
    let hook = Webhook::start(&client, &ns.name, &WebhookOptions::new(&id, &with_grant)).await;
    let api = runtimes(&client, &ns.name);
    for name in names {
        api.create(
            &PostParams::default(),
            &runtime_for(name, name, Some(name), false),
        )
        .await
        .expect("granted create");
        // What the controller records after granting it.
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"profile": {
                "alias": name, "class": class, "handler": "bounded-runc", "state": "Granted"
            }}})),
        )
        .await
        .expect("status");
    }
    hook.remove(&client).await;

    // The agent restarts with the binding gone.
    let id2 = format!("{id}-gone");
    let without = grants_file(&id2, &[("something-else", &class, "bounded-runc")]);
    let hook = Webhook::start(&client, &ns.name, &WebhookOptions::new(&id, &without)).await;

    // Any other change is refused as revoked…
    let (_, msg) = refusal(
        api.patch(
            "change-me",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": {"tag": "1.2.4"}}})),
        )
        .await,
        "image change with a revoked grant",
    );
    assert!(msg.contains("Revoked"), "{msg}");
    assert!(
        msg.contains("clearing spec.runtimeProfile or setting spec.suspend: true"),
        "{msg}"
    );
    // …metadata-only changes are not (nothing new is requested)…
    api.patch(
        "change-me",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "data"}}})),
    )
    .await
    .expect("a label change is admitted");
    // …and retiring the dependency is always accepted.
    let cleared = api
        .patch(
            "clear-me",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"runtimeProfile": null}})),
        )
        .await
        .expect("clearing the profile is admitted");
    assert!(cleared.data["spec"].get("runtimeProfile").is_none());
    let suspended = api
        .patch(
            "suspend-me",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .expect("suspending is admitted");
    assert_eq!(suspended.data["spec"]["suspend"], Value::Bool(true));
    // Deleting too (never sent to the webhook).
    api.delete("change-me", &DeleteParams::default())
        .await
        .expect("delete");

    hook.remove(&client).await;
    delete_classes(&client, &[&class]).await;
}

#[tokio::test]
async fn agent_stopped_fails_closed_but_deletes_work() {
    let id = unique("down");
    let ns = namespace("adm-down", &id, true).await;
    let client = ns.client.clone();
    let grants = grants_file(&id, &[]);
    let mut hook = Webhook::start(&client, &ns.name, &WebhookOptions::new(&id, &grants)).await;
    let api = runtimes(&client, &ns.name);
    api.create(&PostParams::default(), &runtime("existing", None, false))
        .await
        .expect("create while the agent runs");

    hook.stop().await;

    // Create and update fail closed — even ones that would be allowed.
    let (code, msg) = refusal(
        api.create(&PostParams::default(), &runtime("new", None, false))
            .await,
        "create with the agent down",
    );
    assert!(code >= 500, "{code}: {msg}");
    assert!(
        msg.contains("failed calling webhook \"runtimes.berth.dev\""),
        "{msg}"
    );
    let (_, msg) = refusal(
        api.patch(
            "existing",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await,
        "update with the agent down",
    );
    assert!(msg.contains("failed calling webhook"), "{msg}");
    let (_, msg) = refusal(
        api.create(&dry_run(), &runtime("new", None, false)).await,
        "dry-run with the agent down",
    );
    assert!(msg.contains("failed calling webhook"), "{msg}");
    assert!(api.get_opt("new").await.expect("get").is_none());

    // Deletes are never sent to the webhook.
    api.delete("existing", &DeleteParams::default())
        .await
        .expect("delete with the agent down");
    wait_for("Runtime deleted", Duration::from_secs(30), || {
        let api = api.clone();
        async move { matches!(api.get_opt("existing").await, Ok(None)) }
    })
    .await;

    hook.remove(&client).await;
}

#[tokio::test]
async fn webhook_keeps_serving_across_certificate_rotation() {
    let id = unique("rot");
    let ns = namespace("adm-rot", &id, true).await;
    let client = ns.client.clone();
    let class = format!("{id}-bounded");
    create_runtime_class(&client, &class, "bounded-runc").await;
    let grants = grants_file(&id, &[("bounded-worker", &class, "bounded-runc")]);
    // A 9 s certificate is replaced every 6 s.
    let hook = Webhook::start(
        &client,
        &ns.name,
        &WebhookOptions {
            selector: &id,
            grants: &grants,
            cert_validity: "9s",
        },
    )
    .await;
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let bundle = |v: ValidatingWebhookConfiguration| replicas::stored_bundle(&v);
    let api = runtimes(&client, &ns.name);
    let mut bundles = vec![bundle(vwcs.get(&hook.config_name).await.expect("vwc"))];
    let started = Instant::now();
    let mut calls = 0;
    while started.elapsed() < Duration::from_secs(22) {
        api.create(
            &dry_run(),
            &runtime("rot-ok", Some("bounded-worker"), false),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "granted dry-run failed after {:?}: {e}\n{}",
                started.elapsed(),
                hook.log_text()
            )
        });
        let (_, msg) = refusal(
            api.create(&dry_run(), &runtime("rot-no", Some("gvisor"), false))
                .await,
            "ungranted dry-run during rotation",
        );
        assert!(
            msg.contains("NotGranted"),
            "after {:?}: {msg}\n{}",
            started.elapsed(),
            hook.log_text()
        );
        calls += 2;
        let now = bundle(vwcs.get(&hook.config_name).await.expect("vwc"));
        if bundles.last() != Some(&now) {
            bundles.push(now);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        bundles.len() >= 3,
        "expected at least two rotations in 22 s, saw {} CA bundles\n{}",
        bundles.len(),
        hook.log_text()
    );
    assert!(
        hook.log_text()
            .matches("webhook serving certificate rotated")
            .count()
            >= 2,
        "{}",
        hook.log_text()
    );
    eprintln!(
        "{calls} admission calls across {} CA bundles",
        bundles.len()
    );
    hook.remove(&client).await;
    delete_classes(&client, &[&class]).await;
}

/// One grant set per cluster, for the standalone webhook (issue 27, point
/// 7): with `--follow-lease` it judges with its own file only while the
/// Lease's holder published the same digest. The adversary plays the
/// leader: it writes the Lease (another field manager) with another
/// digest, then with this webhook's, then releases it.
#[tokio::test]
async fn standalone_webhook_follows_the_leaders_grant_set() {
    use k8s_openapi::api::coordination::v1::Lease;

    let id = unique("follow");
    let ns = namespace("adm-follow", &id, true).await;
    let client = ns.client.clone();
    let class = format!("{id}-bounded");
    create_runtime_class(&client, &class, "bounded-runc").await;
    let grants = grants_file(&id, &[("bounded-worker", &class, "bounded-runc")]);
    let own = berth_shared::grants::sha256_hex(&std::fs::read(&grants).expect("read"));
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns.name);
    let lead = |holder: &str, digest: &str| {
        let (leases, holder, digest) = (leases.clone(), holder.to_string(), digest.to_string());
        async move {
            let lease = json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "leader", "annotations": {"berth.dev/grants-sha256": digest}},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
            });
            leases
                .patch(
                    "leader",
                    &PatchParams::apply("intruder").force(),
                    &Patch::Apply(&lease),
                )
                .await
                .expect("write the Lease");
        }
    };
    lead("other-agent", &"b".repeat(64)).await;
    let follow = format!("{}/leader", ns.name);
    let hook = Webhook::start_with(
        &client,
        &ns.name,
        &WebhookOptions {
            selector: &id,
            grants: &grants,
            cert_validity: "30d",
        },
        &["--follow-lease", &follow],
    )
    .await;
    let api = runtimes(&client, &ns.name);
    let granted = || runtime("worker", Some("bounded-worker"), false);
    let refused_with = |want: &'static str| {
        let api = api.clone();
        move || {
            let api = api.clone();
            async move {
                matches!(
                    api.create(&dry_run(), &granted()).await,
                    Err(kube::Error::Api(s)) if s.message.contains(want)
                )
            }
        }
    };
    // Another grant set leads: the granted profile waits.
    wait_for(
        "refused while the leader runs another file",
        Duration::from_secs(60),
        refused_with("grants are being reloaded, retry"),
    )
    .await;
    // What needs no grant is judged as always.
    api.create(&dry_run(), &runtime("plain", None, false))
        .await
        .expect("no profile is admitted");
    // The leader publishes this webhook's digest: admitted.
    lead("other-agent", &own).await;
    wait_for(
        "admitted once the digests agree",
        Duration::from_secs(60),
        || {
            let api = api.clone();
            async move { api.create(&dry_run(), &granted()).await.is_ok() }
        },
    )
    .await;
    // Released: no leader, nothing published; fail closed again.
    lead("", &own).await;
    wait_for(
        "refused while no agent leads",
        Duration::from_secs(60),
        refused_with("no agent leads"),
    )
    .await;
    hook.remove(&client).await;
}
