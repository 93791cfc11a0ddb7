#!/usr/bin/env bash
# Decode tiles + GEMM latency model, final call: correctness, speed with meas/pred, models at decode.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
MATMUL_SPEED=0 MATMUL_LARGE=0 STEP_TIMEOUT=200 OUT=$OUT bash bench/matmul-gpu.sh > $OUT/mm.txt 2>&1
MATMUL_CORRECTNESS=0 OUT=$OUT MATMUL_SHAPES='[["square", {"m": 8192, "n": 8192, "k": 8192}], ["gelu_bias", {"m": 8192, "n": 8192, "k": 8192, "epilogue": "bias_gelu"}], ["decode", {"m": 1, "n": 4096, "k": 4096}], ["decode", {"m": 16, "n": 4096, "k": 4096}], ["decode", {"m": 64, "n": 4096, "k": 4096}], ["decode", {"m": 256, "n": 4096, "k": 4096}], ["gpt2 qkv+bias", {"m": 4096, "n": 2304, "k": 768, "tr": true, "epilogue": "bias"}], ["gpt2 o+res", {"m": 4096, "n": 768, "k": 768, "tr": true, "epilogue": "residual"}], ["gpt2 fc1+gelu", {"m": 4096, "n": 3072, "k": 768, "tr": true, "epilogue": "bias_gelu"}], ["gpt2 fc2+res", {"m": 4096, "n": 768, "k": 3072, "tr": true, "epilogue": "residual"}], ["gpt2 dec qkv", {"m": 32, "n": 2304, "k": 768, "tr": true, "epilogue": "bias"}], ["gpt2 dec fc1", {"m": 32, "n": 3072, "k": 768, "tr": true, "epilogue": "bias_gelu"}], ["llama dec gate/up", {"m": 32, "n": 5632, "k": 2048, "tr": true, "epilogue": "swiglu"}], ["llama dec o", {"m": 32, "n": 2048, "k": 2048, "tr": true, "epilogue": "residual"}]]' timeout 240 python3 bench/matmul.py > $OUT/speed.txt 2>&1
BENCH_SHAPES=32x1 MODELS_TOP=40 OUT=$OUT timeout 250 python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "== mm"; grep -E "FAIL" $OUT/mm.txt | head; sed -n '/^correctness: /,$p' $OUT/mm.txt | head -12
echo "== speed"; sed -n '/^clocks/,$p' $OUT/speed.txt
echo "== models"; sed -n '/^model /,$p' $OUT/models-bench.log
