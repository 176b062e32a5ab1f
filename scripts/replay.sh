#!/usr/bin/env bash
# The main job: install what is missing and replay IL-0587 (both variants),
# writing the report under out/runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec ./bin/chaoslab run il-0587-zk-treecache-reconnect-storm "$@"
