#!/usr/bin/env bash
# Stop 54's calls (#15, #18).
#   PART=a bash bench/stop54-gpu.sh
#     1. stop 53's transpose checks and timings under the narrow tiles
#        (NARROW=1 QUICK=1 PART=t bash bench/stop53-gpu.sh), under $OUT/transpose;
#     2. convolutions against the interpreter on the GPU, with the grid's
#        shared padding (the default): every function of
#        test/lit/Passes/conv-shared-pad.mlir and the two convolution
#        examples; memcheck on two;
#     3. the transposed layers against cuDNN, also under
#        FUSEC_CONVT_STACKED=0 (a convolution a phase), then ResNet-50's
#        layers (bench/convnets.py), each also channels last, and that
#        under FUSEC_CONV_SHARED_PAD=0.
#   PART=1 / PART=2: the memory-bound suite's halves (bench/stop53-gpu.sh).
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${PART:-a}" != a ]; then exec bash bench/stop53-gpu.sh; fi
source bench/gpu-env.sh
S=$OUT/summary.txt; : > "$S"; L=$OUT/logs; mkdir -p "$L"
OUT=$OUT/transpose NARROW=1 QUICK=1 PART=t timeout 170 bash bench/stop53-gpu.sh > "$L/transpose.log" 2>&1
echo "transposes (narrow tiles): rc=$? ($(el))" | tee -a "$S"
sed -n '/== summary/,$p' "$L/transpose.log" | tee -a "$S"
pass=0; fail=0
for v in X=default; do
  for t in test/lit/Passes/conv-shared-pad.mlir test/lit/Passes/conv-transposed.mlir examples/resblock.mlir examples/convnet.mlir; do
    for f in $(grep -o 'func.func @[A-Za-z0-9_]*' $t | cut -d@ -f2); do
      if env $v timeout 180 "$D/bin/fusec-run" $t --function=$f --runs=2 --warmup=1 >> "$L/conv-check.log" 2>&1; then
        pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL [$v] $t @$f" | tee -a "$S"; fi
    done
  done
done
echo "convolutions on the GPU against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
for tf in conv-shared-pad.mlir:s2p3 conv-transposed.mlir:upsample; do
  t=test/lit/Passes/${tf%%:*}; f=${tf##*:}
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" \
    $t --function=$f --runs=1 --warmup=0 > "$L/memcheck-$f.log" 2>&1
  echo "@$f under memcheck: rc=$? $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$L/memcheck-$f.log" | tail -1)" | tee -a "$S"
done
OUT=$OUT/transposed CONV_ONLY=transposed CONV_FUSEC_VARIANTS="FUSEC_CONVT_STACKED=0" timeout 100 \
  python3 bench/convnets.py > "$OUT/transposed.log" 2>&1
echo "transposed layers rc=$? ($(el))" | tee -a "$S"
OUT=$OUT/forward CONV_ONLY=forward CONV_FUSEC_VARIANTS="FUSEC_CONV_SHARED_PAD=0" timeout 200 \
  python3 bench/convnets.py > "$OUT/layers.log" 2>&1
echo "layers rc=$? ($(el))" | tee -a "$S"
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"; cat "$S"; sed -n '/^layer /,$p' "$OUT/transposed.log" "$OUT/layers.log"
