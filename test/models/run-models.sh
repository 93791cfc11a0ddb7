#!/usr/bin/env bash
# run-models.sh FUSEC_RUN MODELS_TAR WORK_DIR [--reference]: the ctest entry
# for the suite of real exported models (docs/Models.md). Every model
# in the archive must pass `fusec-run --onnx-test` with the deep-graph
# tolerance (docs/Models.md).
set -uo pipefail
run=$1 tar=$2 work=$3
shift 3
rm -rf "$work" && mkdir -p "$work"
tar -C "$work" -xJf "$tar" || { echo "cannot extract $tar"; exit 1; }
pass=0 total=0 failed=()
for dir in "$work"/*/; do
  dir=${dir%/}
  [ -f "$dir/model.onnx" ] || continue
  total=$((total + 1))
  name=$(basename "$dir")
  if out=$("$run" --onnx-test="$dir" --model-tolerance "$@" 2>&1); then
    pass=$((pass + 1))
    echo "PASS $name $(echo "$out" | tail -1 | sed "s/^[^(]*(/(/")"
  else
    failed+=("$name")
    echo "FAIL $name:"
    echo "$out" | tail -5 | sed 's/^/    /'
  fi
done
echo "models: $pass/$total pass"
[ "$total" -gt 0 ] && [ ${#failed[@]} -eq 0 ]
