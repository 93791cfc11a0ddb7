#!/usr/bin/env bash
# The split-KV decode kernel: the intrinsic's tests (and sanitizers), the
# torch correctness set, and decode speed against SDPA's backends and a copy;
# then bench/decode_gemm_probe.py (issue #14's decode GEMMs under ncu).
# Attention binaries built here with nvcc into .device/new/; fusec-run staged
# by FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh.
export PYTHONUNBUFFERED=1
N=.device/new
timeout 240 $N/fusec-attention-tests > $OUT/attention-tests.log 2>&1; echo "attention-tests rc=$?"; tail -1 $OUT/attention-tests.log
grep FAIL $OUT/attention-tests.log | head -20
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 $N/fusec-attention-tests --quick > $OUT/$tool.log 2>&1
  echo "$tool rc=$?"; tail -1 $OUT/$tool.log
done
export FUSEC_ATTENTION_LIB=$N/libfusec_attention.so
timeout 200 python3 bench/attention.py --no-speed > $OUT/correctness.log 2>&1; echo "correctness rc=$?"; tail -1 $OUT/correctness.log
grep -i fail $OUT/correctness.log | head
timeout 240 python3 bench/attention.py --no-correctness --decode default --json $OUT/decode.json > $OUT/decode.log 2>&1; echo "decode rc=$?"
sed -n '/^decode, f16/,$p' $OUT/decode.log
if [ "${GEMM_PROBE:-1}" = 1 ]; then
  D=$PWD/.device
  [ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-run" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
  export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_CACHE_DIR=$(mktemp -d)
  timeout 200 python3 bench/decode_gemm_probe.py > $OUT/decode-gemm.log 2>&1; echo "gemm probe rc=$?"
  sed -n '/^shape/,$p' $OUT/decode-gemm.log; tail -3 $OUT/decode-gemm.log
fi
# A/B: the same decode set with another build of the library (ALT_LIB), e.g.
# without the L2 prefetch hint on the split kernel's K/V loads.
if [ -n "${ALT_LIB:-}" ]; then
  FUSEC_ATTENTION_LIB=$ALT_LIB timeout 240 python3 bench/attention.py --no-correctness --decode default --json $OUT/decode-alt.json > $OUT/decode-alt.log 2>&1; echo "decode (alt) rc=$?"
  sed -n '/^decode, f16/,$p' $OUT/decode-alt.log
fi
