//! Who owns an object: only objects whose controller owner reference points
//! at the Runtime's uid are ever changed or deleted by the agent.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Whether `meta` has a controller owner reference to the Runtime `uid`.
pub fn owned_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references.as_ref().is_some_and(|refs| {
        refs.iter()
            .any(|r| r.kind == "Runtime" && r.uid == uid && r.controller == Some(true))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    #[test]
    fn only_controller_refs_to_the_uid_count() {
        let mut meta = ObjectMeta::default();
        assert!(!owned_by(&meta, "u"));
        meta.owner_references = Some(vec![OwnerReference {
            kind: "Runtime".into(),
            uid: "u".into(),
            controller: Some(false),
            ..Default::default()
        }]);
        assert!(!owned_by(&meta, "u"));
        meta.owner_references = Some(vec![OwnerReference {
            kind: "Runtime".into(),
            uid: "u".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        assert!(owned_by(&meta, "u"));
        assert!(!owned_by(&meta, "other"));
    }
}
