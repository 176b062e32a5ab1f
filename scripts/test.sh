#!/usr/bin/env bash
# The test command (what CI runs, via .ci/run). On a fresh machine it
# installs what the tests need (Debian packages, the server binaries, the
# container images, built without a registry), then runs the tiers that
# README.md describes:
#   unit         unit and plug-in contract tests, no server started;
#                packages side by side (-skip '^TestIntegration')
#   integration  real servers: each seed's replay at its ci size on one
#                placement, a smoke test per system on the other, the
#                examples, the game day; one package at a time, since they
#                measure timing on 2 cores (-run '^TestIntegration')
# and ends with the 20 slowest tests. The tiers' go test output (JSON) is
# kept in out/test/, the run folders of failed tests in out/test/failed/.
# Arguments go to both tiers' go test, e.g.
#   ./scripts/test.sh ./scenarios/...
# Full-size replays on both placements: scripts/verify.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
say() { echo "test: $* ($(($(date +%s) - start)) s in)" >&2; }
# One build configuration for chaoslab, its image and the tests, so that
# they share Go's build cache (scripts/setup.sh builds the same way).
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
out=out/test
mkdir -p "$out"
rm -rf "$out"/*.json "$out"/images.log "$out"/failed
# A failed test's run folders (reports, logs, series) are kept here, to be
# read and re-judged (chaoslab report FOLDER) after the tiers.
export CHAOSLAB_KEEP_FAILED=$PWD/$out/failed

# The server binaries (etcd; Consul ~5 min cold on 2 cores) build in the
# background from the moment chaoslab is built: beside Debian's packages
# (which wait on the network and the disk), vet and the unit tier (whose
# tests leave the CPU idle while they wait; neither needs a server).
bins=$out/binaries.log
./scripts/setup.sh --servers --binaries-in-background "$bins"
say "setup done"
slowest() {
  if compgen -G "$out/*.json" >/dev/null; then
    echo "test: the 20 slowest tests (go test -json in $out/):"
    cat "$out"/*.json | ./bin/gotestsum tool slowest --threshold 0s --num 20 | sed 's/^/  /'
  fi
  say "end"
}
trap slowest EXIT

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
# The images build beside them too: their Debian root file systems
# (mmdebstrap) wait on the network and the disk; two builds of one binary
# take turns under the cache's lock, so an image waits for the binary it
# holds.
images=
if docker info >/dev/null 2>&1; then
  ./bin/chaoslab images build >"$out/images.log" 2>&1 &
  images=$!
else
  echo "test: no Docker engine answers; the container tests will be skipped" >&2
fi
# go test vets every package it tests with all of go vet's checks
# (-vet=all in the unit tier, which builds them anyway); only the packages
# without a test file are vetted on their own (a separate go vet ./...
# type-checked and analysed every package a second time).
mapfile -t untested < <(go list -f '{{if not (or .TestGoFiles .XTestGoFiles)}}{{.ImportPath}}{{end}}' "${pkgs[@]}")
[ ${#untested[@]} -eq 0 ] || go vet "${untested[@]}"
# A module of a user's that imports labtest (examples/labtest-go) compiles.
(cd examples/labtest-go && GOWORK=off go vet ./...)
(cd examples/dblb-app-go && GOWORK=off go vet ./...)
say "vet done"
./bin/gotestsum --format pkgname-and-test-fails --jsonfile "$out/unit.json" -- \
  -p 2 -count=1 -vet=all -skip '^TestIntegration' "${pkgs[@]}"
say "unit tier done"
waited=0
while [ ! -s "$bins.rc" ]; do
  sleep 2
  waited=$((waited + 2))
  if [ $waited -ge 1800 ]; then
    cat "$bins" >&2
    echo "test: the server binaries' build has not ended after 30 min" >&2
    exit 1
  fi
done
if [ "$(cat "$bins.rc")" != 0 ]; then
  cat "$bins" >&2
  echo "test: chaoslab images binaries failed" >&2
  exit 1
fi
say "server binaries done"
if [ -n "$images" ]; then
  if ! wait "$images"; then
    cat "$out/images.log" >&2
    echo "test: chaoslab images build failed" >&2
    exit 1
  fi
  tail -n 8 "$out/images.log" >&2
  say "images done"
fi
# The test cluster (docs/kubernetes.md), only where its binaries are
# already built (~12 min cold: never on a fresh machine's run): the
# Kubernetes placement's tests and the systems' contract on it run with
# the integration tier; without it they skip.
if [ "$(id -u)" = 0 ] && ./bin/chaoslab images binaries --only kubernetes --cached >/dev/null 2>&1; then
  if CHAOSLAB=$PWD/bin/chaoslab ./scripts/kube-up.sh --images zookeeper,etcd,consul,chaoslab >"$out/kube-up.log" 2>&1; then
    trap './scripts/kube-down.sh >>"$out/kube-up.log" 2>&1 || echo "test: kube-down.sh failed (see $out/kube-up.log)" >&2; slowest' EXIT
    say "test cluster up"
  else
    tail -n 20 "$out/kube-up.log" >&2
    echo "test: the test cluster did not start; its tests will be skipped" >&2
  fi
fi
# Only the packages that have integration tests: linking a test binary
# for each of the others costs a few seconds and runs nothing.
if [ $# -eq 0 ]; then
  mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func TestIntegration' . | xargs -n1 dirname | sort -u)
fi
./bin/gotestsum --format pkgname-and-test-fails --jsonfile "$out/integration.json" -- \
  -p 1 -count=1 -vet=off -timeout 60m -run '^TestIntegration' "${pkgs[@]}"
say "integration tier done"
