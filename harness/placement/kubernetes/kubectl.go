package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/kube"
)

// KubectlEnv names the kubectl to drive the cluster with (a command
// with its kubeconfig, or kubectl with $KUBECONFIG and its current
// context); without it, the test cluster's out/kube/bin/kubectl
// (docs/kubernetes.md).
const KubectlEnv = "KUBECTL"

// opTimeout bounds one kubectl call.
const opTimeout = 30 * time.Second

// kubectl runs the cluster's kubectl.
type kubectl struct {
	path string
}

// findKubectl is $KUBECTL, else the test cluster's kubectl.
func findKubectl() (kubectl, error) {
	if p := os.Getenv(KubectlEnv); p != "" {
		return kubectl{path: p}, nil
	}
	dir, err := kube.Dir()
	if err != nil {
		return kubectl{}, fmt.Errorf("find kubectl: %w (or set %s)", err, KubectlEnv)
	}
	p := filepath.Join(dir, "bin", "kubectl")
	if _, err := os.Stat(p); err != nil {
		return kubectl{}, fmt.Errorf("no kubectl: %s is not there (./scripts/kube-up.sh starts the test cluster; or set %s)", p, KubectlEnv)
	}
	return kubectl{path: p}, nil
}

// command is kubectl with args, not yet started.
func (k kubectl) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.path, args...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// run runs kubectl with stdin (nil: none) and returns its output; an
// error carries what it said on stderr.
func (k kubectl) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return k.runFor(ctx, opTimeout, stdin, args...)
}

// runFor is run with a timeout of its own (a deletion that waits).
func (k kubectl) runFor(ctx context.Context, d time.Duration, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cmd := k.command(ctx, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.Bytes(), &kubectlError{args: args, msg: msg}
	}
	return out.Bytes(), nil
}

// getJSON runs kubectl get ... -o json into v.
func (k kubectl) getJSON(ctx context.Context, v any, args ...string) error {
	out, err := k.run(ctx, nil, append(append([]string{"get"}, args...), "-o", "json")...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("kubectl get %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// apply creates or updates the objects of a JSON document.
func (k kubectl) apply(ctx context.Context, ns string, obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	args := []string{"apply", "-f", "-"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	_, err = k.run(ctx, b, args...)
	return err
}

// kubectlError is what kubectl said when it failed.
type kubectlError struct {
	args []string
	msg  string
}

func (e *kubectlError) Error() string {
	return "kubectl " + strings.Join(e.args, " ") + ": " + e.msg
}

// isNotFound says whether kubectl failed because the object is not there.
func isNotFound(err error) bool {
	var ke *kubectlError
	return errors.As(err, &ke) && strings.Contains(ke.msg, "NotFound")
}
