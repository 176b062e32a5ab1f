#!/usr/bin/env bash
# The game-day stack (docker-compose.yml) by hand.
#   ./scripts/gameday.sh up|status|down
# IMAGES=local uses the images `chaoslab images build` makes without a
# registry; the default is the official public images.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${IMAGES:-official}" = local ]; then
  export ZOOKEEPER_IMAGE=chaoslab/zookeeper:3.8.0-deb12
  export ETCD_IMAGE=chaoslab/etcd:v3.6.16
  export CONSUL_IMAGE=chaoslab/consul:1.14.11
  for img in "$ZOOKEEPER_IMAGE" "$ETCD_IMAGE" "$CONSUL_IMAGE"; do
    docker image inspect "$img" >/dev/null 2>&1 || { echo "gameday: $img is missing: run ./bin/chaoslab images build" >&2; exit 2; }
  done
fi
compose() { if docker compose version >/dev/null 2>&1; then docker compose "$@"; else docker-compose "$@"; fi; }
case "${1:-status}" in
  up)
    compose up -d
    echo "ZooKeeper 127.0.0.1:2181-2183, etcd 127.0.0.1:2379,22379,32379, Consul http://127.0.0.1:8500 (agents 8501, 8502)"
    ;;
  status) compose ps ;;
  down) compose down -v --remove-orphans ;;
  *) echo "usage: $0 up|status|down" >&2; exit 2 ;;
esac
