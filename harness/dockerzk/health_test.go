package dockerzk

import "github.com/chaoslab/chaoslab/harness/zkcheck"

// The health rules are in harness/zkcheck; these apply them to members of
// this package.
type status = zkcheck.Status[*Member]

func health(sts []status) (*Member, []*Member, string) { return (&Ensemble{}).check().Health(sts) }

func leaderOf(sts []status) (*Member, error) { return (&Ensemble{}).check().LeaderOf(sts) }
