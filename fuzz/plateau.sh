#!/usr/bin/env bash
# Run one fuzz target in 5-minute slices until a slice finds no new coverage (or a time limit),
# counting only slices that executed at least as many new inputs as the corpus they replayed,
# logging each slice's coverage and executions: the "run until it stops finding new coverage"
# procedure behind the figures in SECURITY.md.
#
#   fuzz/plateau.sh TARGET [MAX_MINUTES=60] [SLICE_SECONDS=300]
#
# FUZZ_BIN=DIR runs the binaries in DIR (copied from target/*/release after `cargo +nightly fuzz
# build -O`) instead of `cargo fuzz run`, so editing the code meanwhile does not rebuild them.
#
# Logs: fuzz/logs/TARGET.log (one line per slice) and fuzz/logs/TARGET-N.out (libFuzzer's output).
set -uo pipefail
t=${1:?target}; max=${2:-60}; slice_s=${3:-300}
cd "$(dirname "$0")"
mkdir -p logs artifacts/"$t"
log=logs/$t.log; : > "$log"
start=$(date +%s); n=0
while :; do
  n=$((n + 1)); out=logs/$t-$n.out
  args=(corpus/"$t" -max_total_time="$slice_s" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix=artifacts/"$t"/)
  if [ -n "${FUZZ_BIN:-}" ]; then "$FUZZ_BIN/$t" "${args[@]}" > "$out" 2>&1
  else cargo +nightly fuzz run -O "$t" corpus/"$t" -- "${args[@]:1}" > "$out" 2>&1; fi
  rc=$?
  init=$(grep -m1 INITED "$out" | grep -oE 'cov: [0-9]+' | awk '{print $2}')
  end=$(grep DONE "$out" | grep -oE 'cov: [0-9]+' | awk '{print $2}')
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$out" | awk '{print $2}')
  # Executions after the corpus replay: a slice that spent its time replaying proves nothing.
  init_n=$(grep -m1 INITED "$out" | grep -oE '^#[0-9]+' | tr -d '#')
  done_n=$(grep DONE "$out" | grep -oE '^#[0-9]+' | tr -d '#')
  fuzzed=$(( ${done_n:-0} - ${init_n:-0} ))
  crashes=$(find artifacts/"$t" -type f | wc -l)
  mins=$(( ($(date +%s) - start) / 60 ))
  echo "slice $n rc=$rc inited_cov=$init done_cov=$end execs=$execs fuzzed=$fuzzed crashes=$crashes elapsed_min=$mins" >> "$log"
  if [ "$rc" != 0 ]; then echo "stopped: exit $rc (a crash, a timeout or a leak: see $out)" >> "$log"; exit "$rc"; fi
  if [ -n "$init" ] && [ "$init" = "$end" ] && [ "$fuzzed" -ge "${init_n:-0}" ]; then
    echo "plateau: slice $n found no new coverage in $fuzzed executions after the corpus replay" >> "$log"; exit 0
  fi
  if [ "$mins" -ge "$max" ]; then echo "time limit: coverage still growing" >> "$log"; exit 0; fi
done
