package pgcluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// A server's own account of the statements a role sent it: with
// log_statement = 'all' set on the role (ALTER ROLE ... SET) and the
// cluster's log lines prefixed by LogLinePrefix in UTC (WithStatementLog),
// the server logs each statement as it starts, whichever server it is and
// whatever becomes of it (done, cancelled, timed out).

// LogLinePrefix is the prefix a StatementLog reads: time, pid, role.
const LogLinePrefix = "%m [%p] %u "

// WithStatementLog prefixes every server's log lines for StatementLog.
func WithStatementLog() Option {
	return func(o *options) {
		o.settings["log_line_prefix"] = LogLinePrefix
		o.settings["log_timezone"] = "UTC"
	}
}

// Statement is one statement a server logged as it started.
type Statement struct {
	At   time.Time
	Role string
	// Write: INSERT, UPDATE or DELETE; otherwise a read (SELECT, WITH).
	Write bool
}

// StatementLog reads the statements logged by a server for the roles
// whose names start with a prefix, from where the last Read stopped.
type StatementLog struct {
	path, prefix string
	off          int64
	rest         []byte
}

// StatementLog is the server's log, read for roles starting with prefix.
func (s *Server) StatementLog(prefix string) *StatementLog {
	return &StatementLog{path: s.Layout().Log, prefix: prefix}
}

var logged = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC \[\d+\] (\S+) LOG:  (?:statement|execute [^:]*): *(\w+)`)

// Read returns the statements logged since the last Read (a line still
// being written waits for the next).
func (l *StatementLog) Read() ([]Statement, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("read statement log: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, l.off, 1<<40))
	if err != nil {
		return nil, fmt.Errorf("read statement log: %w", err)
	}
	l.off += int64(len(b))
	b = append(l.rest, b...)
	end := bytes.LastIndexByte(b, '\n') + 1
	l.rest = append([]byte(nil), b[end:]...)
	var out []Statement
	for line := range bytes.Lines(b[:end]) {
		m := logged.FindSubmatch(line)
		if m == nil || !strings.HasPrefix(string(m[2]), l.prefix) {
			continue
		}
		at, err := time.Parse("2006-01-02 15:04:05.000", string(m[1]))
		if err != nil {
			continue
		}
		switch strings.ToLower(string(m[3])) {
		case "select", "with":
			out = append(out, Statement{At: at, Role: string(m[2])})
		case "insert", "update", "delete":
			out = append(out, Statement{At: at, Role: string(m[2]), Write: true})
		}
	}
	return out, nil
}
