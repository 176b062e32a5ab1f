package zookeeper

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper/zkcheck"
)

// Ports of a server, as the official image uses them.
var ports = []lab.Port{{Name: "client", Number: 2181}, {Name: "peer", Number: 2888}, {Name: "election", Number: 3888}, {Name: "admin", Number: 8080}}

// memberName is server id's name: "zk<id>".
func memberName(id int) string { return "zk" + strconv.Itoa(id) }

// render is the program of server l among all: its zoo.cfg and myid, run
// with Debian's jars on this machine or by the image's own entrypoint.
func (t *Topology) render(l lab.ServerLayout, all []lab.ServerLayout) (lab.ServerProgram, error) {
	id := 0
	for i, o := range all {
		if o.Name == l.Name {
			id = i + 1
		}
	}
	cfg := l.ConfDir + "/zoo.cfg"
	heap := strconv.Itoa(t.HeapMB)
	jvm := []string{"-Xmx" + heap + "m", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
		"-Dzookeeper.jmx.log4j.disable=true"}
	return lab.ServerProgram{
		Command: append(append([]string{"java"}, jvm...), "-cp", DefaultClasspath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg),
		Image:   Name,
		// The official image's entrypoint keeps /conf/zoo.cfg and
		// /data/myid as they are; its zkServer.sh adds -Xmx$ZK_SERVER_HEAP.
		ImageEnv: []string{"ZOO_MY_ID=" + strconv.Itoa(id), "ZK_SERVER_HEAP=" + heap, "JVMFLAGS=" + strings.Join(jvm, " ")},
		Files: map[string]string{
			cfg:                 t.zooCfg(l, all),
			l.DataDir + "/myid": strconv.Itoa(id) + "\n",
		},
		Ready: serving,
		Up:    answersRuok,
	}, nil
}

// zooCfg is a server's zoo.cfg: the topology's timing and limits, its
// ports, and one server.N line per member (":observer" for observers).
func (t *Topology) zooCfg(l lab.ServerLayout, all []lab.ServerLayout) string {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	b.WriteString("# written by chaoslab (harness/systems/zookeeper)\n")
	kv("tickTime", t.TickMS)
	kv("initLimit", t.InitLimit)
	kv("syncLimit", t.SyncLimit)
	kv("dataDir", l.DataDir)
	kv("clientPort", l.Ports["client"])
	kv("clientPortAddress", l.Bind)
	kv("maxClientCnxns", t.MaxClientCnxns)
	kv("4lw.commands.whitelist", "*")
	kv("admin.enableServer", "true")
	kv("admin.serverAddress", l.Bind)
	kv("admin.serverPort", l.Ports["admin"])
	kv("reconfigEnabled", "false")
	if len(all) < 2 {
		return b.String()
	}
	kv("quorumListenOnAllIPs", l.Bind == "0.0.0.0")
	for i, o := range all {
		line := o.Host + ":" + strconv.Itoa(o.Ports["peer"]) + ":" + strconv.Itoa(o.Ports["election"])
		if i >= t.Servers {
			line += ":observer"
			if o.Name == l.Name {
				kv("peerType", "observer")
			}
		}
		kv("server."+strconv.Itoa(i+1), line)
	}
	return b.String()
}

// serving: the server answers mntr in a serving state (leading,
// following, observing, standalone).
func serving(ctx context.Context, s lab.Server) error {
	kv, err := mntr(ctx, s)
	if err != nil {
		return err
	}
	if st := kv["zk_server_state"]; !zkcheck.Serving(st) {
		return fmt.Errorf("%s is %q", s.Name(), st)
	}
	return nil
}

// answersRuok: the process answers ruok with imok (a replaced server
// does while it syncs).
func answersRuok(ctx context.Context, s lab.Server) error {
	out, err := zkcheck.FourLetter(ctx, s.Addr("client", lab.FromHost), "ruok")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "imok" {
		return fmt.Errorf("%s answers ruok with %q", s.Name(), zkcheck.Truncate(out, 80))
	}
	return nil
}

// mntr asks a server for mntr.
func mntr(ctx context.Context, s lab.Server) (map[string]string, error) {
	out, err := zkcheck.FourLetter(ctx, s.Addr("client", lab.FromHost), "mntr")
	if err != nil {
		return nil, fmt.Errorf("mntr %s: %w", s.Name(), err)
	}
	kv, err := zkcheck.ParseMntr(out)
	if err != nil {
		return nil, fmt.Errorf("mntr %s: %w", s.Name(), err)
	}
	return kv, nil
}

var initLimitLine = regexp.MustCompile(`(?m)^initLimit=(\d+)$`)

// initLimitOf reads initLimit from a zoo.cfg.
func initLimitOf(name, cfg string) (int, error) {
	g := initLimitLine.FindStringSubmatch(cfg)
	if g == nil {
		return 0, fmt.Errorf("read zoo.cfg of %s: no initLimit line", name)
	}
	return strconv.Atoi(g[1])
}
