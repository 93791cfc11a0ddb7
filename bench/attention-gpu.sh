#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: the
# attention intrinsic's checks and benchmark (issue #8). Needs .device/ from
#   FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
# (which also stages fusec-attention-tests and libfusec_attention.so).
# Writes $OUT/attention-*.log and attention.json; a table last.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-attention-tests" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
rc=0
note() { echo "$*" | tee -a "$OUT/attention-summary.txt"; }
step() { # name, command...
  local name=$1; shift
  local start=$(date +%s%N)
  "$@" > "$OUT/$name.log" 2>&1
  local r=$?
  [ $r = 0 ] || rc=1
  note "$(printf '%-28s rc=%-3s %8d ms  %s' "$name" "$r" "$(( ($(date +%s%N) - start) / 1000000 ))" "$(tail -1 "$OUT/$name.log")")"
}
step sm90-ptx-tests timeout 60 "$D/bin/fusec-sm90-ptx-tests"
step attention-tests timeout 300 "$D/bin/fusec-attention-tests"
if command -v compute-sanitizer >/dev/null; then
  step attention-memcheck timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 "$D/bin/fusec-attention-tests" --quick
  step attention-racecheck timeout 300 compute-sanitizer --tool racecheck --error-exitcode 3 "$D/bin/fusec-attention-tests" --quick
  step attention-synccheck timeout 300 compute-sanitizer --tool synccheck --error-exitcode 3 "$D/bin/fusec-attention-tests" --quick
fi
FUSEC_ATTENTION_LIB="$D/lib/libfusec_attention.so" PYTHONUNBUFFERED=1 \
  step attention-bench timeout 400 python3 bench/attention.py --json "$OUT/attention.json" ${ATTENTION_ARGS:-}
sed -n '/^TFLOP/,$p' "$OUT/attention-bench.log"
exit $rc
