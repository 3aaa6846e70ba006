//! What the kept workload types ([`super::KeptReplicaSet`],
//! [`super::KeptDeployment`]) share: a reduced pod template in structs of
//! its own size, and the `Resource` impl that makes a kept type the kind it
//! stands for to kube (its store, owner index and triggers).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

type Map = Option<CompactMap>;

/// A label or annotation map as a sorted slice of its entries. A
/// `BTreeMap` of one to eleven entries is one B-tree leaf of 544 bytes
/// (640 in jemalloc's size classes) before any string; this is 32 bytes
/// an entry. Two per kept Deployment and ReplicaSet: at scale S 4,000
/// objects' worth (issue 32).
#[derive(Clone, Debug, Default, PartialEq)]
struct CompactMap(Box<[(Box<str>, Box<str>)]>);

impl From<BTreeMap<String, String>> for CompactMap {
    fn from(map: BTreeMap<String, String>) -> Self {
        CompactMap(
            map.into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
                .collect(),
        )
    }
}

impl CompactMap {
    fn whole(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

/// A pod template as `reduce::reduce_template` leaves it: berth's labels,
/// the profile annotation, the class and the first container's name and
/// image (a k8s-openapi `PodSpec` is 1.4 KB inline and a `Container`
/// 2.1 KB, for those four strings).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptTemplate {
    /// `metadata`'s labels and annotations (`None`: the template had none).
    metadata: Option<(Map, Map)>,
    spec: Option<KeptPodSpec>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct KeptPodSpec {
    runtime_class_name: Option<String>,
    /// The first container's name and image.
    container: Option<(String, Option<String>)>,
}

impl From<PodTemplateSpec> for KeptTemplate {
    /// From a template already reduced (what is not read is dropped).
    fn from(t: PodTemplateSpec) -> Self {
        KeptTemplate {
            metadata: t.metadata.map(|m| {
                (
                    m.labels.map(CompactMap::from),
                    m.annotations.map(CompactMap::from),
                )
            }),
            spec: t.spec.map(|s| KeptPodSpec {
                runtime_class_name: s.runtime_class_name,
                container: s.containers.into_iter().next().map(|c| (c.name, c.image)),
            }),
        }
    }
}

impl KeptTemplate {
    /// The reduced template it was made from.
    pub fn whole(&self) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: self
                .metadata
                .as_ref()
                .map(|(labels, annotations)| ObjectMeta {
                    labels: labels.as_ref().map(CompactMap::whole),
                    annotations: annotations.as_ref().map(CompactMap::whole),
                    ..Default::default()
                }),
            spec: self.spec.as_ref().map(|s| PodSpec {
                runtime_class_name: s.runtime_class_name.clone(),
                containers: s
                    .container
                    .iter()
                    .map(|(name, image)| Container {
                        name: name.clone(),
                        image: image.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
        }
    }
}

/// `impl Resource for $kept` as the namespaced kind `$kind`, its metadata
/// in the field `metadata`.
macro_rules! as_kind {
    ($kept:ty, $kind:ty) => {
        impl kube::Resource for $kept {
            type DynamicType = ();
            type Scope = kube::core::NamespaceResourceScope;

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                <$kind as kube::Resource>::kind(&())
            }

            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                <$kind as kube::Resource>::group(&())
            }

            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                <$kind as kube::Resource>::version(&())
            }

            fn api_version(_: &()) -> std::borrow::Cow<'_, str> {
                <$kind as kube::Resource>::api_version(&())
            }

            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                <$kind as kube::Resource>::plural(&())
            }

            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }

            fn meta_mut(
                &mut self,
            ) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}
pub(super) use as_kind;
