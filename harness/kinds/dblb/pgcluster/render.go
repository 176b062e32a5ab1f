package pgcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// A server runs two scripts of its configuration folder, the same on
// every placement: start.sh, as root, makes its data folder the postgres
// user's and becomes that user (setpriv: the process stays one, so its
// pid is the postmaster's); run.sh initialises the data at the first
// start (initdb, or a replica's base backup) and runs postgres.

// startScript is start.sh.
const startScript = `set -e
mkdir -p "$1"
chown postgres:postgres "$1"
chmod 700 "$1"
exec setpriv --reuid=postgres --regid=postgres --init-groups -- /bin/sh "$(dirname "$0")/run.sh" "$1"
`

// primaryProgram is the primary's program: initdb at its first start,
// every host let in (trust, replication too), the cluster's settings.
func (c *Cluster) primaryProgram(l lab.ServerLayout, _ []lab.ServerLayout) (lab.ServerProgram, error) {
	run := fmt.Sprintf(`set -e
D="$1"
if [ ! -s "$D/PG_VERSION" ]; then
	%[1]s/initdb -D "$D" -U postgres --auth=trust --encoding=UTF8 --locale=C --no-sync
	printf 'host all all all trust\nhost replication all all trust\n' >>"$D/pg_hba.conf"
	cat "$(dirname "$0")/chaoslab.conf" >>"$D/postgresql.conf"
fi
exec %[1]s/postgres -D "$D"
`, DefaultBinDir)
	conf := c.conf(l, "primary")
	p := program(l, run, conf)
	p.Limits.CPUCores = c.o.primaryCPU
	return p, nil
}

// replicaProgram is a replica's: a base backup of the primary with a
// slot of its own and the standby settings (-R) at its first start, its
// own port and name, its application name at the primary.
func (c *Cluster) replicaProgram(l lab.ServerLayout, _ []lab.ServerLayout) (lab.ServerProgram, error) {
	p := c.primary.Layout()
	host, port := c.primary.Host(), p.Ports["pg"]
	run := fmt.Sprintf(`set -e
D="$1"
if [ ! -s "$D/PG_VERSION" ]; then
	%[1]s/pg_basebackup -h %[2]s -p %[3]d -U postgres -D "$D" -R -X stream -C -S %[4]s --no-sync
	cat "$(dirname "$0")/chaoslab.conf" >>"$D/postgresql.conf"
	echo "primary_conninfo = 'host=%[2]s port=%[3]d user=postgres application_name=%[4]s'" >>"$D/postgresql.auto.conf"
fi
exec %[1]s/postgres -D "$D"
`, DefaultBinDir, host, port, l.Name)
	return program(l, run, c.conf(l, l.Name)), nil
}

// program runs start.sh with the server's data folder.
func program(l lab.ServerLayout, run, conf string) lab.ServerProgram {
	start := l.ConfDir + "/start.sh"
	return lab.ServerProgram{
		Command: []string{"/bin/sh", start, l.DataDir},
		Image:   ImageName, ImageEntrypoint: []string{"/bin/sh"}, ImageArgs: []string{start, l.DataDir},
		Files: map[string]string{start: startScript, l.ConfDir + "/run.sh": run, l.ConfDir + "/chaoslab.conf": conf},
		Ready: func(ctx context.Context, s lab.Server) error { return ping(ctx, s) },
	}
}

// conf is what a server's postgresql.conf gets (later lines win: a
// replica's own port and name after the primary's copied ones).
func (c *Cluster) conf(l lab.ServerLayout, name string) string {
	listen := l.Bind
	if listen == "0.0.0.0" {
		listen = "*"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n# chaoslab pgcluster\nlisten_addresses = '%s'\nport = %d\nunix_socket_directories = ''\n", listen, l.Ports["pg"])
	// WAL kept for base backups taken side by side (a checkpoint removed
	// a segment a replica's backup had yet to stream).
	b.WriteString("wal_level = replica\nmax_wal_senders = 16\nmax_replication_slots = 16\nhot_standby = on\nwal_keep_size = 256\n")
	b.WriteString("hot_standby_feedback = on\nfsync = off\nfull_page_writes = off\nlogging_collector = off\n")
	fmt.Fprintf(&b, "cluster_name = '%s'\n", name)
	keys := make([]string, 0, len(c.o.settings))
	for k := range c.o.settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(c.o.settings[k], "'", "''"))
	}
	return b.String()
}
