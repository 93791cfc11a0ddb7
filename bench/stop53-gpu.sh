#!/usr/bin/env bash
# Stop 53's calls (#15).
#   PART=t bash bench/stop53-gpu.sh   transpose_tiled with vectors and
#     narrow tiles: every tiled transpose of test/lit against the
#     interpreter, transposes of every element type at odd, even and
#     narrow shapes, memcheck on two; then fusec alone, the plan against
#     FUSEC_TRANSPOSE_VECTOR=1 (an element a thread) and
#     FUSEC_TRANSPOSE_NARROW=1 (tiles as narrow as the last dim), twice;
#     then the suite's matrix_transpose row. (run2 ran it before the
#     narrow tiles, without that variant and the narrow shapes.) QUICK=1:
#     the timings once, no suite row. NARROW=1: the checks under
#     FUSEC_TRANSPOSE_NARROW=1 (what must pass before it is the default).
# The whole memory-bound suite at HEAD, in two halves (each within the
# device tool's 600 s a command; the copy ceiling is measured again by
# each):
#   PART=1 bash bench/stop53-gpu.sh   rows from residual_layer_norm to head_transpose_scale
#   PART=2 bash bench/stop53-gpu.sh   rows from matrix_transpose to softmax_backward
# Needs .device/ from
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tsan-tests" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
if [ "${PART:-1}" = t ]; then
  S=$OUT/summary.txt; : > "$S"; L=$OUT/logs; mkdir -p "$L"; pass=0; fail=0
  check() { # label, fusec-run arguments...
    local label=$1; shift
    if timeout 180 "$D/bin/fusec-run" "$@" --runs=2 --warmup=1 >> "$L/check.log" 2>&1; then
      pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $label" | tee -a "$S"; fi
  }
  [ "${NARROW:-0}" = 1 ] && export FUSEC_TRANSPOSE_NARROW=1
  for t in test/lit/CodeGen/transpose-tiled.mlir test/lit/Passes/fold-movement-consumer.mlir; do
    for f in $(grep -o 'func.func @[A-Za-z0-9_]*' $t | cut -d@ -f2); do check "$t @$f" $t --function=$f; done
  done
  M=$(mktemp -d)
  python3 - "$M" <<'PY'
import sys
d = sys.argv[1]
def tt(shape, dt): return "tensor<" + "x".join(map(str, shape)) + "x" + dt + ">"
n = 0
for dt in ["f32", "bf16", "f16", "f8E4M3FN", "f8E5M2", "i32", "i64", "i1"]:
    for r, c in [(136, 200), (64, 64), (1000, 24), (24, 1000), (130, 100), (17, 33), (4096, 2056),
                 (16, 4096), (12, 520), (32, 1000)]:
        X, O = tt([r, c], dt), tt([c, r], dt)
        open(f"{d}/t{n}_{dt}_{r}x{c}.mlir", "w").write(
            f"func.func @t(%x: {X}) -> {O} {{\n  %y = fusec.transpose %x perm [1, 0] : {X} -> {O}\n  return %y : {O}\n}}\n")
        n += 1
for shape, perm in [([2, 96, 4, 64], [0, 3, 2, 1]), ([3, 40, 5, 48], [0, 2, 3, 1]), ([2, 8, 256, 64], [0, 1, 3, 2]),
                    ([2, 96, 16, 256], [0, 3, 1, 2]), ([3, 50, 8, 136], [0, 3, 1, 2]), ([2, 70, 32, 64], [0, 3, 1, 2])]:
    out = [shape[p] for p in perm]
    X, O, F = tt(shape, "bf16"), tt(out, "bf16"), tt(out, "f32")
    open(f"{d}/h{n}_{'x'.join(map(str, shape))}.mlir", "w").write(
        f"func.func @h(%x: {X}, %s: {F}) -> ({F}, {O}) {{\n"
        f"  %t = fusec.transpose %x perm [{', '.join(map(str, perm))}] : {X} -> {O}\n"
        f"  %c = fusec.cast %t : {O} to {F}\n  %y = fusec.mul %c, %s : {F}\n"
        f"  %k = fusec.constant dense<0.5> : {O}\n  %z = fusec.mul %t, %k : {O}\n"
        f"  return %y, %z : {F}, {O}\n}}\n")
    n += 1
