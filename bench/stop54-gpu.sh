#!/usr/bin/env bash
# Stop 54's calls (#15, #18).
#   PART=a bash bench/stop54-gpu.sh
#     1. stop 53's transpose checks and timings under the narrow tiles
#        (NARROW=1 QUICK=1 PART=t bash bench/stop53-gpu.sh), under $OUT/transpose;
#     2. convolutions against the interpreter on the GPU, with the grid's
#        shared padding (the default): every function of
#        test/lit/Passes/conv-shared-pad.mlir (and, since run1,
#        conv-pointwise-filter.mlir) and the two convolution
#        examples; memcheck on two;
#     3. the transposed layers against cuDNN, also under
#        FUSEC_CONVT_STACKED=0 (a convolution a phase) and =2 (phases with
#        different taps stacked too; run1 ran without it and without the
#        3x3 stride-2 layer), then ResNet-50's
#        layers (bench/convnets.py), each also channels last, and that
#        under FUSEC_CONV_SHARED_PAD=0.
#   PART=b bash bench/stop54-gpu.sh   same-run A/B, alternated twice:
#     ResNet's 3x3 layers channels last with and without the shared padding,
#     and head transposes with and without FUSEC_TRANSPOSE_NARROW=1; then
#     ResNet-50 end to end (bench/convnets.py), also under
#     FUSEC_CONV_SHARED_PAD=0 (NO_MODELS=1: the A/B alone).
#   PART=1 / PART=2: the memory-bound suite's halves (bench/stop53-gpu.sh).
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
case ${PART:-a} in a|b) ;; *) exec bash bench/stop53-gpu.sh ;; esac
source bench/gpu-env.sh
if [ "$PART" = b ]; then
  # Same-run A/B, alternated twice: the 3x3 layers channels last with
  # and without the shared padding; head transposes with and without the
  # narrow tiles (run1 ran every variant under FUSEC_TRANSPOSE_NARROW=1).
  S=$OUT/summary.txt; : > "$S"; M=$(mktemp -d)
  python3 - "$M" <<'PY'
import sys
d = sys.argv[1]
for c, k, h in [(64, 64, 56), (128, 128, 28), (256, 256, 14), (512, 512, 7)]:
    X, XH = f"tensor<32x{c}x{h}x{h}xf16>", f"tensor<32x{h}x{h}x{c}xf16>"
    W, Y, YH = f"tensor<{k}x{c}x3x3xf16>", f"tensor<32x{k}x{h}x{h}xf16>", f"tensor<32x{h}x{h}x{k}xf16>"
    open(f"{d}/conv3x3_{c}_{h}.mlir", "w").write(
        f"func.func @conv(%xh: {XH}, %w: {W}) -> {YH} {{\n"
        f"  %x = fusec.transpose %xh perm [0, 3, 1, 2] : {XH} -> {X}\n"
        f"  %y = fusec.conv %x, %w {{pad_low = array<i64: 1, 1>, pad_high = array<i64: 1, 1>}} : ({X}, {W}) -> {Y}\n"
        f"  %yh = fusec.transpose %y perm [0, 2, 3, 1] : {Y} -> {YH}\n  return %yh : {YH}\n}}\n")
def tt(shape, dt): return "tensor<" + "x".join(map(str, shape)) + "x" + dt + ">"
for name, shape in [("bshd_bdsh16", [8, 2048, 16, 128]), ("bshd_bdsh32", [8, 2048, 32, 128])]:
    out = [shape[p] for p in [0, 3, 1, 2]]
    X, O = tt(shape, "bf16"), tt(out, "bf16")
    open(f"{d}/t_{name}.mlir", "w").write(
        f"func.func @t(%x: {X}) -> {O} {{\n  %y = fusec.transpose %x perm [0, 3, 1, 2] : {X} -> {O}\n  return %y : {O}\n}}\n")
PY
  one() { # label, env assignment, file
    r=$(env $2 "$D/bin/fusec-run" "$3" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
    python3 -c "import json,sys; j=json.loads(sys.argv[1]); print(f\"{sys.argv[2]} [{sys.argv[3]}]: {sum(k['median_ms'] for k in j['kernels'])*1e3:.1f} us; \" + ', '.join(f\"{k['name']} {k['median_ms']*1e3:.1f}\" for k in j['kernels']))" "$r" "$1" "$2" 2>&1 | tail -1 | tee -a "$S"
  }
  for i in 1 2; do
    for f in "$M"/conv3x3_*.mlir; do
      for v in X=default FUSEC_CONV_SHARED_PAD=0; do one "$(basename $f .mlir)" $v $f; done
    done
    for f in "$M"/t_*.mlir; do
      for v in X=default FUSEC_TRANSPOSE_NARROW=1; do one "$(basename $f .mlir)" $v $f; done
    done
  done
  echo "A/B done ($(el))" | tee -a "$S"
  [ "${NO_MODELS:-0}" = 1 ] && { echo "== summary"; cat "$S"; exit 0; }
  OUT=$OUT/models CONV_ONLY=models CONV_MODELS=resnet-50 CONV_FUSEC_VARIANTS="FUSEC_CONV_SHARED_PAD=0" \
    timeout 300 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))" | tee -a "$S"
  echo "== summary"; cat "$S"; grep "^{" "$OUT/models.log" | cut -c1-600; sed -n "/^model /,\$p" "$OUT/models.log"
  python3 -c "import json; r=json.load(open('$OUT/models/convnets.json'))['models'][0]; print({k: r.get(k) for k in ('fusec_ms','fusec_kernels','compile_ms','compile_ro_ms','eager_ms','speedup_vs_best_compile','rel_l2_vs_torch','variants','kernel_ms_by_kind')})" 2>&1 | tail -3
  exit 0
fi
S=$OUT/summary.txt; : > "$S"; L=$OUT/logs; mkdir -p "$L"
OUT=$OUT/transpose NARROW=1 QUICK=1 PART=t timeout 170 bash bench/stop53-gpu.sh > "$L/transpose.log" 2>&1
echo "transposes (narrow tiles): rc=$? ($(el))" | tee -a "$S"
sed -n '/== summary/,$p' "$L/transpose.log" | tee -a "$S"
pass=0; fail=0
for v in X=default; do
  for t in test/lit/Passes/conv-shared-pad.mlir test/lit/Passes/conv-transposed.mlir test/lit/Passes/conv-pointwise-filter.mlir examples/resblock.mlir examples/convnet.mlir; do
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
OUT=$OUT/transposed CONV_ONLY=transposed CONV_FUSEC_VARIANTS="FUSEC_CONVT_STACKED=0;FUSEC_CONVT_STACKED=2" timeout 130 \
  python3 bench/convnets.py > "$OUT/transposed.log" 2>&1
echo "transposed layers rc=$? ($(el))" | tee -a "$S"
OUT=$OUT/forward CONV_ONLY=forward CONV_FUSEC_VARIANTS="FUSEC_CONV_SHARED_PAD=0" timeout 200 \
  python3 bench/convnets.py > "$OUT/layers.log" 2>&1
echo "layers rc=$? ($(el))" | tee -a "$S"
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"; cat "$S"; sed -n '/^layer /,$p' "$OUT/transposed.log" "$OUT/layers.log"
