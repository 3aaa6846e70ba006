//go:build tools

// Package tools pins the commands built from containerd's Go module for the
// local cluster's real nodes (containerd with its CRI plugin, the runc shim
// and ctr, which imports the pause and test images).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
