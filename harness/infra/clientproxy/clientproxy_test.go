package clientproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serve starts a loopback server whose /block requests wait for release;
// h2 makes it speak HTTP/2 without TLS (as gRPC does to etcd).
func serve(t *testing.T, h2 bool) (addr string, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/block" {
			<-release
		}
		io.WriteString(w, strings.Repeat("x", 100<<10))
	}))
	if h2 {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), release
}

func client(h2 bool) *http.Client {
	tr := &http.Transport{}
	if h2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestCountsRequestsAndOutstanding(t *testing.T) {
	for _, tc := range []struct {
		name string
		h2   bool
	}{{"http1", false}, {"h2", true}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, release := serve(t, tc.h2)
			c, err := New([]string{addr})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			via := c.Via(addr)
			if via == addr || !strings.HasPrefix(via, "127.0.0.1:") {
				t.Fatalf("Via(%s) = %s, want a relay on loopback", addr, via)
			}
			hc := client(tc.h2)
			for range 3 {
				resp, err := hc.Post("http://"+via+"/get", "text/plain", strings.NewReader(strings.Repeat("y", 70<<10)))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done := make(chan error)
			go func() {
				resp, err := hc.Get("http://" + via + "/block")
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			waitFor(t, c, func(n Counts) bool { return n.Requests == 4 && n.Outstanding == 1 })
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			waitFor(t, c, func(n Counts) bool { return n.Requests == 4 && n.Outstanding == 0 })
			if n := c.Counts(); n.Connections < 1 || n.Connections > 2 {
				t.Errorf("connections = %d, want 1 or 2 (a kept-alive client)", n.Connections)
			}
			hc.CloseIdleConnections()
		})
	}
}

// A connection that ends with a request unanswered gives it back.
func TestClosedConnectionHoldsNothing(t *testing.T) {
	addr, release := serve(t, false)
	defer close(release)
	c, err := New([]string{addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Via(addr)+"/block", nil)
	go client(false).Do(req)
	waitFor(t, c, func(n Counts) bool { return n.Outstanding == 1 })
	cancel()
	waitFor(t, c, func(n Counts) bool { return n.Outstanding == 0 && n.Requests == 1 })
}

func waitFor(t *testing.T, c *Client, ok func(Counts) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok(c.Counts()) {
		if time.Now().After(deadline) {
			t.Fatalf("counts = %+v", c.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
