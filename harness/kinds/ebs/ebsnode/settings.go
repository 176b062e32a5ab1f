// Package ebsnode is a storage node of the AWS-EBS-2011 replay (chaoslab
// agent ebs-node): it holds replicas of small volumes as files in its own
// folder, serves reads and writes for the volumes it is primary for, and
// mirrors every write to the volume's mirror over a TCP connection (through
// the harness's fault proxy). When a mirror does not acknowledge in time
// the node takes it for failed, the volume is stuck, and the node asks the
// control plane (harness/kinds/ebs/ebscontrol) for a slot on another node, copies
// the volume there and has itself confirmed as primary with the new
// mirror; a search that fails is tried again after a back-off.
package ebsnode

import (
	"math/rand/v2"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Settings are the storage nodes', part of the workload's settings.
type Settings struct {
	// VolumeKiB is each volume's size (a file on the node's disk).
	VolumeKiB int `yaml:"volume_kib" json:"volume_kib"`
	// WriteBytes is each write's size.
	WriteBytes int `yaml:"write_bytes" json:"write_bytes"`
	// WriteEvery is each volume's write period on its primary.
	WriteEvery lab.Duration `yaml:"write_every" json:"write_every"`
	// MirrorTimeout is how long a primary waits for its mirror's ack (a
	// full copy to a new mirror gets CopyFactor times as long); a later
	// ack is a lost peer.
	MirrorTimeout lab.Duration `yaml:"mirror_timeout" json:"mirror_timeout"`
	// SearchBackoff is the first wait after a failed search for space.
	SearchBackoff lab.Duration `yaml:"search_backoff" json:"search_backoff"`
	// SearchBackoffMax caps the wait, which doubles after each failure.
	SearchBackoffMax lab.Duration `yaml:"search_backoff_max" json:"search_backoff_max"`
	// SearchJitter draws each wait uniformly between half and all of it,
	// so that nodes that lost their peers together do not search together.
	SearchJitter bool `yaml:"search_jitter" json:"search_jitter"`
}

// CopyFactor: a full copy of a volume to a new mirror gets this many
// mirror timeouts.
const CopyFactor = 4

// Bounds of the settings.
const (
	// MaxVolumeKiB keeps a node's volumes small beside the machine's disk.
	MaxVolumeKiB = 4096
	// MaxWriteBytes: one write is one frame the mirror reads whole.
	MaxWriteBytes = 1 << 20
)

// DefaultSettings are the 2011 nodes': a search tried again almost at once.
func DefaultSettings() Settings {
	return Settings{VolumeKiB: 64, WriteBytes: 4096, WriteEvery: lab.Duration(250 * time.Millisecond),
		MirrorTimeout: lab.Duration(time.Second), SearchBackoff: lab.Duration(20 * time.Millisecond),
		SearchBackoffMax: lab.Duration(20 * time.Millisecond)}
}

// Check validates the settings.
func (s *Settings) Check() []lab.Problem {
	var c lab.Checks
	c.Need(s.VolumeKiB >= 1 && s.VolumeKiB <= MaxVolumeKiB, "volume_kib", "want 1 to %d (small volumes: every node holds several on this machine's disk), got %d", MaxVolumeKiB, s.VolumeKiB)
	c.Need(s.WriteBytes >= 1 && s.WriteBytes <= MaxWriteBytes, "write_bytes", "want 1 to %d, got %d", MaxWriteBytes, s.WriteBytes)
	c.Need(s.WriteBytes <= s.VolumeKiB*1024, "write_bytes", "%d bytes do not fit in a volume of %d KiB", s.WriteBytes, s.VolumeKiB)
	c.Msg("write_every", lab.CheckDuration(s.WriteEvery, time.Millisecond, ""))
	c.Msg("mirror_timeout", lab.CheckDuration(s.MirrorTimeout, time.Millisecond, ""))
	c.Msg("search_backoff", lab.CheckDuration(s.SearchBackoff, time.Millisecond, "the least wait: a search with none spins on the control plane"))
	c.Need(s.SearchBackoffMax >= s.SearchBackoff, "search_backoff_max", "%s is less than search_backoff %s", s.SearchBackoffMax, s.SearchBackoff)
	return c
}

// Delay is the wait after the attempt-th failed search in a row.
func (s *Settings) Delay(attempt int, r *rand.Rand) time.Duration {
	d := s.SearchBackoff.D()
	for i := 1; i < attempt && d < s.SearchBackoffMax.D(); i++ {
		d *= 2
	}
	d = min(d, s.SearchBackoffMax.D())
	if s.SearchJitter && d > 1 {
		d = d/2 + time.Duration(r.Int64N(int64(d/2)+1))
	}
	return d
}
