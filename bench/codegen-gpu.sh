#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: the checks
# and the benchmark of generated memory-bound kernels (issue #6), with the
# static fusec-run and fusec-jit-tests that
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh
# put in .device/. Full results under $OUT (bench/out without it); a short
# table last. Env: MEMORY_BOUND_VARIANTS=0 skips the stream-load variants of
# the elementwise graphs; EXAMPLES_ONLY=1 runs only the jit tests and the
# example graphs.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-run" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
BIN="$D/bin"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_SOURCE_DIR="$PWD"
export FUSEC_CACHE_DIR="${FUSEC_CACHE_DIR:-$(mktemp -d)/fusec-cache}"
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
step() { # name, command... (each under a time limit: a hung kernel must not eat the lease)
  local name=$1; shift
  local start=$(date +%s%N)
  if declare -F "$1" >/dev/null; then
    "$@" > "$OUT/$name.log" 2>&1 # a function of this script (its commands time out on their own)
  else
    timeout "${STEP_TIMEOUT:-300}" "$@" > "$OUT/$name.log" 2>&1
  fi
  local rc=$?
  note "$(printf '%-26s rc=%-3s %8d ms' "$name" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))")"
}
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"

# Every function of every example graph, on the GPU against the interpreter
# (exit 2 with "has no 'fusec.ptx'" or "is not inside a fusec.kernel": an op
# fusec does not generate code for yet).
examples() {
  local pass=0 fail=0 skip=0
  for g in examples/memory_bound.mlir examples/transformer_block.mlir examples/convnet.mlir examples/resblock.mlir; do
    for f in $(grep -o 'func.func @[A-Za-z0-9_]*' "$g" | cut -d@ -f2); do
      # The transformer block is four bf16 matmuls deep around the attention
      # intrinsic (bf16 P): compared by relative L2 (1.5e-3 measured).
      extra=(); [ "$f" = transformer_block ] && extra=(--max-rel-l2=1e-2)
      out=$(timeout 120 "$BIN/fusec-run" "$g" --function="$f" --runs=2 --warmup=1 "${extra[@]}" 2>&1); rc=$?
      if [ $rc = 0 ]; then pass=$((pass + 1)); echo "PASS $g @$f"
      elif [ $rc = 2 ] && grep -qE "has no 'fusec.ptx'|is not inside a fusec.kernel" <<<"$out"; then
        skip=$((skip + 1)); echo "SKIP $g @$f: $(grep -oE "[^ ]*: '[a-z.]*' (has no 'fusec.ptx'|is not inside a fusec.kernel)" <<<"$out" | head -1)"
      else fail=$((fail + 1)); echo "FAIL $g @$f (rc=$rc)"; echo "$out" | tail -5; fi
    done
  done
  echo "examples on the GPU: $pass passed, $fail failed, $skip skipped"
  [ $fail = 0 ]
}
# EXAMPLES_ONLY=1: only the example graphs (with the jit tests).
if [ "${EXAMPLES_ONLY:-0}" = 1 ]; then
  step jit-tests "$BIN/fusec-jit-tests"
  step examples examples
  grep -E "^(FAIL|SKIP)|examples on the GPU" "$OUT/examples.log"
  exit 0
fi
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
sed -n '/func.func @col_var/,/^}/p' examples/memory_bound.mlir > "$OUT/col_var.mlir"          # column
sed -n '/func.func @slice_concat/,/^}/p' examples/memory_bound.mlir > "$OUT/slice_concat.mlir" # movement
for g in layer_norm_7x5000_bf16 softmax_3x50304_bf16 rms_norm_9x1024_bf16 softmax_2x50304_f32 col_var slice_concat; do
  if command -v compute-sanitizer >/dev/null; then
    step "memcheck-$g" compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$BIN/fusec-run" "$OUT/$g.mlir" --runs=2 --warmup=1
    step "racecheck-$g" compute-sanitizer --tool racecheck --error-exitcode 3 \
      "$BIN/fusec-run" "$OUT/$g.mlir" --runs=1 --warmup=0
  else
    step "run-$g" "$BIN/fusec-run" "$OUT/$g.mlir"
  fi
done
step examples examples
STEP_TIMEOUT=560 PYTHONUNBUFFERED=1 FUSEC_BIN="$BIN" step memory-bound python3 bench/memory_bound.py

echo
echo "== generated kernels: correctness and speed"
grep -E "^correctness: |FAIL" "$OUT/memory-bound.log" | head -20
sed -n '/^copy ceiling/,$p' "$OUT/memory-bound.log"
echo
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/memcheck-*.log "$OUT"/racecheck-*.log 2>/dev/null | sort | uniq -c
grep -h "PASSED\|FAILED" "$OUT/jit-tests.log" | tail -3
grep -h "^FAIL\|^SKIP\|examples on the GPU" "$OUT/examples.log"
(cd "$OUT" && tar -czf logs.tar.gz *.log *.mlir && rm -f *.log *.mlir)
echo
echo "== steps"
cat "$summary"
