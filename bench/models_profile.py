#!/usr/bin/env python3
"""Where the time goes in bench/models.py's models, kernel by kernel, on the
GPU: fusec's kernels as Nsight Compute times them (one replay of the
Executable, `ncu --clock-control none`, gpu__time_duration), beside
torch.compile's (default mode) kernels under torch.profiler, on the same
module, export and inputs.

Per-kernel times in `fusec-run --json` launch each kernel alone between CUDA
events, so they include the launch and (for the attention intrinsic) the
host's tensor-map encoding; ncu's duration is the kernel alone.

Writes $OUT/profile-<model>-<B>x<S>.json (both kernel lists), the exported
ONNX files without weights ($OUT/onnx/, for profiling the import off the GPU
machine) and prints, per row, the time by kernel class.

    PROFILE_ONLY=gpt2 PROFILE_SHAPES=4x1024,32x1 python3 bench/models_profile.py
"""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models as M  # noqa: E402

OUT = os.environ.get("OUT", "bench/out")
BIN = os.environ.get("FUSEC_BIN", ".device/bin")


def kernel_class(name):
    """A coarse class for a kernel name (fusec's or torch's)."""
    n = name.lower()
    if "attention" in n or "fmha" in n or "flash" in n or "sdpa" in n or "cudnn" in n:
        return "attention"
    if "matmul" in n or "gemm" in n or "sm90_xmma" in n or "cutlass" in n or "nvjet" in n:
        return "matmul"
    if "norm" in n or "reduce" in n or "softmax" in n or "persistent_reduction" in n \
            or "red_fused" in n:
        return "reduction"
    return "elementwise/other"


def ncu_fusec(path, shape, inputs):
    b, s = shape
    cmd = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
           "--print-units", "base", f"{BIN}/fusec-run", path,
           f"--input-shape=input_ids={b}x{s}", f"--input-shape=attention_mask={b}x{s}",
           "--no-check", "--warmup=0", "--runs=1"] + [f"--input={p}" for p in inputs]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    if p.returncode != 0:
        raise RuntimeError(f"ncu failed ({p.returncode}): {p.stderr[-2000:]} {p.stdout[-2000:]}")
    text = p.stdout[p.stdout.find('"ID"'):]
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(r["Metric Value"].replace(",", ""))  # ncu groups thousands
        rows.append({"name": r["Kernel Name"], "ms": value / 1e6})
    return rows


def torch_kernels(fn):
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time_total > 0:
            rows.append({"name": e.name, "ms": e.device_time_total / 1e3})
    return rows


def summarize(rows):
    by = defaultdict(lambda: [0, 0.0])
    for r in rows:
        c = kernel_class(r["name"])
        by[c][0] += 1
        by[c][1] += r["ms"]
    return {c: {"kernels": n, "ms": ms} for c, (n, ms) in by.items()}


def main():
    os.makedirs(os.path.join(OUT, "onnx"), exist_ok=True)
    only = [s for s in os.environ.get("PROFILE_ONLY", "").split(",") if s]
    shapes = [tuple(int(x) for x in sh.split("x"))
              for sh in os.environ.get("PROFILE_SHAPES", "4x1024,32x1").split(",")]
    work = tempfile.mkdtemp()
    table = []
    for name, build in M.models().items():
        if only and not any(o in name for o in only):
            continue
        torch.manual_seed(0)
        module = M.Logits(build().eval().half().cuda()).eval()
        vocab = module.model.config.vocab_size
        for b, s in shapes:
            ids = torch.randint(0, vocab, (b, s))
            mask = torch.ones(b, s, dtype=torch.int64)
            path = os.path.join(work, f"{name}-{b}x{s}.onnx")
            with torch.no_grad():
                M.export(module, (ids.cuda(), mask.cuda()), path)
            wdir = os.path.join(work, f"{name}-{b}x{s}-w")
            os.makedirs(wdir, exist_ok=True)
            wfiles = M.weights_to_inputs(path, wdir)
            shutil.copy(path, os.path.join(OUT, "onnx", os.path.basename(path)))
            idf, maskf = os.path.join(work, "ids.npy"), os.path.join(work, "mask.npy")
            np.save(idf, ids.numpy().astype(np.int64))
            np.save(maskf, mask.numpy())
            row = {"model": name, "batch": b, "seq": s}
            try:
                row["fusec"] = ncu_fusec(path, (b, s), [idf, maskf] + wfiles)
            except Exception as e:  # noqa: BLE001
                row["fusec_error"] = str(e)[-2000:]
            x, xm = ids.cuda(), mask.cuda()
            row["torch_compile"] = []
            if os.environ.get("PROFILE_TORCH", "1") != "0":
                torch._dynamo.reset()
                c = torch.compile(module)
                with torch.no_grad():
                    row["torch_compile"] = torch_kernels(lambda: c(x, xm))
            json.dump(row, open(os.path.join(OUT, f"profile-{name}-{b}x{s}.json"), "w"), indent=1)
            table.append(row)
            shutil.rmtree(wdir, ignore_errors=True)
            print(f"{name} {b}x{s} done", flush=True)
    print()
    for row in table:
        print(f"== {row['model']} {row['batch']}x{row['seq']}")
        if "fusec_error" in row:
            print("   fusec:", row["fusec_error"][-600:])
        f = summarize(row.get("fusec", []))
        t = summarize(row["torch_compile"])
        print(f"   {'class':20s} {'fusec n':>8s} {'fusec ms':>9s} {'torch n':>8s} {'torch ms':>9s}")
        for c in sorted(set(f) | set(t)):
            fa, ta = f.get(c, {"kernels": 0, "ms": 0}), t.get(c, {"kernels": 0, "ms": 0})
            print(f"   {c:20s} {fa['kernels']:8d} {fa['ms']:9.3f} {ta['kernels']:8d} {ta['ms']:9.3f}")
        print(f"   {'total':20s} {sum(v['kernels'] for v in f.values()):8d} "
              f"{sum(v['ms'] for v in f.values()):9.3f} {sum(v['kernels'] for v in t.values()):8d} "
              f"{sum(v['ms'] for v in t.values()):9.3f}")
        # The slowest distinct fusec kernels (by name, summed) and torch's.
        for who in ("fusec", "torch_compile"):
            agg = defaultdict(lambda: [0, 0.0])
            for r in row.get(who, []):
                key = re.sub(r"^k\d+_", "k*_", r["name"])[:70]
                agg[key][0] += 1
                agg[key][1] += r["ms"]
            top = sorted(agg.items(), key=lambda kv: -kv[1][1])[:8]
            print(f"   top {who}: " + "; ".join(f"{k} x{n} {ms:.3f}" for k, (n, ms) in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
