package gameday

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/runner"

	_ "github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
)

func TestControlsHoldNextExtendEnd(t *testing.T) {
	c := NewControls(nil)
	ctx := context.Background()
	// As written: returns at t.
	g := c.Wait(ctx, "v", time.Now().Add(30*time.Millisecond), "pause")
	require.True(t, g.OK)
	require.False(t, g.End)

	// Held past t: it waits until released, and says so.
	require.NoError(t, c.Do("hold", 0, "fac"))
	done := make(chan struct{})
	var held = time.Now()
	go func() {
		g = c.Wait(ctx, "v", time.Now().Add(10*time.Millisecond), "pause")
		close(done)
	}()
	time.Sleep(150 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("a held timeline went on")
	default:
	}
	require.NoError(t, c.Do("release", 0, "fac"))
	<-done
	require.True(t, g.OK)
	require.GreaterOrEqual(t, time.Since(held), 150*time.Millisecond)
	require.Contains(t, strings.Join(g.Notes, "; "), "held before pause by fac")
	require.Contains(t, strings.Join(g.Notes, "; "), "released after")

	// Next: a step an hour away is taken now.
	go func() { time.Sleep(50 * time.Millisecond); _ = c.Do("next", 0, "fac") }()
	began := time.Now()
	g = c.Wait(ctx, "v", time.Now().Add(time.Hour), "kill-restart")
	require.True(t, g.OK)
	require.Less(t, time.Since(began), 5*time.Second)
	require.Contains(t, g.Notes[0], "taken now")

	// Extend moves the end, not the faults.
	require.NoError(t, c.Do("extend", 200*time.Millisecond, "fac"))
	began = time.Now()
	g = c.Wait(ctx, "v", time.Now(), "end")
	require.GreaterOrEqual(t, time.Since(began), 190*time.Millisecond)
	require.Contains(t, g.Notes[0], "extended by 200ms")

	// End: everything left is skipped.
	require.NoError(t, c.Do("end", 0, "fac"))
	g = c.Wait(ctx, "v", time.Now().Add(time.Hour), "pause")
	require.True(t, g.OK)
	require.True(t, g.End)

	require.Error(t, c.Do("explode", 0, "fac"))
	require.Error(t, c.Do("extend", -time.Second, "fac"))
}

// Until ended: the faults keep their times, but the end waits for the
// facilitator (or the most the run may go on), and says so.
func TestControlsUntilEnded(t *testing.T) {
	c := NewControls(nil)
	c.UntilEnded(time.Hour)
	ctx := context.Background()
	g := c.Wait(ctx, "v", time.Now().Add(20*time.Millisecond), "pause")
	require.True(t, g.OK, "a fault step keeps its time")
	done := make(chan runner.Go)
	go func() { done <- c.Wait(ctx, "v", time.Now(), "end") }()
	select {
	case <-done:
		t.Fatal("the run ended before the facilitator ended it")
	case <-time.After(200 * time.Millisecond):
	}
	require.Equal(t, "open until the facilitator ends it, at most 1h0m0s after the plan", c.Steering(), "the progress line says why the run goes on")
	require.NoError(t, c.Do("end", 0, "fac"))
	g = <-done
	require.Empty(t, c.Steering())
	require.True(t, g.OK)
	require.True(t, g.End)
	require.Contains(t, strings.Join(g.Notes, "; "), "until the facilitator ends it (at most 1h0m0s more)")
	require.Contains(t, strings.Join(g.Notes, "; "), "run ended by fac before end")
	require.Len(t, g.Noted, len(g.Notes), "each note has its time")
	require.GreaterOrEqual(t, g.Noted[len(g.Noted)-1].Sub(g.Noted[0]), 150*time.Millisecond, "the timeline played before the facilitator ended the run, and the notes say when")

	c = NewControls(nil)
	c.UntilEnded(50 * time.Millisecond)
	g = c.Wait(ctx, "v", time.Now(), "end")
	require.True(t, g.OK)
	require.Contains(t, strings.Join(g.Notes, "; "), "the most a run open to the facilitator lasts")
}

// The emergency stop closes Stopped once and ends the run.
func TestControlsEmergencyStop(t *testing.T) {
	c := NewControls(nil)
	select {
	case <-c.Stopped():
		t.Fatal("stopped before any stop")
	default:
	}
	require.NoError(t, c.Do("stop", 0, "fac"))
	require.NoError(t, c.Do("stop", 0, "fac"), "a second stop is harmless")
	<-c.Stopped()
	require.True(t, c.State().Stopped)
	g := c.Wait(context.Background(), "v", time.Now().Add(time.Hour), "pause")
	require.True(t, g.End)
}

