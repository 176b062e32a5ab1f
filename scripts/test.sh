#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test,
# including the integration tests that start real ZooKeeper servers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
go vet ./...
go test -count=1 -timeout 30m ./...
