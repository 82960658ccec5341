#!/usr/bin/env bash
# The scale run (BENCHMARKS.md, "On a cluster that schedules"): WORKLOADS workloads of the
# catalog's kinds made by the real operators, 10 pods each, on WORKLOADS/10 KWOK nodes of 8
# GPUs, placed by the real kube-scheduler; without wlmap, with the same gangs declared
# without wlmap, with `wlmap controller` (two replicas), and with faults (the leader killed
# twice, the API server restarted); then
# kube-state-metrics beside `wlmap serve` on the loaded cluster. testbed/bench/scale.py says
# what each phase measures. Starts its own testbed, runs unattended and ends by itself; the
# report is printed and written to OUT_DIR/report.md (default target/bench/scale-WORKLOADS).
#
#   cargo build --release -p wlmap-cli
#   testbed/bench/scale.sh [WORKLOADS] [OUT_DIR]
#   WLMAP_SCALE_ROUNDS=4 testbed/bench/scale.sh 300 OUT_DIR   # paired rounds: declared vs with
#   WLMAP_SCALE_FAULTS=4 testbed/bench/scale.sh 300 OUT_DIR   # four faults phases in a row
#   WLMAP_SCALE_ROUNDS=4 WLMAP_SCALE_PIN=1 WLMAP_SCALE_APIPROF=1 testbed/bench/scale.sh 300 OUT_DIR
#     # the same, wlmap on a CPU of its own, the API server's CPU profiled by path
#   WLMAP_TESTBED_OPERATOR_WORKERS=10 ...   # KubeRay and the training operator 10 workloads at a
#     # time (their default, 1, makes each workload's pods one request after another)
#
# The control plane's clients run at 100 requests/s (kube-controller-manager and
# kube-scheduler `--kube-api-qps=100 --kube-api-burst=100`, as Kubernetes' own scalability
# tests configure them) so that the machine, not a client's rate limit, sets the pace.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$HERE/../.."
N="${1:-1000}"
OUT="${2:-$ROOT/target/bench/scale-$N}"
[ -x "${WLMAP_BIN:-$ROOT/target/release/wlmap}" ] \
  || { echo "build wlmap first: cargo build --release -p wlmap-cli" >&2; exit 2; }
# The Service in front of the replicas' webhook (scale.py's Service): Debian's HAProxy.
command -v haproxy >/dev/null 2>&1 \
  || { apt-get update -qq && apt-get install -y -qq haproxy >/dev/null; } \
  || { echo "HAProxy is needed: apt-get install haproxy" >&2; exit 2; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
export WLMAP_TESTBED_OPERATORS=jobset,lws,kuberay,training-operator
export WLMAP_TESTBED_CLIENT_QPS=100
[ "${WLMAP_SCALE_APIPROF:-}" != 1 ] || export WLMAP_TESTBED_PROFILING=1
exec "$HERE/../with-testbed.sh" python3 "$HERE/scale.py" "$N" "$OUT"
