// Command pause is the real node's pod sandbox process: it holds the pod's
// namespaces and waits for a signal, like Kubernetes' own pause image (which
// this machine cannot pull: no registry).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
