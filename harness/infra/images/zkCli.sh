#!/bin/sh
# zkCli.sh of chaoslab/zookeeper (harness/infra/images): ZooKeeper's command line
# client, e.g. `docker exec zk1 zkCli.sh -server 127.0.0.1:2181 ls /`.
set -f
# shellcheck disable=SC2086 # CLIENT_JVMFLAGS is a list of flags
exec java ${CLIENT_JVMFLAGS:-} \
	-cp "${ZK_CLASSPATH:-/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar}" \
	org.apache.zookeeper.ZooKeeperMain "$@"
