// Package ebscontrol is the control plane of the AWS-EBS-2011 replay: a
// regional API service whose state lives in a real etcd cluster. It holds
// each volume's record (zone, primary, mirror, epoch), each storage node's
// free replica slots, and the transactions that claim and release a slot
// and elect a volume's primary. Its HTTP API serves every zone through a
// bounded worker pool (one shared by all zones, or one per zone) with a
// request timeout, as the write-up's regional control plane did.
package ebscontrol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoSpace is a claim that found too few nodes with a free slot.
var ErrNoSpace = errors.New("no free replica slot in the zone")

// ErrNotPrimary is an election asked by a node that is not the primary.
var ErrNotPrimary = errors.New("not the volume's primary")

// maxTxnTries bounds the retries of a transaction that lost a race.
const maxTxnTries = 20

// Store is the control plane's view of etcd under a prefix.
type Store struct {
	Cli    *clientv3.Client
	Prefix string
}

// Volume is a volume's record.
type Volume struct {
	ID      string `json:"id"`
	Zone    string `json:"zone"`
	Primary string `json:"primary"`
	Mirror  string `json:"mirror"`
	Epoch   int64  `json:"epoch"`
}

func (s Store) capKey(zone, node string) string { return path.Join(s.Prefix, "cap", zone, node) }
func (s Store) capZone(zone string) string      { return path.Join(s.Prefix, "cap", zone) + "/" }
func (s Store) volKey(id string) string         { return path.Join(s.Prefix, "vol", id) }

// SetFree writes a node's free slots (seeding).
func (s Store) SetFree(ctx context.Context, zone, node string, free int) error {
	if _, err := s.Cli.Put(ctx, s.capKey(zone, node), strconv.Itoa(free)); err != nil {
		return fmt.Errorf("put capacity: %w", err)
	}
	return nil
}

// PutVolume writes a volume's record (seeding, create-volume).
func (s Store) PutVolume(ctx context.Context, v Volume) error {
	b, _ := json.Marshal(v)
	if _, err := s.Cli.Put(ctx, s.volKey(v.ID), string(b)); err != nil {
		return fmt.Errorf("put volume: %w", err)
	}
	return nil
}

// GetVolume reads a volume's record and its revision.
func (s Store) GetVolume(ctx context.Context, id string) (Volume, int64, error) {
	r, err := s.Cli.Get(ctx, s.volKey(id))
	if err != nil {
		return Volume{}, 0, fmt.Errorf("get volume: %w", err)
	}
	if len(r.Kvs) == 0 {
		return Volume{}, 0, fmt.Errorf("get volume: %s: not found", id)
	}
	var v Volume
	if err := json.Unmarshal(r.Kvs[0].Value, &v); err != nil {
		return Volume{}, 0, fmt.Errorf("decode volume: %w", err)
	}
	return v, r.Kvs[0].ModRevision, nil
}

// nodeFree is one node's free slots as read.
type nodeFree struct {
	node string
	free int
	rev  int64
}

func (s Store) zoneFree(ctx context.Context, zone string) ([]nodeFree, error) {
	r, err := s.Cli.Get(ctx, s.capZone(zone), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read capacity: %w", err)
	}
	out := make([]nodeFree, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		n, err := strconv.Atoi(string(kv.Value))
		if err != nil {
			return nil, fmt.Errorf("read capacity: %s: %w", kv.Key, err)
		}
		out = append(out, nodeFree{node: path.Base(string(kv.Key)), free: n, rev: kv.ModRevision})
	}
	return out, nil
}

// Free is the free slots of every zone.
func (s Store) Free(ctx context.Context) (map[string]int, error) {
	r, err := s.Cli.Get(ctx, path.Join(s.Prefix, "cap")+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read capacity: %w", err)
	}
	out := map[string]int{}
	for _, kv := range r.Kvs {
		n, _ := strconv.Atoi(string(kv.Value))
		out[path.Base(path.Dir(string(kv.Key)))] += n
	}
	return out, nil
}

