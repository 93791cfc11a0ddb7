#!/usr/bin/env bash
# Device call 1 (programmatic dependent launch): the JIT tests (the PDL
# chain bit for bit against serialized launches), matmul correctness, the
# example graphs, random graphs of every op, a PDL chain under
# compute-sanitizer, decode GEMM chains against cuBLAS in CUDA graphs with
# and without PDL, GPT-2 small at 32 x 1 with and without PDL.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
timeout 120 "$D/bin/fusec-jit-tests" > "$OUT/jit-tests.log" 2>&1
echo "jit tests rc=$? $(el): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/jit-tests.log" | tr '\n' ' ')"
MATMUL_SPEED=0 MATMUL_LARGE=0 OUT=$OUT/matmul timeout 120 python3 bench/matmul.py > "$OUT/matmul-correct.log" 2>&1
echo "matmul correctness rc=$? $(el): $(grep -h '^correctness:' "$OUT/matmul-correct.log")"
EXAMPLES_ONLY=1 OUT=$OUT/ex timeout 150 bash bench/codegen-gpu.sh > "$OUT/examples.log" 2>&1
echo "examples rc=$? $(el): $(grep -h 'examples on the GPU' "$OUT/examples.log")"
PARTS=random CAMPAIGN_SECONDS=80 RANDOM_SEED_BASE=700 OUT=$OUT/rel timeout 150 bash bench/reliability-gpu.sh > "$OUT/random.log" 2>&1
echo "random rc=$? $(el)"; grep -h "^random graphs" "$OUT/rel/summary.txt" 2>/dev/null
# A chain of three decode matmuls (the JIT test's) under compute-sanitizer.
cat > "$OUT/pdl_chain.mlir" <<'G'
func.func @f(%x: tensor<16x1024xbf16>, %w1: tensor<1024x1024xbf16>, %w2: tensor<1024x1024xbf16>, %w3: tensor<1024x1024xbf16>) -> tensor<16x1024xbf16> {
  %a = fusec.matmul %x, %w1 {transpose_rhs} : (tensor<16x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<16x1024xbf16>
  %s = fusec.sigmoid %a : tensor<16x1024xbf16>
  %g = fusec.mul %a, %s : tensor<16x1024xbf16>
  %b = fusec.matmul %g, %w2 {transpose_rhs} : (tensor<16x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<16x1024xbf16>
  %r = fusec.add %b, %x : tensor<16x1024xbf16>
  %c = fusec.matmul %r, %w3 {transpose_rhs} : (tensor<16x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<16x1024xbf16>
  return %c : tensor<16x1024xbf16>
}
G
for tool in memcheck racecheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-run" "$OUT/pdl_chain.mlir" --runs=3 --warmup=1 --max-rel-l2=2e-2 > "$OUT/sanitize-$tool.log" 2>&1
  echo "$tool rc=$? $(el): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY' "$OUT/sanitize-$tool.log" | head -1)"
done
OUT=$OUT/chain timeout 150 python3 bench/decode_chain.py > "$OUT/decode-chain.log" 2>&1
echo "decode chain rc=$? $(el)"
MODELS_FUSEC_VARIANTS="nopdl:FUSEC_PDL=0" MODELS_TOP=20 BENCH_ONLY=gpt2-small BENCH_SHAPES=32x1 OUT=$OUT/models \
  timeout $(( 560 - ($(date +%s) - t0) )) python3 bench/models.py > "$OUT/models-bench.log" 2>&1
echo "models rc=$? $(el)"
grep -h "FAIL" "$OUT/matmul-correct.log" | head -5
grep -h "^FAIL" "$OUT/examples.log" | head -5
grep -h "FAILED\|Failure" "$OUT/jit-tests.log" | head -5
echo "== decode chain"; sed -n '/^chain of/,$p' "$OUT/decode-chain.log"
echo "== models"; grep -o '"fusec_ms": [0-9.]*\|"fusec_ms_nopdl": [0-9.]*\|"compile_ro_ms": [0-9.]*\|"rel_l2_vs_torch": [0-9.e-]*' "$OUT/models-bench.log" | tr '\n' ' '; echo
sed -n '/^model /,$p' "$OUT/models-bench.log"
(cd "$OUT" && tar -cJf logs.tar.xz *.log *.mlir ex rel/summary.txt chain models matmul 2>/dev/null)
