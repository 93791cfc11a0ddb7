#!/usr/bin/env bash
# Device call 3: the decoder block (issue #14's block goal) and the exported
# GPT-2 / Llama models end to end, with ping-pong by the rule.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH=$D/lib FUSEC_BIN=$D/bin FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
t0=$(date +%s)
OUT=$OUT timeout 150 python3 bench/decoder_block.py > $OUT/decoder.txt 2>&1
echo "decoder rc=$? $(( $(date +%s) - t0 )) s"
MODELS_TOP=40 BENCH_ONLY=gpt2-small OUT=$OUT timeout $(( 430 - ($(date +%s) - t0) )) python3 bench/models.py > $OUT/models-bench.log 2>&1
echo "models rc=$? $(( $(date +%s) - t0 )) s"
tail -12 $OUT/decoder.txt
echo "== bench"; sed -n '/^model /,$p' $OUT/models-bench.log
