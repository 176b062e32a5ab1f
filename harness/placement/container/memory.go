package container

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// A container's memory limit also holds the page cache of its executable,
// which the kernel charges to the container (a local process shares those
// pages with its parent and is charged for none). A limited program starts
// with its memory limit plus the image's size (plus textSlackMB) and, once
// it runs (settleAfter), the limit is lowered to the memory limit plus the
// page cache actually charged to it. chaoslab's own agents also lock their
// executable's pages (limits.LockText, with CAP_IPC_LOCK): otherwise the
// kernel reclaims those clean pages to make room for the heap before it
// OOM-kills, and the heap gets more than the limit (measured: vulnerable
// IL-0587 clients peaked at 94 MiB of RSS under a 96 MiB limit and were
// never killed, where local processes are killed at 93 MiB).
const (
	textSlackMB = 8
	settleAfter = 2 * time.Second
)

// memPlan is one container's memory limit over its life.
type memPlan struct {
	limitMB  int // the program's memory limit (0: none)
	lockText bool

	mu        sync.Mutex
	allowance int // MiB above limitMB
	settled   bool
}

func memoryPlan(prog lab.Program, img string) *memPlan {
	m := &memPlan{limitMB: prog.Limits.MemoryMB}
	if m.limitMB == 0 {
		m.settled = true
		return m
	}
	m.allowance = imageMB(img) + textSlackMB
	m.lockText = prog.Agent != "" && strings.HasPrefix(img, images.ChaoslabRepo+":")
	return m
}

func (m *memPlan) hostConfig(hc *container.HostConfig) {
	if m.limitMB == 0 {
		return
	}
	mem := int64(m.limitMB+m.allowance) << 20
	hc.Memory, hc.MemorySwap = mem, mem // no swap: the limit is the limit
	if m.lockText {
		// mlock beyond RLIMIT_MEMLOCK; raising the rlimit itself is
		// refused by some engines (runc without CAP_SYS_RESOURCE).
		hc.CapAdd = append(hc.CapAdd, "IPC_LOCK")
	}
}

// settle lowers the limit to the memory limit plus the page cache charged
// to the container, once, settleAfter after its start.
func (m *memPlan) settle(c *docker.Container, prog lab.Program, ran time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settled || ran < settleAfter {
		return
	}
	m.settled = true
	log := func(format string, args ...any) {
		if prog.Stderr != nil {
			fmt.Fprintf(prog.Stderr, "chaoslab: "+format+"\n", args...)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	file, err := c.MemoryFileBytes(ctx)
	if err != nil {
		log("keeping the %d MiB executable allowance: %v", m.allowance, err)
		return
	}
	mb := int((file + (1 << 20) - 1) >> 20)
	if mb >= m.allowance {
		return
	}
	if err := c.SetMemoryLimit(ctx, int64(m.limitMB+mb)<<20); err != nil {
		log("keeping the %d MiB executable allowance: %v", m.allowance, err)
		return
	}
	m.allowance = mb
	log("memory limit %d MiB + %d MiB of page cache charged to this container = %d MiB", m.limitMB, mb, m.limitMB+mb)
}

func (m *memPlan) limitBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limitMB == 0 {
		return 0
	}
	return int64(m.limitMB+m.allowance) << 20
}

// note says how the enforced limit relates to the program's.
func (m *memPlan) note() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limitMB == 0 {
		return ""
	}
	lock := "; the kernel may reclaim those pages to make room for the heap, which then gets a little more than the limit"
	if m.lockText {
		lock = ", with the executable's pages locked in memory so that the kernel cannot reclaim them for the heap: the heap gets the memory limit, as in a local process"
	}
	return fmt.Sprintf("limit %d MiB + %d MiB of page cache charged to the container%s", m.limitMB, m.allowance, lock)
}

// imageMB is the size of an image in MiB, rounded up (0 when unknown): for
// the chaoslab image, FROM scratch with one static binary, the binary.
func imageMB(ref string) int {
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Size}}", ref).Output()
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0
	}
	return int((n + (1 << 20) - 1) >> 20)
}
