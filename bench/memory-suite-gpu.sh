#!/usr/bin/env bash
# Runs on the GPU machine (device tool, `carry: [".device"]`) from the
# repository root: the memory-bound suite of issue #15 with the static tools
#   FUSEC_GPU_TOOLS="fusec-run fusec-opt fusec-jit-tests" bash bench/stage-gpu.sh
# put in .device/. In one call:
# 1. every graph of bench/memory_graphs.py at its small (CI) size on the GPU
#    against the interpreter, under compute-sanitizer memcheck, and racecheck
#    for the strategies that share memory across threads;
# 2. bench/memory_bound_suite.py: agreement with PyTorch, then fusec, eager,
#    TorchInductor and XLA at the benchmark sizes;
# 3. SUITE_VARIANTS (optional, `NAME:ENV=VALUE,...;...`): a graph timed again
#    under other code-generation switches (for measurement).
# Full results under $OUT; a short table last.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-run" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
BIN="$D/bin"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_CACHE_DIR="${FUSEC_CACHE_DIR:-$(mktemp -d)/fusec-cache}"
export PYTHONUNBUFFERED=1
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
  python3 -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -1
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"

# 1. Small sizes on the GPU, under the sanitizers.
small="$OUT/small"
mkdir -p "$small"
python3 - "$small" <<'EOF'
import os, sys
sys.path.insert(0, "bench")
import memory_graphs
for g, size in memory_graphs.graphs("small"):
    open(os.path.join(sys.argv[1], g.name + ".mlir"), "w").write(g.mlir())
EOF
pass=0; fail=0
: > "$OUT/sanitizers.log"
for f in "$small"/*.mlir; do
  name=$(basename "$f" .mlir)
  if timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$BIN/fusec-run" "$f" --runs=2 --warmup=1 >> "$OUT/sanitizers.log" 2>&1; then
    r1=ok
  else r1=FAIL; fi
  # racecheck where threads share memory (tiles, partials): the strategies
  # other than elementwise and movement.
  if ! "$BIN/fusec-opt" "$f" --fusec-pipeline 2>/dev/null | grep -q 'strategy = \(transpose_tiled\|column\|row_\)'; then
    r2=skipped
  elif timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 \
      "$BIN/fusec-run" "$f" --runs=1 --warmup=0 >> "$OUT/sanitizers.log" 2>&1; then
    r2=ok
  else r2=FAIL; fi
  echo "small $name: memcheck $r1, racecheck $r2" | tee -a "$OUT/small.txt"
  if [ $r1 = ok ] && [ $r2 != FAIL ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "small sizes on the GPU under memcheck (and racecheck where threads share memory): $pass passed, $fail failed" | tee -a "$OUT/small.txt"

# The JIT's GPU tests.
timeout 120 "$BIN/fusec-jit-tests" > "$OUT/jit-tests.log" 2>&1
echo "jit tests: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/jit-tests.log" | tr '\n' ' ')" | tee -a "$OUT/small.txt"

# Every function of the example graphs on the GPU against the interpreter.
pass=0; fail=0
for g in examples/memory_bound.mlir examples/transformer_block.mlir; do
  for f in $(grep -o 'func.func @[A-Za-z0-9_]*' "$g" | cut -d@ -f2); do
    extra=(); [ "$f" = transformer_block ] && extra=(--max-rel-l2=1e-2)
    if timeout 120 "$BIN/fusec-run" "$g" --function="$f" --runs=2 --warmup=1 "${extra[@]}" >> "$OUT/examples.log" 2>&1; then
      pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL example $g @$f" | tee -a "$OUT/small.txt"; fi
  done
done
echo "examples on the GPU: $pass passed, $fail failed" | tee -a "$OUT/small.txt"

# A split column reduction at its benchmark size against the interpreter
# (the CI sizes are too small to split).
python3 - "$OUT/colsplit.mlir" <<'EOF'
import sys
sys.path.insert(0, "bench")
import memory_graphs
open(sys.argv[1], "w").write(memory_graphs.column_sum(dict(rows=16384, cols=4096)).mlir())
EOF
timeout 120 "$BIN/fusec-run" "$OUT/colsplit.mlir" --runs=1 --warmup=0 > "$OUT/colsplit.log" 2>&1
echo "column_sum 16384x4096 (split) on the GPU against the interpreter: rc=$? $(grep -o 'result #0: [^(]*' "$OUT/colsplit.log")" | tee -a "$OUT/small.txt"
rm -f "$OUT/colsplit.mlir"

# 2. The suite.
FUSEC_BIN="$BIN" OUT="$OUT" timeout 480 python3 bench/memory_bound_suite.py 2>&1 | tee "$OUT/suite.log"

# 3. Variants.
if [ -n "${SUITE_VARIANTS:-}" ]; then
  python3 bench/memory_bound_suite.py --write "$OUT/bench-graphs" >/dev/null
  IFS=';' read -ra vs <<< "$SUITE_VARIANTS"
  for v in "${vs[@]}"; do
    name=${v%%:*}; envs=${v#*:}
    for f in "$OUT/bench-graphs/${name}_"*.mlir; do
      r=$(env ${envs//,/ } "$BIN/fusec-run" "$f" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
      python3 - "$f" "$envs" "$r" <<'EOF' | tee -a "$OUT/variants.txt"
import json, os, sys
f, envs, r = sys.argv[1:4]
try:
    j = json.loads(r)
    print(f"variant {os.path.basename(f)} [{envs}]: {j['end_to_end_ms']:.4f} ms; " +
          ", ".join(f"{k['strategy']} {k['median_ms']:.4f} ms {k['gb_per_s']:.0f} GB/s" for k in j["kernels"]))
except Exception as e:
    print(f"variant {os.path.basename(f)} [{envs}]: failed ({e}): {r[-200:]}")
EOF
    done
  done
fi
rm -rf "$OUT/bench-graphs"
(cd "$OUT" && tar -czf small.tar.gz small sanitizers.log examples.log jit-tests.log colsplit.log && rm -rf small sanitizers.log examples.log jit-tests.log colsplit.log)
echo
echo "== summary"
grep -E "passed|FAIL" "$OUT/small.txt"
[ -f "$OUT/variants.txt" ] && cat "$OUT/variants.txt"
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
