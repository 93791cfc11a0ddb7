#!/usr/bin/env python3
"""The memory-bound suite's graphs (bench/memory_graphs.py) on the CPU, for
CI (issue #15):
1. meaning: each graph at its small size through `fusec-run --reference
   --verify-pipeline` (before and after the pipeline, on the interpreter);
2. fusion: each graph at its small and its benchmark sizes through
   `fusec-opt --fusec-pipeline`, with at most the graph's `max_kernels`
   kernels and no kernel that only moves data unless the graph is movement
   alone.

usage: check_suite.py FUSEC_RUN FUSEC_OPT [--keep DIR] [--only NAME]
Exit status 1 on any failure; each failing graph is kept in --keep.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import memory_graphs  # noqa: E402


MOVEMENT = {"transpose", "slice", "reshape", "concat", "broadcast", "cast", "yield"}


def kernels_of(fusec_opt, path, timeout):
    """The kernels after the pipeline: [(name, strategy, ops in the body)]."""
    r = subprocess.run([fusec_opt, path, "--fusec-pipeline"], capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        return None, (r.stdout + r.stderr)[-800:]
    out, indent = [], None
    for line in r.stdout.splitlines():
        m = re.search(r'fusec\.kernel "([^"]*)".*strategy = (\w+)', line)
        if m:
            out.append((m.group(1), m.group(2), set()))
            indent = len(line) - len(line.lstrip())
            continue
        if indent is None:
            continue
        if line.strip() == "}" and len(line) - len(line.lstrip()) == indent:
            indent = None
            continue
        op = re.search(r"\bfusec\.(\w+)", line)
        if op:
            out[-1][2].add(op.group(1))
    return out, r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("fusec_run")
    p.add_argument("fusec_opt")
    p.add_argument("--keep")
    p.add_argument("--only")
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    keep = a.keep or tempfile.mkdtemp(prefix="fusec-memory-suite-")
    os.makedirs(keep, exist_ok=True)
    failures = []
    checked = 0
    for which in ("small", "bench"):
        for g, size in memory_graphs.graphs(which):
            if a.only and g.name != a.only:
                continue
            tag = "x".join(str(v) for v in size.values() if isinstance(v, int))
            path = os.path.join(keep, f"{g.name}_{which}_{tag}.mlir")
            with open(path, "w") as f:
                f.write(g.mlir())
            why = []
            if which == "small":
                try:
                    r = subprocess.run([a.fusec_run, path, "--reference",
                                        "--verify-pipeline=fusec-pipeline", "--trials=2", "--seed=3"],
                                       capture_output=True, text=True, timeout=a.timeout)
                    if r.returncode != 0:
                        why.append("--verify-pipeline failed:\n" + (r.stdout + r.stderr)[-800:])
                except subprocess.TimeoutExpired:
                    why.append(f"--verify-pipeline timed out after {a.timeout} s")
            kernels, text = kernels_of(a.fusec_opt, path, a.timeout)
            if kernels is None:
                why.append("fusec-opt --fusec-pipeline failed:\n" + text)
            else:
                if len(kernels) > g.max_kernels:
                    why.append(f"{len(kernels)} kernels, at most {g.max_kernels} expected: "
                               + ", ".join(f"{n}({s})" for n, s, _ in kernels))
                moving = [n for n, _, ops in kernels if ops <= MOVEMENT]
                if g.cls != "movement" and moving:
                    why.append("kernels that only move data: " + ", ".join(moving))
            checked += 1
            status = "ok" if not why else "FAIL"
            ks = "" if kernels is None else f" {len(kernels)} kernel(s): " + ", ".join(
                s for _, s, _ in kernels)
            print(f"{status} {g.name} {which} {tag}{ks}", flush=True)
            if why:
                failures.append(path)
                print("\n".join("  " + w for w in why), flush=True)
            else:
                os.remove(path)
    print(f"memory-bound suite: {checked - len(failures)}/{checked} pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
