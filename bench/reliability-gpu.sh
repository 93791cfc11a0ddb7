#!/usr/bin/env bash
# Runs on the GPU machine (device tool, `carry: [".device"]`) from the
# repository root: issue #19's GPU campaigns with the static tools
#   FUSEC_GPU_TOOLS="fusec-run fusec-opt fusec-runtime-tests fusec-jit-tests" bash bench/stage-gpu.sh
# put in .device/. In one call:
# 1. the runtime and JIT tests on the GPU (the fault-injection tests among
#    them: allocations failing one by one through an Executable's setup, a
#    module that fails to load, nvJitLink failing);
# 2. faults injected into fusec-run (FUSEC_INJECT_FAULTS), each outcome
#    checked: a clean error or a correct result, and a cache that still works;
# 3. random graphs (test/random/random_graphs.py --gpu): the whole JIT path
#    against the interpreter, RANDOM_COUNT graphs per type (f32, bf16, f16,
#    mixed) from RANDOM_FIRST, RANDOM_BATCH graphs a fusec-run process
#    (--batch: one JIT and CUDA context for them), each type until its share
#    of what is left of CAMPAIGN_SECONDS has passed (RANDOM_SECONDS fixes it);
# 4. a sample of them under compute-sanitizer memcheck and racecheck.
# 5. concats of 12 to 1000 parts (test/lit/Passes/Inputs/gen_adversarial.py),
#    the code that picks a part by branches, against the interpreter, one
#    under memcheck.
# 6. where staged, fusec-jit-tsan-tests: runs from many threads under TSan
#    (step `tsan`, not in the default PARTS).
# PARTS (default "tests faults random sanitize concat") picks the steps, so
# that a second call can go on with the campaign alone (RANDOM_FIRST past
# the first call's graphs, or other seeds: RANDOM_SEED_BASE, default 100).
# The summary and the fault table under $OUT; every log, each campaign's
# JSON and every failing graph in $OUT/results.tar.xz; a short table last.
set -uo pipefail
# Everything goes to $OUT/work, packed at the end into $OUT/results.tar.xz
# (the device tool brings back few files); the summary stays beside it.
FINAL="${OUT:-$PWD/bench/out}"
OUT="$FINAL/work"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-run" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
BIN="$D/bin"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_SOURCE_DIR="$PWD"
export FUSEC_CACHE_DIR="${FUSEC_CACHE_DIR:-$(mktemp -d)/fusec-cache}"
export PYTHONUNBUFFERED=1
JOBS=${JOBS:-$(nproc)}
COUNT=${RANDOM_COUNT:-2500}
FIRST=${RANDOM_FIRST:-0}
BATCH=${RANDOM_BATCH:-32}
BUDGET=${CAMPAIGN_SECONDS:-530}
SAN_COUNT=${SANITIZE_COUNT:-64}
SEED_BASE=${RANDOM_SEED_BASE:-100}
PARTS=" ${PARTS:-tests faults random sanitize concat} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
SECONDS=0
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  compute-sanitizer --version 2>&1 | tail -1
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"
summary="$OUT/summary.txt"
: > "$summary"

# 1. The runtime and JIT tests.
part tests && for t in fusec-runtime-tests fusec-jit-tests; do
  if [ -x "$BIN/$t" ]; then
    timeout 300 "$BIN/$t" > "$OUT/$t.log" 2>&1
    rc=$?
    line=$(grep -E '^\[  PASSED  \]|FAILED TEST|tests? ran' "$OUT/$t.log" | tr '\n' ' ')
    echo "$t: rc=$rc $line" | tee -a "$summary"
  fi
done

