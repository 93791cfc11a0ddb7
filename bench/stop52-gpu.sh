#!/usr/bin/env bash
# Stop 52's GPU call: the column Welford pair (#15) after its warp combine
# went lane by lane (128 registers a thread at 8 lanes, not 255: two CTAs
# an SM), the JIT under ThreadSanitizer (#19).
#  1. Correctness against the interpreter, as stop 51: the functions of
#     test/lit/Passes/decompose-variance.mlir and test/lit/CodeGen/columns.mlir,
#     channels-last BatchNorm statistics (bench/memory_graphs.py) at odd
#     shapes (3 to 256 channels, 70 to 200,704 rows: unsplit and split
#     column kernels, the groups where the channels are fewer than 32), and
#     statistics of data far from 0 (x + 1000: the shift's conditioning);
#     memcheck on two.
#  2. Channels-last BatchNorm statistics at five shapes, fusec alone, the
#     pair (default) beside FUSEC_COLUMN_SHIFTED=0 (the groups of
#     fusec-decompose, three kernels) and the pair's geometry variants
#     (rows in flight, registers, groups, CTAs an SM), twice; then the
#     suite's column and BatchNorm rows beside eager, Inductor and XLA.
#     The suite's bias-gradient column sums under the same knobs.
#  3. fusec-jit-tsan-tests under TSan (bench/reliability-gpu.sh PARTS=tsan).
# CONFIRM=1: steps 1 and 2 with the default and the groups only (no
# variants, no column-sum knobs or rows, no TSan).
# Needs .device/ from
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tsan-tests" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
S=$OUT/summary.txt; : > "$S"
L=$OUT/logs; mkdir -p "$L"
pass=0; fail=0
check() { # label, fusec-run arguments...
  local label=$1; shift
  if timeout 180 "$D/bin/fusec-run" "$@" --runs=2 --warmup=1 >> "$L/check.log" 2>&1; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $label" | tee -a "$S"; fi
}
# QUICK=1 (run3, little device time left): CONFIRM's checks without
# decompose-variance.mlir, memcheck on one 32-group pair, the default beside
# the groups once, no suite.
[ "${QUICK:-0}" = 1 ] && CONFIRM=1
for f in $([ "${QUICK:-0}" = 1 ] || grep -o 'func.func @[A-Za-z0-9_]*' test/lit/Passes/decompose-variance.mlir | cut -d@ -f2); do
  check "decompose-variance @$f" test/lit/Passes/decompose-variance.mlir --function=$f
done
for f in $(grep -o 'func.func @[A-Za-z0-9_]*' test/lit/CodeGen/columns.mlir | cut -d@ -f2); do
  check "columns @$f" test/lit/CodeGen/columns.mlir --function=$f
done
M=$(mktemp -d)
python3 - "$M" <<'PY'
import sys
sys.path.insert(0, "bench")
import memory_graphs as m
d = sys.argv[1]
for n, h, w, c in [(2, 5, 7, 40), (4, 9, 11, 64), (8, 17, 19, 96), (3, 33, 31, 72),
                   (16, 28, 28, 256), (64, 56, 56, 256), (2, 5, 7, 3), (32, 14, 14, 48),
                   (32, 56, 56, 64), (32, 28, 28, 512), (128, 7, 7, 2048)]:
    open(f"{d}/bn_{n}x{h}x{w}x{c}.mlir", "w").write(
        m.batch_norm_stats_nhwc(dict(n=n, h=h, w=w, c=c)).mlir())
for rows, c in [(16384, 4096), (65536, 1024)]:
    open(f"{d}/colsum_{rows}x{c}.mlir", "w").write(m.column_sum(dict(rows=rows, cols=c)).mlir())
