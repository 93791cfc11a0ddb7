#!/usr/bin/env bash
# Device call 1 (2026-12-05): the GPU tests of the code that landed without a
# GPU in stop 44 (JIT and runtime tests, average pools with per-dim divisor
# vectors and MaxPool indices against the interpreter under memcheck, the
# zero-extent kernels), then Nsight Compute profiles of the memory-bound
# graphs below copy speed beside Inductor's kernels (#15).
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
timeout 120 "$D/bin/fusec-jit-tests" > "$OUT/jit-tests.log" 2>&1
echo "jit tests rc=$? $(el): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/jit-tests.log" | tr '\n' ' ')"
timeout 60 "$D/bin/fusec-runtime-tests" > "$OUT/runtime-tests.log" 2>&1
echo "runtime tests rc=$? $(el): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/runtime-tests.log" | tr '\n' ' ')"
grep -h "FAILED\|Failure" "$OUT/jit-tests.log" "$OUT/runtime-tests.log" | head -5
for spec in test/lit/Passes/pool-divisors.mlir:avg test/lit/Passes/pool-divisors.mlir:big_uniform \
            test/lit/CodeGen/zero-extent-concat.mlir: test/lit/CodeGen/zero-extent-huge-dims.mlir:; do
  f=${spec%%:*}; fn=${spec#*:}; args=(); [ -n "$fn" ] && args=(--function="$fn")
  name=$(basename "$f" .mlir)${fn:+-$fn}
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" "$f" "${args[@]}" --runs=2 --warmup=1 > "$OUT/memcheck-$name.log" 2>&1
  echo "memcheck $name rc=$? $(el): $(grep -h 'ERROR SUMMARY' "$OUT/memcheck-$name.log") $(grep -hE '^(PASS|FAIL|max)' "$OUT/memcheck-$name.log" | head -2 | tr '\n' ' ')"
done
# MaxPool with indices and pools through the GPU path of the conformance run.
data=$(mktemp -d); tar -C "$data" -xJf "$D/onnx-node.tar.xz"
timeout 200 python3 test/onnx/conformance.py "$D/bin/fusec-run" "$data/node" --jobs 16 --filter 'maxpool|averagepool|argmax|argmin|topk|gather|scatter|resize|tile|pad' > "$OUT/onnx-pools.log" 2>&1
echo "onnx pools/maps rc=$? $(el): $(tail -2 "$OUT/onnx-pools.log" | tr '\n' ' ')"
FUSEC_IMPORT_SMALL_MAP=0 timeout 200 python3 test/onnx/conformance.py "$D/bin/fusec-run" "$data/node" --jobs 16 --filter 'argmax|argmin|topk|gather|resize|pad|tile|slice|onehot|trilu|eyelike|range' > "$OUT/onnx-runtime-maps.log" 2>&1
echo "onnx run-time maps rc=$? $(el): $(tail -2 "$OUT/onnx-runtime-maps.log" | tr '\n' ' ')"
PROFILE_ONLY=column_sum,batch_norm_stats_nhwc,matrix_transpose,cross_entropy OUT=$OUT/profile \
  timeout $(( 560 - ($(date +%s) - t0) )) python3 bench/memory_profile.py > "$OUT/profile.log" 2>&1
echo "profile rc=$? $(el)"
sed -n '/^graph | who/,$p' "$OUT/profile.log"
(cd "$OUT" && tar -cJf logs.tar.xz *.log profile 2>/dev/null)
