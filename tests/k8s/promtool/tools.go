//go:build tools

// Package tools pins the promtool command built from
// github.com/prometheus/prometheus so that `go mod tidy` keeps every
// dependency it needs.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
