#!/usr/bin/env python3
"""Convolutional networks on the GPU (issue #18): fusec against cuDNN (per
layer) and against eager PyTorch and torch.compile (end to end), one run.

1. Per layer: the main convolution shapes of ResNet-50 at batch 32 (fp16,
   224x224), each a one-op fusec graph (`fusec.conv`) run by
   `fusec-run --no-check --json` (every kernel it becomes timed: the
   input's channels-last transpose, the filter's relayout and the wgmma
   matmul, which stores NCHW), and
   `torch.nn.functional.conv2d` on the same shape (cuDNN with
   `cudnn.benchmark` on; channels-last and NCHW, the faster counted).
   TFLOP/s = 2·N·K·P·C·taps / time. Each layer also as a network runs it
   (`fusec_nhwc_*`): channels-last activations and a constant filter,
   against cuDNN channels last.
2. End to end: ResNet-50 and ViT-B/16 built from transformers' module code
   (ResNetConfig() and ViTConfig() are those architectures; random weights,
   seeded, eval, fp16, 1000 classes), exported by torch.onnx.export
   (TorchScript exporter, opset 17, falling back to torch.export), weights
   kept in the file (so BatchNormalization folds into the convolutions at
   import), batch 32. fusec-run runs the model (CUDA-graph replay) and
   writes the logits, compared with PyTorch's; eager PyTorch and
   torch.compile (default and reduce-overhead; channels-last for ResNet)
   are timed on the same inputs with CUDA events.

Writes $OUT/convnets.json and prints a table.
    python3 bench/convnets.py              # everything
    CONV_ONLY=layers|forward|transposed|models python3 bench/convnets.py
    CONV_FUSEC_VARIANTS="FUSEC_EPILOGUE_PREFETCH=0;A=1,B=2" ...  # also each switch, same run
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import torch

BIN = os.environ.get("FUSEC_BIN", ".device/bin")
OUT = os.environ.get("OUT", "bench/out")
ONLY = os.environ.get("CONV_ONLY", "")
BATCH = int(os.environ.get("CONV_BATCH", "32"))

# (name, C, K, H (input), kernel, stride) of ResNet-50's convolutions.
LAYERS = [
    ("stem7x7s2", 3, 64, 224, 7, 2),
    ("l1.1x1.64-64", 64, 64, 56, 1, 1),
    ("l1.3x3.64", 64, 64, 56, 3, 1),
    ("l1.1x1.64-256", 64, 256, 56, 1, 1),
    ("l1.1x1.256-64", 256, 64, 56, 1, 1),
    ("l2.3x3.128", 128, 128, 28, 3, 1),
    ("l2.1x1.128-512", 128, 512, 28, 1, 1),
    ("l3.3x3.256", 256, 256, 14, 3, 1),
    ("l3.1x1.256-1024", 256, 1024, 14, 1, 1),
    ("l4.3x3.512", 512, 512, 7, 3, 1),
    ("l4.1x1.512-2048", 512, 2048, 7, 1, 1),
]


# (name, C, K, H (input), kernel, stride) of transposed convolutions (a
# U-Net decoder's or a GAN generator's 2x upsampling, pad kernel/2 - 1):
# ONNX ConvTranspose, run by fusec as one forward convolution per output
# phase (docs/Convolution.md).
TRANSPOSED_LAYERS = [
    ("up.convT4x4s2.256-128", 256, 128, 28, 4, 2),
    ("up.convT4x4s2.128-64", 128, 64, 56, 4, 2),
    ("up.convT2x2s2.512-256", 512, 256, 14, 2, 2),
    # 3x3 stride 2: phases of 4, 2, 2 and 1 taps (stacked only under
    # FUSEC_CONVT_STACKED=2, with zero taps).
    ("up.convT3x3s2.256-128", 256, 128, 28, 3, 2),
]


def time_ms(fn, warmup=3, runs=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(runs):
            fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / runs)
    return statistics.median(samples)


def fusec_run(args, timeout=900, env=None):
    cmd = [f"{BIN}/fusec-run"] + args + ["--no-check", "--json", "--warmup=3", "--runs=20"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"fusec-run failed ({p.returncode}): {(p.stdout + p.stderr)[-2000:]}")
    r = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])
    r["process_s"] = time.time() - t0
    return r


def bench_layer(name, c, k, h, kernel, stride, work):
    pad = kernel // 2
    o = (h + 2 * pad - kernel) // stride + 1
    n = BATCH
    flops = 2 * n * k * o * o * c * kernel * kernel
    row = {"layer": name, "N": n, "C": c, "K": k, "H": h, "kernel": kernel, "stride": stride,
           "out": o, "gflop": flops / 1e9}
    mlir = os.path.join(work, f"{name}.mlir")
    X, W, Y = (f"tensor<{n}x{c}x{h}x{h}xf16>", f"tensor<{k}x{c}x{kernel}x{kernel}xf16>",
               f"tensor<{n}x{k}x{o}x{o}xf16>")
    conv = (f"fusec.conv %x, %w {{strides = array<i64: {stride}, {stride}>, "
            f"pad_low = array<i64: {pad}, {pad}>, pad_high = array<i64: {pad}, {pad}>}} : ({X}, {W}) -> {Y}")
    with open(mlir, "w") as f:
        f.write(f"""func.func @conv(%x: {X}, %w: {W}) -> {Y} {{
  %y = {conv}
  return %y : {Y}
}}
""")
    # The layer as it runs inside a network: channels-last input and
    # output (the transposes cancel against the conversion fusec makes)
    # and a constant filter (an ONNX initializer: fusec relays it out at
    # compile time), so fusec's time is the convolution's own kernels
    # (the matmul; a padding kernel where the lhs is not read by TMA
    # im2col), against cuDNN's channels-last convolution.
    nhwc = os.path.join(work, f"{name}-nhwc.mlir")
    XH, YH = f"tensor<{n}x{h}x{h}x{c}xf16>", f"tensor<{n}x{o}x{o}x{k}xf16>"
    wconst = np.random.default_rng(7).standard_normal((k, c, kernel, kernel)).astype("<f2")
    with open(nhwc, "w") as f:
        f.write(f"""func.func @conv(%xh: {XH}) -> {YH} {{
  %w = fusec.constant dense<"0x{wconst.tobytes().hex().upper()}"> : {W}
  %x = fusec.transpose %xh perm [0, 3, 1, 2] : {XH} -> {X}
  %y = {conv}
  %yh = fusec.transpose %y perm [0, 2, 3, 1] : {Y} -> {YH}
  return %yh : {YH}
}}
""")
    x = torch.randn(n, c, h, h, device="cuda", dtype=torch.float16)
    w = torch.randn(k, c, kernel, kernel, device="cuda", dtype=torch.float16)
    return time_both(row, mlir, flops, x, w,
                     lambda xf, wf: torch.nn.functional.conv2d(xf, wf, stride=stride, padding=pad),
                     nhwc=nhwc)


def fusec_times(mlir, env=None):
    """fusec's kernels for `mlir`: the total, the matmuls' and each kernel."""
    r = fusec_run([mlir], env=env)
    ks = r["kernels"]
    return (sum(x["median_ms"] for x in ks),
            sum(x["median_ms"] for x in ks if "matmul" in x.get("name", "")),
            [{"name": x.get("name"), "strategy": x.get("strategy"), "ms": x["median_ms"]} for x in ks])


def time_both(row, mlir, flops, x, w, torch_fn, nhwc=None):
    """fusec's kernels for the graph `mlir` (every one timed; the matmuls
    apart), and for `nhwc` (the layer in channels-last form) where given,
    under the default and each switch of CONV_FUSEC_VARIANTS, and
    torch_fn(x, w) (cuDNN) channels-last and NCHW, the faster counted,
    into `row`."""
    try:
        total, mm, kernels = fusec_times(mlir)
        row.update(fusec_ms=total, fusec_matmul_ms=mm, fusec_kernels=kernels,
                   fusec_tflops=flops / total / 1e9, fusec_matmul_tflops=flops / mm / 1e9 if mm else None)
        if nhwc:
            total, mm, kernels = fusec_times(nhwc)
            row.update(fusec_nhwc_ms=total, fusec_nhwc_matmul_ms=mm, fusec_nhwc_kernels=kernels)
        for var in [v for v in os.environ.get("CONV_FUSEC_VARIANTS", "").split(";") if v]:
            env = {**os.environ, **dict(a.split("=", 1) for a in var.split(",") if a)}
            # The channels-last form where there is one (the layer as a
            # network runs it), else the graph itself.
            total, mm, _ = fusec_times(nhwc or mlir, env)
            row.setdefault("variants", {})[var] = (
                {"fusec_nhwc_ms": total, "fusec_nhwc_matmul_ms": mm} if nhwc
                else {"fusec_ms": total, "fusec_matmul_ms": mm})
    except Exception as e:  # noqa: BLE001
        row["fusec_error"] = str(e)[-1500:]
    # cuDNN with its autotuner on (cudnn.benchmark: each shape's fastest
    # algorithm, found on the first call): with it off, the same layer
    # read 0.020 ms in one run and 0.040 in the next
    # (bench/results/2026-12-07-h100-stop56).
    autotune, torch.backends.cudnn.benchmark = torch.backends.cudnn.benchmark, True
    row["cudnn_benchmark"] = True
    best = None
    for fmt in (torch.channels_last, torch.contiguous_format):
        xf, wf = x.to(memory_format=fmt), w.to(memory_format=fmt)
        t = time_ms(lambda: torch_fn(xf, wf))
        row["cudnn_ms_" + ("nhwc" if fmt == torch.channels_last else "nchw")] = t
        best = t if best is None else min(best, t)
    torch.backends.cudnn.benchmark = autotune
    row["cudnn_ms"] = best
    row["cudnn_tflops"] = flops / best / 1e9
    if "fusec_ms" in row:
        row["fusec_vs_cudnn"] = best / row["fusec_ms"]
    if "fusec_nhwc_ms" in row:
        row["fusec_nhwc_vs_cudnn_nhwc"] = row["cudnn_ms_nhwc"] / row["fusec_nhwc_ms"]
    return row


def bench_transposed(name, c, k, h, kernel, stride, work):
    pad = kernel // 2 - 1 if kernel > stride else 0
    o = (h - 1) * stride - 2 * pad + kernel
    n = BATCH
    flops = 2 * n * c * h * h * k * kernel * kernel
    row = {"layer": name, "N": n, "C": c, "K": k, "H": h, "kernel": kernel, "stride": stride,
           "out": o, "transposed": True, "gflop": flops / 1e9}
    mlir = os.path.join(work, f"{name}.mlir")
    with open(mlir, "w") as f:
        f.write(f"""func.func @convt(%x: tensor<{n}x{c}x{h}x{h}xf16>, %w: tensor<{c}x{k}x{kernel}x{kernel}xf16>)
    -> tensor<{n}x{k}x{o}x{o}xf16> {{
  %y = fusec.conv %x, %w {{transposed, strides = array<i64: {stride}, {stride}>,
                          pad_low = array<i64: {pad}, {pad}>, pad_high = array<i64: {pad}, {pad}>}}
         : (tensor<{n}x{c}x{h}x{h}xf16>, tensor<{c}x{k}x{kernel}x{kernel}xf16>) -> tensor<{n}x{k}x{o}x{o}xf16>
  return %y : tensor<{n}x{k}x{o}x{o}xf16>
}}
""")
    x = torch.randn(n, c, h, h, device="cuda", dtype=torch.float16)
    w = torch.randn(c, k, kernel, kernel, device="cuda", dtype=torch.float16)
    return time_both(row, mlir, flops, x, w,
                     lambda xf, wf: torch.nn.functional.conv_transpose2d(xf, wf, stride=stride,
                                                                          padding=pad))


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model(pixel_values=pixel_values).logits


def models():
    import transformers as tf
    return {
        "resnet-50": lambda: tf.ResNetForImageClassification(tf.ResNetConfig(num_labels=1000)),
        "vit-b16": lambda: tf.ViTForImageClassification(tf.ViTConfig(num_labels=1000)),
    }


def export(module, x, path, exporter):
    """TorchScript (opset 17), or torch.export (opset 18) where that fails.
    TorchScript's fp16 export of ViT casts the residual stream to f32 before
    each LayerNormalization whose scale stays f16; fusec's importer casts
    the scale and bias to X's type (torch.export took over 500 s on ViT)."""
    try:
        if exporter != "torchscript":
            raise RuntimeError("torch.export chosen")
        torch.onnx.export(module, (x,), path, dynamo=False, opset_version=17,
                          input_names=["pixel_values"], output_names=["logits"])
        return "torchscript"
    except Exception as e:  # noqa: BLE001
        print(f"TorchScript export failed ({str(e)[:200]}); torch.export", flush=True)
    prog = torch.onnx.export(module, (x,), dynamo=True, opset_version=18,
                             input_names=["pixel_values"], output_names=["logits"])
    prog.save(path)
    return "dynamo"


