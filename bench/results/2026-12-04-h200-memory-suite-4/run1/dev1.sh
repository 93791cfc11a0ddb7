#!/usr/bin/env bash
# Device call 1 (#15, split variance + column presum): correctness of the
# changed kernels at benchmark size against the interpreter, the rows they
# touch beside eager/Inductor/XLA, A/B variants, ncu sections for the
# column sum and the row quantization.
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
ls "$G" > "$OUT/graphs.txt"
for n in column_sum_16384x4096 column_sum_65536x1024 batch_norm_stats_64x256x56x56 batch_norm_stats_nhwc_64x56x56x256; do
  f="$G/$n.mlir"
  timeout 120 "$D/bin/fusec-run" "$f" --runs=1 --warmup=0 > "$OUT/check-$n.log" 2>&1
  echo "check $n rc=$? $(grep -o 'result #[0-9]: [^(]*' "$OUT/check-$n.log" | tr '\n' ' ')" | tee -a "$OUT/checks.txt"
done
echo "checks $(( $(date +%s) - t0 )) s"
SUITE_ONLY=column_sum,batch_norm_stats,batch_norm_stats_nhwc,row_quant_fp8,cast_bf16_scaled,head_split,swiglu_packed \
  OUT=$OUT timeout 300 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? $(( $(date +%s) - t0 )) s"
for v in "column_sum:FUSEC_COLUMN_PRESUM=0" "batch_norm_stats:FUSEC_SPLIT_VARIANCE=0"; do
  name=${v%%:*}; envs=${v#*:}
  for f in "$G/${name}_"*.mlir; do
    r=$(env $envs "$D/bin/fusec-run" "$f" --json --no-check --runs=20 --warmup=3 2>&1 | grep '^{' | tail -1)
    python3 - "$f" "$envs" "$r" <<'PY' | tee -a "$OUT/variants.txt"
import json, os, sys
f, envs, r = sys.argv[1:4]
try:
    j = json.loads(r)
    print(f"variant {os.path.basename(f)} [{envs}]: {j['end_to_end_ms']:.4f} ms; " +
          ", ".join(f"{k['strategy']} {k['median_ms']:.4f} ms {k['gb_per_s']:.0f} GB/s" for k in j["kernels"]))
except Exception as e:
    print(f"variant {os.path.basename(f)} [{envs}]: failed ({e}): {r[-200:]}")
PY
  done
done
echo "variants $(( $(date +%s) - t0 )) s"
for n in column_sum_16384x4096 row_quant_fp8_16384x8192; do
  f="$G/$n.mlir"
  timeout 90 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
    --launch-count 1 --launch-skip 1 "$D/bin/fusec-run" "$f" --no-check --runs=2 --warmup=0 > "$OUT/ncu-$n.txt" 2>&1
  echo "ncu $n rc=$?"
done
echo "ncu $(( $(date +%s) - t0 )) s"
echo "== summary"
cat "$OUT/checks.txt"
cat "$OUT/variants.txt"
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
for n in column_sum_16384x4096 row_quant_fp8_16384x8192; do
  grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|Theoretical Occ|Block Limit" "$OUT/ncu-$n.txt" | head -14
done
