package limits

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// SetCPULimit changes the group's CPU limit while its processes run (0:
// none): v1 cpu.cfs_quota_us (the group joins the cpu hierarchy when it
// was created without a limit, its processes moved in), v2 cpu.max.
func (g *Group) SetCPULimit(cores float64) error {
	if cores < 0 {
		return fmt.Errorf("set cpu limit of %s: %g cores: must not be negative", g.name, cores)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var err error
	switch g.mode {
	case ModeV1:
		err = g.setCPUv1Locked(cores)
	case ModeV2:
		err = g.setCPUv2Locked(cores)
	default:
		return fmt.Errorf("set cpu limit of %s: no cgroups here", g.name)
	}
	if err != nil {
		return fmt.Errorf("set cpu limit of %s: %w", g.name, err)
	}
	g.limits.CPUCores = cores
	g.cpuEnforced = true
	return nil
}

func quotaText(cores float64) string {
	if cores == 0 {
		return "-1"
	}
	return strconv.FormatInt(cpuQuotaUS(cores), 10)
}

func (g *Group) setCPUv1Locked(cores float64) error {
	l := g.m.layout
	if l.cpuMount == "" {
		return errors.New("the cpu controller is not mounted")
	}
	joined := g.cpuDir == ""
	if joined {
		g.cpuDir = filepath.Join(l.cpuMount, baseName, g.m.runID, g.name)
		g.cpuLazy = true
		if err := os.MkdirAll(g.cpuDir, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(g.cpuDir, "cpu.cfs_period_us"), []byte(strconv.Itoa(cpuPeriodUS)), 0); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(g.cpuDir, "cpu.cfs_quota_us"), []byte(quotaText(cores)), 0); err != nil {
		return err
	}
	if !joined {
		return nil
	}
	pids, err := g.procsLocked()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(g.cpuDir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("move pid %d: %w", pid, err)
		}
	}
	return nil
}

func (g *Group) setCPUv2Locked(cores float64) error {
	if !g.m.layout.v2CPU {
		return errors.New("the cpu controller is not available")
	}
	if err := g.m.v2.ToggleControllers([]string{"cpu"}, cgroup2.Enable); err != nil {
		return fmt.Errorf("enable cpu: %w", err)
	}
	max := "max " + strconv.Itoa(cpuPeriodUS)
	if cores > 0 {
		max = strconv.FormatInt(cpuQuotaUS(cores), 10) + " " + strconv.Itoa(cpuPeriodUS)
	}
	return os.WriteFile(filepath.Join(g.dir, "cpu.max"), []byte(max), 0)
}

// CPULimit reads the group's CPU limit back from the kernel, in cores (0:
// none).
func (g *Group) CPULimit() (float64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.mode {
	case ModeV1:
		if g.cpuDir == "" {
			return 0, nil
		}
		q, err := readInt(filepath.Join(g.cpuDir, "cpu.cfs_quota_us"))
		if err != nil || q < 0 {
			return 0, err
		}
		p, err := readInt(filepath.Join(g.cpuDir, "cpu.cfs_period_us"))
		if err != nil || p <= 0 {
			return 0, err
		}
		return float64(q) / float64(p), nil
	case ModeV2:
		b, err := os.ReadFile(filepath.Join(g.dir, "cpu.max"))
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		q, p, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		if q == "max" {
			return 0, nil
		}
		qn, err1 := strconv.ParseFloat(q, 64)
		pn, err2 := strconv.ParseFloat(p, 64)
		if err := errors.Join(err1, err2); err != nil || pn <= 0 {
			return 0, fmt.Errorf("read cpu.max %q: %v", b, err)
		}
		return qn / pn, nil
	}
	return 0, fmt.Errorf("read cpu limit of %s: no cgroups here", g.name)
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
