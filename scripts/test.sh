#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + integration + doc tests, fixtures, the
# conformance check (when ../shared/conformance is present), and the end-to-end tests against a
# real kube-apiserver built by testbed/ (when Go is available; WLMAP_SKIP_E2E=1 skips them).
# Ends with one summary line: "total: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test (unit, integration, doc, fixtures, conformance)"
cargo test --workspace --locked 2>&1 | tee -a "$log"
if [ "${WLMAP_SKIP_E2E:-0}" != "1" ] && command -v go >/dev/null 2>&1 && [ -x testbed/with-testbed.sh ]; then
  echo "== end-to-end tests against a real kube-apiserver (testbed/)"
  cargo build -p wlmap-cli --locked
  testbed/with-testbed.sh cargo test -p wlmap-e2e --locked --test e2e --test faults -- --include-ignored --test-threads=1 2>&1 | tee -a "$log"
else
  echo "== end-to-end tests skipped (need Go and testbed/; WLMAP_SKIP_E2E=${WLMAP_SKIP_E2E:-0})"
fi
# One closing line for the whole run (the e2e test is counted where it runs, not where the
# plain `cargo test` ignores it for lack of a testbed).
awk '/^test result:/ { p += $4; f += $6 } END { printf "total: %d passed, %d failed\n", p, f }' "$log"
