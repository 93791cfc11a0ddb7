#!/usr/bin/env bash
# run.sh HARNESS SEEDS WORKDIR SECONDS [extra libFuzzer flags]
# SEEDS: seed folders, separated by ':'. Replays every seed (each must run
# clean), then fuzzes for SECONDS from them into WORKDIR/corpus; a crash
# leaves WORKDIR/crash-* (and the ctest entry fails). Prints the executions
# and the corpus size.
set -uo pipefail
harness=$1 work=$3 seconds=$4
IFS=: read -ra seeds <<< "$2"
shift 4
mkdir -p "$work/corpus"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_container_overflow=0:detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
flags=(-rss_limit_mb=4096 -timeout=30 -max_len=16384 -artifact_prefix="$work/" -print_final_stats=1)
# 1. Every seed (and every earlier crash kept in the seeds) runs clean.
"$harness" "${flags[@]}" "$@" -runs=0 "${seeds[@]}" > "$work/replay.log" 2>&1 || {
  tail -40 "$work/replay.log"; echo "$(basename "$harness"): a seed fails"; exit 1; }
# 2. Fuzz, from a fixed random seed (FUSEC_FUZZ_SEED, default 1): CI then
# explores the same sequence of inputs every run (a slower machine a prefix
# of it), so an entry fails only on a change to the code, not on the luck of
# the draw. Campaigns (scripts/fuzz) draw new seeds to find what is new.
"$harness" "${flags[@]}" -seed="${FUSEC_FUZZ_SEED:-1}" "$@" -max_total_time="$seconds" \
  "$work/corpus" "${seeds[@]}" > "$work/fuzz.log" 2>&1
rc=$?
grep -E "^stat::(number_of_executed_units|new_units_added|peak_rss_mb)" "$work/fuzz.log" | tr '\n' ' '
echo
if [ $rc != 0 ]; then
  tail -60 "$work/fuzz.log"
  echo "$(basename "$harness"): FAILED (rc $rc); inputs: $(ls "$work"/crash-* "$work"/timeout-* "$work"/oom-* 2>/dev/null)"
  exit 1
fi
echo "$(basename "$harness"): $(ls "$work/corpus" | wc -l) inputs in the working corpus, no crash"
