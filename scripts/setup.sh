#!/usr/bin/env bash
# Installs what chaoslab needs on a fresh Debian machine (idempotent):
# Java and ZooKeeper from Debian's packages, and the chaoslab binary.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v java >/dev/null || need+=(default-jre-headless)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
[ -f /usr/share/java/slf4j-simple.jar ] || need+=(libslf4j-java)
[ -f /usr/share/java/servlet-api.jar ] || need+=(libservlet-api-java)
command -v nc >/dev/null || need+=(netcat-openbsd)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing ${need[*]}; run as root or: sudo apt-get install -y ${need[*]}" >&2
    exit 2
  fi
  echo "setup: installing ${need[*]} from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
mkdir -p bin
go build -buildvcs=auto -o bin/chaoslab ./cmd/chaoslab
echo "setup: ready: $(pwd)/bin/chaoslab" >&2
