//! Review decisions without a cluster: the pure verdict, and the whole
//! AdmissionReview → response path against a fake [`Lookup`].

use super::*;
use crate::admission::lookup::LookupError;
use berth_shared::api::ProfileState;
use berth_shared::testkit::worker::{binding, class};
use serde_json::json;

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("berth.dev/project".to_string(), "demo".to_string()),
        (
            "berth.dev/environment".to_string(),
            "production".to_string(),
        ),
    ])
}

fn view(profile: Option<&str>) -> RuntimeView {
    RuntimeView {
        application: "analytics".into(),
        service: "worker".into(),
        runtime_profile: profile.map(str::to_string),
        suspend: false,
    }
}

struct Case<'a> {
    op: Op,
    view: RuntimeView,
    labels: BTreeMap<String, String>,
    bindings: &'a [GrantBinding],
    class: Option<ObservedClass>,
    previous: Option<ProfileStatus>,
    spec_unchanged: bool,
    deleting: bool,
    taken_by: Option<Claim>,
}

impl Case<'_> {
    fn create(profile: Option<&str>) -> Self {
        Case {
            op: Op::Create,
            view: view(profile),
            labels: labels(),
            bindings: &[],
            class: Some(class()),
            previous: None,
            spec_unchanged: false,
            deleting: false,
            taken_by: None,
        }
    }

    fn run(&self) -> Verdict {
        review(&Facts {
            op: self.op,
            namespace: "team-a",
            name: "worker",
            new: &self.view,
            spec_unchanged: self.spec_unchanged,
            deleting: self.deleting,
            namespace_labels: &self.labels,
            bindings: self.bindings,
            class: self.class.as_ref(),
            previous: self.previous.as_ref(),
            taken_by: self.taken_by.as_ref(),
        })
    }
}

fn denied(v: &Verdict) -> (&'static str, &str) {
    match v {
        Verdict::Denied { reason, message } => (reason, message.as_str()),
        other => panic!("expected a denial, got {other:?}"),
    }
}

const SCOPE: &str = "name = \"bounded-worker\", project = \"demo\", environment = \"production\", application = \"analytics\", service = \"worker\"";

#[test]
fn granted_is_allowed() {
    let b = [binding()];
    let mut c = Case::create(Some("bounded-worker"));
    c.bindings = &b;
    assert_eq!(
        c.run(),
        Verdict::Allowed {
            reason: "Granted",
            warning: None
        }
    );
}

#[test]
fn no_profile_is_allowed_even_without_identity() {
    let mut c = Case::create(None);
    c.labels = BTreeMap::new();
    assert!(c.run().is_allowed());
    c.view.runtime_profile = Some(String::new());
    assert!(c.run().is_allowed(), "an empty profile is no profile");
}

#[test]
fn not_granted_names_the_exact_scope() {
    let c = Case::create(Some("bounded-worker"));
    let v = c.run();
    let (reason, msg) = denied(&v);
    assert_eq!(reason, "NotGranted");
    assert!(msg.starts_with("NotGranted: Runtime team-a/worker: profile bounded-worker is not granted: no grants are loaded"), "{msg}");
    assert!(msg.contains(SCOPE), "{msg}");

    // Same alias bound to another service: still the exact scope of this one.
    let mut other = binding();
    other.identity.service = "api".into();
    let b = [other];
    let mut c = Case::create(Some("bounded-worker"));
    c.bindings = &b;
    let v = c.run();
    let (_, msg) = denied(&v);
    assert!(msg.contains("exists but not for"), "{msg}");
    assert!(msg.contains(SCOPE), "{msg}");
}

#[test]
fn missing_identity_labels_are_named() {
    let b = [binding()];
    let mut c = Case::create(Some("bounded-worker"));
    c.bindings = &b;
    c.labels = BTreeMap::from([("berth.dev/project".to_string(), "demo".to_string())]);
    let v = c.run();
    let (reason, msg) = denied(&v);
    assert_eq!(reason, "IdentityIncomplete");
    assert!(
        msg.contains("namespace team-a needs the label(s) berth.dev/environment"),
        "{msg}"
    );
    assert!(
        msg.contains("application = \"analytics\", service = \"worker\""),
        "{msg}"
    );

    c.labels = BTreeMap::from([
        ("berth.dev/project".to_string(), "Demo".to_string()),
        (
            "berth.dev/environment".to_string(),
            "production".to_string(),
        ),
    ]);
    let v = c.run();
    let (reason, msg) = denied(&v);
    assert_eq!(reason, "IdentityIncomplete");
    assert!(msg.contains("fix the label berth.dev/project"), "{msg}");
}

