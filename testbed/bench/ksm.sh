#!/usr/bin/env bash
# The platform view beside kube-state-metrics (BENCHMARKS.md): N workloads (default 1,000:
# JobSets, PyTorchJobs, Deployments and Jobs, 10 pods each, as the API-server benchmark loads
# them) in the testbed's kube-apiserver; kube-state-metrics v2.16.0 (pods, jobs, deployments,
# replicasets, and JobSet and LeaderWorkerSet through its Custom Resource State configuration,
# testbed/bench/ksm-crs.yaml) and `wlmap serve -A` watch the same objects. Once each has read
# everything: resident memory (now and peak), the time a /metrics scrape takes (median of
# RUNS), series and bytes, and what each says of one JobSet. Runs inside the testbed and ends
# by itself:
#
#   cargo build --release -p wlmap-cli
#   testbed/with-testbed.sh testbed/bench/ksm.sh [N] [RUNS]
#
# `ksm.sh --loaded [RUNS]` loads nothing: both watch what the cluster holds (the scale run,
# scale.py, calls it so on its loaded cluster).
set -euo pipefail
LOADED=0
if [ "${1:-}" = --loaded ]; then LOADED=1; shift; set -- 0 "$@"; fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$HERE/../.."
N="${1:-1000}"
RUNS="${2:-5}"
WLMAP="${WLMAP_BIN:-$ROOT/target/release/wlmap}"
KSM="$WLMAP_TESTBED_BIN/kube-state-metrics"
KC=("$WLMAP_TESTBED_KUBECTL" --kubeconfig="$WLMAP_TESTBED_KUBECONFIG")
TMP="$(mktemp -d)"
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$TMP"' EXIT
log() { printf '[bench/ksm] %s\n' "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# shellcheck source=testbed/bench/common.sh
. "$HERE/common.sh"
if [ "$LOADED" = 0 ]; then
  load_crds_and_namespace
  t0=$(date +%s)
  create_workloads "$N"
  write_pods
  create_pods >/dev/null
  log "loaded $N workloads in $(( $(date +%s) - t0 )) s"
fi
PODS=$("${KC[@]}" get pods -A --no-headers | wc -l)
JOBSETS=$("${KC[@]}" get jobsets -A --no-headers | wc -l)

KSM_PORT=$(free_port) KSM_TELEMETRY=$(free_port) WLMAP_PORT=$(free_port)
"$KSM" --kubeconfig="$WLMAP_TESTBED_KUBECONFIG" --host=127.0.0.1 --port="$KSM_PORT" \
  --telemetry-host=127.0.0.1 --telemetry-port="$KSM_TELEMETRY" \
  --resources=pods,jobs,deployments,replicasets \
  --custom-resource-state-config-file="$HERE/ksm-crs.yaml" > "$TMP/ksm.log" 2>&1 &
PIDS+=($!)
KSM_PID=$!
"$WLMAP" --kubeconfig "$WLMAP_TESTBED_KUBECONFIG" serve -A --listen "127.0.0.1:$WLMAP_PORT" \
  > "$TMP/wlmap.log" 2>&1 &
PIDS+=($!)
WLMAP_PID=$!

metrics() { curl -sf "http://127.0.0.1:$1/metrics"; }
series() { grep -c '^[a-z]' || true; }
# Ready once every pod and every JobSet is in the metrics (kube-state-metrics has no
# readiness for its stores; wlmap's /readyz says it has listed every kind).
wait_for() { # WHAT CHECK...
  local what=$1; shift
  for _ in $(seq 1 600); do
    if "$@"; then return 0; fi
    sleep 0.5
  done
  log "timed out waiting for $what"; tail -20 "$TMP/ksm.log" "$TMP/wlmap.log" >&2; exit 1
}
ksm_ready() {
  local m; m=$(metrics "$KSM_PORT" 2>/dev/null) || return 1
  [ "$(grep -c '^kube_pod_info{' <<<"$m")" -ge "$PODS" ] \
    && [ "$(grep -c '^kube_customresource_replicatedjob_replicas{' <<<"$m")" -ge "$JOBSETS" ]
}
wlmap_ready() { curl -sf "http://127.0.0.1:$WLMAP_PORT/readyz" > /dev/null; }
s=$(date +%s%N); wait_for kube-state-metrics ksm_ready; ksm_ms=$(( ($(date +%s%N) - s) / 1000000 ))
wait_for "wlmap serve" wlmap_ready
log "kube-state-metrics had every pod and JobSet $ksm_ms ms after the wait began"

median_ms() { # PORT: median time of RUNS scrapes of /metrics, in ms
  local times=() i t
  for i in $(seq 1 "$RUNS"); do
    t=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$1/metrics")
    times+=("$(python3 -c "print(round($t*1000))")")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%d (min %d, max %d)", a[int((NR+1)/2)], a[1], a[NR]}'
}
rss() { awk '/^VmRSS/ {r=$2} /^VmHWM/ {h=$2} END {printf "%.0f MiB (peak %.0f MiB)", r/1024, h/1024}' "/proc/$1/status"; }

metrics "$KSM_PORT" > "$TMP/ksm.metrics"
metrics "$WLMAP_PORT" > "$TMP/wlmap.metrics"
kt=$(median_ms "$KSM_PORT")
wt=$(median_ms "$WLMAP_PORT")
echo "objects: $PODS pods ($JOBSETS JobSets) in $("${KC[@]}" get namespaces --no-headers | wc -l) namespaces"
echo "kube-state-metrics v2.16.0: $(rss "$KSM_PID"), scrape $kt ms, $(series < "$TMP/ksm.metrics") series, $(wc -c < "$TMP/ksm.metrics") bytes"
echo "wlmap serve -A:            $(rss "$WLMAP_PID"), scrape $wt ms, $(series < "$TMP/wlmap.metrics") series, $(wc -c < "$TMP/wlmap.metrics") bytes"
# What each says of the first JobSet.
read -r ns name < <("${KC[@]}" get jobsets -A --no-headers | awk 'NR==1 {print $1, $2}')
echo "jobset $ns/$name in kube-state-metrics:"
grep "^kube_customresource_.*name=\"$name\"" "$TMP/ksm.metrics" | grep "namespace=\"$ns\"" | sed 's/^/  /'
echo "jobset $ns/$name in wlmap:"
grep -E "^wlmap_workload_(gpus_requested|status_phase|pods_desired)\{" "$TMP/wlmap.metrics" \
  | grep "name=\"$name\"" | grep "namespace=\"$ns\"" | grep -v ' 0$' | sed 's/^/  /'
