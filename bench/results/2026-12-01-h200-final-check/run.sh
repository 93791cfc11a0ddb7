#!/usr/bin/env bash
# The bench scripts after the shared median_ms (bench/gpu_timing.py): the decoder block and the head transpose.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
OUT=$OUT timeout 120 python3 bench/decoder_block.py > $OUT/decoder.txt 2>&1; echo "decoder rc=$?"
OUT=$OUT timeout 90 python3 bench/head_transpose.py > $OUT/head_transpose.txt 2>&1; echo "head_transpose rc=$?"
echo "== decoder"; tail -12 $OUT/decoder.txt
echo "== head transpose"; tail -8 $OUT/head_transpose.txt