#[test]
fn class_problems_are_refused_with_the_binding() {
    let b = [binding()];
    let cases: Vec<(Option<ObservedClass>, &str, &str)> = vec![
        (
            None,
            "ClassMissing",
            "needs RuntimeClass bounded-worker with handler bounded-runc to exist",
        ),
        (
            Some(ObservedClass {
                handler: "runc".into(),
                ..class()
            }),
            "HandlerMismatch",
            "names handler runc, but the grant expects bounded-runc",
        ),
        (
            Some(ObservedClass {
                has_overhead: true,
                ..class()
            }),
            "ClassUnsupported",
            "without overhead and scheduling",
        ),
        (
            Some(ObservedClass {
                has_scheduling: true,
                ..class()
            }),
            "ClassUnsupported",
            "sets scheduling",
        ),
        (
            Some(ObservedClass {
                deleting: true,
                ..class()
            }),
            "ClassDeleting",
            "is being deleted",
        ),
    ];
    for (observed, want_reason, needle) in cases {
        let mut c = Case::create(Some("bounded-worker"));
        c.bindings = &b;
        c.class = observed;
        let v = c.run();
        let (reason, msg) = denied(&v);
        assert_eq!(reason, want_reason, "{msg}");
        assert!(msg.contains(needle), "{want_reason}: {msg}");
        assert!(msg.contains(SCOPE), "{want_reason}: {msg}");
    }
}

fn granted_before() -> ProfileStatus {
    ProfileStatus {
        alias: Some("bounded-worker".into()),
        class: Some("bounded-worker".into()),
        handler: Some("bounded-runc".into()),
        state: ProfileState::Granted,
    }
}

