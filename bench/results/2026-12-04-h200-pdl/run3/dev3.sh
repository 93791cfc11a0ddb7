#!/usr/bin/env bash
# Device call 3 (programmatic dependent launch): the JIT tests (the PDL test's
# launch counts corrected: a run's first launches follow their tensor-map
# table copies), GPT-2 small at 32 x 1 and 4 x 1024 with PDL, then without
# it, then with it again (the order's effect on the prefill figure).
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
MODELS_FUSEC_VARIANTS="nopdl:FUSEC_PDL=0;pdl:FUSEC_PDL=1" MODELS_TOP=30 BENCH_ONLY=gpt2-small BENCH_SHAPES=32x1,4x1024 OUT=$OUT/models \
  timeout 420 python3 bench/models.py > "$OUT/models-gpt2.log" 2>&1
echo "gpt2 rc=$? $(el)"
grep -h "FAILED\|Failure" "$OUT/jit-tests.log" | head -5
grep '^{' "$OUT/models-gpt2.log" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["model"], r["batch"], r["seq"], "fusec", r.get("fusec_ms"), "nopdl", r.get("fusec_ms_nopdl"),
          "pdl again", r.get("fusec_ms_pdl"), "c+graphs", r.get("compile_ro_ms"), "relL2", r.get("rel_l2_vs_torch"))'
sed -n '/^model /,$p' "$OUT/models-gpt2.log"
