#!/usr/bin/env bash
# Device run: the epilogue's L2 prefetch on two residual matmuls (on, off),
# bottleneck graphs whose conv_pad folded into the producer's store
# (against the interpreter), the example graphs, then ResNet-50 and
# ViT-B/16 end to end (prefetch on and off) against torch.compile; ncu last.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib"
export FUSEC_CACHE_DIR="$(mktemp -d)"
mkdir -p "$OUT/probe"
for f in bneck bneck2; do
  timeout 60 "$D/bin/fusec-run" "$D/probe/$f.mlir" > "$OUT/probe/$f.txt" 2>&1; echo "== $f rc=$?"; grep -E "PASS|FAIL|rror|mismatch" "$OUT/probe/$f.txt" | head -5
done
for f in res res2; do
  for v in 1 0; do
    check=--no-check
    [ $f = res2 ] && [ $v = 1 ] && check=
    FUSEC_EPILOGUE_PREFETCH=$v timeout 120 "$D/bin/fusec-run" "$D/probe/$f.mlir" $check --runs=20 --warmup=3 > "$OUT/probe/$f-pf$v.txt" 2>&1
    echo "== $f prefetch=$v"; grep -E "matmul|PASS|FAIL|rror|end to end" "$OUT/probe/$f-pf$v.txt"
  done
done
EXAMPLES_ONLY=1 OUT="$OUT/examples" timeout 200 bash bench/codegen-gpu.sh > "$OUT/examples.log" 2>&1
grep -E "^(FAIL|SKIP)|examples on the GPU|rc=" "$OUT/examples.log"
CONV_MODELS=resnet-50,vit-b16 CONV_FUSEC_VARIANTS="FUSEC_EPILOGUE_PREFETCH=0" CONV_STEPS="models" timeout 330 bash bench/convnets-gpu.sh > "$OUT/convnets-run.log" 2>&1
python3 - <<'PY'
import json,os
d=json.load(open(os.environ["OUT"]+"/convnets-models.json"))
for r in d["models"]:
    print(r["model"], "fusec", r.get("fusec_ms"), "ro", r.get("compile_ro_ms"), "compile", r.get("compile_ms"), "x", r.get("speedup_vs_best_compile"), "l2", r.get("rel_l2_vs_torch"), r.get("fusec_error","")[-300:])
    print(" variants", json.dumps(r.get("variants")))
    print(" kinds", json.dumps(r.get("kernel_ms_by_kind")))
    for k in sorted(r.get("kernels",[]), key=lambda k:-k["median_ms"])[:24]:
        print("  %-28s %.4f pred %.4f %6.1f MB %s" % (k["name"], k["median_ms"], k["predicted_ms"] or 0, (k["bytes"] or 0)/1e6, k["strategy"]))
PY
for v in 1 0; do
  FUSEC_EPILOGUE_PREFETCH=$v timeout 45 ncu --kernel-name regex:matmul --launch-count 1 --section SpeedOfLight \
    "$D/bin/fusec-run" "$D/probe/res.mlir" --no-check --runs=1 --warmup=0 > "$OUT/probe/ncu-res-pf$v.txt" 2>&1
  echo "== ncu res prefetch=$v"; grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)" "$OUT/probe/ncu-res-pf$v.txt"
done
