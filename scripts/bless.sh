#!/usr/bin/env bash
# Rewrite the generated files the tests compare against: the Karta CRD (crates/schema/crd),
# crates/catalog/CONFORMANCE.tsv (from ../shared/conformance) and CATALOG.md. The test suite
# never does this; run it after a change to the types, definitions, fixtures or recordings,
# and review the diff.
set -euo pipefail
cd "$(dirname "$0")/.."
WLMAP_BLESS=1 cargo test -p wlmap-schema --locked --test crd
WLMAP_BLESS=1 cargo test -p wlmap-catalog --locked --test conformance --test catalog_md
git --no-pager diff --stat -- crates/catalog/CONFORMANCE.tsv CATALOG.md crates/schema/crd