PY
  for f in "$M"/*.mlir; do check "$(basename $f .mlir)" "$f"; done
  echo "transposes on the GPU against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
  for f in $(ls "$M"/t*_bf16_136x200.mlir "$M"/t*_f8E4M3FN_1000x24.mlir); do
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" "$f" \
      --runs=1 --warmup=0 > "$L/memcheck-$(basename $f .mlir).log" 2>&1
    echo "$(basename $f .mlir) under memcheck: rc=$? $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$L/memcheck-$(basename $f .mlir).log" | tail -1)" | tee -a "$S"
  done
  python3 - "$M" <<'PY'
import sys
d = sys.argv[1]
def tt(shape, dt): return "tensor<" + "x".join(map(str, shape)) + "x" + dt + ">"
for name, shape, perm, dt in [("mt_bf16", [16384, 8192], [1, 0], "bf16"), ("mt_f32", [8192, 8192], [1, 0], "f32"),
                              ("mt_f8", [16384, 16384], [1, 0], "f8E4M3FN"),
                              ("bshd_bdsh", [8, 2048, 16, 128], [0, 3, 1, 2], "bf16"),
                              ("bshd_bdsh32", [8, 2048, 32, 128], [0, 3, 1, 2], "bf16"),
                              ("bshd_bdsh8_f32", [8, 2048, 8, 128], [0, 3, 1, 2], "f32")]:
    out = [shape[p] for p in perm]
    X, O = tt(shape, dt), tt(out, dt)
    open(f"{d}/big_{name}.mlir", "w").write(
        f"func.func @t(%x: {X}) -> {O} {{\n  %y = fusec.transpose %x perm [{', '.join(map(str, perm))}] : {X} -> {O}\n  return %y : {O}\n}}\n")
PY
  for f in "$M"/big_*.mlir; do
    variants="X=default FUSEC_TRANSPOSE_VECTOR=1 FUSEC_TRANSPOSE_NARROW=1"
    [ "${QUICK:-0}" = 1 ] || variants="$variants $variants"
    for v in $variants; do
      r=$(env $v "$D/bin/fusec-run" "$f" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
      python3 -c "import json,sys; j=json.loads(sys.argv[1]); print(f\"{sys.argv[2]} [{sys.argv[3]}]: {j['end_to_end_ms']*1e3:.1f} us; \" + ', '.join(f\"{k['strategy']} {k['median_ms']*1e3:.1f} us {k['gb_per_s']:.0f} GB/s\" for k in j['kernels']))" "$r" "$(basename $f .mlir)" "$v" 2>&1 | tail -1 | tee -a "$S"
    done
  done
  [ "${QUICK:-0}" = 1 ] || SUITE_ONLY=matrix_transpose timeout 200 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
  echo "suite rc=$? ($(el))" | tee -a "$S"
  (cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
  echo "== summary ($(el))"; cat "$S"; [ -f "$OUT/suite.log" ] && sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
  exit 0
fi
case ${PART:-1} in
1) rows=residual_layer_norm,rms_norm_residual,softmax_f32,logsumexp,masked_softmax,cross_entropy,column_sum,batch_norm_stats,batch_norm_stats_nhwc,mean_pool,head_split,head_merge,head_transpose_scale ;;
*) rows=matrix_transpose,swiglu_packed,geglu_packed,kv_cache_concat,cast_bf16_scaled,cast_fp8_scaled,row_quant_fp8,embedding_gather,tanh_gelu_f16,gelu_bias_residual,rope,adam_step,softmax_backward ;;
esac
SUITE_ONLY=$rows timeout 540 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? ($(el))"
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
