#!/usr/bin/env bash
# Device call 2 (#17, the persistent grid with a dynamic scheduler for causal tiles, the key mask loaded a block ahead): the attention
# library's float64 tests (persistent grids of a few CTAs running many
# tiles, static and dynamic, replayed graphs), racecheck and synccheck, the speed of the old grid (one CTA a
# tile, one head's row blocks after another), the new order, the static and
# dynamic persistent grids on the same tensors, the JIT tests, GPT-2 small at 4 x 1024.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache" FUSEC_ATTENTION_LIB="$D/lib/libfusec_attention.so"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
timeout 200 "$D/bin/fusec-attention-tests" > "$OUT/attention-tests.log" 2>&1
echo "attention tests rc=$? $(el): $(tail -1 "$OUT/attention-tests.log")"
for tool in racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-attention-tests" --quick > "$OUT/attention-$tool.log" 2>&1
  echo "$tool rc=$? $(el): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY' "$OUT/attention-$tool.log" | head -1) $(tail -1 "$OUT/attention-$tool.log")"
done
timeout 200 python3 bench/attention.py --no-correctness --json "$OUT/attention-speed.json" \
  --shapes 4x12x1024x64,32x12x197x64,8x16x512x128,1x32x2048x128,16x32x1024x128,4x32x4096x128,2x32x8192x128,4x32x4096x64,8x16x4096x256 \
  --flags base,pp+pipe --key-masks \
  --schedules "tiles:FUSEC_ATTENTION_PERSISTENT=0+FUSEC_ATTENTION_HEAD_GROUP=1,order:FUSEC_ATTENTION_PERSISTENT=0,static:FUSEC_ATTENTION_PERSISTENT=1,dynamic:FUSEC_ATTENTION_PERSISTENT=2" \
  > "$OUT/attention-speed.log" 2>&1
echo "attention speed rc=$? $(el)"
timeout 100 "$D/bin/fusec-jit-tests" > "$OUT/jit-tests.log" 2>&1
echo "jit tests rc=$? $(el): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/jit-tests.log" | tr '\n' ' ')"
MODELS_FUSEC_VARIANTS="tiles:FUSEC_ATTENTION_PERSISTENT=0,FUSEC_ATTENTION_HEAD_GROUP=1" MODELS_TOP=30 \
  BENCH_ONLY=gpt2-small BENCH_SHAPES=4x1024 OUT=$OUT/models \
  timeout $(( 570 - ($(date +%s) - t0) )) python3 bench/models.py > "$OUT/models-bench.log" 2>&1
echo "models rc=$? $(el)"
grep -h "^FAIL" "$OUT/attention-tests.log" | head -5
grep -h "FAILED\|Failure" "$OUT/jit-tests.log" | head -5
echo "== models"; grep -o '"fusec_ms": [0-9.]*\|"fusec_ms_tiles": [0-9.]*\|"rel_l2_vs_torch": [0-9.e-]*' "$OUT/models-bench.log" | tr '\n' ' '; echo
sed -n '/^model /,$p' "$OUT/models-bench.log"
echo "== attention speed"; sed -n '/^TFLOP/,$p' "$OUT/attention-speed.log"
(cd "$OUT" && tar -cJf logs.tar.xz *.log models 2>/dev/null)
