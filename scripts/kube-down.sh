#!/usr/bin/env bash
# Stops the test cluster of scripts/kube-up.sh and removes what it made:
# the pods' processes and cgroups, the kubelet, containerd and its shims,
# the control plane, etcd, the API server's forwarder, the namespaces (and
# with them every mount and network device of the cluster), then the folder
# $CHAOSLAB_KUBE_DIR (default out/kube: certificates, etcd's data,
# containerd's root and state, the images in it) but its log/. It only ever
# signals the cluster's own processes, and says what it could not remove
# (exit 1). Safe to run when nothing is up.
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "kube-down: needs root" >&2; exit 2; }
D=${CHAOSLAB_KUBE_DIR:-$PWD/out/kube}
[ -d "$D" ] || exit 0
D=$(cd "$D" && pwd)
CG=$(cat "$D/run/cgroup" 2>/dev/null || true)
nspid=$(cat "$D/run/ns.pid" 2>/dev/null || true)
netns=
[ -n "$nspid" ] && netns=$(readlink "/proc/$nspid/ns/net" 2>/dev/null)
[ "$netns" = "$(readlink /proc/self/ns/net)" ] && netns= # a reused pid, not the holder

# ours PID: in the cluster's network namespace, or one of its programs
# whose command line names the folder (the forwarder, containerd's shims).
ours() {
  local comm
  [ -n "$netns" ] && [ "$(readlink "/proc/$1/ns/net" 2>/dev/null)" = "$netns" ] && return 0
  { read -r comm <"/proc/$1/comm"; } 2>/dev/null || return 1
  case $comm in etcd | kube-* | kubelet | containerd* | socat | unshare) ;; *) return 1 ;; esac
  grep -qsF -- "$D" "/proc/$1/cmdline"
}
# The cluster's processes, all of them, with two looks at /proc.
cluster() {
  local f p comm
  [ -n "$netns" ] && find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/net' -lname "${netns//[/\\[}" 2>/dev/null | cut -d/ -f3
  for f in $(grep -lsF -- "$D" /proc/[0-9]*/cmdline); do
    p=${f#/proc/}
    p=${p%/cmdline}
    { read -r comm <"/proc/$p/comm"; } 2>/dev/null || continue
    case $comm in etcd | kube-* | kubelet | containerd* | socat | unshare) echo "$p" ;; esac
  done
}
# alive PID: neither gone nor a zombie (a zombie waits for PID 1 to reap it).
alive() {
  local s
  [ -n "$1" ] && { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
  s=${s##*) }
  [ "${s:0:1}" != Z ]
}
stop() { # NAME SECONDS: SIGTERM, SIGKILL after SECONDS
  local f=$D/run/$1.pid p
  p=$(cat "$f" 2>/dev/null) || return 0
  if alive "$p" && ours "$p"; then
    kill -TERM "$p"
    for _ in $(seq $(($2 * 5))); do alive "$p" || break; sleep 0.2; done
    alive "$p" && kill -KILL "$p"
  fi
  rm -f "$f"
}
# The pods' processes: everything in the cluster's cgroups (v1 or v2).
cgroups() { [ -n "$CG" ] && find /sys/fs/cgroup/ -maxdepth 2 -name "$CG" -type d 2>/dev/null; }
killpods() {
  local c p
  for c in $(cgroups); do
    for p in $(find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  done
}

stop kubelet 20
killpods
stop containerd 20
stop kube-scheduler 10
stop kube-controller-manager 10
stop kube-apiserver 30
stop etcd 30
stop forward 5
stop forward-in 5
# Whatever is left of the cluster (containerd's shims, which outlive it,
# the forwarders' children, the namespaces' holder): the namespaces go
# with their last process.
for _ in 1 2 3 4 5; do
  left=$(cluster | grep -vx $$)
  for p in $left; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
  killpods
  [ -z "$left" ] && break
  sleep 0.2
done
# The cgroups, innermost first (a cgroup empties a moment after its last
# process is killed).
for _ in $(seq 20); do
  for c in $(cgroups); do find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done
  [ -z "$(cgroups)" ] && break
  sleep 0.25
done

# What is left, said; then the folder but its logs.
fail=0
for p in $(cluster | grep -vx $$); do
  alive "$p" && { echo "kube-down: left: process $p $(tr '\0' ' ' <"/proc/$p/cmdline")" >&2; fail=1; }
done
[ -n "$(cgroups)" ] && { echo "kube-down: left: cgroups $(cgroups | tr '\n' ' ')" >&2; fail=1; }
if grep -qsF " $D/" /proc/[0-9]*/mountinfo; then
  echo "kube-down: left: mounts under $D (seen by $(grep -lsF " $D/" /proc/[0-9]*/mountinfo | head -3 | tr '\n' ' '))" >&2
  fail=1
fi
if [ $fail = 0 ]; then
  rm -rf "$D"/{bin,cni,containerd,etc,etcd,kubeconfig,pki,run,sysctl,tmp,var}
  echo "kube-down: the cluster in $D is stopped and removed (its logs are in $D/log)" >&2
fi
exit $fail
