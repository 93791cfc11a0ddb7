#!/usr/bin/env python3
"""The attention intrinsic against torch SDPA on the GPU (issue #8).

Loads libfusec_attention.so (runtime_kernels/, C entry point
fusec_attention_forward) beside torch, so both run on the same tensors in
the same process:

1. correctness: many shapes (ragged lengths, causal edges, GQA, every head
   dim, bf16 and f16, every FA4 flag) against a float32 reference computed
   by torch on the GPU; the error must stay within twice SDPA's own error
   against the same reference (or 1e-2 / 2e-3 absolute for bf16 / f16);
2. speed: the shapes of ../shared/BENCHMARKS.md, bf16, TFLOP/s =
   4·B·H·S²·D (halved when causal) / median time, for each flag set of the
   intrinsic and for SDPA with its cuDNN and flash backends.

  FUSEC_ATTENTION_LIB=build/lib/libfusec_attention.so python3 bench/attention.py --json out.json
"""
import argparse
import ctypes
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

COND, POLY, PINGPONG, PIPELINE, TILED_ONLY = 1, 2, 4, 8, 16
FLAG_SETS = {
    "base": 0,
    "cond": COND,
    "poly": POLY,
    "pingpong": PINGPONG,
    "pipeline": PIPELINE,
    "pp+pipe": PINGPONG | PIPELINE,
    "pp+pipe+cond": PINGPONG | PIPELINE | COND,
    "all": COND | POLY | PINGPONG | PIPELINE,
}


