#!/usr/bin/env python3
"""Tensor-core matmuls on the GPU: fusec's generated kernels (matmul_wgmma on
sm_90a) against cuBLAS through torch and TorchInductor, in one run.

Runs on the GPU machine from the repository root with the static fusec-run
in $FUSEC_BIN (bench/matmul-gpu.sh stages and calls it):

1. correctness, small: fusec-run (JIT: pipeline + code generation) against
   the reference interpreter (f64) on fresh random inputs, over ragged M, N
   and K, transposed operands, batches, bf16/f16 in, bf16/f16/f32 out, and
   every epilogue kind; shapes TMA cannot take (rows not a multiple of 16
   bytes) check the SIMT fallback.
2. correctness, large: fusec-run --output-dir writes its random inputs and
   results; torch recomputes the product in f32 on the GPU and the relative
   L2 error must stay under 1e-2 (bf16 outputs) -- no interpreter at 8192^3.
3. speed: the kernel's median time (fusec-run, CUDA events) and cuBLAS's
   (torch.matmul, CUDA events, median), interleaved: cuBLAS, fusec, cuBLAS,
   fusec on each shape; gelu(x W + b) against the bare matmul and against
   torch.compile; SM clocks logged before and after.

Writes $OUT/matmul.json and prints a table last. Env: MATMUL_SPEED=0 skips
speed; MATMUL_CORRECTNESS=0 skips correctness (MATMUL_SMALL=0 the small cases, MATMUL_LARGE=0
the large ones); MATMUL_QUICK=1 runs fewer cases; MATMUL_SHAPES (a JSON list of
[label, case] pairs, cases as for mlir()) replaces the speed shapes;
MATMUL_VARIANTS (see main) times fusec under other environments too.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import gpu_timing

BIN = os.environ.get("FUSEC_BIN", ".device/bin")
OUT = os.environ.get("OUT", "bench/out")
QUICK = os.environ.get("MATMUL_QUICK", "0") == "1"

EPILOGUES = ("none", "bias", "bias_gelu", "bias_gelu_onnx", "silu", "scale", "residual", "relu")


def mlir(m, n, k, batch=(), rhs_batch=True, tl=False, tr=False, dt="bf16", out=None,
         epilogue="none"):
    """A function @mm: matmul of [batch, M, K] (or [batch, K, M] with tl) by
    [batch?, K, N] (or [.., N, K] with tr), then the epilogue."""
    out = out or dt
    b = "".join(f"{d}x" for d in batch)
    rb = b if rhs_batch else ""
    a_t = f"tensor<{b}{k}x{m}x{dt}>" if tl else f"tensor<{b}{m}x{k}x{dt}>"
    b_t = f"tensor<{rb}{n}x{k}x{dt}>" if tr else f"tensor<{rb}{k}x{n}x{dt}>"
    o_t = f"tensor<{b}{m}x{n}x{out}>"
    v_t = f"tensor<{n}x{out}>"
    params = [f"%a: {a_t}", f"%b: {b_t}"]
    attrs = []
    if tl:
        attrs.append("transpose_lhs")
    if tr:
        attrs.append("transpose_rhs")
    attr = (" {" + ", ".join(attrs) + "}") if attrs else ""
    lines = [f"  %mm = fusec.matmul %a, %b{attr} : ({a_t}, {b_t}) -> {o_t}"]
    last = "%mm"
    rank = len(batch) + 2
    if epilogue in ("bias", "bias_gelu", "bias_gelu_onnx"):
        params.append(f"%bias: {v_t}")
        lines.append(f"  %bb = fusec.broadcast %bias dims [{rank - 1}] : {v_t} -> {o_t}")
        lines.append(f"  %e0 = fusec.add %mm, %bb : {o_t}")
        last = "%e0"
        if epilogue == "bias_gelu":
            lines.append(f"  %e1 = fusec.gelu %e0 : {o_t}")
            last = "%e1"
        elif epilogue == "bias_gelu_onnx":
            # As torch.onnx.export writes nn.GELU: Div, Erf, Add, Mul, Mul,
            # each in the storage type.
            lines += [f"  %s2 = fusec.constant dense<1.4142135> : {o_t}",
                      f"  %e1 = fusec.div %e0, %s2 : {o_t}",
                      f"  %e2 = fusec.erf %e1 : {o_t}",
                      f"  %one = fusec.constant dense<1.0> : {o_t}",
                      f"  %e3 = fusec.add %e2, %one : {o_t}",
                      f"  %e4 = fusec.mul %e0, %e3 : {o_t}",
                      f"  %half = fusec.constant dense<0.5> : {o_t}",
                      f"  %e5 = fusec.mul %e4, %half : {o_t}"]
            last = "%e5"
    elif epilogue == "silu":
        lines.append(f"  %e0 = fusec.silu %mm : {o_t}")
        last = "%e0"
    elif epilogue == "swiglu":
        # A second matmul of the same lhs: silu(a b) * (a b2), one dual-GEMM kernel.
        params.append(f"%b2: {b_t}")
        lines.append(f"  %mm2 = fusec.matmul %a, %b2{attr} : ({a_t}, {b_t}) -> {o_t}")
        lines.append(f"  %e0 = fusec.silu %mm : {o_t}")
        lines.append(f"  %e1 = fusec.mul %e0, %mm2 : {o_t}")
        last = "%e1"
    elif epilogue == "scale":
        lines.append(f"  %c = fusec.constant dense<0.125> : {o_t}")
        lines.append(f"  %e0 = fusec.mul %mm, %c : {o_t}")
        last = "%e0"
    elif epilogue == "residual":
        params.append(f"%r: {o_t}")
        lines.append(f"  %e0 = fusec.add %mm, %r : {o_t}")
        last = "%e0"
    elif epilogue == "relu":
        lines.append(f"  %z = fusec.constant dense<0.0> : {o_t}")
        lines.append(f"  %e0 = fusec.max %mm, %z : {o_t}")
        last = "%e0"
    lines.append(f"  return {last} : {o_t}")
    return f"func.func @mm({', '.join(params)}) -> {o_t} {{\n" + "\n".join(lines) + "\n}\n"


def fusec_run(path, *flags, timeout=180, env=None):
    try:
        p = subprocess.run([f"{BIN}/fusec-run", path, "--json", *flags], capture_output=True,
                           text=True, timeout=timeout,
                           env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        return 124, None, f"timed out after {timeout} s: {path}"
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except json.JSONDecodeError:
        return p.returncode, None, p.stdout + p.stderr


def heads_mlir(b, s, h, d, dt="bf16"):
    """@mm: a QKV projection written head-major (the matmul kernel's store
    through slices, reshapes and transposes) and an output projection reading
    [B, H, S, D] heads as its rows (the load through a tensor map over the
    factors), with a residual."""
    w = h * d
    t = lambda *dims: "tensor<" + "x".join(str(x) for x in dims) + f"x{dt}>"
    heads, rows = t(b, h, s, d), t(b, s, h, d)
    lines = [f"func.func @mm(%x: {t(b * s, w)}, %wqkv: {t(w, 3 * w)}, %o: {heads}, %wo: {t(w, w)}, "
             f"%r: {t(b * s, w)}) -> ({heads}, {heads}, {heads}, {t(b * s, w)}) {{",
             f"  %qkv = fusec.matmul %x, %wqkv : ({t(b * s, w)}, {t(w, 3 * w)}) -> {t(b * s, 3 * w)}"]
    outs = []
    for i, name in enumerate("qkv"):
        lines.append(f"  %{name}2 = fusec.slice %qkv offsets [0, {i * w}] strides [1, 1] : "
                     f"{t(b * s, 3 * w)} -> {t(b * s, w)}")
        lines.append(f"  %{name}3 = fusec.reshape %{name}2 : {t(b * s, w)} -> {rows}")
        lines.append(f"  %{name} = fusec.transpose %{name}3 perm [0, 2, 1, 3] : {rows} -> {heads}")
        outs.append(f"%{name}")
    lines.append(f"  %o3 = fusec.transpose %o perm [0, 2, 1, 3] : {heads} -> {rows}")
    lines.append(f"  %o2 = fusec.reshape %o3 : {rows} -> {t(b * s, w)}")
    lines.append(f"  %p = fusec.matmul %o2, %wo : ({t(b * s, w)}, {t(w, w)}) -> {t(b * s, w)}")
    lines.append(f"  %y = fusec.add %r, %p : {t(b * s, w)}")
    lines.append(f"  return {', '.join(outs)}, %y : {heads}, {heads}, {heads}, {t(b * s, w)}")
    return "\n".join(lines) + "\n}\n"


def small_cases():
    cases = []
    # (M, N, K): aligned, ragged (TMA bounds), and unaligned rows (SIMT).
    shapes = [(128, 128, 64), (256, 512, 128), (1, 128, 64), (17, 24, 40), (127, 136, 72),
              (200, 520, 264), (129, 264, 8), (64, 1000, 1000), (300, 256, 4104)]
    if not QUICK:
        shapes += [(513, 520, 136), (16, 4096, 256), (1000, 72, 520)]
    for m, n, k in shapes:
        cases.append(dict(m=m, n=n, k=k))
    for tl, tr in ((False, True), (True, False), (True, True)):
        cases.append(dict(m=200, n=264, k=136, tl=tl, tr=tr))
        cases.append(dict(m=17, n=136, k=40, tl=tl, tr=tr, dt="f16"))
    cases.append(dict(m=100, n=72, k=64, batch=(3,), rhs_batch=False))
    cases.append(dict(m=100, n=72, k=64, batch=(6,)))
    cases.append(dict(m=65, n=136, k=72, batch=(2, 3), tr=True))
    cases.append(dict(m=200, n=264, k=136, out="f32"))
    cases.append(dict(m=200, n=264, k=136, dt="f16"))
    for ep in EPILOGUES[1:]:
        cases.append(dict(m=150, n=264, k=200, epilogue=ep))
    cases.append(dict(m=150, n=264, k=200, epilogue="bias_gelu", tr=True, dt="f16"))
    # Dual GEMM (two accumulators): ragged, K-major B, split-K, the 64-row tile.
    cases.append(dict(m=150, n=264, k=200, epilogue="swiglu"))
    cases.append(dict(m=200, n=136, k=520, epilogue="swiglu", tr=True, dt="f16"))
    cases.append(dict(m=100, n=136, k=1040, epilogue="swiglu", tr=True))
    cases.append(dict(m=16, n=520, k=264, epilogue="swiglu", tr=True))
    # Split-K with an epilogue, and the 64-row tile with a batch.
    cases.append(dict(m=130, n=264, k=2056, epilogue="bias_gelu"))
    cases.append(dict(m=40, n=200, k=520, batch=(3,), tr=True))
    # Odd N (a vocabulary of 50257): the staged epilogue, 2- and 4-byte
    # outputs, ragged tiles, a bias, a residual, a batch, the 64-row tile
    # and split-K.
    cases.append(dict(m=200, n=263, k=136, tr=True))
    cases.append(dict(m=300, n=1001, k=264, tr=True, dt="f16", epilogue="bias"))
    cases.append(dict(m=150, n=263, k=200, tr=True, out="f32"))
    cases.append(dict(m=150, n=263, k=200, tr=True, epilogue="residual"))
    cases.append(dict(m=65, n=263, k=72, batch=(2,), tr=True))
    cases.append(dict(m=40, n=263, k=520, batch=(3,), tr=True))
    cases.append(dict(m=16, n=1001, k=4096, tr=True))
    # Ping-pong with several units a warpgroup (more than twice the SMs'
    # units): the turns of the two consumers, their stage phases, the
    # ragged last row tile.
    cases.append(dict(m=6000, n=520, k=72, epilogue="bias_gelu_onnx", dt="f16"))
    cases.append(dict(m=6000, n=520, k=200, epilogue="residual", tr=True))
    # Decode (M <= 32): the swapped tile (the weights as wgmma's A, the
    # tokens as its N): K-major and MN-major weights, ragged tokens and
    # columns, epilogues, split-K with a partial token tile (the threads
    # that hold no token), a batch, f16, an f32 output.
    cases.append(dict(m=3, n=264, k=520, epilogue="bias"))
    cases.append(dict(m=24, n=200, k=136, tr=True, epilogue="residual"))
    cases.append(dict(m=9, n=4104, k=2056, tr=True, epilogue="bias_gelu"))
    cases.append(dict(m=32, n=136, k=72, batch=(3,), dt="f16"))
    cases.append(dict(m=5, n=263, k=1040, tr=True, out="f32"))
    cases.append(dict(m=1, n=1000, k=4096))
    # A dual GEMM (SwiGLU) at decode: MN-major weights, split-K.
    cases.append(dict(m=8, n=1000, k=2056, epilogue="swiglu"))
    # More 64-column tiles than SMs: 128 columns, two consumer warpgroups.
    cases.append(dict(m=8, n=8968, k=264, tr=True, epilogue="bias"))
    # Rows not a multiple of 16 bytes: the SIMT fallback, still correct.
    cases.append(dict(m=33, n=17, k=17))
    cases.append(dict(m=5, n=7, k=9, tr=True))
    return cases


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp()
    results = {"correctness": [], "large": [], "speed": []}
    ok_all = True
    check = os.environ.get("MATMUL_CORRECTNESS", "1") != "0"
    small = check and os.environ.get("MATMUL_SMALL", "1") != "0"
    cases = small_cases() if small else []
    # Movement folded into the store and the load: ragged rows on the store
    # side, both sides on tensor cores and on the SIMT fallback (sm_80 code).
    if small:
        for b, sq, h, d in ((2, 256, 4, 64), (1, 100, 2, 128), (3, 256, 2, 64), (1, 16, 2, 64)):
            cases.append(dict(heads=(b, sq, h, d)))
            cases.append(dict(heads=(b, sq, h, d), arch="sm_80"))
    for i, c in enumerate(cases):
        path = os.path.join(tmp, f"small_{i}.mlir")
        open(path, "w").write(heads_mlir(*c["heads"]) if "heads" in c else mlir(**c))
        rc, r, err = fusec_run(path, "--runs=2", "--warmup=1", f"--seed={i + 1}",
                               "--max-rel-l2=1e-2", *([f"--arch={c['arch']}"] if "arch" in c else []))
        strategy = r["kernels"][0].get("strategy") if r and r.get("kernels") else None
        ok = rc == 0 and r is not None and r["ok"]
        ok_all &= ok
        rel = r["results"][0]["rel_l2"] if r and r.get("results") else None
        results["correctness"].append(dict(case=c, ok=ok, strategy=strategy, rel_l2=rel,
                                           error=None if ok else err[-600:]))
        print(f"correctness {c}: {'ok' if ok else 'FAIL'} {strategy} rel_l2={rel}"
              + ("" if ok else "\n" + err[-600:]), flush=True)

    import numpy as np
    import torch

    def reference(a, b, c, dev="cuda"):
        ta = torch.from_numpy(a).to(dev, torch.float32)
        tb = torch.from_numpy(b).to(dev, torch.float32)
        if c.get("tl"):
            ta = ta.transpose(-1, -2)
        if c.get("tr"):
            tb = tb.transpose(-1, -2)
        return torch.matmul(ta, tb)

    def reference_case(d, c):
        a = np.load(os.path.join(d, "input_0.npy"))
        b = np.load(os.path.join(d, "input_1.npy"))
        ref = reference(a, b, c)
        if c.get("epilogue") == "swiglu":
            up = reference(a, np.load(os.path.join(d, "input_2.npy")), c)
            ref = torch.nn.functional.silu(ref) * up
        if c.get("epilogue") in ("bias", "residual"):  # [N] broadcast over rows, or [M, N]
            ref = ref + torch.from_numpy(np.load(os.path.join(d, "input_2.npy"))).cuda().float()
        return ref

    large = [dict(m=4096, n=4096, k=4096), dict(m=8192, n=8192, k=8192),
             dict(m=4096, n=6144, k=2048), dict(m=4096, n=2048, k=2048),
             dict(m=4096, n=5632, k=2048), dict(m=4096, n=2048, k=5632),
             dict(m=16, n=4096, k=4096), dict(m=4096, n=4096, k=4096, tr=True),
             dict(m=1000, n=4104, k=1032, tl=True),
             dict(m=4096, n=5632, k=2048, tr=True, epilogue="swiglu"),
             dict(m=64, n=4096, k=8192, tr=True),
             dict(m=4096, n=768, k=3072, epilogue="residual"),
             dict(m=4096, n=2304, k=768, tr=True, epilogue="bias"),
             dict(m=4096, n=50257, k=768, tr=True, dt="f16")]
    if QUICK:
        large = large[:3] + large[-3:]
    if os.environ.get("MATMUL_LARGE", "1") == "0":
        large = []
    for i, c in enumerate(large if check else []):
        path = os.path.join(tmp, f"large_{i}.mlir")
        open(path, "w").write(mlir(**c))
        d = os.path.join(tmp, f"large_{i}")
        os.makedirs(d, exist_ok=True)
        rc, r, err = fusec_run(path, "--no-check", "--runs=1", "--warmup=0",
                               f"--seed={100 + i}", f"--output-dir={d}")
        rel = None
        if rc == 0:
            got = torch.from_numpy(np.load(os.path.join(d, "result_0.npy"))).cuda().float()
            ref = reference_case(d, c)
            rel = float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))
        ok = rc == 0 and rel is not None and rel < 1e-2
        ok_all &= ok
        strategy = r["kernels"][0].get("strategy") if r and r.get("kernels") else None
        results["large"].append(dict(case=c, ok=ok, rel_l2=rel, strategy=strategy,
                                     error=None if rc == 0 else err[-600:]))
        print(f"large {c}: {'ok' if ok else 'FAIL'} {strategy} rel_l2={rel}"
              + ("" if rc == 0 else "\n" + err[-600:]), flush=True)
        subprocess.run(["rm", "-rf", d])

    if os.environ.get("MATMUL_SPEED", "1") == "0":
        json.dump(results, open(os.path.join(OUT, "matmul.json"), "w"), indent=2)
        print(f"correctness: {sum(r['ok'] for r in results['correctness'])}/"
              f"{len(results['correctness'])} small, {sum(r['ok'] for r in results['large'])}/"
              f"{len(results['large'])} large")
        return 0 if ok_all else 1

    def clocks():
        p = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
                            "--format=csv,noheader"], capture_output=True, text=True)
        return p.stdout.strip()

    def median_ms(fn, reps=50):
        return gpu_timing.median_ms(fn, reps=reps, warmup=10)

    results["clocks_before"] = clocks()
    speed = [("square", dict(m=4096, n=4096, k=4096)), ("square", dict(m=8192, n=8192, k=8192)),
             ("qkv", dict(m=4096, n=6144, k=2048)), ("o", dict(m=4096, n=2048, k=2048)),
             ("gate/up", dict(m=4096, n=5632, k=2048)), ("down", dict(m=4096, n=2048, k=5632))]
    speed += [("decode", dict(m=m, n=4096, k=4096)) for m in (1, 16, 64, 256)]
    speed += [("linear", dict(m=4096, n=4096, k=4096, tr=True))]
    speed += [("gelu_bias", dict(m=8192, n=8192, k=8192, epilogue="bias_gelu"))]
    speed += [("swiglu", dict(m=4096, n=5632, k=2048, tr=True, epilogue="swiglu"))]
    # GPT-2 small's four layer GEMMs at 4 x 1024 tokens (K = 768 or 3072),
    # each with its epilogue; cuBLAS runs the bare matmul.
    speed += [("gpt2 qkv+bias", dict(m=4096, n=2304, k=768, tr=True, epilogue="bias")),
              ("gpt2 o+res", dict(m=4096, n=768, k=768, tr=True, epilogue="residual")),
              ("gpt2 fc1+gelu", dict(m=4096, n=3072, k=768, tr=True, epilogue="bias_gelu")),
              ("gpt2 fc2+res", dict(m=4096, n=768, k=3072, tr=True, epilogue="residual"))]
    # MATMUL_AB=1: each fusec figure beside the same kernel with the
    # TMA-store epilogue switched off (FUSEC_TMA_STORE=0), interleaved.
    ab = os.environ.get("MATMUL_AB", "0") == "1"
    # MATMUL_VARIANTS="name:VAR=v,VAR2=w;name2:..." also times fusec under
    # each environment, interleaved (e.g. the ping-pong schedule forced on
    # and off: "pp0:FUSEC_WGMMA_PINGPONG=0;pp1:FUSEC_WGMMA_PINGPONG=1").
    variants = []
    for spec in filter(None, os.environ.get("MATMUL_VARIANTS", "").split(";")):
        name, _, assigns = spec.partition(":")
        variants.append((name, dict(a.split("=", 1) for a in assigns.split(",") if "=" in a)))
    if QUICK:
        speed = speed[:3]
    if os.environ.get("MATMUL_SHAPES"):
        # A JSON list of [label, case] pairs replaces the default set, e.g.
        # '[["lm_head", {"m": 4096, "n": 50257, "k": 768, "tr": true, "dt": "f16"}]]'.
        speed = [(label, c) for label, c in json.loads(os.environ["MATMUL_SHAPES"])]
    for label, c in speed:
        m, n, k = c["m"], c["n"], c["k"]
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) if c.get("tr") else \
            torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        w2 = torch.randn_like(w) if c.get("epilogue") == "swiglu" else None
        if c.get("epilogue") == "swiglu":
            # cuBLAS does the two GEMMs; the silu-mul is not counted for it.
            fn = lambda: (torch.matmul(a, w.t()), torch.matmul(a, w2.t()))
        elif c.get("tr"):
            fn = lambda: torch.matmul(a, w.t())
        else:
            fn = lambda: torch.matmul(a, w)
        path = os.path.join(tmp, f"speed_{label.replace('/', '_')}_{m}x{n}x{k}.mlir")
        open(path, "w").write(mlir(**c))
        dual = 2 if c.get("epilogue") == "swiglu" else 1
        row = dict(label=label, case=c, flops=2.0 * m * n * k * dual,
                   weight_bytes=2.0 * n * k * dual)
        cublas, fusec, fusec_off = [], [], []
        by_variant = {name: [] for name, _ in variants}
        for _ in range(2):  # interleaved
            cublas.append(median_ms(fn))
            for name, venv in variants:
                rc, r, err = fusec_run(path, "--no-check", "--runs=50", "--warmup=10", env=venv)
                if rc == 0 and r:
                    by_variant[name].append(sum(kk["median_ms"] for kk in r["kernels"]))
                    row.setdefault("variant_predicted_ms", {})[name] = sum(
                        kk.get("predicted_ms") or 0 for kk in r["kernels"])
            if ab:
                rc, r, err = fusec_run(path, "--no-check", "--runs=50", "--warmup=10",
                                       env={"FUSEC_TMA_STORE": "0"})
                if rc == 0 and r:
                    fusec_off.append(sum(kk["median_ms"] for kk in r["kernels"]))
            rc, r, err = fusec_run(path, "--no-check", "--runs=50", "--warmup=10")
            if rc == 0 and r:
                fusec.append(sum(kk["median_ms"] for kk in r["kernels"]))
                row["strategy"] = r["kernels"][0].get("strategy")
                row["predicted_ms"] = sum(kk.get("predicted_ms") or 0 for kk in r["kernels"])
                row["kernels"] = len(r["kernels"])
            else:
                row["error"] = err[-600:]
        row["cublas_ms"] = min(cublas)
        row["fusec_ms"] = min(fusec) if fusec else None
        if ab:
            row["fusec_no_tma_store_ms"] = min(fusec_off) if fusec_off else None
        if variants:
            row["variants_ms"] = {name: (min(v) if v else None) for name, v in by_variant.items()}
        if c.get("epilogue") in ("bias_gelu", "bias_gelu_onnx"):
            wt = w.t() if c.get("tr") else w
            eager = lambda: torch.nn.functional.gelu(torch.matmul(a, wt) + bias)
            compiled = torch.compile(eager)
            row["eager_ms"] = median_ms(eager)
            row["inductor_ms"] = median_ms(compiled)
        if c.get("epilogue") == "swiglu":
            eager = lambda: torch.nn.functional.silu(torch.matmul(a, w.t())) * torch.matmul(a, w2.t())
            compiled = torch.compile(eager)
            row["eager_ms"] = median_ms(eager)
            row["inductor_ms"] = median_ms(compiled)
        results["speed"].append(row)
        print(f"speed {label} {m}x{n}x{k}: cublas {row['cublas_ms']:.3f} ms, fusec "
              f"{row['fusec_ms'] if row['fusec_ms'] else 'n/a'}", flush=True)
        del a, w, w2
        torch.cuda.empty_cache()
    results["clocks_after"] = clocks()
    json.dump(results, open(os.path.join(OUT, "matmul.json"), "w"), indent=2)

    print()
    print(f"correctness: {sum(r['ok'] for r in results['correctness'])}/"
          f"{len(results['correctness'])} small, {sum(r['ok'] for r in results['large'])}/"
          f"{len(results['large'])} large")
    print(f"clocks (sm, mem, power, temp): before {results['clocks_before']}; "
          f"after {results['clocks_after']}")
    print(f"{'shape':>28} {'strategy':>14} {'cuBLAS TF/s':>12} {'fusec TF/s':>11} "
          f"{'vs cuBLAS':>9} {'weights TB/s':>12} {'meas/pred':>9}"
          + (f" {'no TMA store TF/s':>17}" if ab else ""))
    for row in results["speed"]:
        c = row["case"]
        shape = f"{row['label']} {c['m']}x{c['n']}x{c['k']}"
        cub = row["flops"] / row["cublas_ms"] / 1e9
        fus = row["flops"] / row["fusec_ms"] / 1e9 if row["fusec_ms"] else float("nan")
        wtb = row["weight_bytes"] / row["fusec_ms"] / 1e9 if row["fusec_ms"] else float("nan")
        mp = row["fusec_ms"] / row["predicted_ms"] if row.get("predicted_ms") else float("nan")
        off = row.get("fusec_no_tma_store_ms")
        print(f"{shape:>28} {row.get('strategy', '?'):>14} {cub:12.1f} {fus:11.1f} "
              f"{fus / cub:9.3f} {wtb:12.3f} {mp:9.2f}"
              + (f" {row['flops'] / off / 1e9 if off else float('nan'):17.1f}" if ab else ""))
        if variants:
            print(f"{'':>22} variants ms: " + ", ".join(
                f"{name} {v:.4f}" if v else f"{name} n/a"
                for name, v in row.get("variants_ms", {}).items()) +
                f" (default {row['fusec_ms'] or float('nan'):.4f})")
        if "inductor_ms" in row:
            what = "silu(xWg)*(xWu)" if c.get("epilogue") == "swiglu" else "gelu(xW+b)"
            print(f"{'':>22} {what}: fusec {row['fusec_ms']:.3f} ms, eager "
                  f"{row['eager_ms']:.3f}, inductor {row['inductor_ms']:.3f}, cuBLAS matmul(s) "
                  f"alone {row['cublas_ms']:.3f}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
