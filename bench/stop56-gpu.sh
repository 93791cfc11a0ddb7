#!/usr/bin/env bash
# Stop 56's call (#18, #15), one command:
#   bash bench/stop56-gpu.sh
#     1. convolutions by TMA im2col (FUSEC_CONV_IM2COL=1) against the
#        interpreter on the GPU: every function of
#        test/lit/Passes/conv-im2col.mlir, conv-shared-pad.mlir,
#        conv-transposed.mlir and conv-pointwise-filter.mlir, and the two
#        convolution examples; memcheck on two;
#     2. ResNet-50's layers (bench/convnets.py, CONV_ONLY=forward), each
#        also as a network runs it (channels last, constant filter), and
#        that under FUSEC_CONV_IM2COL=1;
#     3. ResNet-50 end to end, also under FUSEC_CONV_IM2COL=1, where the
#        call's time allows (MODELS_BEFORE: seconds elapsed by which it
#        must start; default 330);
#     4. head transposes, narrow tiles against 64 x 64, alternated twice,
#        where time is left (TRANSPOSE_BEFORE, default 500).
#   PART=b bash bench/stop56-gpu.sh
#     ResNet-50 and ViT-B/16 end to end with im2col on (as the default
#     after stop 56; FUSEC_CONV_IM2COL=1 for binaries staged before it),
#     and under FUSEC_CONV_IM2COL=0, same run.
#   PART=c bash bench/stop56-gpu.sh
#     the landed defaults (im2col, narrow transpose tiles), binaries staged
#     after them: ResNet-50 and ViT-B/16 end to end; the head transposes
#     (and under FUSEC_TRANSPOSE_NARROW=0); ResNet-50's layers as a network
#     runs them.
#   PART=d bash bench/stop56-gpu.sh   (for the next session)
#     ResNet-50's layers with cuDNN autotuned, each under
#     FUSEC_CONV_POINTWISE_ROWS=1 and FUSEC_CONV_IM2COL=0 too; ResNet-50
#     end to end, also under FUSEC_CONV_POINTWISE_ROWS=1; ResNet-50's 1x1
#     layers' convolutions under memcheck with it.
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
if [ "${PART:-a}" = b ]; then
  FUSEC_CONV_IM2COL=1 OUT=$OUT/models CONV_ONLY=models CONV_FUSEC_VARIANTS="FUSEC_CONV_IM2COL=0" \
    timeout 560 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))"
  grep "^{" "$OUT/models.log" | cut -c1-400; sed -n "/^model /,\$p" "$OUT/models.log"
  exit 0
fi
S=$OUT/summary.txt; : > "$S"; L=$OUT/logs; mkdir -p "$L"
transposes() { # the head transposes, each under "X=default" and the switches given
  local M sw=("$@"); M=$(mktemp -d)
  for spec in "bshd_bdsh16 8 2048 16 128" "bshd_bdsh32 8 2048 32 128"; do
    set -- $spec
    X="tensor<$2x$3x$4x$5xbf16>"; O="tensor<$2x$5x$3x$4xbf16>"
    printf 'func.func @t(%%x: %s) -> %s {\n  %%y = fusec.transpose %%x perm [0, 3, 1, 2] : %s -> %s\n  return %%y : %s\n}\n' \
      "$X" "$O" "$X" "$O" "$O" > "$M/t_$1.mlir"
  done
  for f in "$M"/t_*.mlir; do
    for v in X=default "${sw[@]}"; do
      r=$(env $v "$D/bin/fusec-run" "$f" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
      python3 -c "import json,sys; j=json.loads(sys.argv[1]); print(sys.argv[2], '[' + sys.argv[3] + ']:', ', '.join(k['name'] + ' %.1f us' % (k['median_ms'] * 1e3) for k in j['kernels']))" \
        "$r" "$(basename $f .mlir)" "$v" 2>&1 | tail -1 | tee -a "$S"
    done
  done
}
if [ "${PART:-a}" = d ]; then
  for f in pointwise pointwise3d; do
    FUSEC_CONV_POINTWISE_ROWS=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" \
      test/lit/Passes/conv-pointwise-filter.mlir --function=$f --runs=1 --warmup=0 > "$L/memcheck-$f.log" 2>&1
    echo "@$f (rows) under memcheck, against the interpreter: rc=$? $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$L/memcheck-$f.log" | tail -1)" | tee -a "$S"
  done
  OUT=$OUT/forward CONV_ONLY=forward CONV_FUSEC_VARIANTS="FUSEC_CONV_POINTWISE_ROWS=1;FUSEC_CONV_IM2COL=0" \
    timeout 240 python3 bench/convnets.py > "$OUT/layers.log" 2>&1
  echo "layers rc=$? ($(el))" | tee -a "$S"
  OUT=$OUT/models CONV_ONLY=models CONV_MODELS=resnet-50 CONV_FUSEC_VARIANTS="FUSEC_CONV_POINTWISE_ROWS=1" \
    timeout 200 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))" | tee -a "$S"
  (cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
  echo "== summary ($(el))"; cat "$S"; sed -n '/^layer channels/,/^model/p' "$OUT/layers.log"; sed -n "/^model /,\$p" "$OUT/models.log"
  exit 0
fi
if [ "${PART:-a}" = c ]; then
  OUT=$OUT/models CONV_ONLY=models timeout 200 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))" | tee -a "$S"
  transposes FUSEC_TRANSPOSE_NARROW=0
  OUT=$OUT/forward CONV_ONLY=forward timeout 120 python3 bench/convnets.py > "$OUT/layers.log" 2>&1
  echo "layers rc=$? ($(el))" | tee -a "$S"
  echo "== summary ($(el))"; cat "$S"; sed -n "/^model /,\$p" "$OUT/models.log"; sed -n '/^layer channels/,/^model/p' "$OUT/layers.log"
  exit 0
