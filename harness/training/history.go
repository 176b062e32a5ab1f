package training

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/reports"
)

// HistoryEntry is one training session as a trainee's history keeps it.
type HistoryEntry struct {
	Trainee  string    `json:"trainee"`
	At       time.Time `json:"at"`
	Case     string    `json:"case"`
	Scenario string    `json:"scenario"`
	Variant  string    `json:"variant"`
	Score    int       `json:"score"`
	Max      int       `json:"max"`
	// Diagnosed says whether the right cause was named, and how long after
	// the first fault (seconds).
	Diagnosed      bool    `json:"diagnosed"`
	DiagnosedAfter float64 `json:"diagnosed_after_s,omitempty"`
	Outcome        string  `json:"outcome"`
	// Report is the run's folder: its debrief is its report's first part.
	Report string `json:"report"`
}

// HistoryDir is where trainees' histories are kept: $CHAOSLAB_TRAINEES,
// else chaoslab/trainees under the user's data folder
// ($XDG_DATA_HOME or ~/.local/share).
func HistoryDir() (string, error) {
	if d := os.Getenv("CHAOSLAB_TRAINEES"); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find trainees' folder: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "chaoslab", "trainees"), nil
}

// historyFile is a trainee's file in dir (the name kept to safe letters).
func historyFile(dir, trainee string) string {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, strings.TrimSpace(trainee))
	if name == "" || strings.Trim(name, ".") == "" {
		name = "trainee"
	}
	return filepath.Join(dir, name+".jsonl")
}

// Keep appends the session's debrief to its trainee's history in dir and
// returns the file.
func Keep(dir string, r *reports.Report) (string, error) {
	d := r.Debrief
	if d == nil || len(r.Variants) == 0 {
		return "", errors.New("keep training: the report has no debrief")
	}
	e := HistoryEntry{Trainee: d.Trainee, At: r.StartedAt, Case: r.Case.ID, Variant: r.Variants[0].Name,
		Score: d.Score, Max: d.Max, Diagnosed: d.DiagnosedAfter >= 0, Outcome: d.Outcome, Report: r.Dir}
	if r.Scenario != nil {
		e.Scenario = r.Scenario.ID
	}
	if e.Diagnosed {
		e.DiagnosedAfter = d.DiagnosedAfter
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("keep training: %w", err)
	}
	path := historyFile(dir, d.Trainee)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("keep training: %w", err)
	}
	b, _ := json.Marshal(e)
	_, err = f.Write(append(b, '\n'))
	return path, errors.Join(err, f.Close())
}

// History is a trainee's sessions, oldest first (none when they have no
// file yet).
func History(dir, trainee string) ([]HistoryEntry, error) {
	f, err := os.Open(historyFile(dir, trainee))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read training history: %w", err)
	}
	defer f.Close()
	var out []HistoryEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var e HistoryEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("read training history: %s:%d: %w", f.Name(), n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
