#!/usr/bin/env bash
# Release check (the release tier, README.md's Tests): replays every
# built-in scenario at full size on every placement it is calibrated for,
# every variant, one at a time (they measure timing on real servers), and
# fails unless each meets its expectation; then the example clients beside
# IL-0587's own; then the release-tier tests (CHAOSLAB_FULL=1: the
# replay tests at full size and on the other placement, the component
# tests whose ground the test command covers otherwise). About 2 h on 2
# cores (images built first when missing).
#   ./scripts/verify.sh            # everything
#   ./scripts/verify.sh il-0587    # one scenario (id or case id)
#   ./scripts/verify.sh examples   # the example clients only
#   ./scripts/verify.sh tests      # the release-tier tests only
#   ./scripts/verify.sh kubernetes # the test cluster: replays and tests there
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
for s in il-0587-zk-treecache-reconnect-storm:local il-0587-zk-treecache-reconnect-storm:docker il-0384-kinesis-thread-per-peer:local il-0384-kinesis-thread-per-peer:docker il-0277-zk-rolling-replacement-quorum-loss:local il-0277-zk-rolling-replacement-quorum-loss:docker il-0206-consul-agent-oom-primary-fallback:local il-0206-consul-agent-oom-primary-fallback:docker aws-ebs-2011-remirror-storm:local aws-ebs-2011-remirror-storm:docker; do
  id=${s%%:*}
  case "$want" in ""|"$id"|"${id:0:7}") replay "$id" "${s##*:}" ;; esac
done
# The example clients beside the scenario's own (--with-references): the
# paced Go client must hold (exit 0), kazoo's TreeCache must be caught (1).
if [ -z "$want" ] || [ "$want" = examples ]; then
  (cd examples/zk-paced-go && GOWORK=off go build -o ../../bin/zk-paced .)
  echo "verify: examples/zk-paced-go beside IL-0587's clients" >&2
  ./bin/chaoslab run IL-0587 --client "$PWD/bin/zk-paced" --with-references --seed 1 --out "$out" || { echo "verify: FAILED: zk-paced did not hold" >&2; fail=1; }
  echo "verify: examples/zk-treecache-python beside IL-0587's clients" >&2
  rc=0
  ./bin/chaoslab run IL-0587 --client "/usr/bin/python3 $PWD/examples/zk-treecache-python/treecache.py" --with-references --seed 1 --out "$out" || rc=$?
  [ "$rc" = 1 ] || { echo "verify: FAILED: treecache exited $rc, want 1 (caught)" >&2; fail=1; }
fi
if [ -z "$want" ] || [ "$want" = tests ]; then
  # No input may make the loader panic (its seed corpus runs in every
  # test command). A count, not a duration: with -fuzztime=20s Go 1.26's
  # coordinator can report its own deadline as a failure (golang/go#75804,
  # fixed in 1.27). 60000 inputs: ~3 min, most of it the instrumented build.
  echo "verify: fuzzing the scenario loader" >&2
  CGO_ENABLED=0 go test -run='^$' -fuzz=FuzzLoad -fuzztime=60000x ./scenarios || { echo "verify: FAILED: fuzz" >&2; fail=1; }
  echo "verify: the release-tier tests (CHAOSLAB_FULL=1)" >&2
  CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath" CHAOSLAB_FULL=1 \
    go test -p 1 -count=1 -timeout 120m -run '^TestIntegration' ./... || { echo "verify: FAILED: release-tier tests" >&2; fail=1; }
fi
# The Kubernetes placement on the test cluster (docs/kubernetes.md): its
# binaries built once (~12 min cold), the cluster up (~30 s with the
# images), the seeds calibrated for it replayed there, then its tests and
# the systems' contract on it; the cluster removed at the end.
if [ -z "$want" ] || [ "$want" = kubernetes ]; then
  echo "verify: the test cluster" >&2
  ./bin/chaoslab images binaries --only kubernetes >/dev/null
  CHAOSLAB=$PWD/bin/chaoslab ./scripts/kube-up.sh
  trap './scripts/kube-down.sh' EXIT
  replay il-0587-zk-treecache-reconnect-storm kubernetes
  replay il-0206-consul-agent-oom-primary-fallback kubernetes
  echo "verify: the kubernetes placement's tests and the systems' contract on it" >&2
  CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath" \
    go test -p 1 -count=1 -timeout 30m -run '^TestIntegration' ./harness/placement/kubernetes ./harness/infra/kube ./harness/systems/contract ||
    { echo "verify: FAILED: kubernetes tests" >&2; fail=1; }
fi
echo "verify: reports under $out" >&2
exit $fail
