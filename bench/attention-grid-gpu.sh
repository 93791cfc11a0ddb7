#!/usr/bin/env bash
# The attention intrinsic's grid rule on the GPU machine (issue #17): the library's
# quick tests, the rule (no environment) against the old grid (one CTA a
# tile, one head after another) on the shapes the rule was chosen on and
# on five it was not, GPT-2 small at 4 x 1024 and ViT-B/16 (batch 32)
# end to end with the old grid as a variant, the JIT tests. Needs .device/
# from FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh
# (device tool: carry .device, run `bash bench/attention-grid-gpu.sh`).
# Writes $OUT/*.log, attention-speed.json, models/, vit/; a table last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache" FUSEC_ATTENTION_LIB="$D/lib/libfusec_attention.so"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
timeout 60 "$D/bin/fusec-attention-tests" --quick > "$OUT/attention-tests-quick.log" 2>&1
echo "attention tests (quick) rc=$? $(el): $(tail -1 "$OUT/attention-tests-quick.log")"
timeout 100 "$D/bin/fusec-jit-tests" > "$OUT/jit-tests.log" 2>&1
echo "jit tests rc=$? $(el): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/jit-tests.log" | tr '\n' ' ')"
timeout 200 python3 bench/attention.py --no-correctness --json "$OUT/attention-speed.json" \
  --shapes 4x12x1024x64,32x12x197x64,8x16x512x128,1x32x2048x128,16x32x1024x128,4x32x4096x128,2x32x8192x128,4x32x4096x64,8x16x4096x256,2x16x3000x128,1x8x16384x128,4x40x777x64,64x12x128x64,16x16x2048x256 \
  --flags base,pp+pipe --key-masks \
  --schedules "tiles:FUSEC_ATTENTION_PERSISTENT=0+FUSEC_ATTENTION_HEAD_GROUP=1,rule:" \
  > "$OUT/attention-speed.log" 2>&1
echo "attention speed rc=$? $(el)"
MODELS_FUSEC_VARIANTS="tiles:FUSEC_ATTENTION_PERSISTENT=0,FUSEC_ATTENTION_HEAD_GROUP=1" MODELS_TOP=30 \
  BENCH_ONLY=gpt2-small BENCH_SHAPES=4x1024 OUT=$OUT/models \
  timeout 200 python3 bench/models.py > "$OUT/models-bench.log" 2>&1
echo "models rc=$? $(el)"
CONV_ONLY=models CONV_MODELS=vit-b16 CONV_FUSEC_VARIANTS="FUSEC_ATTENTION_PERSISTENT=0,FUSEC_ATTENTION_HEAD_GROUP=1" OUT=$OUT/vit \
  timeout $(( 580 - ($(date +%s) - t0) )) python3 bench/convnets.py > "$OUT/vit.log" 2>&1
echo "vit rc=$? $(el)"
grep -h "^FAIL" "$OUT/attention-tests-quick.log" | head -5
grep -h "FAILED\|Failure" "$OUT/jit-tests.log" | head -5
echo "== models"; grep -o '"fusec_ms": [0-9.]*\|"fusec_ms_tiles": [0-9.]*\|"rel_l2_vs_torch": [0-9.e-]*' "$OUT/models-bench.log" | tr '\n' ' '; echo
sed -n '/^model /,$p' "$OUT/models-bench.log"
echo "== vit"; sed -n '/^model /,$p' "$OUT/vit.log"; python3 -c "
import json; d=json.load(open('$OUT/vit/convnets.json'))
for r in d['models']: print(r['model'], r.get('fusec_ms'), {k: v['fusec_ms'] for k, v in r.get('variants', {}).items()}, [round(k['median_ms']*1e3,1) for k in r.get('kernels', []) if k['name']=='attention'][:3])" 2>&1 | tail -3
echo "== attention speed"; sed -n '/^TFLOP/,$p' "$OUT/attention-speed.log"
(cd "$OUT" && tar -cJf logs.tar.xz *.log models vit 2>/dev/null)
