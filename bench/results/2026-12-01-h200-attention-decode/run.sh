#!/usr/bin/env bash
# The decode kernel's limits lowered to 4 rows and 64 keys: tests and speed.
export PYTHONUNBUFFERED=1
.device/new/fusec-attention-tests > $OUT/attention-tests.log 2>&1; echo "attention-tests rc=$?"; tail -1 $OUT/attention-tests.log
export FUSEC_ATTENTION_LIB=.device/new/libfusec_attention.so
timeout 200 python3 bench/attention.py --no-speed > $OUT/correctness.log 2>&1; echo "correctness rc=$?"; tail -1 $OUT/correctness.log
D=32x12x12x1x1x64,32x16x4x1x1x128,32x12x12x1x64x64,32x12x12x4x64x64,32x12x12x4x65x64,32x12x12x1x128x64
timeout 100 python3 bench/attention.py --no-correctness --decode $D --json $OUT/decode.json > $OUT/decode.log 2>&1; echo "decode rc=$?"
sed -n '/^decode, f16/,$p' $OUT/decode.log
