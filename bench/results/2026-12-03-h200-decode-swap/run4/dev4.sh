#!/usr/bin/env bash
# Device call 4 (tensor-map prefetch): small matmul correctness, decode
# GEMMs under ncu against cuBLAS with FUSEC_TENSORMAP_PREFETCH=0 as the
# variant, GPT-2 small at decode end to end.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
MATMUL_SPEED=0 MATMUL_LARGE=0 OUT=$OUT/rule timeout 100 python3 bench/matmul.py > "$OUT/correct-rule.log" 2>&1
echo "correct-rule rc=$? $(( $(date +%s) - t0 )) s"
DECODE_SHAPES=1x4096x4096,16x4096x4096,32x2304x768,32x2048x5632,1x50257x768 \
DECODE_VARIANTS="nopf:FUSEC_TENSORMAP_PREFETCH=0" \
OUT=$OUT/probe timeout 150 python3 bench/decode_gemm_probe.py > "$OUT/probe.log" 2>&1
echo "probe rc=$? $(( $(date +%s) - t0 )) s"
MODELS_TOP=40 BENCH_ONLY=gpt2-small BENCH_SHAPES=32x1 OUT=$OUT timeout $(( 330 - ($(date +%s) - t0) )) python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "models rc=$? $(( $(date +%s) - t0 )) s"
grep -h "FAIL" "$OUT"/correct-*.log | head -8
grep -h "^correctness:" "$OUT"/correct-*.log
sed -n '/^shape |/,$p' "$OUT/probe.log"
echo "== models"; sed -n '/^model /,$p' $OUT/models-bench.log
