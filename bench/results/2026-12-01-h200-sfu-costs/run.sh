#!/usr/bin/env bash
# SFU costs of tanh/erf/GELU as generated: the matmul shapes' meas/pred again, examples, model suite.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
MATMUL_CORRECTNESS=0 OUT=$OUT MATMUL_SHAPES='[["square", {"m": 8192, "n": 8192, "k": 8192}], ["gelu_bias", {"m": 8192, "n": 8192, "k": 8192, "epilogue": "bias_gelu"}], ["decode", {"m": 1, "n": 4096, "k": 4096}], ["decode", {"m": 16, "n": 4096, "k": 4096}], ["decode", {"m": 64, "n": 4096, "k": 4096}], ["decode", {"m": 256, "n": 4096, "k": 4096}], ["gpt2 qkv+bias", {"m": 4096, "n": 2304, "k": 768, "tr": true, "epilogue": "bias"}], ["gpt2 o+res", {"m": 4096, "n": 768, "k": 768, "tr": true, "epilogue": "residual"}], ["gpt2 fc1+gelu", {"m": 4096, "n": 3072, "k": 768, "tr": true, "epilogue": "bias_gelu"}], ["gpt2 fc2+res", {"m": 4096, "n": 768, "k": 3072, "tr": true, "epilogue": "residual"}], ["gpt2 dec qkv", {"m": 32, "n": 2304, "k": 768, "tr": true, "epilogue": "bias"}], ["gpt2 dec fc1", {"m": 32, "n": 3072, "k": 768, "tr": true, "epilogue": "bias_gelu"}], ["llama dec gate/up", {"m": 32, "n": 5632, "k": 2048, "tr": true, "epilogue": "swiglu"}], ["llama dec o", {"m": 32, "n": 2048, "k": 2048, "tr": true, "epilogue": "residual"}]]' timeout 200 python3 bench/matmul.py > $OUT/speed.txt 2>&1
OUT=$OUT EXAMPLES_ONLY=1 timeout 90 bash bench/codegen-gpu.sh > $OUT/examples.txt 2>&1
MODELS_STEPS=suite OUT=$OUT timeout 120 bash bench/models-gpu.sh > $OUT/models-suite.txt 2>&1
echo "== speed"; sed -n '/^clocks/,$p' $OUT/speed.txt
echo "== examples"; tail -3 $OUT/examples.txt
echo "== suite"; tail -3 $OUT/models-suite.txt
