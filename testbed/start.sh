#!/usr/bin/env bash
# Start a throw-away Kubernetes control plane for wlmap end-to-end tests:
# etcd + kube-apiserver (RBAC, TLS, generated certificates) on 127.0.0.1 with
# free ports, and optionally kube-controller-manager.
#
#   testbed/start.sh [DIR]
#
# DIR (default: a new mktemp directory; must be new or empty) receives the
# certificates, kubeconfigs, data, logs and the env file DIR/env, whose path is
# printed on stdout.
# Source it (`set -a; . DIR/env; set +a`) to get the WLMAP_TESTBED_* variables.
# Stop with: testbed/stop.sh DIR
#
# Environment:
#   WLMAP_TESTBED_BIN          use binaries from this directory (skip build.sh)
#   WLMAP_TESTBED_CONTROLLERS  1 = also start kube-controller-manager (real
#                              Job/ReplicaSet/StatefulSet/... controllers;
#                              without WLMAP_TESTBED_SCHEDULING pods stay Pending)
#   WLMAP_TESTBED_SCHEDULING   1 = a cluster that schedules: kube-controller-manager,
#                              kube-scheduler (gang scheduling on) and the KWOK
#                              controller, which runs the pods bound to fake nodes
#                              (no node exists until a test adds one)
#   WLMAP_TESTBED_OPERATORS    operators to start, comma-separated (implies
#                              SCHEDULING): kuberay, jobset, lws, training-operator,
#                              trainer (Kubeflow Trainer; it needs jobset too),
#                              mpi-operator (MPIJob v2beta1; with training-operator, that one
#                              runs without its MPIJob v1), coscheduling (scheduler-plugins'
#                              scheduler with the Coscheduling plugin, as the second scheduler
#                              `scheduler-plugins-scheduler`, and its PodGroup controller),
#                              kueue (Kueue with its `batch/job`, `pod` and
#                              `ray.io/raycluster` integrations on)
#   WLMAP_TESTBED_FEATURE_GATES  more Kubernetes feature gates for every component
#                              (comma-separated; e.g. WorkloadWithJob=true)
#   WLMAP_TESTBED_CLIENT_QPS   requests/s (and burst) of kube-controller-manager's and
#                              kube-scheduler's clients (default: theirs, 20 and 50); the
#                              scale benchmark raises it as Kubernetes' scalability tests do
#   WLMAP_TESTBED_OPERATOR_WORKERS=N  KubeRay's and the training operator's workloads
#                              reconciled N at a time (--reconcile-concurrency,
#                              --controller-threads; both 1 by default, each workload's
#                              pods made one request after another)
#   WLMAP_TESTBED_PROFILING=1  the API server serves /debug/pprof (off otherwise, as
#                              hardened clusters run it); the scale benchmark's
#                              WLMAP_SCALE_APIPROF takes its CPU profiles there
#   WLMAP_TESTBED_START_TIMEOUT  seconds to wait for readiness (default 120)
#   WLMAP_TESTBED_KEEP=1       on failure keep DIR (logs) instead of removing it
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[testbed/start] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for tool in openssl base64; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is required (apt-get install $tool)"
done

T0=$(date +%s%N)
TIMEOUT="${WLMAP_TESTBED_START_TIMEOUT:-120}"
CONTROLLERS="${WLMAP_TESTBED_CONTROLLERS:-0}"
SCHEDULING="${WLMAP_TESTBED_SCHEDULING:-0}"
OPERATORS="${WLMAP_TESTBED_OPERATORS:-}"
for op in ${OPERATORS//,/ }; do
  case "$op" in
    kuberay|jobset|lws|training-operator|trainer|mpi-operator|coscheduling|kueue) ;;
    *) die "unknown operator $op (known: kuberay, jobset, lws, training-operator, trainer, mpi-operator, coscheduling, kueue)" ;;
  esac
done
case ",$OPERATORS," in *,trainer,*)
  case ",$OPERATORS," in *,jobset,*) ;; *) die "the trainer operator runs its TrainJobs as JobSets: add jobset to WLMAP_TESTBED_OPERATORS" ;; esac
esac
[ -n "$OPERATORS" ] && SCHEDULING=1
[ "$SCHEDULING" = 1 ] && CONTROLLERS=1
# Workload-aware scheduling (Workload and PodGroup, scheduling.k8s.io/v1beta1, beta in
# v1.37 and off by default), and its hierarchical gangs (CompositePodGroup,
# scheduling.k8s.io/v1alpha3, alpha in v1.37, which needs TopologyAwareWorkloadScheduling):
# the gates on every component, the API versions on the server.
FEATURE_GATES="GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"
# More gates on every component (WLMAP_TESTBED_FEATURE_GATES, comma-separated), e.g. the v1.37
# Job controller's own gangs (`WorkloadWithJob=true`, alpha): a testbed of its own, since with
# it every Job without an owner gets the Job controller's gang objects.
[ -z "${WLMAP_TESTBED_FEATURE_GATES:-}" ] || FEATURE_GATES="$FEATURE_GATES,$WLMAP_TESTBED_FEATURE_GATES"
CLIENT_QPS=()
[ -z "${WLMAP_TESTBED_CLIENT_QPS:-}" ] \
  || CLIENT_QPS=(--kube-api-qps="$WLMAP_TESTBED_CLIENT_QPS" --kube-api-burst="$WLMAP_TESTBED_CLIENT_QPS")
NAMESPACE=team-a
ADMIN_USER=wlmap-admin
RESTRICTED_USER=wlmap-restricted
SERVICE_CIDR=10.0.0.0/24

