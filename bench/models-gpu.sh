#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: issue #16's
# GPU checks and benchmark. Needs the static tools staged by
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests fusec-embed-onnx" bash bench/stage-gpu.sh
# Steps (MODELS_STEPS, default all): jit (the JIT's GPU tests: graph replay,
# ONNX per shape), suite (test/models on the GPU path), embed
# (examples/embed_onnx), export (TorchScript decoders with a mask), bench
# (bench/models.py; BENCH_ONLY picks models). Logs and JSON land in $OUT; a
# summary is printed last.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR="$PWD"
export FUSEC_CACHE_DIR="$(mktemp -d)/fusec-cache"
STEPS=${MODELS_STEPS:-"jit suite embed export bench"}
summary=()
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
for step in $STEPS; do
  case $step in
  jit)
    "$D/bin/fusec-jit-tests" > "$OUT/jit-tests.log" 2>&1
    summary+=("jit tests: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/jit-tests.log" | tr '\n' ' ')")
    ;;
  suite)
    bash test/models/run-models.sh "$D/bin/fusec-run" test/models/models.tar.xz \
      "$(mktemp -d)/models" > "$OUT/models-gpu.log" 2>&1
    summary+=("suite on the GPU: rc=$? $(tail -1 "$OUT/models-gpu.log")")
    ;;
  embed)
    m="$(mktemp -d)"
    tar -C "$m" -xJf test/models/models.tar.xz bert-torchscript
    "$D/bin/fusec-embed-onnx" "$m/bert-torchscript" > "$OUT/embed-onnx.log" 2>&1
    summary+=("embed_onnx: rc=$? $(tail -2 "$OUT/embed-onnx.log" | tr '\n' ' ')")
    ;;
  export)
    EXPORT_ONLY=gpt2,llama,mistral,qwen2 EXPORTERS=torchscript ARCHIVE=decoders-ts.tar.xz \
      timeout 300 python3 bench/export_models.py > "$OUT/export-ts.log" 2>&1
    cp "$OUT/export.json" "$OUT/export-ts.json" 2>/dev/null
    if [ -f "$OUT/decoders-ts.tar.xz" ]; then
      for mode in --reference ""; do
        bash test/models/run-models.sh "$D/bin/fusec-run" "$OUT/decoders-ts.tar.xz" \
          "$(mktemp -d)/ts" $mode > "$OUT/decoders-ts${mode:-gpu}.log" 2>&1
        summary+=("TorchScript decoders ${mode:---gpu}: $(tail -1 "$OUT/decoders-ts${mode:-gpu}.log")")
      done
    fi
    summary+=("export: $(tail -1 "$OUT/export-ts.log")")
    ;;
  bench)
    timeout 560 python3 bench/models.py > "$OUT/models-bench.log" 2>&1
    summary+=("bench rc=$?:")
    summary+=("$(sed -n '/^model /,$p' "$OUT/models-bench.log")")
    ;;
  esac
done
echo "=== summary"
printf '%s\n' "${summary[@]}"