def kernel_kinds(kernels):
    """Milliseconds and counts per kind of kernel: matmul (by strategy),
    the convolution's own movement kernels (conv_pad, filter_im2col, im2col),
    pools, transposes, the rest."""
    kinds = {}
    for k in kernels:
        name, strategy = k.get("name") or "", k.get("strategy") or ""
        if strategy.startswith("matmul"):
            kind = strategy
        elif name in ("conv_pad", "filter_im2col", "im2col", "max_pool", "avg_pool",
                      "depthwise_conv"):
            kind = name
        elif name.endswith("_transpose"):
            kind = "transpose"
        else:
            kind = "other"
        ms, n = kinds.get(kind, (0.0, 0))
        kinds[kind] = (ms + k["median_ms"], n + 1)
    return {kind: {"ms": round(ms, 4), "kernels": n} for kind, (ms, n) in sorted(kinds.items())}


def bench_model(name, build, work):
    torch.manual_seed(0)
    model = build().eval().half().cuda()
    module = Logits(model).eval()
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(BATCH, 3, 224, 224, generator=g).half()
    row = {"model": name, "batch": BATCH}
    path = os.path.join(work, f"{name}.onnx")
    t0 = time.time()
    # ViT is exported with transformers' eager attention (softmax in f32,
    # cast back to f16: the model stays f16), timed in torch with its
    # default (SDPA). TorchScript's SDPA export computes P·V in f32 and casts
    # every later weight to f32, a graph fusec runs as written: f32 matmuls
    # without tensor cores (bench/results/2026-12-02-h200-convnets-stem).
    attn = getattr(model.config, "_attn_implementation", None)
    if name.startswith("vit") and attn is not None:
        model.config._attn_implementation = "eager"
        row["export_attention"] = "eager"
    with torch.no_grad():
        row["exporter"] = export(module, x.cuda(), path, "torchscript")
    if name.startswith("vit") and attn is not None:
        model.config._attn_implementation = attn
    row["export_s"] = time.time() - t0
    row["onnx_bytes"] = os.path.getsize(path)
    xf = os.path.join(work, f"{name}-x.npy")
    np.save(xf, x.numpy())
    with torch.no_grad():
        ref = module(x.cuda()).float()
    outdir = tempfile.mkdtemp()
    try:
        r = fusec_run([path, f"--input={xf}", f"--output-dir={outdir}"])
        got = torch.from_numpy(np.load(os.path.join(outdir, "result_0.npy")).astype(np.float32))
        got = got.cuda().reshape(ref.shape)
        row.update(fusec_ms=r["end_to_end_ms"], fusec_kernels=len(r["kernels"]),
                   fusec_kernel_sum_ms=sum(k["median_ms"] for k in r["kernels"]),
                   compile_s=r.get("compile_s"), import_s=r.get("import_s"),
                   rel_l2_vs_torch=float((got - ref).norm() / ref.norm()),
                   finite=bool(torch.isfinite(got).all()),
                   top_kernels=sorted(r["kernels"], key=lambda k: -k["median_ms"])[:10],
                   kernel_ms_by_kind=kernel_kinds(r["kernels"]),
                   kernels=[{key: k.get(key) for key in ("name", "median_ms", "predicted_ms",
                                                          "bytes", "flops", "strategy")}
                            for k in r["kernels"]])
        # The same model under each escape switch of CONV_FUSEC_VARIANTS
        # ("VAR=value;VAR2=value,VAR3=value": variants split by ';', each
        # one or more assignments), beside the default, in the same run.
        for var in [v for v in os.environ.get("CONV_FUSEC_VARIANTS", "").split(";") if v]:
            assigns = dict(a.split("=", 1) for a in var.split(",") if a)
            rv = fusec_run([path, f"--input={xf}"], env={**os.environ, **assigns})
            row.setdefault("variants", {})[var] = {
                "fusec_ms": rv["end_to_end_ms"], "kernel_ms_by_kind": kernel_kinds(rv["kernels"])}
        # fusec's figures before PyTorch's timings (a run cut short keeps them).
        print(json.dumps({"model": name, "fusec_ms": row.get("fusec_ms"),
                          "rel_l2_vs_torch": row.get("rel_l2_vs_torch"),
                          "variants": row.get("variants", {})}), flush=True)
    except Exception as e:  # noqa: BLE001
        row["fusec_error"] = str(e)[-2000:]
    xc = x.cuda()
    cl = name.startswith("resnet")
    with torch.no_grad():
        row["eager_ms"] = time_ms(lambda: module(xc))
        if cl:
            module = module.to(memory_format=torch.channels_last)
            xc = xc.to(memory_format=torch.channels_last)
        for mode, key in ((None, "compile"), ("reduce-overhead", "compile_ro")):
            try:
                torch._dynamo.reset()
                c = torch.compile(module, mode=mode) if mode else torch.compile(module)
                c(xc)
                torch.cuda.synchronize()
                row[f"{key}_ms"] = time_ms(lambda: c(xc))
            except Exception as e:  # noqa: BLE001
                row[f"{key}_error"] = str(e)[-800:]
    best = min([v for v in (row.get("compile_ms"), row.get("compile_ro_ms")) if v] or [None])
    if best and "fusec_ms" in row:
        row["speedup_vs_best_compile"] = best / row["fusec_ms"]
    return row


