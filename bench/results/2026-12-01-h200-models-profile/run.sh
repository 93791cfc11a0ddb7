#!/usr/bin/env bash
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
PROFILE_TORCH=0 OUT=$OUT timeout 560 python3 bench/models_profile.py > $OUT/profile.log 2>&1
tar -C $OUT -cJf $OUT/onnx.tar.xz onnx && rm -rf $OUT/onnx
sed -n '/^== /,$p' $OUT/profile.log | cut -c1-900
grep -i "error\|Traceback" $OUT/profile.log | head -5
