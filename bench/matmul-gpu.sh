#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: the checks
# and the benchmark of generated tensor-core matmuls (issue #14), with the
# static tools that
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh
# put in .device/. Full results under $OUT (bench/out without it); a short
# table last. Env: MATMUL_SPEED=0 correctness only; MATMUL_QUICK=1 fewer
# cases; SANITIZE=0 skips compute-sanitizer.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-run" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
BIN="$D/bin"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_SOURCE_DIR="$PWD"
export FUSEC_CACHE_DIR="${FUSEC_CACHE_DIR:-$(mktemp -d)/fusec-cache}"
summary="$OUT/matmul-summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
step() { # name, command... (each under a time limit: a hung kernel must not eat the lease)
  local name=$1; shift
  local start=$(date +%s%N)
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  note "$(printf '%-30s rc=%-3s %8d ms' "$name" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))")"
}
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
} > "$OUT/matmul-machine.txt"
cat "$OUT/matmul-machine.txt"

step jit-tests "$BIN/fusec-jit-tests"
# Each layout of matmul_wgmma under memcheck and racecheck (fusec-run also
# compares with the interpreter).
mm() { # name M N K attrs lhs-type rhs-type out-type
  local name=$1 m=$2 n=$3 k=$4 attrs=$5 lt=$6 rt=$7 ot=$8
  cat > "$OUT/$name.mlir" <<MLIR
func.func @mm(%a: $lt, %b: $rt) -> $ot {
  %0 = fusec.matmul %a, %b $attrs : ($lt, $rt) -> $ot
  return %0 : $ot
}
MLIR
}
mm mm_kmajor 200 264 520 "" "tensor<200x520xbf16>" "tensor<264x520xbf16>" "tensor<200x264xbf16>"
sed -i 's/fusec.matmul %a, %b /fusec.matmul %a, %b {transpose_rhs} /' "$OUT/mm_kmajor.mlir"
mm mm_mnmajor 200 264 520 "" "tensor<520x200xbf16>" "tensor<520x264xbf16>" "tensor<200x264xf32>"
sed -i 's/fusec.matmul %a, %b /fusec.matmul %a, %b {transpose_lhs} /' "$OUT/mm_mnmajor.mlir"
mm mm_batched 100 72 136 "" "tensor<3x100x136xf16>" "tensor<3x136x72xf16>" "tensor<3x100x72xf16>"
# Split-K (workspace, counters, the last part's reduction) with two
# accumulators, and the 64-row tile with split-K over a batch.
gen() { # name python-dict
  python3 -c "import sys; sys.path.insert(0, 'bench'); import matmul as m; print(m.mlir(**$2))" > "$OUT/$1.mlir"
}
gen mm_splitk_dual "dict(m=100, n=136, k=1040, epilogue='swiglu', tr=True)"
gen mm_narrow_batched "dict(m=40, n=200, k=520, batch=(3,), tr=True)"
# Odd N: the epilogue staged in shared memory, with a bias.
gen mm_odd "dict(m=200, n=263, k=136, tr=True, epilogue='bias')"
# Movement folded into the store (Q, K, V head-major) and the load (heads
# as rows through a 4-D tensor map).
python3 -c "import sys; sys.path.insert(0, 'bench'); import matmul as m; print(m.heads_mlir(2, 256, 4, 64))" > "$OUT/mm_heads.mlir"
for g in mm_kmajor mm_mnmajor mm_batched mm_splitk_dual mm_narrow_batched mm_heads mm_odd; do
  step "run-$g" "$BIN/fusec-run" "$OUT/$g.mlir" --runs=2 --warmup=1 --max-rel-l2=1e-3
  if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    step "memcheck-$g" compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$BIN/fusec-run" "$OUT/$g.mlir" --runs=1 --warmup=0 --max-rel-l2=1e-3
    step "racecheck-$g" compute-sanitizer --tool racecheck --error-exitcode 3 \
      "$BIN/fusec-run" "$OUT/$g.mlir" --runs=1 --warmup=0 --max-rel-l2=1e-3
  fi
done
STEP_TIMEOUT=560 PYTHONUNBUFFERED=1 FUSEC_BIN="$BIN" step matmul python3 bench/matmul.py

echo
echo "== tensor-core matmul: correctness and speed"
grep -E "FAIL" "$OUT/matmul.log" | head -20
sed -n '/^correctness: /,$p' "$OUT/matmul.log"
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/memcheck-mm_*.log "$OUT"/racecheck-mm_*.log 2>/dev/null | sort | uniq -c
grep -h "PASSED\|FAILED\|SKIPPED" "$OUT/jit-tests.log" | tail -4
(cd "$OUT" && tar -czf matmul-logs.tar.gz *.log *.mlir 2>/dev/null && rm -f *.log *.mlir)
echo
echo "== steps"
cat "$summary"
