#!/usr/bin/env python3
"""Memory-bound graphs on the GPU: fusec's generated kernels against eager
PyTorch and TorchInductor, in one run on one card.

Runs on the GPU machine from the repository root (bench/run-gpu.sh calls it):
1. correctness: fusec-run (JIT: pipeline + code generation) against the
   reference interpreter on fresh random inputs, over odd sizes, sizes that are
   not a multiple of the vector width, one element, and several dtypes;
2. speed: the median kernel time of fusec (cache hints on, and off through
   FUSEC_DISABLE_AGGRESSIVE_PTX=1), eager PyTorch and torch.compile on the same
   graph and size, with CUDA events, and the device-to-device copy ceiling
   measured the same way. Bytes: each input read once, each output written once.

Environment: MEMORY_BOUND_CORRECTNESS=0 skips 1; MEMORY_BOUND_SPEED=0 skips 2;
MEMORY_BOUND_VARIANTS=0 times only fusec's default (and no-hints) kernels;
MEMORY_BOUND_TORCH=0 skips eager and Inductor; MEMORY_BOUND_BEFORE=DIR adds
the previous code generator's kernels for the same graphs (bench/stage-before.sh)
and prints after/before.

Writes $OUT/memory_bound.json and prints a table last.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

from gpu_timing import median_ms

BIN = os.environ.get("FUSEC_BIN", ".device/bin")
OUT = os.environ.get("OUT", "bench/out")

GRAPHS = {
    # name: (fusec body, torch function, inputs)
    "gelu_bias_residual": (
        """  %0 = fusec.add %x, %b : T
  %1 = fusec.gelu %0 : T
  %h = fusec.constant dense<0.5> : T
  %2 = fusec.mul %1, %h : T
  %3 = fusec.add %2, %r : T
  return %3 : T""",
        lambda x, b, r: __import__("torch").nn.functional.gelu(x + b) * 0.5 + r,
        ["x", "b", "r"]),
    "silu_mul": (
        """  %0 = fusec.silu %x : T
  %1 = fusec.mul %0, %b : T
  return %1 : T""",
        lambda x, b: __import__("torch").nn.functional.silu(x) * b,
        ["x", "b"]),
}


# Row graphs: (fusec op line, torch function, has gamma, has beta).
ROWS = {
    "layer_norm": ("fusec.layer_norm %x, %g, %b : (T, V, V) -> T", True, True),
    "rms_norm": ("fusec.rms_norm %x, %g : (T, V) -> T", True, False),
    "softmax": ("fusec.softmax %x dim 1 : T", False, False),
}


def row_mlir(name, rows, cols, dtype):
    line, g, b = ROWS[name]
    t, v = f"tensor<{rows}x{cols}x{dtype}>", f"tensor<{cols}x{dtype}>"
    params = [f"%x: {t}"] + ([f"%g: {v}"] if g else []) + ([f"%b: {v}"] if b else [])
    op = line.replace("T", t).replace("V", v)
    return f"func.func @{name}({', '.join(params)}) -> {t} {{\n  %0 = {op}\n  return %0 : {t}\n}}\n"


def row_torch(name, x, g, b):
    import torch
    cols = x.shape[-1]
    if name == "layer_norm":
        return torch.nn.functional.layer_norm(x, (cols,), g, b)
    if name == "rms_norm":
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * g.float()).to(x.dtype)
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def mlir(name, n, dtype):
    body, _, args = GRAPHS[name]
    t = f"tensor<{n}x{dtype}>"
    params = ", ".join(f"%{a}: {t}" for a in args)
    return f"func.func @{name}({params}) -> {t} {{\n{body.replace('T', t)}\n}}\n"


def before_path(name):
    """The previous code generator's kernels for a speed graph
    (MEMORY_BOUND_BEFORE=DIR, staged by bench/stage-before.sh), if staged."""
    d = os.environ.get("MEMORY_BOUND_BEFORE")
    p = os.path.join(d, name) if d else None
    return p if p and os.path.exists(p) else None


def speed_graphs():
    """Every graph the speed section times, as (file name, MLIR text)."""
    n = 128 << 20
    out = [(f"{name}_bf16_big.mlir", mlir(name, n, "bf16")) for name in GRAPHS]
    for shape in ((16384, 8192), (4096, 4096), (32768, 1024)):
        for name in ROWS:
            out.append((f"{name}_bf16_{shape[0]}x{shape[1]}.mlir", row_mlir(name, *shape, "bf16")))
    out.append(("softmax_bf16_8192x50304.mlir", row_mlir("softmax", 8192, 50304, "bf16")))
    return out


def fusec_run(path, *flags, env=None):
    try:
        p = subprocess.run([f"{BIN}/fusec-run", path, "--json", *flags],
                           capture_output=True, text=True, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        return 124, None, f"timed out: {path}"
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except json.JSONDecodeError:
        return p.returncode, None, p.stdout + p.stderr


def main():
    os.makedirs(OUT, exist_ok=True)
    results = {"correctness": [], "speed": []}
    tmp = tempfile.mkdtemp()
    # 1. Correctness over shapes and dtypes (MEMORY_BOUND_CORRECTNESS=0: skipped).
    ok_all = True
    check = os.environ.get("MEMORY_BOUND_CORRECTNESS", "1") != "0"
    for name in (GRAPHS if check else []):
        for dtype in ("f32", "bf16", "f16"):
            for n in (1, 7, 8, 1000, 1000003, 4 << 20):
                path = os.path.join(tmp, f"{name}_{dtype}_{n}.mlir")
                open(path, "w").write(mlir(name, n, dtype))
                rc, r, err = fusec_run(path, "--runs=3", "--warmup=1", "--seed=%d" % n)
                ok = rc == 0 and r is not None and r["ok"]
                ok_all &= ok
                results["correctness"].append({
                    "graph": name, "dtype": dtype, "n": n, "ok": ok,
                    "rel_l2": r["results"][0]["rel_l2"] if r else None,
                    "error": None if ok else err[-400:]})
                print(f"correctness {name} {dtype} n={n}: {'ok' if ok else 'FAIL ' + err[-200:]}",
                      flush=True)

    for name in (ROWS if check else []):
        for dtype in ("f32", "bf16"):
            for rows, cols in ((1, 1), (3, 7), (5, 33), (9, 1024), (64, 1024), (16, 4096), (7, 5000),
                               (4, 12288), (2, 50304)):
                path = os.path.join(tmp, f"{name}_{dtype}_{rows}x{cols}.mlir")
                open(path, "w").write(row_mlir(name, rows, cols, dtype))
                rc, r, err = fusec_run(path, "--runs=3", "--warmup=1", f"--seed={rows * cols}")
                ok = rc == 0 and r is not None and r["ok"]
                ok_all &= ok
                results["correctness"].append({
                    "graph": name, "dtype": dtype, "n": rows * cols, "shape": [rows, cols],
                    "ok": ok, "rel_l2": r["results"][0]["rel_l2"] if r else None,
                    "error": None if ok else err[-400:]})
                print(f"correctness {name} {dtype} {rows}x{cols}: {'ok' if ok else 'FAIL ' + err[-300:]}",
                      flush=True)

    # Column reductions (the reduced dims lead): sum, and x - mean(x).
    for dtype in (("f32", "bf16") if check else ()):
        for rows, cols in ((1, 1), (3, 5), (1000, 24), (4096, 1000), (77, 50304)):
            t, v = f"tensor<{rows}x{cols}x{dtype}>", f"tensor<{cols}x{dtype}>"
            text = (f"func.func @col(%x: {t}) -> ({v}, {t}) {{\n"
                    f"  %s = fusec.reduce sum %x dims [0] : {t} -> {v}\n"
                    f"  %m = fusec.reduce mean %x dims [0] : {t} -> {v}\n"
                    f"  %b = fusec.broadcast %m dims [1] : {v} -> {t}\n"
                    f"  %d = fusec.sub %x, %b : {t}\n"
                    f"  return %s, %d : {v}, {t}\n}}\n")
            path = os.path.join(tmp, f"col_{dtype}_{rows}x{cols}.mlir")
            open(path, "w").write(text)
            rc, r, err = fusec_run(path, "--runs=3", "--warmup=1", f"--seed={rows * cols}")
            ok = rc == 0 and r is not None and r["ok"]
            ok_all &= ok
            results["correctness"].append({
                "graph": "column_sum_center", "dtype": dtype, "n": rows * cols,
                "shape": [rows, cols], "ok": ok,
                "rel_l2": r["results"][0]["rel_l2"] if r else None,
                "error": None if ok else err[-400:]})
            print(f"correctness column_sum_center {dtype} {rows}x{cols}: "
                  f"{'ok' if ok else 'FAIL ' + err[-300:]}", flush=True)

    # Reductions over a middle dim: max over dim 1 of [A, R, B], and x - max.
    for dtype in (("f32", "bf16") if check else ()):
        for a_, r_, b_ in ((1, 1, 1), (3, 5, 7), (4, 1000, 24), (2, 77, 4096)):
            t = f"tensor<{a_}x{r_}x{b_}x{dtype}>"
            v = f"tensor<{a_}x{b_}x{dtype}>"
            text = (f"func.func @mid(%x: {t}) -> ({v}, {t}) {{\n"
                    f"  %m = fusec.reduce max %x dims [1] : {t} -> {v}\n"
                    f"  %b = fusec.broadcast %m dims [0, 2] : {v} -> {t}\n"
                    f"  %d = fusec.sub %x, %b : {t}\n"
                    f"  return %m, %d : {v}, {t}\n}}\n")
            path = os.path.join(tmp, f"mid_{dtype}_{a_}x{r_}x{b_}.mlir")
            open(path, "w").write(text)
            rc, r, err = fusec_run(path, "--runs=3", "--warmup=1", f"--seed={a_ * r_ * b_}")
            ok = rc == 0 and r is not None and r["ok"]
            ok_all &= ok
            results["correctness"].append({
                "graph": "middle_max_center", "dtype": dtype, "n": a_ * r_ * b_,
                "shape": [a_, r_, b_], "ok": ok,
                "rel_l2": r["results"][0]["rel_l2"] if r else None,
                "error": None if ok else err[-400:]})
            print(f"correctness middle_max_center {dtype} {a_}x{r_}x{b_}: "
                  f"{'ok' if ok else 'FAIL ' + err[-300:]}", flush=True)

    if os.environ.get("MEMORY_BOUND_SPEED", "1") == "0":
        json.dump(results, open(os.path.join(OUT, "memory_bound.json"), "w"), indent=2)
        print(f"correctness: {sum(r['ok'] for r in results['correctness'])}/"
              f"{len(results['correctness'])} graphs match the reference (speed skipped)")
        return 0 if ok_all else 1

    # 2. Speed on 128M elements (bf16), beside torch.
    import torch
    n = 128 << 20
    dev = "cuda"
    # MEMORY_BOUND_TORCH=0: fusec only (before/after runs), no eager or Inductor.
    with_torch = os.environ.get("MEMORY_BOUND_TORCH", "1") != "0"

    src = torch.randn(n * 4, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src))
    copy_tbps = 2 * src.numel() * 2 / (copy_ms * 1e-3) / 1e12
    del src, dst
    for name in GRAPHS:
        _, fn, args = GRAPHS[name]
        nbytes = (len(args) + 1) * n * 2
        xs = [torch.randn(n, device=dev, dtype=torch.bfloat16) for _ in args]
        eager_ms = inductor_ms = None
        if with_torch:
            eager_ms = median_ms(lambda: fn(*xs))
            compiled = torch.compile(fn)
            inductor_ms = median_ms(lambda: compiled(*xs))
        del xs
        torch.cuda.empty_cache()
        path = os.path.join(tmp, f"{name}_bf16_big.mlir")
        open(path, "w").write(mlir(name, n, "bf16"))
        row = {"graph": name, "n": n, "dtype": "bf16", "bytes": nbytes,
               "copy_tbps": copy_tbps, "eager_ms": eager_ms, "inductor_ms": inductor_ms}
        variants = (("fusec", None),
                    ("fusec_no_hints", dict(os.environ, FUSEC_DISABLE_AGGRESSIVE_PTX="1")),
                    ("fusec_l2_256b", dict(os.environ, FUSEC_STREAM_LOAD="l2_256b")),
                    ("fusec_no_allocate", dict(os.environ, FUSEC_STREAM_LOAD="no_allocate")),
                    ("fusec_evict_first", dict(os.environ, FUSEC_STREAM_LOAD="evict_first")))
        if os.environ.get("MEMORY_BOUND_VARIANTS", "1") == "0":
            variants = variants[:2]
        before = before_path(f"{name}_bf16_big.mlir")
        if before:
            variants = variants + (("fusec_before", None),)
        for label, env in variants:
            rc, r, err = fusec_run(before if label == "fusec_before" else path, "--no-check",
                                   "--runs=30", "--warmup=5", env=env)
            row[f"{label}_ms"] = r["kernels"][0]["median_ms"] if (rc == 0 and r) else None
            if label == "fusec" and rc == 0 and r:
                row["strategy"] = r["kernels"][0].get("strategy")
                row["predicted_ms"] = r["kernels"][0].get("predicted_ms")
            if rc != 0:
                row[f"{label}_error"] = err[-400:]
        for k in ("eager", "inductor", "fusec_before") + tuple(v[0] for v in variants[:5]):
            ms = row.get(f"{k}_ms")
            row[f"{k}_tbps"] = nbytes / (ms * 1e-3) / 1e12 if ms else None
        results["speed"].append(row)
    row_cases = [(name, shape) for shape in ((16384, 8192), (4096, 4096), (32768, 1024))
                 for name in ROWS] + [("softmax", (8192, 50304))]
    for name, (rows, cols) in row_cases:
        x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
        g = torch.randn(cols, device=dev, dtype=torch.bfloat16)
        b = torch.randn(cols, device=dev, dtype=torch.bfloat16)
        nbytes = 2 * rows * cols * 2
        eager_ms = inductor_ms = None
        if with_torch:
            eager_ms = median_ms(lambda: row_torch(name, x, g, b))
            torch._dynamo.reset()
            compiled = torch.compile(lambda x, g, b: row_torch(name, x, g, b))
            inductor_ms = median_ms(lambda: compiled(x, g, b))
        del x, g, b
        torch.cuda.empty_cache()
        path = os.path.join(tmp, f"{name}_bf16_{rows}x{cols}.mlir")
        open(path, "w").write(row_mlir(name, rows, cols, "bf16"))
        row = {"graph": name, "n": rows * cols, "shape": [rows, cols], "dtype": "bf16",
               "bytes": nbytes, "copy_tbps": copy_tbps, "eager_ms": eager_ms,
               "inductor_ms": inductor_ms}
        row_variants = (("fusec", None),
                        ("fusec_no_hints", dict(os.environ, FUSEC_DISABLE_AGGRESSIVE_PTX="1")),
                        ("fusec_keep_evict_last", dict(os.environ, FUSEC_KEEP_LOAD="evict_last")),
                        ("fusec_chunks2", dict(os.environ, FUSEC_ROW_CHUNKS="2")),
                        ("fusec_chunks8", dict(os.environ, FUSEC_ROW_CHUNKS="8")))
        if os.environ.get("MEMORY_BOUND_VARIANTS", "1") == "0":
            row_variants = row_variants[:1]
        before = before_path(f"{name}_bf16_{rows}x{cols}.mlir")
        if before:
            row_variants = row_variants + (("fusec_before", None),)
        for label, env in row_variants:
            rc, r, err = fusec_run(before if label == "fusec_before" else path, "--no-check",
                                   "--runs=30", "--warmup=5", env=env)
            k = r["kernels"][0] if (rc == 0 and r) else {}
            row[f"{label}_ms"] = k.get("median_ms")
            if label == "fusec":
                row["strategy"] = k.get("strategy")
                row["predicted_ms"] = k.get("predicted_ms")
            if rc != 0:
                row[f"{label}_error"] = err[-400:]
        for k in ("eager", "inductor", "fusec", "fusec_no_hints", "fusec_keep_evict_last",
                  "fusec_chunks2", "fusec_chunks8", "fusec_before"):
            ms = row.get(f"{k}_ms")
            row[f"{k}_tbps"] = nbytes / (ms * 1e-3) / 1e12 if ms else None
        results["speed"].append(row)
    results["copy_tbps"] = copy_tbps
    results["torch"] = torch.__version__
    json.dump(results, open(os.path.join(OUT, "memory_bound.json"), "w"), indent=2)

    print(f"\ncorrectness: {sum(r['ok'] for r in results['correctness'])}/"
          f"{len(results['correctness'])} graphs match the reference")
    print(f"copy ceiling (torch, bf16, 2 GiB): {copy_tbps:.2f} TB/s")
    print("stream loads: fusec (default), no hints (plain ld.global.v4), l2_256b, no_allocate, evict_first")
    print(f"{'graph (bf16)':26s} {'eager':>11s} {'inductor':>11s} {'fusec':>11s} {'no hints':>11s} "
          f"{'l2_256b':>11s} {'no_alloc':>11s} {'evict_1st':>11s} {'vs ind.':>7s} {'meas/pred':>9s} strategy")
    ratios = []
    for r in results["speed"]:
        def cell(k):
            v = r.get(f"{k}_tbps")
            return f"{v:4.2f} ({v / copy_tbps:3.0%})" if v else "    -     "
        ratio = (r["inductor_ms"] / r["fusec_ms"]) if r.get("fusec_ms") and r.get("inductor_ms") else 0
        if ratio:
            ratios.append(ratio)
        mp = (r["fusec_ms"] / r["predicted_ms"]) if r.get("fusec_ms") and r.get("predicted_ms") else 0
        label = r["graph"] + (" %dx%d" % tuple(r["shape"]) if "shape" in r else " 128M")
        print(f"{label:26s} {cell('eager'):>11s} {cell('inductor'):>11s} {cell('fusec'):>11s} "
              f"{cell('fusec_no_hints'):>11s} {cell('fusec_l2_256b'):>11s} {cell('fusec_no_allocate'):>11s} "
              f"{cell('fusec_evict_first'):>11s} {ratio:6.2f}x {mp:9.2f} {r.get('strategy') or '-'}")
    print(f"\n{'row graph (bf16)':26s} {'fusec':>11s} {'keep=ev_last':>12s} {'2 chunks':>11s} {'8 chunks':>11s}")
    for r in results["speed"]:
        if "shape" not in r:
            continue
        def cell(k):
            v = r.get(f"{k}_tbps")
            return f"{v:4.2f} ({v / copy_tbps:3.0%})" if v else "    -     "
        label = r["graph"] + " %dx%d" % tuple(r["shape"])
        print(f"{label:26s} {cell('fusec'):>11s} {cell('fusec_keep_evict_last'):>12s} "
              f"{cell('fusec_chunks2'):>11s} {cell('fusec_chunks8'):>11s}")
    compared = [r for r in results["speed"] if r.get("fusec_ms") and r.get("fusec_before_ms")]
    if compared:
        print(f"\nbefore/after (the same graphs' kernels from the previous code generator, "
              f"{os.environ.get('MEMORY_BOUND_BEFORE')}, run in this process's GPU session):")
        print(f"{'graph (bf16)':26s} {'before ms':>10s} {'after ms':>10s} {'after/before':>12s}")
        worst = 0
        for r in compared:
            label = r["graph"] + (" %dx%d" % tuple(r["shape"]) if "shape" in r else " 128M")
            q = r["fusec_ms"] / r["fusec_before_ms"]
            worst = max(worst, q)
            print(f"{label:26s} {r['fusec_before_ms']:10.4f} {r['fusec_ms']:10.4f} {q:12.3f}")
        results["worst_after_over_before"] = worst
        print(f"slowest after/before: {worst:.3f} (goal: at most 1.03)")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        results["geomean_vs_inductor"] = geo
        json.dump(results, open(os.path.join(OUT, "memory_bound.json"), "w"), indent=2)
        print(f"geometric mean vs TorchInductor over {len(ratios)} cases: {geo:.2f}x")
    return 0 if ok_all else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write-speed-graphs":
        os.makedirs(sys.argv[2], exist_ok=True)
        for name, text in speed_graphs():
            open(os.path.join(sys.argv[2], name), "w").write(text)
        sys.exit(0)
    sys.exit(main())
