#!/usr/bin/env python3
"""Exports the tiny real-model suite of test/models (issue #16).

Runs on the GPU machine (it has torch, transformers and onnx; nothing is
downloaded: every model is built from a small config with random weights,
seeded, in eval mode, fp32). For each architecture and each of PyTorch's two
exporters (TorchScript, `dynamo=False`, opset 17; torch.export, `dynamo=True`,
opset 18), writes a backend-test folder:

    <arch>-<exporter>/model.onnx
    <arch>-<exporter>/test_data_set_0/input_<i>.pb, output_<i>.pb

with PyTorch's own outputs on fixed inputs. Batch and sequence dims are
exported dynamic (as `dynamic_axes` / `dynamic_shapes` users do), so the
suite also checks that fusec binds them from the inputs. Everything lands in
one archive, $OUT/models.tar.xz, with $OUT/export.json saying what exported
and what failed (with the exception).

    python3 bench/export_models.py            # all
    EXPORT_ONLY=gpt2,llama python3 bench/export_models.py
"""
import io
import json
import os
import sys
import tarfile
import tempfile
import traceback

import numpy as np
import torch

OUT = os.environ.get("OUT", "bench/out")


def ids(batch, seq):
    g = torch.Generator().manual_seed(1)
    return (torch.randint(0, 1000, (batch, seq), generator=g),)


def with_mask(batch, seq):
    m = torch.ones(batch, seq, dtype=torch.int64)
    m[0, seq - 3:] = 0  # the first sequence padded at the end
    return ids(batch, seq)[0], m


def configs():
    """(name, build(), inputs(batch, seq)) of each architecture: tiny widths,
    two layers, a vocabulary of 1000."""
    import transformers as tf

    small = dict(vocab_size=1000)

    out = []
    out.append(("gpt2", lambda: tf.GPT2LMHeadModel(tf.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, n_positions=128, **small)), ids))
    out.append(("llama", lambda: tf.LlamaForCausalLM(tf.LlamaConfig(
        hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, **small)), ids))
    out.append(("bert", lambda: tf.BertModel(tf.BertConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=128, **small)), with_mask))
    out.append(("mistral", lambda: tf.MistralForCausalLM(tf.MistralConfig(
        hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, sliding_window=None, **small)),
        ids))
    out.append(("qwen2", lambda: tf.Qwen2ForCausalLM(tf.Qwen2Config(
        hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, **small)), ids))
    out.append(("distilbert", lambda: tf.DistilBertModel(tf.DistilBertConfig(
        dim=64, hidden_dim=128, n_layers=2, n_heads=4, max_position_embeddings=128, **small)),
        with_mask))
    out.append(("roberta", lambda: tf.RobertaModel(tf.RobertaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=130, **small)), with_mask))
    out.append(("t5-encoder", lambda: tf.T5EncoderModel(tf.T5Config(
        d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16, **small)),
        ids))
    return out