#[test]
fn revoked_grant_blocks_changes_but_not_retirement() {
    // The grant is gone (no bindings); the Runtime ran with it before.
    let mut c = Case::create(Some("bounded-worker"));
    c.op = Op::Update;
    c.previous = Some(granted_before());
    let v = c.run();
    let (reason, msg) = denied(&v);
    assert_eq!(reason, "Revoked");
    assert!(msg.contains(SCOPE), "{msg}");
    assert!(msg.contains("clearing spec.runtimeProfile"), "{msg}");

    // Clearing the profile is allowed.
    c.view.runtime_profile = None;
    assert_eq!(
        c.run(),
        Verdict::Allowed {
            reason: "NotRequested",
            warning: None
        }
    );

    // Suspending is allowed, with a warning.
    c.view = view(Some("bounded-worker"));
    c.view.suspend = true;
    match c.run() {
        Verdict::Allowed {
            reason,
            warning: Some(w),
        } => {
            assert_eq!(reason, "Revoked");
            assert!(w.contains("spec.suspend is true"), "{w}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn metadata_only_updates_and_deletion_are_allowed() {
    let mut c = Case::create(Some("bounded-worker"));
    c.op = Op::Update;
    c.spec_unchanged = true;
    match c.run() {
        Verdict::Allowed {
            warning: Some(w), ..
        } => assert!(w.contains("spec is unchanged"), "{w}"),
        other => panic!("{other:?}"),
    }
    // A create is never "unchanged".
    c.op = Op::Create;
    assert!(!c.run().is_allowed());

    // Removing a finalizer from a Runtime being deleted.
    c.op = Op::Update;
    c.spec_unchanged = false;
    c.deleting = true;
    assert!(c.run().is_allowed());

    c.op = Op::Other;
    c.deleting = false;
    assert!(c.run().is_allowed());
}

#[test]
fn create_ignores_stale_status() {
    // A create carrying a status claiming a grant gets no "revoked" treatment.
    let mut c = Case::create(Some("bounded-worker"));
    c.previous = Some(granted_before());
    let v = c.run();
    assert_eq!(denied(&v).0, "NotGranted");
}

#[test]
fn class_to_look_up_only_for_a_matching_binding() {
    let b = [binding()];
    assert_eq!(
        class_to_look_up("ns", &labels(), &view(Some("bounded-worker")), &b),
        Some("bounded-worker".into())
    );
    assert_eq!(
        class_to_look_up("ns", &labels(), &view(Some("x")), &b),
        None
    );
    assert_eq!(class_to_look_up("ns", &labels(), &view(None), &b), None);
    assert_eq!(
        class_to_look_up("ns", &BTreeMap::new(), &view(Some("bounded-worker")), &b),
        None
    );
}

// ---- the whole request path ----

#[derive(Default)]
struct FakeLookup {
    labels: Option<BTreeMap<String, String>>,
    class: Option<ObservedClass>,
    fail: bool,
    claims: Vec<Claim>,
}

impl Lookup for FakeLookup {
    async fn namespace_labels(
        &self,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, LookupError> {
        if self.fail {
            return Err(LookupError::Namespace {
                name: name.to_string(),
                source: kube::Error::Api(
                    kube::core::Status::failure("connection refused", "ServiceUnavailable")
                        .with_code(503)
                        .boxed(),
                ),
            });
        }
        Ok(self.labels.clone())
    }

    async fn runtime_class(&self, _name: &str) -> Result<Option<ObservedClass>, LookupError> {
        Ok(self.class.clone())
    }

    async fn claims(&self, _identity: &Identity) -> Result<Vec<Claim>, LookupError> {
        Ok(self.claims.clone())
    }
}

fn runtime(profile: Option<&str>, suspend: bool) -> serde_json::Value {
    let mut spec = json!({
        "application": "analytics",
        "service": "worker",
        "image": {"repository": "r", "tag": "1"},
        "suspend": suspend,
    });
    if let Some(p) = profile {
        spec["runtimeProfile"] = json!(p);
    }
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Runtime",
        "metadata": {"name": "worker", "namespace": "team-a"},
        "spec": spec,
    })
}

fn admission_review(
    operation: &str,
    object: serde_json::Value,
    old: Option<serde_json::Value>,
) -> AdmissionReview<DynamicObject> {
    serde_json::from_value(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "4b1c7d9e-0000-4000-8000-000000000001",
            "kind": {"group": "berth.dev", "version": "v1alpha1", "kind": "Runtime"},
            "resource": {"group": "berth.dev", "version": "v1alpha1", "resource": "runtimes"},
            "name": "worker",
            "namespace": "team-a",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
            "oldObject": old,
            "dryRun": true,
        }
    }))
    .expect("review")
}

fn response(review: &AdmissionReview<DynamicObject>) -> &AdmissionResponse {
    review.response.as_ref().expect("response")
}