# The JIT's runs from many threads on the GPU under ThreadSanitizer, where
# fusec-jit-tsan-tests was staged (static build, libtsan linked in:
#   FUSEC_GPU_TOOLS="fusec-jit-tsan-tests ..." bash bench/stage-gpu.sh).
if part tsan && [ -x "$BIN/fusec-jit-tsan-tests" ]; then
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/test/unit/Jit/tsan.supp" \
    timeout 300 "$BIN/fusec-jit-tsan-tests" > "$OUT/jit-tsan-tests.log" 2>&1
  rc=$?
  line=$(grep -E '^\[  PASSED  \]|FAILED TEST|SUMMARY: ThreadSanitizer' "$OUT/jit-tsan-tests.log" | tr '\n' ' ')
  echo "fusec-jit-tsan-tests: rc=$rc $line" | tee -a "$summary"
fi

# 2. Faults injected into fusec-run.
G="$PWD/test/lit/tools/Inputs/elementwise.mlir"
M="$OUT/matmul.mlir"
cat > "$M" <<'EOF'
func.func @f(%x: tensor<300x256xbf16>, %w: tensor<256x192xbf16>, %b: tensor<300x192xf32>) -> tensor<300x192xf32> {
  %m = fusec.matmul %x, %w : (tensor<300x256xbf16>, tensor<256x192xbf16>) -> tensor<300x192xf32>
  %s = fusec.softmax %m dim 1 : tensor<300x192xf32>
  %r = fusec.add %s, %b : tensor<300x192xf32>
  return %r : tensor<300x192xf32>
}
EOF
faults="$OUT/faults.txt"
: > "$faults"
# fault NAME SPEC EXPECT GRAPH: EXPECT is "error:TEXT" (exit 1 or 2 and TEXT
# in the output) or "ok" (exit 0: the result matched the interpreter).
fault() {
  local name=$1 spec=$2 expect=$3 graph=$4 log="$OUT/fault-$1.log" rc outcome
  FUSEC_INJECT_FAULTS="$spec" timeout 120 "$BIN/fusec-run" "$graph" --runs=1 --warmup=0 > "$log" 2>&1
  rc=$?
  case $expect in
    ok) [ $rc = 0 ] && outcome=as-expected || outcome=UNEXPECTED ;;
    error:*) if { [ $rc = 1 ] || [ $rc = 2 ]; } && grep -qF "${expect#error:}" "$log"; then outcome=as-expected; else outcome=UNEXPECTED; fi ;;
    killed) [ $rc = 137 ] && outcome=as-expected || outcome=UNEXPECTED ;;
    any) if [ $rc = 0 ]; then outcome=not-reached
         elif { [ $rc = 1 ] || [ $rc = 2 ]; } && grep -qF "injected fault" "$log"; then outcome=as-expected
         else outcome=UNEXPECTED; fi ;;
  esac
  # After every fault the same command without it must work (and match).
  timeout 120 "$BIN/fusec-run" "$graph" --runs=1 --warmup=0 > "$log.after" 2>&1
  local after=$?
  [ $after = 0 ] && after=ok || after="FAIL($after)"
  printf '%-22s %-26s rc=%-4s %-12s then without the fault: %s | %s\n' "$name" "$spec" "$rc" "$outcome" "$after" \
    "$(grep -m1 -E 'error|injected|match|result #0' "$log" | cut -c1-150)" | tee -a "$faults"
}
if part faults; then
fault driver driver "error:no CUDA driver" "$G"
# Each compile-time fault starts from an empty kernel cache (a cached cubin
# never reaches nvJitLink).
rm -rf "$FUSEC_CACHE_DIR"
fault nvjitlink nvjitlink "error:injected fault" "$G"
rm -rf "$FUSEC_CACHE_DIR"
fault module module@1 "error:injected fault" "$G"
for n in 1 2 3 4 5 6 8 10; do
  fault "alloc-$n" "alloc@$n" "any" "$M"
