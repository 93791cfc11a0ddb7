#!/usr/bin/env python3
"""Real models end to end on the GPU (issue #16): fusec against eager PyTorch
and torch.compile on the same module, weights and inputs, in one run.

For each model (GPT-2 small at its real width; a Llama-style model of width
2048 with GQA and SwiGLU) in fp16, on the GPU machine:

1. Build it with random weights (seeded; nothing is downloaded) and export
   it with torch.export (opset 18, for each shape; BENCH_EXPORTER=torchscript
   tries the TorchScript exporter with dynamic dims first). The weights are
   then moved out of the file into graph inputs (`weights_to_inputs`), the
   way an application holding them in device memory passes them.
2. Write the weights, token ids and mask as .npy, and run
   `fusec-run model.onnx --input-shape input_ids=BxS ... --input ... --no-check
   --json`: the Executable end to end, replayed as a CUDA graph
   (end_to_end_ms), its compile time with an empty kernel cache (cold) and
   with the cache of the cold run (warm), and the logits (--output-dir),
   compared with PyTorch's.
3. Time eager PyTorch and torch.compile (default mode; and
   mode="reduce-overhead", which replays CUDA graphs as fusec does) on the
   same inputs with CUDA events, and torch.compile's first call (its
   compile).

Shapes: batch x sequence 4 x 1024 (prefill) and 32 x 1 (decode-like: one
token per sequence, no KV cache). Writes $OUT/models.json and prints a table.

    python3 bench/models.py                 # both models
    BENCH_ONLY=gpt2 python3 bench/models.py
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import torch

# Kernels kept per row in the JSON, slowest first (MODELS_TOP).
TOP_KERNELS = int(os.environ.get("MODELS_TOP", "8"))

BIN = os.environ.get("FUSEC_BIN", ".device/bin")
OUT = os.environ.get("OUT", "bench/out")
# (batch, sequence) pairs; BENCH_SHAPES="32x1" (comma-separated BxS) picks some.
SHAPES = [(4, 1024), (32, 1)]
if os.environ.get("BENCH_SHAPES"):
    SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ["BENCH_SHAPES"].split(",")]


def models():
    import transformers as tf
    return {
        "gpt2-small": lambda: tf.GPT2LMHeadModel(tf.GPT2Config(
            n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)),
        "llama-2048": lambda: tf.LlamaForCausalLM(tf.LlamaConfig(
            hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
            num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
            max_position_embeddings=2048)),
    }


class Logits(torch.nn.Module):
    """The model's logits for `input_ids` and an `attention_mask` (no KV
    cache). The mask (all ones here) is what generation passes; without it
    transformers' decoders look for packed sequences with aten::diff, which
    the TorchScript exporter cannot export."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          use_cache=False).logits


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


EXPORTER = os.environ.get("BENCH_EXPORTER", "dynamo")


def export(module, args, path):
    """torch.export for this shape (BENCH_EXPORTER=dynamo, the default), or
    TorchScript with dynamic batch and sequence (falling back to torch.export
    if it fails). TorchScript is not the default: on fp16 models with dynamic
    axes its SDPA export casts the attention to f32 (`Cast to=FLOAT`) and
    then feeds f32 into f16 LayerNormalization, a graph ONNX's type rules
    reject. Returns the exporter's name."""
    try:
        if EXPORTER != "torchscript":
            raise RuntimeError("BENCH_EXPORTER=dynamo")
        torch.onnx.export(module, args, path, dynamo=False, opset_version=17,
                          input_names=["input_ids", "attention_mask"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                        "attention_mask": {0: "batch", 1: "seq"},
                                        "logits": {0: "batch", 1: "seq"}},
                          do_constant_folding=False)
        return "torchscript"
    except Exception as e:  # noqa: BLE001
        print(f"TorchScript export not used ({str(e)[:120]}); torch.export for "
              f"{tuple(args[0].shape)}", flush=True)
    prog = torch.onnx.export(module, args, dynamo=True, opset_version=18,
                             input_names=["input_ids", "attention_mask"], output_names=["logits"])
    prog.save(path)
    return "dynamo"


def weights_to_inputs(path, wdir):
    """Moves the model's weights (float initializers of 4096 elements or
    more) out of the file into graph inputs, each saved as .npy in `wdir`
    (in input order): fusec then takes them as device buffers, the way an
    application holding the weights passes them, and the file stays small.
    Shape constants and small tensors stay initializers."""
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(path)
    keep, files = [], []
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)
    for init in m.graph.initializer:
        n = int(np.prod(init.dims)) if len(init.dims) else 1
        if init.data_type in floats and n >= 4096:
            f = os.path.join(wdir, f"w{len(files)}.npy")
            np.save(f, numpy_helper.to_array(init))
            files.append(f)
            m.graph.input.append(helper.make_tensor_value_info(
                init.name, init.data_type, list(init.dims)))
        else:
            keep.append(init)
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    onnx.save(m, path)
    return files


