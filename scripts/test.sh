#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + integration + doc tests, the conformance
# check (when ../shared/conformance is present), and the end-to-end tests against a real
# kube-apiserver built by testbed/ (when Go is available; WLMAP_SKIP_E2E=1 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test (unit, integration, doc, fixtures, conformance)"
cargo test --workspace --locked
if [ "${WLMAP_SKIP_E2E:-0}" != "1" ] && command -v go >/dev/null 2>&1 && [ -x testbed/with-testbed.sh ] && [ -d crates/e2e ]; then
  echo "== end-to-end tests against a real kube-apiserver (testbed/)"
  cargo build -p wlmap-cli --locked
  testbed/with-testbed.sh cargo test -p wlmap-e2e --locked -- --include-ignored --test-threads=1
else
  echo "== end-to-end tests skipped (need Go and testbed/; WLMAP_SKIP_E2E=${WLMAP_SKIP_E2E:-0})"
fi
