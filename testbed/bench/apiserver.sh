#!/usr/bin/env bash
# API-server benchmark (BENCHMARKS.md): N workloads (default 1,000) with 10 pods each in a real
# kube-apiserver, then `wlmap get -A --all-types -o json` against `kubectl get` of the same
# kinds: wall time (median of RUNS) and API requests counted from the server's
# apiserver_request_total metric. Runs inside the testbed:
#
#   cargo build --release -p wlmap-cli
#   testbed/with-testbed.sh testbed/bench/apiserver.sh [N] [RUNS]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$HERE/../.."
N="${1:-1000}"
RUNS="${2:-5}"
WLMAP="${WLMAP_BIN:-$ROOT/target/release/wlmap}"
KC=("$WLMAP_TESTBED_KUBECTL" --kubeconfig="$WLMAP_TESTBED_KUBECONFIG")
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
log() { printf '[bench/apiserver] %s\n' "$*" >&2; }

# shellcheck source=testbed/bench/common.sh
. "$HERE/common.sh"
load_crds_and_namespace
t0=$(date +%s)
create_workloads "$N"
write_pods
create_pods > "$TMP/pods.count"
log "loaded $N workloads and $(cat "$TMP/pods.count") pods in $(( $(date +%s) - t0 )) s"

scrape() { "${KC[@]}" get --raw /metrics > "$1"; }
# Requests between two scrapes, by verb and resource (the second scrape's own GET excluded).
diff_requests() {
  python3 - "$1" "$2" <<'PY'
import re, sys, collections
def load(p):
    c = collections.Counter()
    for line in open(p):
        if line.startswith("apiserver_request_total{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
            key = (labels.get("verb"), labels.get("resource") or labels.get("subresource") or "-", labels.get("group", ""))
            c[key] += float(line.rsplit(" ", 1)[1])
    return c
a, b = load(sys.argv[1]), load(sys.argv[2])
# Lease renewals are the API server's own heartbeat, not the tool's.
d = {k: int(b[k] - a.get(k, 0)) for k in b if b[k] - a.get(k, 0) > 0 and k[1] != "leases"}
# The scrape itself is a GET of a non-resource URL: one request not made by the tool.
d[("GET", "-", "")] = d.get(("GET", "-", ""), 0) - 1
total = sum(v for v in d.values() if v > 0)
lists = sorted(f"{r}.{g}" if g else r for (v, r, g), n in d.items() if v == "LIST" and n > 0)
print(total)
print(",".join(lists))
for k, n in sorted(d.items()):
    if n > 0:
        print(f"  {k[0]:6} {k[1]}.{k[2] or 'core'}: {n}", file=sys.stderr)
PY
}
median_ms() { # CMD... : median wall time of RUNS runs, in ms
  local times=() i s e
  for i in $(seq 1 "$RUNS"); do
    s=$(date +%s%N); "$@" > /dev/null; e=$(date +%s%N)
    times+=($(( (e - s) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%d (min %d, max %d)", a[int((NR+1)/2)], a[1], a[NR]}'
}

scrape "$TMP/m0"
"$WLMAP" --kubeconfig "$WLMAP_TESTBED_KUBECONFIG" get -A --all-types -o json > "$TMP/wlmap.json"
scrape "$TMP/m1"
log "wlmap requests:"
mapfile -t W < <(diff_requests "$TMP/m0" "$TMP/m1")
KINDS="${W[1]}"
workloads=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$TMP/wlmap.json")

# kubectl: the same kinds, discovery cache warm (as an interactive user has it).
"${KC[@]}" get "$KINDS" -A -o json > /dev/null
scrape "$TMP/m2"
"${KC[@]}" get "$KINDS" -A -o json > "$TMP/kubectl.json"
scrape "$TMP/m3"
log "kubectl requests:"
mapfile -t K < <(diff_requests "$TMP/m2" "$TMP/m3")
items=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$TMP/kubectl.json")

wt=$(median_ms "$WLMAP" --kubeconfig "$WLMAP_TESTBED_KUBECONFIG" get -A --all-types -o json)
kt=$(median_ms "${KC[@]}" get "$KINDS" -A -o json)
echo "kinds listed: $KINDS"
echo "wlmap get -A --all-types -o json: ${W[0]} requests, $wt ms, $workloads workloads"
echo "kubectl get <same kinds> -A -o json: ${K[0]} requests, $kt ms, $items objects"
