#!/usr/bin/env bash
# The JIT's runs from many threads on the H200 under ThreadSanitizer (issue
# #19): fusec-jit-tsan-tests from the static build (libtsan linked in, the
# GPU machine has no LLVM), staged by
#   FUSEC_GPU_TOOLS="fusec-jit-tsan-tests" bash bench/stage-gpu.sh
# One Jit shared by 8 threads, a Jit per thread over one cache directory,
# runs of one Executable from many threads on their own streams (graph
# replay on and off), a tensor-core matmul from many threads, and graph
# replays alternating between buffer sets. A race report fails the run
# (halt_on_error, exit 66).
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-jit-tsan-tests" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_SOURCE_DIR=$PWD
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/test/unit/Jit/tsan.supp" \
  timeout 170 "$D/bin/fusec-jit-tsan-tests" > "$OUT/jit-tsan-tests.log" 2>&1
echo "fusec-jit-tsan-tests rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|WARNING: ThreadSanitizer|SUMMARY" "$OUT/jit-tsan-tests.log" | head -20
