//! The Kubernetes vocabulary the agent, the console and the analysis share:
//! well-known labels and annotations, owner references, a pod template's
//! image. One home each, so that the crates cannot read the same object
//! differently.

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// `app.kubernetes.io/managed-by`: `berth` on every object the agent
/// renders for a Runtime (and their pod templates), `berth-agent` on the
/// objects the agent owns itself (RuntimeGrants, its webhook
/// configuration).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// [`MANAGED_BY_LABEL`] on objects rendered for a Runtime.
pub const MANAGED_BY: &str = "berth";
/// [`MANAGED_BY_LABEL`] on objects the agent itself owns.
pub const MANAGED_BY_AGENT: &str = "berth-agent";
/// Label of the objects an agent publishes (RuntimeGrants, its
/// PendingGrantsFile): the publishing agent's Lease name, so that agents
/// of several installs prune only their own.
pub const PUBLISHED_BY_LABEL: &str = "berth.dev/published-by";

/// Label (value `true`) of the agent's canary Jobs and their pods
/// (`crate::attest`): berth's own probes of a handler, not workloads.
pub const CANARY_LABEL: &str = "berth.dev/canary";

/// The annotation the Deployment controller puts on a Deployment and each of
/// its ReplicaSets; the ReplicaSet whose value equals the Deployment's is
/// the current revision.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// Label selector of every object rendered for a Runtime.
pub fn managed_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY}")
}

/// Whether an object carries `app.kubernetes.io/managed-by: berth`.
pub fn is_managed(meta: &ObjectMeta) -> bool {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .is_some_and(|v| v == MANAGED_BY)
}

/// The object's controller owner reference (the apiserver allows one).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Whether the object's controller is the object with this `uid` (uids are
/// unique across kinds).
pub fn controlled_by_uid(meta: &ObjectMeta, uid: &str) -> bool {
    controller_of(meta).is_some_and(|r| r.uid == uid)
}

/// Whether the object's controller is the `kind` named `name` (in the
/// object's namespace).
pub fn controlled_by(meta: &ObjectMeta, kind: &str, name: &str) -> bool {
    controller_of(meta).is_some_and(|r| r.kind == kind && r.name == name)
}

/// Whether any owner reference (controller or not) names the `kind`
/// called `name`.
pub fn has_owner(meta: &ObjectMeta, kind: &str, name: &str) -> bool {
    meta.owner_references
        .as_ref()
        .is_some_and(|refs| refs.iter().any(|r| r.kind == kind && r.name == name))
}

/// The value of [`REVISION_ANNOTATION`], if any.
pub fn revision(meta: &ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()?
        .get(REVISION_ANNOTATION)
        .map(String::as_str)
}

/// The image of a pod template's first container (the Runtime's own one;
/// render puts it first).
pub fn template_image(template: Option<&PodTemplateSpec>) -> Option<String> {
    template
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
}

/// Whether a pod reports the `Ready` condition True.
pub fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use std::collections::BTreeMap;

    fn owner(kind: &str, name: &str, uid: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller,
            ..Default::default()
        }
    }

    fn meta(refs: Vec<OwnerReference>) -> ObjectMeta {
        ObjectMeta {
            owner_references: Some(refs),
            ..Default::default()
        }
    }

    #[test]
    fn only_the_controller_reference_controls() {
        // (owner references, uid asked, kind/name asked, controlled by uid,
        // controlled by kind/name, has owner)
        let cases = [
            (vec![], "u", ("Runtime", "web"), false, false, false),
            (
                vec![owner("Runtime", "web", "u", Some(true))],
                "u",
                ("Runtime", "web"),
                true,
                true,
                true,
            ),
            (
                vec![owner("Runtime", "web", "u", Some(false))],
                "u",
                ("Runtime", "web"),
                false,
                false,
                true,
            ),
            (
                vec![owner("Runtime", "web", "u", None)],
                "u",
                ("Runtime", "web"),
                false,
                false,
                true,
            ),
            (
                vec![owner("Runtime", "web", "u", Some(true))],
                "v",
                ("Runtime", "api"),
                false,
                false,
                false,
            ),
            (
                vec![owner("Deployment", "web", "u", Some(true))],
                "u",
                ("Runtime", "web"),
                true,
                false,
                false,
            ),
            (
                vec![
                    owner("Runtime", "old", "o", Some(false)),
                    owner("Runtime", "web", "u", Some(true)),
                ],
                "u",
                ("Runtime", "old"),
                true,
                false,
                true,
            ),
        ];
        for (refs, uid, (kind, name), by_uid, by_name, any) in cases {
            let m = meta(refs.clone());
            assert_eq!(controlled_by_uid(&m, uid), by_uid, "{refs:?} {uid}");
            assert_eq!(
                controlled_by(&m, kind, name),
                by_name,
                "{refs:?} {kind}/{name}"
            );
            assert_eq!(has_owner(&m, kind, name), any, "{refs:?} {kind}/{name}");
        }
        assert!(controller_of(&ObjectMeta::default()).is_none());
    }

    #[test]
    fn labels_annotations_and_images() {
        let mut m = ObjectMeta::default();
        assert!(!is_managed(&m) && revision(&m).is_none());
        m.labels = Some(BTreeMap::from([(
            MANAGED_BY_LABEL.into(),
            MANAGED_BY_AGENT.into(),
        )]));
        assert!(!is_managed(&m));
        m.labels = Some(BTreeMap::from([(
            MANAGED_BY_LABEL.into(),
            MANAGED_BY.into(),
        )]));
        m.annotations = Some(BTreeMap::from([(REVISION_ANNOTATION.into(), "3".into())]));
        assert!(is_managed(&m));
        assert_eq!(revision(&m), Some("3"));
        assert_eq!(managed_selector(), "app.kubernetes.io/managed-by=berth");

        let t = PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![
                    Container {
                        name: "app".into(),
                        image: Some("img:1".into()),
                        ..Default::default()
                    },
                    Container {
                        name: "side".into(),
                        image: Some("other".into()),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
        };
        assert_eq!(template_image(Some(&t)).as_deref(), Some("img:1"));
        assert_eq!(template_image(None), None);
        assert_eq!(template_image(Some(&PodTemplateSpec::default())), None);
    }

    #[test]
    fn a_pod_is_ready_only_with_ready_true() {
        use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
        let pod = |conds: &[(&str, &str)]| Pod {
            status: Some(PodStatus {
                conditions: Some(
                    conds
                        .iter()
                        .map(|(t, s)| PodCondition {
                            type_: (*t).into(),
                            status: (*s).into(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(pod_ready(&pod(&[
            ("PodScheduled", "True"),
            ("Ready", "True")
        ])));
        assert!(!pod_ready(&pod(&[("Ready", "False")])));
        assert!(!pod_ready(&pod(&[("ContainersReady", "True")])));
        assert!(!pod_ready(&Pod::default()));
    }
}
