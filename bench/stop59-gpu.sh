#!/usr/bin/env bash
# Stop 59's call (#18, #19), one command:
#   bash bench/stop59-gpu.sh
# 1. A max pool that ran wrong on the GPU in stop 59's random graphs
#    (test/lit/CodeGen/Inputs/pool-pad-both.mlir: kernel 2x3, stride 2x3,
#    padding on both spatial dims of a 2x8 image): fusec-run's result, and
#    the kernel's PTX (as --fusec-codegen writes it) assembled by ptxas at
#    -O3 to -O0, and with its max.u16 compares rewritten, run by a small
#    driver against a CPU reference (bench/pool-mismatch/: drv.cu, built
#    there by nvcc; the PTX as --fusec-codegen="dump-dir=..." wrote it).
# 2. The 1x1 convolutions' GEMM over every image's positions (now the
#    default): every convolution test function against the interpreter.
# 3. ResNet-50's layers (LAYERS=0 skips them) and the model end to end
#    (MODELS=0 skips it),
#    the default beside FUSEC_CONV_POINTWISE_ROWS=0 (the batch form, the
#    old default).
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
S=$OUT/summary.txt; : > "$S"; L=$OUT/logs; mkdir -p "$L"
P=test/lit/CodeGen/Inputs/pool-pad-both.mlir
/usr/local/cuda/bin/nvcc -o "$L/drv" bench/pool-mismatch/drv.cu -lcuda
{
  "$D/bin/fusec-run" $P --function=same --runs=1 --warmup=0 --print-values=18 2>&1 | grep -v '^k[0-9]'
  FUSEC_DISABLE_AGGRESSIVE_PTX=1 "$D/bin/fusec-run" $P --function=same --runs=1 --warmup=0 2>&1 | grep 'result #0'
  for f in $(grep -o '^func.func @[A-Za-z0-9_]*' $P | cut -d@ -f2); do
    echo "@$f: $("$D/bin/fusec-run" $P --function=$f --runs=1 --warmup=0 2>&1 | grep -o 'result #0.*')"
  done
  for o in 3 2 1 0; do
    /usr/local/cuda/bin/ptxas -arch=sm_90a -O$o bench/pool-mismatch/same.max_pool.ptx -o "$L/o$o.cubin" && "$L/drv" "$L/o$o.cubin"
  done
  # The only instruction the failing kernels have and the passing ones do
  # not: `max.u16 a, b, 1; setp.eq.b16 p, a, 1`, here as `setp.le.u16 p, b, 1`.
  /usr/local/cuda/bin/ptxas -arch=sm_90a -O3 bench/pool-mismatch/same_nomax.ptx -o "$L/nomax.cubin" && "$L/drv" "$L/nomax.cubin"
  "$L/drv" "$L/o3.cubin" 32
  /usr/local/cuda/bin/cuobjdump -sass "$L/o3.cubin" > "$L/o3.sass" 2>&1; /usr/local/cuda/bin/cuobjdump -sass "$L/o0.cubin" > "$L/o0.sass" 2>&1
} 2>&1 | tee "$L/pool.log" | tee -a "$S"
pass=0; fail=0
for t in test/lit/Passes/conv-im2col.mlir test/lit/Passes/conv-shared-pad.mlir test/lit/Passes/conv-transposed.mlir \
         test/lit/Passes/conv-pointwise-filter.mlir examples/resblock.mlir examples/convnet.mlir; do
  for f in $(grep -o '^func.func @[A-Za-z0-9_]*' $t | cut -d@ -f2); do
    if timeout 120 "$D/bin/fusec-run" $t --function=$f --runs=2 --warmup=1 >> "$L/check.log" 2>&1; then
      pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $t @$f" | tee -a "$S"; fi
  done
done
echo "convolutions (1x1 over all positions by default) against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
if [ "${LAYERS:-1}" = 1 ]; then
  OUT=$OUT/forward CONV_ONLY=forward CONV_FUSEC_VARIANTS="FUSEC_CONV_POINTWISE_ROWS=0" \
    timeout 200 python3 bench/convnets.py > "$OUT/layers.log" 2>&1
  echo "layers rc=$? ($(el))" | tee -a "$S"
fi
if [ "${MODELS:-1}" = 1 ]; then
  OUT=$OUT/models CONV_ONLY=models CONV_MODELS=resnet-50 CONV_FUSEC_VARIANTS="FUSEC_CONV_POINTWISE_ROWS=0" \
    timeout 200 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))" | tee -a "$S"
fi
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"; cat "$S"
[ -f "$OUT/layers.log" ] && sed -n '/^layer channels last/,$p' "$OUT/layers.log"
[ -f "$OUT/models.log" ] && sed -n '/^model /,$p' "$OUT/models.log"
