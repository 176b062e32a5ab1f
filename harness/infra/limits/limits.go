package limits

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Limits are the limits of one group; 0 means no limit.
type Limits struct {
	// MemoryBytes caps the group's memory (v1 memory.limit_in_bytes, v2
	// memory.max). The kernel rounds it down to a page multiple.
	MemoryBytes int64
	// PidsMax caps the number of tasks (processes and threads) in the group.
	PidsMax int64
	// CPUCores caps CPU time at this many cores' worth per scheduling
	// period (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max).
	CPUCores float64
}

// cpuPeriodUS is the CFS period used for CPU limits (the kernel default).
const cpuPeriodUS = 100000

// cpuQuotaUS turns cores into a quota per cpuPeriodUS (at least 1 ms, the kernel's minimum).
func cpuQuotaUS(cores float64) int64 {
	return max(int64(cores*cpuPeriodUS+0.5), 1000)
}

// deleteTimeout bounds how long Delete waits for killed processes to leave.
const deleteTimeout = 10 * time.Second

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func validName(s string) error {
	if !nameRE.MatchString(s) {
		return fmt.Errorf("invalid name %q: want 1-128 of [A-Za-z0-9._-], not starting with . - or _", s)
	}
	return nil
}

// Manager owns the parent group of one run and the groups created under it.
// It is safe for concurrent use.
type Manager struct {
	runID  string
	logger *slog.Logger
	layout layout
	reason string
	lock   *os.File

	v1 cgroup1.Cgroup
	v2 *cgroup2.Manager

	mu            sync.Mutex
	groups        []*Group
	names         map[string]bool
	closing       bool
	closed        bool
	parentDeleted bool
}

