#!/usr/bin/env python3
"""Where a memory-bound graph's time goes, fusec beside TorchInductor
(issue #15): each graph of bench/memory_graphs.py named in PROFILE_ONLY, at
its benchmark size, in one run on the GPU machine.

For each graph:
1. Nsight Compute on fusec-run (every kernel of the graph, the last of three
   launches kept) and on the graph compiled by torch.compile (its Triton
   kernels): duration, DRAM bytes and throughput, grid, block, registers,
   achieved and theoretical occupancy, and warp cycles per issued
   instruction (sections SpeedOfLight, LaunchStats, Occupancy,
   WarpStateStats; the stall reasons are not in these sections' tables);
2. the Triton source Inductor wrote for it (TORCH_LOGS=output_code), kept
   under $OUT/inductor/<graph>.log: its tiling and split choices.

    FUSEC_BIN=.device/bin OUT=out PROFILE_ONLY=column_sum,matrix_transpose \
        python3 bench/memory_profile.py
Environment: PROFILE_VARIANTS="name:VAR=v,VAR=v;name:..." also profiles
fusec under those environments (the measurement switches of docs/CodeGen.md).
Writes $OUT/memory_profile.json and prints a table last.
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory_graphs  # noqa: E402

OUT = os.environ.get("OUT", "bench/out")
BIN = os.environ.get("FUSEC_BIN", ".device/bin")
SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats"]
METRICS = "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
# The figures the table keeps, by ncu's metric names (section names vary
# between versions; the metric names do not).
KEEP = {
    "gpu__time_duration.sum": "us",
    "dram__bytes_read.sum": "read_mb",
    "dram__bytes_write.sum": "write_mb",
    "Memory Throughput": "mem_pct",
    "DRAM Throughput": "dram_pct",
    "Grid Size": "grid",
    "Block Size": "block",
    "Registers Per Thread": "regs",
    "Achieved Occupancy": "occupancy_pct",
    "Theoretical Occupancy": "theoretical_pct",
    "Warp Cycles Per Issued Instruction": "cycles_per_issue",
}
SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3, "KB": 1e-3, "MB": 1.0,
         "GB": 1e3}


def ncu(cmd, pick, env=None):
    args = ["ncu", "--clock-control", "none", "--csv", "--page", "details", "--metrics", METRICS]
    for s in SECTIONS:
        args += ["--section", s]
    p = subprocess.run([*args, *pick, *cmd], capture_output=True, text=True, timeout=600,
                       env=None if env is None else {**os.environ, **env})
    text = p.stdout
    if '"ID"' not in text:
        return None, (p.stdout + p.stderr)[-600:]
    kernels = {}
    for r in csv.DictReader(io.StringIO(text[text.find('"ID"'):])):
        name = r.get("Kernel Name", "?")
        k = kernels.setdefault((r["ID"], name), {"kernel": name[:80]})
        metric, unit = r.get("Metric Name", ""), r.get("Metric Unit", "")
        value = r.get("Metric Value", "").replace(",", "")
        if metric in KEEP:
            try:
                v = float(value)
            except ValueError:
                continue
            key = KEEP.get(metric, metric)
            if key in ("us", "read_mb", "write_mb"):
                v *= SCALE.get(unit, 1.0)
            k[key] = v
    # The last launch of each kernel name.
    last = {}
    for (_, name), k in sorted(kernels.items(), key=lambda kv: int(kv[0][0])):
        last[name] = k
    return list(last.values()), None


def inductor_script(g, size_name, log):
    return (
        "import os, sys, torch\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import memory_graphs, memory_bound_suite as s\n"
        f"g = [g for g, sz in memory_graphs.graphs('bench') if g.name == {g.name!r}"
        f" and str(sz) == {size_name!r}][0]\n"
        "xs = s.torch_inputs(g, 1)\n"
        "f = torch.compile(g.torch_fn)\n"
        "for _ in range(3): f(*xs)\n"
        "torch.cuda.synchronize()\n"
        # Compilation and autotuning happen above, outside the profiled range.
        "torch.cuda.profiler.start()\n"
        "for _ in range(2): f(*xs)\n"
        "torch.cuda.synchronize()\n"
        "torch.cuda.profiler.stop()\n")


def main():
    os.makedirs(os.path.join(OUT, "inductor"), exist_ok=True)
    only = set(filter(None, os.environ.get("PROFILE_ONLY", "").split(",")))
    variants = []
    for item in filter(None, os.environ.get("PROFILE_VARIANTS", "").split(";")):
        name, _, assigns = item.partition(":")
        variants.append((name, dict(a.split("=", 1) for a in assigns.split(",") if a)))
    tmp = tempfile.mkdtemp()
    rows = []
    for g, size in memory_graphs.graphs("bench"):
        if only and g.name not in only:
            continue
        tag = g.name + "_" + "x".join(str(v) for v in size.values())
        path = os.path.join(tmp, f"{tag}.mlir")
        open(path, "w").write(g.mlir())
        row = {"graph": g.name, "size": size, "bytes": g.bytes()}
        for name, env in [("fusec", None), *[(f"fusec_{n}", e) for n, e in variants]]:
            ks, err = ncu([f"{BIN}/fusec-run", path, "--no-check", "--runs=3", "--warmup=0"],
                          [], env)
            row[name] = ks if ks else {"error": err}
        script = os.path.join(tmp, f"{tag}.py")
        open(script, "w").write(inductor_script(g, str(size), None))
        ks, err = ncu([sys.executable, script],
                      ["--profile-from-start", "off", "--kernel-name", "regex:triton"])
        row["inductor"] = ks if ks else {"error": err}
        # Inductor's Triton source, from a run outside ncu.
        p = subprocess.run([sys.executable, script], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "TORCH_LOGS": "output_code"})
        open(os.path.join(OUT, "inductor", f"{tag}.log"), "w").write(p.stdout + p.stderr)
        rows.append(row)
        print(json.dumps(row), flush=True)
        json.dump(rows, open(os.path.join(OUT, "memory_profile.json"), "w"), indent=1)

    print("\ngraph | who | kernel | us | DRAM MB r/w | DRAM % | grid x block | regs | occ %"
          " (theor.) | cycles/issue")
    for r in rows:
        for who in [k for k in r if k.startswith("fusec") or k == "inductor"]:
            ks = r[who]
            if isinstance(ks, dict):
                print(f"{r['graph']} | {who} | error: {ks['error'][-120:]!r}")
                continue
            for k in ks:
                print(f"{r['graph']} | {who} | {k['kernel'][:40]} | {k.get('us', 0):.1f} | "
                      f"{k.get('read_mb', 0):.0f}/{k.get('write_mb', 0):.0f} | "
                      f"{k.get('dram_pct', 0):.0f} | {k.get('grid', 0):.0f} x "
                      f"{k.get('block', 0):.0f} | {k.get('regs', 0):.0f} | "
                      f"{k.get('occupancy_pct', 0):.0f} ({k.get('theoretical_pct', 0):.0f}) | "
                      f"{k.get('cycles_per_issue', 0):.1f}")


if __name__ == "__main__":
    main()
