package zookeeper

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// What the servers' logs say that mntr does not: a leader that lost its
// quorum of synced followers, and a leader elected.
const (
	// logNotSynced is a leader shutting down because fewer than a quorum
	// of followers synced within syncLimit (Leader.lead).
	logNotSynced = "Not sufficient followers synced"
	// logElected is a member taking the lead after an election.
	logElected = "LEADING - LEADER ELECTION TOOK"
)

// Series read from the servers' logs, as one source (logSource), counted
// from the ensemble's first healthy moment on.
const (
	SeriesNotSynced = "ensemble.not_synced_shutdowns"
	SeriesElections = "ensemble.elections"
	logSource       = "ensemble"
	// logEvery is how often the logs are read again (the sampler's
	// rounds in between repeat the last counts).
	logEvery = time.Second
)

// logCounter counts lines of the members' logs, reading only what was
// appended since the last read; restarts and replacements append to the
// same files.
type logCounter struct {
	mu     sync.Mutex
	files  []*logFile
	last   time.Time
	counts map[string]float64
}

type logFile struct {
	path string
	off  int64
	tail []byte // a line not yet ended
}

// newLogCounter starts counting at the current end of each file.
func newLogCounter(paths []string) *logCounter {
	c := &logCounter{counts: map[string]float64{SeriesNotSynced: 0, SeriesElections: 0}}
	for _, p := range paths {
		f := &logFile{path: p}
		if st, err := os.Stat(p); err == nil {
			f.off = st.Size()
		}
		c.files = append(c.files, f)
	}
	return c
}

// sample is the counts so far, reading the logs at most every logEvery.
func (c *logCounter) sample(t float64) lab.MemberSample {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.last) >= logEvery {
		c.last = time.Now()
		for _, f := range c.files {
			f.read(c.counts)
		}
	}
	vals := make(map[string]float64, len(c.counts))
	for k, v := range c.counts {
		vals[k] = v
	}
	return lab.MemberSample{T: t, Member: logSource, OK: true, Values: vals}
}

// read counts the whole lines appended since the last read.
func (f *logFile) read(counts map[string]float64) {
	fh, err := os.Open(f.path)
	if err != nil {
		return
	}
	defer fh.Close()
	if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(io.LimitReader(fh, 64<<20))
	if err != nil {
		return
	}
	f.off += int64(len(b))
	buf := append(f.tail, b...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		f.tail = buf
		return
	}
	lines := buf[:end+1]
	f.tail = append([]byte(nil), buf[end+1:]...)
	counts[SeriesNotSynced] += float64(bytes.Count(lines, []byte(logNotSynced)))
	counts[SeriesElections] += float64(bytes.Count(lines, []byte(logElected)))
}