// NewManager creates the parent group of one run: chaoslab/<runID> in the
// memory (and pids and cpu, where mounted) hierarchies on v1, or in the
// unified hierarchy on v2 with the memory and pids controllers enabled for
// its children (cpu too, once a group asks for a CPU limit).
//
// Where cgroups cannot be used (see Detect), or creating the parent group
// fails, it returns a Manager in ModeNone rather than an error, with the
// cause in Reason and a warning logged; groups of such a Manager apply no
// limit. It fails only for an invalid runID or a runID held by another live
// Manager. logger may be nil.
func NewManager(runID string, logger *slog.Logger) (*Manager, error) {
	if err := validName(runID); err != nil {
		return nil, fmt.Errorf("limits: run ID: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "limits", "run", runID)
	m := &Manager{runID: runID, logger: logger, names: map[string]bool{}}
	m.layout = detectWith(hostEnv())
	if m.layout.mode == ModeNone {
		m.toNone(m.layout.reason)
		return m, nil
	}

	lock, err := lockRun(runID)
	switch {
	case errors.Is(err, errRunLocked):
		return nil, fmt.Errorf("limits: run %q is in use by another process", runID)
	case err != nil:
		logger.Warn("limits: no run lock; a concurrent Sweep could remove this run's empty groups", "err", err)
	default:
		m.lock = lock
	}

	// Retry on ENOENT: a concurrent Close may rmdir an empty chaoslab
	// directory between MkdirAll's steps.
	for attempt := 0; ; attempt++ {
		err = m.createParent()
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == 2 {
			break
		}
	}
	if err != nil {
		m.removeParentDirs()
		m.toNone(fmt.Sprintf("cgroup %s: creating the run group failed: %v", m.layout.mode, err))
		return m, nil
	}
	logger.Info("limits: run group created", "mode", m.layout.mode, "path", m.Path(), "detail", m.layout.reason)
	return m, nil
}

func (m *Manager) toNone(reason string) {
	m.reason = reason
	m.layout = layout{mode: ModeNone, reason: reason}
	m.v1, m.v2 = nil, nil
	if m.lock != nil {
		unlockRun(m.lock, true)
		m.lock = nil
	}
	m.logger.Warn("limits: NOT ENFORCED — no cgroup limit will apply to processes of this run", "reason", reason)
}

func (m *Manager) runRel() string { return "/" + baseName + "/" + m.runID }

func (m *Manager) createParent() error {
	switch m.layout.mode {
	case ModeV1:
		l := m.layout
		cg, err := cgroup1.New(cgroup1.StaticPath(m.runRel()), &specs.LinuxResources{},
			cgroup1.WithHierarchy(v1Hierarchy(l.pidsMount != "", l.cpuMount != "")))
		if err != nil {
			return err
		}
		m.v1 = cg
	case ModeV2:
		res := &cgroup2.Resources{Memory: &cgroup2.Memory{}}
		if m.layout.v2Pids {
			res.Pids = &cgroup2.Pids{}
		}
		mgr, err := cgroup2.NewManager(m.layout.unified, m.runRel(), res)
		if err != nil {
			return err
		}
		// The library only reports the last failing subtree_control write;
		// check the controllers really reached the run group.
		ctrls, err := mgr.Controllers()
		if err != nil {
			_ = mgr.Delete()
			return err
		}
		if !slices.Contains(ctrls, "memory") {
			_ = mgr.Delete()
			return fmt.Errorf("memory controller not enabled for %s (cgroup.controllers: %v)", m.Path(), ctrls)
		}
		if m.layout.v2Pids && !slices.Contains(ctrls, "pids") {
			m.logger.Warn("limits: pids controller not enabled for the run group; pids limits are not enforced", "controllers", ctrls)
			m.layout.v2Pids = false
		}
		m.v2 = mgr
	}
	return nil
}

// v1Hierarchy is the set of v1 controllers a group lives in.
func v1Hierarchy(pids, cpu bool) cgroup1.Hierarchy {
	return func() ([]cgroup1.Subsystem, error) {
		s := []cgroup1.Subsystem{cgroup1.NewMemory(cgroupRoot)}
		if pids {
			s = append(s, cgroup1.NewPids(cgroupRoot))
		}
		if cpu {
			s = append(s, cgroup1.NewCpu(cgroupRoot))
		}
		return s, nil
	}
}

// removeParentDirs removes the run directories if empty (best effort).
func (m *Manager) removeParentDirs() {
	for _, b := range m.layout.baseDirs() {
		_ = os.Remove(filepath.Join(b, m.runID))
	}
}

// Mode is the mode this Manager works in (ModeNone when nothing is enforced).
func (m *Manager) Mode() Mode { return m.layout.mode }

// Reason says why the Manager is in ModeNone ("" otherwise).
func (m *Manager) Reason() string { return m.reason }

// RunID is the run ID the Manager was created with.
func (m *Manager) RunID() string { return m.runID }

// Path is the run's parent group directory (the memory hierarchy's on v1),
// "" in ModeNone.
func (m *Manager) Path() string {
	switch m.layout.mode {
	case ModeV1:
		return filepath.Join(m.layout.memoryMount, baseName, m.runID)
	case ModeV2:
		return filepath.Join(m.layout.unified, baseName, m.runID)
	}
	return ""
}

// NewGroup creates a child group with limits l. On v1 it also sets
// memory.swappiness=0 when writable, on v2 memory.swap.max=0 when the file
// exists, so that the memory limit is not dodged by swapping. A PidsMax
// that cannot be enforced (no pids controller) is logged and shows as
// Stats.PidsEnforced=false. In ModeNone the group applies no limit.
func (m *Manager) NewGroup(name string, l Limits) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("limits: group name: %w", err)
	}
	if l.MemoryBytes < 0 || l.PidsMax < 0 || l.CPUCores < 0 {
		return nil, fmt.Errorf("limits: negative limit %+v", l)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil, errors.New("limits: manager is closed")
	}
	if m.names[name] {
		return nil, fmt.Errorf("limits: group %q already exists in run %q", name, m.runID)
	}
	g := &Group{
		m:      m,
		name:   name,
		mode:   m.layout.mode,
		limits: l,
		logger: m.logger.With("group", name),
		oomFD:  -1,
	}
	var err error
	switch g.mode {
	case ModeV1:
		err = g.createV1()
	case ModeV2:
		err = g.createV2()
	}
	if err != nil {
		return nil, err
	}
	m.groups = append(m.groups, g)
	m.names[name] = true
	g.logger.Debug("limits: group created", "path", g.Path(), "memory_bytes", l.MemoryBytes, "pids_max", l.PidsMax, "cpu_cores", l.CPUCores, "mode", g.mode)
	return g, nil
}

// Group returns the group called name, or nil.
func (m *Manager) Group(name string) *Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

