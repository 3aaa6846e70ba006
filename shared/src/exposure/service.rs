//! Foreign Services (issue 52): a Service that is not the Runtime's own
//! and whose selector selects its pods gives them another name, another
//! port or another way in (a NodePort, a LoadBalancer) than the Runtime's
//! `expose` says. Services select pods of their own namespace by
//! `spec.selector` (a subset of the pod's labels); a Service without one
//! (or with an empty one, which the apiserver stores as none) or of type
//! ExternalName selects no pod.

use k8s_openapi::api::core::v1::ServiceSpec;

use super::hashed::LabelHashes;
use super::hashed::PodLabels;
use crate::patterns::MAX_MAP_ENTRIES;

/// The most labels a pod of a Runtime can carry: its `podMetadata.labels`
/// ([`MAX_MAP_ENTRIES`]), berth's own and the controllers' (the test below
/// counts them). A selector of more pairs than this selects none of them,
/// and is kept as selecting nothing: what the agent keeps of a Service is
/// bounded by this, whatever its selector holds.
pub const MAX_POD_LABELS: usize = MAX_MAP_ENTRIES as usize + 16;

/// Someone else's Service, reduced to its selector's pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignService {
    /// `None`: it selects no pod of any Runtime.
    selector: Option<Box<[u64]>>,
}

impl ForeignService {
    /// The Service's spec reduced.
    pub fn of(spec: Option<&ServiceSpec>, h: &LabelHashes) -> Self {
        let selector = spec
            .filter(|s| s.type_.as_deref() != Some("ExternalName"))
            .and_then(|s| s.selector.as_ref())
            .filter(|s| !s.is_empty() && s.len() <= MAX_POD_LABELS)
            .map(|s| h.pairs(s).into());
        ForeignService { selector }
    }

    /// Whether it selects any of `pods`.
    pub fn selects(&self, pods: &PodLabels) -> bool {
        self.selector
            .as_deref()
            .is_some_and(|s| pods.sets().iter().any(|l| l.has_all(s)))
    }

    /// Whether it selects any pod at all (one that selects none need not
    /// be kept).
    pub fn selects_anything(&self) -> bool {
        self.selector.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::schema::{RESERVED_POD_LABEL_PREFIXES, RESERVED_POD_LABELS};
    use crate::decide::Identity;
    use crate::render::labels::{Component, common};
    use std::collections::BTreeMap;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn spec(type_: Option<&str>, selector: Option<BTreeMap<String, String>>) -> ServiceSpec {
        ServiceSpec {
            type_: type_.map(str::to_string),
            selector,
            ..Default::default()
        }
    }

    #[test]
    fn a_service_selects_the_pods_whose_labels_hold_its_selector() {
        let h = LabelHashes::default();
        let pods = PodLabels::new(
            &h,
            [&map(&[
                ("berth.dev/runtime", "web"),
                ("app", "web"),
                ("tier", "front"),
            ])],
        );
        let selecting = [
            spec(None, Some(map(&[("app", "web")]))),
            spec(
                Some("LoadBalancer"),
                Some(map(&[("berth.dev/runtime", "web")])),
            ),
            spec(
                Some("NodePort"),
                Some(map(&[("app", "web"), ("tier", "front")])),
            ),
        ];
        let not = [
            spec(None, None),
            spec(None, Some(BTreeMap::new())),
            spec(None, Some(map(&[("app", "api")]))),
            spec(None, Some(map(&[("app", "web"), ("x", "y")]))),
            spec(Some("ExternalName"), Some(map(&[("app", "web")]))),
        ];
        for s in selecting {
            assert!(ForeignService::of(Some(&s), &h).selects(&pods), "{s:?}");
        }
        for s in not {
            assert!(!ForeignService::of(Some(&s), &h).selects(&pods), "{s:?}");
        }
        assert!(!ForeignService::of(None, &h).selects(&pods));
    }

    #[test]
    fn a_selector_longer_than_any_berth_pod_s_labels_is_kept_as_selecting_nothing() {
        // berth's labels, the controllers' (pod-template-hash, the Job's
        // four) and podMetadata's: no pod of a Runtime carries more.
        let id = Identity {
            project: "p".into(),
            environment: "e".into(),
            application: "a".into(),
            service: "s".into(),
        };
        let controllers = RESERVED_POD_LABELS.len() + 2 * RESERVED_POD_LABEL_PREFIXES.len();
        assert!(
            common("web", &id, Component::Job).len() + controllers
                <= MAX_POD_LABELS - MAX_MAP_ENTRIES as usize
        );
        let h = LabelHashes::default();
        let huge: BTreeMap<String, String> = (0..=MAX_POD_LABELS)
            .map(|i| (format!("k{i}"), "v".to_string()))
            .collect();
        let s = ForeignService::of(Some(&spec(None, Some(huge))), &h);
        assert!(!s.selects_anything());
    }
}