def main():
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp()
    result = {"layers": [], "models": []}
    if ONLY in ("", "layers", "forward", "transposed"):
        specs = [] if ONLY == "transposed" else [(bench_layer, spec) for spec in LAYERS]
        if ONLY != "forward":
            specs += [(bench_transposed, spec) for spec in TRANSPOSED_LAYERS]
        for fn, spec in specs:
            row = fn(*spec, work)
            result["layers"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "fusec_kernels"}), flush=True)
            json.dump(result, open(os.path.join(OUT, "convnets.json"), "w"), indent=1)
    if ONLY in ("", "models"):
        pick = os.environ.get("CONV_MODELS", "")
        for name, build in models().items():
            if pick and name not in pick.split(","):
                continue
            try:
                row = bench_model(name, build, work)
            except Exception:  # noqa: BLE001
                row = {"model": name, "error": traceback.format_exc()[-2000:]}
            result["models"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "top_kernels"}), flush=True)
            json.dump(result, open(os.path.join(OUT, "convnets.json"), "w"), indent=1)
    print("\nlayer (cuDNN: conv2d, or conv_transpose2d)")
    print("layer              GFLOP  fusec ms (matmul)   cuDNN ms  fusec TF/s  cuDNN TF/s  vs cuDNN")
    for r in result["layers"]:
        if "fusec_ms" in r:
            print(f"{r['layer']:22s} {r['gflop']:6.1f} {r['fusec_ms']:8.3f} ({r['fusec_matmul_ms']:6.3f})"
                  f" {r['cudnn_ms']:9.3f} {r['fusec_tflops']:10.1f} {r['cudnn_tflops']:11.1f}"
                  f" {r['fusec_vs_cudnn']:8.2f}x")
        else:
            print(f"{r['layer']:18s} fusec error: {r.get('fusec_error', '')[-150:]}")
    print("\nlayer channels last (fusec: padding + matmul; cuDNN NHWC; transposed layers NCHW),"
          " and each switch of CONV_FUSEC_VARIANTS")
    for r in result["layers"]:
        if "fusec_nhwc_ms" in r:
            extra = "".join(f"  [{k}] {v['fusec_nhwc_ms']:.3f}" for k, v in r.get("variants", {}).items())
            print(f"{r['layer']:22s} {r['fusec_nhwc_ms']:8.3f} ({r['fusec_nhwc_matmul_ms']:6.3f})"
                  f" {r['cudnn_ms_nhwc']:9.3f} {r['fusec_nhwc_vs_cudnn_nhwc']:6.2f}x{extra}")
        elif "fusec_ms" in r and r.get("variants"):
            extra = "".join(f"  [{k}] {v['fusec_ms']:.3f}" for k, v in r["variants"].items())
            print(f"{r['layer']:22s} {r['fusec_ms']:8.3f} ({r['fusec_matmul_ms']:6.3f})"
                  f" {r['cudnn_ms']:9.3f} {r['fusec_vs_cudnn']:6.2f}x{extra}")
    print("\nmodel       fusec ms  kernels  eager ms  compile ms  compile-ro ms  vs best compile  rel l2")
    for r in result["models"]:
        if "fusec_ms" in r:
            print(f"{r['model']:10s} {r['fusec_ms']:9.2f} {r['fusec_kernels']:8d} {r['eager_ms']:9.2f}"
                  f" {r.get('compile_ms', float('nan')):11.2f} {r.get('compile_ro_ms', float('nan')):14.2f}"
                  f" {r.get('speedup_vs_best_compile', float('nan')):15.3f}x {r['rel_l2_vs_torch']:.2e}")
        else:
            print(f"{r['model']:10s} error: {(r.get('fusec_error') or r.get('error', ''))[-300:]}")


if __name__ == "__main__":
    sys.exit(main())
