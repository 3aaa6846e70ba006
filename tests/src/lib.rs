//! The local control plane and the integration-test harness.
