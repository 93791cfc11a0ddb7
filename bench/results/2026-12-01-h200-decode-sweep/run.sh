#!/usr/bin/env bash
# Decode sweep of matmul_wgmma's tuning switches beside cuBLAS.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
OUT=$OUT timeout 540 python3 bench/matmul_sweep.py > $OUT/sweep.txt 2>&1
echo rc=$?
grep "^checks\|FAIL" $OUT/sweep.txt | head
sed -n '/^ *shape /,$p' $OUT/sweep.txt
