#!/usr/bin/env python3
"""Reductions over leading or middle dims (issue #15's class: a bias
gradient's 16k x 4k -> 4k, and its neighbours) on the GPU: fusec's column
kernels against eager PyTorch and TorchInductor in one run, CUDA events,
median; the device copy measured the same way as the ceiling.

Runs on the GPU machine from the repository root, with the static fusec-run
of bench/stage-gpu.sh in .device/bin (FUSEC_BIN):
1. correctness: fusec-run against the reference interpreter (odd shapes,
   sums and maxima, f32/bf16/i32, leading and middle dims, shapes that split
   the rows and shapes that do not);
2. speed: each shape's kernel time (fusec-run --json) and torch's x.sum(dim)
   / x.amax(dim), eager and compiled. Bytes: the input read once, the output
   written once.

Writes $OUT/column_reduce.json and prints a table last.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

from gpu_timing import median_ms

BIN = os.environ.get("FUSEC_BIN", ".device/bin")
OUT = os.environ.get("OUT", "bench/out")
TYPES = {"f32": "f32", "bf16": "bf16", "i32": "i32"}


def mlir(kind, shape, dims, dtype):
    t = "x".join(map(str, shape)) + "x" + dtype
    kept = [s for i, s in enumerate(shape) if i not in dims]
    r = "x".join(map(str, kept)) + "x" + dtype
    d = ", ".join(map(str, dims))
    return (f"func.func @main(%x: tensor<{t}>) -> tensor<{r}> {{\n"
            f"  %0 = fusec.reduce {kind} %x dims [{d}] : tensor<{t}> -> tensor<{r}>\n"
            f"  return %0 : tensor<{r}>\n}}\n")


def fusec_run(path, *flags):
    p = subprocess.run([f"{BIN}/fusec-run", path, "--json", *flags],
                       capture_output=True, text=True, timeout=600)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except json.JSONDecodeError:
        return p.returncode, None, p.stdout + p.stderr


CHECKS = [("sum", (6000, 40), [0], "f32"), ("max", (6000, 40), [0], "f32"),
          ("sum", (20001, 130), [0], "bf16"), ("sum", (3, 2000, 16), [1], "i32"),
          ("sum", (7, 5000, 24), [1], "f32"), ("min", (9999, 7), [0], "i32"),
          ("mean", (4097, 200), [0], "f32"), ("sum", (100, 4096), [0], "f32")]
SPEED = [("sum", (16384, 4096), [0], "f32"), ("sum", (16384, 4096), [0], "bf16"),
         ("sum", (65536, 1024), [0], "bf16"), ("max", (16384, 4096), [0], "f32"),
         ("sum", (32, 4096, 512), [1], "bf16"), ("sum", (4096, 16384), [0], "f32")]


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp()
    results = {"correctness": [], "speed": []}
    ok_all = True
    for i, (kind, shape, dims, dtype) in enumerate(CHECKS):
        path = os.path.join(tmp, f"check{i}.mlir")
        open(path, "w").write(mlir(kind, shape, dims, dtype))
        rc, r, err = fusec_run(path, "--runs=2", "--warmup=1", f"--seed={i + 1}")
        ok = rc == 0
        ok_all &= ok
        strategy = r["kernels"][0].get("strategy") if r and r.get("kernels") else None
        results["correctness"].append({"kind": kind, "shape": shape, "dims": dims, "dtype": dtype,
                                       "ok": ok, "strategy": strategy,
                                       "error": None if ok else err[-400:]})
        print(f"check {kind} {shape} dims {dims} {dtype}: {'ok' if ok else 'FAIL ' + err[-300:]}",
              flush=True)

    import torch
    dev = "cuda"

    src = torch.randn(256 << 20, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_tbps = 2 * src.numel() * 2 / (median_ms(lambda: dst.copy_(src)) * 1e-3) / 1e12
    del src, dst
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16}
    for i, (kind, shape, dims, dtype) in enumerate(SPEED):
        x = torch.randn(*shape, device=dev, dtype=tdt[dtype])
        fn = (lambda x: x.sum(dims)) if kind == "sum" else (lambda x: x.amax(dims))
        eager = median_ms(lambda: fn(x))
        torch._dynamo.reset()
        compiled = torch.compile(fn)
        inductor = median_ms(lambda: compiled(x))
        nbytes = x.numel() * x.element_size() + fn(x).numel() * x.element_size()
        del x
        torch.cuda.empty_cache()
        path = os.path.join(tmp, f"speed{i}.mlir")
        open(path, "w").write(mlir(kind, shape, dims, dtype))
        rc, r, err = fusec_run(path, "--no-check", "--runs=30", "--warmup=5")
        k = r["kernels"][0] if (rc == 0 and r) else {}
        ms = k.get("median_ms")
        row = {"kind": kind, "shape": shape, "dims": dims, "dtype": dtype, "bytes": nbytes,
               "copy_tbps": copy_tbps, "eager_ms": eager, "inductor_ms": inductor,
               "fusec_ms": ms, "strategy": k.get("strategy"), "predicted_ms": k.get("predicted_ms"),
               "error": None if rc == 0 else err[-400:]}
        for key in ("eager", "inductor", "fusec"):
            v = row[f"{key}_ms"]
            row[f"{key}_tbps"] = nbytes / (v * 1e-3) / 1e12 if v else None
        results["speed"].append(row)
        print(json.dumps(row), flush=True)
    json.dump(results, open(os.path.join(OUT, "column_reduce.json"), "w"), indent=2)
    n_ok = sum(c["ok"] for c in results["correctness"])
    print(f"\ncorrectness: {n_ok}/{len(results['correctness'])} match the interpreter")
    print(f"copy: {copy_tbps:.2f} TB/s")
    print(f"{'graph':34s} {'fusec ms':>9s} {'TB/s':>6s} {'eager':>7s} {'inductor':>8s} {'vs best':>7s}")
    for row in results["speed"]:
        name = f"{row['kind']} {'x'.join(map(str, row['shape']))} d{row['dims']} {row['dtype']}"
        f = row["fusec_ms"]
        best = min(row["eager_ms"], row["inductor_ms"])
        print(f"{name:34s} {f if f else float('nan'):9.4f} {row['fusec_tbps'] or 0:6.2f} "
              f"{row['eager_ms']:7.4f} {row['inductor_ms']:8.4f} "
              f"{(best / f) if f else 0:6.2f}x")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
