//go:build tools

// Package tools pins the kwok command so that `go mod tidy` keeps its deps.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
