#!/usr/bin/env bash
# Stop 51's GPU call: column variances as shifted sums (#15), the JIT under
# ThreadSanitizer (#19).
#  1. Correctness against the interpreter: the functions of
#     test/lit/Passes/decompose-variance.mlir and test/lit/CodeGen/columns.mlir,
#     channels-last BatchNorm statistics (bench/memory_graphs.py) at odd
#     shapes (3 to 256 channels, 70 to 200,704 rows: unsplit and split
#     column kernels, the groups where the channels are fewer than 32), and
#     statistics of data far from 0 (x + 1000: the shift's conditioning);
#     memcheck on two.
#  2. batch_norm_stats_nhwc at the suite's size, fusec alone: the shifted
#     pair (default), FUSEC_COLUMN_SHIFTED=0 (the groups, as before) and the
#     pair with two CTAs an SM (FUSEC_COLUMN_MIN_CTAS=2), back to back,
#     twice; then the suite's column and BatchNorm rows beside
#     eager, Inductor and XLA.
#  3. Where staged, fusec-jit-tsan-tests under TSan (bench/reliability-gpu.sh
#     PARTS=tsan).
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
for f in $(grep -o 'func.func @[A-Za-z0-9_]*' test/lit/Passes/decompose-variance.mlir | cut -d@ -f2); do
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
                   (16, 28, 28, 256), (64, 56, 56, 256), (2, 5, 7, 3), (32, 14, 14, 48)]:
    open(f"{d}/bn_{n}x{h}x{w}x{c}.mlir", "w").write(
        m.batch_norm_stats_nhwc(dict(n=n, h=h, w=w, c=c)).mlir())
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
for f in "$M/bn_3x33x31x72.mlir" "$M/bn_16x28x28x256.mlir"; do
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
for v in "FUSEC_COLUMN_SHIFTED=1" "FUSEC_COLUMN_SHIFTED=0" "FUSEC_COLUMN_MIN_CTAS=2" \
         "FUSEC_COLUMN_SHIFTED=1" "FUSEC_COLUMN_SHIFTED=0" "FUSEC_COLUMN_MIN_CTAS=2"; do
  r=$(env $v "$D/bin/fusec-run" "$M/bn_64x56x56x256.mlir" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
  report "batch_norm_stats_nhwc 64x56x56x256" "$v" "$r"
done
SUITE_ONLY=batch_norm_stats_nhwc,batch_norm_stats,column_sum FUSEC_BIN="$D/bin" OUT="$OUT" \
  timeout 300 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? ($(el))" | tee -a "$S"
if [ -x "$D/bin/fusec-jit-tsan-tests" ]; then
  OUT="$OUT/reliability" PARTS=tsan timeout 330 bash bench/reliability-gpu.sh > "$L/tsan.log" 2>&1
  echo "tsan step rc=$? ($(el))" | tee -a "$S"
  grep -h "fusec-jit-tsan-tests:" "$L/tsan.log" | tail -1 | tee -a "$S"
fi
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"
cat "$S"
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
