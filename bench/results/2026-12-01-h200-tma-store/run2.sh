#!/usr/bin/env bash
# TMA-store epilogue, call 2: speed A/B against cuBLAS, the decoder block.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
MATMUL_CORRECTNESS=0 MATMUL_AB=1 OUT=$OUT timeout 400 python3 bench/matmul.py > $OUT/speed.txt 2>&1
OUT=$OUT timeout 150 python3 bench/decoder_block.py > $OUT/decoder.txt 2>&1
echo "== decoder"; tail -15 $OUT/decoder.txt
echo "== speed"; sed -n '/^clocks/,$p' $OUT/speed.txt
