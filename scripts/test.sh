#!/usr/bin/env bash
# The test command: installs what the tests need (Debian packages, the
# chaoslab binary, the container images built locally without a registry),
# then runs every test, including the integration tests that start real
# ZooKeeper servers as processes and as containers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if docker info >/dev/null 2>&1; then
  # Idempotent: skips images that are up to date (the Consul build takes
  # minutes the first time).
  ./bin/chaoslab images build
else
  echo "test: no Docker engine answers; the container tests will be skipped" >&2
fi
go vet ./...
# -p 1: the integration tests measure timing on real servers; packages
# running side by side on 2 cores would disturb each other.
go test -p 1 -count=1 -timeout 60m ./...
# A brief fuzz run of the scenario loader: no input may make it panic.
# A count, not a duration: with -fuzztime=20s Go 1.26's coordinator can
# report its own deadline as a failure (golang/go#75804, fixed in 1.27);
# 60000 inputs take about 30 s on 2 cores.
go test -run='^$' -fuzz=FuzzLoad -fuzztime=60000x ./scenarios
