//go:build tools

// Package tools pins gVisor's runsc and its containerd shim, for the real
// node's `runsc` handler.
package tools

import (
	_ "gvisor.dev/gvisor/runsc"
	_ "gvisor.dev/gvisor/shim"
)
