#!/usr/bin/env bash
# Round 7: examples (the head transpose folded into its consumer) and the model suite.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/codegen $OUT/suite
EXAMPLES_ONLY=1 OUT=$OUT/codegen timeout 150 bash bench/codegen-gpu.sh > $OUT/codegen.log 2>&1
MODELS_STEPS=suite OUT=$OUT/suite timeout 150 bash bench/models-gpu.sh > $OUT/suite.log 2>&1
echo "== examples"; grep -E "examples on the GPU" $OUT/codegen.log | head -3; grep -E "FAIL|head_transpose" $OUT/codegen/examples.log | head
echo "== suite"; grep -E "FAIL|pass|rc=" $OUT/suite.log | tail -3
