#!/usr/bin/env python3
"""Where a decode GEMM's time goes (issue #14: weight streaming at M <= 256).
For each shape, in one run on the GPU machine:

1. fusec-run's per-kernel median (CUDA events around each launch, as
   bench/matmul.py reports it: the host's launch latency is inside);
2. Nsight Compute's gpu__time_duration (the kernel alone, caches flushed
   before it: weights from HBM) and DRAM bytes of fusec's kernel and of
   cuBLAS's (torch.matmul), three launches each, the last kept.

    FUSEC_BIN=.device/bin OUT=out python3 bench/decode_gemm_probe.py
Writes $OUT/decode_gemm_probe.json and prints a table last.
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matmul  # noqa: E402

OUT = os.environ.get("OUT", "bench/out")
BIN = os.environ.get("FUSEC_BIN", ".device/bin")
SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (256, 4096, 4096),
          (32, 6144, 2048), (32, 2048, 5632)]
# DECODE_SHAPES="MxNxK,..." replaces the list.
if os.environ.get("DECODE_SHAPES"):
    SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ["DECODE_SHAPES"].split(",")]
METRICS = "gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size"


# Plan variants timed under ncu beside the default (the measurement switches
# of bench/matmul_sweep.py).
# DECODE_VARIANTS="name:VAR=v,VAR=v;name:..." replaces the list.
VARIANTS = [("n64", {"FUSEC_WGMMA_N": "64"}), ("split8", {"FUSEC_WGMMA_SPLIT": "8"}),
            ("split2", {"FUSEC_WGMMA_SPLIT": "2"})]
if os.environ.get("DECODE_VARIANTS"):
    VARIANTS = []
    for item in os.environ["DECODE_VARIANTS"].split(";"):
        name, _, assigns = item.partition(":")
        VARIANTS.append((name, dict(a.split("=", 1) for a in assigns.split(",") if a)))


def ncu(cmd, pick, env=None):
    p = subprocess.run(["ncu", "--csv", "--launch-count", "3", *pick, "--metrics", METRICS, *cmd],
                       capture_output=True, text=True, timeout=300,
                       env=None if env is None else {**os.environ, **env})
    text = p.stdout
    if '"ID"' not in text:
        return None, (p.stdout + p.stderr)[-400:]
    rows = list(csv.DictReader(io.StringIO(text[text.find('"ID"'):])))
    last = {}
    for r in rows:  # one row per metric; keep the last launch's
        last[r["Metric Name"]] = (r["Metric Value"].replace(",", ""), r["Metric Unit"], r["Kernel Name"])
    return last, None


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp()
    rows = []
    for (m, n, k) in SHAPES:
        path = os.path.join(tmp, f"mm_{m}x{n}x{k}.mlir")
        open(path, "w").write(matmul.mlir(m=m, n=n, k=k, tr=True))
        row = dict(m=m, n=n, k=k, weight_mb=2 * n * k / 1e6)
        rc, r, err = matmul.fusec_run(path, "--no-check", "--runs=50", "--warmup=10")
        row["fusec_event_us"] = sum(x["median_ms"] for x in r["kernels"]) * 1e3 if r else None
        f, e = ncu([f"{BIN}/fusec-run", path, "--no-check", "--runs=2", "--warmup=0"], [])
        c, e2 = ncu([sys.executable, "-c",
                     "import torch\n"
                     f"a=torch.randn({m},{k},device='cuda',dtype=torch.bfloat16)\n"
                     f"w=torch.randn({n},{k},device='cuda',dtype=torch.bfloat16)\n"
                     "for _ in range(3): torch.matmul(a, w.t())\n"
                     "torch.cuda.synchronize()\n"],
                    ["--kernel-name", "regex:gemm|Kernel|sm90|cutlass|gemv"])
        for who, res, error in (("fusec", f, e), ("cublas", c, e2)):
            if res is None:
                row[f"{who}_error"] = error
                continue
            dur = float(res["gpu__time_duration.sum"][0])
            unit = res["gpu__time_duration.sum"][1]
            us = dur * {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0,
                        "ms": 1e3, "msecond": 1e3}[unit]
            row[f"{who}_kernel_us"] = us
            row[f"{who}_kernel"] = res["gpu__time_duration.sum"][2][:60]
            row[f"{who}_grid"] = res["launch__grid_size"][0]
            row[f"{who}_dram_mb"] = float(res["dram__bytes_read.sum"][0]) / (
                1e6 if res["dram__bytes_read.sum"][1] == "byte" else
                1e3 if res["dram__bytes_read.sum"][1] == "Kbyte" else
                1 if res["dram__bytes_read.sum"][1] == "Mbyte" else 1e-3)
            row[f"{who}_tb_s"] = 2 * n * k / (us * 1e-6) / 1e12
        for name, env in VARIANTS:
            v, _ = ncu([f"{BIN}/fusec-run", path, "--no-check", "--runs=2", "--warmup=0"], [],
                       env)
            if v:
                dur, unit = float(v["gpu__time_duration.sum"][0]), v["gpu__time_duration.sum"][1]
                row[f"fusec_{name}_kernel_us"] = dur * {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0,
                                                        "usecond": 1.0, "ms": 1e3,
                                                        "msecond": 1e3}[unit]
        rows.append(row)
        print(json.dumps(row), flush=True)
    json.dump(rows, open(os.path.join(OUT, "decode_gemm_probe.json"), "w"), indent=1)
    print("\nshape | fusec events us | fusec kernel us (TB/s) | cuBLAS kernel us (TB/s) | fusec grid"
          " | " + " | ".join(n for n, _ in VARIANTS))
    for r in rows:
        f = f"{r.get('fusec_kernel_us', 0):.1f} ({r.get('fusec_tb_s', 0):.2f})"
        c = f"{r.get('cublas_kernel_us', 0):.1f} ({r.get('cublas_tb_s', 0):.2f})"
        print(f"{r['m']}x{r['n']}x{r['k']} | {r['fusec_event_us'] or 0:.1f} | {f} | {c} | "
              f"{r.get('fusec_grid')} | "
              + " | ".join(f"{r.get(f'fusec_{n}_kernel_us', 0):.1f}" for n, _ in VARIANTS))


if __name__ == "__main__":
    main()
