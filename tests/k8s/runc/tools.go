//go:build tools

// Package tools pins runc, the OCI runtime behind the real node's `runc`
// and `bounded-runc` handlers (built with cgo and libseccomp).
package tools

import _ "github.com/opencontainers/runc"
