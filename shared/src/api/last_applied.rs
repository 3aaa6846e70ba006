//! `status.lastApplied`: what a held Runtime's workloads are kept at,
//! kept compact in memory.
//!
//! The record is parts of k8s-openapi objects (a Deployment, CronJobs, an
//! autoscaler's spec). Parsed into those structs it weighs about 5 KB per
//! Runtime for about 0.9 KB of JSON (measured at S/4, issue 52: 2.5 MB of
//! the agent's live heap at 500 Runtimes), and every cached Runtime, every
//! status the agent remembers sending and every console's copy carries it,
//! while only a held Runtime's reconcile ever reads it. So [`LastApplied`]
//! keeps the record as its canonical JSON text (serialized from the typed
//! [`LastAppliedParts`], so two records are equal exactly when their
//! parts are) and parses it where a hold reads it
//! ([`LastApplied::parts`]). On the wire it is the same object as before:
//! the CRD's schema and every stored status are unchanged.

use std::borrow::Cow;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerSpec;
use k8s_openapi::api::batch::v1::CronJob;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::schema;

/// The tenant's part of a Runtime's workloads as the agent last applied
/// it (`berth_shared::render::protect::last_applied`): the Deployment's
/// replica count and the parts of its pod template the spec controls
/// (labels and annotations, class, placement, grace period, image,
/// command, arguments, resources, port numbers), the same of each
/// CronJob with its schedule and Job limits, and the autoscaler's bounds
/// and target. While the Runtime is held (Blocked, being deleted, a
/// dependency not its own) its workloads are kept at this, whoever edits
/// them (`kubectl scale`, an HPA's bounds, a template's image or
/// annotations); everything else about them is the production contract.
///
/// Written by the agent only, through the status subresource (no tenant
/// role names `runtimes/status`, and the shipped admission policy refuses
/// anyone else's write of it): the party a hold is against cannot change
/// what it is held to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LastApplied")]
pub struct LastAppliedParts {
    /// The Deployment, reduced to its replica count and the tenant's part
    /// of its pod template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::preserved_object")]
    pub deployment: Option<Deployment>,
    /// Each CronJob, reduced to its name, schedule, Job limits and the
    /// tenant's part of its pod template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::preserved_list")]
    pub cron_jobs: Vec<CronJob>,
    /// The HorizontalPodAutoscaler's spec, when autoscaling was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::preserved_object")]
    pub autoscaler: Option<HorizontalPodAutoscalerSpec>,
}

/// A [`LastAppliedParts`] held as its canonical JSON (see the module's
/// doc): equal exactly when the parts are, serialized and described
/// (schema) as the parts themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastApplied(Box<str>);

impl LastApplied {
    /// The record of `parts`.
    ///
    /// # Errors
    /// When serde_json refuses the parts (k8s-openapi's objects have
    /// string keys only, so this would be a bug in the types).
    pub fn new(parts: &LastAppliedParts) -> Result<Self, serde_json::Error> {
        Ok(Self(serde_json::to_string(parts)?.into_boxed_str()))
    }

    /// The record's parts, parsed.
    ///
    /// # Errors
    /// Never for a record made by [`LastApplied::new`] or read by
    /// deserializing (both hold JSON serialized from the parts); the
    /// `Result` keeps a bug from becoming a panic.
    pub fn parts(&self) -> Result<LastAppliedParts, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

impl Serialize for LastApplied {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Through the parts, not as raw JSON: the record is also written
        // as YAML (`berth get -o yaml`), which knows no raw JSON.
        self.parts()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LastApplied {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Canonical whatever the writer's key order (the apiserver sorts
        // keys): parsed into the parts, then serialized by them.
        let parts = LastAppliedParts::deserialize(deserializer)?;
        Self::new(&parts).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for LastApplied {
    fn inline_schema() -> bool {
        LastAppliedParts::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        LastAppliedParts::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        LastAppliedParts::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        LastAppliedParts::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use serde_json::json;

    use super::*;

    fn parts(replicas: i32) -> LastAppliedParts {
        LastAppliedParts {
            deployment: Some(Deployment {
                spec: Some(DeploymentSpec {
                    replicas: Some(replicas),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            autoscaler: Some(HorizontalPodAutoscalerSpec {
                max_replicas: 5,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_record_gives_back_its_parts_and_is_written_as_them() {
        let record = LastApplied::new(&parts(3)).unwrap();
        assert_eq!(record.parts().unwrap(), parts(3));
        assert_eq!(
            serde_json::to_value(&record).unwrap(),
            serde_json::to_value(parts(3)).unwrap()
        );
        let yaml = yaml_serde::to_string(&record).unwrap();
        assert!(yaml.contains("replicas: 3"), "{yaml}");
    }

    #[test]
    fn records_are_equal_exactly_when_their_parts_are_whatever_the_key_order() {
        // As the apiserver returns it: keys sorted, not in field order.
        let sorted = json!({
            "autoscaler": {"maxReplicas": 5, "scaleTargetRef": {"kind": "", "name": ""}},
            "deployment": {"spec": {"replicas": 3, "selector": {}, "template": {}}},
        });
        let read: LastApplied = serde_json::from_value(sorted).unwrap();
        assert_eq!(read, LastApplied::new(&parts(3)).unwrap());
        assert_ne!(read, LastApplied::new(&parts(4)).unwrap());
    }

    #[test]
    fn the_schema_is_the_parts_schema() {
        let mut g = SchemaGenerator::default();
        assert_eq!(
            LastApplied::json_schema(&mut g),
            LastAppliedParts::json_schema(&mut SchemaGenerator::default())
        );
        assert_eq!(LastApplied::schema_name(), "LastApplied");
    }
}
