#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: the ONNX
# conformance on the GPU path (issue #7). Every node test is imported, run
# through the pipeline and the JIT on the GPU, and compared with the
# expected outputs; test/onnx/expected.txt (the reference path's passes) is
# checked: each passes on the GPU too, or is skipped with a reason (a kernel
# fusec does not generate yet). Needs the static fusec-run staged by
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tests" bash bench/stage-gpu.sh
# Then the import tests' own backend test folders (make_onnx.py) on the GPU.
# Writes $OUT/onnx-gpu.log, onnx-gpu.json and onnx-gpu-made.log; a summary
# last.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_CACHE_DIR="$(mktemp -d)/fusec-cache"
data="$(mktemp -d)"
tar -C "$data" -xJf "$D/onnx-node.tar.xz"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
python3 test/onnx/conformance.py "$D/bin/fusec-run" "$data/node" --jobs 16 \
  --json "$OUT/onnx-gpu.json" > "$OUT/onnx-gpu.log" 2>&1
rc=$?
python3 - "$OUT/onnx-gpu.json" test/onnx/expected.txt <<'PY' | tee "$OUT/onnx-gpu-summary.txt"
import json, sys
r = json.load(open(sys.argv[1]))
want = [l.strip() for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
gpu_pass = [t for t in want if r.get(t, {}).get("status") == "pass"]
gpu_skip = [t for t in want if r.get(t, {}).get("status") == "skip"]
gpu_fail = [t for t in want if r.get(t, {}).get("status") == "fail"]
print(f"reference-path passes: {len(want)}; on the GPU: {len(gpu_pass)} pass, "
      f"{len(gpu_fail)} fail, {len(gpu_skip)} skipped")
reasons = {}
for t in gpu_skip:
    why = r[t]["reason"]
    key = why.split("'fusec.kernel'")[-1][:90] if "fusec.kernel" in why else why[:90]
    reasons.setdefault(key, []).append(t)
for k, ts in sorted(reasons.items(), key=lambda x: -len(x[1])):
    print(f"  skipped {len(ts)}: {k} (e.g. {ts[0]})")
for t in gpu_fail:
    print(f"  FAILED {t}: {r[t]['reason'][:200]}")
PY
grep -E "passed, .* failed" "$OUT/onnx-gpu.log"
# The import tests' own backend test folders (test/lit/Import/Inputs/
# make_onnx.py: ConvInteger with sums past 2^24, whose f32 runs must be
# exact on the tensor cores too, and tf_crop_and_resize), on the GPU.
made="$(mktemp -d)"
python3 test/lit/Import/Inputs/make_onnx.py "$made" >/dev/null
for d in "$made"/*/; do
  [ -d "$d/test_data_set_0" ] || continue
  "$D/bin/fusec-run" --onnx-test="$d" 2>&1 | tee -a "$OUT/onnx-gpu-made.log" || rc=1
done
exit $rc
