#!/usr/bin/env bash
# Device call 3 (#15): the whole memory-bound suite beside eager, Inductor
# and XLA (bench/memory_bound_suite.py, agreement with PyTorch first), after
# the sanitizers over the new grouped variances at mid sizes and the
# example graphs' functions on the GPU against the interpreter.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
{ date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
  python3 -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -1; } > "$OUT/machine.txt"
t0=$(date +%s)
G=$(mktemp -d)
python3 - "$G" <<'PY'
import sys
sys.path.insert(0, "bench")
import memory_graphs as m
d = sys.argv[1]
open(f"{d}/bn_nchw_mid.mlir", "w").write(m.batch_norm_stats(dict(n=16, c=64, h=32, w=32)).mlir())
open(f"{d}/bn_nhwc_mid.mlir", "w").write(m.batch_norm_stats_nhwc(dict(n=8, h=28, w=28, c=64)).mlir())
open(f"{d}/bn_nhwc_big.mlir", "w").write(m.batch_norm_stats_nhwc(dict(n=32, h=56, w=56, c=64)).mlir())
open(f"{d}/colsum_mid.mlir", "w").write(m.column_sum(dict(rows=8192, cols=1000)).mlir())
PY
for f in "$G"/*.mlir; do
  n=$(basename $f .mlir)
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" "$f" --runs=1 --warmup=0 > "$OUT/san-$n.log" 2>&1; a=$?
  timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 "$D/bin/fusec-run" "$f" --runs=1 --warmup=0 >> "$OUT/san-$n.log" 2>&1; b=$?
  echo "sanitizers $n: memcheck rc=$a racecheck rc=$b; $(grep -c 'matches the reference' "$OUT/san-$n.log") result checks matched" | tee -a "$OUT/small.txt"
done
pass=0; fail=0
for f in $(grep -o 'func.func @[A-Za-z0-9_]*' examples/memory_bound.mlir | cut -d@ -f2); do
  if timeout 60 "$D/bin/fusec-run" examples/memory_bound.mlir --function="$f" --runs=2 --warmup=1 >> "$OUT/examples.log" 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL example @$f" | tee -a "$OUT/small.txt"; fi
done
echo "examples/memory_bound.mlir on the GPU against the interpreter: $pass passed, $fail failed" | tee -a "$OUT/small.txt"
echo "checks $(( $(date +%s) - t0 )) s"
(cd "$OUT" && tar -czf logs.tar.gz san-*.log examples.log && rm -f san-*.log examples.log)
OUT=$OUT timeout $(( 570 - ($(date +%s) - t0) )) python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? $(( $(date +%s) - t0 )) s"
echo "== summary"
cat "$OUT/small.txt"
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
