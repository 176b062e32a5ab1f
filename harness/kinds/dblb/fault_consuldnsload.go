package dblb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/kinds/dblb/consulload"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// DNSLoadTarget is a Consul client agent the consul-dns-load fault can
// drive: its DNS address as the harness reaches it, and a server's API
// for the catalog writes (not through the agent, which may be dead).
type DNSLoadTarget interface {
	faults.Target
	// DNSAddr is "" with no error on a probe (nothing started yet).
	DNSAddr() (string, error)
	ServerAPI() (*api.Client, error)
}

// ConsulDNSLoad is IL-0206's trigger, a mechanism of Consul's own
// (harness/kinds/dblb/consulload): many uncached DNS lookups in flight at a client
// agent of a service with many instances and large check outputs, one of
// them flapping. Every lookup is a Health.ServiceNodes RPC whose whole
// reply the agent decodes for that lookup alone, so its memory is
// (lookups in flight) x (the service's size): past its memory limit the
// kernel kills it, and the load goes on against every restart for the
// duration.
type ConsulDNSLoad struct {
	// Lookers is the lookups in flight at each agent (each asks again as
	// soon as it has an answer).
	Lookers int `yaml:"lookers"`
	// Instances is how many instances the looked-up service has.
	Instances int `yaml:"instances"`
	// OutputBytes is each instance's check output.
	OutputBytes int `yaml:"output_bytes"`
	// Flap turns one instance's check critical and passing again, one
	// change every period (0: none).
	Flap faults.Duration `yaml:"flap"`

	once     sync.Once
	regErr   error
	flapping atomic.Bool // one target flaps the check for all
}

func init() {
	faults.Register(func() faults.Fault {
		return &ConsulDNSLoad{Lookers: 25, Instances: 400, OutputBytes: 4096, Flap: faults.Duration(time.Second)}
	})
}

func (*ConsulDNSLoad) Name() string { return "consul-dns-load" }

// Check validates the parameters.
func (f *ConsulDNSLoad) Check() []lab.Problem {
	var c lab.Checks
	c.Need(f.Lookers >= 1 && f.Lookers <= 5000, "lookers", "want 1 to 5000, got %d", f.Lookers)
	c.Need(f.Instances >= 1 && f.Instances <= 10000, "instances", "want 1 to 10000 (catalog registrations), got %d", f.Instances)
	c.Need(f.OutputBytes >= 0 && f.OutputBytes <= 4096, "output_bytes", "want 0 to 4096 (Consul keeps at most check_output_max_size, 4 KiB, of a check's output), got %d", f.OutputBytes)
	c.Msg("flap", lab.CheckDuration(f.Flap, 0, ""))
	return c
}

func (*ConsulDNSLoad) Available(t faults.Target) error {
	d, ok := t.(DNSLoadTarget)
	if !ok {
		return fmt.Errorf("consul-dns-load: target %s is not a Consul client agent", faults.TargetName(t))
	}
	if _, err := d.DNSAddr(); err != nil {
		return fmt.Errorf("consul-dns-load: %w", err)
	}
	return nil
}

func (f *ConsulDNSLoad) service() consulload.Service {
	s := consulload.NewService()
	s.Name, s.Instances, s.OutputBytes = "fleet-frontend", f.Instances, f.OutputBytes
	return s
}

// Inject registers the service once (every selected agent shares it),
// then drives the lookups at the agent for d.
func (f *ConsulDNSLoad) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	a := t.(DNSLoadTarget)
	addr, err := a.DNSAddr()
	if err != nil {
		return fmt.Errorf("drive dns load: %w", err)
	}
	srv, err := a.ServerAPI()
	if err != nil {
		return fmt.Errorf("drive dns load: %w", err)
	}
	svc := f.service()
	f.once.Do(func() { f.regErr = consulload.Register(ctx, srv, svc) })
	if f.regErr != nil {
		return fmt.Errorf("drive dns load: %w", f.regErr)
	}
	lctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	if f.Flap > 0 && f.flapping.CompareAndSwap(false, true) {
		defer f.flapping.Store(false)
		wg.Go(func() { _, _ = consulload.Flap(lctx, srv, svc, f.Flap.D()) })
	}
	n, err := consulload.Run(lctx, consulload.Load{DNSAddr: addr, Service: svc.Name, Lookers: f.Lookers, TCP: true})
	wg.Wait()
	if sent := n.Lookups + n.Empty + n.Failed; sent > 0 {
		faults.Landed(ctx, t, "%d DNS lookups sent to the agent (%d answered with records, %d empty, %d unanswered)", sent, n.Lookups, n.Empty, n.Failed)
	} else {
		faults.Missed(ctx, t, "no DNS lookup was sent to the agent")
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("drive dns load: %w", err)
	}
	return nil
}
