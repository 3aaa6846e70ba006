//! The shipped workload RuntimeClass policy
//! (`assets/admission/workload-runtimeclass-policy.yaml`): a class that a
//! RuntimeGrant names is set only by the agent, or by the built-in
//! controllers for an owner that was itself checked. The adversaries are a
//! restricted user and a ServiceAccount of their own, both with full RBAC
//! on every workload kind: only the policy stops them.
//!
//! No agent runs in this test: the policy is enforced by the API server, so
//! it holds while the agent is down. The policy and binding are the shipped
//! ones, renamed, with the binding narrowed to this test's namespaces and
//! RuntimeGrants (parallel tests never see it), and with the local
//! cluster's controller-manager identity added to the controllers (it runs
//! with one credential, the admin certificate: tests/localcluster).

mod class;
mod controllers;
mod jobs;
mod rollout;
mod setup;