func (g *Group) createV1() error {
	m := g.m
	res := &specs.LinuxResources{}
	if g.limits.MemoryBytes > 0 {
		v := g.limits.MemoryBytes
		res.Memory = &specs.LinuxMemory{Limit: &v}
	}
	g.memDir = filepath.Join(m.layout.memoryMount, baseName, m.runID, g.name)
	if m.layout.pidsMount != "" {
		g.pidsDir = filepath.Join(m.layout.pidsMount, baseName, m.runID, g.name)
		g.pidsEnforced = true
		if g.limits.PidsMax > 0 {
			v := g.limits.PidsMax
			res.Pids = &specs.LinuxPids{Limit: &v}
		}
	} else if g.limits.PidsMax > 0 {
		g.logger.Warn("limits: pids controller not mounted; pids limit NOT enforced", "pids_max", g.limits.PidsMax)
	}
	// The cpu hierarchy only for groups with a CPU limit: every hierarchy
	// costs a cgroup.procs write per process moved.
	if g.limits.CPUCores > 0 {
		if m.layout.cpuMount != "" {
			g.cpuDir = filepath.Join(m.layout.cpuMount, baseName, m.runID, g.name)
			g.cpuEnforced = true
			q, p := cpuQuotaUS(g.limits.CPUCores), uint64(cpuPeriodUS)
			res.CPU = &specs.LinuxCPU{Quota: &q, Period: &p}
		} else {
			g.logger.Warn("limits: cpu controller not mounted; CPU limit NOT enforced", "cpu_cores", g.limits.CPUCores)
		}
	}
	cg, err := cgroup1.New(cgroup1.StaticPath(m.runRel()+"/"+g.name), res,
		cgroup1.WithHierarchy(v1Hierarchy(g.pidsDir != "", g.cpuDir != "")))
	if err != nil {
		for _, d := range g.Paths() {
			_ = os.Remove(d)
		}
		return fmt.Errorf("limits: creating group %s: %w", g.memDir, err)
	}
	g.v1 = cg
	// Swap is left alone, but with swappiness 0 the group's anonymous memory
	// is not swapped out, so the limit cannot be dodged by swapping.
	if err := os.WriteFile(filepath.Join(g.memDir, "memory.swappiness"), []byte("0"), 0); err != nil {
		g.logger.Debug("limits: memory.swappiness not writable", "err", err)
	}
	if fd, err := cg.RegisterMemoryEvent(cgroup1.OOMEvent()); err != nil {
		g.logger.Debug("limits: no OOM eventfd; OOMEvents will mirror OOMKills", "err", err)
	} else if err := unix.SetNonblock(int(fd), true); err != nil {
		_ = unix.Close(int(fd))
	} else {
		g.oomFD = int(fd)
	}
	return nil
}

func (g *Group) createV2() error {
	m := g.m
	res := &cgroup2.Resources{Memory: &cgroup2.Memory{}}
	if g.limits.MemoryBytes > 0 {
		v := g.limits.MemoryBytes
		res.Memory.Max = &v
	}
	if m.layout.v2Pids {
		res.Pids = &cgroup2.Pids{Max: g.limits.PidsMax} // 0 writes nothing
		g.pidsEnforced = true
	} else if g.limits.PidsMax > 0 {
		g.logger.Warn("limits: pids controller not available; pids limit NOT enforced", "pids_max", g.limits.PidsMax)
	}
	if g.limits.CPUCores > 0 {
		if m.layout.v2CPU {
			q, p := cpuQuotaUS(g.limits.CPUCores), uint64(cpuPeriodUS)
			res.CPU = &cgroup2.CPU{Max: cgroup2.NewCPUMax(&q, &p)}
			g.cpuEnforced = true
		} else {
			g.logger.Warn("limits: cpu controller not available; CPU limit NOT enforced", "cpu_cores", g.limits.CPUCores)
		}
	}
	g.dir = filepath.Join(m.layout.unified, baseName, m.runID, g.name)
	mgr, err := m.v2.NewChild(g.name, res)
	if err != nil {
		_ = os.Remove(g.dir)
		return fmt.Errorf("limits: creating group %s: %w", g.dir, err)
	}
	g.v2 = mgr
	swap := filepath.Join(g.dir, "memory.swap.max")
	if _, err := os.Stat(swap); err == nil {
		if err := os.WriteFile(swap, []byte("0"), 0); err != nil {
			g.logger.Debug("limits: memory.swap.max not writable", "err", err)
		}
	}
	return nil
}

