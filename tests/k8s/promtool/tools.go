//go:build tools

// Package tools pins the commands built from github.com/prometheus/prometheus
// (promtool, and the prometheus server the alerting test runs) so that
// `go mod tidy` keeps every dependency they need.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
