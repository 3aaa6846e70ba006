//go:build tools

// Package tools pins the helm command built from helm.sh/helm/v4 so that
// `go mod tidy` keeps every dependency it needs.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
