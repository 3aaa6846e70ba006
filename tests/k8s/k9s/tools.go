//go:build tools

// Package tools pins the k9s command built from github.com/derailed/k9s so
// that `go mod tidy` keeps every dependency it needs.
package tools

import (
	_ "github.com/derailed/k9s"
)
