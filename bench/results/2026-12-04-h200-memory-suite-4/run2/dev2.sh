#!/usr/bin/env bash
# Device call 2 (#15): correctness of the changed kernels at benchmark size
# against the interpreter; fusec-only timing variants (column unroll/split,
# row occupancy bound, the grouped channels-last variance per kernel).
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/machine.txt"
t0=$(date +%s)
G=$(mktemp -d)
python3 bench/memory_bound_suite.py --write "$G" > /dev/null
for n in column_sum_16384x4096 column_sum_65536x1024 batch_norm_stats_64x256x56x56 batch_norm_stats_nhwc_64x56x56x256; do
  timeout 120 "$D/bin/fusec-run" "$G/$n.mlir" --runs=1 --warmup=0 > "$OUT/check-$n.log" 2>&1
  echo "check $n rc=$? $(grep -o 'result #[0-9]: [^(]*' "$OUT/check-$n.log" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done
FUSEC_ROW_MIN_CTAS=4 timeout 120 "$D/bin/fusec-run" "$G/row_quant_fp8_16384x8192.mlir" --runs=1 --warmup=0 > "$OUT/check-rq4.log" 2>&1
echo "check row_quant MIN_CTAS=4 rc=$? $(grep -o 'result #[0-9]: [^(]*' "$OUT/check-rq4.log" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
echo "checks $(( $(date +%s) - t0 )) s"
run() { # graph env...
  local g=$1; shift
  local r
  r=$(env "$@" "$D/bin/fusec-run" "$G/$g.mlir" --json --no-check --runs=30 --warmup=5 2>&1 | grep '^{' | tail -1)
  python3 - "$g" "$*" "$r" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
g, envs, r = sys.argv[1:4]
try:
    j = json.loads(r)
    print(f"{g} [{envs or 'default'}]: {j['end_to_end_ms']*1000:.1f} us; " +
          ", ".join(f"{k['strategy']} {k['median_ms']*1000:.1f} us" for k in j["kernels"]))
except Exception as e:
    print(f"{g} [{envs}]: failed ({e}): {r[-200:]}")
PY
}
for g in column_sum_16384x4096 column_sum_65536x1024; do
  for v in X=1 FUSEC_COLUMN_UNROLL=2 FUSEC_COLUMN_UNROLL=8 FUSEC_COLUMN_UNROLL=16 FUSEC_COLUMN_CTAS_PER_SM=8 FUSEC_COLUMN_CTAS_PER_SM=2 FUSEC_COLUMN_PRESUM=0; do run $g $v; done
done
for g in batch_norm_stats_nhwc_64x56x56x256 batch_norm_stats_64x256x56x56; do
  for v in X=1 FUSEC_COLUMN_UNROLL=8; do run $g $v; done
done
for g in row_quant_fp8_16384x8192 rms_norm_residual_16384x4096 residual_layer_norm_8192x4096 softmax_backward_16384x8192 cross_entropy_8192x50304; do
  for v in X=1 FUSEC_ROW_MIN_CTAS=2 FUSEC_ROW_MIN_CTAS=3 FUSEC_ROW_MIN_CTAS=4; do run $g $v; done
done
echo "variants $(( $(date +%s) - t0 )) s"
echo "== summary"; cat "$OUT/summary.txt"
