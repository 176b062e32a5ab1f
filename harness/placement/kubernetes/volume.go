package kubernetes

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// StorageClassEnv names the StorageClass of servers' volumes (default:
// the cluster's default class).
const StorageClassEnv = "CHAOSLAB_KUBE_STORAGE_CLASS"

// storageClass is the class servers' claims are made of: StorageClassEnv,
// else the cluster's default ("" when it has none: servers' folders are
// then their pods' own, and a kill cannot keep their data).
func storageClass(ctx context.Context, k kubectl) (string, error) {
	var list struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := k.getJSON(ctx, &list, "storageclasses"); err != nil {
		return "", fmt.Errorf("list storage classes: %w", err)
	}
	want := os.Getenv(StorageClassEnv)
	for _, c := range list.Items {
		if want != "" && c.Metadata.Name == want {
			return want, nil
		}
		if want == "" && c.Metadata.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			return c.Metadata.Name, nil
		}
	}
	if want != "" {
		return "", fmt.Errorf("%s=%s: the cluster has no such StorageClass", StorageClassEnv, want)
	}
	return "", nil
}

// claimObject is a server's PersistentVolumeClaim: its folders, kept
// across kills and restarts of its pod, gone with a replacement.
func claimObject(name, class string, labels map[string]string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{
			"storageClassName": class,
			"accessModes":      []string{"ReadWriteOnce"},
			"resources":        map[string]any{"requests": map[string]string{"storage": "1Gi"}},
		},
	}
}

// claimName is the claim of a server's n-th incarnation with fresh data.
func claimName(pod string, n int) string { return pod + "-data-" + strconv.Itoa(n) }

// runVolumes are the PersistentVolumes bound to claims of namespace ns.
func runVolumes(ctx context.Context, k kubectl, ns string) ([]string, error) {
	var list struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Spec     struct {
				ClaimRef *struct {
					Namespace string `json:"namespace"`
				} `json:"claimRef"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := k.getJSON(ctx, &list, "persistentvolumes"); err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	var names []string
	for _, v := range list.Items {
		if v.Spec.ClaimRef != nil && v.Spec.ClaimRef.Namespace == ns {
			names = append(names, v.Metadata.Name)
		}
	}
	return names, nil
}

// waitVolumesGone waits until no volume of namespace ns is left (their
// claims deleted, the provisioner deletes them).
func waitVolumesGone(ctx context.Context, k kubectl, ns string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		left, err := runVolumes(ctx, k, ns)
		if err == nil && len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("volumes of %s left after %s: %v (%v)", ns, within, left, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
