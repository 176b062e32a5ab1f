// Command pause is the process of a pod's sandbox (its "pause" container)
// for the test cluster of scripts/kube-up.sh, after Kubernetes' own
// build/pause: it holds the pod's namespaces, reaps the zombies of the
// pod's processes when it is PID 1, and exits on SIGINT or SIGTERM. It is
// built static and packed into the FROM scratch image chaoslab/pause by
// harness/infra/images, since no registry is reachable to pull one.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (chaoslab)")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not PID 1")
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
