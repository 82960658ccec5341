#!/usr/bin/env bash
# Restart the testbed's kube-apiserver (same command line, same etcd) and wait until it is
# ready again: the "apiserver restarted in the middle of a listing" fault of the e2e tests.
#   restart-apiserver.sh DIR [DOWN_SECONDS]   stop, stay down DOWN_SECONDS, start
#   restart-apiserver.sh DIR --stop           stop only (a test then acts while it is down)
#   restart-apiserver.sh DIR --start          start again after --stop, and wait until ready
set -euo pipefail
DIR="${1:?usage: restart-apiserver.sh DIR [DOWN_SECONDS | --stop | --start]}"
MODE="${2:-0}"
log() { printf '[testbed/restart-apiserver] %s\n' "$*" >&2; }
[ -e "$DIR/.wlmap-testbed" ] || { log "$DIR is not a testbed directory"; exit 1; }

stop() {
  local pid
  pid="$(cat "$DIR/pids/kube-apiserver.pid")"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  log "kube-apiserver stopped"
}

start() {
  mapfile -d '' CMD < "$DIR/kube-apiserver.cmdline"
  if command -v setsid >/dev/null 2>&1; then
    setsid "${CMD[@]}" </dev/null >>"$DIR/logs/kube-apiserver.log" 2>&1 &
  else
    "${CMD[@]}" </dev/null >>"$DIR/logs/kube-apiserver.log" 2>&1 &
  fi
  echo $! > "$DIR/pids/kube-apiserver.pid"
  . "$DIR/env"
  local end=$(( $(date +%s) + 60 ))
  until [ "$("$WLMAP_TESTBED_KUBECTL" --kubeconfig="$WLMAP_TESTBED_KUBECONFIG" --request-timeout=5s get --raw=/readyz 2>/dev/null)" = ok ]; do
    [ "$(date +%s)" -lt "$end" ] || { log "kube-apiserver not ready after 60s"; exit 1; }
    sleep 0.3
  done
  log "kube-apiserver started"
}

case "$MODE" in
  --stop) stop ;;
  --start) start ;;
  *) stop; sleep "$MODE"; start ;;
esac
