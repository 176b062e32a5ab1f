#!/usr/bin/env bash
# Starts the test cluster (docs/kubernetes.md): a single-node Kubernetes
# v1.34 built from source (once, into the cache of the other server
# binaries), with etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, a containerd of its own and a kubelet, all in a network
# and mount namespace of their own; then the images `chaoslab images build`
# made, moved from Docker (docker save) into that containerd. Nothing of
# the host's network, Docker or its containerd is touched; everything is
# under one folder, $CHAOSLAB_KUBE_DIR (default out/kube), and the pods'
# cgroups. scripts/kube-down.sh stops and removes it all.
#   ./scripts/kube-up.sh                      # every chaoslab/* image
#   ./scripts/kube-up.sh --images etcd,chaoslab
#   ./scripts/kube-up.sh --images none
# Then: out/kube/bin/kubectl get nodes (kubectl with out/kube/kubeconfig)
# CHAOSLAB=path uses that chaoslab to find or build the binaries (default:
# bin/chaoslab, built here as scripts/setup.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."
images=all
while [ $# -gt 0 ]; do
  case $1 in
    --images) images=${2:?--images needs all, none or names}; shift ;;
    --images=*) images=${1#--images=} ;;
    *) echo "kube-up: unknown flag $1 (--images all|none|NAME,...)" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "kube-up: needs root (namespaces, mounts, cgroups)" >&2; exit 2; }
D=${CHAOSLAB_KUBE_DIR:-$PWD/out/kube}
mkdir -p "$D"
D=$(cd "$D" && pwd)
t0=$(date +%s%N)
say() { printf 'kube-up: %s (%.1f s)\n' "$*" "$((($(date +%s%N) - t0) / 1000000))e-3" >&2; }
if [ -s "$D/run/ns.pid" ] && kill -0 "$(cat "$D/run/ns.pid")" 2>/dev/null; then
  echo "kube-up: a cluster is up in $D (scripts/kube-down.sh first)" >&2
  exit 1
fi
# A start that fails stops what it started (the logs stay).
trap '[ $? = 0 ] || { echo "kube-up: failed; stopping what started (logs in $D/log)" >&2; CHAOSLAB_KUBE_DIR=$D ./scripts/kube-down.sh; }' EXIT

# --- what it needs: Debian's packages, the binaries ------------------------
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v socat >/dev/null || need+=(socat)
command -v openssl >/dev/null || need+=(openssl)
command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || need+=(iptables)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
  # The package's own containerd service is not the cluster's.
  if [[ " ${need[*]} " == *" containerd "* ]] && command -v systemctl >/dev/null; then
    systemctl disable --now containerd >/dev/null 2>&1 || true
  fi
fi
if [ -z "${CHAOSLAB:-}" ]; then
  mkdir -p bin
  CGO_ENABLED=0 go build -trimpath -buildvcs=auto -o bin/chaoslab ./cmd/chaoslab
  CHAOSLAB=$PWD/bin/chaoslab
