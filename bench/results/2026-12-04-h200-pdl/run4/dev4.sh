#!/usr/bin/env bash
# Device call 4 (programmatic dependent launch of the attention intrinsic):
# the JIT tests (a kernel, the intrinsic, a kernel: bit for bit against
# serialized launches), the attention library's tests, the attention
# intrinsic under compute-sanitizer between two kernels, GPT-2 small and
# Llama at 32 x 1 with and without PDL.
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
timeout 120 "$D/bin/fusec-attention-tests" > "$OUT/attention-tests.log" 2>&1
echo "attention tests rc=$? $(el): $(tail -3 "$OUT/attention-tests.log" | tr '\n' ' ')"
cat > "$OUT/attn_chain.mlir" <<'G'
func.func @f(%q: tensor<2x8x200x64xbf16>, %k: tensor<2x4x200x64xbf16>, %v: tensor<2x4x200x64xbf16>) -> tensor<2x8x200x64xbf16> {
  %e = fusec.tanh %q : tensor<2x8x200x64xbf16>
  %0 = fusec.attention %e, %k, %v {scale = 0.125 : f64, causal} : (tensor<2x8x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> tensor<2x8x200x64xbf16>
  %1 = fusec.tanh %0 : tensor<2x8x200x64xbf16>
  return %1 : tensor<2x8x200x64xbf16>
}
G
timeout 60 "$D/bin/fusec-run" "$OUT/attn_chain.mlir" --runs=3 --warmup=1 --max-rel-l2=1e-2 > "$OUT/attn-chain.log" 2>&1
echo "attention chain rc=$? $(el): $(tail -1 "$OUT/attn-chain.log")"
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-run" "$OUT/attn_chain.mlir" --runs=2 --warmup=1 --max-rel-l2=1e-2 > "$OUT/sanitize-$tool.log" 2>&1
  echo "$tool rc=$? $(el): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | head -1)"
done
for m in gpt2-small llama; do
  MODELS_FUSEC_VARIANTS="nopdl:FUSEC_PDL=0" MODELS_TOP=30 BENCH_ONLY=$m BENCH_SHAPES=32x1 OUT=$OUT/models \
    timeout $(( 540 - ($(date +%s) - t0) )) python3 bench/models.py > "$OUT/models-$m.log" 2>&1
  echo "$m rc=$? $(el)"
done
grep -h "FAILED\|Failure" "$OUT/jit-tests.log" | head -5
for f in "$OUT"/models-*.log; do
  grep '^{' "$f" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["model"], r["batch"], r["seq"], "fusec", r.get("fusec_ms"), "nopdl", r.get("fusec_ms_nopdl"),
          "c+graphs", r.get("compile_ro_ms"), "relL2", r.get("rel_l2_vs_torch"), r.get("fusec_error", "")[:300])'
done
(cd "$OUT" && tar -cJf logs.tar.xz *.log *.mlir models 2>/dev/null)
