#!/usr/bin/env bash
# Minimize every target's corpus and keep the result in fuzz/corpus.tar.xz, so that the next
# run continues from it (fuzz/README.md). Each corpus is merged (`-merge=1`: the smallest set
# of inputs with the same coverage) into a fresh directory, which then replaces it.
#
#   fuzz/keep_corpora.sh [TARGET...]     (default: all four)
#
# Uses the binaries in FUZZ_BIN (default: those `cargo +nightly fuzz build -O` left in target/).
set -euo pipefail
cd "$(dirname "$0")"
bindir=${FUZZ_BIN:-target/x86_64-unknown-linux-gnu/release}
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(definition expression resolve snapshot)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for t in "${targets[@]}"; do
  [ -d corpus/"$t" ] || { echo "no corpus/$t" >&2; exit 2; }
  mkdir "$work/$t"
  "$bindir/$t" -merge=1 -timeout=10 -rss_limit_mb=2048 "$work/$t" corpus/"$t" > "$work/$t.log" 2>&1 \
    || { tail -5 "$work/$t.log" >&2; exit 1; }
  rm -rf corpus/"$t"; mv "$work/$t" corpus/"$t"
  echo "$t: $(find corpus/"$t" -type f | wc -l) inputs"
done
# Sorted names and no owners or times, so that the same corpora make the same archive.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - corpus | xz -9 -T1 > corpus.tar.xz
echo "corpus.tar.xz: $(wc -c < corpus.tar.xz) bytes"
