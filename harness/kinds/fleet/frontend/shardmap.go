package frontend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Shard is one entry of the shard table: a range of the key hash space and
// the back-end cell that owns it. The table is the configuration store's
// (etcd's) record; a front-end server needs all of it to route.
type Shard struct {
	ID    int    `json:"id"`
	Lo    uint32 `json:"lo"`
	Hi    uint32 `json:"hi"` // inclusive
	Cell  string `json:"cell"`
	Epoch int    `json:"epoch"`
}

// Table is the shard table, sorted by Lo.
type Table []Shard

// ChunkSize is the number of shards per etcd key of the configuration store.
const ChunkSize = 1000

// NewTable makes a table of n shards over the 32-bit hash space, owned
// round robin by cells back-end cells.
func NewTable(n, cells int) Table {
	t := make(Table, n)
	step := uint64(1<<32) / uint64(n)
	for i := range t {
		lo := uint64(i) * step
		hi := lo + step - 1
		if i == n-1 {
			hi = 1<<32 - 1
		}
		t[i] = Shard{ID: i, Lo: uint32(lo), Hi: uint32(hi), Cell: "be-" + strconv.Itoa(i%cells+1), Epoch: 1}
	}
	return t
}

// Route returns the shard owning key, or false when the table is empty.
func (t Table) Route(key string) (Shard, bool) {
	if len(t) == 0 {
		return Shard{}, false
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	x := h.Sum32()
	i := sort.Search(len(t), func(i int) bool { return t[i].Hi >= x })
	if i == len(t) {
		return Shard{}, false
	}
	return t[i], true
}

// Digest is a short hash of the table's content, compared between peers.
func (t Table) Digest() string {
	h := sha256.New()
	for _, s := range t {
		fmt.Fprintf(h, "%d:%d:%d:%s:%d;", s.ID, s.Lo, s.Hi, s.Cell, s.Epoch)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Valid checks that the table covers the hash space without gaps.
func (t Table) Valid() error {
	if len(t) == 0 {
		return fmt.Errorf("empty shard table")
	}
	if t[0].Lo != 0 || t[len(t)-1].Hi != 1<<32-1 {
		return fmt.Errorf("shard table does not cover the hash space")
	}
	for i := 1; i < len(t); i++ {
		if t[i].Lo != t[i-1].Hi+1 {
			return fmt.Errorf("shard table has a gap or overlap at shard %d", t[i].ID)
		}
	}
	return nil
}

// StorePrefix is where the configuration store keeps the table's chunks.
func StorePrefix(prefix string) string { return prefix + "/shards/" }

// MembersPrefix is where the membership service keeps the registrations.
func MembersPrefix(prefix string) string { return prefix + "/members/" }

// SeedStore writes t into etcd under prefix, ChunkSize shards per key.
func SeedStore(ctx context.Context, cli *clientv3.Client, prefix string, t Table) error {
	if _, err := cli.Delete(ctx, StorePrefix(prefix), clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("clear shard table: %w", err)
	}
	for i := 0; i < len(t); i += ChunkSize {
		chunk := t[i:min(i+ChunkSize, len(t))]
		b, err := json.Marshal(chunk)
		if err != nil {
			return err
		}
		if _, err := cli.Put(ctx, fmt.Sprintf("%s%06d", StorePrefix(prefix), i/ChunkSize), string(b)); err != nil {
			return fmt.Errorf("write shard table: %w", err)
		}
	}
	return nil
}

// LoadStore reads the table from etcd.
func LoadStore(ctx context.Context, cli *clientv3.Client, prefix string) (Table, error) {
	resp, err := cli.Get(ctx, StorePrefix(prefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("read shard table: %w", err)
	}
	var t Table
	for _, kv := range resp.Kvs {
		var chunk Table
		if err := json.Unmarshal(kv.Value, &chunk); err != nil {
			return nil, fmt.Errorf("read shard table: %s: %w", kv.Key, err)
		}
		t = append(t, chunk...)
	}
	if err := t.Valid(); err != nil {
		return nil, fmt.Errorf("read shard table: %w", err)
	}
	return t, nil
}
