#!/usr/bin/env bash
# Stop 46's GPU checks, written without a GPU (none was lent that session):
# run them first when one is.
#  1. #17 any layout: the attention intrinsic's float64 tests (the layout
#     cases: (B, S, H, D), other orders with padded rows, on the tiled,
#     decode and split-KV kernels), memcheck and racecheck on --quick, the
#     JIT tests, test/lit/Passes/attention-layouts.mlir's graphs and the
#     transformer block through fusec-run against the interpreter, a
#     [B, S, H, D] attention graph with and without the fold
#     (FUSEC_ATTENTION_LAYOUTS=0), and `bench/attention.py --layouts`
#     (in place against contiguous, against the transposes a
#     contiguous-only kernel needs, and against SDPA on the same views; the
#     strided O must equal the contiguous one bit for bit).
#  2. #18: test/lit/Passes/conv-transposed.mlir's transposed convolutions
#     on the GPU against the interpreter; the quantization importers
#     (bench/onnx-gpu.sh runs the node tests and make_onnx.py's folders).
#  3. #14: decode GEMM chains at M = 64 and 256 under tile variants
#     (FUSEC_WGMMA_N=64 / 256) beside cuBLAS.
# Needs .device/ from
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh
# (device tool: carry .device, run `bash bench/stop46-gpu.sh`). Writes
# $OUT/logs/ (and logs.tar.gz), layouts.json; a summary as it goes and the
# layout table last. Then: bench/models.py with
# MODELS_FUSEC_VARIANTS="nolayouts:FUSEC_ATTENTION_LAYOUTS=0" (GPT-2 and
# Llama end to end with and without the fold) and
# CONV_ONLY=transposed python3 bench/convnets.py (transposed layers against
# cuDNN's conv_transpose2d).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_ATTENTION_LIB="$D/lib/libfusec_attention.so"
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
L=$OUT/logs; mkdir -p "$L"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
timeout 200 "$D/bin/fusec-attention-tests" > "$L/attention-tests.log" 2>&1
echo "attention tests rc=$? $(el): $(tail -1 "$L/attention-tests.log")"
grep -c "layout=[12]" "$L/attention-tests.log" | sed 's/^/  layout cases: /'
grep "^FAIL" "$L/attention-tests.log" | head -5
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-attention-tests" --quick > "$L/attention-$tool.log" 2>&1
  echo "$tool rc=$? $(el): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/attention-$tool.log" | head -1)"
done
timeout 120 "$D/bin/fusec-jit-tests" > "$L/jit-tests.log" 2>&1
echo "jit tests rc=$? $(el): $(grep -E '^\[  (PASSED|FAILED) ' "$L/jit-tests.log" | tr '\n' ' ')"
for f in bshd chains kept; do
  timeout 60 "$D/bin/fusec-run" test/lit/Passes/attention-layouts.mlir --function=$f > "$L/layouts-$f.log" 2>&1
  echo "fusec-run layouts @$f rc=$?: $(grep -hE 'PASS|FAIL|max' "$L/layouts-$f.log" | head -2 | tr '\n' ' ')"
done
timeout 60 "$D/bin/fusec-run" test/lit/Passes/fold-movement.mlir --function=attention_block > "$L/attention-block.log" 2>&1
echo "fusec-run attention_block rc=$?: $(grep -hE 'PASS|FAIL' "$L/attention-block.log" | head -2 | tr '\n' ' ')"
for f in strided grouped dilated known; do
  timeout 60 "$D/bin/fusec-run" test/lit/Passes/conv-transposed.mlir --function=$f > "$L/convt-$f.log" 2>&1
  echo "fusec-run conv-transposed @$f rc=$?: $(grep -hE 'PASS|FAIL' "$L/convt-$f.log" | head -2 | tr '\n' ' ')"