// Close deletes every group it created (killing what is left in them), then
// the run's parent group, and releases the run lock. Errors are joined. It
// is safe to call more than once; a call after a failed one tries again.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closing = true
	var errs []error
	for i := len(m.groups) - 1; i >= 0; i-- {
		if err := m.groups[i].Delete(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && !m.parentDeleted {
		var err error
		switch {
		case m.v1 != nil:
			err = m.v1.Delete()
		case m.v2 != nil:
			err = m.v2.Delete()
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, cgroup1.ErrCgroupDeleted) {
			errs = append(errs, fmt.Errorf("limits: removing run group %s: %w", m.Path(), err))
		} else {
			m.parentDeleted = true
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// The shared chaoslab directories go too when no other run uses them.
	for _, b := range m.layout.baseDirs() {
		_ = unix.Rmdir(b)
	}
	if m.lock != nil {
		unlockRun(m.lock, true)
		m.lock = nil
	}
	m.closed = true
	return nil
}

// Group is one cgroup (one per limited process) under a Manager's run group.
// It is safe for concurrent use.
type Group struct {
	m      *Manager
	name   string
	mode   Mode
	limits Limits
	logger *slog.Logger

	v1      cgroup1.Cgroup
	v2      *cgroup2.Manager
	memDir  string // v1
	pidsDir string // v1, "" without the pids controller
	cpuDir  string // v1, "" without a CPU limit or the cpu controller
	cpuLazy bool   // v1: cpuDir joined by SetCPULimit, not by the group's creation
	dir     string // v2

	pidsEnforced bool
	cpuEnforced  bool

	mu        sync.Mutex
	oomFD     int    // v1 OOM eventfd, -1 if none
	oomEvents uint64 // v1, accumulated from oomFD
	tracked   []*os.Process
	deleted   bool
	final     *Stats
}

// Name is the group's name under the run.
func (g *Group) Name() string { return g.name }

// MemoryLimit is the group's memory limit in bytes (0: none).
func (g *Group) MemoryLimit() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limits.MemoryBytes
}

// SetMemoryLimit changes the group's memory limit while its processes run
// (an operator raising a pod's limit). On cgroup v1 the kernel refuses
// (EBUSY) a limit below what it can reclaim down to.
func (g *Group) SetMemoryLimit(bytes int64) error {
	if bytes <= 0 {
		return fmt.Errorf("set memory limit of %s: %d bytes: must be positive", g.name, bytes)
	}
	var file string
	switch g.mode {
	case ModeV1:
		file = filepath.Join(g.memDir, "memory.limit_in_bytes")
	case ModeV2:
		file = filepath.Join(g.dir, "memory.max")
	default:
		return fmt.Errorf("set memory limit of %s: no cgroups here", g.name)
	}
	if err := os.WriteFile(file, []byte(strconv.FormatInt(bytes, 10)), 0); err != nil {
		return fmt.Errorf("set memory limit of %s: %w", g.name, err)
	}
	g.mu.Lock()
	g.limits.MemoryBytes = bytes
	g.mu.Unlock()
	return nil
}

// Limits are the limits the group was created with.
func (g *Group) Limits() Limits { return g.limits }

// Mode is the group's mode (the Manager's).
func (g *Group) Mode() Mode { return g.mode }

// Path is the group's directory (in the memory hierarchy on v1); "" in ModeNone.
func (g *Group) Path() string {
	switch g.mode {
	case ModeV1:
		return g.memDir
	case ModeV2:
		return g.dir
	}
	return ""
}

// Paths are the group's directories in every hierarchy it uses.
func (g *Group) Paths() []string {
	switch g.mode {
	case ModeV1:
		p := []string{g.memDir}
		for _, d := range []string{g.pidsDir, g.cpuDir} {
			if d != "" {
				p = append(p, d)
			}
		}
		return p
	case ModeV2:
		return []string{g.dir}
	}
	return nil
}

// Add moves process pid (all its threads) into the group (cgroup.procs). In
// ModeNone it only remembers the process, so Delete can kill it.
func (g *Group) Add(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("limits: invalid pid %d", pid)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("limits: group %q is deleted", g.name)
	}
	var err error
	switch g.mode {
	case ModeV1:
		err = g.v1.AddProc(uint64(pid))
	case ModeV2:
		err = g.v2.AddProc(uint64(pid))
	default:
		p, ferr := os.FindProcess(pid) // holds a pidfd: later signals cannot hit a recycled pid
		if ferr != nil {
			return ferr
		}
		g.tracked = append(g.tracked, p)
		return nil
	}
	if err != nil {
		return fmt.Errorf("limits: adding pid %d to %s: %w", pid, g.Path(), err)
	}
	return nil
}

// ConfigureCmd prepares cmd so that, on v2 (Linux >= 5.7), the child is
// created directly inside the group (SysProcAttr.UseCgroupFD/CgroupFD), so
// nothing it does is charged to the parent. Call cleanup once cmd.Start has
// returned. On v1, in ModeNone, or on older kernels it does nothing and the
// caller must Add the process right after Start (Start does all this).
func (g *Group) ConfigureCmd(cmd *exec.Cmd) (cleanup func(), err error) {
	noop := func() {}
	if g.mode != ModeV2 || !cloneIntoCgroupSupported() {
		return noop, nil
	}
	g.mu.Lock()
	deleted := g.deleted
	g.mu.Unlock()
	if deleted {
		return noop, fmt.Errorf("limits: group %q is deleted", g.name)
	}
	fd, err := unix.Open(g.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return noop, fmt.Errorf("limits: opening %s: %w", g.dir, err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	var once sync.Once
	return func() { once.Do(func() { _ = unix.Close(fd) }) }, nil
}

// Start starts cmd inside the group, so that everything the child does — its
// first allocations, its first forks and threads — is charged to the group:
//
//   - v2 (Linux >= 5.7): the child is born inside via ConfigureCmd.
//   - v1: the fork is made from a thread that was first moved into the
//     group (v1 lets single threads move; the child inherits the cgroups
//     of the thread that forks), and moved back right after. While it
//     forks, that thread counts in pids.current, so on v1 PidsMax must
//     leave room for one more task than the child needs at its start.
//   - otherwise (or if moving the thread fails): exec.Cmd.Start, then Add.
//
// Every start runs on the process's starter thread, an OS thread locked
// for the life of the process: a child's Pdeathsig fires when the thread
// that forked it ends, which for the starter is when chaoslab ends, and
// never when the Go runtime ends a thread that some goroutine locked and
// left locked.
//
// If the process cannot be placed in the group it is killed and reaped, and
// an error is returned; otherwise the caller owns cmd and must Wait for it.
func (g *Group) Start(cmd *exec.Cmd) error {
	return OnStarter(func() error { return g.startHere(cmd) })
}

// startHere is Start on the starter thread.
func (g *Group) startHere(cmd *exec.Cmd) error {
	// With PidsMax 1 the launching thread would take the only slot.
	if g.mode == ModeV1 && (g.limits.PidsMax == 0 || g.limits.PidsMax > 1 || g.pidsDir == "") {
		err := g.startFromThreadInGroup(cmd)
		var mv *threadMoveError
		if !errors.As(err, &mv) {
			if err != nil {
				return err
			}
			return g.ensureInside(cmd)
		}
		g.logger.Debug("limits: cannot fork from inside the group; moving the child after start", "err", err)
	}
	cleanup, err := g.ConfigureCmd(cmd)
	if err != nil {
		return err
	}
	inside := g.mode == ModeV2 && cmd.SysProcAttr != nil && cmd.SysProcAttr.UseCgroupFD
	err = cmd.Start()
	cleanup()
	if err != nil {
		return err
	}
	if inside {
		return nil
	}
	return g.ensureInside(cmd)
}

// ensureInside adds a started child if it is not in the group yet, killing
// and reaping it if that fails.
func (g *Group) ensureInside(cmd *exec.Cmd) error {
	if g.mode != ModeNone && g.Contains(cmd.Process.Pid) {
		return nil
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("%w (the process was killed)", err)
	}
	return nil
}

type threadMoveError struct{ err error }

func (e *threadMoveError) Error() string { return "moving the launching thread: " + e.err.Error() }
func (e *threadMoveError) Unwrap() error { return e.err }

// startFromThreadInGroup (v1) runs cmd.Start on the starter thread (the
// calling one, locked), moved into the group's tasks files and moved back
// to where it was right after, so the child starts inside the group.
func (g *Group) startFromThreadInGroup(cmd *exec.Cmd) error {
	g.mu.Lock()
	deleted := g.deleted
	g.mu.Unlock()
	if deleted {
		return fmt.Errorf("limits: group %q is deleted", g.name)
	}
	tid := unix.Gettid()
	homes, err := g.threadHomes(tid)
	if err != nil {
		return &threadMoveError{err}
	}
	var moved []string
	goHome := func() {
		for _, d := range moved {
			if err := writeTask(homes[d], tid); err != nil {
				g.logger.Error("limits: could not move the starter thread back", "tid", tid, "to", homes[d], "err", err)
			}
		}
	}
	for _, d := range g.Paths() {
		if err := writeTask(d, tid); err != nil {
			goHome()
			return &threadMoveError{err}
		}
		moved = append(moved, d)
	}
	err = cmd.Start()
	goHome()
	return err
}

func writeTask(dir string, tid int) error {
	return os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid)), 0)
}