// Claim takes one free slot on each of n distinct nodes of the zone, none
// of them in exclude, leaving at least reserve slots free on each: the
// nodes with the most free slots first. It is one etcd transaction that
// holds only if no chosen node's capacity changed since it was read; a
// lost race is retried. ErrNoSpace: too few nodes have room.
func (s Store) Claim(ctx context.Context, zone string, exclude []string, n, reserve int) ([]string, error) {
	for range maxTxnTries {
		nodes, err := s.zoneFree(ctx, zone)
		if err != nil {
			return nil, err
		}
		pick := choose(nodes, exclude, n, reserve)
		if len(pick) < n {
			return nil, ErrNoSpace
		}
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		var names []string
		for _, p := range pick {
			k := s.capKey(zone, p.node)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", p.rev))
			ops = append(ops, clientv3.OpPut(k, strconv.Itoa(p.free-1)))
			names = append(names, p.node)
		}
		r, err := s.Cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("claim slot: %w", err)
		}
		if r.Succeeded {
			return names, nil
		}
	}
	return nil, fmt.Errorf("claim slot: %d transactions lost their race", maxTxnTries)
}

// choose picks n nodes not excluded with more than reserve free slots,
// the most free first (ties by name, so a claim is reproducible).
func choose(nodes []nodeFree, exclude []string, n, reserve int) []nodeFree {
	var c []nodeFree
	for _, nd := range nodes {
		skip := nd.free <= reserve
		for _, x := range exclude {
			skip = skip || nd.node == x
		}
		if !skip {
			c = append(c, nd)
		}
	}
	sort.Slice(c, func(i, j int) bool {
		if c[i].free != c[j].free {
			return c[i].free > c[j].free
		}
		return c[i].node < c[j].node
	})
	return c[:min(n, len(c))]
}

// Release gives a slot back to a node.
func (s Store) Release(ctx context.Context, zone, node string) error {
	k := s.capKey(zone, node)
	for range maxTxnTries {
		r, err := s.Cli.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("release slot: %w", err)
		}
		if len(r.Kvs) == 0 {
			return fmt.Errorf("release slot: no node %s in zone %s", node, zone)
		}
		n, _ := strconv.Atoi(string(r.Kvs[0].Value))
		t, err := s.Cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", r.Kvs[0].ModRevision)).
			Then(clientv3.OpPut(k, strconv.Itoa(n+1))).Commit()
		if err != nil {
			return fmt.Errorf("release slot: %w", err)
		}
		if t.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("release slot: %d transactions lost their race", maxTxnTries)
}

// Elect makes mirror the volume's mirror with primary staying its primary,
// and moves its epoch on: a transaction that holds only if the record is
// unchanged since read and primary is still the primary (one primary per
// volume at any moment). The old mirror's slot is not given back: its node
// still holds the replica the primary believes lost, as in the write-up.
func (s Store) Elect(ctx context.Context, id, primary, mirror string) (Volume, error) {
	for range maxTxnTries {
		v, rev, err := s.GetVolume(ctx, id)
		if err != nil {
			return Volume{}, err
		}
		if v.Primary != primary {
			return v, ErrNotPrimary
		}
		v.Mirror, v.Epoch = mirror, v.Epoch+1
		b, _ := json.Marshal(v)
		r, err := s.Cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.volKey(id)), "=", rev)).
			Then(clientv3.OpPut(s.volKey(id), string(b))).Commit()
		if err != nil {
			return Volume{}, fmt.Errorf("elect primary: %w", err)
		}
		if r.Succeeded {
			return v, nil
		}
	}
	return Volume{}, fmt.Errorf("elect primary: %d transactions lost their race", maxTxnTries)
}

// DeleteVolume removes a volume's record and gives its slots back.
func (s Store) DeleteVolume(ctx context.Context, id string) error {
	v, _, err := s.GetVolume(ctx, id)
	if err != nil {
		return err
	}
	if _, err := s.Cli.Delete(ctx, s.volKey(id)); err != nil {
		return fmt.Errorf("delete volume: %w", err)
	}
	for _, n := range []string{v.Primary, v.Mirror} {
		if err := s.Release(ctx, v.Zone, n); err != nil {
			return err
		}
	}
	return nil
}
