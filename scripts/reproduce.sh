#!/usr/bin/env bash
# Reproduction rates: replays every seed scenario at full size, several
# times per placement, one run at a time (they measure timing), and writes
# docs/reproduction.md from every run kept so far in
# docs/reproduction/runs.jsonl (runs of earlier sessions count too; commit
# both files to keep them). Seeds go on from the largest one kept.
#   ./scripts/reproduce.sh                      # every seed, both placements
#   ./scripts/reproduce.sh il-0587              # one seed (id or its first 7 characters)
#   ./scripts/reproduce.sh il-0587 local        # one seed on one placement
#   RUNS=2 ./scripts/reproduce.sh il-0384 docker   # another count
# Counts: on local processes 10 runs for a seed whose run takes under 5
# minutes (IL-0587), 5 for the others; on containers 3. A full pass takes
# about 9 h on 2 cores; the kept runs make it resumable.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
want=${1:-}
placements=${2:-local docker}
case " $placements " in *" docker "*) ./bin/chaoslab images build ;; esac
out=out/reproduce
mkdir -p "$out"
for id in il-0587-zk-treecache-reconnect-storm il-0384-kinesis-thread-per-peer il-0277-zk-rolling-replacement-quorum-loss il-0206-consul-agent-oom-primary-fallback aws-ebs-2011-remirror-storm; do
  case "$want" in ""|"$id"|"${id:0:7}") ;; *) continue ;; esac
  for p in $placements; do
    n=${RUNS:-}
    if [ -z "$n" ]; then
      n=3
      if [ "$p" = local ]; then n=5; [ "${id:0:7}" = il-0587 ] && n=10; fi
    fi
    seed=$(./bin/chaoslab reproduction --next-seed "$id:$p")
    echo "reproduce: $id on $p, $n runs from seed $seed" >&2
    ./bin/chaoslab run "$id" --placement "$p" --repeat "$n" --seed "$seed" --out "$out" || true
    ./bin/chaoslab reproduction "$out"
  done
done
