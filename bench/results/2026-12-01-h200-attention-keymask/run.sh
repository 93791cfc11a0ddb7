#!/usr/bin/env bash
# The key-mask fix: attention tests with the new kernel, then old vs new speed.
export PYTHONUNBUFFERED=1
.device/new/fusec-attention-tests > $OUT/attention-tests.log 2>&1; echo "attention-tests rc=$?"
grep -c PASS $OUT/attention-tests.log; grep -v PASS $OUT/attention-tests.log | tail -5
S=4x12x1024x64,4x16x1024x128,16x32x1024x128,4x32x4096x64
for v in old new; do
  lib=.device/lib/libfusec_attention.so; [ $v = new ] && lib=.device/new/libfusec_attention.so
  FUSEC_ATTENTION_LIB=$lib timeout 200 python3 bench/attention.py --no-correctness --shapes $S \
    --flags base,pp+pipe --key-masks --json $OUT/speed-$v.json > $OUT/speed-$v.log 2>&1
  echo "== $v"; sed -n '/^TFLOP/,$p' $OUT/speed-$v.log
done
FUSEC_ATTENTION_LIB=.device/new/libfusec_attention.so timeout 250 python3 bench/attention.py --no-speed > $OUT/correctness-new.log 2>&1; echo "correctness rc=$?"; tail -3 $OUT/correctness-new.log
