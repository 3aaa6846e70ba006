//! A Deployment as the agent's cache keeps it (issue 32): like
//! [`super::KeptReplicaSet`], the fields [`super::deployment`] keeps, in
//! structs their own size instead of a k8s-openapi `Deployment` (2.4 KB
//! inline, and a 2.1 KB `Container` for the one image read). At scale S
//! the Deployments were the largest kind in the agent's live heap (10 MB,
//! README "Where the memory goes").
//!
//! The apply step compares a Runtime's own Deployment with its whole body
//! (`bodies`), never with this; [`KeptDeployment::whole`] gives back
//! exactly the reduced `Deployment` for what reads the cache (status, the
//! analysis, the triggers), one object at a time.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::kept_template::KeptTemplate;

/// A Deployment reduced to what is read, in structs of its own size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptDeployment {
    /// A Runtime's own: everything but managedFields and kubectl's
    /// last-applied copy; anyone else's: what `reduce::foreign_meta` keeps.
    metadata: ObjectMeta,
    spec: Option<KeptSpec>,
    /// A Runtime's own: whole (conditions and counts); anyone else's: the
    /// counts.
    status: Option<DeploymentStatus>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct KeptSpec {
    replicas: Option<i32>,
    template: KeptTemplate,
}

impl From<Deployment> for KeptDeployment {
    fn from(mut d: Deployment) -> Self {
        super::deployment(&mut d);
        KeptDeployment {
            metadata: d.metadata,
            spec: d.spec.map(|s| KeptSpec {
                replicas: s.replicas,
                template: KeptTemplate::from(s.template),
            }),
            status: d.status,
        }
    }
}

impl KeptDeployment {
    /// The Deployment as `reduce::deployment` left it.
    pub fn whole(&self) -> Deployment {
        Deployment {
            metadata: self.metadata.clone(),
            spec: self.spec.as_ref().map(|s| DeploymentSpec {
                replicas: s.replicas,
                template: s.template.whole(),
                ..Default::default()
            }),
            status: self.status.clone(),
        }
    }
}

super::kept_template::as_kind!(KeptDeployment, Deployment);

#[cfg(test)]
mod tests {
    use super::super::tests::{busy_deployment, controller};
    use super::*;
    use k8s_openapi::api::apps::v1::DeploymentCondition;
    use kube::Resource;

    fn reduced(mut d: Deployment) -> Deployment {
        super::super::deployment(&mut d);
        d
    }

    #[test]
    fn whole_gives_back_exactly_the_reduced_deployment() {
        let owned = busy_deployment(controller(
            berth_shared::api::API_VERSION,
            "Runtime",
            "u-rt",
        ));
        let mut with_conditions = owned.clone();
        with_conditions.status.as_mut().unwrap().conditions = Some(vec![DeploymentCondition {
            type_: "Progressing".into(),
            status: "False".into(),
            reason: Some("ProgressDeadlineExceeded".into()),
            ..Default::default()
        }]);
        let shapes = [
            owned.clone(),
            with_conditions,
            busy_deployment(controller("example.com/v1", "Operator", "op")),
            busy_deployment(None),
            Deployment::default(),
            Deployment {
                spec: Some(DeploymentSpec::default()),
                status: Some(DeploymentStatus::default()),
                ..owned
            },
        ];
        for d in shapes {
            let kept = KeptDeployment::from(d.clone());
            assert_eq!(kept.whole(), reduced(d.clone()), "{d:?}");
        }
    }

    #[test]
    fn it_is_a_deployment_to_the_api_and_smaller_than_one() {
        assert_eq!(KeptDeployment::kind(&()), "Deployment");
        assert_eq!(KeptDeployment::api_version(&()), "apps/v1");
        assert_eq!(
            KeptDeployment::url_path(&(), Some("team")),
            Deployment::url_path(&(), Some("team"))
        );
        assert!(
            std::mem::size_of::<KeptDeployment>() * 3 < std::mem::size_of::<Deployment>(),
            "{} vs {}",
            std::mem::size_of::<KeptDeployment>(),
            std::mem::size_of::<Deployment>()
        );
    }
}