func TestWaitEndsWithContext(t *testing.T) {
	c := NewControls(nil)
	require.NoError(t, c.Do("hold", 0, "fac"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	g := c.Wait(ctx, "v", time.Now(), "pause")
	require.False(t, g.OK)
}

func TestListenLoopbackOnly(t *testing.T) {
	_, err := Listen("0.0.0.0", 0, NewHub(), NewControls(nil))
	require.ErrorContains(t, err, "not a loopback address")
}

func TestServerNeedsTheToken(t *testing.T) {
	h := NewHub()
	c := NewControls(func(d string) { h.Control("", d) })
	s, err := Listen("127.0.0.1", 0, h, c)
	require.NoError(t, err)
	defer s.Close(context.Background())
	base := "http://" + s.Addr()

	post := func(path, tok, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("X-Chaoslab-Token", tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, _ := post("/control", "", `{"op":"hold"}`)
	require.Equal(t, http.StatusForbidden, code)
	code, _ = post("/control", "wrong", `{"op":"hold"}`)
	require.Equal(t, http.StatusForbidden, code)
	require.False(t, c.State().Held, "a request without the token acted")

	code, body := post("/control", s.Token, `{"op":"hold","author":"ann"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.True(t, c.State().Held)
	require.Equal(t, "ann (facilitator)", c.State().HeldBy)

	code, body = post("/act", s.Token, `{"fault":"no-such-fault","target":"leader","duration":"3s"}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "no-such-fault")
	code, body = post("/act", s.Token, `{"fault":"kill-restart","target":"leader","duration":"3s","author":"bob"}`)
	require.Equal(t, http.StatusOK, code, body)
	a := <-c.Actions()
	require.Equal(t, "kill-restart", a.Step.Fault)
	require.Equal(t, "bob (facilitator)", a.Author)
	require.Equal(t, 3*time.Second, a.Step.Duration.D())

	resp, err := http.Get(base + "/events")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, err = http.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// Each role's token does what its role may and no more: a viewer
// watches (acting and steering are refused, nothing changes); an
// operator acts, recorded with its author and role, but does not steer;
// the facilitator steers.
func TestRolesTokens(t *testing.T) {
	h := NewHub()
	c := NewControls(func(d string) { h.Control("", d) })
	s, err := Listen("127.0.0.1", 0, h, c)
	require.NoError(t, err)
	defer s.Close(context.Background())
	require.Len(t, s.Tokens, 3)
	require.NotEqual(t, s.Tokens[Viewer], s.Tokens[Operator])
	require.Equal(t, s.Token, s.Tokens[Facilitator])
	require.Contains(t, s.URLFor(Viewer), "token="+s.Tokens[Viewer])
	do := func(method, path string, role Role, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+s.Addr()+path, strings.NewReader(body))
		req.Header.Set("X-Chaoslab-Token", s.Tokens[role])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	act := `{"fault":"pause","target":"leader","duration":"3s","author":"vic"}`
	code, body := do(http.MethodGet, "/state", Viewer, "")
	require.Equal(t, http.StatusOK, code, body)
	code, body = do(http.MethodGet, "/whoami", Viewer, "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"role":"viewer"`)
	code, body = do(http.MethodPost, "/act", Viewer, act)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "a viewer's token may only watch: this needs the operator's")
	code, _ = do(http.MethodPost, "/control", Viewer, `{"op":"hold"}`)
	require.Equal(t, http.StatusForbidden, code)
	require.False(t, c.State().Held)
	select {
	case a := <-c.Actions():
		t.Fatalf("a viewer's request acted: %+v", a)
	default:
	}

	code, body = do(http.MethodPost, "/act", Operator, strings.Replace(act, "vic", "olga", 1))
	require.Equal(t, http.StatusOK, code, body)
	a := <-c.Actions()
	require.Equal(t, "olga (operator)", a.Author)
	code, body = do(http.MethodPost, "/control", Operator, `{"op":"end"}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "this needs the facilitator's")
	require.False(t, c.State().Ended)

	code, body = do(http.MethodPost, "/control", Facilitator, `{"op":"hold"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "facilitator", c.State().HeldBy, "no name given: the role")
}

// TestTailFeedsTheDashboard: a journal written as a run writes it reaches
// a subscriber, and the exposition shows the newest samples.
func TestTailFeedsTheDashboard(t *testing.T) {
	dir := t.TempDir()
	w, err := journal.Create(dir)
	require.NoError(t, err)
	h := NewHub()
	c, stop := h.Subscribe()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Tail(ctx, filepath.Join(dir, journal.File), h) }()

	head, _ := json.Marshal(map[string]any{"run_id": "r1"})
	w.Add(journal.Record{Kind: journal.KindHead, Body: head}, true)
	w.Add(journal.Record{Kind: journal.KindVariant, Variant: "vulnerable"}, true)
	began := time.Now()
	w.Add(journal.Record{Kind: journal.KindPoints, Variant: "vulnerable", Series: []lab.Series{
		{Name: "server.outstanding_requests", Source: "zk1", Points: []lab.Point{lab.Pt(1, 7), lab.Pt(2, 42)}}}}, true)
	var got []Message
	for len(got) < 3 {
		select {
		case b := <-c:
			var m Message
			require.NoError(t, json.Unmarshal(b, &m))
			got = append(got, m)
		case <-ctx.Done():
			t.Fatalf("only %d messages reached the dashboard", len(got))
		}
	}
	t.Logf("a sample reached the dashboard %s after it was journaled", time.Since(began))
	require.Equal(t, []string{"head", "variant", "points"}, []string{got[0].Type, got[1].Type, got[2].Type})
	exp := Exposition(h.Latest())
	require.Contains(t, exp, `chaoslab_server_outstanding_requests{variant="vulnerable",source="zk1"} 42`)
	require.Contains(t, exp, "# TYPE chaoslab_server_outstanding_requests gauge")
	w.Add(journal.Record{Kind: journal.KindEnd}, true)
	require.NoError(t, <-done)
	_ = os.Remove(filepath.Join(dir, journal.File))
}

// --listen on another address serves TLS with a certificate made for the
// run (here forced on 127.0.0.2, as tests stay on loopback): a client
// that trusts that certificate reaches it with a token, and nothing
// without one.
func TestListenAtTLS(t *testing.T) {
	h := NewHub()
	c := NewControls(nil)
	s, err := ListenAt("127.0.0.2:0", true, h, c)
	require.NoError(t, err)
	defer s.Close(context.Background())
	require.NotEmpty(t, s.CertPEM)
	require.Len(t, Fingerprint(s.CertPEM), 64)
	require.True(t, strings.HasPrefix(s.URLFor(Viewer), "https://127.0.0.2:"))
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(s.CertPEM))
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := cl.Get(s.URLFor(Viewer))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = cl.Get(strings.Replace(s.URLFor(Viewer), "/?token=", "/state?token=", 1))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = cl.Get("https://" + s.Addr() + "/state")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	// Plain HTTP on loopback unless TLS is asked for; a bad address is refused.
	p, err := ListenAt("127.0.0.1:0", false, h, c)
	require.NoError(t, err)
	defer p.Close(context.Background())
	require.Nil(t, p.CertPEM)
	_, err = ListenAt("127.0.0.1:http", false, h, c)
	require.ErrorContains(t, err, "want HOST:PORT")
}

// ServeAlso (--listen) adds a TLS address for colleagues beside the
// facilitator's loopback one: the same tokens work at both, the
// operators' and viewers' URLs point at the second, a viewer is refused
// an action there as on loopback.
func TestServeAlso(t *testing.T) {
	s, err := Listen("127.0.0.1", 0, NewHub(), NewControls(nil))
	require.NoError(t, err)
	defer s.Close(context.Background())
	require.NoError(t, s.ServeAlso("127.0.0.2:0"))
	require.Error(t, s.ServeAlso("127.0.0.3:0"), "a third address")
	require.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"), s.URL())
	require.True(t, strings.HasPrefix(s.URLFor(Operator), "https://127.0.0.2:"), s.URLFor(Operator))
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(s.CertPEM))
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, u := range []string{s.URLAt(s.Addr(), false, Viewer), s.URLFor(Viewer)} {
		resp, err := cl.Get(strings.Replace(u, "/?token=", "/whoami?token=", 1))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, u)
		resp, err = cl.Post(strings.Replace(u, "/?token=", "/act?token=", 1), "application/json", strings.NewReader(`{"kind":"kill","target":"clients:1"}`))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, u)
	}
}
