#!/usr/bin/env bash
# Controller benchmark (BENCHMARKS.md): `wlmap controller` (release build) against a real
# kube-apiserver holding N workloads of four kinds (objects.py: JobSet, PyTorchJob,
# Deployment, Job; 10 pods each). The workloads and their children are created first (the
# controller writes the gang objects of those whose kind gangs: every kind but Deployment),
# then the N×10 pods in one burst (`kubectl create` of a List: one request per pod, back to
# back), each going through the webhook. Reported from the controller's own metrics and
# /proc: admission latency inside the webhook (p50, p99 interpolated in its histogram, as
# Prometheus' histogram_quantile does), reviews by result, gang object writes per workload,
# owner fetches, and the controller's resident memory and CPU time. Runs inside the testbed:
#
#   cargo build --release -p wlmap-cli
#   testbed/with-testbed.sh testbed/bench/controller.sh [N]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$HERE/../.."
N="${1:-100}"
WLMAP="${WLMAP_BIN:-$ROOT/target/release/wlmap}"
KC=("$WLMAP_TESTBED_KUBECTL" --kubeconfig="$WLMAP_TESTBED_KUBECONFIG")
TMP="$(mktemp -d)"
CTL_PID=""
trap '[ -n "$CTL_PID" ] && kill "$CTL_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
log() { printf '[bench/controller] %s\n' "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# shellcheck source=testbed/bench/common.sh
. "$HERE/common.sh"
load_crds_and_namespace
"${KC[@]}" create namespace wlmap-system >/dev/null

WH=$(free_port); PR=$(free_port)
"$WLMAP" --kubeconfig "$WLMAP_TESTBED_KUBECONFIG" controller -n wlmap-system --identity bench \
  --webhook-address "127.0.0.1:$WH" --probe-address "127.0.0.1:$PR" \
  --webhook-url "https://127.0.0.1:$WH" --webhook-host 127.0.0.1 \
  2> "$TMP/controller.log" &
CTL_PID=$!
for _ in $(seq 1 200); do curl -sf "127.0.0.1:$PR/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf "127.0.0.1:$PR/readyz" >/dev/null || { cat "$TMP/controller.log" >&2; exit 1; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$CTL_PID/stat"; }
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$CTL_PID/status"; }
log "controller ready: $(rss_mib) MiB resident"

create_workloads "$N"
ganged=$(( N - N / 4 ))
for _ in $(seq 1 300); do
  [ "$("${KC[@]}" get podgroups.scheduling.k8s.io -n bench -o name | wc -l)" -ge "$ganged" ] && break
  sleep 0.2
done
groups=$("${KC[@]}" get podgroups.scheduling.k8s.io -n bench -o name | wc -l)
log "$N workloads, $groups gang objects; controller $(rss_mib) MiB, $(cpu_s) s CPU"
cpu0=$(cpu_s)

write_pods
t0=$(date +%s%N)
create_pods > "$TMP/pods.count"
t1=$(date +%s%N)
pods=$(cat "$TMP/pods.count")
grouped=$("${KC[@]}" get pods -n bench -o json | python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["items"] if p["spec"].get("schedulingGroup")))')
log "$pods pods created in $(( (t1 - t0) / 1000000 )) ms; $grouped carry a scheduling group"
cpu1=$(cpu_s)
sleep 2
curl -sf "127.0.0.1:$PR/metrics" > "$TMP/metrics"
python3 - "$TMP/metrics" "$N" "$pods" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
n, pods = int(sys.argv[2]), int(sys.argv[3])
def series(name):
    out = {}
    for line in text.splitlines():
        if line.startswith(name):
            key, val = line.rsplit(" ", 1)
            out[key] = float(val)
    return out
buckets = sorted((float(re.search(r'le="([^"]+)"', k).group(1)), v)
                 for k, v in series("wlmap_admission_duration_seconds_bucket").items())
total = buckets[-1][1]
def quantile(q):
    # histogram_quantile: linear interpolation inside the bucket holding the rank.
    rank, lo, below = q * total, 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            return lo + (le - lo) * (rank - below) / max(c - below, 1e-9)
        lo, below = le, c
    return float("nan")
results = {re.search(r'result="([^"]+)"', k).group(1): int(v)
           for k, v in series("wlmap_admission_requests_total{").items()}
writes = sum(series("wlmap_controller_gang_object_writes_total{").values())
fetches = sum(series("wlmap_admission_owner_fetches_total").values())
print(f"admission: {int(total)} reviews {results}; p50 {quantile(0.5)*1000:.2f} ms, p99 {quantile(0.99)*1000:.2f} ms (inside the webhook)")
print(f"gang object writes: {int(writes)} for {n} workloads ({writes / n:.2f} per workload); owner fetches: {int(fetches)}")
PY
echo "controller: $(rss_mib) MiB resident after the burst; CPU $(cpu_s) s in all, $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.2f", b - a}') s during the $pods-pod burst"
