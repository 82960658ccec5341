#!/usr/bin/env bash
# Stop a testbed started by start.sh and remove its directory.
#
#   testbed/stop.sh [--keep] DIR
#
# Stops the operators, KWOK, the schedulers, kube-controller-manager, kube-apiserver and etcd (SIGTERM, then SIGKILL
# after 10 s), only if the recorded PID still runs the expected program, then
# removes DIR (unless --keep). Idempotent: a missing DIR is not an error.
# DIR is only removed when it carries the .wlmap-testbed marker from start.sh.
set -uo pipefail

log() { printf '[testbed/stop] %s\n' "$*" >&2; }
KEEP=0
if [ "${1:-}" = --keep ]; then KEEP=1; shift; fi
DIR="${1:-${WLMAP_TESTBED_DIR:-}}"
[ -n "$DIR" ] || { log "usage: stop.sh [--keep] DIR"; exit 2; }
[ -d "$DIR" ] || exit 0
if [ ! -e "$DIR/.wlmap-testbed" ]; then
  log "refusing: $DIR is not a testbed directory (no .wlmap-testbed marker)"
  exit 1
fi

stop_one() { # NAME
  local name=$1 pidfile="$DIR/pids/$1.pid" pid i
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  case "$pid" in ''|*[!0-9]*) rm -f "$pidfile"; return 0 ;; esac
  # Guard against PID reuse: the process must still be our binary.
  if ! kill -0 "$pid" 2>/dev/null ||
     ! tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "/$name "; then
    rm -f "$pidfile"; return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name (pid $pid) did not stop after 10s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  rm -f "$pidfile"
}

for name in kueue-manager scheduler-plugins-controller scheduler-plugins-scheduler mpi-operator trainer-manager training-operator jobset-manager lws-manager ray-operator kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  stop_one "$name"
done

if [ "$KEEP" = 1 ]; then
  rm -f "$DIR/env"
  log "stopped; kept $DIR"
else
  rm -rf "$DIR"
fi
