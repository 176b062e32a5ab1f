package consulload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
)

// Load is what N app pods ask of their agent at once.
type Load struct {
	// DNSAddr and HTTPAddr are the agent's DNS and HTTP addresses
	// ("127.0.0.1:port").
	DNSAddr  string `yaml:"-" json:"dns_addr"`
	HTTPAddr string `yaml:"-" json:"http_addr"`
	// Service is the name looked up (NAME.service.consul SRV).
	Service string `yaml:"service" json:"service"`
	// Lookers is how many lookups are in flight at the agent at once:
	// each looker asks again as soon as it has an answer.
	Lookers int `yaml:"lookers" json:"lookers"`
	// TCP sends the lookups over TCP (GitLab did: UDP answers were
	// truncated); else UDP.
	TCP bool `yaml:"tcp" json:"tcp"`
	// Pause is how long a looker waits between its lookups (0: none).
	Pause time.Duration `yaml:"pause" json:"pause"`
	// Watchers is how many blocking queries on /v1/health/service/NAME
	// wait at the agent at once.
	Watchers int `yaml:"watchers" json:"watchers"`
	// Timeout bounds one lookup (default 10 s).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// Check says what is wrong with l.
func (l Load) Check() error {
	switch {
	case l.Service == "":
		return errors.New("no service to look up")
	case l.Lookers < 0 || l.Lookers > 5000:
		return fmt.Errorf("lookers %d: want 0 to 5000", l.Lookers)
	case l.Watchers < 0 || l.Watchers > 5000:
		return fmt.Errorf("watchers %d: want 0 to 5000", l.Watchers)
	case l.Lookers > 0 && l.DNSAddr == "":
		return errors.New("lookers without the agent's DNS address")
	case l.Watchers > 0 && l.HTTPAddr == "":
		return errors.New("watchers without the agent's HTTP address")
	}
	return nil
}

// Counts are what a load got from the agent.
type Counts struct {
	Lookups      int64 // lookups answered with at least one record
	Empty        int64 // answered with no record (NXDOMAIN or none)
	Failed       int64 // no answer (timeout, refused, truncated, ...)
	Records      int64 // SRV records received in all
	WatchAnswers int64 // blocking queries answered
	WatchFailed  int64 // blocking queries failed
	LastError    string
}

// Run drives l against the agent until ctx ends and returns its counts.
// Failures are counted, not returned: an agent that dies under the load
// is what it is for.
func Run(ctx context.Context, l Load) (Counts, error) {
	if err := l.Check(); err != nil {
		return Counts{}, fmt.Errorf("run load: %w", err)
	}
	if l.Timeout <= 0 {
		l.Timeout = 10 * time.Second
	}
	var c counts
	var wg sync.WaitGroup
	for range l.Lookers {
		wg.Go(func() { look(ctx, l, &c) })
	}
	if l.Watchers > 0 {
		cli, err := watchClient(l.HTTPAddr, l.Watchers)
		if err != nil {
			return Counts{}, fmt.Errorf("run load: %w", err)
		}
		for range l.Watchers {
			wg.Go(func() { watch(ctx, cli, l.Service, &c) })
		}
	}
	wg.Wait()
	return c.snapshot(), nil
}

type counts struct {
	lookups, empty, failed, records, watchAnswers, watchFailed atomic.Int64
	lastErr                                                    atomic.Value // string
}

func (c *counts) fail(n *atomic.Int64, err error) {
	n.Add(1)
	c.lastErr.Store(err.Error())
}

func (c *counts) snapshot() Counts {
	last, _ := c.lastErr.Load().(string)
	return Counts{c.lookups.Load(), c.empty.Load(), c.failed.Load(), c.records.Load(), c.watchAnswers.Load(), c.watchFailed.Load(), last}
}

// Resolver asks the DNS interface at addr and nothing else, over TCP or
// UDP.
func Resolver(addr string, tcp bool) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		if tcp {
			network = "tcp"
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// look asks NAME.service.consul SRV again and again until ctx ends.
func look(ctx context.Context, l Load, c *counts) {
	r := Resolver(l.DNSAddr, l.TCP)
	name := l.Service + ".service.consul."
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, l.Timeout)
		_, srvs, err := r.LookupSRV(lctx, "", "", name)
		cancel()
		var dnsErr *net.DNSError
		switch {
		case ended(ctx):
			return
		case err == nil && len(srvs) > 0:
			c.lookups.Add(1)
			c.records.Add(int64(len(srvs)))
		case err == nil, errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			c.empty.Add(1)
		default:
			c.fail(&c.failed, err)
			sleep(ctx, 100*time.Millisecond) // a dead agent refuses at once
		}
		sleep(ctx, l.Pause)
	}
}

// watchClient is an API client of the agent with room for n idle
// connections (each blocking query holds one).
func watchClient(addr string, n int) (*api.Client, error) {
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = addr
	tr := cfg.Transport
	tr.MaxIdleConnsPerHost, tr.MaxIdleConns = n, n
	cfg.HttpClient = &http.Client{Transport: tr, Timeout: 6 * time.Minute}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("create consul client: %w", err)
	}
	return c, nil
}

// watch keeps a blocking query on the service's health until ctx ends,
// as a watcher of each pod would (index of the last answer, 5 min wait).
func watch(ctx context.Context, cli *api.Client, service string, c *counts) {
	var index uint64
	for ctx.Err() == nil {
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Minute}).WithContext(ctx)
		_, meta, err := cli.Health().Service(service, "", false, q)
		switch {
		case ended(ctx):
			return
		case err != nil:
			c.fail(&c.watchFailed, err)
			index = 0
			sleep(ctx, 100*time.Millisecond)
		default:
			c.watchAnswers.Add(1)
			index = meta.LastIndex
		}
	}
}

// ended reports whether ctx is done or past its deadline: a dial can
// time out on the deadline a moment before ctx's own timer marks it done,
// and that last lookup is not a failure of the agent's.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// String is a one-line summary.
func (c Counts) String() string {
	return "lookups " + strconv.FormatInt(c.Lookups, 10) + " empty " + strconv.FormatInt(c.Empty, 10) +
		" failed " + strconv.FormatInt(c.Failed, 10) + " watch answers " + strconv.FormatInt(c.WatchAnswers, 10) +
		" watch failed " + strconv.FormatInt(c.WatchFailed, 10) + " last error " + strconv.Quote(c.LastError)
}
