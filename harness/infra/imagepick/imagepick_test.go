package imagepick

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Every container placement picks in one order: --image, the variable,
// the scenario's, then the first default present.
func TestChooseOrder(t *testing.T) {
	n := lab.ImageNeed{Name: "zookeeper", Defaults: []string{"official:1", "local:1"}}
	has := func(refs ...string) func(string) (bool, error) {
		return func(r string) (bool, error) {
			for _, x := range refs {
				if x == r {
					return true, nil
				}
			}
			return false, nil
		}
	}
	ref, why, _, err := Choose(n, nil, has("local:1"), "present here")
	require.NoError(t, err)
	require.Equal(t, [2]string{"local:1", "default, present here"}, [2]string{ref, why})
	n.Ref = "scenario:1"
	ref, why, _, _ = Choose(n, nil, has(), "present here")
	require.Equal(t, [2]string{"scenario:1", "the scenario's"}, [2]string{ref, why})
	t.Setenv("CHAOSLAB_ZOOKEEPER_IMAGE", "env:1")
	ref, why, _, _ = Choose(n, nil, has(), "present here")
	require.Equal(t, [2]string{"env:1", "CHAOSLAB_ZOOKEEPER_IMAGE"}, [2]string{ref, why})
	ref, why, _, _ = Choose(n, map[string]string{"zookeeper": "flag:1"}, has(), "present here")
	require.Equal(t, [2]string{"flag:1", "--image"}, [2]string{ref, why})

	n = lab.ImageNeed{Name: "etcd", Defaults: []string{"a", "b"}}
	ref, _, env, err := Choose(n, nil, has(), "on every node")
	require.NoError(t, err)
	require.Empty(t, ref, "none present: the placement says what to do")
	require.Equal(t, "CHAOSLAB_ETCD_IMAGE", env)
	_, _, _, err = Choose(n, nil, func(string) (bool, error) { return false, errors.New("no engine") }, "")
	require.Error(t, err)
}

func TestRecordKeepsTheFirstReason(t *testing.T) {
	var r Record
	require.Empty(t, r.Why())
	r.Keep("etcd", "e:1", "--image")
	r.Keep("etcd", "e:1", "again")
	r.Keep("client", "c:1", "default, present here")
	require.Equal(t, "images: etcd e:1 (--image), client c:1 (default, present here)", r.Why())
	require.Equal(t, "c:1", r.Image("client"))
	require.Equal(t, map[string]string{"image etcd": "e:1", "image client": "c:1"}, r.Versions())
}
