#!/usr/bin/env python3
"""Puts measured kernel times on the roofline: reads the memory_bound.json of
a GPU run (bench/memory_bound.py), rebuilds each timed graph as a function of
one module, and runs `fusec-opt --fusec-pipeline --fusec-roofline-report`
with the fusec times as measurements (measured=...). Writes, beside the JSON:
roofline.txt, roofline.json and roofline.svg (predicted and measured points,
the measured/predicted ratio per kernel). Runs here; no GPU needed.

  python3 bench/roofline_measured.py bench/results/<run>/memory_bound.json \
      [--target h200-measured] [--bin build/bin]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory_bound as mb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--target", default="h200-measured")
    ap.add_argument("--bin", default="build/bin")
    a = ap.parse_args()
    runs = json.load(open(a.results))
    funcs, measured = [], []
    for r in runs["speed"]:
        if not r.get("fusec_ms"):
            continue
        if "shape" in r:
            rows, cols = r["shape"]
            fn = f"{r['graph']}_{rows}x{cols}"
            text = mb.row_mlir(r["graph"], rows, cols, r["dtype"])
        else:
            fn = f"{r['graph']}_{r['n']}"
            text = mb.mlir(r["graph"], r["n"], r["dtype"])
        funcs.append(re.sub(r"func\.func @\w+", f"func.func @{fn}", text, count=1))
        measured.append({"function": fn, "median_ms": r["fusec_ms"]})
    out = os.path.dirname(os.path.abspath(a.results))
    tmp = tempfile.mkdtemp()
    module = os.path.join(tmp, "graphs.mlir")
    open(module, "w").write("\n".join(funcs))
    mfile = os.path.join(out, "measured.json")
    json.dump(measured, open(mfile, "w"), indent=1)
    opt = os.path.join(a.bin, "fusec-opt")
    for fmt, name in (("text", "roofline.txt"), ("json", "roofline.json")):
        extra = f" svg={os.path.join(out, 'roofline.svg')}" if fmt == "json" else ""
        subprocess.run([opt, module, "--fusec-pipeline",
                        f"--fusec-roofline-report=target={a.target} format={fmt} "
                        f"output={os.path.join(out, name)} measured={mfile}{extra}",
                        "-o", os.devnull], check=True)
    report = json.load(open(os.path.join(out, "roofline.json")))
    print(f"{'kernel':40s} {'bound':6s} {'predicted':>10s} {'measured':>10s} {'meas/pred':>9s}")
    for k in report["kernels"]:
        if "measured_us" in k:
            print(f"{k['function'] + '/' + k['name']:40s} {k['bound']:6s} {k['predicted_us']:8.1f}us "
                  f"{k['measured_us']:8.1f}us {k['measured_over_predicted']:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