class Wrapped(torch.nn.Module):
    """The model's first output (logits or the last hidden state) as a plain
    tensor, without a KV cache."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *args):
        kwargs = dict(zip(self.names, args))
        try:
            out = self.model(**kwargs, use_cache=False)
        except TypeError:
            out = self.model(**kwargs)
        return out[0]


def pb(array, name):
    from onnx import numpy_helper
    t = numpy_helper.from_array(array, name)
    return t.SerializeToString()


def export_one(name, build, inputs, dynamo, folder):
    torch.manual_seed(0)
    model = build().eval()
    # Two shapes: the one exported with, and another (dynamic dims bound from
    # the inputs).
    sets = [inputs(2, 16), inputs(1, 24)]
    names = ["input_ids", "attention_mask"][:len(sets[0])]
    wrapped = Wrapped(model, names).eval()
    args = sets[0]
    path = os.path.join(folder, "model.onnx")
    os.makedirs(folder, exist_ok=True)
    dynamic = True
    if dynamo:
        batch = torch.export.Dim("batch", min=1, max=64)
        seq = torch.export.Dim("seq", min=2, max=120)
        shapes = tuple({0: batch, 1: seq} for _ in args)
        try:
            prog = torch.onnx.export(wrapped, args, dynamo=True, opset_version=18,
                                     input_names=names, output_names=["output"],
                                     dynamic_shapes=shapes)
        except Exception:  # noqa: BLE001 (a model torch.export cannot keep dynamic)
            dynamic = False
            prog = torch.onnx.export(wrapped, args, dynamo=True, opset_version=18,
                                     input_names=names, output_names=["output"])
        prog.save(path)
    else:
        axes = {n: {0: "batch", 1: "seq"} for n in names}
        axes["output"] = {0: "batch", 1: "seq"}
        torch.onnx.export(wrapped, args, path, dynamo=False, opset_version=17,
                          input_names=names, output_names=["output"], dynamic_axes=axes)
    for k, case in enumerate(sets if dynamic else sets[:1]):
        d = os.path.join(folder, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        with torch.no_grad():
            expected = wrapped(*case)
        for i, a in enumerate(case):
            open(os.path.join(d, f"input_{i}.pb"), "wb").write(pb(a.numpy(), names[i]))
        open(os.path.join(d, "output_0.pb"), "wb").write(
            pb(expected.numpy().astype(np.float32), "output"))
    # The model as onnx sees it, for the log.
    import onnx
    m = onnx.load(path)
    ops = sorted({n.op_type for n in m.graph.node})
    return dict(nodes=len(m.graph.node), ops=ops, bytes=os.path.getsize(path),
                dynamic=dynamic, opset=m.opset_import[0].version)


def main():
    os.makedirs(OUT, exist_ok=True)
    only = [s for s in os.environ.get("EXPORT_ONLY", "").split(",") if s]
    work = tempfile.mkdtemp()
    log = {"torch": torch.__version__, "models": []}
    try:
        import transformers
        import onnx
        log["transformers"] = transformers.__version__
        log["onnx"] = onnx.__version__
    except Exception as e:  # noqa: BLE001
        log["error"] = repr(e)
    for name, build, inputs in configs():
        if only and name not in only:
            continue
        exporters = [e for e in os.environ.get("EXPORTERS", "torchscript,dynamo").split(",") if e]
        for dynamo in (False, True):
            tag = f"{name}-{'dynamo' if dynamo else 'torchscript'}"
            if ("dynamo" if dynamo else "torchscript") not in exporters:
                continue
            folder = os.path.join(work, tag)
            entry = {"model": tag}
            # transformers' decoders, called without a mask, look for packed
            # sequences in the position ids (aten::diff, which TorchScript
            # cannot export): given a padding mask, as generation does, they
            # export.
            case = inputs
            if not dynamo and name in ("gpt2", "llama", "mistral", "qwen2"):
                case = with_mask
                entry["mask"] = "attention_mask given (TorchScript cannot export aten::diff)"
            try:
                entry.update(export_one(name, build, case, dynamo, folder))
                entry["ok"] = True
            except Exception as e:  # noqa: BLE001
                entry["ok"] = False
                entry["error"] = "".join(traceback.format_exception_only(type(e), e))[-2000:]
                entry["trace"] = traceback.format_exc()[-4000:]
            log["models"].append(entry)
            print(f"{tag:28s} {'ok' if entry['ok'] else 'FAILED'} "
                  f"{entry.get('nodes', '')} {entry.get('error', '')[:200]}", flush=True)
    with tarfile.open(os.path.join(OUT, os.environ.get("ARCHIVE", "models.tar.xz")), "w:xz") as tar:
        for entry in log["models"]:
            if entry["ok"]:
                tar.add(os.path.join(work, entry["model"]), arcname=entry["model"])
    json.dump(log, open(os.path.join(OUT, "export.json"), "w"), indent=2)
    ok = sum(e["ok"] for e in log["models"])
    print(f"exported {ok} of {len(log['models'])} (torch {torch.__version__}, "
          f"transformers {log.get('transformers')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
