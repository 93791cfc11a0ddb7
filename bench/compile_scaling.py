#!/usr/bin/env python3
"""Compile cost of the fusec pipeline against graph size.

Generates synthetic graphs of N primitive ops (a chain of normalization-like
blocks with residual adds and side branches, f32, 64x256 tensors), runs
`fusec-opt --fusec-pipeline` on each (parse, all passes, print) and reports
the wall time, the time per op and the kernel count, so that linear growth is
visible. Writes JSON to --out and prints a table last.

usage: compile_scaling.py [--fusec-opt build/bin/fusec-opt] [--sizes 1000,2000,5000,10000]
                          [--repeat 3] [--out results.json]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time

T = "tensor<128x128xf32>"
R = "tensor<128xf32>"


def block(i, h):
    """10 primitive ops: h -> (normalize along rows or columns, exp branch,
    residual). Blocks alternate the reduced dimension, and every third one
    starts with a transpose (instead of the square), so fusion has real
    boundaries to find."""
    n = f"b{i}_"
    dim, keep = (1, 0) if i % 2 == 0 else (0, 1)
    first = (f"  %{n}sq = fusec.transpose {h} perm [1, 0] : {T} -> {T}" if i % 3 == 2
             else f"  %{n}sq = fusec.mul {h}, {h} : {T}")
    lines = [
        first,
        f"  %{n}s = fusec.reduce sum %{n}sq dims [{dim}] : {T} -> {R}",
        f"  %{n}r = fusec.rsqrt %{n}s : {R}",
        f"  %{n}rb = fusec.broadcast %{n}r dims [{keep}] : {R} -> {T}",
        f"  %{n}n = fusec.mul {h}, %{n}rb : {T}",
        f"  %{n}e = fusec.exp %{n}n : {T}",
        f"  %{n}t = fusec.tanh %{n}n : {T}",
        f"  %{n}m = fusec.max %{n}e, %{n}t : {T}",
        f"  %{n}a = fusec.add %{n}m, {h} : {T}",
        f"  %{n}o = fusec.neg %{n}a : {T}",
    ]
    return lines, f"%{n}o"


def graph(ops):
    lines = [f"func.func @synthetic(%x: {T}) -> {T} {{"]
    h = "%x"
    for i in range(ops // 10):
        b, h = block(i, h)
        lines += b
    lines.append(f"  return {h} : {T}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusec-opt", default="build/bin/fusec-opt")
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.sizes.split(",")]:
            path = os.path.join(tmp, f"g{n}.mlir")
            with open(path, "w") as f:
                f.write(graph(n))
            times = []
            out = ""
            for _ in range(args.repeat):
                start = time.perf_counter()
                p = subprocess.run([args.fusec_opt, path, "--fusec-pipeline=target=h200"],
                                   capture_output=True, text=True)
                times.append(time.perf_counter() - start)
                if p.returncode != 0:
                    raise SystemExit(f"fusec-opt failed on {n} ops:\n{p.stderr[-2000:]}")
                out = p.stdout
            med = statistics.median(times)
            rows.append({"ops": n, "median_s": med, "all_s": times,
                         "us_per_op": med / n * 1e6,
                         "kernels": out.count("fusec.kernel")})
    result = {"benchmark": "fusec-pipeline compile cost vs graph size",
              "command": "python3 bench/compile_scaling.py " + " ".join(
                  f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if v),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
              "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    print(f"{'ops':>7} {'median s':>9} {'us/op':>7} {'kernels':>8}")
    for r in rows:
        print(f"{r['ops']:7d} {r['median_s']:9.3f} {r['us_per_op']:7.1f} {r['kernels']:8d}")


if __name__ == "__main__":
    main()
