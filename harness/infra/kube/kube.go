// Package kube is chaoslab's side of the test cluster that
// scripts/kube-up.sh starts and scripts/kube-down.sh removes
// (docs/kubernetes.md): a single-node Kubernetes in a network and mount
// namespace of its own, its API server reached from the host through a
// forwarder on a loopback port.
package kube

import (
	"os"
	"path/filepath"

	"github.com/chaoslab/chaoslab/harness/infra/images"
)

// Dir is the cluster's folder: $CHAOSLAB_KUBE_DIR, else out/kube in
// chaoslab's source tree (what the scripts use).
func Dir() (string, error) {
	if d := os.Getenv("CHAOSLAB_KUBE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	src, err := images.FindSourceDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(src, "out", "kube"), nil
}

// Kubeconfig is the kubeconfig kube-up.sh writes in dir: cluster-admin
// (a client certificate of group system:masters), the server on the
// host's loopback, the certificates inline. dir/bin/kubectl is kubectl
// with it, its discovery cache in dir (not ~/.kube).
func Kubeconfig(dir string) string { return filepath.Join(dir, "kubeconfig") }
