#!/usr/bin/env bash
# Run one fuzz target in one continuous libFuzzer run until it stops finding new coverage: the
# run ends when no new edge has been found in wlmap's crates for QUIET_SECONDS of the fuzzer's
# own CPU time after the corpus replay (CPU time, so that a busy machine cannot fake a quiet
# spell), or at MAX_MINUTES of wall time. PLATEAU_SCOPE=all waits instead for no new edge
# anywhere ("cov": the YAML parser, number formatting and hash tables of the dependencies too,
# which can keep growing for hours after wlmap's own code has stopped). The fuzzer
# explores the same way in both: the scope only decides when the run is done. For the wlmap
# scope the run is made under `setarch -R` with -print_pcs=1, and new_edges.py --own says which
# new edges are wlmap's. This is the "run until it stops finding new coverage" procedure behind the
# figures in SECURITY.md. One run, not slices: every restart replays the whole corpus (minutes
# for 10,000+ inputs), time that finds nothing.
#
#   fuzz/plateau.sh TARGET [MAX_MINUTES=60] [QUIET_SECONDS=600]
#
# It runs the binary `cargo +nightly fuzz build -O` left in target/; FUZZ_BIN=DIR runs the one in
# DIR instead (copied there after a build, with or without `-s none`), so that editing the code
# meanwhile does not change what is being fuzzed.
#
# FUZZ_ARGS adds libFuzzer flags. Logs: fuzz/logs/TARGET.log (a line per minute and the verdict) and fuzz/logs/TARGET.out
# (libFuzzer's output).
set -uo pipefail
t=${1:?target}; max=${2:-60}; quiet=${3:-600}; scope=${PLATEAU_SCOPE:-wlmap}
case $scope in wlmap | all) ;; *) echo "PLATEAU_SCOPE is wlmap or all, not $scope" >&2; exit 2 ;; esac
# No address randomisation, so that each NEW_PC is the binary's offset + 0x555555554000.
if [ "$scope" = wlmap ] && [ -z "${PLATEAU_NO_ASLR:-}" ]; then
  PLATEAU_NO_ASLR=1 exec setarch "$(uname -m)" -R "$0" "$@"
fi
cd "$(dirname "$0")"
mkdir -p logs artifacts/"$t"
log=logs/$t.log; out=logs/$t.out; : > "$log"
args=(corpus/"$t" -max_total_time=$((max * 60)) -timeout=10 -rss_limit_mb=2048
  -print_final_stats=1 -artifact_prefix=artifacts/"$t"/)
# The target's dictionary (fuzz/make_dicts.py): tokens that byte mutations rarely spell.
[ -f dict/"$t".dict ] && args+=(-dict=dict/"$t".dict)
# FUZZ_ARGS: more libFuzzer flags, e.g. "-print_pcs=1" to log where each new edge is (run
# under `setarch -R` so that the addresses are the binary's offsets + 0x555555554000).
read -ra extra <<< "${FUZZ_ARGS:-}"; args+=("${extra[@]}")
[ "$scope" = wlmap ] && args+=(-print_pcs=1)
bindir=${FUZZ_BIN:-target/x86_64-unknown-linux-gnu/release}; bin=$bindir/$t
[ -x "$bin" ] || { echo "no $bin: run cargo +nightly fuzz build -O" >&2; exit 2; }
rm -f logs/"$t".parts  # new_edges.py's cache of this binary's addresses
"$bin" "${args[@]}" > "$out" 2>&1 &
pid=$!
cpu() { awk '{print int(($14 + $15) / 100)}' /proc/"$pid"/stat 2>/dev/null || echo 0; }
trap 'kill -INT $pid 2>/dev/null' EXIT
start=$(date +%s); now=0; last_cov=; last_new=; last_new_execs=0; minute=-1; verdict=
own=-; last_own=; last_own_new=; last_own_execs=0
while kill -0 "$pid" 2>/dev/null; do
  sleep 10
  c=$(cpu); [ "$c" != 0 ] && now=$c  # 0: the fuzzer has just exited
  grep -q INITED "$out" || continue  # still replaying the corpus
  line=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$out" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' <<< "$line" | awk '{print $2}')
  execs=$(grep -oE '^#[0-9]+' <<< "$line" | tr -d '#')
  if [ "$cov" != "$last_cov" ]; then last_cov=$cov; last_new=$now; last_new_execs=$execs; fi
  m=$(( ($(date +%s) - start) / 60 ))
  if [ "$m" != "$minute" ]; then
    minute=$m
    if [ "$scope" = wlmap ]; then
      # "EDGES LAST_EXECUTION" of the edges found in wlmap's crates since the corpus replay
      read -r own own_execs < <(FUZZ_BIN=$bindir python3 new_edges.py "$t" --own)
      if [ "$own" != "$last_own" ]; then last_own=$own; last_own_new=$now; last_own_execs=$own_execs; fi
    fi
    echo "min $m cov $cov wlmap_new $own execs>=$execs cpu_s $now" >> "$log"
  fi
  if [ "$scope" = all ] && [ $((now - last_new)) -ge "$quiet" ]; then
    verdict="plateau: no new coverage for $quiet CPU seconds after the corpus replay (since execution #$last_new_execs)"
    kill -INT "$pid"; break
  fi
  if [ "$scope" = wlmap ] && [ -n "$last_own_new" ] && [ $((now - last_own_new)) -ge "$quiet" ]; then
    verdict="plateau: no new edge in wlmap's crates for $quiet CPU seconds after the corpus replay ($last_own new since the replay, the last at execution #$last_own_execs); all edges: cov $cov, the last new $(( (now - last_new) / 60 )) CPU minutes before the end"
    last_new_execs=$last_own_execs
    kill -INT "$pid"; break
  fi
done
wait "$pid"; rc=$?
trap - EXIT
total=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$out" | awk '{print $2}')
init=$(grep -m1 INITED "$out" | grep -oE 'cov: [0-9]+' | awk '{print $2}')
init_n=$(grep -m1 INITED "$out" | grep -oE '^#[0-9]+' | tr -d '#')
# crash-, leak-, timeout-, oom- artifacts are failures; slow-unit- ones (-report_slow_units) are not.
crashes=$(find artifacts/"$t" -type f ! -name 'slow-unit-*' | wc -l)
slow=$(find artifacts/"$t" -type f -name 'slow-unit-*' | wc -l)
mins=$(( ($(date +%s) - start) / 60 ))
echo "run: rc=$rc replayed=$init_n inited_cov=$init final_cov=$last_cov execs=$total crashes=$crashes slow_units=$slow minutes=$mins" >> "$log"
if [ -n "$verdict" ]; then
  echo "$verdict; $((total - last_new_execs)) executions after that one" >> "$log"
elif [ "$rc" != 0 ]; then echo "stopped: exit $rc (a crash, a timeout or a leak: see $out)" >> "$log"
elif [ "$scope" = wlmap ]; then
  echo "time limit: wlmap's coverage still growing (last new edge in wlmap's crates $(( (now - ${last_own_new:-0}) / 60 )), anywhere $(( (now - last_new) / 60 )) CPU minutes before the end)" >> "$log"
else echo "time limit: coverage still growing (last new edge $(( (now - last_new) / 60 )) CPU minutes before the end)" >> "$log"; fi
# A plateau is a success: the fuzzer's own exit code is then that of the interrupt (72).
[ -n "$verdict" ] && exit 0
exit "$rc"
