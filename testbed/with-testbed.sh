#!/usr/bin/env bash
# Run a command against a fresh testbed, then always tear it down.
#
#   testbed/with-testbed.sh CMD [ARGS...]
#
# Builds the binaries (cached after the first run), starts etcd +
# kube-apiserver (start.sh), exports the WLMAP_TESTBED_* variables from the env
# file plus KUBECONFIG (the admin kubeconfig, so nothing can reach a real
# cluster by accident) and KUBECACHEDIR, runs CMD, and stops the testbed on
# exit, Ctrl-C or SIGTERM. Exits with CMD's exit code (or start.sh's on failure).
# Set WLMAP_TESTBED_CONTROLLERS=1 to also run kube-controller-manager.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ $# -ge 1 ] || { echo "usage: with-testbed.sh CMD [ARGS...]" >&2; exit 2; }

BIN="$("$HERE/build.sh")" || exit $?
export WLMAP_TESTBED_BIN="$BIN"

DIR="$(mktemp -d "${TMPDIR:-/tmp}/wlmap-testbed.XXXXXX")" || exit 1
cleanup() { "$HERE/stop.sh" "$DIR"; rmdir "$DIR" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ENV_FILE="$("$HERE/start.sh" "$DIR")" || exit $?
set -a
# shellcheck disable=SC1090
. "$ENV_FILE"
set +a
export KUBECONFIG="$WLMAP_TESTBED_KUBECONFIG"
export KUBECACHEDIR="$WLMAP_TESTBED_DIR/kube-cache"

# Run CMD as a child we wait for, so that INT/TERM are handled at once: the
# signal is forwarded to CMD, then the EXIT trap tears the testbed down.
# (<&0 keeps CMD's stdin; a plain background job would get /dev/null.)
"$@" <&0 &
CHILD=$!
# A background child of a non-interactive shell ignores SIGINT, so both
# signals are forwarded as SIGTERM (SIGKILL after 10 s).
forward() {
  local i
  kill -TERM "$CHILD" 2>/dev/null
  for i in $(seq 1 100); do kill -0 "$CHILD" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$CHILD" 2>/dev/null
  wait "$CHILD" 2>/dev/null
  exit "$1"
}
trap 'forward 130' INT
trap 'forward 143' TERM
wait "$CHILD"
exit $?
