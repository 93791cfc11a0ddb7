#!/usr/bin/env python3
"""Decode GEMMs back to back (issue #14: weight streaming at M <= 256), the
way a decoder's layers run them: L matmuls in a chain, each reading the one
before and its own weights (L distinct bf16 matrices, together larger than
the L2, so every layer streams its weights from HBM).

For each shape, in one run on the GPU machine:

1. fusec: one graph of the L matmuls (`x W_i^T`), run by fusec-run with
   graph replay (end_to_end_ms, the median over batches of runs), with
   programmatic dependent launch (the default: each kernel starts while the
   one before drains, and loads its first stages of weights before it
   waits) and without it (FUSEC_PDL=0);
2. cuBLAS through torch: the same chain of torch.matmul, captured in a CUDA
   graph and replayed (what torch.compile's reduce-overhead mode runs for a
   chain of matmuls), timed with CUDA events over the same number of runs.

Weight streaming is L x N x K x 2 bytes over the chain's time.

    FUSEC_BIN=.device/bin OUT=out python3 bench/decode_chain.py
CHAIN_SHAPES="MxNxK,..." and CHAIN_LAYERS (8) pick the chains. Writes
$OUT/decode_chain.json and prints a table last.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

OUT = os.environ.get("OUT", "bench/out")
BIN = os.environ.get("FUSEC_BIN", ".device/bin")
LAYERS = int(os.environ.get("CHAIN_LAYERS", "8"))
# Square chains (each output the next input); N = K.
SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (32, 4096, 4096), (64, 4096, 4096),
          (256, 4096, 4096), (32, 2048, 2048)]
if os.environ.get("CHAIN_SHAPES"):
    SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ["CHAIN_SHAPES"].split(",")]
RUNS = 50


def graph(m, n, k, layers):
    assert n == k, "a chain needs N = K"
    args = [f"%x: tensor<{m}x{k}xbf16>"] + [f"%w{i}: tensor<{n}x{k}xbf16>" for i in range(layers)]
    lines = [f"func.func @chain({', '.join(args)}) -> tensor<{m}x{n}xbf16> {{"]
    prev = "%x"
    for i in range(layers):
        lines.append(f"  %y{i} = fusec.matmul {prev}, %w{i} {{transpose_rhs}} : "
                     f"(tensor<{m}x{k}xbf16>, tensor<{n}x{k}xbf16>) -> tensor<{m}x{n}xbf16>")
        prev = f"%y{i}"
    lines.append(f"  return {prev} : tensor<{m}x{n}xbf16>")
    lines.append("}")
    return "\n".join(lines) + "\n"


def fusec(path, env):
    p = subprocess.run([f"{BIN}/fusec-run", path, "--no-check", "--json", "--warmup=10",
                        f"--runs={RUNS}"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **env})
    if p.returncode != 0:
        return None, (p.stdout + p.stderr)[-600:]
    r = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])
    return r, None


def cublas(m, n, k, layers):
    import torch
    torch.manual_seed(0)
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    ws = [torch.randn(n, k, dtype=torch.bfloat16, device="cuda") * 0.02 for _ in range(layers)]

    def chain():
        y = x
        for w in ws:
            y = torch.matmul(y, w.t())
        return y

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            chain()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        chain()
    for _ in range(10):
        g.replay()
    per = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(RUNS):
            g.replay()
        b.record()
        b.synchronize()
        per.append(a.elapsed_time(b) / RUNS)
    return statistics.median(per)


def main():
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp()
    rows = []
    for (m, n, k) in SHAPES:
        path = os.path.join(work, f"chain-{m}x{n}x{k}.mlir")
        with open(path, "w") as f:
            f.write(graph(m, n, k, LAYERS))
        row = {"m": m, "n": n, "k": k, "layers": LAYERS,
               "weight_bytes": LAYERS * n * k * 2}
        for name, env in (("pdl", {}), ("nopdl", {"FUSEC_PDL": "0"})):
            r, err = fusec(path, env)
            if r is None:
                row[f"{name}_error"] = err
                continue
            row[f"{name}_ms"] = r["end_to_end_ms"]
            row[f"{name}_kernels"] = [{"name": kk["name"], "median_ms": kk["median_ms"],
                                       "predicted_ms": kk["predicted_ms"]}
                                      for kk in r["kernels"]]
        try:
            row["cublas_ms"] = cublas(m, n, k, LAYERS)
        except Exception as e:  # noqa: BLE001
            row["cublas_error"] = str(e)[-600:]
        rows.append(row)
        print(json.dumps({kk: v for kk, v in row.items() if not kk.endswith("_kernels")}),
              flush=True)
    with open(os.path.join(OUT, "decode_chain.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print()
    print(f"chain of {LAYERS} ({RUNS} runs, CUDA graphs): us a GEMM (weights TB/s)")
    print("M x N x K           fusec (PDL)        fusec (no PDL)     cuBLAS             PDL gain  vs cuBLAS")
    for r in rows:
        def cell(key):
            ms = r.get(key)
            if not ms:
                return f"{'-':18}"
            us = ms * 1e3 / r["layers"]
            return f"{us:7.2f} ({r['weight_bytes'] / (ms * 1e-3) / 1e12:4.2f})    "
        gain = r["nopdl_ms"] / r["pdl_ms"] if r.get("pdl_ms") and r.get("nopdl_ms") else 0
        vs = r["cublas_ms"] / r["pdl_ms"] if r.get("pdl_ms") and r.get("cublas_ms") else 0
        print(f"{r['m']}x{r['n']}x{r['k']:<12} {cell('pdl_ms')} {cell('nopdl_ms')} "
              f"{cell('cublas_ms')} {gain:5.2f}x   {vs:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