#[tokio::test]
async fn full_path_allows_and_denies() {
    let b = [binding()];
    let lookup = FakeLookup {
        labels: Some(labels()),
        class: Some(class()),
        fail: false,
        claims: Vec::new(),
    };
    let out = handle(
        admission_review("CREATE", runtime(Some("bounded-worker"), false), None),
        &b,
        &lookup,
        &Agreement::Alone,
    )
    .await;
    let resp = response(&out);
    assert!(resp.allowed, "{resp:?}");
    assert_eq!(resp.uid, "4b1c7d9e-0000-4000-8000-000000000001");
    // Serializes as an admission.k8s.io/v1 AdmissionReview.
    let wire = serde_json::to_value(&out).expect("json");
    assert_eq!(wire["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(wire["kind"], "AdmissionReview");
    assert_eq!(wire["response"]["allowed"], true);

    let out = handle(
        admission_review("CREATE", runtime(Some("other"), false), None),
        &b,
        &lookup,
        &Agreement::Alone,
    )
    .await;
    let resp = response(&out);
    assert!(!resp.allowed);
    assert_eq!(resp.result.code, 403);
    assert!(
        resp.result
            .message
            .contains("NotGranted: Runtime team-a/worker: profile other is not granted"),
        "{}",
        resp.result.message
    );
    assert_eq!(
        resp.audit_annotations.get("decision").map(String::as_str),
        Some("NotGranted")
    );
}

/// One grant set per cluster: a replica whose grants are not confirmed as
/// the leader's refuses a granted profile (403, GrantsReloading, retry) and
/// still admits what needs no grant.
#[tokio::test]
async fn full_path_unconfirmed_grants_refuse_with_retry() {
    let b = [binding()];
    let lookup = FakeLookup {
        labels: Some(labels()),
        class: Some(class()),
        fail: false,
        claims: Vec::new(),
    };
    let unconfirmed = Agreement::Unconfirmed("the leader differs".into());
    let out = handle(
        admission_review("CREATE", runtime(Some("bounded-worker"), false), None),
        &b,
        &lookup,
        &unconfirmed,
    )
    .await;
    let resp = response(&out);
    assert!(!resp.allowed, "{resp:?}");
    assert_eq!(resp.result.code, 403);
    assert!(
        resp.result
            .message
            .starts_with("grants are being reloaded, retry: the leader differs"),
        "{}",
        resp.result.message
    );
    assert_eq!(
        resp.audit_annotations.get("decision").map(String::as_str),
        Some("GrantsReloading")
    );
    for (profile, suspend) in [(None, false), (Some("bounded-worker"), true)] {
        let out = handle(
            admission_review("CREATE", runtime(profile, suspend), None),
            &b,
            &lookup,
            &unconfirmed,
        )
        .await;
        assert!(response(&out).allowed, "{profile:?} suspend={suspend}");
    }
}

#[tokio::test]
async fn full_path_update_uses_the_old_status() {
    let lookup = FakeLookup {
        labels: Some(labels()),
        ..Default::default()
    };
    let mut old = runtime(Some("bounded-worker"), false);
    old["status"] = json!({"profile": {"alias": "bounded-worker", "class": "bounded-worker", "state": "Granted"}});
    let mut new = runtime(Some("bounded-worker"), false);
    new["spec"]["image"]["tag"] = json!("2");
    let out = handle(
        admission_review("UPDATE", new, Some(old.clone())),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    let resp = response(&out);
    assert!(!resp.allowed);
    assert!(
        resp.result.message.starts_with("Revoked:"),
        "{}",
        resp.result.message
    );

    // Clearing the profile of that Runtime.
    let out = handle(
        admission_review("UPDATE", runtime(None, false), Some(old.clone())),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    assert!(response(&out).allowed);

    // Suspending it: allowed with a warning for kubectl.
    let out = handle(
        admission_review("UPDATE", runtime(Some("bounded-worker"), true), Some(old)),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    let resp = response(&out);
    assert!(resp.allowed);
    assert_eq!(resp.warnings.as_ref().map(Vec::len), Some(1));
}

#[tokio::test]
async fn full_path_fails_closed_on_lookup_errors_and_bad_input() {
    let lookup = FakeLookup {
        fail: true,
        ..Default::default()
    };
    let out = handle(
        admission_review("CREATE", runtime(Some("bounded-worker"), false), None),
        &[binding()],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    let resp = response(&out);
    assert!(!resp.allowed);
    assert!(
        resp.result
            .message
            .contains("could not be checked: reading namespace team-a: ")
            && resp.result.message.contains("connection refused"),
        "{}",
        resp.result.message
    );

    // No profile: the identity is still checked (every Runtime claims
    // one), so a failed read refuses it too.
    let out = handle(
        admission_review("CREATE", runtime(None, false), None),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    assert!(!response(&out).allowed);

    // A spec of the wrong shape is refused, not guessed at.
    let mut bad = runtime(Some("x"), false);
    bad["spec"]["suspend"] = json!("yes");
    let out = handle(
        admission_review("CREATE", bad, None),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    assert!(!response(&out).allowed);

    // A review without a request is invalid.
    let empty: AdmissionReview<DynamicObject> = serde_json::from_value(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
    }))
    .expect("review");
    let out = handle(empty, &[], &lookup, &Agreement::Alone).await;
    assert!(!response(&out).allowed);

    // Deletes are never refused (and never sent).
    let out = handle(
        admission_review("DELETE", runtime(Some("x"), false), None),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    assert!(response(&out).allowed);
}

#[test]
fn bindings_from_a_loaded_file() {
    assert!(grant_bindings(None).is_empty());
    let loaded = LoadedGrants::from_unchecked_bytes(
        "grants.toml",
        b"schema_version = 1\n[[bindings]]\nname = \"bounded-worker\"\nproject = \"demo\"\nenvironment = \"production\"\napplication = \"analytics\"\nservice = \"worker\"\nruntime_class = \"bounded-worker\"\nhandler = \"bounded-runc\"\n",
    )
    .expect("valid");
    assert_eq!(grant_bindings(Some(&loaded)), vec![binding()]);
}

// ---- one Runtime per identity ----

fn holder() -> Claim {
    Claim {
        namespace: "team-b".into(),
        name: "web".into(),
        created: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(1_000).expect("time"),
        )),
        deleting: false,
    }
}

#[test]
fn a_copy_is_refused_naming_the_holder_whatever_it_requests() {
    let b = [binding()];
    for profile in [Some("bounded-worker"), None] {
        let mut c = Case::create(profile);
        c.bindings = &b;
        c.taken_by = Some(holder());
        let v = c.run();
        let (reason, message) = denied(&v);
        assert_eq!(reason, "IdentityTaken");
        assert!(message.starts_with("IdentityTaken: Runtime team-a/worker claims project=demo environment=production application=analytics service=worker"), "{message}");
        assert!(
            message.contains("Runtime team-b/web already holds"),
            "{message}"
        );
    }
    // Even a suspended new copy: creating one retires nothing.
    let mut c = Case::create(None);
    c.view.suspend = true;
    c.taken_by = Some(holder());
    assert_eq!(denied(&c.run()).0, "IdentityTaken");
}

#[test]
fn an_existing_copy_may_retire_or_change_metadata_but_nothing_else() {
    let mut c = Case::create(None);
    c.op = Op::Update;
    c.taken_by = Some(holder());
    assert_eq!(denied(&c.run()).0, "IdentityTaken");

    c.view.suspend = true;
    let v = c.run();
    assert!(
        matches!(&v, Verdict::Allowed { reason: "IdentityTaken", warning: Some(w) } if w.contains("team-b/web")),
        "{v:?}"
    );
    c.view.suspend = false;
    c.spec_unchanged = true;
    assert!(c.run().is_allowed());

    // Being deleted: finalizers must come off.
    c.spec_unchanged = false;
    c.deleting = true;
    assert!(c.run().is_allowed());
}

#[test]
fn no_identity_no_clash() {
    let mut c = Case::create(None);
    c.labels = BTreeMap::new();
    c.taken_by = Some(holder());
    assert!(c.run().is_allowed());
}

#[tokio::test]
async fn full_path_compares_ages() {
    let older = holder();
    let lookup = FakeLookup {
        labels: Some(labels()),
        claims: vec![older.clone()],
        ..Default::default()
    };
    // CREATE: younger than every stored Runtime.
    let out = handle(
        admission_review("CREATE", runtime(None, false), None),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    let resp = response(&out);
    assert!(!resp.allowed);
    assert!(
        resp.result.message.contains("team-b/web"),
        "{}",
        resp.result.message
    );

    // UPDATE of the holder itself (listed too): allowed.
    let mut me = runtime(None, false);
    me["metadata"]["creationTimestamp"] = json!("1970-01-01T00:00:10Z");
    let mut changed = me.clone();
    changed["spec"]["image"]["tag"] = json!("2");
    let mut stored_me = older.clone();
    stored_me.namespace = "team-a".into();
    stored_me.name = "worker".into();
    stored_me.created = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_second(10).expect("time"),
    ));
    let lookup = FakeLookup {
        labels: Some(labels()),
        claims: vec![older, stored_me],
        ..Default::default()
    };
    let out = handle(
        admission_review("UPDATE", changed, Some(me)),
        &[],
        &lookup,
        &Agreement::Alone,
    )
    .await;
    assert!(response(&out).allowed, "{:?}", response(&out));
}
