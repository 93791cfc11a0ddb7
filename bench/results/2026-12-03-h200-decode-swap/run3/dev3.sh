#!/usr/bin/env bash
# Device call 3 (the swapped tile with dual GEMMs): small matmul
# correctness under the rule and with FUSEC_WGMMA_SWAP=1 forced,
# compute-sanitizer on a swapped dual GEMM with split-K, then GPT-2 small
# and the Llama model at decode (32 x 1) end to end.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
MATMUL_SPEED=0 MATMUL_LARGE=0 OUT=$OUT/rule timeout 120 python3 bench/matmul.py > "$OUT/correct-rule.log" 2>&1
echo "correct-rule rc=$? $(( $(date +%s) - t0 )) s"
FUSEC_WGMMA_SWAP=1 MATMUL_SPEED=0 MATMUL_LARGE=0 OUT=$OUT/swap1 timeout 120 python3 bench/matmul.py > "$OUT/correct-swap1.log" 2>&1
echo "correct-swap1 rc=$? $(( $(date +%s) - t0 )) s"
S=$OUT/san; mkdir -p $S
python3 -c "import sys; sys.path.insert(0,'bench'); import matmul as m; print(m.mlir(m=8,n=1000,k=2056,epilogue='swiglu'))" > $S/sw_dual.mlir
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-run" $S/sw_dual.mlir --runs=1 --warmup=0 --max-rel-l2=1e-2 > $S/$tool.log 2>&1
  echo "$tool sw_dual rc=$? $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY\|matches\|FAIL\|tile' $S/$tool.log | head -3 | tr '\n' ' ')"
done
MODELS_TOP=40 BENCH_SHAPES=32x1 OUT=$OUT timeout $(( 585 - ($(date +%s) - t0) )) python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "models rc=$? $(( $(date +%s) - t0 )) s"
grep -h "FAIL" "$OUT"/correct-*.log | head -8
grep -h "^correctness:" "$OUT"/correct-*.log
echo "== models"; sed -n '/^model /,$p' $OUT/models-bench.log