# ---------------------------------------------------------------- binaries
if [ -n "${WLMAP_TESTBED_BIN:-}" ]; then
  BIN="$WLMAP_TESTBED_BIN"
else
  BIN="$("$HERE/build.sh")"
fi
for b in etcd kube-apiserver kubectl; do
  [ -x "$BIN/$b" ] || die "missing $BIN/$b (run testbed/build.sh)"
done
K8S_VERSION="$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$HERE/go.mod")"

# ---------------------------------------------------------------- directory
if [ $# -ge 1 ] && [ -n "$1" ]; then
  DIR="$1"
  mkdir -p "$DIR"
else
  DIR="$(mktemp -d "${TMPDIR:-/tmp}/wlmap-testbed.XXXXXX")"
fi
DIR="$(cd "$DIR" && pwd)"
case "$DIR" in
  *[[:space:]\'\"\$\\\`]*) die "DIR must not contain spaces, quotes or shell metacharacters: $DIR" ;;
esac
[ -e "$DIR/env" ] && die "$DIR already holds a testbed (stop it with testbed/stop.sh $DIR)"
# DIR is deleted by stop.sh, so only ever take an empty (or new) directory.
[ -z "$(ls -A "$DIR")" ] || die "$DIR is not empty; give a new or empty directory"
touch "$DIR/.wlmap-testbed"   # marker: stop.sh only deletes directories carrying it
mkdir -p "$DIR/pki" "$DIR/logs" "$DIR/pids" "$DIR/kube-cache"
chmod 700 "$DIR" "$DIR/pki"
export KUBECACHEDIR="$DIR/kube-cache"

STARTED=0
on_exit() {
  local rc=$?
  [ "$STARTED" = 1 ] && return 0
  [ "$rc" = 0 ] && rc=1
  log "FAILED (exit $rc); last log lines:"
  local f
  for f in "$DIR"/logs/*.log; do
    [ -f "$f" ] || continue
    printf -- '----- %s\n' "$f" >&2
    tail -n 25 "$f" >&2 || true
  done
  if [ "${WLMAP_TESTBED_KEEP:-0}" = 1 ]; then
    "$HERE/stop.sh" --keep "$DIR" >&2 || true
    log "kept $DIR"
  else
    "$HERE/stop.sh" "$DIR" >&2 || true
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- free ports
free_ports() { # N -> N distinct free TCP ports on 127.0.0.1
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
  else
    local want=$1 out=() p
    while [ ${#out[@]} -lt "$want" ]; do
      p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
      case " ${out[*]} " in *" $p "*) continue ;; esac
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then out+=("$p"); fi
    done
    echo "${out[*]}"
  fi
}
read -r ETCD_PORT ETCD_PEER_PORT APISERVER_PORT < <(free_ports 3)
SERVER="https://127.0.0.1:$APISERVER_PORT"

# ---------------------------------------------------------------- certificates
PKI="$DIR/pki"
ossl() { openssl "$@" 2>>"$DIR/logs/openssl.log"; }
gen_key() { ossl genrsa -out "$1" 2048; chmod 600 "$1"; }

gen_key "$PKI/ca.key"
cat > "$PKI/ca.ext" <<'EOF'
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
EOF
ossl req -new -key "$PKI/ca.key" -subj "/CN=wlmap-testbed-ca" -out "$PKI/ca.csr"
ossl x509 -req -in "$PKI/ca.csr" -signkey "$PKI/ca.key" -sha256 -days 7 \
  -extfile "$PKI/ca.ext" -out "$PKI/ca.crt"
rm -f "$PKI/ca.csr"

# sign NAME SUBJECT EKU [SAN]
sign() {
  local name=$1 subj=$2 eku=$3 san=${4:-}
  gen_key "$PKI/$name.key"
  ossl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr"
  {
    echo "basicConstraints = critical, CA:FALSE"
    echo "keyUsage = critical, digitalSignature, keyEncipherment"
    echo "extendedKeyUsage = $eku"
    echo "authorityKeyIdentifier = keyid"
    [ -n "$san" ] && echo "subjectAltName = $san"
  } > "$PKI/$name.ext"
  ossl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -sha256 -days 7 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt"
  rm -f "$PKI/$name.csr"
}
sign apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1, DNS:localhost, IP:10.0.0.1, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local"
sign admin "/O=system:masters/CN=$ADMIN_USER" clientAuth
sign restricted "/CN=$RESTRICTED_USER" clientAuth
# The controller manager runs all controllers under one identity; make it a
# cluster admin so it needs no per-controller service-account credentials.
sign controller-manager "/O=system:masters/CN=system:kube-controller-manager" clientAuth
# The scheduler runs as the identity the bootstrap RBAC policy grants (system:kube-scheduler
# and system:volume-scheduler), so a permission it lacks upstream it lacks here too.
sign scheduler "/CN=system:kube-scheduler" clientAuth
# service-account token signing key pair
gen_key "$PKI/sa.key"
ossl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"

# ---------------------------------------------------------------- kubeconfigs
b64() { base64 < "$1" | tr -d '\n'; }
write_kubeconfig() { # FILE USER CERTNAME NAMESPACE
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: wlmap-testbed
  cluster:
    server: $SERVER
    certificate-authority-data: $(b64 "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(b64 "$PKI/$3.crt")
    client-key-data: $(b64 "$PKI/$3.key")
contexts:
- name: $2@wlmap-testbed
  context:
    cluster: wlmap-testbed
    user: $2
    namespace: $4
current-context: $2@wlmap-testbed
EOF
  chmod 600 "$1"
}
KUBECONFIG_ADMIN="$DIR/admin.kubeconfig"
KUBECONFIG_RESTRICTED="$DIR/restricted.kubeconfig"
write_kubeconfig "$KUBECONFIG_ADMIN" "$ADMIN_USER" admin default
write_kubeconfig "$KUBECONFIG_RESTRICTED" "$RESTRICTED_USER" restricted "$NAMESPACE"
write_kubeconfig "$DIR/controller-manager.kubeconfig" system:kube-controller-manager controller-manager default
write_kubeconfig "$DIR/scheduler.kubeconfig" system:kube-scheduler scheduler default

# ---------------------------------------------------------------- processes
launch() { # NAME CMD... : start detached, log to DIR/logs/NAME.log, pid to DIR/pids/NAME.pid
  local name=$1; shift
  if command -v setsid >/dev/null 2>&1; then
    setsid "$@" </dev/null >"$DIR/logs/$name.log" 2>&1 &
  else
    "$@" </dev/null >"$DIR/logs/$name.log" 2>&1 &
  fi
  echo $! > "$DIR/pids/$name.pid"
}
alive() { kill -0 "$(cat "$DIR/pids/$1.pid")" 2>/dev/null || die "$1 exited early (see $DIR/logs/$1.log)"; }
deadline() { echo $(( $(date +%s) + TIMEOUT )); }

launch etcd "$BIN/etcd" \
  --name=testbed \
  --data-dir="$DIR/etcd" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="testbed=http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster-state=new \
  --unsafe-no-fsync=true \
  --quota-backend-bytes=2147483648 \
  --log-level=warn

etcd_healthy() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$ETCD_PORT") 2>/dev/null
  fi
}
end=$(deadline)
until etcd_healthy; do
  alive etcd
  [ "$(date +%s)" -lt "$end" ] || die "etcd not healthy after ${TIMEOUT}s"
  sleep 0.2
done
log "etcd healthy on 127.0.0.1:$ETCD_PORT"

launch kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 \
  --secure-port="$APISERVER_PORT" \
  --cert-dir="$PKI" \
  --tls-cert-file="$PKI/apiserver.crt" \
  --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" \
  --service-account-signing-key-file="$PKI/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --disable-admission-plugins=ServiceAccount \
  --enable-priority-and-fairness=false \
  --endpoint-reconciler-type=none \
  --allow-privileged=true \
  --profiling="$([ "${WLMAP_TESTBED_PROFILING:-}" = 1 ] && echo true || echo false)" \
  --feature-gates="$FEATURE_GATES" \
  --runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true \
  --v=1

KC=("$BIN/kubectl" --kubeconfig="$KUBECONFIG_ADMIN" --request-timeout=5s)
end=$(deadline)
until [ "$("${KC[@]}" get --raw=/readyz 2>/dev/null)" = ok ]; do
  alive kube-apiserver
  [ "$(date +%s)" -lt "$end" ] || die "kube-apiserver not ready after ${TIMEOUT}s"
  sleep 0.3
done
log "kube-apiserver ready at $SERVER"
# restart-apiserver.sh relaunches the apiserver with the same command line (fault tests).
cp "/proc/$(cat "$DIR/pids/kube-apiserver.pid")/cmdline" "$DIR/kube-apiserver.cmdline"
# The fault-injecting proxy (fault tests): stdlib only, outside cmd/ so that it never
# invalidates the cached Kubernetes binaries.
if (cd "$HERE" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly \
      go build -o "$DIR/faultproxy" ./faultproxy) >"$DIR/logs/faultproxy-build.log" 2>&1; then
  FAULTPROXY="$DIR/faultproxy"
else
  log "warning: faultproxy did not build (see $DIR/logs/faultproxy-build.log); fault tests will skip"
  FAULTPROXY=
fi

# ---------------------------------------------------------------- namespace + RBAC
"${KC[@]}" apply -f - >"$DIR/logs/setup.log" 2>&1 <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $NAMESPACE
---
# The restricted user may only read (get/list/watch) namespaced objects in
# $NAMESPACE; it has no ClusterRoleBinding, so nothing cluster-scoped.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: wlmap-read-all
  namespace: $NAMESPACE
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: wlmap-restricted-read-all
  namespace: $NAMESPACE
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: $RESTRICTED_USER
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: wlmap-read-all
EOF
# RBAC is served from an informer cache: wait until the binding is effective.
end=$(deadline)
until "$BIN/kubectl" --kubeconfig="$KUBECONFIG_RESTRICTED" --request-timeout=5s \
        get pods -n "$NAMESPACE" >/dev/null 2>&1; do
  [ "$(date +%s)" -lt "$end" ] || die "RBAC for $RESTRICTED_USER not effective after ${TIMEOUT}s"
  sleep 0.2
done

# ---------------------------------------------------------------- controller manager (optional)
KCM_PID=""
if [ "$CONTROLLERS" = 1 ]; then
  [ -x "$BIN/kube-controller-manager" ] || die "missing $BIN/kube-controller-manager"
  launch kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$DIR/controller-manager.kubeconfig" \
    --secure-port=0 \
    --leader-elect=false \
    --controllers='*' \
    --root-ca-file="$PKI/ca.crt" \
    --service-account-private-key-file="$PKI/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --use-service-account-credentials=false \
    --feature-gates="$FEATURE_GATES" \
    "${CLIENT_QPS[@]}" \
    --v=1
  KCM_PID="$(cat "$DIR/pids/kube-controller-manager.pid")"
  # The serviceaccount controller creating team-a/default proves controllers run.
  end=$(deadline)
  until "${KC[@]}" get serviceaccount default -n "$NAMESPACE" >/dev/null 2>&1; do
    alive kube-controller-manager
    [ "$(date +%s)" -lt "$end" ] || die "kube-controller-manager not working after ${TIMEOUT}s"
    sleep 0.3
  done
  log "kube-controller-manager running"
fi

# ---------------------------------------------------------------- scheduling (optional)
SCHEDULER_PID=""
KWOK_PID=""
if [ "$SCHEDULING" = 1 ]; then
  for b in kube-scheduler kwok; do
    [ -x "$BIN/$b" ] || die "missing $BIN/$b (run testbed/build.sh)"
  done
  # The default profile; with GenericWorkload on it holds the GangScheduling plugin.
  launch kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig="$DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig="$DIR/scheduler.kubeconfig" \
    --leader-elect=false \
    --bind-address=127.0.0.1 \
    --secure-port=0 \
    --feature-gates="$FEATURE_GATES" \
    "${CLIENT_QPS[@]}" \
    --v=1
  SCHEDULER_PID="$(cat "$DIR/pids/kube-scheduler.pid")"
  # KWOK runs the pods bound to nodes annotated kwok.x-k8s.io/node=fake, with its own
  # stages from the module (no Stage CRD): nodes become Ready and keep a heartbeat, pods
  # become Running and Ready, and a Job's pods then Succeeded (unless labelled
  # wlmap.test/keep-running: testbed/kwok/pod-complete.yaml). It opens no port.
  STAGES="$(dirname "$BIN")/kwok"
  mkdir -p "$DIR/kwok-home"
  KWOK_WORKDIR="$DIR/kwok-home" launch kwok "$BIN/kwok" \
    --kubeconfig="$KUBECONFIG_ADMIN" \
    --config="$STAGES/node/fast/node-initialize.yaml" \
    --config="$STAGES/node/heartbeat/node-heartbeat.yaml" \
    --config="$STAGES/pod/fast/pod-ready.yaml" \
    --config="$HERE/kwok/pod-complete.yaml" \
    --config="$STAGES/pod/fast/pod-delete.yaml" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.244.0.0/16 \
    --node-ip=10.1.0.1
  KWOK_PID="$(cat "$DIR/pids/kwok.pid")"
  sleep 1
  alive kube-scheduler
  alive kwok
  log "kube-scheduler and kwok running"
fi

# `kubectl wait` alone fails when it reads a CRD before the API server has written any
# condition (`.status.conditions accessor error`), so it is asked again until the deadline.
wait_established() { # CRD...
  local end
  end=$(deadline)
  until "${KC[@]}" wait --for=condition=Established --timeout=10s "$@" >>"$DIR/logs/setup.log" 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.3
  done
}

KUBERAY_PID=""
case ",$OPERATORS," in *,kuberay,*)
  [ -x "$BIN/ray-operator" ] || die "missing $BIN/ray-operator (run testbed/build.sh)"
  # The CRDs are too large for client-side apply's last-applied annotation.
  for crd in "$(dirname "$BIN")"/kuberay/ray.io_*.yaml; do
    "${KC[@]}" apply --server-side --force-conflicts -f "$crd" >>"$DIR/logs/setup.log" 2>&1 \
      || die "applying $crd failed (see $DIR/logs/setup.log)"
  done
  wait_established crd/rayclusters.ray.io crd/rayjobs.ray.io crd/rayservices.ray.io \
    || die "KubeRay CRDs not established"
  read -r RAY_HEALTH_PORT < <(free_ports 1)
  launch ray-operator "$BIN/ray-operator" \
    --kubeconfig="$KUBECONFIG_ADMIN" \
    --enable-leader-election=false \
    --metrics-addr=0 \
    --health-probe-bind-address="127.0.0.1:$RAY_HEALTH_PORT" \
    --log-stdout-encoder=console \
    ${WLMAP_TESTBED_OPERATOR_WORKERS:+--reconcile-concurrency="$WLMAP_TESTBED_OPERATOR_WORKERS"}
  KUBERAY_PID="$(cat "$DIR/pids/ray-operator.pid")"
  end=$(deadline)
  until [ "$(curl -fsS --max-time 2 "http://127.0.0.1:$RAY_HEALTH_PORT/readyz" 2>/dev/null)" = ok ]; do
    alive ray-operator
    [ "$(date +%s)" -lt "$end" ] || die "ray-operator not ready after ${TIMEOUT}s"
    sleep 0.3
  done
  log "KubeRay operator ready"
  ;;
esac

# Operators built with controller-runtime, run as their own install configures them:
# `kubectl kustomize` of the module's overlay gives the CRDs, the webhook configurations
# (failure policies, rules and object selectors as upstream wrote them), the manager's
# arguments, environment and configuration. testbed/operator.py changes only what running
# outside a cluster forces: each webhook is reached by URL on loopback (instead of through a
# Service), leader election is off, no metrics listener. Serving certificates:
#  - JobSet and LWS take their configuration's `internalCertManagement.enable: false` and a
#    certificate made here (the testbed CA, for 127.0.0.1), from a directory the
#    configuration names;
#  - Kubeflow Trainer takes its configuration's `certManagement.enable: false` and reads its
#    certificate from /tmp/k8s-webhook-server/serving-certs (controller-runtime's default,
#    where its Deployment mounts the Secret; its configuration names no directory): the one
#    certificate below, which the training operator serves from the same path;
#  - the Kubeflow training operator always rotates its own (open-policy-agent/cert-controller,
#    into a Secret, which its Deployment mounts at that same path, and into its webhook
#    configuration's caBundle). It is given the Secret already filled with a CA and a
#    certificate the rotator accepts (the CA names itself as the rotator expects, the
#    certificate names the Service the rotator checks and 127.0.0.1 as well, both valid longer
#    than its 90-day look-ahead), so it keeps them; the files are put where the volume would
#    mount them. The fixed path is why one testbed with a Kubeflow operator runs on a
#    machine at a time.
DEFAULT_CERT_DIR=/tmp/k8s-webhook-server/serving-certs
ROTATOR_SERVICES="DNS:training-operator.kubeflow.svc"
# The rotator reads its keys as PKCS#1 ("RSA PRIVATE KEY"); OpenSSL 3 writes PKCS#8.
gen_pkcs1_key() { gen_key "$1.pkcs8"; ossl rsa -in "$1.pkcs8" -traditional -out "$1"; chmod 600 "$1"; rm -f "$1.pkcs8"; }
rotator_pki() { # once: the CA and the certificate of /tmp/k8s-webhook-server/serving-certs
  [ -f "$PKI/rotator.crt" ] && return 0
  gen_pkcs1_key "$PKI/rotator-ca.key"
  {
    cat "$PKI/ca.ext"
    echo "subjectAltName = DNS:training-operator-ca"
  } > "$PKI/rotator-ca.ext"
  ossl req -new -key "$PKI/rotator-ca.key" -subj "/CN=wlmap-testbed-rotator-ca" -out "$PKI/rotator-ca.csr"
  ossl x509 -req -in "$PKI/rotator-ca.csr" -signkey "$PKI/rotator-ca.key" -sha256 -days 3650 \
    -extfile "$PKI/rotator-ca.ext" -out "$PKI/rotator-ca.crt"
  gen_pkcs1_key "$PKI/rotator.key"
  ossl req -new -key "$PKI/rotator.key" -subj "/CN=wlmap-testbed-rotator" -out "$PKI/rotator.csr"
  printf '%s\n' "basicConstraints = critical, CA:FALSE" \
    "keyUsage = critical, digitalSignature, keyEncipherment" "extendedKeyUsage = serverAuth" \
    "subjectAltName = $ROTATOR_SERVICES, IP:127.0.0.1" > "$PKI/rotator.ext"
  ossl x509 -req -in "$PKI/rotator.csr" -CA "$PKI/rotator-ca.crt" -CAkey "$PKI/rotator-ca.key" \
    -CAcreateserial -sha256 -days 3650 -extfile "$PKI/rotator.ext" -out "$PKI/rotator.crt"
  rm -f "$PKI"/rotator*.csr
}

# NAME BINARY OVERLAY DEPLOYMENT GROUPS CERTS DROP AFTER CRD...: render, apply, launch, wait
# until ready, then apply the AFTER overlay (objects its webhooks admit, e.g. Trainer's
# runtimes). CERTS: "config" (the manager's configuration turns rotation off and names the
# certificate directory: a certificate of the testbed CA), "default-dir" (it turns rotation
# off; the rotator's certificate goes to controller-runtime's default directory) or "rotator".
# DROP: a resource line the overlay's own comment says to take out in this case (Trainer's
# bundled JobSet release, fetched from the web, when JobSet is installed already).
start_operator() {
  local name=$1 binary=$2 overlay=$3 deployment=$4 groups=$5 certs=$6 drop=$7 after=$8
  local manifests probe webhook ca
  shift 8
  [ -x "$BIN/$binary" ] || die "missing $BIN/$binary (run testbed/build.sh)"
  [ -d "$(dirname "$BIN")/$name/$overlay" ] || die "missing $(dirname "$BIN")/$name/$overlay (run testbed/build.sh)"
  manifests="$DIR/$name/manifests"
  mkdir -p "$DIR/$name"
  cp -r "$(dirname "$BIN")/$name" "$manifests"
  [ -z "$drop" ] || sed -i "\|$drop|d" "$manifests/$overlay/kustomization.yaml"
  command -v python3 >/dev/null 2>&1 || die "python3 (with PyYAML) is required for the $name operator"
  read -r probe webhook status < <(free_ports 3)
  if [ "$certs" != config ]; then
    rotator_pki
    ca="$PKI/rotator-ca.crt"
  else
    sign "$name-webhook" "/CN=$name-webhook" serverAuth "IP:127.0.0.1, DNS:localhost"
    cp "$PKI/$name-webhook.crt" "$DIR/$name/tls.crt"
    cp "$PKI/$name-webhook.key" "$DIR/$name/tls.key"
    ca="$PKI/ca.crt"
  fi
  "$BIN/kubectl" kustomize "$manifests/$overlay" >"$DIR/$name/rendered.yaml" 2>>"$DIR/logs/setup.log" \
    || die "kubectl kustomize $manifests/$overlay failed (see $DIR/logs/setup.log)"
  PROBE_PORT="$probe" STATUS_PORT="$status" EXCLUDE_CRDS="${EXCLUDE_CRDS[$name]:-}" \
    CONFIG_PATCH="${CONFIG_PATCH[$name]:-}" python3 "$HERE/operator.py" "$name" "$DIR/$name/rendered.yaml" "$DIR/$name" \
    "https://127.0.0.1:$webhook" "$ca" "$deployment" "$groups" \
    2>>"$DIR/logs/setup.log" || die "testbed/operator.py $name failed (see $DIR/logs/setup.log)"
  # Server-side: the CRDs are larger than client-side apply's annotation allows.
  "${KC[@]}" apply --server-side --force-conflicts -f "$DIR/$name/$name-manifests.json" \
    >>"$DIR/logs/setup.log" 2>&1 || die "applying $name's manifests failed (see $DIR/logs/setup.log)"
  wait_established "$@" || die "$name CRDs not established"
  local args=() env=() secret
  mapfile -t args <"$DIR/$name/$name-args"
  mapfile -t env <"$DIR/$name/$name-env"
  # shellcheck disable=SC2206 # the extra arguments split into words
  args+=(${EXTRA_ARGS[$name]:-})
  if [ "$certs" = rotator ]; then
    secret="$(cat "$DIR/$name/$name-secret")"
    [ -n "$secret" ] || die "$name: its install names no webhook certificate Secret"
    "${KC[@]}" create secret generic "${secret#*/}" -n "${secret%%/*}" \
      --from-file=ca.crt="$PKI/rotator-ca.crt" --from-file=ca.key="$PKI/rotator-ca.key" \
      --from-file=tls.crt="$PKI/rotator.crt" --from-file=tls.key="$PKI/rotator.key" \
      >>"$DIR/logs/setup.log" 2>&1 || die "$name: creating the Secret $secret failed"
    # What the Deployment's Secret volume mounts there (the rotator waits for the files).
    mkdir -p "$DEFAULT_CERT_DIR"
    cp "$PKI/rotator.crt" "$DEFAULT_CERT_DIR/tls.crt"
    cp "$PKI/rotator.key" "$DEFAULT_CERT_DIR/tls.key"
    cp "$PKI/rotator-ca.crt" "$DEFAULT_CERT_DIR/ca.crt"
    args+=(--webhook-server-port="$webhook" --health-probe-bind-address="127.0.0.1:$probe"
      --metrics-bind-address=0)
  else
    if [ "$certs" = default-dir ]; then
      mkdir -p "$DEFAULT_CERT_DIR"
      cp "$PKI/rotator.crt" "$DEFAULT_CERT_DIR/tls.crt"
      cp "$PKI/rotator.key" "$DEFAULT_CERT_DIR/tls.key"
    fi
    if [ -n "${FIXED_CERT_DIR[$name]:-}" ]; then
      { mkdir -p "${FIXED_CERT_DIR[$name]}" && cp "$DIR/$name/tls.crt" "$DIR/$name/tls.key" "${FIXED_CERT_DIR[$name]}/"; } \
        2>>"$DIR/logs/setup.log" || die "$name reads its certificate from ${FIXED_CERT_DIR[$name]}, which this user cannot write (run as root, or leave $name out of WLMAP_TESTBED_OPERATORS)"
    fi
    args+=(--config="$DIR/$name/$name-config.yaml")
  fi
  launch "$binary" env "${env[@]}" "$BIN/$binary" --kubeconfig="$KUBECONFIG_ADMIN" "${args[@]}"
  end=$(deadline)
  until [ "$(curl -fsS --max-time 2 "http://127.0.0.1:$probe/readyz" 2>/dev/null)" = ok ]; do
    alive "$binary"
    [ "$(date +%s)" -lt "$end" ] || die "$name operator not ready after ${TIMEOUT}s"
    sleep 0.3
  done
  if [ -n "$after" ]; then
    "$BIN/kubectl" kustomize "$manifests/$after" >"$DIR/$name/after.yaml" 2>>"$DIR/logs/setup.log" \
      && "${KC[@]}" apply --server-side -f "$DIR/$name/after.yaml" >>"$DIR/logs/setup.log" 2>&1 \
      || die "$name: applying $after failed (see $DIR/logs/setup.log)"
  fi
  log "$name operator ready (webhooks on 127.0.0.1:$webhook)"
}
declare -A OPERATOR_PID=() EXCLUDE_CRDS=() EXTRA_ARGS=() CONFIG_PATCH=() FIXED_CERT_DIR=()
# MPIJob has two operators with one CRD name (mpijobs.kubeflow.org): the training operator's
# v1 and the MPI operator's v2beta1, which the catalog reads. With both, the training operator
# runs without its MPIJob (its own --enable-scheme flag, every other kind it serves named).
case ",$OPERATORS," in *,mpi-operator,*)
  EXCLUDE_CRDS[training-operator]=mpijobs.kubeflow.org
  EXTRA_ARGS[training-operator]="--enable-scheme=pytorchjob --enable-scheme=tfjob --enable-scheme=xgboostjob --enable-scheme=paddlejob --enable-scheme=mxjob"
esac
# name | binary | overlay (kustomize directory in the copied manifests) | Deployment | CRD
# groups | certificates | resource line to drop | overlay applied once ready | CRDs to wait for
OPERATOR_TABLE=(
  "jobset|jobset-manager|default|jobset-controller-manager|jobset.x-k8s.io|config|||crd/jobsets.jobset.x-k8s.io"
  "lws|lws-manager|default|lws-controller-manager|leaderworkerset.x-k8s.io,disaggregatedset.x-k8s.io|config|||crd/leaderworkersets.leaderworkerset.x-k8s.io"
  "training-operator|training-operator|overlays/standalone|training-operator|kubeflow.org|rotator|||crd/pytorchjobs.kubeflow.org crd/mpijobs.kubeflow.org"
  "trainer|trainer-manager|overlays/manager|kubeflow-trainer-controller-manager|trainer.kubeflow.org|default-dir|third-party/jobset|overlays/runtimes|crd/trainjobs.trainer.kubeflow.org crd/clustertrainingruntimes.trainer.kubeflow.org"
  "kueue|kueue-manager|default|kueue-controller-manager|kueue.x-k8s.io|config|||crd/workloads.kueue.x-k8s.io crd/clusterqueues.kueue.x-k8s.io crd/localqueues.kueue.x-k8s.io crd/resourceflavors.kueue.x-k8s.io"
)
# Kueue's integrations (its configuration's `integrations.frameworks`): plain pods, which is
# what wlmap's Kueue pod groups are made of, and kinds Kueue runs itself (a RayCluster), for
# wlmap to leave to it. Every other kind, the JobSet among them, is one Kueue has no
# integration for here. `batch/job` stays on: Kueue v0.17's Job webhook is installed whatever
# the configuration says and, with its integration off, fails every Job it is sent
# (pkg/controller/jobs/job/job_webhook.go sets up no no-op webhook, unlike the others). A Job
# without a queue label is left alone by it.
CONFIG_PATCH[kueue]='{"integrations": {"frameworks": ["batch/job", "pod", "ray.io/raycluster"]}}'
# With its own certificate management off, Kueue reads its metrics server's certificate from
# a fixed path (cmd/kueue/main.go), even with no metrics listener: the webhook's certificate.
FIXED_CERT_DIR[kueue]=/etc/kueue/metrics/certs
# Its pending-workloads visibility server (an aggregated API behind a Service, with a
# certificate at another fixed path) is not installed: its feature gate is off.
EXTRA_ARGS[kueue]="--feature-gates=VisibilityOnDemand=false"
[ -z "${WLMAP_TESTBED_OPERATOR_WORKERS:-}" ] || EXTRA_ARGS[training-operator]="${EXTRA_ARGS[training-operator]:-} --controller-threads=$WLMAP_TESTBED_OPERATOR_WORKERS"

for row in "${OPERATOR_TABLE[@]}"; do
  IFS='|' read -r name binary overlay deployment groups certs drop after crds <<<"$row"
  case ",$OPERATORS," in *,"$name",*) ;; *) continue ;; esac
  [ -z "${EXCLUDE_CRDS[$name]:-}" ] || crds="${crds//crd\/${EXCLUDE_CRDS[$name]}/}"
  # shellcheck disable=SC2086 # the CRD list splits into arguments
  start_operator "$name" "$binary" "$overlay" "$deployment" "$groups" "$certs" "$drop" "$after" $crds
  OPERATOR_PID[$name]="$(cat "$DIR/pids/$binary.pid")"
done
# Kubeflow's MPI operator (MPIJob kubeflow.org/v2beta1): a client-go controller with no
# webhook and no configuration; its install (`manifests/overlays/standalone`) gives the CRD,
# its lock namespace and its arguments. It always runs leader election (a Lease in that
# namespace) and serves its health check on :8080 of every interface (a constant in its code:
# one such testbed per machine); it is ready once it holds the Lease.
MPI_OPERATOR_PID=""
case ",$OPERATORS," in *,mpi-operator,*)
  [ -x "$BIN/mpi-operator" ] || die "missing $BIN/mpi-operator (run testbed/build.sh)"
  mkdir -p "$DIR/mpi-operator"
  "$BIN/kubectl" kustomize "$(dirname "$BIN")/mpi-operator/overlays/standalone" \
    >"$DIR/mpi-operator/rendered.yaml" 2>>"$DIR/logs/setup.log" || die "kubectl kustomize of the MPI operator failed"
  # No webhook: operator.py is asked for the CRDs, the namespace and the arguments only.
  PROBE_PORT=0 STATUS_PORT=0 python3 "$HERE/operator.py" mpi-operator "$DIR/mpi-operator/rendered.yaml" \
    "$DIR/mpi-operator" https://127.0.0.1:0 "$PKI/ca.crt" mpi-operator kubeflow.org \
    2>>"$DIR/logs/setup.log" || die "testbed/operator.py mpi-operator failed (see $DIR/logs/setup.log)"
  "${KC[@]}" apply --server-side --force-conflicts -f "$DIR/mpi-operator/mpi-operator-manifests.json" \
    >>"$DIR/logs/setup.log" 2>&1 || die "applying the MPI operator's manifests failed (see $DIR/logs/setup.log)"
  wait_established crd/mpijobs.kubeflow.org || die "MPIJob CRD not established"
  mapfile -t args <"$DIR/mpi-operator/mpi-operator-args"
  launch mpi-operator "$BIN/mpi-operator" --kubeConfig="$KUBECONFIG_ADMIN" "${args[@]}"
  end=$(deadline)
  until "${KC[@]}" get lease mpi-operator -n mpi-operator -o jsonpath='{.spec.holderIdentity}' 2>/dev/null | grep -q .; do
    alive mpi-operator
    [ "$(date +%s)" -lt "$end" ] || die "the MPI operator holds no Lease after ${TIMEOUT}s"
    sleep 0.3
  done
  MPI_OPERATOR_PID="$(cat "$DIR/pids/mpi-operator.pid")"
  log "mpi-operator ready (leader)"
  ;;
esac

# scheduler-plugins (sigs.k8s.io/scheduler-plugins): its scheduler, a kube-scheduler with
# the Coscheduling plugin configured as upstream's manifests/coscheduling/scheduler-config.yaml
# does, as a second scheduler of its own name beside the default one, and its controller,
# which keeps the PodGroups' status. The PodGroup CRD is the module's. Both talk to the API
# server as the admin (upstream's install gives them a ClusterRole of their own).
COSCHEDULING_PIDS=""
case ",$OPERATORS," in *,coscheduling,*)
  for b in scheduler-plugins-scheduler scheduler-plugins-controller; do
    [ -x "$BIN/$b" ] || die "missing $BIN/$b (run testbed/build.sh)"
  done
  "${KC[@]}" apply --server-side --force-conflicts \
    -f "$(dirname "$BIN")/scheduler-plugins/scheduling.x-k8s.io_podgroups.yaml" \
    >>"$DIR/logs/setup.log" 2>&1 || die "applying the PodGroup CRD of scheduler-plugins failed (see $DIR/logs/setup.log)"
  wait_established crd/podgroups.scheduling.x-k8s.io || die "PodGroup CRD (scheduling.x-k8s.io) not established"
  mkdir -p "$DIR/coscheduling"
  cat >"$DIR/coscheduling/config.yaml" <<CONFIG
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: "$KUBECONFIG_ADMIN"
profiles:
- schedulerName: scheduler-plugins-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
CONFIG
  # The Coscheduling plugin asks to hear only of pods and PodGroups added or changed, so pods
  # it turned away for want of room are not retried when a node joins, only after the
  # scheduler's longest wait for unschedulable pods (5 min by default): 10 s here.
  launch scheduler-plugins-scheduler "$BIN/scheduler-plugins-scheduler" \
    --config="$DIR/coscheduling/config.yaml" --bind-address=127.0.0.1 --secure-port=0 --v=1 \
    --pod-max-in-unschedulable-pods-duration=10s
  read -r cos_metrics cos_probe < <(free_ports 2)
  KUBECONFIG="$KUBECONFIG_ADMIN" launch scheduler-plugins-controller "$BIN/scheduler-plugins-controller" \
    --metricsAddr="127.0.0.1:$cos_metrics" --probeAddr="127.0.0.1:$cos_probe"
  end=$(deadline)
  until curl -fsS "http://127.0.0.1:$cos_probe/readyz" >/dev/null 2>&1; do
    alive scheduler-plugins-scheduler
    alive scheduler-plugins-controller
    [ "$(date +%s)" -lt "$end" ] || die "the scheduler-plugins controller is not ready after ${TIMEOUT}s"
    sleep 0.3
  done
  alive scheduler-plugins-scheduler
  COSCHEDULING_PIDS="$(cat "$DIR/pids/scheduler-plugins-scheduler.pid") $(cat "$DIR/pids/scheduler-plugins-controller.pid")"
  log "scheduler-plugins scheduler (scheduler-plugins-scheduler) and controller ready"
  ;;
esac

JOBSET_PID="${OPERATOR_PID[jobset]:-}"
LWS_PID="${OPERATOR_PID[lws]:-}"
TRAINING_OPERATOR_PID="${OPERATOR_PID[training-operator]:-}"
TRAINER_PID="${OPERATOR_PID[trainer]:-}"

# ---------------------------------------------------------------- env file
cat > "$DIR/env.tmp" <<EOF
WLMAP_TESTBED_DIR=$DIR
WLMAP_TESTBED_SERVER=$SERVER
WLMAP_TESTBED_KUBECONFIG=$KUBECONFIG_ADMIN
WLMAP_TESTBED_RESTRICTED_KUBECONFIG=$KUBECONFIG_RESTRICTED
WLMAP_TESTBED_CA_FILE=$PKI/ca.crt
WLMAP_TESTBED_PKI=$PKI
WLMAP_TESTBED_FAULTPROXY=$FAULTPROXY
WLMAP_TESTBED_RESTART_APISERVER=$HERE/restart-apiserver.sh
WLMAP_TESTBED_NAMESPACE=$NAMESPACE
WLMAP_TESTBED_ADMIN_USER=$ADMIN_USER
WLMAP_TESTBED_RESTRICTED_USER=$RESTRICTED_USER
WLMAP_TESTBED_BIN=$BIN
WLMAP_TESTBED_KUBECTL=$BIN/kubectl
WLMAP_TESTBED_K8S_VERSION=$K8S_VERSION
WLMAP_TESTBED_ETCD_URL=http://127.0.0.1:$ETCD_PORT
WLMAP_TESTBED_ETCD_PID=$(cat "$DIR/pids/etcd.pid")
WLMAP_TESTBED_APISERVER_PID=$(cat "$DIR/pids/kube-apiserver.pid")
WLMAP_TESTBED_CONTROLLER_MANAGER_PID=$KCM_PID
WLMAP_TESTBED_SCHEDULING=$SCHEDULING
WLMAP_TESTBED_OPERATORS=$OPERATORS
WLMAP_TESTBED_JOBSET_PID=$JOBSET_PID
WLMAP_TESTBED_LWS_PID=$LWS_PID
WLMAP_TESTBED_TRAINING_OPERATOR_PID=$TRAINING_OPERATOR_PID
WLMAP_TESTBED_TRAINER_PID=$TRAINER_PID
WLMAP_TESTBED_MPI_OPERATOR_PID=$MPI_OPERATOR_PID
WLMAP_TESTBED_COSCHEDULING_PIDS="$COSCHEDULING_PIDS"
WLMAP_TESTBED_SCHEDULER_PID=$SCHEDULER_PID
WLMAP_TESTBED_KWOK_PID=$KWOK_PID
WLMAP_TESTBED_KUBERAY_PID=$KUBERAY_PID
EOF
mv "$DIR/env.tmp" "$DIR/env"
STARTED=1
trap - INT TERM
T1=$(date +%s%N)
log "testbed up in $(( (T1 - T0) / 1000000 )) ms; env file: $DIR/env"
echo "$DIR/env"
