#!/usr/bin/env python3
"""One of issue #15's outside graphs on the GPU: a head transpose
(B, S, H, D) -> (B, H, S, D) times a scale, bf16, against eager PyTorch and
torch.compile (Inductor), in one run. fusec's time is its kernels' median
from `fusec-run --json --no-check` (each kernel between CUDA events); the
bytes are the input read once and the output written once, against torch's
device-to-device copy of the same bytes.

    FUSEC_BIN=.device/bin python3 bench/head_transpose.py
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

BIN = os.environ.get("FUSEC_BIN", ".device/bin")
SHAPES = [(8, 1024, 16, 128), (16, 2048, 32, 64)]


from gpu_timing import median_ms  # noqa: E402


def main():
    rows = []
    for (b, s, h, d) in SHAPES:
        t = f"{b}x{s}x{h}x{d}xbf16"
        o = f"{b}x{h}x{s}x{d}xbf16"
        text = (f"func.func @head_transpose(%x: tensor<{t}>) -> tensor<{o}> {{\n"
                f"  %t = fusec.transpose %x perm [0, 2, 1, 3] : tensor<{t}> -> tensor<{o}>\n"
                f"  %s = fusec.constant dense<0.125> : tensor<{o}>\n"
                f"  %r = fusec.mul %t, %s : tensor<{o}>\n"
                f"  return %r : tensor<{o}>\n}}\n")
        path = os.path.join(tempfile.mkdtemp(), "g.mlir")
        open(path, "w").write(text)
        p = subprocess.run([f"{BIN}/fusec-run", path, "--no-check", "--json", "--runs=30"],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            print(p.stderr[-2000:], file=sys.stderr)
            return 1
        r = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])
        fusec_ms = sum(k["median_ms"] for k in r["kernels"])
        x = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
        f = lambda x: x.permute(0, 2, 1, 3).contiguous() * 0.125
        c = torch.compile(f)
        c(x)
        eager = median_ms(lambda: f(x))
        inductor = median_ms(lambda: c(x))
        y = torch.empty_like(x)
        copy = median_ms(lambda: y.copy_(x))
        nbytes = 2 * x.numel() * 2
        row = dict(shape=[b, s, h, d], fusec_ms=fusec_ms, fusec_kernels=len(r["kernels"]),
                   eager_ms=eager, inductor_ms=inductor, copy_ms=copy,
                   fusec_tb_s=nbytes / fusec_ms / 1e9, copy_tb_s=nbytes / copy / 1e9,
                   vs_inductor=inductor / fusec_ms)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print("shape               fusec ms  kernels  eager ms  inductor ms  fusec TB/s  copy TB/s  vs Inductor")
    for r in rows:
        print(f"{'x'.join(map(str, r['shape'])):18s} {r['fusec_ms']:9.3f} {r['fusec_kernels']:8d} "
              f"{r['eager_ms']:9.3f} {r['inductor_ms']:12.3f} {r['fusec_tb_s']:11.2f} "
              f"{r['copy_tb_s']:10.2f} {r['vs_inductor']:11.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
