package training

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
)

// Mount is how a dashboard adds a route that only the run's token opens.
type Mount func(pattern string, h http.HandlerFunc)

// Routes adds the session's routes: GET /training (its state), POST
// /training/answer (an Answer) and GET /training/debrief (the report with
// its debrief, once written).
func (s *Session) Routes(mount Mount) {
	mount("GET /training", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.State()) })
	mount("POST /training/answer", s.answer)
	mount("GET /training/debrief", s.debrief)
}

func (s *Session) answer(w http.ResponseWriter, r *http.Request) {
	var a Answer
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&a); err != nil {
		http.Error(w, "decode answer: "+err.Error(), http.StatusBadRequest)
		return
	}
	a.Note = strings.TrimSpace(a.Note)
	if err := s.Answer(a); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, s.State())
}

func (s *Session) debrief(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	path := s.done
	s.mu.Unlock()
	if path == "" {
		http.Error(w, "the debrief is written when the run ends", http.StatusNotFound)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		http.Error(w, "read debrief: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
