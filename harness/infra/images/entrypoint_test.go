package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runEntrypoint runs zk-entrypoint with /bin/sh on this machine, with its
// directories in a temporary directory and a fake java that prints its
// arguments, and returns the output, the zoo.cfg written and the myid.
func runEntrypoint(t *testing.T, env []string, args ...string) (out, cfg, myid string, dirs string) {
	t.Helper()
	dirs = t.TempDir()
	script := filepath.Join(dirs, "zk-entrypoint")
	if err := os.WriteFile(script, []byte(zkEntrypoint), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dirs, "bin")
	os.Mkdir(bin, 0o755)
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, "java"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", append([]string{script}, args...)...)
	cmd.Dir = dirs
	cmd.Env = append([]string{
		"PATH=" + bin + ":/usr/bin:/bin",
		"ZOO_CONF_DIR=" + filepath.Join(dirs, "conf"),
		"ZOO_DATA_DIR=" + filepath.Join(dirs, "data"),
		"ZOO_DATA_LOG_DIR=" + filepath.Join(dirs, "datalog"),
		"ZOO_LOG_DIR=" + filepath.Join(dirs, "logs"),
	}, env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zk-entrypoint: %v\n%s", err, b)
	}
	c, _ := os.ReadFile(filepath.Join(dirs, "conf", "zoo.cfg"))
	m, _ := os.ReadFile(filepath.Join(dirs, "data", "myid"))
	return string(b), string(c), strings.TrimSpace(string(m)), dirs
}

func TestEntrypointStandalone(t *testing.T) {
	out, cfg, myid, dirs := runEntrypoint(t, nil)
	for _, want := range []string{
		"dataDir=" + filepath.Join(dirs, "data") + "\n",
		"clientPort=2181\n", "admin.serverPort=8080\n", "tickTime=2000\n", "initLimit=5\n", "syncLimit=2\n",
		"maxClientCnxns=60\n", "4lw.commands.whitelist=*\n", "standaloneEnabled=true\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg has no %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "server.") {
		t.Errorf("standalone zoo.cfg names servers:\n%s", cfg)
	}
	if myid != "1" {
		t.Errorf("myid %q, want 1", myid)
	}
	// No command: ZooKeeper, with the classpath of Debian's jars.
	for _, want := range []string{
		"[-Xmx1000m]",
		"[-cp]\n[/usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar:/usr/share/java/slf4j-simple.jar]",
		"[org.apache.zookeeper.server.quorum.QuorumPeerMain]\n[" + filepath.Join(dirs, "conf", "zoo.cfg") + "]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("java arguments lack %q:\n%s", want, out)
		}
	}
}

func TestEntrypointEnsemble(t *testing.T) {
	env := []string{
		"ZOO_MY_ID=2",
		"ZOO_SERVERS=server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181 server.3=zk3:2888:3888;2181",
		"ZOO_TICK_TIME=500", "ZOO_INIT_LIMIT=10", "ZOO_SYNC_LIMIT=5",
		"ZOO_4LW_COMMANDS_WHITELIST=srvr,mntr,ruok", "ZOO_MAX_CLIENT_CNXNS=0",
		"ZOO_CFG_EXTRA=globalOutstandingLimit=100 snapCount=1000",
		"JVMFLAGS=-Xmx256m -Dzookeeper.forceSync=no -D*glob*",
	}
	out, cfg, myid, _ := runEntrypoint(t, env, "zkServer.sh", "start-foreground")
	for _, want := range []string{
		"server.1=zk1:2888:3888;2181\nserver.2=zk2:2888:3888;2181\nserver.3=zk3:2888:3888;2181\n",
		"tickTime=500\n", "initLimit=10\n", "syncLimit=5\n", "maxClientCnxns=0\n",
		"4lw.commands.whitelist=srvr,mntr,ruok\n",
		"globalOutstandingLimit=100\nsnapCount=1000\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg has no %q:\n%s", want, cfg)
		}
	}
	if myid != "2" {
		t.Errorf("myid %q, want 2", myid)
	}
	// JVMFLAGS come after the default heap (the last -Xmx wins), split on
	// blanks and never globbed.
	if !strings.Contains(out, "[-Xmx1000m]") || !strings.Contains(out, "[-Xmx256m]\n[-Dzookeeper.forceSync=no]\n[-D*glob*]") ||
		strings.Index(out, "[-Xmx1000m]") > strings.Index(out, "[-Xmx256m]") {
		t.Errorf("java arguments:\n%s", out)
	}
}

func TestEntrypointKeepsConfigAndRunsOtherCommands(t *testing.T) {
	dirs := t.TempDir()
	conf := filepath.Join(dirs, "conf")
	os.MkdirAll(conf, 0o755)
	os.WriteFile(filepath.Join(conf, "zoo.cfg"), []byte("mine=1\n"), 0o644)
	data := filepath.Join(dirs, "data")
	os.MkdirAll(data, 0o755)
	os.WriteFile(filepath.Join(data, "myid"), []byte("7\n"), 0o644)
	script := filepath.Join(dirs, "zk-entrypoint")
	os.WriteFile(script, []byte(zkEntrypoint), 0o755)
	cmd := exec.Command("/bin/sh", script, "echo", "other", "command")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "ZOO_CONF_DIR=" + conf, "ZOO_DATA_DIR=" + data,
		"ZOO_DATA_LOG_DIR=" + filepath.Join(dirs, "dl"), "ZOO_LOG_DIR=" + filepath.Join(dirs, "logs"), "ZOO_MY_ID=3"}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "other command\n" {
		t.Errorf("other command: %v %q", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(conf, "zoo.cfg")); string(b) != "mine=1\n" {
		t.Errorf("a mounted zoo.cfg was rewritten: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "myid")); string(b) != "7\n" {
		t.Errorf("an existing myid was rewritten: %q", b)
	}
}
