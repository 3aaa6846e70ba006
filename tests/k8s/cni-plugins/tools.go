//go:build tools

// Package tools pins the CNI plugins a real node uses: a bridge (with no
// gateway and no masquerade: pod traffic stays on this machine), host-local
// addresses, loopback and portmap.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
