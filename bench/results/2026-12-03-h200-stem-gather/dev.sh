#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/.."
CONV_MODELS=resnet-50,vit-b16 CONV_STEPS="check models" timeout 560 bash bench/convnets-gpu.sh
python3 - <<'PY'
import json,os
d=json.load(open(os.environ["OUT"]+"/convnets-models.json"))
for r in d["models"]:
    print(r["model"], r.get("fusec_ms"), r.get("compile_ro_ms"), r.get("compile_ms"), r.get("speedup_vs_best_compile"), r.get("rel_l2_vs_torch"))
    print(" kinds", json.dumps(r.get("kernel_ms_by_kind")))
    for k in r.get("top_kernels",[])[:4]: print("  ", k["name"], k["median_ms"], k["predicted_ms"])
PY
