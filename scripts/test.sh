#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test,
# including the integration tests that start real ZooKeeper servers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
go vet ./...
# -p 1: the integration tests measure timing on real servers; packages
# running side by side on 2 cores would disturb each other.
go test -p 1 -count=1 -timeout 40m ./...
