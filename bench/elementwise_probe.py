#!/usr/bin/env python3
"""Why do TorchInductor's streaming kernels run faster than fusec's (issue
#15: cast, Adam, SwiGLU at 0.93-0.97x Inductor, both near torch's copy)?
On the GPU machine, for each graph named (default: the elementwise rows of
bench/memory_graphs.py at their benchmark sizes), in one run:

1. fusec-run's end-to-end time under code-generation variants (the
   measurement switches FUSEC_ELEMENTWISE_UNROLL / _THREADS / _CTAS_PER_SM and
   FUSEC_STREAM_LOAD), beside Inductor timed the same way as the suite
   (a CUDA graph of 10 calls);
2. Inductor's generated Triton source of each graph (its launch
   configuration, its loads and stores), in $OUT/inductor/;
3. with PROBE_NCU=1, Nsight Compute's DRAM bytes and time of fusec's and
   Inductor's kernels (--clock-control none), in $OUT/ncu-*.csv, for the
   graphs PROBE_NCU_GRAPHS names (default cast_bf16_scaled,adam_step).

    FUSEC_BIN=.device/bin OUT=out python3 bench/elementwise_probe.py [graph ...]
Writes $OUT/elementwise_probe.json and prints a table last.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory_bound_suite as suite  # noqa: E402
import memory_graphs  # noqa: E402

OUT = os.environ.get("OUT", "bench/out")
CODE = tempfile.mkdtemp()
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(CODE, "inductor"))
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(CODE, "triton"))
DEFAULT = ["cast_bf16_scaled", "adam_step", "swiglu_packed", "head_split",
           "kv_cache_concat", "rope"]
VARIANTS = [
    ("default", {}),
    ("unroll1", {"FUSEC_ELEMENTWISE_UNROLL": "1"}),
    ("unroll4", {"FUSEC_ELEMENTWISE_UNROLL": "4"}),
    ("unroll8", {"FUSEC_ELEMENTWISE_UNROLL": "8"}),
    ("threads128", {"FUSEC_ELEMENTWISE_THREADS": "128"}),
    ("threads512", {"FUSEC_ELEMENTWISE_THREADS": "512"}),
    ("oneshot-128x2", {"FUSEC_ELEMENTWISE_THREADS": "128", "FUSEC_ELEMENTWISE_CTAS_PER_SM": "0"}),
    ("oneshot-128x4", {"FUSEC_ELEMENTWISE_THREADS": "128", "FUSEC_ELEMENTWISE_UNROLL": "4",
                       "FUSEC_ELEMENTWISE_CTAS_PER_SM": "0"}),
    ("persistent8-u4", {"FUSEC_ELEMENTWISE_CTAS_PER_SM": "8", "FUSEC_ELEMENTWISE_UNROLL": "4"}),
    ("evict_first", {"FUSEC_STREAM_LOAD": "evict_first"}),
]


def fusec_ms(path, env):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        rc, r, err = suite.fusec_run(path, "--no-check", "--runs=30", "--warmup=5")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if rc != 0 or not r:
        return None, err[-300:]
    return r.get("end_to_end_ms"), [k.get("median_ms") for k in r["kernels"]]


def main():
    import torch
    names = sys.argv[1:] or DEFAULT
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp()
    ncu = os.environ.get("PROBE_NCU") == "1" and shutil.which("ncu")
    res = {"rows": []}
    src = torch.randn(512 << 20, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    from gpu_timing import median_ms
    res["copy_tbps"] = 2 * src.numel() * 2 / median_ms(lambda: dst.copy_(src)) / 1e9
    del src, dst
    for g, size in memory_graphs.graphs("bench"):
        if g.name not in names:
            continue
        path = os.path.join(tmp, f"{g.name}.mlir")
        open(path, "w").write(g.mlir())
        row = {"graph": g.name, "size": size, "bytes": g.bytes(), "fusec": {}}
        for label, env in VARIANTS:
            ms, detail = fusec_ms(path, env)
            row["fusec"][label] = {"ms": ms, "detail": detail}
        xs = suite.torch_inputs(g, 1)
        torch._dynamo.reset()
        comp = torch.compile(g.torch_fn)
        row["inductor_ms"], row["inductor_timing"] = suite.graph_ms(comp, xs)
        del xs
        torch.cuda.empty_cache()
        if ncu and g.name in os.environ.get("PROBE_NCU_GRAPHS", "cast_bf16_scaled,adam_step").split(","):
            metrics = ("gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
                       "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
                       "launch__grid_size,launch__block_size,launch__registers_per_thread,"
                       "sm__warps_active.avg.pct_of_peak_sustained_active")
            for who, cmd in (("fusec", [f"{suite.BIN}/fusec-run", path, "--no-check",
                                        "--runs=1", "--warmup=0"]),
                             ("inductor", [sys.executable, os.path.abspath(__file__),
                                           "--inductor-once", g.name])):
                pick = ["--kernel-name", "regex:triton_"] if who == "inductor" else []
                p = subprocess.run(["ncu", "--clock-control", "none", "--csv", "--launch-count",
                                    "2", *pick, "--metrics", metrics, *cmd], capture_output=True, text=True,
                                   timeout=300)
                open(os.path.join(OUT, f"ncu-{g.name}-{who}.csv"), "w").write(p.stdout + p.stderr)
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
        json.dump(res, open(os.path.join(OUT, "elementwise_probe.json"), "w"), indent=1)
    # Inductor's generated modules and Triton's PTX, for reading.
    code = os.path.join(OUT, "inductor-code")
    os.makedirs(code, exist_ok=True)
    for f in glob.glob(os.path.join(CODE, "**", "*"), recursive=True):
        if f.endswith((".py", ".ptx")) and os.path.isfile(f) and os.path.getsize(f) < 1 << 20:
            shutil.copy(f, code)
    print(f"\ncopy {res['copy_tbps']:.2f} TB/s; TB/s per variant (Inductor last)")
    labels = [l for l, _ in VARIANTS]
    print("| graph | " + " | ".join(labels) + " | inductor |")
    for r in res["rows"]:
        cells = []
        for l in labels:
            ms = r["fusec"][l]["ms"]
            cells.append(f"{r['bytes'] / ms / 1e9:.2f}" if ms else "-")
        cells.append(f"{r['bytes'] / r['inductor_ms'] / 1e9:.2f}")
        print(f"| {r['graph']} | " + " | ".join(cells) + " |")


def inductor_once(name):
    """One Inductor call of graph `name` after its warm-up (for ncu)."""
    import torch
    for g, _ in memory_graphs.graphs("bench"):
        if g.name == name:
            xs = suite.torch_inputs(g, 1)
            comp = torch.compile(g.torch_fn)
            for _ in range(3):
                comp(*xs)
            torch.cuda.synchronize()
            return


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--inductor-once":
        inductor_once(sys.argv[2])
    else:
        main()