fi
pass=0; fail=0
for t in test/lit/Passes/conv-im2col.mlir test/lit/Passes/conv-shared-pad.mlir test/lit/Passes/conv-transposed.mlir test/lit/Passes/conv-pointwise-filter.mlir examples/resblock.mlir examples/convnet.mlir; do
  for f in $(grep -o 'func.func @[A-Za-z0-9_]*' $t | cut -d@ -f2); do
    [ "$f" = tail ] && continue
    if FUSEC_CONV_IM2COL=1 timeout 180 "$D/bin/fusec-run" $t --function=$f --runs=2 --warmup=1 >> "$L/conv-check.log" 2>&1; then
      pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL [im2col] $t @$f" | tee -a "$S"; fi
  done
done
echo "convolutions by im2col on the GPU against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
for f in tiles s3mixed; do
  FUSEC_CONV_IM2COL=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" \
    test/lit/Passes/conv-im2col.mlir --function=$f --runs=1 --warmup=0 > "$L/memcheck-$f.log" 2>&1
  echo "@$f under memcheck: rc=$? $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$L/memcheck-$f.log" | tail -1)" | tee -a "$S"
done
OUT=$OUT/forward CONV_ONLY=forward CONV_FUSEC_VARIANTS="FUSEC_CONV_IM2COL=1" timeout 240 \
  python3 bench/convnets.py > "$OUT/layers.log" 2>&1
echo "layers rc=$? ($(el))" | tee -a "$S"
if [ $(( $(date +%s) - t0 )) -lt "${MODELS_BEFORE:-330}" ]; then
  OUT=$OUT/models CONV_ONLY=models CONV_MODELS=resnet-50 CONV_FUSEC_VARIANTS="FUSEC_CONV_IM2COL=1" \
    timeout 220 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))" | tee -a "$S"
else
  echo "models skipped: $(el) elapsed" | tee -a "$S"
fi
if [ $(( $(date +%s) - t0 )) -lt "${TRANSPOSE_BEFORE:-500}" ]; then
  for i in 1 2; do transposes FUSEC_TRANSPOSE_NARROW=1; done
fi
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"; cat "$S"; sed -n '/^layer /,$p' "$OUT/layers.log"; sed -n "/^model /,\$p" "$OUT/models.log" 2>/dev/null
python3 -c "import json; r=json.load(open('$OUT/models/convnets.json'))['models'][0]; print({k: r.get(k) for k in ('fusec_ms','fusec_kernels','compile_ms','compile_ro_ms','eager_ms','speedup_vs_best_compile','rel_l2_vs_torch','variants')})" 2>&1 | tail -3
