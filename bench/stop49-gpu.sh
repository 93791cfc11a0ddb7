#!/usr/bin/env bash
# Stop 49's GPU checks (one device call, after stop46-gpu.sh's results in
# bench/results/2026-12-06-h100-stop46-checks):
#  1. DynamicQuantizeLinear, which failed on the GPU path there (x / scale
#     by a reciprocal moved -127.5 off its rounding boundary; a rounded
#     quotient is now an IEEE division), and the new RoiAlign and MaxUnpool
#     importers: their node tests and make_onnx.py's folders (with GridSample,
#     DFT, STFT and Einsum, never run on a GPU before) through the GPU path.
#  2. #14: decode GEMM chains at 128 and 256 tokens: the new default
#     (64-column tiles where 128 would need split-K at 128 rows) against
#     FUSEC_WGMMA_N=128 (the old choice).
#  3. The whole node-test suite on the GPU path, if time is left.
# Needs .device/ from FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh.
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
data="$(mktemp -d)"; tar -C "$data" -xJf "$D/onnx-node.tar.xz"
made="$(mktemp -d)"; python3 test/lit/Import/Inputs/make_onnx.py "$made" >/dev/null
pass=0; fail=0
for d in "$data"/node/test_dynamicquantizelinear* "$data"/node/test_roialign* "$data"/node/test_maxunpool* \
         "$made"/roialign_*/ "$made"/maxunpool_*/ "$made"/gridsample_*/ "$made"/dft_*/ "$made"/stft_*/ \
         "$made"/einsum_*/; do
  [ -d "$d/test_data_set_0" ] || continue
  timeout 60 "$D/bin/fusec-run" --onnx-test="$d" > "$L/one.log" 2>&1
  rc=$?; cat "$L/one.log" >> "$L/onnx-selected.log"
  if [ $rc = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $(basename "$d"): $(tail -2 "$L/one.log" | tr '\n' ' ' | cut -c1-300)"; fi
done
echo "selected ONNX tests on the GPU: $pass pass, $fail fail ($(el))"
for v in "default:" "n128:FUSEC_WGMMA_N=128"; do
  [ $(( $(date +%s) - t0 )) -lt 150 ] || break
  name=${v%%:*}; envs=${v#*:}
  shapes=128x4096x4096,256x4096x4096
  [ "$name" = n64 ] && shapes=64x4096x4096
  env $envs CHAIN_SHAPES=$shapes OUT=$L/chain-$name timeout 120 python3 bench/decode_chain.py > "$L/chain-$name.log" 2>&1
  echo "decode chain [$name] rc=$? $(el)"; sed -n '/^M x N x K/,$p' "$L/chain-$name.log"
done
(cd "$OUT" && tar -czf logs.tar.gz logs)
left=$(( 190 - ($(date +%s) - t0) ))
if [ $left -gt 120 ]; then
  timeout $left python3 test/onnx/conformance.py "$D/bin/fusec-run" "$data/node" --jobs 16 \
    --json "$OUT/onnx-gpu.json" > "$L/onnx-gpu.log" 2>&1
  echo "node tests on the GPU rc=$? $(el): $(grep -E 'passed, .* failed' "$L/onnx-gpu.log")"
  grep -E "^FAIL|MISMATCH" "$L/onnx-gpu.log" | head -5
fi
(cd "$OUT" && tar -czf logs.tar.gz logs)
