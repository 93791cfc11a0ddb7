#!/usr/bin/env bash
# Round 5: the wgmma kernels after the shared-code refactor (quick shapes, sanitizers), then both models (import + compile time).
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD
mkdir -p $OUT/check
MATMUL_SPEED=0 MATMUL_QUICK=1 SANITIZE=1 OUT=$OUT/check timeout 240 bash bench/matmul-gpu.sh > $OUT/check.log 2>&1
echo "== check"; grep -E "rc=|correctness:|ERROR SUMMARY|RACECHECK SUMMARY|FAIL" $OUT/check.log | grep -v "rc=0 " | head -20; tail -3 $OUT/check.log
MODELS_TOP=40 OUT=$OUT timeout 420 python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "== bench"; sed -n '/^model /,$p' $OUT/models-bench.log
