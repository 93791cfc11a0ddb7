#!/usr/bin/env bash
# Stop 50's GPU call (#15): row_stream's merged passes and one-exp online
# softmax, and long reduction-only rows streamed (cross-entropy).
#  1. Correctness: the functions of test/lit/CodeGen/row-stream.mlir
#     (softmax over 50304, MeanVarianceNormalization's dims apart, and
#     cross-entropy over 50304 bf16, now one streamed pass) and every
#     function of examples/memory_bound.mlir on the GPU against the
#     interpreter; cross-entropy and logsumexp of 24 rows at vocabularies
#     of 50304, 50257 and 32000 against the interpreter; memcheck on three.
#  2. The whole memory-bound suite (bench/memory_bound_suite.py) beside
#     eager, Inductor and XLA.
#  3. cross_entropy at its benchmark size with FUSEC_ROW_STREAM_LONG=0
#     (its row in a 1024-thread CTA's registers, the old plan), streamed an
#     element a lane (FUSEC_ROW_STREAM_VECTOR=1) and streamed 16 bytes a
#     lane (the default), fusec alone, back to back, twice; f32 logsumexp
#     streamed an element and 16 bytes a lane.
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
S=$OUT/summary.txt; : > "$S"
L=$OUT/logs; mkdir -p "$L"
pass=0; fail=0
for f in softmax_long mvn cross_entropy; do
  if timeout 120 "$D/bin/fusec-run" test/lit/CodeGen/row-stream.mlir --function=$f --runs=2 --warmup=1 >> "$L/rowstream.log" 2>&1; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL row-stream @$f" | tee -a "$S"; fi
done
# Streamed rows at the vocabulary widths of real models (8-column runs for
# 50304 and 32000, scalar for GPT-2's odd 50257) against the interpreter.
M=$(mktemp -d)
python3 - "$M" <<'PY'
import sys
sys.path.insert(0, "bench")
import memory_graphs as m
d = sys.argv[1]
for v in (50304, 50257, 32000):
    open(f"{d}/ce_{v}.mlir", "w").write(m.cross_entropy(dict(rows=24, vocab=v)).mlir())
    open(f"{d}/lse_{v}.mlir", "w").write(m.logsumexp(dict(rows=24, cols=v)).mlir())
PY
for f in "$M"/*.mlir; do
  if timeout 120 "$D/bin/fusec-run" "$f" --runs=2 --warmup=1 >> "$L/vocab.log" 2>&1; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $(basename $f)" | tee -a "$S"; fi
done
for f in $(grep -o 'func.func @[A-Za-z0-9_]*' examples/memory_bound.mlir | cut -d@ -f2); do
  if timeout 120 "$D/bin/fusec-run" examples/memory_bound.mlir --function=$f --runs=2 --warmup=1 >> "$L/examples.log" 2>&1; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL example @$f" | tee -a "$S"; fi
done
echo "row-stream.mlir and examples/memory_bound.mlir on the GPU against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
for f in "$M/ce_50304.mlir" "$M/lse_50304.mlir" "$M/ce_50257.mlir"; do
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" "$f" \
    --runs=1 --warmup=0 > "$L/memcheck-$(basename $f .mlir).log" 2>&1
  echo "$(basename $f .mlir) under memcheck: rc=$? $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$L/memcheck-$(basename $f .mlir).log" | tail -1)" | tee -a "$S"
done
FUSEC_BIN="$D/bin" OUT="$OUT" timeout 420 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? ($(el))" | tee -a "$S"
# One line from fusec-run --json: "LABEL [ENV]: each kernel's median and bandwidth".
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
G=$(mktemp -d)
python3 - "$G/ce.mlir" <<'PY'
import sys
sys.path.insert(0, "bench")
import memory_graphs
open(sys.argv[1], "w").write(memory_graphs.cross_entropy(dict(rows=8192, vocab=50304)).mlir())
PY
python3 - "$G/lse.mlir" <<'PY'
import sys
sys.path.insert(0, "bench")
import memory_graphs
open(sys.argv[1], "w").write(memory_graphs.logsumexp(dict(rows=8192, cols=50304)).mlir())
PY
for v in "FUSEC_ROW_STREAM_LONG=0" "FUSEC_ROW_STREAM_VECTOR=1" "FUSEC_ROW_STREAM_LONG=1" \
         "FUSEC_ROW_STREAM_LONG=0" "FUSEC_ROW_STREAM_VECTOR=1" "FUSEC_ROW_STREAM_LONG=1"; do
  r=$(env $v "$D/bin/fusec-run" "$G/ce.mlir" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
  report "cross_entropy 8192x50304" "$v" "$r"
done
for v in "FUSEC_ROW_STREAM_VECTOR=1" "FUSEC_ROW_STREAM_VECTOR=4" "FUSEC_ROW_STREAM_VECTOR=1" "FUSEC_ROW_STREAM_VECTOR=4"; do
  r=$(env $v "$D/bin/fusec-run" "$G/lse.mlir" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
  report "logsumexp f32 8192x50304" "$v" "$r"
done
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"
cat "$S"
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