done
timeout 60 "$D/bin/fusec-run" examples/transformer_block.mlir > "$L/transformer-block.log" 2>&1
echo "fusec-run transformer_block rc=$?: $(grep -hE 'PASS|FAIL' "$L/transformer-block.log" | head -2 | tr '\n' ' ')"
# A [B, S, H, D] attention graph (4 x 4096 tokens, 32 heads of 128, causal):
# the fold (the intrinsic in place) against FUSEC_ATTENTION_LAYOUTS=0 (four
# transpose kernels around it).
cat > "$L/bshd_graph.mlir" <<'G'
func.func @bshd(%q: tensor<4x4096x32x128xbf16>, %k: tensor<4x4096x32x128xbf16>, %v: tensor<4x4096x32x128xbf16>) -> tensor<4x4096x32x128xbf16> {
  %qt = fusec.transpose %q perm [0, 2, 1, 3] : tensor<4x4096x32x128xbf16> -> tensor<4x32x4096x128xbf16>
  %kt = fusec.transpose %k perm [0, 2, 1, 3] : tensor<4x4096x32x128xbf16> -> tensor<4x32x4096x128xbf16>
  %vt = fusec.transpose %v perm [0, 2, 1, 3] : tensor<4x4096x32x128xbf16> -> tensor<4x32x4096x128xbf16>
  %o = fusec.attention %qt, %kt, %vt {scale = 0.08838834764831845 : f64, causal} : (tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>, tensor<4x32x4096x128xbf16>) -> tensor<4x32x4096x128xbf16>
  %ot = fusec.transpose %o perm [0, 2, 1, 3] : tensor<4x32x4096x128xbf16> -> tensor<4x4096x32x128xbf16>
  return %ot : tensor<4x4096x32x128xbf16>
}
G
for fold in 1 0; do
  FUSEC_ATTENTION_LAYOUTS=$fold timeout 90 "$D/bin/fusec-run" "$L/bshd_graph.mlir" --no-check --json --warmup=5 --runs=30 > "$L/bshd-graph-$fold.json" 2>&1
  echo "bshd graph fold=$fold rc=$?: $(python3 -c "import json,sys; r=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][-1]); print('%.3f ms, %d kernels:' % (r['end_to_end_ms'], len(r['kernels'])), ', '.join('%s %.3f' % (k['name'], k['median_ms']) for k in r['kernels']))" "$L/bshd-graph-$fold.json" 2>&1 | tail -1)"
done
timeout 240 python3 bench/attention.py --no-correctness --layouts default --json "$OUT/layouts.json" > "$L/layouts-bench.log" 2>&1
echo "layouts bench rc=$? $(el)"
(cd "$OUT" && tar -czf logs.tar.gz logs)
if [ $(( $(date +%s) - t0 )) -lt 400 ]; then
  OUT=$L/onnx timeout $(( 520 - ($(date +%s) - t0) )) bash bench/onnx-gpu.sh > "$L/onnx-gpu.log" 2>&1
  echo "onnx gpu rc=$? $(el)"; tail -4 "$L/onnx/onnx-gpu-summary.txt" 2>/dev/null; tail -3 "$L/onnx/onnx-gpu-made.log" 2>/dev/null
fi
# #14: decode GEMM chains at M = 64 and 256 under tile variants.
for v in "default:" "n64:FUSEC_WGMMA_N=64" "n256:FUSEC_WGMMA_N=256"; do
  [ $(( $(date +%s) - t0 )) -lt 500 ] || break
  name=${v%%:*}; envs=${v#*:}
  env $envs CHAIN_SHAPES=64x4096x4096,256x4096x4096 OUT=$L/chain-$name timeout $(( 580 - ($(date +%s) - t0) )) python3 bench/decode_chain.py > "$L/chain-$name.log" 2>&1
  echo "decode chain [$name] rc=$? $(el)"; sed -n '/^M x N x K/,$p' "$L/chain-$name.log"
done
(cd "$OUT" && tar -czf logs.tar.gz logs)
echo "== layouts"; sed -n '/^\[B, S, H, D\]/,$p' "$L/layouts-bench.log"
