//! The metadata the store keeps of its slim kinds (Pods, Deployments,
//! ReplicaSets), instead of a k8s-openapi `ObjectMeta`: identity, the
//! creation time, the controller owners' kinds and names, and the labels
//! and annotations [`super::compact`] left, as shared maps
//! ([`super::intern`]). `ObjectMeta` is ~0.3 kB inline of mostly absent
//! fields, and its maps were copied per object.
//!
//! Who reads what: keys and the owner index (namespace, name, owners), the
//! shared analysis (owner, labels, berth's annotations), the rollout
//! (names, the revision annotation), relations and the retire keys (the
//! Runtime label, owners), Details until the whole object is read (all
//! of it, through [`SlimMeta::to_meta`]).

use std::collections::BTreeMap;

use berth_shared::analysis::Owner;
use berth_shared::api::meta::{MANAGED_BY, MANAGED_BY_LABEL, REVISION_ANNOTATION};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::api::ObjectMeta;

use super::ObjKey;
use super::intern::{self, Labels};

/// An owner reference as kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlimOwner {
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
    /// `controller: true`.
    pub controller: bool,
}

/// What the store keeps of a slim kind's metadata.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimMeta {
    /// `namespace`.
    pub namespace: Option<String>,
    /// `name`.
    pub name: Option<String>,
    /// `uid`.
    pub uid: Option<String>,
    /// `creationTimestamp`.
    pub creation_timestamp: Option<Time>,
    /// `labels` (shared, empty when absent).
    pub labels: Labels,
    /// The annotations [`super::compact`] keeps: berth's own and the
    /// Deployment revision (shared, empty when absent).
    pub annotations: Labels,
    /// `ownerReferences`: kind, name and whether it is the controller.
    pub owners: Box<[SlimOwner]>,
}

impl SlimMeta {
    /// The store's key.
    pub fn key(&self) -> ObjKey {
        (
            self.namespace.clone().unwrap_or_default(),
            self.name.clone().unwrap_or_default(),
        )
    }

    /// `name`, or empty.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// One label.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// One annotation kept.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }

    /// `deployment.kubernetes.io/revision`.
    pub fn revision(&self) -> Option<&str> {
        self.annotation(REVISION_ANNOTATION)
    }

    /// Whether it carries `app.kubernetes.io/managed-by: berth` (as
    /// [`berth_shared::api::meta::is_managed`] reads it).
    pub fn is_managed(&self) -> bool {
        self.label(MANAGED_BY_LABEL) == Some(MANAGED_BY)
    }

    /// Whether one of its owners is the `kind` called `name` (as
    /// [`berth_shared::api::meta::has_owner`] reads `ObjectMeta`).
    pub fn has_owner(&self, kind: &str, name: &str) -> bool {
        self.owners.iter().any(|o| o.kind == kind && o.name == name)
    }

    /// The controller owner (the first one marked so), as the shared
    /// analysis takes it.
    pub fn controller(&self) -> Option<Owner> {
        self.owners.iter().find(|o| o.controller).map(|o| Owner {
            kind: o.kind.clone(),
            name: o.name.clone(),
        })
    }

    /// Metadata with what is kept (an owner reference without its
    /// `apiVersion` and `uid`).
    pub fn to_meta(&self) -> ObjectMeta {
        ObjectMeta {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            creation_timestamp: self.creation_timestamp.clone(),
            labels: intern::to_opt(&self.labels),
            annotations: intern::to_opt(&self.annotations),
            owner_references: (!self.owners.is_empty()).then(|| {
                self.owners
                    .iter()
                    .map(|o| OwnerReference {
                        kind: o.kind.clone(),
                        name: o.name.clone(),
                        controller: o.controller.then_some(true),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }
}

impl From<ObjectMeta> for SlimMeta {
    /// Takes the kept fields (moved); the maps are interned.
    fn from(m: ObjectMeta) -> Self {
        SlimMeta {
            namespace: m.namespace,
            name: m.name,
            uid: m.uid,
            creation_timestamp: m.creation_timestamp,
            labels: intern::opt(m.labels),
            annotations: intern::opt(m.annotations),
            owners: m
                .owner_references
                .into_iter()
                .flatten()
                .map(|r| SlimOwner {
                    kind: r.kind,
                    name: r.name,
                    controller: r.controller == Some(true),
                })
                .collect(),
        }
    }
}

/// A pod template's labels overlaid with the object's own (what
/// [`berth_shared::analysis::Workload::labels`] holds), shared: the
/// template's own map when the object adds nothing to it.
pub fn overlay(template: &Labels, own: &Labels) -> Labels {
    if own.is_empty() {
        return template.clone();
    }
    if template.is_empty() {
        return own.clone();
    }
    let mut merged: BTreeMap<String, String> = template.as_ref().clone();
    merged.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    intern::labels(merged)
}

/// The kinds kept with a [`SlimMeta`].
pub trait HasSlimMeta {
    /// The metadata kept.
    fn slim_meta(&self) -> &SlimMeta;
}
