#!/usr/bin/env bash
# Smoke check of the testbed: CRDs, status subresource, pagination, RBAC.
#
#   testbed/smoke.sh                       # wraps itself in with-testbed.sh
#   testbed/with-testbed.sh testbed/smoke.sh
#   WLMAP_TESTBED_CONTROLLERS=1 testbed/smoke.sh   # + real controllers
#
# Ends with the line "N passed, M failed" and exits non-zero if M > 0.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "${WLMAP_TESTBED_KUBECONFIG:-}" ]; then
  exec "$HERE/with-testbed.sh" "$HERE/smoke.sh" "$@"
fi

NS="${WLMAP_TESTBED_NAMESPACE:-team-a}"
K=("$WLMAP_TESTBED_KUBECTL" --kubeconfig="$WLMAP_TESTBED_KUBECONFIG" --request-timeout=30s)
R=("$WLMAP_TESTBED_KUBECTL" --kubeconfig="$WLMAP_TESTBED_RESTRICTED_KUBECONFIG" --request-timeout=30s)
OUT="$(mktemp -d "${TMPDIR:-/tmp}/wlmap-smoke.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

PASS=0 FAIL=0
ok()   { PASS=$((PASS + 1)); printf 'ok   %s\n' "$1"; }
bad()  { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$1"; [ -n "${2:-}" ] && sed 's/^/     | /' "$2" | tail -n 15; }
# check NAME CMD... : passes when CMD exits 0
check() { local n=$1; shift; if "$@" >"$OUT/last" 2>&1; then ok "$n"; else bad "$n" "$OUT/last"; fi; }
# forbidden NAME CMD... : passes when CMD fails with a Forbidden error
forbidden() {
  local n=$1; shift
  if "$@" >"$OUT/last" 2>&1; then bad "$n (unexpectedly allowed)" "$OUT/last"
  elif grep -q 'Forbidden\|forbidden' "$OUT/last"; then ok "$n"
  else bad "$n (failed, but not Forbidden)" "$OUT/last"; fi
}
# equals NAME WANT CMD... : passes when CMD's stdout equals WANT
equals() {
  local n=$1 want=$2 got; shift 2
  got="$("$@" 2>"$OUT/last")"
  if [ "$got" = "$want" ]; then ok "$n"; else echo "want [$want] got [$got]" >>"$OUT/last"; bad "$n" "$OUT/last"; fi
}

echo "testbed: $WLMAP_TESTBED_SERVER (Kubernetes ${WLMAP_TESTBED_K8S_VERSION:-?}), namespace $NS"
equals "server version is ${WLMAP_TESTBED_K8S_VERSION:-?}" "${WLMAP_TESTBED_K8S_VERSION:-?}" \
  bash -c "'${K[0]}' '${K[1]}' get --raw /version | sed -n 's/.*\"gitVersion\": *\"\([^\"]*\)\".*/\\1/p'"

# ---------------------------------------------------------------- CRDs
OPS="$(dirname "${WLMAP_TESTBED_BIN:?}")"
for crd in "$OPS"/jobset/components/crd/bases/*.yaml "$OPS"/lws/crd/bases/*.yaml \
    "$OPS"/kuberay/ray.io_rayclusters.yaml "$OPS"/training-operator/base/crds/kubeflow.org_pytorchjobs.yaml; do
  check "apply $(basename "$crd") (the operator's own, server-side)" \
    "${K[@]}" apply --server-side --force-conflicts -f "$crd"
done
check "CRDs Established" "${K[@]}" wait --for=condition=Established --timeout=60s \
  crd/jobsets.jobset.x-k8s.io crd/leaderworkersets.leaderworkerset.x-k8s.io \
  crd/rayclusters.ray.io crd/pytorchjobs.kubeflow.org
check "CRDs NamesAccepted" "${K[@]}" wait --for=condition=NamesAccepted --timeout=60s crd --all
equals "lws short name resolves" "leaderworkersets.leaderworkerset.x-k8s.io" \
  "${K[@]}" get crd -o jsonpath='{.items[?(@.spec.names.shortNames[0]=="lws")].metadata.name}'
# discovery of new CRDs can lag a moment behind Established
for i in $(seq 1 50); do "${K[@]}" get jobsets -n "$NS" >/dev/null 2>&1 && break; sleep 0.2; done

# ---------------------------------------------------------------- custom objects
check "create JobSet" "${K[@]}" apply -n "$NS" -f - <<'EOF'
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: trainer
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: busybox
              command: [sleep, "3600"]
EOF
equals "JobSet defaulting (groupName)" "default" \
  "${K[@]}" get jobset trainer -n "$NS" -o jsonpath='{.spec.replicatedJobs[0].groupName}'
equals "JobSet pod template preserved" "busybox" \
  "${K[@]}" get jobset trainer -n "$NS" -o jsonpath='{.spec.replicatedJobs[0].template.spec.template.spec.containers[0].image}'

NOW="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
check "patch JobSet status via status subresource" "${K[@]}" patch jobset trainer -n "$NS" \
  --subresource=status --type=merge -p "{\"status\":{\"restarts\":1,\"terminalState\":\"Completed\",
  \"conditions\":[{\"type\":\"Completed\",\"status\":\"True\",\"reason\":\"AllJobsCompleted\",
  \"message\":\"jobset completed successfully\",\"lastTransitionTime\":\"$NOW\"}],
  \"replicatedJobsStatus\":[{\"name\":\"workers\",\"ready\":0,\"succeeded\":2,\"failed\":0,\"active\":0,\"suspended\":0}]}}"
equals "JobSet status stored" "Completed/1/True/2" \
  "${K[@]}" get jobset trainer -n "$NS" \
  -o jsonpath='{.status.terminalState}/{.status.restarts}/{.status.conditions[0].status}/{.status.replicatedJobsStatus[0].succeeded}'
check "main resource ignores status changes" "${K[@]}" patch jobset trainer -n "$NS" --type=merge \
  -p '{"metadata":{"labels":{"smoke":"yes"}},"status":{"terminalState":"Failed"}}'
equals "status unchanged by main-resource patch" "Completed yes" \
  "${K[@]}" get jobset trainer -n "$NS" -o jsonpath='{.status.terminalState} {.metadata.labels.smoke}'
if "${K[@]}" patch jobset trainer -n "$NS" --subresource=status --type=merge \
     -p '{"status":{"conditions":[{"type":"Bad","status":"Maybe"}]}}' >"$OUT/last" 2>&1; then
  bad "schema rejects invalid condition" "$OUT/last"
else
  grep -q 'Invalid\|invalid\|Required\|Unsupported' "$OUT/last" && ok "schema rejects invalid condition" \
    || bad "schema rejects invalid condition (wrong error)" "$OUT/last"
fi

check "create LeaderWorkerSet" "${K[@]}" apply -n "$NS" -f - <<'EOF'
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: server
spec:
  leaderWorkerTemplate:
    size: 4
    workerTemplate:
      spec:
        containers:
        - name: main
          image: nginx
EOF
equals "LWS defaults (replicas, restartPolicy, startupPolicy)" "1 RecreateGroupOnPodRestart LeaderCreated" \
  "${K[@]}" get lws server -n "$NS" \
  -o jsonpath='{.spec.replicas} {.spec.leaderWorkerTemplate.restartPolicy} {.spec.startupPolicy}'
check "patch LWS status" "${K[@]}" patch lws server -n "$NS" --subresource=status --type=merge \
  -p '{"status":{"replicas":1,"readyReplicas":1,"updatedReplicas":1,"hpaPodSelector":"leaderworkerset.sigs.k8s.io/name=server"}}'
check "scale LWS via scale subresource" "${K[@]}" scale lws server -n "$NS" --replicas=3
equals "LWS scaled" "3" "${K[@]}" get lws server -n "$NS" -o jsonpath='{.spec.replicas}'

check "create RayCluster" "${K[@]}" apply -n "$NS" -f - <<'EOF'
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster
spec:
  rayVersion: "2.9.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.9.0
  workerGroupSpecs:
  - groupName: small
    replicas: 2
    minReplicas: 1
    maxReplicas: 4
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.9.0
EOF
check "patch RayCluster status" "${K[@]}" patch raycluster raycluster -n "$NS" --subresource=status \
  --type=merge -p '{"status":{"state":"ready","desiredWorkerReplicas":2,"desiredCPU":"2","head":{"podName":"raycluster-head"}}}'
equals "RayCluster status stored" "ready 2" \
  "${K[@]}" get raycluster raycluster -n "$NS" -o jsonpath='{.status.state} {.status.desiredWorkerReplicas}'

check "create PyTorchJob" "${K[@]}" apply -n "$NS" -f - <<'EOF'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pytorch
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch
EOF
check "patch PyTorchJob status" "${K[@]}" patch pytorchjob pytorch -n "$NS" --subresource=status \
  --type=merge -p '{"status":{"replicaStatuses":{"Worker":{"active":3,"selector":"training.kubeflow.org/job-name=pytorch"}},"conditions":[{"type":"Running","status":"True"}]}}'
equals "PyTorchJob scale subresource reads Worker replicas" "3/3" \
  "${K[@]}" get pytorchjob pytorch -n "$NS" --subresource=scale -o jsonpath='{.spec.replicas}/{.status.replicas}'

# ---------------------------------------------------------------- pagination
check "create 3 pods" "${K[@]}" apply -n "$NS" -f - <<'EOF'
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Pod, metadata: {name: p1, labels: {app: smoke}}, spec: {containers: [{name: c, image: busybox}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: p2, labels: {app: smoke}}, spec: {containers: [{name: c, image: busybox}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: p3, labels: {app: smoke}}, spec: {containers: [{name: c, image: busybox}]}}
EOF
"${K[@]}" get pods -n "$NS" -l app=smoke --chunk-size=1 -o name -v=6 >"$OUT/pods" 2>"$OUT/pods.log"
equals "paginated list returns all pods" "pod/p1 pod/p2 pod/p3" bash -c "sort '$OUT/pods' | tr '\n' ' ' | sed 's/ \$//'"
n="$(grep -c 'limit=1' "$OUT/pods.log")"
c="$(grep -c 'continue=' "$OUT/pods.log")"
if [ "$n" -ge 3 ] && [ "$c" -ge 2 ]; then ok "list used limit=1 pages ($n requests, $c with continue token)"
else bad "list used limit=1 pages ($n requests, $c with continue token)" "$OUT/pods.log"; fi
equals "restricted user paginates too" "3" \
  bash -c "'${R[0]}' '${R[1]}' get pods -n '$NS' -l app=smoke --chunk-size=1 -o name | wc -l | tr -d ' '"

# ---------------------------------------------------------------- RBAC
check "restricted: list pods in $NS" "${R[@]}" get pods -n "$NS"
check "restricted: get jobsets in $NS" "${R[@]}" get jobsets -n "$NS"
check "restricted: list all custom kinds in $NS" "${R[@]}" get lws,rayclusters,pytorchjobs -n "$NS"
check "restricted: watch pods in $NS" "${R[@]}" get pods -n "$NS" --watch-only --request-timeout=2s
forbidden "restricted: list nodes (cluster-scoped)" "${R[@]}" get nodes
forbidden "restricted: list namespaces (cluster-scoped)" "${R[@]}" get namespaces
forbidden "restricted: list CRDs (cluster-scoped)" "${R[@]}" get crd
forbidden "restricted: list clusterroles (cluster-scoped)" "${R[@]}" get clusterroles
forbidden "restricted: list pods in all namespaces" "${R[@]}" get pods -A
forbidden "restricted: list pods in default" "${R[@]}" get pods -n default
forbidden "restricted: create pod in $NS" "${R[@]}" run x -n "$NS" --image=busybox --restart=Never
forbidden "restricted: delete jobset in $NS" "${R[@]}" delete jobset trainer -n "$NS"
equals "can-i list pods -n $NS" "yes" "${R[@]}" auth can-i list pods -n "$NS"
# -A: ask at cluster scope (without it can-i asks "in namespace $NS", which the
# namespaced wildcard Role answers with yes even for cluster-scoped kinds)
equals "can-i list nodes (cluster scope)" "no" bash -c "'${R[0]}' '${R[1]}' auth can-i list nodes -A; true"
equals "can-i list namespaces (cluster scope)" "no" bash -c "'${R[0]}' '${R[1]}' auth can-i list namespaces -A; true"
equals "admin can-i '*' '*'" "yes" "${K[@]}" auth can-i '*' '*'

# ---------------------------------------------------------------- controllers (optional)
if [ -n "${WLMAP_TESTBED_CONTROLLER_MANAGER_PID:-}" ]; then
  check "create Job, Deployment, StatefulSet" "${K[@]}" apply -n "$NS" -f - <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: job1}
spec:
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: deploy1}
spec:
  replicas: 2
  selector: {matchLabels: {app: deploy1}}
  template:
    metadata: {labels: {app: deploy1}}
    spec:
      containers: [{name: c, image: nginx}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts1}
spec:
  replicas: 1
  serviceName: sts1
  selector: {matchLabels: {app: sts1}}
  template:
    metadata: {labels: {app: sts1}}
    spec:
      containers: [{name: c, image: nginx}]
EOF
  wait_count() { # SELECTOR WANT
    local i
    for i in $(seq 1 150); do
      [ "$("${K[@]}" get pods -n "$NS" -l "$1" -o name 2>/dev/null | wc -l)" -ge "$2" ] && return 0
      sleep 0.2
    done
    return 1
  }
  check "Job controller created 2 pods" wait_count job-name=job1 2
  check "Deployment -> ReplicaSet -> 2 pods" wait_count app=deploy1 2
  check "StatefulSet controller created pod sts1-0" wait_count app=sts1 1
  equals "pod owner is the ReplicaSet" "ReplicaSet" \
    "${K[@]}" get pods -n "$NS" -l app=deploy1 -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}'
fi

echo
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
