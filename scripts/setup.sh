#!/usr/bin/env bash
# Installs what chaoslab needs on a fresh Debian machine (idempotent): Java,
# ZooKeeper and the rest from Debian's packages, and the chaoslab binary.
#   ./scripts/setup.sh            # what a replay needs
#   ./scripts/setup.sh --servers  # also the etcd and Consul binaries and
#                                 # gotestsum, what the tests need
#   ./scripts/setup.sh --servers --binaries-in-background LOG
#                                 # the same, but the server binaries build
#                                 # on in the background once it returns:
#                                 # their output in LOG, their exit status
#                                 # in LOG.rc when done (scripts/test.sh,
#                                 # beside its vet and unit tier)
#   ./scripts/setup.sh --only etcd  # just what one system's seeds need, for
#                                 # a CI job that replays one seed
#                                 # (zookeeper, etcd or consul; a comma list)
# The Go builds run while the packages install: one waits on the CPU, the
# other mostly on the network and the disk.
set -euo pipefail
cd "$(dirname "$0")/.."
servers=0
bgbins=
only=
while [ $# -gt 0 ]; do
  case $1 in
    --servers) servers=1 ;;
    --binaries-in-background) bgbins=${2:?--binaries-in-background needs a log file}; shift ;;
    --only) only=${2:?--only needs zookeeper, etcd or consul}; shift ;;
    --only=*) only=${1#--only=} ;;
    *) echo "setup: unknown flag $1 (--servers, --binaries-in-background LOG, --only SYSTEMS)" >&2; exit 2 ;;
  esac
  shift
done
for sys in ${only//,/ }; do
  case $sys in zookeeper | etcd | consul) ;; *) echo "setup: --only $sys: want zookeeper, etcd or consul" >&2; exit 2 ;; esac
done
# wants SYSTEM: what the seeds on SYSTEM need (everything without --only);
# tests: what only the lab's own tests need.
wants() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
tests() { [ -z "$only" ]; }

need=()
if wants zookeeper; then
  command -v java >/dev/null || need+=(default-jre-headless)
  [ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
  [ -f /usr/share/java/slf4j-simple.jar ] || need+=(libslf4j-java)
  [ -f /usr/share/java/servlet-api.jar ] || need+=(libservlet-api-java)
  # The example clients (examples/): kazoo's TreeCache.
  [ -d /usr/lib/python3/dist-packages/kazoo ] || need+=(python3-kazoo)
fi
command -v nc >/dev/null || need+=(netcat-openbsd)
# The disconnect fault cuts a local server off loopback with nftables.
command -v nft >/dev/null || [ -x /usr/sbin/nft ] || need+=(nftables)
# IL-0384's example server (examples/fleet-server-python) needs python3 only.
command -v python3 >/dev/null || need+=(python3)
if tests; then
  # SimPy (2, Debian's) for the simulator's side-by-side benchmark and check.
  [ -d /usr/lib/python3/dist-packages/SimPy ] || need+=(python3-simpy)
  # junitparser reads back the JUnit files `chaoslab run --junit` writes.
  [ -d /usr/lib/python3/dist-packages/junitparser ] || need+=(python3-junitparser)
  # The game-day dashboard's end-to-end test drives it in headless Chromium.
  command -v chromium >/dev/null || need+=(chromium)
  # Its Prometheus test scrapes a live run's /metrics with Debian's prometheus.
  command -v prometheus >/dev/null || need+=(prometheus)
fi
# IL-0206's database tier (harness/kinds/dblb/pgcluster): a primary and streaming
# replicas of Debian's PostgreSQL 15, run as the postgres user.
if wants consul; then
  [ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
fi
# `chaoslab images build` makes the ZooKeeper and PostgreSQL images' root
# file systems with mmdebstrap (the tests build the images).
[ $servers = 1 ] && ! command -v mmdebstrap >/dev/null && need+=(mmdebstrap)

install() {
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing ${need[*]}; run as root or: sudo apt-get install -y ${need[*]}" >&2
    return 2
  fi
  echo "setup: installing ${need[*]} from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  # The lab makes its own clusters: no "main" cluster started on 5432.
  if [[ " ${need[*]} " == *" postgresql-15 "* ]]; then
    mkdir -p /etc/postgresql-common/createcluster.d
    echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/chaoslab.conf
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The tests start their own Prometheus on a free loopback port; the
  # package's service (on every address, port 9090) is not wanted.
  if [[ " ${need[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
}
apt_pid=
if [ ${#need[@]} -gt 0 ]; then
  install &
  apt_pid=$!
fi

# A fleet of containers on one bridge (IL-0384 on the docker backend) needs
# a neighbour (ARP) table larger than the kernel's default 1024 entries,
# which every network namespace of the machine shares. Only ever raised.
neigh=/proc/sys/net/ipv4/neigh/default/gc_thresh3
if [ "$(id -u)" = 0 ] && [ -w "$neigh" ] && [ "$(cat "$neigh")" -lt 16384 ]; then
  sysctl -q -w net.ipv4.neigh.default.gc_thresh1=4096 net.ipv4.neigh.default.gc_thresh2=8192 net.ipv4.neigh.default.gc_thresh3=16384 ||
    echo "setup: could not raise the neighbour table limits; the docker backend of IL-0384 will refuse to run" >&2
fi

# chaoslab is built static, the way the chaoslab image holds it, so that
# this build, the image's and the tests' (scripts/test.sh builds with the
# same CGO_ENABLED and -trimpath) share Go's build cache.
mkdir -p bin
CGO_ENABLED=0 go build -trimpath -buildvcs=auto -o bin/chaoslab ./cmd/chaoslab
if [ $servers = 1 ]; then
  # etcd, Consul and chaoslab for this machine, into the cache the images
  # are made from (Consul ~5 min cold on 2 cores).
  if [ -n "$bgbins" ]; then
    rm -f "$bgbins" "$bgbins.rc"
    (./bin/chaoslab images binaries >"$bgbins" 2>&1; echo $? >"$bgbins.rc") &
  fi
  (cd tools/gotestsum && CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly go build -trimpath -o ../../bin/gotestsum gotest.tools/gotestsum)
  [ -n "$bgbins" ] || ./bin/chaoslab images binaries >&2
fi
if [ -n "$apt_pid" ]; then
  wait "$apt_pid"
fi
echo "setup: ready: $(pwd)/bin/chaoslab" >&2
