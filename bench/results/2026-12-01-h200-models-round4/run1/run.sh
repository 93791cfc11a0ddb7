#!/usr/bin/env bash
# Round 4: examples (integer reductions), the model suite (RoBERTa), Llama's bench after the rotary fold.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD
mkdir -p $OUT/codegen $OUT/suite
EXAMPLES_ONLY=1 OUT=$OUT/codegen timeout 300 bash bench/codegen-gpu.sh > $OUT/codegen.log 2>&1
MODELS_STEPS=suite OUT=$OUT/suite timeout 300 bash bench/models-gpu.sh > $OUT/suite.log 2>&1
BENCH_ONLY=llama MODELS_TOP=40 OUT=$OUT timeout 300 python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "== examples"; grep -E "FAIL|examples on the GPU|passed|failed" $OUT/codegen/*.log $OUT/codegen.log | head -20
echo "== suite"; grep -E "FAIL|pass|rc=" $OUT/suite.log | tail -20
echo "== bench"; sed -n '/^model /,$p' $OUT/models-bench.log
