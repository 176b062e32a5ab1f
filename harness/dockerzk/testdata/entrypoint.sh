#!/bin/sh
# Entrypoint of chaoslab-dev/zookeeper:test. Like the official zookeeper
# image's docker-entrypoint.sh it writes $ZOO_CONF_DIR/zoo.cfg from the
# ZOO_* variables (only if there is none yet, so a restarted container keeps
# its configuration) and $ZOO_DATA_DIR/myid (only if absent), then runs the
# server in the foreground with $JVMFLAGS.
set -eu
: "${ZOO_CONF_DIR:=/conf}" "${ZOO_DATA_DIR:=/data}" "${ZOO_DATA_LOG_DIR:=/datalog}"
: "${ZOO_TICK_TIME:=2000}" "${ZOO_INIT_LIMIT:=5}" "${ZOO_SYNC_LIMIT:=2}"
: "${ZOO_MAX_CLIENT_CNXNS:=60}" "${ZOO_STANDALONE_ENABLED:=true}" "${ZOO_ADMINSERVER_ENABLED:=true}"
: "${ZOO_AUTOPURGE_PURGEINTERVAL:=0}" "${ZOO_AUTOPURGE_SNAPRETAINCOUNT:=3}"
: "${ZOO_SERVERS:=server.1=localhost:2888:3888;2181}"

mkdir -p "$ZOO_CONF_DIR" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR"
cfg="$ZOO_CONF_DIR/zoo.cfg"
if [ ! -f "$cfg" ]; then
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
		for s in $ZOO_SERVERS; do echo "$s"; done
		if [ -n "${ZOO_4LW_COMMANDS_WHITELIST:-}" ]; then
			echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
		fi
		for e in ${ZOO_CFG_EXTRA:-}; do echo "$e"; done
	} >"$cfg"
fi
if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
	echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"
fi

if [ "${1:-zkServer}" = "zkServer" ] || [ "${1:-}" = "zkServer.sh" ]; then
	# shellcheck disable=SC2086 # JVMFLAGS is a list of flags
	exec java ${JVMFLAGS:-} -XX:-UsePerfData -Djava.net.preferIPv4Stack=true \
		-Dorg.slf4j.simpleLogger.showDateTime=true \
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ" \
		-Dzookeeper.jmx.log4j.disable=true \
		-cp /usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar:/usr/share/java/slf4j-simple.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg"
fi
exec "$@"
