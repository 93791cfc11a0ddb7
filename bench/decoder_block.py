#!/usr/bin/env python3
"""A Llama-style decoder block end to end on the GPU: fusec (every kernel of
the Executable: generated matmuls with their epilogues, norms, the attention
intrinsic) against the same block in eager PyTorch and torch.compile, bf16,
in one run.

  x -> RMSNorm -> x Wqkv -> heads -> causal attention -> x Wo + x
    -> RMSNorm -> silu(x Wgate) * (x Wup) -> x Wdown + h

The fusec graph is examples/transformer_block.mlir scaled up
(`block_mlir`). fusec's time is the sum of its kernels' median times
(fusec-run --json, CUDA events); torch's the median of whole-block calls.
Writes $OUT/decoder_block.json and prints a table last.
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


def block_mlir(t, w, h, f):
    d = w // h
    bf = "bf16"
    x = f"tensor<{t}x{w}x{bf}>"
    v = f"tensor<{w}x{bf}>"
    heads = f"tensor<1x{t}x{h}x{d}x{bf}>"
    bhsd = f"tensor<1x{h}x{t}x{d}x{bf}>"
    mlp = f"tensor<{t}x{f}x{bf}>"
    return f"""func.func @transformer_block(
    %x: {x}, %attn_norm: {v},
    %wqkv: tensor<{w}x{3 * w}x{bf}>, %wo: tensor<{w}x{w}x{bf}>,
    %mlp_norm: {v}, %wgate: tensor<{w}x{f}x{bf}>,
    %wup: tensor<{w}x{f}x{bf}>, %wdown: tensor<{f}x{w}x{bf}>) -> {x} {{
  %hn = fusec.rms_norm %x, %attn_norm {{epsilon = 1.0e-6 : f64}} : ({x}, {v}) -> {x}
  %qkv = fusec.matmul %hn, %wqkv : ({x}, tensor<{w}x{3 * w}x{bf}>) -> tensor<{t}x{3 * w}x{bf}>
  %q2 = fusec.slice %qkv offsets [0, 0] strides [1, 1] : tensor<{t}x{3 * w}x{bf}> -> {x}
  %k2 = fusec.slice %qkv offsets [0, {w}] strides [1, 1] : tensor<{t}x{3 * w}x{bf}> -> {x}
  %v2 = fusec.slice %qkv offsets [0, {2 * w}] strides [1, 1] : tensor<{t}x{3 * w}x{bf}> -> {x}
  %q3 = fusec.reshape %q2 : {x} -> {heads}
  %k3 = fusec.reshape %k2 : {x} -> {heads}
  %v3 = fusec.reshape %v2 : {x} -> {heads}
  %q = fusec.transpose %q3 perm [0, 2, 1, 3] : {heads} -> {bhsd}
  %k = fusec.transpose %k3 perm [0, 2, 1, 3] : {heads} -> {bhsd}
  %vv = fusec.transpose %v3 perm [0, 2, 1, 3] : {heads} -> {bhsd}
  %o = fusec.attention %q, %k, %vv {{scale = {1.0 / d ** 0.5:.10e} : f64, causal}} : ({bhsd}, {bhsd}, {bhsd}) -> {bhsd}
  %o3 = fusec.transpose %o perm [0, 2, 1, 3] : {bhsd} -> {heads}
  %o2 = fusec.reshape %o3 : {heads} -> {x}
  %proj = fusec.matmul %o2, %wo : ({x}, tensor<{w}x{w}x{bf}>) -> {x}
  %r1 = fusec.add %x, %proj : {x}
  %m = fusec.rms_norm %r1, %mlp_norm {{epsilon = 1.0e-6 : f64}} : ({x}, {v}) -> {x}
  %gate = fusec.matmul %m, %wgate : ({x}, tensor<{w}x{f}x{bf}>) -> {mlp}
  %up = fusec.matmul %m, %wup : ({x}, tensor<{w}x{f}x{bf}>) -> {mlp}
  %act = fusec.silu %gate : {mlp}
  %glu = fusec.mul %act, %up : {mlp}
  %down = fusec.matmul %glu, %wdown : ({mlp}, tensor<{f}x{w}x{bf}>) -> {x}
  %out = fusec.add %r1, %down : {x}
  return %out : {x}
}}
"""


def main():
    os.makedirs(OUT, exist_ok=True)
    import torch
    import torch.nn.functional as F
    results = {"blocks": []}
    configs = [dict(t=4096, w=2048, h=16, f=5632)]
    tmp = tempfile.mkdtemp()

    for c in configs:
        t, w, h, f = c["t"], c["w"], c["h"], c["f"]
        d = w // h
        dev, bf = "cuda", torch.bfloat16
        x = torch.randn(t, w, device=dev, dtype=bf)
        an, mn = torch.randn(w, device=dev, dtype=bf), torch.randn(w, device=dev, dtype=bf)
        wqkv = torch.randn(w, 3 * w, device=dev, dtype=bf) * w ** -0.5
        wo = torch.randn(w, w, device=dev, dtype=bf) * w ** -0.5
        wg = torch.randn(w, f, device=dev, dtype=bf) * w ** -0.5
        wu = torch.randn(w, f, device=dev, dtype=bf) * w ** -0.5
        wd = torch.randn(f, w, device=dev, dtype=bf) * f ** -0.5

        def rms(v, g):
            vf = v.float()
            return (vf * torch.rsqrt(vf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(bf) * g

        def block(x):
            qkv = rms(x, an) @ wqkv
            q, k, v = qkv.split(w, dim=-1)
            q, k, v = (z.view(1, t, h, d).transpose(1, 2) for z in (q, k, v))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            r1 = x + o.transpose(1, 2).reshape(t, w) @ wo
            m = rms(r1, mn)
            return r1 + (F.silu(m @ wg) * (m @ wu)) @ wd

        eager = median_ms(lambda: block(x))
        compiled = torch.compile(block)
        inductor = median_ms(lambda: compiled(x))
        matmuls = median_ms(lambda: (x @ wqkv, x @ wo, x @ wg, x @ wu,
                                     torch.empty(t, f, device=dev, dtype=bf) @ wd))
        path = os.path.join(tmp, "block.mlir")
        open(path, "w").write(block_mlir(t, w, h, f))
        p = subprocess.run([f"{BIN}/fusec-run", path, "--json", "--no-check", "--runs=20",
                            "--warmup=5"], capture_output=True, text=True, timeout=300)
        row = dict(config=c, eager_ms=eager, inductor_ms=inductor, cublas_matmuls_ms=matmuls)
        try:
            r = json.loads(p.stdout)
            row["fusec_ms"] = sum(k["median_ms"] for k in r["kernels"])
            row["kernels"] = [{"name": k["name"], "strategy": k.get("strategy"),
                               "ms": k["median_ms"], "predicted_ms": k.get("predicted_ms")}
                              for k in r["kernels"]]
        except (json.JSONDecodeError, KeyError):
            row["error"] = (p.stdout + p.stderr)[-1500:]
        results["blocks"].append(row)
        del x, wqkv, wo, wg, wu, wd
        torch.cuda.empty_cache()
    json.dump(results, open(os.path.join(OUT, "decoder_block.json"), "w"), indent=2)
    for row in results["blocks"]:
        c = row["config"]
        print(f"\ndecoder block {c['t']} tokens x width {c['w']}, {c['h']} heads, MLP {c['f']} (bf16):")
        if "error" in row:
            print("  fusec: ERROR\n" + row["error"])
            continue
        print(f"  fusec {row['fusec_ms']:.3f} ms in {len(row['kernels'])} kernels; eager "
              f"{row['eager_ms']:.3f} ms; torch.compile {row['inductor_ms']:.3f} ms; "
              f"cuBLAS's five matmuls {row['cublas_matmuls_ms']:.3f} ms; "
              f"vs torch.compile {row['inductor_ms'] / row['fusec_ms']:.2f}x")
        for k in row["kernels"]:
            mp = k["ms"] / k["predicted_ms"] if k.get("predicted_ms") else float("nan")
            print(f"    {k['name']:28s} {k['strategy'] or '-':14s} {k['ms']:8.3f} ms  meas/pred {mp:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