# MODELS_FUSEC_VARIANTS="name:VAR=v,VAR=v;..." also times fusec under each
# variant's environment (e.g. "nopdl:FUSEC_PDL=0"): fusec_ms_<name>.
VARIANTS = []
for item in filter(None, os.environ.get("MODELS_FUSEC_VARIANTS", "").split(";")):
    vname, _, assigns = item.partition(":")
    VARIANTS.append((vname, dict(a.split("=", 1) for a in assigns.split(",") if a)))


def run_fusec(model_path, ids_shape, inputs, cache, outdir, extra_env=None):
    shape = f"{ids_shape[0]}x{ids_shape[1]}"
    cmd = [f"{BIN}/fusec-run", model_path, f"--input-shape=input_ids={shape}",
           f"--input-shape=attention_mask={shape}",
           "--no-check", "--json", "--warmup=3", "--runs=20", f"--output-dir={outdir}"]
    cmd += [f"--input={p}" for p in inputs]
    env = dict(os.environ, FUSEC_CACHE_DIR=cache, **(extra_env or {}))
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    wall = time.time() - t0
    if p.returncode != 0:
        raise RuntimeError(f"fusec-run failed ({p.returncode}): {p.stderr[-3000:]}")
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    r = json.loads(line)
    r["process_s"] = wall
    return r


def bench_model(name, build, work):
    torch.manual_seed(0)
    model = build().eval().half().cuda()
    module = Logits(model).eval()
    g = torch.Generator(device="cpu").manual_seed(1)
    vocab = model.config.vocab_size
    rows = []
    exported = None  # (path, exporter, export_s, wfiles) of a dynamic export
    for b, s in SHAPES:
        ids = torch.randint(0, vocab, (b, s), generator=g)
        mask = torch.ones(b, s, dtype=torch.int64)
        if exported is None or exported[1] != "torchscript":
            path = os.path.join(work, f"{name}-{b}x{s}.onnx")
            t0 = time.time()
            with torch.no_grad():
                exporter = export(module, (ids.cuda(), mask.cuda()), path)
            export_s = time.time() - t0
            wdir = os.path.join(work, f"{name}-weights")
            shutil.rmtree(wdir, ignore_errors=True)
            os.makedirs(wdir, exist_ok=True)
            wfiles = weights_to_inputs(path, wdir)
            exported = (path, exporter, export_s, wfiles)
        path, exporter, export_s, wfiles = exported
        row = {"model": name, "batch": b, "seq": s, "exporter": exporter, "export_s": export_s,
               "onnx_bytes": os.path.getsize(path), "weights": len(wfiles)}
        idf = os.path.join(work, f"{name}-ids-{b}x{s}.npy")
        np.save(idf, ids.numpy().astype(np.int64))
        maskf = os.path.join(work, f"{name}-mask-{b}x{s}.npy")
        np.save(maskf, mask.numpy())
        with torch.no_grad():
            ref = module(ids.cuda(), mask.cuda()).float()
        try:
            cache = tempfile.mkdtemp()
            outdir = tempfile.mkdtemp()
            cold = run_fusec(path, (b, s), [idf, maskf] + wfiles, cache, outdir)
            warm = run_fusec(path, (b, s), [idf, maskf] + wfiles, cache, outdir)
            got = torch.from_numpy(np.load(os.path.join(outdir, "result_0.npy")).astype(np.float32))
            got = got.cuda().reshape(ref.shape)
            finite = bool(torch.isfinite(got).all())
            rel = float((got - ref).norm() / ref.norm())
            row.update(fusec_ms=warm["end_to_end_ms"], fusec_kernels=len(warm["kernels"]),
                       fusec_kernel_sum_ms=sum(k["median_ms"] for k in warm["kernels"]),
                       graph_launches=warm.get("graph_launches"),
                       compile_cold_s=cold["compile_s"], compile_warm_s=warm["compile_s"],
                       import_cold_s=cold.get("import_s", 0.0),
                       # What torch.compile's first call compares with: the
                       # ONNX import and the JIT's compile (the process
                       # time adds reading the weights' .npy files and
                       # writing the logits, through the host tensors).
                       fusec_cold_s=cold.get("import_s", 0.0) + cold["compile_s"],
                       fusec_warm_s=warm.get("import_s", 0.0) + warm["compile_s"],
                       process_cold_s=cold["process_s"], process_warm_s=warm["process_s"],
                       rel_l2_vs_torch=rel, finite=finite,
                       top_kernels=sorted(warm["kernels"],
                                          key=lambda k: -k["median_ms"])[:TOP_KERNELS])
            for vname, venv in VARIANTS:
                v = run_fusec(path, (b, s), [idf, maskf] + wfiles, cache, outdir, venv)
                row[f"fusec_ms_{vname}"] = v["end_to_end_ms"]
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(outdir, ignore_errors=True)
        except Exception as e:  # noqa: BLE001
            row["fusec_error"] = str(e)[-3000:]
        x, xm = ids.cuda(), mask.cuda()
        with torch.no_grad():
            row["eager_ms"] = time_ms(lambda: module(x, xm))
            for mode, key in ((None, "compile"), ("reduce-overhead", "compile_ro")):
                try:
                    torch._dynamo.reset()
                    c = torch.compile(module, mode=mode) if mode else torch.compile(module)
                    t0 = time.time()
                    c(x, xm)
                    torch.cuda.synchronize()
                    row[f"{key}_first_call_s"] = time.time() - t0
                    row[f"{key}_ms"] = time_ms(lambda: c(x, xm))
                except Exception as e:  # noqa: BLE001
                    row[f"{key}_error"] = str(e)[-1000:]
        best = min(v for v in (row.get("compile_ms"), row.get("compile_ro_ms")) if v)
        if "fusec_ms" in row:
            row["speedup_vs_best_compile"] = best / row["fusec_ms"]
            if row.get("compile_first_call_s"):
                row["cold_compile_ratio"] = row["compile_first_call_s"] / row["fusec_cold_s"]
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "top_kernels"}), flush=True)
    return rows


