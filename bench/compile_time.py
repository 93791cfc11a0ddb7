#!/usr/bin/env python3
"""JIT compile time of the benchmark models (issue #16): fusec against
torch.compile's first call, in one run on the GPU machine.

For each model of bench/models.py (same seeds, fp16, torch.export, weights as
graph inputs) at batch x sequence 4 x 1024:

- fusec-run's `compile_s` (import, pipeline, code generation, PTX to cubin,
  modules loaded) with an empty kernel cache, using the MLIR context's
  threads (one per core: kernels are generated and their PTX compiled in
  parallel), then with `--mlir-disable-threading` (one thread, as before
  the parallel code generation), then warm (the threaded run's cache);
- torch.compile's first call (default mode) on the same module and inputs,
  after torch._dynamo.reset(), in this process.

Each fusec-run runs the graph once (--runs=1 --warmup=0 --no-check): the
timing of interest is the compile. Writes $OUT/compile-time.json and prints
a table.

    FUSEC_BIN=.device/bin python3 bench/compile_time.py
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models as M  # noqa: E402

OUT = os.environ.get("OUT", "bench/out")
SHAPE = (4, 1024)


def fusec_compile_s(path, inputs, cache, *flags):
    b, s = SHAPE
    cmd = [f"{M.BIN}/fusec-run", path, f"--input-shape=input_ids={b}x{s}",
           f"--input-shape=attention_mask={b}x{s}", "--no-check", "--json", "--runs=1",
           "--warmup=0", *flags] + [f"--input={p}" for p in inputs]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, FUSEC_CACHE_DIR=cache))
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    r = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])
    return r["compile_s"], time.time() - t0


def main():
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp()
    rows = []
    for name, build in M.models().items():
        torch.manual_seed(0)
        model = build().eval().half().cuda()
        module = M.Logits(model).eval()
        b, s = SHAPE
        ids = torch.randint(0, model.config.vocab_size, (b, s),
                            generator=torch.Generator(device="cpu").manual_seed(1))
        mask = torch.ones(b, s, dtype=torch.int64)
        path = os.path.join(work, f"{name}.onnx")
        with torch.no_grad():
            M.export(module, (ids.cuda(), mask.cuda()), path)
        wdir = os.path.join(work, f"{name}-weights")
        os.makedirs(wdir, exist_ok=True)
        inputs = [os.path.join(work, f"{name}-ids.npy"), os.path.join(work, f"{name}-mask.npy")]
        np.save(inputs[0], ids.numpy().astype(np.int64))
        np.save(inputs[1], mask.numpy())
        inputs += M.weights_to_inputs(path, wdir)
        row = {"model": name, "batch": b, "seq": s}
        try:
            cache = tempfile.mkdtemp()
            row["fusec_cold_s"], row["fusec_cold_process_s"] = fusec_compile_s(path, inputs, cache)
            row["fusec_warm_s"], _ = fusec_compile_s(path, inputs, cache)
            row["fusec_cold_one_thread_s"], _ = fusec_compile_s(
                path, inputs, tempfile.mkdtemp(), "--mlir-disable-threading")
        except Exception as e:  # noqa: BLE001
            row["fusec_error"] = str(e)[-2000:]
        x, xm = ids.cuda(), mask.cuda()
        with torch.no_grad():
            torch._dynamo.reset()
            c = torch.compile(module)
            t0 = time.time()
            c(x, xm)
            torch.cuda.synchronize()
            row["torch_compile_first_call_s"] = time.time() - t0
        if "fusec_cold_s" in row:
            row["ratio_cold"] = row["torch_compile_first_call_s"] / row["fusec_cold_s"]
        rows.append(row)
        print(json.dumps(row), flush=True)
        del model, module, c
        torch.cuda.empty_cache()
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
               "cpus": os.cpu_count(), "rows": rows},
              open(os.path.join(OUT, "compile-time.json"), "w"), indent=2)
    print(f"\n{'model':12s} {'BxS':>8s} {'cold s':>7s} {'1 thread':>8s} {'warm s':>7s} "
          f"{'torch 1st':>9s} {'ratio':>6s}")
    for r in rows:
        f = lambda k, fmt="%.2f": (fmt % r[k]) if isinstance(r.get(k), (int, float)) else "-"
        print(f"{r['model']:12s} {r['batch']}x{r['seq']:<6d} {f('fusec_cold_s'):>7s} "
              f"{f('fusec_cold_one_thread_s'):>8s} {f('fusec_warm_s'):>7s} "
              f"{f('torch_compile_first_call_s'):>9s} {f('ratio_cold', '%.1fx'):>6s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
