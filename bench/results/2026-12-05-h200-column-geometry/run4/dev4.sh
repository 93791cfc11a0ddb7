#!/usr/bin/env bash
# Device call 4 (2026-12-05): unroll 8 for column kernels of more than one
# reduction: the grouped variances checked against the interpreter and
# under memcheck, then the suite's two BatchNorm statistics graphs.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
W=$(mktemp -d); G=$W/graphs; mkdir -p "$G"; S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/machine.txt" > "$S"
python3 - "$G" <<'PY'
import sys; sys.path.insert(0, "bench"); import memory_graphs as m
d = sys.argv[1]
for name, g in [("bns_nhwc_8x28x28x64", m.batch_norm_stats_nhwc(dict(n=8, h=28, w=28, c=64))),
                ("bns_nhwc_4x14x14x200", m.batch_norm_stats_nhwc(dict(n=4, h=14, w=14, c=200))),
                ("bns_nhwc_2x5x7x3", m.batch_norm_stats_nhwc(dict(n=2, h=5, w=7, c=3))),
                ("bns_nhwc_64x56x56x256", m.batch_norm_stats_nhwc(dict(n=64, h=56, w=56, c=256))),
                ("bns_16x64x32x32", m.batch_norm_stats(dict(n=16, c=64, h=32, w=32)))]:
    open(f"{d}/{name}.mlir", "w").write(g.mlir())
PY
for f in "$G"/*.mlir; do
  n=$(basename "$f" .mlir)
  timeout 100 "$D/bin/fusec-run" "$f" --runs=2 --warmup=1 > "$W/check-$n.log" 2>&1
  echo "check $n rc=$? $(grep -hE 'max|PASS|FAIL' "$W/check-$n.log" | head -1)" | tee -a "$S"
done
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-run" "$G/bns_nhwc_4x14x14x200.mlir" --runs=1 --warmup=0 > "$W/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -h 'ERROR SUMMARY' "$W/memcheck.log")" | tee -a "$S"
SUITE_JAX=1 SUITE_ONLY=batch_norm_stats,batch_norm_stats_nhwc timeout 150 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$?" | tee -a "$S"
(cd "$W" && tar -cJf "$OUT/logs.tar.xz" *.log)
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
