#!/usr/bin/env bash
# Round 6a: attention tests and decode speed, examples, the model suite.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/codegen $OUT/suite
.device/bin/fusec-attention-tests > $OUT/attention-tests.log 2>&1; echo "attention-tests rc=$?"; tail -1 $OUT/attention-tests.log
export FUSEC_ATTENTION_LIB=.device/lib/libfusec_attention.so
D=32x12x12x1x1x64,32x16x4x1x1x128,32x12x12x1x128x64,32x12x12x4x128x64,32x12x12x1x129x64,8x32x8x1x1024x128
timeout 120 python3 bench/attention.py --no-correctness --decode $D --json $OUT/decode.json > $OUT/decode.log 2>&1; echo "decode rc=$?"
sed -n '/^decode, f16/,$p' $OUT/decode.log
EXAMPLES_ONLY=1 OUT=$OUT/codegen timeout 200 bash bench/codegen-gpu.sh > $OUT/codegen.log 2>&1
MODELS_STEPS=suite OUT=$OUT/suite timeout 200 bash bench/models-gpu.sh > $OUT/suite.log 2>&1
echo "== examples"; grep -E "examples on the GPU" $OUT/codegen.log | head -3; grep -E "FAIL" $OUT/codegen/*.log | head
echo "== suite"; grep -E "FAIL|pass|rc=" $OUT/suite.log | tail -5
