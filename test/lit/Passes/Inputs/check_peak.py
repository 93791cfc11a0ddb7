#!/usr/bin/env python3
"""After --fusec-pipeline, each graph's peak live memory is at most the
unfused graph's (fusec-roofline-report JSON)."""
import json
import os
import subprocess
import sys
import tempfile

opt = os.environ.get("FUSEC_OPT", "fusec-opt")
for graph in sys.argv[1:]:
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        subprocess.run([opt, graph, "--fusec-pipeline",
                        f"--fusec-roofline-report=format=json output={report}",
                        "-o", os.devnull], check=True, capture_output=True)
        r = json.load(open(report))
        t, u = r["totals"], r["unfused"]
        assert t["peak_bytes"] <= u["peak_bytes"], (graph, t, u)
        print(f"{os.path.basename(graph)}: peak {t['peak_bytes']} <= unfused {u['peak_bytes']}")
