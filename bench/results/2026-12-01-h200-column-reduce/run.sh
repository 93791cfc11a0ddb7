#!/usr/bin/env bash
# Round 6: examples (split column kernels), column reductions vs torch, both models (import after the fold-size cap).
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD
mkdir -p $OUT/codegen
EXAMPLES_ONLY=1 OUT=$OUT/codegen timeout 200 bash bench/codegen-gpu.sh > $OUT/codegen.log 2>&1
echo "== examples"; grep -E "FAIL|examples on the GPU" $OUT/codegen/examples.log | head
OUT=$OUT timeout 240 python3 bench/column_reduce.py > $OUT/column_reduce.log 2>&1
echo "== columns"; grep -E "FAIL" $OUT/column_reduce.log | head -5; sed -n '/^correctness:/,$p' $OUT/column_reduce.log
MODELS_TOP=40 OUT=$OUT timeout 330 python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "== bench"; sed -n '/^model /,$p' $OUT/models-bench.log
