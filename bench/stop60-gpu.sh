#!/usr/bin/env bash
# Stop 60's calls (#18, #19, #14), prepared in a session that got no GPU;
# two commands of about 4 minutes each:
#   PARTS="pool tail" bash bench/stop60-gpu.sh
#   PARTS="layers models gemm" bash bench/stop60-gpu.sh
# 1. pool: stop 59's max-pool diagnosis and the convolution functions
#    against the interpreter (bench/stop59-gpu.sh with LAYERS=0 MODELS=0).
# 2. tail: the tail split (FUSEC_WGMMA_TAIL_SPLIT=1: the last wave's tiles
#    split in parts of K, the full waves' whole) and stream-K
#    (FUSEC_WGMMA_STREAM_K=1) on every function of
#    test/lit/CodeGen/matmul-wgmma-{tail-split,stream-k}.mlir against the
#    interpreter, two of each under memcheck and racecheck, and the
#    convolution functions under both and under FUSEC_WGMMA_NARROW_M=256.
# 3. layers: ResNet-50's layers, the default beside the tail split, 128
#    columns past 256 rows (FUSEC_WGMMA_NARROW_M=256), both, and stream-K.
# 4. models: ResNet-50 end to end under the same switches.
# 5. gemm: GEMMs the tail split or stream-K take, against cuBLAS, fusec by
#    default, with the tail split and with stream-K.
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
PARTS=${PARTS:-"pool tail layers models gemm"}
S=$OUT/summary.txt; : > "$S"; L=$OUT/logs; mkdir -p "$L"
has() { [[ " $PARTS " == *" $1 "* ]]; }
VARIANTS="FUSEC_WGMMA_TAIL_SPLIT=1;FUSEC_WGMMA_NARROW_M=256;FUSEC_WGMMA_TAIL_SPLIT=1,FUSEC_WGMMA_NARROW_M=256;FUSEC_WGMMA_STREAM_K=1"
if has pool; then
  OUT=$OUT/pool LAYERS=0 MODELS=0 timeout 200 bash bench/stop59-gpu.sh > "$OUT/pool.log" 2>&1
  echo "pool rc=$? ($(el))" | tee -a "$S"
  sed -n '/^== summary/,$p' "$OUT/pool.log" | tee -a "$S"
fi
if has tail; then
  pass=0; fail=0
  for pair in "tail-split FUSEC_WGMMA_TAIL_SPLIT=1 tail ragged_bias_gelu" \
              "stream-k FUSEC_WGMMA_STREAM_K=1 l4 ragged_bias_gelu"; do
    set -- $pair; T=test/lit/CodeGen/matmul-wgmma-$1.mlir; v=$2; shift 2
    for f in $(grep -o '^func.func @[A-Za-z0-9_]*' $T | cut -d@ -f2); do
      # Twice: a launch after one that left its counters must start clean.
      if env $v timeout 120 "$D/bin/fusec-run" $T --function=$f --runs=3 --warmup=1 > "$L/$v-$f.log" 2>&1; then
        pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $v @$f" | tee -a "$S"; tail -5 "$L/$v-$f.log" | tee -a "$S"; fi
    done
    for f in "$@"; do
      for tool in memcheck racecheck; do
        env $v timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
          "$D/bin/fusec-run" $T --function=$f --runs=1 --warmup=0 > "$L/$tool-$v-$f.log" 2>&1
        echo "$tool $v @$f rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool-$v-$f.log" | head -1)" | tee -a "$S"
      done
    done
  done
  for t in test/lit/Passes/conv-im2col.mlir test/lit/Passes/conv-shared-pad.mlir examples/resblock.mlir examples/convnet.mlir; do
    for f in $(grep -o '^func.func @[A-Za-z0-9_]*' $t | cut -d@ -f2); do
      for v in FUSEC_WGMMA_TAIL_SPLIT=1 FUSEC_WGMMA_STREAM_K=1 FUSEC_WGMMA_NARROW_M=256; do
        if env $v timeout 120 "$D/bin/fusec-run" $t --function=$f --runs=2 --warmup=1 >> "$L/tail-conv.log" 2>&1; then
          pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $v $t @$f" | tee -a "$S"; fi
      done
    done
  done
  echo "tail split, stream-K and the narrow rule against the interpreter: $pass passed, $fail failed ($(el))" | tee -a "$S"
fi
if has layers; then
  OUT=$OUT/forward CONV_ONLY=forward CONV_FUSEC_VARIANTS="$VARIANTS" \
    timeout 240 python3 bench/convnets.py > "$OUT/layers.log" 2>&1
  echo "layers rc=$? ($(el))" | tee -a "$S"
fi
if has models; then
  OUT=$OUT/models CONV_ONLY=models CONV_MODELS=resnet-50 CONV_FUSEC_VARIANTS="$VARIANTS" \
    timeout 200 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  echo "models rc=$? ($(el))" | tee -a "$S"
fi
if has gemm; then
  # ResNet-50's 28 x 28 and 7 x 7 3x3 as plain GEMMs (196 and 52 tiles of
  # 128 x 128), 256 tokens through a 4096 x 4096 weight, a GEMM of 6272
  # rows by 768 (a last wave of 64 tiles) and the tail-split lit file's two
  # shapes; fusec by default, with the tail split and with stream-K.
  OUT=$OUT/gemm MATMUL_CORRECTNESS=0 MATMUL_VARIANTS="tail:FUSEC_WGMMA_TAIL_SPLIT=1;sk:FUSEC_WGMMA_STREAM_K=1" \
  MATMUL_SHAPES='[["l2 3x3 as GEMM", {"m": 25088, "n": 128, "k": 1152, "tr": true, "dt": "f16"}],
                  ["l4 3x3 as GEMM", {"m": 1568, "n": 512, "k": 4608, "tr": true, "dt": "f16"}],
                  ["256 tokens", {"m": 256, "n": 4096, "k": 4096, "tr": true}],
                  ["6272x768x3072", {"m": 6272, "n": 768, "k": 3072, "tr": true}],
                  ["tail 134 tiles", {"m": 17152, "n": 64, "k": 1024}],
                  ["ragged+bias_gelu", {"m": 17100, "n": 120, "k": 1000, "epilogue": "bias_gelu"}]]' \
    timeout 200 python3 bench/matmul.py > "$OUT/gemm.log" 2>&1
  echo "gemm rc=$? ($(el))" | tee -a "$S"
fi
(cd "$OUT" && tar -czf logs.tar.gz logs && rm -rf logs)
echo "== summary ($(el))"; cat "$S"
[ -f "$OUT/layers.log" ] && sed -n '/^layer channels last/,$p' "$OUT/layers.log"
[ -f "$OUT/models.log" ] && sed -n '/^model /,$p' "$OUT/models.log"
[ -f "$OUT/gemm.log" ] && sed -n '/^correctness/,$p' "$OUT/gemm.log"
exit 0
