#!/usr/bin/env bash
# Release check: replays every built-in scenario at full size on every
# placement it is calibrated for, one at a time (they measure timing on
# real servers), and fails unless each meets its expectation. About 35 min
# on 2 cores (images built first when missing).
#   ./scripts/verify.sh            # every scenario
#   ./scripts/verify.sh il-0587    # one scenario (id or case id)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
docker info >/dev/null 2>&1 && ./bin/chaoslab images build
out=out/verify/$(date -u +%Y%m%dT%H%M%SZ)
fail=0
replay() { # scenario placement
  echo "verify: $1 on $2" >&2
  if ! ./bin/chaoslab run "$1" --placement "$2" --seed 1 --out "$out"; then
    echo "verify: FAILED: $1 on $2" >&2
    fail=1
  fi
}
want=${1:-}
for s in il-0587-zk-treecache-reconnect-storm:local il-0587-zk-treecache-reconnect-storm:docker il-0384-kinesis-thread-per-peer:local; do
  id=${s%%:*}
  case "$want" in ""|"$id"|"${id:0:7}") replay "$id" "${s##*:}" ;; esac
done
echo "verify: reports under $out" >&2
exit $fail