def load():
    path = os.environ.get("FUSEC_ATTENTION_LIB", "build/lib/libfusec_attention.so")
    lib = ctypes.CDLL(path)
    lib.fusec_attention_forward.restype = ctypes.c_int
    lib.fusec_attention_forward.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [
        ctypes.c_float, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.fusec_attention_forward_masked.restype = ctypes.c_int
    lib.fusec_attention_forward_masked.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [
        ctypes.c_float, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
        ctypes.c_void_p]
    lib.fusec_attention_last_error.restype = ctypes.c_char_p
    lib.fusec_attention_forward_strided.restype = ctypes.c_int
    lib.fusec_attention_forward_strided.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 6 + [
        ctypes.c_float, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
        ctypes.c_void_p, ctypes.c_void_p]
    return lib


def fusec_attention_views(lib, q, k, v, out, causal, scale, flags):
    """The intrinsic on [B, H, S, D] views of any strides with a contiguous
    head dim (q.transpose(1, 2) of a [B, S, H, D] tensor), O written into the
    view `out` in place (fusec_attention_forward_strided)."""
    b, hq, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    strides = (ctypes.c_longlong * 12)(*[x for t in (q, k, v, out) for x in t.stride()[:3]])
    lse = torch.empty((b, hq, sq), device=q.device, dtype=torch.float32)
    rc = lib.fusec_attention_forward_strided(
        q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(), b, hq, hkv, sq,
        skv, d, scale, int(causal), 1 if q.dtype == torch.float16 else 0, flags, None, strides,
        torch.cuda.current_stream().cuda_stream)
    if rc != 0:
        raise RuntimeError(lib.fusec_attention_last_error().decode())
    return out


def fusec_attention(lib, q, k, v, causal, scale, flags, out=None, lse=None, key_mask=None):
    """key_mask: None, or [B, Skv] uint8 (nonzero: the key is visible)."""
    b, hq, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    if out is None:
        out = torch.empty_like(q)
    if lse is None:
        lse = torch.empty((b, hq, sq), device=q.device, dtype=torch.float32)
    args = (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(),
            b, hq, hkv, sq, skv, d, scale, int(causal), 1 if q.dtype == torch.float16 else 0,
            flags)
    stream = torch.cuda.current_stream().cuda_stream
    if key_mask is None:
        rc = lib.fusec_attention_forward(*args, stream)
    else:
        rc = lib.fusec_attention_forward_masked(*args, key_mask.data_ptr(), stream)
    if rc != 0:
        raise RuntimeError(lib.fusec_attention_last_error().decode())
    return out, lse


def reference(q, k, v, causal, scale):
    """float32 softmax(QKᵀ·scale)V and logsumexp; rows that see no key give 0
    and -inf."""
    hq, hkv = q.shape[1], k.shape[1]
    kf = k.float().repeat_interleave(hq // hkv, dim=1)
    vf = v.float().repeat_interleave(hq // hkv, dim=1)
    s = torch.matmul(q.float(), kf.transpose(-1, -2)) * scale
    sq, skv = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(skv, device=q.device)[None, :]
        s = s.masked_fill(j > i + (skv - sq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None])
    p = torch.nan_to_num(p, nan=0.0)
    return torch.matmul(p, vf), lse


def sdpa(q, k, v, causal, scale, backend):
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


def correctness(lib):
    cases = []
    for d in (64, 128, 256):
        for causal in (False, True):
            for dt in (torch.bfloat16, torch.float16):
                cases += [(2, 4, 4, 512, 512, d, causal, dt), (1, 8, 2, 333, 333, d, causal, dt),
                          (1, 2, 1, 129, 1000, d, causal, dt), (3, 2, 2, 1, 77, d, causal, dt),
                          (1, 2, 2, 1031, 1031, d, causal, dt)]
        cases += [(1, 4, 1, 700, 300, d, True, torch.bfloat16),  # rows that see nothing
                  (1, 2, 2, 4096, 4096, d, True, torch.bfloat16)]
    results, failures = [], 0
    for (b, hq, hkv, sq, skv, d, causal, dt) in cases:
        torch.manual_seed(len(results))
        q = torch.randn(b, hq, sq, d, device="cuda", dtype=dt)
        k = torch.randn(b, hkv, skv, d, device="cuda", dtype=dt)
        v = torch.randn(b, hkv, skv, d, device="cuda", dtype=dt)
        scale = 1.0 / math.sqrt(d)
        ref, ref_lse = reference(q, k, v, causal, scale)
        bound = 1e-2 if dt == torch.bfloat16 else 2e-3
        if not (causal and sq > skv):
            base = (sdpa(q, k, v, causal, scale, [SDPBackend.MATH]).float() - ref).abs().max().item()
            bound = max(bound, 2 * base)
        for name, flags in FLAG_SETS.items():
            out, lse = fusec_attention(lib, q, k, v, causal, scale, flags)
            torch.cuda.synchronize()
            err = (out.float() - ref).abs().max().item()
            finite = torch.isfinite(ref_lse)
            lse_err = (lse[finite] - ref_lse[finite]).abs().max().item() if finite.any() else 0.0
            lse_ok = bool((lse[~finite] == float("-inf")).all())
            ok = err <= bound and lse_err <= 1e-3 and lse_ok and math.isfinite(err)
            failures += not ok
            results.append(dict(b=b, hq=hq, hkv=hkv, sq=sq, skv=skv, d=d, causal=causal,
                                dtype=str(dt).split(".")[-1], flags=name, max_err=err,
                                bound=bound, lse_err=lse_err, ok=ok))
            if not ok:
                print(f"FAIL {results[-1]}", flush=True)
    print(f"correctness: {len(results) - failures} of {len(results)} passed", flush=True)
    return results, failures


def timeit(fn, iters=20, warmup=5, reps=1):
    """Median ms of one call over `iters` samples; each sample times `reps`
    calls back to back, which hides the host's launch cost of short kernels."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / reps)
    times.sort()
    return times[len(times) // 2]


def parse_schedules(text):
    """'name:VAR=v+VAR=v,name:...' -> {name: {VAR: v}}: the tiled kernel's
    grid and tile order (FUSEC_ATTENTION_PERSISTENT, _HEAD_GROUP),
    which the library reads from the environment at every call, so each is
    timed in this process on the same tensors."""
    out = {}
    for item in text.split(","):
        name, _, assigns = item.partition(":")
        out[name] = dict(a.split("=", 1) for a in assigns.split("+") if a)
    return out


SCHEDULE_VARS = ("FUSEC_ATTENTION_PERSISTENT", "FUSEC_ATTENTION_HEAD_GROUP")


def set_schedule(env):
    for var in SCHEDULE_VARS:
        os.environ.pop(var, None)
    os.environ.update(env)


def speed(lib, flag_sets, shapes=None, key_masks=False, schedules=None):
    """TFLOP/s of each flag set (and schedule: a key `fusec[flags@schedule]`
    when there are several) and of SDPA, for each shape causal and not."""
    shapes = shapes or [(4, 32, 4096, 128), (2, 32, 8192, 128), (16, 32, 1024, 128),
                        (4, 32, 4096, 64), (8, 16, 4096, 256)]
    schedules = schedules or {"": {}}
    rows = []
    for (b, h, s, d) in shapes:
        for causal in (False, True):
            q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn_like(q)
            v = torch.randn_like(q)
            scale = 1.0 / math.sqrt(d)
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            row = dict(b=b, h=h, s=s, d=d, causal=causal)
            out = torch.empty_like(q)
            lse = torch.empty((b, h, s), device="cuda", dtype=torch.float32)
            for sched, env in schedules.items():
                set_schedule(env)
                at = f"@{sched}" if sched else ""
                for name, flags in flag_sets.items():
                    ms = timeit(lambda: fusec_attention(lib, q, k, v, causal, scale, flags, out,
                                                        lse), reps=10)
                    row[f"fusec[{name}{at}]"] = flops / ms / 1e9
                if key_masks:
                    # The runtime's flag set with transformers' attention_mask:
                    # all ones (every key visible), and padding (each
                    # sequence's last tenth hidden). FLOPs counted as without
                    # the mask.
                    ones = torch.ones(b, s, device="cuda", dtype=torch.uint8)
                    pad = ones.clone()
                    pad[:, s - s // 10:] = 0
                    for name, mask in (("mask=ones", ones), ("mask=pad", pad)):
                        ms = timeit(lambda: fusec_attention(lib, q, k, v, causal, scale,
                                                            PINGPONG | PIPELINE, out, lse, mask),
                                    reps=10)
                        row[f"masked[{name}{at}]"] = flops / ms / 1e9
            set_schedule({})
            for name, backend in (("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION),
                                  ("sdpa_flash", SDPBackend.FLASH_ATTENTION)):
                try:
                    ms = timeit(lambda: sdpa(q, k, v, causal, scale, [backend]), reps=10)
                    row[name] = flops / ms / 1e9
                except Exception as e:  # a backend that refuses the shape
                    row[name] = None
                    print(f"{name} unavailable for {row}: {e}", flush=True)
            best = max((key for key in row if key.startswith("fusec[")), key=lambda key: row[key])
            row["fusec_best"] = best
            rows.append(row)
            print(json.dumps(row), flush=True)
            del q, k, v, out, lse
            torch.cuda.empty_cache()
    return rows


def speed_layouts(lib, shapes):
    """Q, K, V and O as [B, S, H, D] (what a model's projections write), for
    each shape causal and not, bf16: the intrinsic reading and writing that
    layout in place (strided) against the same problem contiguous
    [B, H, S, D], against what a contiguous-only kernel needs (three
    transposes in, one out), and against SDPA on the same [B, S, H, D]
    views. The strided O must equal the contiguous one bit for bit."""
    rows = []
    flags = PINGPONG | PIPELINE
    for (b, h, s, d) in shapes:
        for causal in (False, True):
            qs, ks, vs = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                          for _ in range(3))
            q, k, v = (x.transpose(1, 2) for x in (qs, ks, vs))  # [B, H, S, D] views
            qc, kc, vc = (x.contiguous() for x in (q, k, v))
            scale = 1.0 / math.sqrt(d)
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            flags_d = 0 if d == 256 else flags
            os_ = torch.empty(b, s, h, d, device="cuda", dtype=torch.bfloat16)
            o = os_.transpose(1, 2)
            fusec_attention_views(lib, q, k, v, o, causal, scale, flags_d)
            ref, _ = fusec_attention(lib, qc, kc, vc, causal, scale, flags_d)
            exact = bool(torch.equal(o, ref))
            row = dict(b=b, h=h, s=s, d=d, causal=causal, strided_equals_contiguous=exact)
            row["strided_us"] = 1e3 * timeit(
                lambda: fusec_attention_views(lib, q, k, v, o, causal, scale, flags_d), reps=10)
            out_c = torch.empty_like(qc)
            lse = torch.empty((b, h, s), device="cuda", dtype=torch.float32)
            row["contiguous_us"] = 1e3 * timeit(
                lambda: fusec_attention(lib, qc, kc, vc, causal, scale, flags_d, out_c, lse),
                reps=10)

            def transposed():
                a, bb, c = q.contiguous(), k.contiguous(), v.contiguous()
                r, _ = fusec_attention(lib, a, bb, c, causal, scale, flags_d, out_c, lse)
                os_.copy_(r.transpose(1, 2))
            row["transposes_us"] = 1e3 * timeit(transposed, reps=10)
            for name, backend in (("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION),
                                  ("sdpa_flash", SDPBackend.FLASH_ATTENTION)):
                try:
                    row[f"{name}_us"] = 1e3 * timeit(
                        lambda: sdpa(q, k, v, causal, scale, [backend]), reps=10)
                except Exception as e:
                    row[f"{name}_us"] = None
                    print(f"{name} unavailable for {row}: {e}", flush=True)
            row["tflops_strided"] = flops / row["strided_us"] / 1e6
            rows.append(row)
            print(json.dumps(row), flush=True)
            del qs, ks, vs, qc, kc, vc, os_, out_c
            torch.cuda.empty_cache()
    return rows


def graph_ms(fn, calls=20):
    """Median ms of one call, replaying `calls` calls captured in a CUDA
    graph: the GPU's time without the host's launch cost (which is what
    decode-sized kernels would otherwise measure)."""
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return timeit(g.replay, iters=10, warmup=2) / calls


DECODE_SHAPES = [
    # B x Hq x Hkv x Sq x Skv x D. K and V of most are larger than the H200's
    # 50 MB L2, so replaying a graph of calls reads them from HBM.
    (1, 32, 8, 1, 131072, 128),   # one long sequence (Llama-3 8B heads)
    (32, 32, 8, 1, 4096, 128),    # a batch of 4k contexts
    (16, 64, 8, 1, 2048, 128),    # 70B-style heads, GQA 8
    (64, 32, 32, 1, 1024, 128),   # MHA
    (4, 32, 8, 16, 8192, 128),    # 16 rows a sequence (speculative decode)
    (8, 32, 8, 4, 16384, 128),
    (32, 12, 12, 1, 2048, 64),    # GPT-2 heads
    (8, 16, 8, 4, 4096, 256),
    (32, 32, 8, 1, 1024, 128),    # 32 MB of K/V: within L2
    (1, 32, 8, 1, 1024, 128),     # 8 MB: launch-bound
]


def speed_decode(lib, shapes):
    """Few query rows (decode) against many keys, f16, not causal, each
    under CUDA graph replay: the runtime's choice (the decode kernel where
    Sq <= 4 and Skv <= 64, else the split-KV kernel where Sq <= 16), the
    tiled kernel alone (TILED_ONLY), and SDPA: each backend (flash,
    efficient, cuDNN) with enable_gqa and with K/V expanded to the query
    heads outside the timed call, the fastest that runs. K/V bandwidth is
    their bytes over the time, beside a copy of the same bytes (read and
    written) timed the same way."""
    rows = []
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    for (b, hq, hkv, sq, skv, d) in shapes:
        q = torch.randn(b, hq, sq, d, device="cuda", dtype=torch.float16)
        k = torch.randn(b, hkv, skv, d, device="cuda", dtype=torch.float16)
        v = torch.randn_like(k)
        scale = 1.0 / math.sqrt(d)
        out = torch.empty_like(q)
        lse = torch.empty((b, hq, sq), device="cuda", dtype=torch.float32)
        row = dict(b=b, hq=hq, hkv=hkv, sq=sq, skv=skv, d=d)
        kv_bytes = 2 * k.numel() * 2
        row["kv_mb"] = kv_bytes / 1e6
        # Correctness of the runtime's choice against float32 on these inputs.
        fusec_attention(lib, q, k, v, False, scale, PINGPONG | PIPELINE, out, lse)
        ref, _ = reference(q[:1].float(), k[:1].float(), v[:1].float(), False, scale)
        row["max_err_batch0"] = (out[:1].float() - ref).abs().max().item()
        for name, flags in (("fusec", PINGPONG | PIPELINE),
                            ("fusec_tiled", PINGPONG | PIPELINE | TILED_ONLY)):
            ms = graph_ms(lambda: fusec_attention(lib, q, k, v, False, scale, flags, out, lse))
            row[f"{name}_us"] = ms * 1e3
        ks = vs = None
        if hq != hkv:
            ks, vs = k.repeat_interleave(hq // hkv, dim=1), v.repeat_interleave(hq // hkv, dim=1)
        best = None
        for bname, backend in backends:
            for gqa in ((True, False) if hq != hkv else (False,)):
                kk, vv = (k, v) if gqa or hq == hkv else (ks, vs)
                key = f"sdpa_{bname}{'_gqa' if gqa else ''}_us"
                try:
                    with sdpa_kernel(backend):
                        fn = (lambda: F.scaled_dot_product_attention(q, kk, vv, scale=scale,
                                                                     enable_gqa=True)) if gqa \
                            else (lambda: F.scaled_dot_product_attention(q, kk, vv, scale=scale))
                        ms = graph_ms(fn)
                except Exception as e:  # noqa: BLE001 -- a backend that refuses the shape
                    row[key] = None
                    row[key.replace("_us", "_error")] = str(e).splitlines()[0][:120]
                    continue
                row[key] = ms * 1e3
                if best is None or ms * 1e3 < row[best]:
                    best = key
        row["sdpa_best"] = best
        row["sdpa_us"] = row[best] if best else None
        del ks, vs
        src = torch.empty(kv_bytes // 2, device="cuda", dtype=torch.float16)
        dst = torch.empty_like(src)
        row["copy_us"] = graph_ms(lambda: dst.copy_(src)) * 1e3
        row["copy_tb_s"] = 2 * kv_bytes / (row["copy_us"] * 1e-6) / 1e12
        del src, dst
        row["fusec_kv_tb_s"] = kv_bytes / (row["fusec_us"] * 1e-6) / 1e12
        row["of_copy"] = row["fusec_kv_tb_s"] / row["copy_tb_s"]
        row["vs_sdpa"] = row["sdpa_us"] / row["fusec_us"] if row["sdpa_us"] else None
        rows.append(row)
        print(json.dumps(row), flush=True)
        del q, k, v, out, lse
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-correctness", action="store_true")
    ap.add_argument("--shapes", help="speed shapes instead of the default set: BxHxSxD,...")
    ap.add_argument("--flags", help="speed: only these flag sets (names, comma-separated)")
    ap.add_argument("--decode", help="decode speed instead: 'default' (DECODE_SHAPES) or "
                    "BxHqxHkvxSqxSkvxD,...")
    ap.add_argument("--key-masks", action="store_true",
                    help="speed: also time the runtime's flag set with a key padding mask")
    ap.add_argument("--schedules",
                    help="speed: time each flag set under each of these tiled-grid settings, "
                    "'name:VAR=v+VAR=v,...' (e.g. 'tiles:FUSEC_ATTENTION_PERSISTENT=0,"
                    "persistent:FUSEC_ATTENTION_PERSISTENT=1')")
    ap.add_argument("--layouts", help="layout speed instead: 'default' or BxHxSxD,... "
                    "(Q, K, V and O as [B, S, H, D], in place against transposes and SDPA)")
    args = ap.parse_args()
    lib = load()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    failures = 0
    if not args.no_correctness:
        result["correctness"], failures = correctness(lib)
    if args.layouts:
        shapes = [(4, 32, 4096, 128), (16, 32, 1024, 128), (4, 32, 4096, 64), (8, 16, 4096, 256),
                  (32, 12, 1024, 64)] if args.layouts == "default" else \
            [tuple(int(x) for x in sh.split("x")) for sh in args.layouts.split(",")]
        result["layouts"] = speed_layouts(lib, shapes)
        failures += sum(not r["strided_equals_contiguous"] for r in result["layouts"])
        print()
        print("[B, S, H, D], bf16, us  | in place | contiguous | transposes+contig | cuDNN | "
              "flash | in place/contig | vs cuDNN | exact")
        f = lambda x: f"{x:.1f}" if x else "-"
        for r in result["layouts"]:
            cu = r["sdpa_cudnn_us"]
            print(f"{r['b']}x{r['h']}x{r['s']}x{r['d']} {'causal' if r['causal'] else 'full  '} | "
                  f"{f(r['strided_us'])} | {f(r['contiguous_us'])} | {f(r['transposes_us'])} | "
                  f"{f(cu)} | {f(r['sdpa_flash_us'])} | "
                  f"{r['contiguous_us'] / r['strided_us']:.3f} | "
                  + (f"{cu / r['strided_us']:.2f}x" if cu else "-")
                  + f" | {r['strided_equals_contiguous']}")
    elif args.decode:
        shapes = DECODE_SHAPES if args.decode == "default" else \
            [tuple(int(x) for x in sh.split("x")) for sh in args.decode.split(",")]
        result["decode"] = speed_decode(lib, shapes)
        print()
        print("decode, f16, us a call      | K/V MB | fusec | tiled only | SDPA best (which)"
              " | vs SDPA | K/V TB/s | copy TB/s | of copy")
        for r in result["decode"]:
            sd = f"{r['sdpa_us']:.1f} ({r['sdpa_best'][5:-3]})" if r["sdpa_us"] else "-"
            vs = f"{r['vs_sdpa']:.2f}x" if r["vs_sdpa"] else "-"
            print(f"{r['b']}x{r['hq']}x{r['hkv']}x{r['sq']}x{r['skv']}x{r['d']:<9} | "
                  f"{r['kv_mb']:.0f} | {r['fusec_us']:.1f} | {r['fusec_tiled_us']:.1f} | {sd} | "
                  f"{vs} | {r['fusec_kv_tb_s']:.2f} | {r['copy_tb_s']:.2f} | {r['of_copy']:.2f}")
    elif not args.no_speed:
        shapes = [tuple(int(x) for x in sh.split("x")) for sh in args.shapes.split(",")] \
            if args.shapes else None
        flag_sets = {n: FLAG_SETS[n] for n in args.flags.split(",")} if args.flags else FLAG_SETS
        schedules = parse_schedules(args.schedules) if args.schedules else None
        result["speed"] = speed(lib, flag_sets, shapes, args.key_masks, schedules)
        print()
        fmt = lambda x: f"{x:.0f}" if x else "-"
        ats = [f"@{s}" for s in schedules] if schedules else [""]
        cols = [f"{n}{at}" for at in ats for n in flag_sets]
        masks = [f"mask=ones{at}" for at in ats] if args.key_masks else []
        print("TFLOP/s, bf16          | " + " | ".join(cols + masks)
              + " | cuDNN | flash | best/cuDNN")
        for r in result["speed"]:
            cu, best = r["sdpa_cudnn"], r[r["fusec_best"]]
            print(f"{r['b']}x{r['h']}x{r['s']}x{r['d']} {'causal' if r['causal'] else 'full  '} | "
                  + " | ".join(fmt(r[f"fusec[{n}]"]) for n in cols)
                  + "".join(f" | {fmt(r[f'masked[{n}]'])}" for n in masks)
                  + f" | {fmt(cu)} | {fmt(r['sdpa_flash'])} | "
                  + (f"{best / cu:.2f}x" if cu else "-"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
