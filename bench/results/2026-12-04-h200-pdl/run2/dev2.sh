#!/usr/bin/env bash
# Device call 2 (programmatic dependent launch): the JIT tests (the PDL
# chain test's reference check loosened to the values' scale), the models
# at decode and prefill with and without PDL, random graphs of mixed types.
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
PARTS=random CAMPAIGN_SECONDS=60 RANDOM_SEED_BASE=720 OUT=$OUT/rel timeout 100 bash bench/reliability-gpu.sh > "$OUT/random.log" 2>&1
echo "random rc=$? $(el)"; grep -h "^random graphs" "$OUT/rel/summary.txt" 2>/dev/null
MODELS_FUSEC_VARIANTS="nopdl:FUSEC_PDL=0" MODELS_TOP=20 BENCH_ONLY=llama BENCH_SHAPES=32x1,4x1024 OUT=$OUT/models \
  timeout 250 python3 bench/models.py > "$OUT/models-llama.log" 2>&1
echo "llama rc=$? $(el)"
MODELS_FUSEC_VARIANTS="nopdl:FUSEC_PDL=0" MODELS_TOP=20 BENCH_ONLY=gpt2-small BENCH_SHAPES=4x1024 OUT=$OUT/models \
  timeout $(( 570 - ($(date +%s) - t0) )) python3 bench/models.py > "$OUT/models-gpt2.log" 2>&1
echo "gpt2 rc=$? $(el)"
grep -h "FAILED\|Failure" "$OUT/jit-tests.log" | head -5
echo "== models"
for f in "$OUT"/models-llama.log "$OUT"/models-gpt2.log; do
  grep '^{' "$f" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["model"], f"{r[\"batch\"]}x{r[\"seq\"]}", "fusec", r.get("fusec_ms"), "nopdl", r.get("fusec_ms_nopdl"),
          "compile", r.get("compile_ms"), "c+graphs", r.get("compile_ro_ms"), "relL2", r.get("rel_l2_vs_torch"), r.get("fusec_error", "")[:200])'
  sed -n '/^model /,$p' "$f"
done
(cd "$OUT" && tar -cJf logs.tar.xz *.log rel/summary.txt models 2>/dev/null)
