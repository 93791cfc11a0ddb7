#!/usr/bin/env bash
# Round 8a: examples and the model suite after the fusion peak-memory fix and the key-mask fix.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/codegen $OUT/suite
EXAMPLES_ONLY=1 OUT=$OUT/codegen timeout 240 bash bench/codegen-gpu.sh > $OUT/codegen.log 2>&1
MODELS_STEPS=suite OUT=$OUT/suite timeout 240 bash bench/models-gpu.sh > $OUT/suite.log 2>&1
echo "== examples"; grep -E "FAIL|examples on the GPU|passed|failed" $OUT/codegen/*.log $OUT/codegen.log | head -20
echo "== suite"; grep -E "FAIL|pass|rc=" $OUT/suite.log | tail -20