fi
bins=$("$CHAOSLAB" images binaries --only etcd,kubernetes)
bin() { awk -v n="$1" '$1 == n { print $2 }' <<<"$bins"; }
# The pause image's tag is in its archive's name: pause-image-TAG-linux-ARCH-HASH.tar.
pause=$(basename "$(bin pause-image)")
pause=${pause#pause-image-}
pause=chaoslab/pause:${pause%%-linux-*}
say "binaries found"

# --- a clean folder ----------------------------------------------------------
# What a cluster left (kube-down.sh not run, or killed) goes first.
[ -e "$D/run" ] && CHAOSLAB_KUBE_DIR=$D ./scripts/kube-down.sh >/dev/null
rm -rf "$D/log"
mkdir -p "$D"/{bin,etc/cni,pki,run,log,cni/ipam,var/lib,var/log,sysctl}
for n in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet; do
  ln -sfn "$(bin "$n")" "$D/bin/$n"
done
# kubectl for this cluster, its discovery cache in the folder (not ~/.kube).
printf '#!/bin/sh\nexec %s --kubeconfig %s --cache-dir %s "$@"\n' \
  "$(bin kubectl)" "$D/kubeconfig" "$D/run/kubectl-cache" >"$D/bin/kubectl"
chmod +x "$D/bin/kubectl"
B=$D/bin
NODE=chaoslab-node NODE_IP=10.250.0.10
SOCK=$D/run/containerd.sock
# The pods' cgroups: one root per cluster folder, under every hierarchy.
CG=chaoslab-kube-$(printf %s "$D" | sha256sum | cut -c1-8)
echo "$CG" >"$D/run/cgroup"

# --- certificates and configuration ------------------------------------------
# One CA; EC keys (fast to make); the service account key pair.
key() { openssl ecparam -name prime256v1 -genkey -noout -out "$D/pki/$1.key"; }
key ca
openssl req -x509 -new -key "$D/pki/ca.key" -subj /CN=chaoslab-kube-ca -days 3650 -out "$D/pki/ca.crt"
key sa
openssl ec -in "$D/pki/sa.key" -pubout -out "$D/pki/sa.pub" 2>/dev/null
cert() { # NAME SUBJECT [SAN]
  key "$1"
  openssl req -new -key "$D/pki/$1.key" -subj "$2" |
    openssl x509 -req -CA "$D/pki/ca.crt" -CAkey "$D/pki/ca.key" -CAcreateserial -days 3650 \
      -extfile <(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n%s' "${3:+subjectAltName=$3}") \
      -out "$D/pki/$1.crt" 2>/dev/null
}
cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert admin "/O=system:masters/CN=chaoslab"
cert controller-manager /CN=system:kube-controller-manager
cert scheduler /CN=system:kube-scheduler
cert kubelet "/O=system:nodes/CN=system:node:$NODE"
kubeconfig() { # FILE SERVER CERT
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: chaoslab-kube
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 "$D/pki/ca.crt")
users:
- name: $3
  user:
    client-certificate-data: $(base64 -w0 "$D/pki/$3.crt")
    client-key-data: $(base64 -w0 "$D/pki/$3.key")
contexts:
- name: chaoslab-kube
  context: {cluster: chaoslab-kube, user: $3}
current-context: chaoslab-kube
EOF
}
for c in controller-manager scheduler kubelet; do kubeconfig "$D/etc/$c.kubeconfig" https://127.0.0.1:6443 "$c"; done
# The API server is reached from the host through a forwarder on a free
# loopback port: the one listener of the cluster outside its namespace.
port=16443
while [ -n "$(ss -Hltn "sport = :$port")" ]; do port=$((port + 1)); done
kubeconfig "$D/kubeconfig" "https://127.0.0.1:$port" admin
kc() { "$B/kubectl" "$@"; }

cat >"$D/etc/containerd.toml" <<EOF
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause"
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true
  # Root without CAP_SYS_RESOURCE cannot lower a sandbox's oom_score_adj:
  # runc fails every pod ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/etc/cni"
EOF
cat >"$D/etc/cni/10-pods.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "pods", "plugins": [
  {"type": "bridge", "bridge": "pods0", "isGateway": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$D/cni/ipam",
            "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
EOF
cat >"$D/etc/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$D/pki/ca.crt"}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$CG
failCgroupV1: false
failSwapOn: false
resolvConf: /etc/resolv.conf
maxPods: 50
# The host's disk and memory are shared: evict only near the end of them;
# the images were imported, never pulled: never collect them.
evictionHard: {memory.available: 200Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 2%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Not /usr/libexec/kubernetes on the host.
volumePluginDir: "$D/var/lib/kubelet-plugins"
# A container's standard output and error served apart (alpha in 1.34):
# the placement reads an agent's samples apart from its log.
featureGates: {PodLogsQuerySplitStreams: true}
EOF

say "certificates and configuration"

# --- namespaces, cgroups -----------------------------------------------------
# The pods' cgroup root (v1: in every hierarchy; cpuset needs its cpus).
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  mkdir -p "/sys/fs/cgroup/$CG"
else
  for h in /sys/fs/cgroup/*/; do
    [ -L "${h%/}" ] || [ "$(basename "$h")" = unified ] || mkdir -p "$h$CG"
  done
  if [ -d "/sys/fs/cgroup/cpuset/$CG" ]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$CG/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$CG/cpuset.mems"
  fi
fi
# The namespaces' holder: the node address on the namespace's loopback (the
# kubelet refuses 127.0.0.1; the kernel may have no dummy links), a /run of
# its own (shim sockets, runc state), /var/lib and /var/log in the folder,
# and private copies of the kernel settings the kubelet rewrites.
ns_init='
set -e
D=$1
ip link set lo up
ip addr add '"$NODE_IP"'/32 dev lo
mount -t tmpfs -o mode=755,size=64m chaoslab-kube /run
mkdir -p /run/lock && : >/run/xtables.lock
mount --bind "$D/var/lib" /var/lib
mount --bind "$D/var/log" /var/log
# /tmp of its own (the controller-manager provisions hostPath volumes in
# /tmp/hostpath_pv), the folder kept reachable at its path when under /tmp.
mkdir -p /run/host-tmp "$D/tmp"
mount --bind /tmp /run/host-tmp
mount --bind "$D/tmp" /tmp
case $D in /tmp/*)
  mkdir -p "$D"
  mount --bind "/run/host-tmp/${D#/tmp/}" "$D" ;;
esac
umount /run/host-tmp
for f in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes; do
  [ -e /proc/sys/$f ] || continue
  c="$D/sysctl/$(echo $f | tr / .)"
  cat /proc/sys/$f >"$c"
  mount --bind "$c" /proc/sys/$f
done
echo $$ >"$D/run/ns.pid"
exec sleep infinity'
setsid unshare --net --mount --propagation private --fork -- sh -c "$ns_init" ns-init "$D" \
  >"$D/log/ns-init.log" 2>&1 </dev/null &
for _ in $(seq 100); do [ -s "$D/run/ns.pid" ] && break; sleep 0.1; done
[ -s "$D/run/ns.pid" ] || { cat "$D/log/ns-init.log" >&2; echo "kube-up: the namespaces did not come up" >&2; exit 1; }
NS=(nsenter --target "$(cat "$D/run/ns.pid")" --net --mount --)
start() { # NAME PROGRAM ARGS...: in the namespaces, detached, a pid file, a log
  local name=$1
  shift
  setsid "${NS[@]}" sh -c 'echo $$ >"$0"; exec "$@"' "$D/run/$name.pid" "$@" >"$D/log/$name.log" 2>&1 </dev/null &
}
waitfor() { # WHAT SECONDS COMMAND...
  local what=$1 n=$2
  shift 2
  for _ in $(seq $((n * 5))); do
    "$@" >/dev/null 2>&1 && { say "$what"; return 0; }
    sleep 0.2
  done
  echo "kube-up: timed out waiting for $what (logs in $D/log)" >&2
  exit 1
}
say "namespaces up"

# --- the cluster -------------------------------------------------------------
start etcd "$B/etcd" --name chaoslab-kube --data-dir "$D/etcd" --log-level warn \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster chaoslab-kube=http://127.0.0.1:2380
start containerd containerd --config "$D/etc/containerd.toml"
start kube-apiserver "$B/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
  --secure-port=6443 --advertise-address="$NODE_IP" \
  --tls-cert-file="$D/pki/apiserver.crt" --tls-private-key-file="$D/pki/apiserver.key" \
  --client-ca-file="$D/pki/ca.crt" \
  --kubelet-client-certificate="$D/pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$D/pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$D/pki/sa.pub" \
  --service-account-signing-key-file="$D/pki/sa.key" --service-cluster-ip-range=10.96.0.0/16 \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true --profiling=false --v=1 \
  --feature-gates=PodLogsQuerySplitStreams=true
# The forwarder: host loopback port -> a socket in the folder -> the API
# server's port in the namespace.
start forward-in socat "UNIX-LISTEN:$D/run/apiserver.sock,fork,unlink-early" TCP:127.0.0.1:6443
setsid sh -c 'echo $$ >"$0"; exec "$@"' "$D/run/forward.pid" \
  socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$D/run/apiserver.sock" \
  >"$D/log/forward.log" 2>&1 </dev/null &
waitfor "containerd up" 30 "${NS[@]}" ctr --address "$SOCK" version
"${NS[@]}" ctr --address "$SOCK" -n k8s.io images import "$(bin pause-image)" >/dev/null
start kubelet "$B/kubelet" --config="$D/etc/kubelet.yaml" --kubeconfig="$D/etc/kubelet.kubeconfig" \
  --root-dir="$D/var/lib/kubelet" --hostname-override="$NODE" --node-ip="$NODE_IP" --v=1
waitfor "API server ready" 120 kc get --raw /readyz
# They exit when the API server has not yet made their roles: started now.
for c in controller-manager scheduler; do
  args=(--kubeconfig="$D/etc/$c.kubeconfig" --authentication-kubeconfig="$D/etc/$c.kubeconfig"
    --authorization-kubeconfig="$D/etc/$c.kubeconfig" --bind-address=127.0.0.1 --leader-elect=false
    --profiling=false --v=1)
  [ $c = scheduler ] || args+=(--use-service-account-credentials=true --root-ca-file="$D/pki/ca.crt"
    --service-account-private-key-file="$D/pki/sa.key" --service-cluster-ip-range=10.96.0.0/16
    --cluster-signing-cert-file="$D/pki/ca.crt" --cluster-signing-key-file="$D/pki/ca.key"
    --flex-volume-plugin-dir="$D/var/lib/kubelet-plugins" --enable-hostpath-provisioner=true)
  start "kube-$c" "$B/kube-$c" "${args[@]}"
done
ready() { [ "$(kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
waitfor "node $NODE Ready" 120 ready
waitfor "ready for pods (default service account)" 60 kc get serviceaccount default
# The default StorageClass: hostPath volumes the controller-manager makes
# in the namespaces' /tmp and removes with their claim (one node only).
kc apply -f - >/dev/null <<'YAML'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: chaoslab-hostpath
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
YAML
echo "$(( ($(date +%s%N) - t0) / 1000000 ))" >"$D/log/ready-ms"

# --- the images --------------------------------------------------------------
if [ "$images" != none ] && docker info >/dev/null 2>&1; then
  for ref in $(docker images --format '{{.Repository}}:{{.Tag}}' 'chaoslab/*' | grep -v '<none>' | sort); do
    name=${ref#chaoslab/}
    name=${name%%:*}
    [ "$images" = all ] || [[ ",$images," == *",$name,"* ]] || continue
    docker save "$ref" | "${NS[@]}" ctr --address "$SOCK" -n k8s.io images import - >/dev/null
    say "image $ref"
  done
elif [ "$images" != none ]; then
  echo "kube-up: no Docker engine answers: no chaoslab image in the cluster" >&2
fi
say "up: $D/bin/kubectl get nodes (kubeconfig: $D/kubeconfig)"
