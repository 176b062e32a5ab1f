package gameday

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// Role is what a token lets its bearer do on the dashboard: a viewer
// watches; an operator also acts on the system; the facilitator also
// holds, extends and ends the run.
type Role int

const (
	Viewer Role = iota
	Operator
	Facilitator
)

// Roles, lowest first.
var Roles = []Role{Viewer, Operator, Facilitator}

func (r Role) String() string {
	switch r {
	case Operator:
		return "operator"
	case Facilitator:
		return "facilitator"
	}
	return "viewer"
}

// may is what a role may do, for the refusal's text.
func (r Role) may() string {
	switch r {
	case Operator:
		return "watch and act on the system"
	case Facilitator:
		return "watch, act, hold, extend and end the run"
	}
	return "watch"
}

// Tokens are the run's tokens, one per role.
type Tokens map[Role]string

func newTokens() (Tokens, error) {
	t := Tokens{}
	for _, r := range Roles {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("make token: %w", err)
		}
		t[r] = hex.EncodeToString(b)
	}
	return t, nil
}

// role is the role a token gives (false: none).
func (t Tokens) role(tok string) (Role, bool) {
	found, ok := Viewer, false
	for _, r := range Roles {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(t[r])) == 1 {
			found, ok = r, true
		}
	}
	return found, ok
}

type roleKey struct{}

// RoleOf is the role of the token a request bore (Viewer when none).
func RoleOf(r *http.Request) Role {
	role, _ := r.Context().Value(roleKey{}).(Role)
	return role
}

// authed lets a request through only with a token whose role is at least
// min, and tells the handler which role it was.
func (s *Server) authed(min Role, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get("X-Chaoslab-Token")
		if tok == "" {
			tok = r.URL.Query().Get("token")
		}
		role, ok := s.Tokens.role(tok)
		if !ok {
			http.Error(w, "this run's token is required", http.StatusForbidden)
			return
		}
		if role < min {
			http.Error(w, fmt.Sprintf("a %s's token may only %s: this needs the %s's", role, role.may(), min), http.StatusForbidden)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), roleKey{}, role)))
	}
}

// whoami tells the dashboard its bearer's role, so that it shows only
// the controls that role may use.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	role := RoleOf(r)
	writeJSON(w, map[string]string{"role": role.String(), "may": role.may()})
}

// authorOf is who did it: the name given, with the token's role.
func authorOf(r *http.Request, name string) string {
	role := RoleOf(r).String()
	if name = strings.TrimSpace(name); name == "" {
		return role
	}
	return name + " (" + role + ")"
}
