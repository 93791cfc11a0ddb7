#!/usr/bin/env python3
"""Sweeps matmul_wgmma's plan over its tuning switches (FUSEC_WGMMA_N,
FUSEC_WGMMA_STAGES, FUSEC_WGMMA_SPLIT) on decode-sized matmuls, beside
cuBLAS through torch in the same process: which tile, stages and split
stream the weights fastest. Runs on the GPU machine with the staged tools
(FUSEC_BIN); JSON and a table under $OUT (bench/out)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_timing  # noqa: E402
import matmul as mm  # noqa: E402

OUT = os.environ.get("OUT", "bench/out")

SHAPES = [
    ("decode", dict(m=1, n=4096, k=4096, tr=True)),
    ("decode", dict(m=16, n=4096, k=4096, tr=True)),
    ("decode", dict(m=64, n=4096, k=4096, tr=True)),
    ("decode", dict(m=256, n=4096, k=4096, tr=True)),
    ("gpt2 qkv", dict(m=32, n=2304, k=768, tr=True, epilogue="bias")),
    ("gpt2 o", dict(m=32, n=768, k=768, tr=True, epilogue="residual")),
    ("gpt2 fc1", dict(m=32, n=3072, k=768, tr=True, epilogue="bias_gelu")),
    ("gpt2 fc2", dict(m=32, n=768, k=3072, tr=True, epilogue="residual")),
    ("llama qkv", dict(m=32, n=6144, k=2048, tr=True)),
    ("llama o", dict(m=32, n=2048, k=2048, tr=True, epilogue="residual")),
    ("llama gate/up", dict(m=32, n=5632, k=2048, tr=True, epilogue="swiglu")),
    ("llama down", dict(m=32, n=2048, k=5632, tr=True, epilogue="residual")),
]
CONFIGS = [{}, {"FUSEC_WGMMA_N": "64"}, {"FUSEC_WGMMA_N": "64", "FUSEC_WGMMA_SPLIT": "1"},
           {"FUSEC_WGMMA_N": "64", "FUSEC_WGMMA_SPLIT": "2"},
           {"FUSEC_WGMMA_N": "64", "FUSEC_WGMMA_SPLIT": "4"},
           {"FUSEC_WGMMA_N": "128", "FUSEC_WGMMA_SPLIT": "1"},
           {"FUSEC_WGMMA_N": "128", "FUSEC_WGMMA_SPLIT": "2"},
           {"FUSEC_WGMMA_N": "128", "FUSEC_WGMMA_SPLIT": "8"},
           {"FUSEC_WGMMA_N": "64", "FUSEC_WGMMA_STAGES": "12"}]


def main():
    import torch
    os.makedirs(OUT, exist_ok=True)
    rows = []

    def median_ms(fn):
        return gpu_timing.median_ms(fn, reps=50, warmup=10)

    # Every switch setting against the interpreter first (ragged shapes).
    checks = [dict(m=32, n=200, k=520, tr=True, epilogue="bias"),
              dict(m=1, n=264, k=1040, tr=True, epilogue="residual"),
              dict(m=17, n=136, k=1040, tr=True, epilogue="swiglu"),
              dict(m=100, n=72, k=264, epilogue="bias_gelu")]
    failed = 0
    for i, c in enumerate(checks):
        path = os.path.join(OUT, f"check_{i}.mlir")
        open(path, "w").write(mm.mlir(**c))
        for cfg in CONFIGS:
            rc, r, err = mm.fusec_run(path, "--runs=1", "--warmup=0", "--max-rel-l2=1e-2",
                                      env=cfg)
            ok = rc == 0 and r is not None and r["ok"]
            failed += not ok
            print(f"check {c} {json.dumps(cfg)}: {'ok' if ok else 'FAIL ' + err[-300:]}",
                  flush=True)
    print(f"checks: {len(checks) * len(CONFIGS) - failed}/{len(checks) * len(CONFIGS)} ok")
    for label, c in SHAPES:
        m, n, k = c["m"], c["n"], c["k"]
        dual = 2 if c.get("epilogue") == "swiglu" else 1
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n * dual, k, device="cuda", dtype=torch.bfloat16)
        cublas = median_ms(lambda: torch.matmul(a, w.t()))
        path = os.path.join(OUT, "sweep.mlir")
        open(path, "w").write(mm.mlir(**c))
        for cfg in CONFIGS:
            rc, r, err = mm.fusec_run(path, "--no-check", "--runs=50", "--warmup=10", env=cfg)
            ms = sum(kk["median_ms"] for kk in r["kernels"]) if rc == 0 and r else None
            row = dict(label=label, case=c, config=cfg, fusec_ms=ms, cublas_ms=cublas,
                       weight_bytes=2.0 * n * k * dual, error=None if ms else err[-300:])
            rows.append(row)
            tb = row["weight_bytes"] / ms / 1e9 if ms else float("nan")
            print(f"{label:>14} {m}x{n}x{k} {json.dumps(cfg):>50} fusec "
                  f"{ms if ms else float('nan'):.4f} ms {tb:.2f} TB/s  cuBLAS {cublas:.4f}",
                  flush=True)
    json.dump(rows, open(os.path.join(OUT, "sweep.json"), "w"), indent=1)
    print()
    print(f"{'shape':>26} {'cuBLAS TB/s':>11} {'default TB/s':>12} {'best TB/s':>10}  best config")
    for label, c in SHAPES:
        rs = [r for r in rows if r["label"] == label and r["case"] == c and r["fusec_ms"]]
        if not rs:
            continue
        d = next((r for r in rs if not r["config"]), None)
        b = min(rs, key=lambda r: r["fusec_ms"])
        wb = b["weight_bytes"]
        print(f"{label + ' ' + str(c['m']) + 'x' + str(c['n']) + 'x' + str(c['k']):>26} "
              f"{wb / b['cublas_ms'] / 1e9:11.2f} "
              f"{wb / d['fusec_ms'] / 1e9 if d else float('nan'):12.2f} "
              f"{wb / b['fusec_ms'] / 1e9:10.2f}  {json.dumps(b['config'])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
