#!/usr/bin/env bash
# Device call 1 (ping-pong matmuls): correctness with ping-pong forced
# wherever it applies and by the plan's rule, compute-sanitizer on
# ping-pong kernels, then the speed of each shape under the rule and with
# FUSEC_WGMMA_PINGPONG=0 / 1, interleaved with cuBLAS.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib"
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
export PYTHONUNBUFFERED=1 FUSEC_BIN="$D/bin"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
FUSEC_WGMMA_PINGPONG=1 MATMUL_SPEED=0 OUT=$OUT/pp1 timeout 170 python3 bench/matmul.py > "$OUT/correct-pp1.log" 2>&1
echo "correct-pp1 rc=$? $(( $(date +%s) - t0 )) s"
MATMUL_SPEED=0 MATMUL_LARGE=0 OUT=$OUT/rule timeout 100 python3 bench/matmul.py > "$OUT/correct-rule.log" 2>&1
echo "correct-rule rc=$? $(( $(date +%s) - t0 )) s"
S=$OUT/san; mkdir -p $S
python3 -c "import sys; sys.path.insert(0,'bench'); import matmul as m; print(m.mlir(m=6000,n=520,k=72,epilogue='bias_gelu_onnx',dt='f16'))" > $S/pp_gelu.mlir
python3 -c "import sys; sys.path.insert(0,'bench'); import matmul as m; print(m.heads_mlir(2,256,4,64))" > $S/pp_heads.mlir
for g in pp_gelu pp_heads; do
  for tool in memcheck racecheck; do
    FUSEC_WGMMA_PINGPONG=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-run" $S/$g.mlir --runs=1 --warmup=0 --max-rel-l2=1e-2 > $S/$tool-$g.log 2>&1
    echo "$tool $g rc=$? $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY\|matches\|FAIL' $S/$tool-$g.log | head -3 | tr '\n' ' ')"
  done
done
echo "sanitizer $(( $(date +%s) - t0 )) s"
SHAPES='[["vit fc1+gelu", {"m": 6304, "n": 3072, "k": 768, "dt": "f16", "epilogue": "bias_gelu_onnx"}],
 ["vit fc2+res", {"m": 6304, "n": 768, "k": 3072, "dt": "f16", "epilogue": "residual"}],
 ["vit qkv+bias", {"m": 6304, "n": 2304, "k": 768, "dt": "f16", "epilogue": "bias"}],
 ["gpt2 qkv+bias", {"m": 4096, "n": 2304, "k": 768, "tr": true, "epilogue": "bias"}],
 ["gpt2 o+res", {"m": 4096, "n": 768, "k": 768, "tr": true, "epilogue": "residual"}],
 ["gpt2 fc1+gelu", {"m": 4096, "n": 3072, "k": 768, "tr": true, "epilogue": "bias_gelu"}],
 ["gpt2 fc2+res", {"m": 4096, "n": 768, "k": 3072, "tr": true, "epilogue": "residual"}],
 ["gelu_bias", {"m": 8192, "n": 8192, "k": 8192, "epilogue": "bias_gelu"}],
 ["square", {"m": 8192, "n": 8192, "k": 8192}],
 ["square", {"m": 4096, "n": 4096, "k": 4096}],
 ["k256", {"m": 8192, "n": 4096, "k": 256}],
 ["swiglu", {"m": 4096, "n": 5632, "k": 2048, "tr": true, "epilogue": "swiglu"}]]'
MATMUL_CORRECTNESS=0 MATMUL_SHAPES="$SHAPES" MATMUL_VARIANTS="pp0:FUSEC_WGMMA_PINGPONG=0;pp1:FUSEC_WGMMA_PINGPONG=1" OUT=$OUT/speed timeout $(( 590 - ($(date +%s) - t0) )) python3 bench/matmul.py > "$OUT/speed.log" 2>&1
echo "speed rc=$? $(( $(date +%s) - t0 )) s"
grep -E "FAIL" "$OUT"/correct-*.log | head -8
grep -h "^correctness:" "$OUT"/correct-*.log
sed -n '/^clocks/,$p' "$OUT/speed.log"
