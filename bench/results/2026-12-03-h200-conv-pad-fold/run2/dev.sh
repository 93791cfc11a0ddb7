#!/usr/bin/env bash
# Device run 2: the residual matmuls under the L2-footprint rule (default)
# and forced on/off, then issue #18's check (examples, ONNX conv/pool/norm
# node tests, PyTorch-converted modules on the GPU path) and ResNet-50 /
# ViT-B/16 end to end with the prefetch by the rule, off and forced.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib"
P="$(mktemp -d)"
for f in res res2 bneck bneck2; do
  for v in rule 0 1; do
    case $f in bneck*) [ $v = rule ] || continue ;; esac
    env=(); [ $v = rule ] || env=(FUSEC_EPILOGUE_PREFETCH=$v)
    check=--no-check; [ $f != res ] && [ $v = rule ] && check=
    env "${env[@]}" FUSEC_CACHE_DIR="$P/cache" timeout 120 "$D/bin/fusec-run" "$D/probe/$f.mlir" $check --runs=20 --warmup=3 > "$P/$f-$v.txt" 2>&1
    echo "== $f prefetch=$v"; grep -E "matmul|PASS|FAIL|rror|matches" "$P/$f-$v.txt"
  done
done
tar -C "$P" -czf "$OUT/probe.tar.gz" --exclude cache .
CONV_MODELS=resnet-50,vit-b16 CONV_FUSEC_VARIANTS="FUSEC_EPILOGUE_PREFETCH=0;FUSEC_EPILOGUE_PREFETCH=1" CONV_STEPS="check models" timeout 470 bash bench/convnets-gpu.sh > "$OUT/convnets-run.log" 2>&1
cat "$OUT/summary.txt"
python3 - <<'PY'
import json,os
d=json.load(open(os.environ["OUT"]+"/convnets-models.json"))
for r in d["models"]:
    print(r["model"], "fusec", r.get("fusec_ms"), "ro", r.get("compile_ro_ms"), "compile", r.get("compile_ms"), "eager", r.get("eager_ms"), "x", r.get("speedup_vs_best_compile"), "l2", r.get("rel_l2_vs_torch"), r.get("fusec_error","")[-300:])
    print(" variants", json.dumps({k: v["fusec_ms"] for k, v in (r.get("variants") or {}).items()}))
    print(" kinds", json.dumps(r.get("kernel_ms_by_kind")))
    for k in sorted(r.get("kernels",[]), key=lambda k:-k["median_ms"])[:12]:
        print("  %-28s %.4f pred %.4f %6.1f MB" % (k["name"], k["median_ms"], k["predicted_ms"] or 0, (k["bytes"] or 0)/1e6))
PY
