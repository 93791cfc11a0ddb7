#!/usr/bin/env bash
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin PYTHONUNBUFFERED=1
timeout 200 python3 bench/head_transpose.py > $OUT/head_transpose.log 2>&1; echo "rc=$?"
tail -4 $OUT/head_transpose.log
