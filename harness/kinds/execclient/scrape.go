package execclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/lineproto"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// startScrape scrapes the Prometheus endpoint an incarnation named, once
// a second until it ends. Only an endpoint on loopback is scraped: the
// lab reaches no other address.
func (w *workload) startScrape(i, inc int, endpoint string) {
	key := [2]int{i, inc}
	w.mu.Lock()
	_, running := w.scrapes[key]
	w.mu.Unlock()
	if running {
		return
	}
	if err := loopbackURL(endpoint); err != nil {
		w.env.Event("note", w.group.ID(i), fmt.Sprintf("not scraping %s: %v", endpoint, err))
		w.mu.Lock()
		w.scrapes[key] = func() {}
		w.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.mu.Lock()
	w.scrapes[key] = cancel
	w.mu.Unlock()
	w.env.Event("note", w.group.ID(i), "scraping "+endpoint+" every second")
	c := &http.Client{Timeout: 900 * time.Millisecond}
	w.bg.Go(func() {
		lab.Every(ctx, time.Second, func() {
			if figs, err := lineproto.Scrape(ctx, c, endpoint); err == nil {
				w.record(i, w.env.Now(), figs)
			}
		})
	})
}

// endScrape stops the scrape of an incarnation that ended.
func (w *workload) endScrape(i, inc int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cancel, ok := w.scrapes[[2]int{i, inc}]; ok {
		cancel()
	}
}

// loopbackURL accepts an http URL whose host is a loopback address.
func loopbackURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("not an http URL")
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address", host)
}
