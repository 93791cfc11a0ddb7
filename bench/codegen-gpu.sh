#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: the checks
# and the benchmark of generated memory-bound kernels (issue #6), with the
# static fusec-run and fusec-jit-tests that
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh
# put in .device/. Full results under $OUT (bench/out without it); a short
# table last. Env: MEMORY_BOUND_VARIANTS=0 skips the stream-load variants of
# the elementwise graphs.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
BIN="$D/bin"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_SOURCE_DIR="$PWD"
export FUSEC_CACHE_DIR="$(mktemp -d)/fusec-cache"
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
step() { # name, command...
  local name=$1; shift
  local start=$(date +%s%N)
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  note "$(printf '%-26s rc=%-3s %8d ms' "$name" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))")"
}
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"

step jit-tests "$BIN/fusec-jit-tests"
# Row kernels of each strategy under memcheck and racecheck (the CTA-wide
# ones share partial sums through shared memory).
row() { # name rows cols dtype
  python3 -c "import sys; sys.path.insert(0, 'bench'); import memory_bound as m; print(m.row_mlir('$1', $2, $3, '$4'))" \
    > "$OUT/$1_$2x$3_$4.mlir"
}
row layer_norm 7 5000 bf16      # row_cta, partial last chunk
row softmax 3 50304 bf16        # row_cta, 1024 threads
row rms_norm 9 1024 bf16        # row_warp
row softmax 2 50304 f32         # row_stream
for g in layer_norm_7x5000_bf16 softmax_3x50304_bf16 rms_norm_9x1024_bf16 softmax_2x50304_f32; do
  if command -v compute-sanitizer >/dev/null; then
    step "memcheck-$g" compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$BIN/fusec-run" "$OUT/$g.mlir" --runs=2 --warmup=1
    step "racecheck-$g" compute-sanitizer --tool racecheck --error-exitcode 3 \
      "$BIN/fusec-run" "$OUT/$g.mlir" --runs=1 --warmup=0
  else
    step "run-$g" "$BIN/fusec-run" "$OUT/$g.mlir"
  fi
done
PYTHONUNBUFFERED=1 FUSEC_BIN="$BIN" step memory-bound python3 bench/memory_bound.py

echo
echo "== generated kernels: correctness and speed"
grep -E "^correctness: |FAIL" "$OUT/memory-bound.log" | head -20
sed -n '/^copy ceiling/,$p' "$OUT/memory-bound.log"
echo
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/memcheck-*.log "$OUT"/racecheck-*.log 2>/dev/null | sort | uniq -c
grep -h "PASSED\|FAILED" "$OUT/jit-tests.log" | tail -3
(cd "$OUT" && tar -czf logs.tar.gz *.log *.mlir && rm -f *.log *.mlir)
echo
echo "== steps"
cat "$summary"
