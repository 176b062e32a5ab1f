// Package netcut cuts a local server off the network (loopback) with
// nftables: connections to its ports are refused (a TCP reset), what it
// sends from them is dropped, and so is whatever it sends from sockets of
// its own cgroup (cgroup v2 path, matched with nftables' socket cgroupv2),
// its connections to its peers among them. Each cut is a table of its
// own, named after the run and the server, removed by Restore or by
// Sweep; nothing else of the machine's rules is touched.
//
// On a machine of cgroup v1 with the unified hierarchy mounted beside it
// (hybrid), a server is started in a cgroup v2 group of its own
// (Wrap), which holds no controller and serves only to recognise its
// sockets.
package netcut

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

const (
	cgroupRoot = "/sys/fs/cgroup"
	hybridRoot = "/sys/fs/cgroup/unified"
	// baseName is the folder of the unified hierarchy holding a group per
	// run on a hybrid machine.
	baseName = "chaoslab-net"
	// tablePrefix begins the name of every table of the lab's.
	tablePrefix = "chaoslab_"
)

// Available says whether a server can be cut off here: the nft command
// and a cgroup v2 hierarchy.
func Available() error {
	if _, err := exec.LookPath("nft"); err != nil {
		return errors.New("no nft command (Debian's nftables package)")
	}
	if _, err := os.Stat(filepath.Join(unifiedRoot(), "cgroup.procs")); err != nil {
		return errors.New("no cgroup v2 hierarchy to tell a server's sockets by")
	}
	return nil
}

// unifiedRoot is where the cgroup v2 hierarchy is mounted.
func unifiedRoot() string {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return cgroupRoot
	}
	return hybridRoot
}

// Hybrid says whether the unified hierarchy sits beside v1 controllers.
func Hybrid() bool { return unifiedRoot() == hybridRoot }

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_]`)

func table(runID, server string) string {
	return tablePrefix + unsafe.ReplaceAllString(runID+"_"+server, "_")
}

// Wrap is argv started in a cgroup v2 group of its own for server on a
// hybrid machine (a shell moves itself there, then runs argv), and that
// group's path; on a machine of cgroup v2 alone argv is returned as it
// is, with "" (the server's own cgroup is matched: see Cut).
func Wrap(runID, server string, argv []string) ([]string, string, error) {
	if !Hybrid() {
		return argv, "", nil
	}
	dir := filepath.Join(hybridRoot, baseName, runID, server)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("make network group of %s: %w", server, err)
	}
	shim := []string{"/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir}
	return append(shim, argv...), dir, nil
}

// Netns is the network namespace a cut is made in: that of a process
// (0: this process's own).
type Netns int

// Cut cuts server off: TCP connections to ports are reset, UDP to them
// dropped, anything sent from them dropped, and everything sent by the
// sockets of the cgroup v2 groups (absolute paths under the unified
// mount) dropped.
func Cut(ctx context.Context, runID, server string, ports []int, groups []string) error {
	return Netns(0).Cut(ctx, runID, server, ports, groups)
}

// Cut makes the cut in the namespace (see the function Cut).
func (ns Netns) Cut(ctx context.Context, runID, server string, ports []int, groups []string) error {
	t := table(runID, server)
	var rules []string
	if len(ports) > 0 {
		set := joinInts(ports)
		rules = append(rules,
			"tcp dport { "+set+" } reject with tcp reset",
			"udp dport { "+set+" } drop",
			"tcp sport { "+set+" } drop",
			"udp sport { "+set+" } drop")
	}
	for _, g := range groups {
		rel, level, err := nftPath(g)
		if err != nil {
			return fmt.Errorf("cut %s: %w", server, err)
		}
		rules = append(rules, fmt.Sprintf(`socket cgroupv2 level %d "%s" drop`, level, rel))
	}
	script := fmt.Sprintf("table inet %s {\n chain out {\n  type filter hook output priority 0; policy accept;\n  %s\n }\n}\n",
		t, strings.Join(rules, "\n  "))
	if err := ns.nft(ctx, script, "-f", "-"); err != nil {
		return fmt.Errorf("cut %s: %w", server, err)
	}
	return nil
}

// nftPath is a cgroup's path as nft wants it (relative to /sys/fs/cgroup)
// and its level in the cgroup v2 hierarchy.
func nftPath(group string) (string, int, error) {
	root := unifiedRoot()
	rel, err := filepath.Rel(root, group)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", 0, fmt.Errorf("group %s is not under %s", group, root)
	}
	level := len(strings.Split(rel, "/"))
	fromMount, _ := filepath.Rel(cgroupRoot, group)
	return fromMount, level, nil
}

// Restore removes server's cut; a server not cut is left as it is.
func Restore(ctx context.Context, runID, server string) error {
	return Netns(0).Restore(ctx, runID, server)
}

// Restore removes server's cut in the namespace.
func (ns Netns) Restore(ctx context.Context, runID, server string) error {
	t := table(runID, server)
	if !ns.exists(ctx, t) {
		return nil
	}
	if err := ns.nft(ctx, "", "delete", "table", "inet", t); err != nil {
		return fmt.Errorf("reconnect %s: %w", server, err)
	}
	return nil
}

// IsCut says whether server's cut is in force (its table exists).
func IsCut(ctx context.Context, runID, server string) bool {
	return Netns(0).IsCut(ctx, runID, server)
}

// IsCut says whether server's cut is in force in the namespace.
func (ns Netns) IsCut(ctx context.Context, runID, server string) bool {
	return ns.exists(ctx, table(runID, server))
}

func (ns Netns) exists(ctx context.Context, t string) bool {
	return ns.nft(ctx, "", "list", "table", "inet", t) == nil
}

// Sweep removes every cut of a run and its network groups.
func Sweep(ctx context.Context, runID string) error {
	var errs []error
	if _, err := exec.LookPath("nft"); err == nil {
		prefix := table(runID, "")
		out, err := exec.CommandContext(ctx, "nft", "list", "tables").Output()
		if err == nil {
			for _, l := range strings.Split(string(out), "\n") {
				f := strings.Fields(l)
				if len(f) == 3 && f[1] == "inet" && strings.HasPrefix(f[2], prefix) {
					errs = append(errs, Netns(0).nft(ctx, "", "delete", "table", "inet", f[2]))
				}
			}
		}
	}
	run := filepath.Join(hybridRoot, baseName, runID)
	if entries, err := os.ReadDir(run); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				errs = append(errs, removeGroup(filepath.Join(run, e.Name())))
			}
		}
		errs = append(errs, removeGroup(run))
	}
	return errors.Join(errs...)
}

// removeGroup removes an empty network group (its processes ended).
func removeGroup(dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove network group %s: %w", dir, err)
	}
	return nil
}

// nft runs nft in the namespace (nsenter enters that of another process).
func (ns Netns) nft(ctx context.Context, stdin string, args ...string) error {
	cmd := exec.CommandContext(ctx, "nft", args...)
	if ns > 0 {
		cmd = exec.CommandContext(ctx, "nsenter", append([]string{"--net=/proc/" + strconv.Itoa(int(ns)) + "/ns/net", "nft"}, args...)...)
	}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// GroupOf is the cgroup v2 group of process pid, as an absolute path
// under the unified mount.
func GroupOf(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return "", fmt.Errorf("read cgroup of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(unifiedRoot(), rel), nil
		}
	}
	return "", fmt.Errorf("pid %d is in no cgroup v2 group", pid)
}
