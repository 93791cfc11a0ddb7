#!/usr/bin/env bash
# TMA-store epilogue, call 3: both models end to end.
tar -C .device -xJf .device/bin.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib FUSEC_BIN=.device/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
MODELS_TOP=40 OUT=$OUT timeout 560 python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "== bench"; sed -n '/^model /,$p' $OUT/models-bench.log
python3 -c "
import json
for r in json.load(open('$OUT/models-all.json'))['rows']:
    print(r['model'], r['batch'], r['seq'], 'kernels', r.get('fusec_kernels'), 'import', round(r.get('import_cold_s',0),2), 'compile', round(r.get('compile_cold_s',0),2))
"
