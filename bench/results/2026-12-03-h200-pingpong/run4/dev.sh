#!/usr/bin/env bash
# Device call 4: measured/predicted of the shipped model (commit 5b8ffeb's
# rule and Roofline.cpp) over the matmul shapes of run1, decode included.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_CACHE_DIR="$(mktemp -d)/cache" PYTHONUNBUFFERED=1 FUSEC_BIN="$D/bin"
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
 ["swiglu", {"m": 4096, "n": 5632, "k": 2048, "tr": true, "epilogue": "swiglu"}],
 ["decode", {"m": 1, "n": 4096, "k": 4096, "tr": true}],
 ["decode", {"m": 16, "n": 4096, "k": 4096, "tr": true}],
 ["decode", {"m": 64, "n": 4096, "k": 4096, "tr": true}],
 ["decode", {"m": 256, "n": 4096, "k": 4096, "tr": true}]]'
MATMUL_CORRECTNESS=0 MATMUL_SHAPES="$SHAPES" OUT=$OUT timeout 300 python3 bench/matmul.py > "$OUT/speed.log" 2>&1
echo "speed rc=$?"
sed -n '/^clocks/,$p' "$OUT/speed.log"
