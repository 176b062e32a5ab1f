#!/usr/bin/env bash
# The main job: install what is missing and replay IL-0587 (both variants),
# writing the report under out/runs/. Arguments go to `chaoslab run`, e.g.
#   ./scripts/replay.sh --placement docker    # servers and clients in containers
#   ./scripts/replay.sh --placement local     # servers and clients as processes
# A first argument that is not a flag names another scenario:
#   ./scripts/replay.sh il-0384-kinesis-thread-per-peer
# With --placement docker the images are built first when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
case " $* " in
  *" --placement docker "*|*" --placement=docker "*|*" --backend docker "*|*" --backend=docker "*) ./bin/chaoslab images build ;;
esac
scenario=il-0587-zk-treecache-reconnect-storm
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  scenario=$1
  shift
fi
exec ./bin/chaoslab run "$scenario" "$@"
