package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chaoslab/chaoslab/harness/infra/owner"
)

// sweepStale deletes the namespaces chaoslab made on this machine for
// runs whose owner process is gone, and returns their names. Namespaces
// of live processes, of other machines, and those already going are left
// alone; it does not wait for them to go.
func sweepStale(ctx context.Context, k kubectl) ([]string, error) {
	var list struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Status   struct {
				Phase string `json:"phase"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := k.getJSON(ctx, &list, "namespaces", "-l", LabelManaged+"=true"); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var swept []string
	var errs []error
	for _, ns := range list.Items {
		m := ns.Metadata
		if ns.Status.Phase == "Terminating" || m.Annotations[AnnotationHost] != host || owner.Alive(m.Labels[LabelOwner]) {
			continue
		}
		if _, err := k.run(ctx, nil, "delete", "namespace", m.Name, "--wait=false"); err != nil && !isNotFound(err) {
			errs = append(errs, err)
			continue
		}
		swept = append(swept, m.Name)
	}
	return swept, errors.Join(errs...)
}

// nodeImages says whether every node has an image (its references as the
// kubelet reports them: docker.io/library/zookeeper:3.8 is
// zookeeper:3.8).
func nodeImages(ctx context.Context, k kubectl) (func(string) bool, error) {
	var list struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Status   struct {
				Images []struct {
					Names []string `json:"names"`
				} `json:"images"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := k.getJSON(ctx, &list, "nodes"); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("the cluster has no node")
	}
	var perNode []map[string]bool
	for _, n := range list.Items {
		have := map[string]bool{}
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				have[normalRef(name)] = true
			}
		}
		perNode = append(perNode, have)
	}
	return func(ref string) bool {
		for _, have := range perNode {
			if !have[normalRef(ref)] {
				return false
			}
		}
		return true
	}, nil
}

// normalRef is an image reference without the default registry and
// library path a runtime adds.
func normalRef(ref string) string {
	ref = strings.TrimPrefix(ref, "docker.io/")
	return strings.TrimPrefix(ref, "library/")
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// objectMeta is the part of an object's metadata the placement reads.
type objectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	DeletionTimestamp *string           `json:"deletionTimestamp"`
}
