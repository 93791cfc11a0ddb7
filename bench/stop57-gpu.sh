#!/usr/bin/env bash
# Stop 57's calls (#18), three commands on one warm machine:
#   bash bench/stop57-gpu.sh            (PART=a)
#     resident rhs tiles (FUSEC_WGMMA_RESIDENT_B=1) against the interpreter
#     on the GPU: every function of
#     test/lit/CodeGen/matmul-wgmma-resident.mlir and
#     conv-pointwise-filter.mlir, and the two convolution examples, also
#     with FUSEC_CONV_POINTWISE_ROWS=1 and with the cooperative 128-row
#     tile (FUSEC_WGMMA_PINGPONG=0: two consumers share the resident
#     tiles); memcheck and racecheck on two;
#     random graphs (convolutions and pools among their ops) through the
#     JIT path against the interpreter, also under resident tiles.
#     (RANDOM_COUNT graphs each, 2000 unless set; 0 skips them).
#   PART=b bash bench/stop57-gpu.sh
#     ResNet-50's layers (bench/convnets.py, CONV_ONLY=forward, cuDNN
#     autotuned), each under the default, resident tiles, the rows form,
#     both, the cooperative 128-row tile (FUSEC_WGMMA_PINGPONG=0) and
#     64-, 128- and 256-column tiles (FUSEC_WGMMA_N: l2's 3x3 is 196
#     tiles of 128 x 128 on 132 SMs, 1.5 waves; l4's 3x3 is 104 tiles of
#     128 x 64 over 72 k-blocks, where 128 or 256 columns split K in 2 or
#     5 parts) and K split in two (FUSEC_WGMMA_SPLIT=2).
#   PART=c bash bench/stop57-gpu.sh
#     ResNet-50 end to end under the default, resident tiles and both.
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
S=$OUT/summary.txt; : > "$S"; L=$OUT/logs; mkdir -p "$L"
case "${PART:-a}" in
a)
  pass=0; fail=0
  for t in test/lit/CodeGen/matmul-wgmma-resident.mlir test/lit/Passes/conv-pointwise-filter.mlir examples/resblock.mlir examples/convnet.mlir; do
    for f in $(grep -o '^func.func @[A-Za-z0-9_]*' $t | cut -d@ -f2); do
      for v in "FUSEC_WGMMA_RESIDENT_B=1" "FUSEC_WGMMA_RESIDENT_B=1 FUSEC_CONV_POINTWISE_ROWS=1" \
               "FUSEC_WGMMA_RESIDENT_B=1 FUSEC_WGMMA_PINGPONG=0"; do
        if env $v timeout 180 "$D/bin/fusec-run" $t --function=$f --runs=2 --warmup=1 >> "$L/check.log" 2>&1; then
          pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL [$v] $t @$f" | tee -a "$S"; fi
      done
    done
  done
  echo "resident rhs tiles on the GPU against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
  for f in pointwise reduce; do
    for tool in memcheck racecheck; do
      FUSEC_WGMMA_RESIDENT_B=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-run" \
        test/lit/CodeGen/matmul-wgmma-resident.mlir --function=$f --runs=1 --warmup=0 > "$L/$tool-$f.log" 2>&1
      echo "@$f under $tool: rc=$? $(grep -o 'ERROR SUMMARY: [0-9]* errors\|RACECHECK SUMMARY: [0-9]* hazards[^.]*' "$L/$tool-$f.log" | tail -1)" | tee -a "$S"
    done
  done
  # Random graphs (the generator now draws convolutions and pools) through
  # the whole JIT path against the interpreter, default and resident tiles.
  [ "${RANDOM_COUNT:-2000}" = 0 ] || for v in X=default FUSEC_WGMMA_RESIDENT_B=1; do
    env $v python3 test/random/random_graphs.py "$D/bin/fusec-run" --gpu --dtype mixed --seed 5710 \
      --count "${RANDOM_COUNT:-2000}" --jobs 12 --batch 25 --deadline 60 --minimize --timeout 120 \
      --keep "$OUT/random-${v%%=*}" --json "$OUT/random-${v%%=*}.json" > "$L/random-${v%%=*}.log" 2>&1
    echo "random graphs [$v]: $(tail -1 "$L/random-${v%%=*}.log")" | tee -a "$S"
  done ;;
b)
  OUT=$OUT/forward CONV_ONLY=forward \
    CONV_FUSEC_VARIANTS="FUSEC_WGMMA_RESIDENT_B=1;FUSEC_CONV_POINTWISE_ROWS=1;FUSEC_CONV_POINTWISE_ROWS=1,FUSEC_WGMMA_RESIDENT_B=1;FUSEC_WGMMA_PINGPONG=0;FUSEC_WGMMA_N=64;FUSEC_WGMMA_N=128;FUSEC_WGMMA_N=256;FUSEC_WGMMA_SPLIT=2" \
    timeout 560 python3 bench/convnets.py > "$OUT/layers.log" 2>&1
  echo "layers rc=$? ($(el))" | tee -a "$S"
  sed -n '/^layer /,$p' "$OUT/layers.log" ;;
c)
  OUT=$OUT/models CONV_ONLY=models CONV_MODELS=resnet-50 \
    CONV_FUSEC_VARIANTS="FUSEC_WGMMA_RESIDENT_B=1;FUSEC_CONV_POINTWISE_ROWS=1,FUSEC_WGMMA_RESIDENT_B=1" \
    timeout 560 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))" | tee -a "$S"
  sed -n "/^model /,\$p" "$OUT/models.log"
  python3 -c "import json; r=json.load(open('$OUT/models/convnets.json'))['models'][0]; print({k: r.get(k) for k in ('fusec_ms','compile_ms','compile_ro_ms','speedup_vs_best_compile','rel_l2_vs_torch','variants')})" 2>&1 | tail -3 ;;
esac
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"; cat "$S"