for rows, c in [(300, 64), (20000, 128)]:
    T, F, V = f"tensor<{rows}x{c}xbf16>", f"tensor<{rows}x{c}xf32>", f"tensor<{c}xf32>"
    open(f"{d}/offset_{rows}x{c}.mlir", "w").write(f"""func.func @offset(%x: {T}) -> ({V}, {V}) {{
  %xf = fusec.cast %x : {T} to {F}
  %k = fusec.constant dense<1000.0> : {F}
  %y = fusec.add %xf, %k : {F}
  %m = fusec.reduce mean %y dims [0] : {F} -> {V}
  %mb = fusec.broadcast %m dims [1] : {V} -> {F}
  %d = fusec.sub %y, %mb : {F}
  %sq = fusec.mul %d, %d : {F}
  %v = fusec.reduce mean %sq dims [0] : {F} -> {V}
  return %m, %v : {V}, {V}
}}
""")
PY
for f in "$M"/*.mlir; do check "$(basename $f .mlir)" "$f"; done
echo "variance and column graphs on the GPU against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
memchecked="$M/bn_3x33x31x72.mlir $M/bn_16x28x28x256.mlir"
[ "${QUICK:-0}" = 1 ] && memchecked="$M/bn_32x28x28x512.mlir"
for f in $memchecked; do
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" "$f" \
    --runs=1 --warmup=0 > "$L/memcheck-$(basename $f .mlir).log" 2>&1
  echo "$(basename $f .mlir) under memcheck: rc=$? $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$L/memcheck-$(basename $f .mlir).log" | tail -1)" | tee -a "$S"
done
report() {
  python3 - "$@" <<'PY' | tee -a "$S"
import json, sys
label, v, r = sys.argv[1:4]
try:
    j = json.loads(r)
    print(f"{label} [{v}]: {j['end_to_end_ms']*1e3:.1f} us; " +
          ", ".join(f"{k['strategy']} {k['median_ms']*1e3:.1f} us {k['gb_per_s']:.0f} GB/s" for k in j["kernels"]))
except Exception as e:
    print(f"{label} [{v}]: failed ({e}): {r[-200:]}")
PY
}
for shape in 64x56x56x256 16x28x28x256 32x56x56x64 32x28x28x512 128x7x7x2048; do
  variants=("FUSEC_COLUMN_SHIFTED=1" "FUSEC_COLUMN_SHIFTED=0" "FUSEC_COLUMN_UNROLL=4"
            "FUSEC_COLUMN_MIN_CTAS=3 FUSEC_COLUMN_UNROLL=4" "FUSEC_COLUMN_GROUPS=16"
            "FUSEC_COLUMN_GROUPS=32" "FUSEC_COLUMN_CTAS_PER_SM=8"
            "FUSEC_COLUMN_SHIFTED=1" "FUSEC_COLUMN_SHIFTED=0")
  # CONFIRM=1 (run2, after the plan kept 32 groups for the pair): the
  # default beside the groups only, twice.
  [ "${CONFIRM:-0}" = 1 ] && variants=("FUSEC_COLUMN_SHIFTED=1" "FUSEC_COLUMN_SHIFTED=0"
            "FUSEC_COLUMN_SHIFTED=1" "FUSEC_COLUMN_SHIFTED=0")
  [ "${QUICK:-0}" = 1 ] && variants=("FUSEC_COLUMN_SHIFTED=1" "FUSEC_COLUMN_SHIFTED=0")
  for v in "${variants[@]}"; do
    r=$(env $v "$D/bin/fusec-run" "$M/bn_$shape.mlir" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
    report "bn_stats_nhwc $shape" "$v" "$r"
  done
done
# The bias-gradient column sums (0.94-0.99x Inductor in stop 50): the
# geometry's knobs around the plan.
for shape in $([ "${CONFIRM:-0}" = 1 ] || echo 16384x4096 65536x1024); do
  for v in "X=default" "FUSEC_COLUMN_GROUPS=8" "FUSEC_COLUMN_GROUPS=16" "FUSEC_COLUMN_GROUPS=32" \
           "FUSEC_COLUMN_CTAS_PER_SM=2" "FUSEC_COLUMN_CTAS_PER_SM=8" "FUSEC_COLUMN_UNROLL=8" \
           "FUSEC_COLUMN_UNROLL=8 FUSEC_COLUMN_CTAS_PER_SM=8" "FUSEC_COLUMN_UNROLL=16" "X=default"; do
    r=$(env $v "$D/bin/fusec-run" "$M/colsum_$shape.mlir" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
    report "column_sum $shape" "$v" "$r"
  done
done
rows=batch_norm_stats_nhwc,batch_norm_stats,column_sum
[ "${CONFIRM:-0}" = 1 ] && rows=batch_norm_stats_nhwc,batch_norm_stats
[ "${QUICK:-0}" = 1 ] || SUITE_ONLY=$rows FUSEC_BIN="$D/bin" OUT="$OUT" \
  timeout $([ "${CONFIRM:-0}" = 1 ] && echo 120 || echo 300) python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? ($(el))" | tee -a "$S"
if [ -x "$D/bin/fusec-jit-tsan-tests" ] && [ "${CONFIRM:-0}" != 1 ]; then
  OUT="$OUT/reliability" PARTS=tsan timeout 330 bash bench/reliability-gpu.sh > "$L/tsan.log" 2>&1
  echo "tsan step rc=$? ($(el))" | tee -a "$S"
  grep -h "fusec-jit-tsan-tests:" "$L/tsan.log" | tail -1 | tee -a "$S"
fi
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"
cat "$S"
[ -f "$OUT/suite.log" ] && sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
