// Package consulload drives a real Consul client agent the way the pods of
// a large fleet drive their local agent: many concurrent DNS SRV lookups
// (over TCP, as GitLab's database load balancer did) and blocking health
// queries for one service with many instances whose health check flaps,
// and it records the agent's memory as its cgroup charges it. It is the
// trigger of IL-0206's replay: see README.md for the mechanism in Consul
// 1.14.11's code and the figures measured with it.
package consulload

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// Service is a service with many instances, each on a catalog node of its
// own (an "external" node: no agent, no serf health check, so the servers
// never reap it), with one health check per instance whose output is
// OutputBytes long (Consul keeps up to 4 KiB of a check's output by
// default: check_output_max_size).
type Service struct {
	// Name of the service ("replica").
	Name string `yaml:"name" json:"name"`
	// Instances is how many instances it has.
	Instances int `yaml:"instances" json:"instances"`
	// OutputBytes is the length of each check's output.
	OutputBytes int `yaml:"output_bytes" json:"output_bytes"`
	// Tags on each instance.
	Tags []string `yaml:"tags" json:"tags"`
}

// NewService is the default: 400 instances of "replica" with 4 KiB of
// check output each.
func NewService() Service {
	return Service{Name: "replica", Instances: 400, OutputBytes: 4096, Tags: []string{"replica", "patroni"}}
}

// Check says what is wrong with s.
func (s Service) Check() error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, ". /"):
		return fmt.Errorf("service name %q: want a DNS label", s.Name)
	case s.Instances < 1 || s.Instances > 10000:
		return fmt.Errorf("instances %d: want 1 to 10000", s.Instances)
	case s.OutputBytes < 0 || s.OutputBytes > 1<<20:
		return fmt.Errorf("output_bytes %d: want 0 to 1 MiB", s.OutputBytes)
	}
	return nil
}

// node is the catalog node of instance i.
func (s Service) node(i int) string { return fmt.Sprintf("%s-node-%04d", s.Name, i) }

// addr is the loopback address of instance i (127.1.x.y).
func (s Service) addr(i int) string {
	return fmt.Sprintf("127.1.%d.%d", (i/250)%250, i%250+1)
}

// registration is instance i in state status ("passing", "critical"),
// with an output of OutputBytes that names the time of the change.
func (s Service) registration(i int, status string) *api.CatalogRegistration {
	id := s.Name + "-" + strconv.Itoa(i)
	return &api.CatalogRegistration{
		Node: s.node(i), Address: s.addr(i), SkipNodeUpdate: false,
		NodeMeta: map[string]string{"pool": s.Name},
		Service: &api.AgentService{
			ID: id, Service: s.Name, Port: 5432, Tags: s.Tags,
			Meta: map[string]string{"instance": strconv.Itoa(i)},
		},
		Check: &api.AgentCheck{
			Node: s.node(i), CheckID: "service:" + id, Name: s.Name + " replication lag",
			Status: status, ServiceID: id, Output: output(s.OutputBytes, status),
		},
	}
}

// output is n bytes of a check's output beginning with its status and time.
func output(n int, status string) string {
	head := status + " at " + time.Now().UTC().Format(time.RFC3339Nano) + "; lag "
	if n <= len(head) {
		return head[:n]
	}
	return head + strings.Repeat("0123456789abcdef", n/16+1)[:n-len(head)]
}

// Register writes every instance of s into the catalog through c (a
// server's or an agent's HTTP API), passing, with up to 16 writes at once.
func Register(ctx context.Context, c *api.Client, s Service) error {
	if err := s.Check(); err != nil {
		return fmt.Errorf("register service: %w", err)
	}
	sem := make(chan struct{}, 16)
	errs := make(chan error, s.Instances)
	for i := range s.Instances {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("register service: %w", ctx.Err())
		}
		go func() {
			defer func() { <-sem }()
			_, err := c.Catalog().Register(s.registration(i, api.HealthPassing), (&api.WriteOptions{}).WithContext(ctx))
			errs <- err
		}()
	}
	for range s.Instances {
		if err := <-errs; err != nil {
			return fmt.Errorf("register service %s: %w", s.Name, err)
		}
	}
	return nil
}

// Flap turns instance 0's check critical and passing again, one change
// every period, until ctx ends; every change is a new index of the
// service's health, which wakes every blocking query on it. It returns the
// number of changes written.
func Flap(ctx context.Context, c *api.Client, s Service, every time.Duration) (int, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, nil
		case <-t.C:
		}
		status := api.HealthCritical
		if n%2 == 1 {
			status = api.HealthPassing
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Catalog().Register(s.registration(0, status), (&api.WriteOptions{}).WithContext(wctx))
		cancel()
		if err != nil && ctx.Err() == nil {
			return n, fmt.Errorf("flap check: %w", err)
		}
		n++
	}
}
