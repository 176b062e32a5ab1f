// Package plugins links every plug-in of chaoslab (systems, placements,
// workload kinds, faults): import it for its side effects where scenarios
// are loaded or run.
package plugins

import (
	_ "github.com/chaoslab/chaoslab/harness/faults"
	_ "github.com/chaoslab/chaoslab/harness/kinds/dblb"
	_ "github.com/chaoslab/chaoslab/harness/kinds/ebs"
	_ "github.com/chaoslab/chaoslab/harness/kinds/execclient"
	_ "github.com/chaoslab/chaoslab/harness/kinds/fleet"
	_ "github.com/chaoslab/chaoslab/harness/kinds/zkmirror"
	_ "github.com/chaoslab/chaoslab/harness/placement/container"
	_ "github.com/chaoslab/chaoslab/harness/placement/kubernetes"
	_ "github.com/chaoslab/chaoslab/harness/placement/local"
	_ "github.com/chaoslab/chaoslab/harness/systems/consul"
	_ "github.com/chaoslab/chaoslab/harness/systems/etcd"
	_ "github.com/chaoslab/chaoslab/harness/systems/zookeeper"
)
