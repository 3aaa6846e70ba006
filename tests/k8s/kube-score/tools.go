//go:build tools

// Package tools pins the kube-score command built from
// github.com/zegl/kube-score so that `go mod tidy` keeps every dependency it
// needs.
package tools

import (
	_ "github.com/zegl/kube-score/cmd/kube-score"
)
