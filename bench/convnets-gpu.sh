#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: issue #18's
# checks and benchmark. Needs the static fusec-run (and fusec-jit-tests)
# staged by
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh
# and the PyTorch-converted ONNX tests in .device/onnx-pytorch.tar.xz
# (bench/convnets-gpu.sh stage makes it here). Steps (CONV_STEPS, default
# "check layers models"):
#   check   the example graphs (examples/convnet.mlir among them) against
#           the interpreter, and the ONNX conv/pool/norm/resize node tests and
#           PyTorch-converted modules on the GPU path against their outputs;
#   layers  ResNet-50's convolution shapes, fusec against cuDNN;
#   models  ResNet-50 and ViT-B/16 end to end against PyTorch.
# Results under $OUT; a table last.
set -uo pipefail
if [ "${1:-}" = stage ]; then
  tar -C /usr/share/libonnx-testdata/data -cf - pytorch-converted pytorch-operator | xz -T2 -6 > .device/onnx-pytorch.tar.xz
  exit 0
fi
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-run" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_CACHE_DIR="${FUSEC_CACHE_DIR:-$(mktemp -d)/fusec-cache}"
STEPS="${CONV_STEPS:-check layers models}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt"
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' >> "$OUT/machine.txt" 2>&1
summary="$OUT/summary.txt"
: > "$summary"
if [[ " $STEPS " == *" check "* ]]; then
  EXAMPLES_ONLY=1 OUT="$OUT/examples" timeout 240 bash bench/codegen-gpu.sh > "$OUT/examples.log" 2>&1
  grep -E "^(FAIL|SKIP)|examples on the GPU|rc=" "$OUT/examples.log" | tee -a "$summary"
  data="$(mktemp -d)"
  tar -C "$data" -xJf "$D/onnx-node.tar.xz"
  [ -f "$D/onnx-pytorch.tar.xz" ] && tar -C "$data" -xJf "$D/onnx-pytorch.tar.xz"
  for suite in node pytorch-converted pytorch-operator; do
    [ -d "$data/$suite" ] || continue
    filter='.'
    [ $suite = node ] && filter='conv|pool|batchnorm|instancenorm|resize|upsample'
    timeout 240 python3 test/onnx/conformance.py "$D/bin/fusec-run" "$data/$suite" --jobs 16 \
      --filter "$filter" --json "$OUT/onnx-gpu-$suite.json" > "$OUT/onnx-gpu-$suite.log" 2>&1
    echo "ONNX $suite on the GPU: $(grep -E '^[0-9]+ passed' "$OUT/onnx-gpu-$suite.log")" | tee -a "$summary"
    grep -E "^FAILED" "$OUT/onnx-gpu-$suite.log" | head -10 | tee -a "$summary"
  done
fi
if [[ " $STEPS " == *" layers "* ]]; then
  CONV_ONLY=layers timeout 300 python3 bench/convnets.py > "$OUT/layers.log" 2>&1
  cp "$OUT/convnets.json" "$OUT/convnets-layers.json" 2>/dev/null
fi
if [[ " $STEPS " == *" models "* ]]; then
  CONV_ONLY=models timeout 500 python3 bench/convnets.py > "$OUT/models.log" 2>&1
  cp "$OUT/convnets.json" "$OUT/convnets-models.json" 2>/dev/null
fi
cat "$summary"
for f in layers models; do
  [ -f "$OUT/$f.log" ] && sed -n '/^layer \|^model /,$p' "$OUT/$f.log" && tail -3 "$OUT/$f.log"
done
