//! Foreign EndpointSlices (issue 52): an EndpointSlice that the
//! EndpointSlice controller does not manage (one written by hand or by the
//! mirroring controller, for a Service without a selector) sends the
//! Service's traffic wherever its endpoints say, the Runtime's pods
//! included. The agent has no Pod permission, so it cannot know pod
//! addresses: it reads each endpoint's `targetRef` and matches the pod
//! name against the names the Runtime's ReplicaSets and Jobs give their
//! pods (a controller's pods are named from `<owner>-` and five random
//! characters). A slice that lists a pod by address alone, or names one
//! in another namespace, is not seen: the check reports what the slice
//! says, not where its addresses lead.

use std::collections::HashSet;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::hashed::LabelHashes;

/// The EndpointSlice controller's `endpointslice.kubernetes.io/managed-by`
/// value: its slices follow a Service's selector (judged as the Service
/// is) and are left out of the agent's watch.
pub const CONTROLLER_MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// The label naming a slice's manager.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";

/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The label selector of the agent's EndpointSlice watch: every slice the
/// EndpointSlice controller does not manage.
pub fn watch_selector() -> String {
    format!("{MANAGED_BY_LABEL}!={CONTROLLER_MANAGED_BY}")
}

/// The random characters a generated name ends with.
const GENERATED_SUFFIX_LEN: usize = 5;

/// The longest base the apiserver keeps of a `generateName` (63 minus the
/// random suffix).
const MAX_GENERATED_BASE_LEN: usize = 63 - GENERATED_SUFFIX_LEN;

/// The most endpoints an EndpointSlice holds (the apiserver's validation).
pub const MAX_ENDPOINTS: usize = 1000;

/// What a controller's pods' names start with: its name and a dash, cut
/// as the apiserver cuts a `generateName`.
pub fn generated_base(owner: &str) -> String {
    let mut base = format!("{owner}-");
    if base.len() > MAX_GENERATED_BASE_LEN {
        let mut end = MAX_GENERATED_BASE_LEN;
        while !base.is_char_boundary(end) {
            end -= 1;
        }
        base.truncate(end);
    }
    base
}

/// The hashed bases of the pods `owners` (ReplicaSet and Job names in
/// `namespace`) create.
pub fn pod_bases<'a>(
    h: &LabelHashes,
    namespace: &str,
    owners: impl IntoIterator<Item = &'a str>,
) -> HashSet<u64> {
    owners
        .into_iter()
        .map(|o| h.target(namespace, &generated_base(o)))
        .collect()
}

/// Someone else's EndpointSlice, reduced to the pods it names (hashed
/// generated bases, one per controller named).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignSlice {
    targets: Box<[u64]>,
}

impl ForeignSlice {
    /// The slice reduced; `None` when it names no pod of its namespace.
    pub fn of(slice: &EndpointSlice, h: &LabelHashes) -> Option<Self> {
        let ns = slice.metadata.namespace.as_deref().unwrap_or_default();
        let mut targets: Vec<u64> = slice
            .endpoints
            .iter()
            .take(MAX_ENDPOINTS)
            .filter_map(|e| e.target_ref.as_ref())
            .filter(|r| r.kind.as_deref().is_none_or(|k| k == "Pod"))
            .filter(|r| r.namespace.as_deref().is_none_or(|n| n == ns))
            .filter_map(|r| {
                let name = r.name.as_deref()?;
                let cut = name.len().checked_sub(GENERATED_SUFFIX_LEN)?;
                name.is_char_boundary(cut)
                    .then(|| h.target(ns, &name[..cut]))
            })
            .collect();
        targets.sort_unstable();
        targets.dedup();
        (!targets.is_empty()).then(|| ForeignSlice {
            targets: targets.into(),
        })
    }

    /// Whether it names a pod of one of `bases` ([`pod_bases`]).
    pub fn lists(&self, bases: &HashSet<u64>) -> bool {
        self.targets.iter().any(|t| bases.contains(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::discovery::v1::Endpoint;

    fn slice(ns: &str, targets: &[(Option<&str>, Option<&str>, &str)]) -> EndpointSlice {
        EndpointSlice {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                namespace: Some(ns.into()),
                name: Some("manual".into()),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: targets
                .iter()
                .map(|(kind, target_ns, name)| Endpoint {
                    addresses: vec!["10.0.0.1".into()],
                    target_ref: Some(ObjectReference {
                        kind: kind.map(str::to_string),
                        namespace: target_ns.map(str::to_string),
                        name: Some(name.to_string()),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
            ports: None,
        }
    }

    #[test]
    fn a_slice_lists_the_pods_of_the_owners_it_names() {
        let h = LabelHashes::default();
        let bases = pod_bases(&h, "team", ["web-6d4cf56db6", "web-job-migrate"]);
        let yes = [
            slice("team", &[(Some("Pod"), None, "web-6d4cf56db6-x7k2p")]),
            slice("team", &[(None, Some("team"), "web-job-migrate-abcde")]),
            slice(
                "team",
                &[
                    (Some("Pod"), None, "other-1-zzzzz"),
                    (Some("Pod"), None, "web-6d4cf56db6-qqqqq"),
                ],
            ),
        ];
        let no = [
            slice("team", &[(Some("Pod"), None, "web-6d4cf56db7-x7k2p")]),
            slice("team", &[(Some("Node"), None, "web-6d4cf56db6-x7k2p")]),
            slice(
                "team",
                &[(Some("Pod"), Some("other"), "web-6d4cf56db6-x7k2p")],
            ),
            slice("other", &[(Some("Pod"), None, "web-6d4cf56db6-x7k2p")]),
        ];
        for s in yes {
            let f = ForeignSlice::of(&s, &h).expect("names pods");
            assert!(f.lists(&bases), "{s:?}");
        }
        for s in no {
            assert!(
                ForeignSlice::of(&s, &h).is_none_or(|f| !f.lists(&bases)),
                "{s:?}"
            );
        }
        assert!(ForeignSlice::of(&slice("team", &[(Some("Pod"), None, "abc")]), &h).is_none());
    }

    #[test]
    fn a_long_owner_name_is_cut_as_the_apiserver_cuts_generated_names() {
        let owner = "a".repeat(70);
        assert_eq!(generated_base(&owner).len(), 58);
        assert_eq!(generated_base("web-1"), "web-1-");
        let h = LabelHashes::default();
        let pod = format!("{}{}", &generated_base(&owner), "abcde");
        assert_eq!(pod.len(), 63);
        let f = ForeignSlice::of(&slice("ns", &[(Some("Pod"), None, &pod)]), &h).expect("pod");
        assert!(f.lists(&pod_bases(&h, "ns", [owner.as_str()])));
    }

    #[test]
    fn what_is_kept_is_one_hash_per_owner_named() {
        let h = LabelHashes::default();
        let names: Vec<String> = (0..500).map(|i| format!("web-1-{i:05}")).collect();
        let targets: Vec<(Option<&str>, Option<&str>, &str)> = names
            .iter()
            .map(|n| (Some("Pod"), None, n.as_str()))
            .collect();
        let f = ForeignSlice::of(&slice("ns", &targets), &h).expect("pods");
        assert_eq!(f.targets.len(), 1);
    }
}
