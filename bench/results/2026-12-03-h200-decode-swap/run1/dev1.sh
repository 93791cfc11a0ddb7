#!/usr/bin/env bash
# Device call 1 (the swapped decode tile): matmul correctness under the
# plan's rule (small and large cases), compute-sanitizer on swapped
# kernels (split-K with a partial token tile; MN-major weights), decode
# GEMMs under ncu against cuBLAS with the swap off / forced / 128 columns,
# then correctness with the swap forced wherever it applies.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib"
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
export PYTHONUNBUFFERED=1 FUSEC_BIN="$D/bin"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
MATMUL_SPEED=0 OUT=$OUT/rule timeout 170 python3 bench/matmul.py > "$OUT/correct-rule.log" 2>&1
echo "correct-rule rc=$? $(( $(date +%s) - t0 )) s"
S=$OUT/san; mkdir -p $S
python3 -c "import sys; sys.path.insert(0,'bench'); import matmul as m; print(m.mlir(m=9,n=1032,k=1040,tr=True,epilogue='bias_gelu'))" > $S/sw_split.mlir
python3 -c "import sys; sys.path.insert(0,'bench'); import matmul as m; print(m.mlir(m=5,n=520,k=264,epilogue='bias'))" > $S/sw_mn.mlir
for g in sw_split sw_mn; do
  for tool in memcheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-run" $S/$g.mlir --runs=1 --warmup=0 --max-rel-l2=1e-2 > $S/$tool-$g.log 2>&1
    echo "$tool $g rc=$? $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY\|matches\|FAIL\|tile' $S/$tool-$g.log | head -3 | tr '\n' ' ')"
  done
done
echo "sanitizer $(( $(date +%s) - t0 )) s"
DECODE_SHAPES=1x4096x4096,16x4096x4096,32x4096x4096,64x4096x4096,16x11008x4096,32x6144x2048,32x2048x5632,32x2304x768 \
DECODE_VARIANTS="swap0:FUSEC_WGMMA_SWAP=0;swap1:FUSEC_WGMMA_SWAP=1;n128:FUSEC_WGMMA_N=128" \
OUT=$OUT/probe timeout $(( 500 - ($(date +%s) - t0) )) python3 bench/decode_gemm_probe.py > "$OUT/probe.log" 2>&1
echo "probe rc=$? $(( $(date +%s) - t0 )) s"
FUSEC_WGMMA_SWAP=1 MATMUL_SPEED=0 MATMUL_LARGE=0 OUT=$OUT/swap1 timeout $(( 590 - ($(date +%s) - t0) )) python3 bench/matmul.py > "$OUT/correct-swap1.log" 2>&1
echo "correct-swap1 rc=$? $(( $(date +%s) - t0 )) s"
grep -h "FAIL" "$OUT"/correct-*.log | head -8
grep -h "^correctness:" "$OUT"/correct-*.log
sed -n '/^shape |/,$p' "$OUT/probe.log"
