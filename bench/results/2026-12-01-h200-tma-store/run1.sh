#!/usr/bin/env bash
# TMA-store epilogue, call 1: correctness (small, large, sanitizers), examples, model suite.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
MATMUL_SPEED=0 STEP_TIMEOUT=330 OUT=$OUT bash bench/matmul-gpu.sh > $OUT/mm.txt 2>&1
OUT=$OUT EXAMPLES_ONLY=1 timeout 90 bash bench/codegen-gpu.sh > $OUT/examples.txt 2>&1
MODELS_STEPS="suite jit" OUT=$OUT timeout 150 bash bench/models-gpu.sh > $OUT/models-suite.txt 2>&1
echo "== mm"; grep -E "FAIL" $OUT/mm.txt | head; sed -n '/^correctness: /,$p' $OUT/mm.txt | head -30
echo "== examples"; tail -6 $OUT/examples.txt
echo "== suite"; tail -5 $OUT/models-suite.txt
