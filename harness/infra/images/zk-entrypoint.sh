#!/bin/sh
# zk-entrypoint: the entrypoint of chaoslab/zookeeper (harness/infra/images).
#
# It understands the official zookeeper image's variables: unless
# $ZOO_CONF_DIR/zoo.cfg exists (mounted), it writes it from ZOO_TICK_TIME,
# ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT, ZOO_MAX_CLIENT_CNXNS, ZOO_SERVERS
# ("server.1=zk1:2888:3888;2181 server.2=..."; none: standalone),
# ZOO_4LW_COMMANDS_WHITELIST, ZOO_CFG_EXTRA, ...; unless $ZOO_DATA_DIR/myid
# exists, it writes ZOO_MY_ID (default 1) there. Then, for the official
# image's command (zkServer.sh start-foreground) or none, it runs
# ZooKeeper in the foreground as PID 1 with $JVMFLAGS; any other command is
# run as given (e.g. `docker run ... zkCli.sh -server zk1:2181`, or sh).
set -eu
set -f # ZOO_SERVERS, ZOO_CFG_EXTRA and JVMFLAGS are split on blanks, never globbed

: "${ZOO_CONF_DIR:=/conf}" "${ZOO_DATA_DIR:=/data}" "${ZOO_DATA_LOG_DIR:=/datalog}" "${ZOO_LOG_DIR:=/logs}"
: "${ZOO_TICK_TIME:=2000}" "${ZOO_INIT_LIMIT:=5}" "${ZOO_SYNC_LIMIT:=2}"
: "${ZOO_AUTOPURGE_PURGEINTERVAL:=0}" "${ZOO_AUTOPURGE_SNAPRETAINCOUNT:=3}"
: "${ZOO_MAX_CLIENT_CNXNS:=60}" "${ZOO_STANDALONE_ENABLED:=true}" "${ZOO_ADMINSERVER_ENABLED:=true}"
: "${ZOO_CLIENT_PORT:=2181}" "${ZOO_ADMIN_SERVER_PORT:=8080}"
: "${ZOO_4LW_COMMANDS_WHITELIST=*}" "${ZOO_SERVERS=}" "${ZOO_CFG_EXTRA=}" "${ZOO_MY_ID:=1}"
: "${ZK_SERVER_HEAP:=1000}" "${JVMFLAGS=}"

ZK_CLASSPATH=${ZK_CLASSPATH:-/usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar:/usr/share/java/slf4j-simple.jar}

mkdir -p "$ZOO_CONF_DIR" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR"

if [ ! -f "$ZOO_CONF_DIR/zoo.cfg" ]; then
	cfg="$ZOO_CONF_DIR/zoo.cfg.$$"
	{
		echo "dataDir=$ZOO_DATA_DIR"
		echo "dataLogDir=$ZOO_DATA_LOG_DIR"
		echo "tickTime=$ZOO_TICK_TIME"
		echo "initLimit=$ZOO_INIT_LIMIT"
		echo "syncLimit=$ZOO_SYNC_LIMIT"
		echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
		echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
		echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
		echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
		echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
		echo "admin.serverPort=$ZOO_ADMIN_SERVER_PORT"
		echo "clientPort=$ZOO_CLIENT_PORT"
		if [ -n "$ZOO_4LW_COMMANDS_WHITELIST" ]; then
			echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
		fi
		for server in $ZOO_SERVERS; do
			echo "$server"
		done
		for entry in $ZOO_CFG_EXTRA; do
			echo "$entry"
		done
	} >"$cfg"
	mv "$cfg" "$ZOO_CONF_DIR/zoo.cfg"
fi

if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
	echo "$ZOO_MY_ID" >"$ZOO_DATA_DIR/myid"
fi

case "${1:-}" in
"" | zkServer.sh | start-foreground)
	# As zkServer.sh: a 1000 MB heap unless ZK_SERVER_HEAP or JVMFLAGS say
	# otherwise (the last -Xmx wins), and out of memory ends the process.
	# shellcheck disable=SC2086 # JVMFLAGS is a list of flags
	exec java -Xmx"${ZK_SERVER_HEAP}"m -XX:+ExitOnOutOfMemoryError \
		-Dzookeeper.log.dir="$ZOO_LOG_DIR" $JVMFLAGS \
		-cp "$ZK_CLASSPATH" org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOO_CONF_DIR/zoo.cfg"
	;;
esac
exec "$@"
