#!/usr/bin/env bash
# Device call 2: issue #18's check (examples, ONNX conv/pool/norm node
# tests, PyTorch-converted modules on the GPU path) and ResNet-50 /
# ViT-B/16 end to end under the ping-pong rule, and with it off and forced.
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib"
CONV_MODELS=resnet-50,vit-b16 CONV_FUSEC_VARIANTS="FUSEC_WGMMA_PINGPONG=0;FUSEC_WGMMA_PINGPONG=1" CONV_STEPS="check models" timeout 560 bash bench/convnets-gpu.sh > "$OUT/convnets-run.log" 2>&1
cat "$OUT/summary.txt"
python3 - <<'PY'
import json,os
d=json.load(open(os.environ["OUT"]+"/convnets-models.json"))
for r in d["models"]:
    print(r["model"], "fusec", r.get("fusec_ms"), "ro", r.get("compile_ro_ms"), "compile", r.get("compile_ms"), "eager", r.get("eager_ms"), "x", r.get("speedup_vs_best_compile"), "l2", r.get("rel_l2_vs_torch"), r.get("fusec_error","")[-300:])
    print(" variants", json.dumps({k: v["fusec_ms"] for k, v in (r.get("variants") or {}).items()}))
    print(" kinds", json.dumps(r.get("kernel_ms_by_kind")))
    for k in sorted(r.get("kernels",[]), key=lambda k:-k["median_ms"])[:12]:
        print("  %-28s %.4f pred %.4f %6.1f MB %s" % (k["name"], k["median_ms"], k["predicted_ms"] or 0, (k["bytes"] or 0)/1e6, k.get("strategy")))
PY
