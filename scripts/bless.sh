#!/usr/bin/env bash
# Rewrite the generated files the tests compare against: the Karta CRD (crates/schema/crd, and
# the chart's copy),
# crates/catalog/CONFORMANCE.tsv (from ../shared/conformance), CATALOG.md and the gang golden
# files (crates/cli/tests/golden). The test suite never does this; run it after a change to
# the types, definitions, fixtures, recordings or gang formats, and review the diff.
set -euo pipefail
cd "$(dirname "$0")/.."
WLMAP_BLESS=1 cargo test -p wlmap-schema --locked --test crd
# The chart installs the same CRD.
cp crates/schema/crd/kartas.run.ai.yaml charts/wlmap/crds/kartas.run.ai.yaml
WLMAP_BLESS=1 cargo test -p wlmap-catalog --locked --test conformance --test catalog_md
WLMAP_BLESS=1 cargo test -p wlmap-cli --locked --test cli gang_formats_match_their_golden_files
git --no-pager diff --stat -- crates/catalog/CONFORMANCE.tsv CATALOG.md crates/schema/crd charts/wlmap/crds crates/cli/tests/golden
