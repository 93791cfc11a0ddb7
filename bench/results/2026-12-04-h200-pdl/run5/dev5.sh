#!/usr/bin/env bash
# Device call 5: the attention library's tests with the programmatic cases
# (each kernel kind launched with PDL allowed) and flags = 64 refused.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
timeout 150 "$D/bin/fusec-attention-tests" > "$OUT/attention-tests.log" 2>&1
echo "attention tests rc=$?: $(grep -c '^PASS' "$OUT/attention-tests.log") PASS lines"
grep -h "^FAIL" "$OUT/attention-tests.log" | head -5; tail -2 "$OUT/attention-tests.log"
