// The real node's test application and pause binary (tests/it/real_node.rs):
// the standard library only, built static (CGO_ENABLED=0).
module berth.dev/localcluster/testapp

go 1.26.0