done
fault cache-write cache-write ok "$M"
rm -rf "$FUSEC_CACHE_DIR"
fault cache-kill cache-kill@1 killed "$M"
# The cache directory a regular file: compiles are served, nothing written.
FUSEC_CACHE_DIR="$G/cache" timeout 120 "$BIN/fusec-run" "$M" --runs=1 --warmup=0 > "$OUT/fault-nodir.log" 2>&1
echo "cache-dir-unwritable   FUSEC_CACHE_DIR=<file>/cache rc=$? (0: served)" | tee -a "$faults"
unexpected=$(grep -c UNEXPECTED "$faults")
after_fail=$(grep -c 'then without the fault: FAIL' "$faults")
echo "faults injected into fusec-run: $(grep -c ' rc=' "$faults") cases, $unexpected unexpected outcomes, $after_fail later runs failing" | tee -a "$summary"
fi

# 3. Random graphs, the whole JIT path against the interpreter.
seed=0
left=4
part random && for dt in f32 bf16 f16 mixed; do
  seed=$((seed + 1))
  # This type's share of the time left, the sanitizers' 45 s kept aside.
  share=${RANDOM_SECONDS:-$(( (BUDGET - SECONDS - 45) / left ))}
  left=$((left - 1))
  python3 test/random/random_graphs.py "$BIN/fusec-run" --gpu --dtype $dt --seed $((SEED_BASE + seed)) \
    --first "$FIRST" --count "$COUNT" --jobs "$JOBS" --batch "$BATCH" --deadline "$share" --minimize \
    --keep "$OUT/random-$dt" --json "$OUT/random-$dt.json" --timeout 120 > "$OUT/random-$dt.log" 2>&1
  tail -1 "$OUT/random-$dt.log" | tee -a "$summary"
done

# 4. A sample under the sanitizers.
part sanitize && python3 test/random/random_graphs.py "$BIN/fusec-run" --gpu --sanitize memcheck --dtype mixed --seed 201 \
  --count "$SAN_COUNT" --jobs "$JOBS" --keep "$OUT/memcheck" --json "$OUT/memcheck.json" --timeout 300 \
  > "$OUT/memcheck.log" 2>&1
part sanitize && tail -1 "$OUT/memcheck.log" | tee -a "$summary"
part sanitize && python3 test/random/random_graphs.py "$BIN/fusec-run" --gpu --sanitize racecheck --dtype mixed --seed 202 \
  --count $((SAN_COUNT / 2)) --jobs "$JOBS" --keep "$OUT/racecheck" --json "$OUT/racecheck.json" --timeout 300 \
  > "$OUT/racecheck.log" 2>&1
part sanitize && tail -1 "$OUT/racecheck.log" | tee -a "$summary"
# 5. Wide concats.
if part concat; then
  for n in 12 41 300 600 1000; do
    python3 test/lit/Passes/Inputs/gen_adversarial.py concat $n > "$OUT/concat$n.mlir"
    start=$SECONDS
    timeout 300 "$BIN/fusec-run" "$OUT/concat$n.mlir" --runs=3 --warmup=1 > "$OUT/concat$n.log" 2>&1
    rc=$?
    echo "concat of $n parts: rc=$rc in $((SECONDS - start)) s: $(grep -m1 'result #0' "$OUT/concat$n.log")" | tee -a "$summary"
  done
  compute-sanitizer --tool memcheck --error-exitcode=97 "$BIN/fusec-run" "$OUT/concat41.mlir" --runs=1 --warmup=0 \
    > "$OUT/concat41-memcheck.log" 2>&1
  echo "concat of 41 parts under memcheck: rc=$? $(grep -m1 'ERROR SUMMARY' "$OUT/concat41-memcheck.log")" | tee -a "$summary"
fi
echo "elapsed: ${SECONDS} s" | tee -a "$summary"

cp "$summary" "$OUT/machine.txt" "$FINAL/"
[ -f "$OUT/faults.txt" ] && cp "$OUT/faults.txt" "$FINAL/"
tar -C "$OUT" -cJf "$FINAL/results.tar.xz" . && rm -rf "$OUT"
echo
echo "== summary =="
cat "$FINAL/summary.txt"
