#!/usr/bin/env bash
# Device call 3 (2026-12-05, #15 column reductions, the shipped rule: 32
# groups while the tiles fill the SMs, else 16 or 8; tile-major units; f32
# presums): correctness against the interpreter (ragged, split, grouped
# variance), memcheck and racecheck, the example graphs, the JIT tests, the
# suite's column graphs against eager, Inductor and XLA, a few variants.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
W=$(mktemp -d)
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/machine.txt" > "$S"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
G=$W/graphs; mkdir -p "$G"
python3 - "$G" <<'PY'
import sys; sys.path.insert(0, "bench"); import memory_graphs as m
d = sys.argv[1]
cases = [("cs_8192x1000", m.column_sum(dict(rows=8192, cols=1000))),
         ("cs_3000x4096_f32", m.column_sum(dict(rows=3000, cols=4096, dt="f32"))),
         ("cs_65536x1024", m.column_sum(dict(rows=65536, cols=1024))),
         ("cs_100000x24", m.column_sum(dict(rows=100000, cols=24))),
         ("cs_16384x4096", m.column_sum(dict(rows=16384, cols=4096))),
         ("bns_nhwc_8x28x28x64", m.batch_norm_stats_nhwc(dict(n=8, h=28, w=28, c=64))),
         ("bns_nhwc_32x56x56x64", m.batch_norm_stats_nhwc(dict(n=32, h=56, w=56, c=64))),
         ("bns_nhwc_4x14x14x200", m.batch_norm_stats_nhwc(dict(n=4, h=14, w=14, c=200))),
         ("bns_nhwc_2x5x7x3", m.batch_norm_stats_nhwc(dict(n=2, h=5, w=7, c=3))),
         ("bns_nhwc_64x56x56x256", m.batch_norm_stats_nhwc(dict(n=64, h=56, w=56, c=256))),
         ("bns_16x64x32x32", m.batch_norm_stats(dict(n=16, c=64, h=32, w=32))),
         ("mean_pool_8x1000x520", m.mean_pool(dict(batch=8, seq=1000, dim=520))),
         ("mean_pool_32x4096x1024", m.mean_pool(dict(batch=32, seq=4096, dim=1024)))]
for name, g in cases:
    open(f"{d}/{name}.mlir", "w").write(g.mlir())
PY
pass=0; fail=0
for f in "$G"/*.mlir; do
  n=$(basename "$f" .mlir)
  timeout 150 "$D/bin/fusec-run" "$f" --runs=2 --warmup=1 > "$W/check-$n.log" 2>&1; rc=$?
  if [ $rc = 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $n rc=$rc: $(tail -3 "$W/check-$n.log")" | tee -a "$S"; fi
done
echo "column checks vs the interpreter: $pass pass, $fail fail $(el)" | tee -a "$S"
for n in cs_8192x1000 bns_nhwc_8x28x28x64 cs_3000x4096_f32 mean_pool_8x1000x520; do
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 "$D/bin/fusec-run" "$G/$n.mlir" --runs=1 --warmup=0 > "$W/$tool-$n.log" 2>&1
    echo "$tool $n rc=$? $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool-$n.log" | head -1)" | tee -a "$S"
  done
done
ex_pass=0; ex_fail=0
for fn in $(grep -o 'func.func @[A-Za-z0-9_]*' examples/memory_bound.mlir | cut -d@ -f2); do
  out=$(timeout 60 "$D/bin/fusec-run" examples/memory_bound.mlir --function="$fn" --runs=2 --warmup=1 2>&1); rc=$?
  if [ $rc = 0 ]; then ex_pass=$((ex_pass+1)); else ex_fail=$((ex_fail+1)); echo "FAIL example $fn rc=$rc: $(echo "$out" | tail -2)" | tee -a "$S"; fi
done
echo "examples/memory_bound.mlir: $ex_pass pass, $ex_fail fail $(el)" | tee -a "$S"
timeout 120 "$D/bin/fusec-jit-tests" > "$W/jit-tests.log" 2>&1
echo "jit tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/jit-tests.log" | tr '\n' ' ')" | tee -a "$S"
SUITE_ONLY=column_sum,batch_norm_stats,batch_norm_stats_nhwc,mean_pool timeout 300 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? $(el)" | tee -a "$S"
echo "kernel medians (us) of variants of the shipped rule:" | tee -a "$S"
for n in cs_16384x4096 cs_65536x1024 mean_pool_32x4096x1024 bns_nhwc_64x56x56x256; do
  line=$n
  for v in "rule:" "g16:FUSEC_COLUMN_GROUPS=16" "g32:FUSEC_COLUMN_GROUPS=32" "c3:FUSEC_COLUMN_CTAS_PER_SM=3" "u8:FUSEC_COLUMN_UNROLL=8" "u2:FUSEC_COLUMN_UNROLL=2"; do
    name=${v%%:*}; envs=${v#*:}
    r=$(env $envs "$D/bin/fusec-run" "$G/$n.mlir" --json --no-check --runs=40 --warmup=5 2>/dev/null | grep '^{' | tail -1 |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.1f/%d" % (sum(k["median_ms"] for k in r["kernels"])*1e3, len(r["kernels"])))' 2>/dev/null)
    line="$line | $name ${r:-err}"
  done
  echo "$line" | tee -a "$S"
done
echo "done $(el)" | tee -a "$S"
cp bench/out/memory_bound_suite.json "$OUT/" 2>/dev/null
(cd "$W" && tar -cJf "$OUT/logs.tar.xz" *.log)
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