// threadHomes maps the directories of a v1 group (memory, pids) to the
// directories of the same hierarchies thread tid is in now.
func (g *Group) threadHomes(tid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", tid))
	if err != nil {
		return nil, err
	}
	cg, err := parseProcCgroup(string(b))
	if err != nil {
		return nil, err
	}
	homes := map[string]string{}
	add := func(ctrl, mount, root, groupDir string) error {
		p, ok := cg[ctrl]
		if !ok {
			return fmt.Errorf("thread %d has no %s cgroup", tid, ctrl)
		}
		d, err := cgroupDir(mount, root, p)
		if err != nil {
			return err
		}
		homes[groupDir] = d
		return nil
	}
	l := g.m.layout
	if err := add("memory", l.memoryMount, l.memoryRoot, g.memDir); err != nil {
		return nil, err
	}
	if g.pidsDir != "" {
		if err := add("pids", l.pidsMount, l.pidsRoot, g.pidsDir); err != nil {
			return nil, err
		}
	}
	if g.cpuDir != "" {
		if err := add("cpu", l.cpuMount, l.cpuRoot, g.cpuDir); err != nil {
			return nil, err
		}
	}
	return homes, nil
}

// Procs lists the processes in the group (union over its hierarchies). In
// ModeNone it lists the remembered processes that are still alive.
func (g *Group) Procs() ([]int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.procsLocked()
}

