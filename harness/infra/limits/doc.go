// Package limits puts the client processes that chaoslab starts under
// kernel-enforced resource limits (memory, number of tasks, CPU) and reads the
// kernel's own counters back, so that an out-of-memory death is known to be
// the kernel OOM killer's — contained to the limited process and counted by
// the kernel — instead of being guessed from an exit code.
//
// # Layout
//
// One [Manager] per run owns a parent group named after the run ID:
//
//	cgroup v1: /sys/fs/cgroup/memory/chaoslab/<runID>  (and the same under pids/ and cpu/)
//	cgroup v2: /sys/fs/cgroup/chaoslab/<runID>         (+memory +pids, and +cpu for groups with a CPU
//	                                                    limit, enabled in cgroup.subtree_control along the path)
//
// and every [Group] is a child of it, one per limited process. On v1 the
// memory limit goes to memory.limit_in_bytes and memory.swappiness is set to
// 0 when writable (swap is otherwise left alone, so the limit cannot be
// dodged by swapping out); on v2 it goes to memory.max, and memory.swap.max is
// set to 0 when that file exists. The pids limit goes to pids.max on both; a
// CPU limit to cpu.cfs_quota_us/cpu.cfs_period_us (v1; only groups with a
// CPU limit join the cpu hierarchy) or cpu.max (v2), with the default 100 ms
// period. A limit whose controller is missing is logged and shows as
// Stats.PidsEnforced / Stats.CPUEnforced = false; the memory controller is
// required.
//
// Group creation, limits, moving a process (cgroup.procs) and removing
// directories go through github.com/containerd/cgroups/v3 (cgroup1, cgroup2).
// A few things are plain file reads and writes, on purpose:
//
//   - Counters (memory.oom_control, memory.events, memory.peak, pids.events,
//     ...) are read and parsed here (parsers testable on strings). The
//     library's Stat reads dozens of files and fails outright on optional
//     ones (memsw, kmem), and its v1 Stat has no pids.events.
//   - Killing a group: the library's cgroup2 Kill falls back, on kernels
//     without cgroup.kill, to waiting on the killed processes itself, which
//     would reap chaoslab's own children and steal their exit status from
//     exec.Cmd.Wait. Here v2 writes cgroup.kill when present, and otherwise
//     (and on v1) each process listed in cgroup.procs is signalled through a
//     pidfd after re-checking it is still listed, so a recycled PID is never
//     signalled. Only processes inside the group are ever signalled.
//   - memory.swappiness and memory.swap.max are best effort: passed through
//     the library they would make group creation fail on kernels where the
//     file is missing or not writable.
//   - [Sweep] walks the chaoslab directories itself.
//
// [Group.Start] starts a child so that it is born inside its group — its
// first allocations, forks and threads are charged to the group, never to
// chaoslab:
//
//   - v2 (Linux >= 5.7): [Group.ConfigureCmd] sets SysProcAttr.UseCgroupFD
//     (clone3 CLONE_INTO_CGROUP).
//   - v1 has no such thing, and moving the child after exec.Cmd.Start leaves
//     a window that matters: a shell forked its children before the move and
//     they escaped the group; a Go child had 131 threads before it was moved
//     into a group with pids.max 20 (migration is never refused), because a
//     cgroup.procs write can take milliseconds. So on v1 Start forks from a
//     dedicated, locked OS thread that is first written into the group's
//     tasks files (v1 lets single threads move; a child inherits the cgroups
//     of the thread that forks) and written back to its own cgroups right
//     after. [Group.ConfigureCmd] is a no-op on v1: callers that start
//     processes themselves must [Group.Add] them right after Start and
//     accept that window. Only the cgroups of chaoslab's own launching
//     thread are touched, and only to put it back where it was; the group is
//     checked to be free of chaoslab's own PID before anything is killed.
//
// A run holds an flock on /run/chaoslab-limits/<runID>.lock (or the same
// name under os.TempDir) for as long as its Manager is open; [Sweep] only
// touches runs whose lock is free, never kills anything, removes empty
// groups and reports non-empty ones.
//
// # When no limit can be enforced
//
// Where neither cgroup version can be used — not root, no cgroup filesystem,
// a read-only cgroupfs (an unprivileged container), the memory controller not
// enabled or not delegatable (e.g. the cgroup v2 namespace root already holds
// processes) — [Detect] returns [ModeNone] with the reason, and [NewManager]
// returns a Manager in mode "none" (not an error) whose [Manager.Reason] says
// why. Its groups apply no limit at all: [Group.Start] and [Group.Add] only
// remember the processes (so [Group.Delete] can still SIGKILL them),
// [Group.Path] is empty, and [Group.Stats] reports Enforced=false with zero
// OOM kills; its MemoryBytes and Pids are then the summed RSS and thread
// counts from /proc of the remembered processes (see also [ProcStats]).
// Callers MUST say in their report that the limit was not enforced: an exit
// by SIGKILL in that mode is not evidence of an OOM kill, and memory growth is
// measured from /proc only. [KernelOOMKilled] can serve as a second source of
// truth where the kernel log is readable.
package limits
