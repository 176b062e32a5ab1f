#!/usr/bin/env bash
# The main job: install what is missing and replay IL-0587 (both variants),
# writing the report under out/runs/. Arguments go to `chaoslab run`, e.g.
#   ./scripts/replay.sh --backend docker    # servers and clients in containers
#   ./scripts/replay.sh --backend local     # servers and clients as processes
# With --backend docker the images are built first when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
case " $* " in
  *" --backend docker "*|*" --backend=docker "*) ./bin/chaoslab images build ;;
esac
exec ./bin/chaoslab run il-0587-zk-treecache-reconnect-storm "$@"