func (g *Group) procsLocked() ([]int, error) {
	if g.mode == ModeNone {
		var out []int
		for _, p := range g.tracked {
			if p.Signal(syscall.Signal(0)) == nil {
				out = append(out, p.Pid)
			}
		}
		return out, nil
	}
	var all []int
	for _, d := range g.Paths() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			return nil, err
		}
		pids, err := parsePids(string(b))
		if err != nil {
			return nil, err
		}
		for _, p := range pids {
			if !slices.Contains(all, p) {
				all = append(all, p)
			}
		}
	}
	return all, nil
}

// Contains reports whether pid is currently in the group.
func (g *Group) Contains(pid int) bool {
	pids, err := g.Procs()
	return err == nil && slices.Contains(pids, pid)
}

// Delete kills (SIGKILL) the processes still in the group — only those, all
// of which chaoslab started — waits (bounded) until it is empty and removes
// its directory in every hierarchy. The counters read just before removal
// stay available from Stats. Calling it again is a no-op.
func (g *Group) Delete() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	if g.mode == ModeNone {
		st := g.noneStatsLocked()
		for _, p := range g.tracked {
			_ = p.Signal(syscall.SIGKILL)
			_ = p.Release()
		}
		g.tracked = nil
		g.final = &st
		g.deleted = true
		return nil
	}
	if err := g.killAndWaitLocked(deleteTimeout); err != nil {
		return err
	}
	if st, err := g.readStatsLocked(); err == nil {
		g.final = &st
	}
	if g.oomFD >= 0 {
		_ = unix.Close(g.oomFD)
		g.oomFD = -1
	}
	var err error
	if g.v1 != nil {
		err = g.v1.Delete()
	} else {
		err = g.v2.Delete()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return fmt.Errorf("limits: removing %s: %w", g.Path(), err)
	}
	if g.cpuLazy {
		if err := unix.Rmdir(g.cpuDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("limits: removing %s: %w", g.cpuDir, err)
		}
	}
	g.deleted = true
	g.logger.Debug("limits: group deleted", "path", g.Path())
	return nil
}

