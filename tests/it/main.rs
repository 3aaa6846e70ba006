//! berth integration tests: one binary, one local control plane.