def export_tiny():
    """EXPORT_TINY=1: the benchmark's export path (fp16, mask, weights as
    inputs, no constant folding) on tiny configs of both models, written to
    $OUT/tiny-<model>.onnx for debugging the import off the GPU machine."""
    import transformers as tf
    tiny = {
        "gpt2": tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=64, n_layer=2, n_head=4,
                                                  vocab_size=1000, n_positions=128)),
        "llama": tf.LlamaForCausalLM(tf.LlamaConfig(
            hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128)),
    }
    for name, model in tiny.items():
        module = Logits(model.eval().half().cuda()).eval()
        ids = torch.randint(0, 1000, (2, 8)).cuda()
        with torch.no_grad():
            print(name, export(module, (ids, torch.ones_like(ids)), os.path.join(OUT, f"tiny-{name}.onnx")))


def main():
    os.makedirs(OUT, exist_ok=True)
    if os.environ.get("EXPORT_TINY"):
        export_tiny()
        return 0
    only = [s for s in os.environ.get("BENCH_ONLY", "").split(",") if s]
    work = tempfile.mkdtemp()
    import transformers
    log = {"torch": torch.__version__, "transformers": transformers.__version__,
           "device": torch.cuda.get_device_name(), "rows": []}
    for name, build in models().items():
        if only and not any(o in name for o in only):
            continue
        try:
            log["rows"] += bench_model(name, build, work)
        except Exception as e:  # noqa: BLE001
            log["rows"].append({"model": name, "error": traceback.format_exc()[-3000:]})
            print(f"{name}: FAILED {e}", flush=True)
    suffix = "-".join(only) if only else "all"
    json.dump(log, open(os.path.join(OUT, f"models-{suffix}.json"), "w"), indent=2)
    print(f"\n{'model':12s} {'BxS':>8s} {'fusec ms':>9s} {'eager':>8s} {'compile':>8s} "
          f"{'c+graphs':>8s} {'vs best':>7s} {'cold s':>7s} {'warm s':>7s} {'tc 1st s':>8s} {'ratio':>6s} "
          f"{'proc s':>7s} {'relL2':>8s}")
    for r in log["rows"]:
        if "batch" not in r:
            print(f"{r['model']:12s} ERROR {r.get('error', '')[-200:]}")
            continue
        f = lambda k, fmt="%.3f": (fmt % r[k]) if isinstance(r.get(k), (int, float)) else "-"
        print(f"{r['model']:12s} {r['batch']}x{r['seq']:<6d} {f('fusec_ms'):>9s} {f('eager_ms'):>8s} "
              f"{f('compile_ms'):>8s} {f('compile_ro_ms'):>8s} {f('speedup_vs_best_compile', '%.2fx'):>7s} "
              f"{f('fusec_cold_s', '%.2f'):>7s} {f('fusec_warm_s', '%.2f'):>7s} "
              f"{f('compile_first_call_s', '%.1f'):>8s} {f('cold_compile_ratio', '%.1fx'):>6s} "
              f"{f('process_cold_s', '%.1f'):>7s} {f('rel_l2_vs_torch', '%.1e'):>8s}")
        if "fusec_error" in r:
            print(f"   fusec: {r['fusec_error'][-400:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