// killAndWaitLocked SIGKILLs every process in the group until it is empty.
func (g *Group) killAndWaitLocked(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	delay := 2 * time.Millisecond
	logged := false
	for {
		pids, err := g.procsLocked()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("limits: listing processes of %s: %w", g.Path(), err)
		}
		if len(pids) == 0 {
			return nil
		}
		if slices.Contains(pids, os.Getpid()) {
			// Only possible if a launching thread could not leave the group.
			return fmt.Errorf("limits: %s holds a thread of this process (pid %d); not killing, not removing", g.Path(), os.Getpid())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("limits: %s still holds processes %v %s after SIGKILL", g.Path(), pids, timeout)
		}
		if !logged {
			g.logger.Info("limits: killing processes left in group", "path", g.Path(), "pids", pids)
			logged = true
		}
		g.signalAllLocked(pids)
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

func (g *Group) signalAllLocked(pids []int) {
	if g.mode == ModeV2 && !slices.Contains(pids, os.Getpid()) {
		// cgroup.kill (Linux >= 5.14) kills the whole group atomically.
		if err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	// Hold a pidfd for each pid, then check the pid is still listed: a pidfd
	// taken before the check refers to the process that was listed, never to
	// a later process that reused the number.
	handles := make(map[int]*os.Process, len(pids))
	for _, pid := range pids {
		if p, err := os.FindProcess(pid); err == nil {
			handles[pid] = p
		}
	}
	defer func() {
		for _, p := range handles {
			_ = p.Release()
		}
	}()
	still, err := g.procsLocked()
	if err != nil {
		return
	}
	for _, pid := range still {
		if p, ok := handles[pid]; ok && pid != os.Getpid() {
			_ = p.Signal(syscall.SIGKILL)
		}
	}
}

// cloneIntoCgroupSupported reports whether clone3 CLONE_INTO_CGROUP (Linux
// 5.7) is available, which exec.Cmd needs for SysProcAttr.UseCgroupFD.
func cloneIntoCgroupSupported() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	major, minor, ok := parseKernelVersion(unix.ByteSliceToString(u.Release[:]))
	return ok && (major > 5 || major == 5 && minor >= 7)
}

// parseKernelVersion reads "6.1.0-18-amd64" as 6, 1.
func parseKernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(parts[0], "%d", &major); err != nil {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(parts[1], "%d", &minor); err != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// LimitCPU holds every group of the run that has a CPU limit of its own to
// cores together: the run's share of the machine, the same on a host of 2
// cores as on one of 64 (v1 cpu.cfs_quota_us of the run's cpu group, v2
// cpu.max of the run group). On v1 the kernel refuses a budget smaller
// than one group's own limit. It says so when the cpu controller cannot be
// used; in ModeNone it does nothing.
func (m *Manager) LimitCPU(cores float64) error {
	if cores <= 0 {
		return fmt.Errorf("limits: run cpu: want more than 0 cores, got %g", cores)
	}
	q := cpuQuotaUS(cores)
	switch m.layout.mode {
	case ModeV1:
		if m.layout.cpuMount == "" {
			return errors.New("limits: run cpu: the cpu controller is not mounted")
		}
		dir := filepath.Join(m.layout.cpuMount, baseName, m.runID)
		if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(cpuPeriodUS)), 0); err != nil {
			return fmt.Errorf("limits: run cpu: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(q, 10)), 0); err != nil {
			return fmt.Errorf("limits: run cpu: %w", err)
		}
	case ModeV2:
		if !m.layout.v2CPU {
			return errors.New("limits: run cpu: the cpu controller is not available")
		}
		if err := m.v2.ToggleControllers([]string{"cpu"}, cgroup2.Enable); err != nil {
			return fmt.Errorf("limits: run cpu: enable cpu: %w", err)
		}
		p := uint64(cpuPeriodUS)
		if err := m.v2.Update(&cgroup2.Resources{CPU: &cgroup2.CPU{Max: cgroup2.NewCPUMax(&q, &p)}}); err != nil {
			return fmt.Errorf("limits: run cpu: %w", err)
		}
	default:
		return nil
	}
	m.logger.Info("limits: run held to a CPU budget", "cores", cores)
	return nil
}
