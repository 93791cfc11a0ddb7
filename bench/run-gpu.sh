#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) from the repository root,
# with the static binaries that bench/stage-gpu.sh put in .device/. Builds
# nothing: checks and times everything in one go, writes full results under
# $OUT (or bench/out/ when OUT is unset) and prints a short table last.
#
#   bash bench/run-gpu.sh
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
if [ -f "$D/bin.tar.xz" ]; then
  tar -C "$D" -xJf "$D/bin.tar.xz"
fi
BIN="$D/bin"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_SOURCE_DIR="$PWD"
export FUSEC_CACHE_DIR="$(mktemp -d)/fusec-cache"
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
  uname -r
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

run() { # name, command...
  local name=$1; shift
  local tool=$1
  [ "$tool" = compute-sanitizer ] && tool=${@: -1} && for a in "$@"; do case $a in */bin/*) tool=$a; break;; esac; done
  if [[ "$tool" == */bin/* && ! -x "$tool" ]]; then
    note "$(printf '%-28s skipped: %s not staged' "$name" "$(basename "$tool")")"
    return 0
  fi
  local start=$(date +%s%N)
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  note "$(printf '%-28s rc=%-3s %8d ms' "$name" "$rc" "$ms")"
  return $rc
}

run runtime-tests "$BIN/fusec-runtime-tests"
run jit-tests "$BIN/fusec-jit-tests"
run embed "$BIN/fusec-embed-example" examples/ptx/vector_add.mlir
run fusec-run-vadd "$BIN/fusec-run" examples/ptx/vector_add.mlir --function=vadd --runs=50 --json
run fusec-run-chain "$BIN/fusec-run" examples/ptx/vector_add.mlir --function=chain
if command -v compute-sanitizer >/dev/null; then
  # ErrorsNameTheCall makes failing API calls on purpose: the sanitizer
  # would count those, so it is left out here.
  run memcheck-runtime compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$BIN/fusec-runtime-tests" --gtest_filter='Runtime.*:-Runtime.ErrorsNameTheCall'
  run memcheck-jit compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$BIN/fusec-jit-tests" --gtest_filter='Jit.Runs*'
  run memcheck-chain compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$BIN/fusec-run" examples/ptx/vector_add.mlir --function=chain --runs=2 --warmup=1
fi
run calibrate "$BIN/fusec-calibrate" -o "$OUT/h200-measured.json"
# The measured target must load: a roofline report against it.
run report-measured "$BIN/fusec-opt" test/lit/Passes/Inputs/seeds.mlir \
  --fusec-roofline-report="target=$OUT/h200-measured.json" -o /dev/null
printf 'func.func @g(%%x: tensor<1000003xbf16>, %%b: tensor<1000003xbf16>) -> tensor<1000003xbf16> {\n  %%0 = fusec.add %%x, %%b : tensor<1000003xbf16>\n  %%1 = fusec.gelu %%0 {tanh} : tensor<1000003xbf16>\n  return %%1 : tensor<1000003xbf16>\n}\n' > "$OUT/generated.mlir"
if command -v compute-sanitizer >/dev/null; then
  run memcheck-codegen compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$BIN/fusec-run" "$OUT/generated.mlir" --runs=2 --warmup=1
fi
PYTHONUNBUFFERED=1 FUSEC_BIN="$BIN" run memory-bound python3 bench/memory_bound.py
run jit-bench "$BIN/fusec-jit-bench" --benchmark_out="$OUT/jit_bench.json" \
  --benchmark_out_format=json --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true

echo
echo "== memory-bound graphs (generated kernels)"
tail -8 "$OUT/memory-bound.log"
echo
echo "== calibration"
cat "$OUT/calibrate.log"
head -3 "$OUT/report-measured.log"
echo
echo "== test summaries"
for f in runtime-tests jit-tests; do
  echo "$f: $(grep -hE '^\[  (PASSED|FAILED|SKIPPED)  \] [0-9]+ test' "$OUT/$f.log" | tr '\n' ' ')"
done
tail -3 "$OUT/embed.log"
cat "$OUT/fusec-run-chain.log"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
try:
    r = json.load(open(f"{out}/fusec-run-vadd.log"))
    for k in r["kernels"]:
        print(f"fusec-run vadd: {k['name']}: {k['median_ms']:.4f} ms, {k['gb_per_s']:.0f} GB/s, ok={r['ok']}")
except Exception as e:
    print("fusec-run vadd: no JSON:", e)
try:
    b = json.load(open(f"{out}/jit_bench.json"))
    print(f"{'benchmark (median of 5)':44s} {'real':>12s} {'per launch':>12s}")
    for x in b["benchmarks"]:
        if x.get("aggregate_name") != "median":
            continue
        per = x.get("us_per_launch")
        print(f"{x['run_name']:44s} {x['real_time']:10.4g} {x['time_unit']:2s} "
              + (f"{per:10.3f} us" if per else ""))
except Exception as e:
    print("jit bench: no JSON:", e)
PY
grep -h "ERROR SUMMARY" "$OUT"/memcheck-*.log 2>/dev/null | sed 's/^/memcheck: /'
# At most 8 files come back: the logs travel as one archive.
(cd "$OUT" && tar -czf logs.tar.gz *.log && rm -f *.log)
echo
echo "== steps"
cat "$summary"
