package zkensemble

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// loopback is the only address this package binds or dials.
const loopback = "127.0.0.1"

// peer is one server.N line of zoo.cfg.
type peer struct {
	ID           int
	PeerPort     int
	ElectionPort int
	Observer     bool // a non-voting member (":observer" in every member's line)
}

// memberConfig is everything that goes into one member's zoo.cfg.
type memberConfig struct {
	TickMS         int
	InitLimit      int
	SyncLimit      int
	MaxClientCnxns int
	DataDir        string
	ClientPort     int
	AdminPort      int
	Peers          []peer // empty or one entry: standalone
	Observer       bool   // this member is an observer (peerType=observer)
	Extra          map[string]string
}

// renderConfig returns the zoo.cfg text for one member. It is pure so that
// it can be tested without a JVM.
func renderConfig(c memberConfig) string {
	var b strings.Builder
	b.WriteString("# written by chaoslab harness/zkensemble\n")
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	kv("tickTime", c.TickMS)
	kv("initLimit", c.InitLimit)
	kv("syncLimit", c.SyncLimit)
	kv("dataDir", c.DataDir)
	kv("clientPort", c.ClientPort)
	kv("clientPortAddress", loopback)
	kv("maxClientCnxns", c.MaxClientCnxns)
	kv("4lw.commands.whitelist", "*")
	kv("admin.enableServer", "true")
	kv("admin.serverAddress", loopback)
	kv("admin.serverPort", c.AdminPort)
	kv("reconfigEnabled", "false")
	if c.Observer {
		kv("peerType", "observer")
	}
	if len(c.Peers) > 1 {
		for _, p := range c.Peers {
			line := fmt.Sprintf("%s:%d:%d", loopback, p.PeerPort, p.ElectionPort)
			if p.Observer {
				line += ":observer"
			}
			kv("server."+strconv.Itoa(p.ID), line)
		}
	}
	keys := make([]string, 0, len(c.Extra))
	for k := range c.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv(k, c.Extra[k])
	}
	return b.String()
}

// writeMemberFiles writes zoo.cfg and myid for one member.
func writeMemberFiles(cfgPath, dataDir string, id int, c memberConfig) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write myid: %w", err)
	}
	if err := os.WriteFile(cfgPath, []byte(renderConfig(c)), 0o644); err != nil {
		return fmt.Errorf("write zoo.cfg: %w", err)
	}
	return nil
}

// dirEmpty reports whether dir does not exist or has no entries.
func dirEmpty(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(ents) == 0, nil
}
