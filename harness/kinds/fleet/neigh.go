package fleet

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NeighPath is the kernel's limit on neighbour (ARP) entries, shared by
// every network namespace of the machine.
const NeighPath = "/proc/sys/net/ipv4/neigh/default/gc_thresh3"

// CheckNeighbours says whether the machine's neighbour table holds a full
// mesh of n containers on one bridge (each container resolves every other
// one: about n*n entries). A table too small overflows ("neighbor table
// overflow!" in the kernel log) and the last containers to start cannot
// reach anyone, which would look like the incident but is the lab's fault.
func CheckNeighbours(n int) error {
	b, err := os.ReadFile(NeighPath)
	if err != nil {
		return nil // not Linux, or not readable: nothing to say
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	if need := n * n; limit < need {
		return fmt.Errorf("a fleet of %d containers needs about %d neighbour (ARP) entries and this machine allows %d (%s): "+
			"raise it (as root: sysctl -w net.ipv4.neigh.default.gc_thresh1=4096 net.ipv4.neigh.default.gc_thresh2=8192 net.ipv4.neigh.default.gc_thresh3=16384; scripts/setup.sh does) or use --backend local",
			n, need, limit, NeighPath)
	}
	return nil
}
