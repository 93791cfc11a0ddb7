#!/usr/bin/env bash
# Device call 4 (#15): row kernels of one input and one reduction ask for 64
# registers (.minnctapersm): fp8 row quantization against the interpreter
# at its benchmark size, beside Inductor/XLA, and FUSEC_ROW_MIN_CTAS=0.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
G=$(mktemp -d)
python3 bench/memory_bound_suite.py --write "$G" > /dev/null
f=$G/row_quant_fp8_16384x8192.mlir
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" "$f" --runs=1 --warmup=0 > "$OUT/check.log" 2>&1
echo "row_quant_fp8 16384x8192 under memcheck: rc=$? $(grep -o 'result #[0-9]: [^(]*' "$OUT/check.log" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
for v in X=1 FUSEC_ROW_MIN_CTAS=0 X=2 FUSEC_ROW_MIN_CTAS=0; do
  r=$(env $v "$D/bin/fusec-run" "$f" --json --no-check --runs=30 --warmup=5 2>&1 | grep '^{' | tail -1)
  echo "row_quant_fp8 [$v]: $(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(round(j["end_to_end_ms"]*1000,1), "us;", ", ".join(f"{k[\"strategy\"]} {k[\"median_ms\"]*1000:.1f} us" for k in j["kernels"]))' "$r" 2>&1)" | tee -a "$OUT/summary.txt"
done
SUITE_ONLY=row_quant_fp8 OUT=$OUT timeout 150 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "== summary"; cat "$OUT/summary.txt"; sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
