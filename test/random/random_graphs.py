#!/usr/bin/env python3
"""Random valid fusec graphs, each checked against the reference interpreter
(issue #19, random differential testing): by default the graph before and
after a pass pipeline (`fusec-run --reference --verify-pipeline`, no GPU);
with --gpu the whole JIT path (pipeline, code generation, run on the GPU)
against the interpreter, optionally under compute-sanitizer.

usage: random_graphs.py FUSEC_RUN [--count N] [--first I] [--seed S]
                        [--pipeline P] [--dtype f32|bf16|f16|mixed]
                        [--gpu [--sanitize TOOL]] [--jobs J] [--batch B]
                        [--minimize] [--keep DIR] [--json FILE]
                        [--deadline SECONDS]

Each graph draws 3 to 12 ops from elementwise (binary with broadcasts,
unary, transcendentals, guarded div/sqrt/rsqrt/log/pow, compare and select),
reductions over any dims, movement (transpose, reshape, slice, concat of
2 or 10 to 41 parts, broadcast), casts (fp8 round trips among them), integer chains, gathers
(embedding rows and columns), composites (softmax, layer_norm, rms_norm,
gelu, silu), matmuls, attention (GQA, causal, key masks), convolutions (1-D
to 3-D, strided, dilated, padded, grouped, depthwise, transposed, channels
last) and pools (max, mean, ceil mode), on odd and size-1 shapes; it returns every value nothing else uses. A graph whose check
fails is written to --keep (or the temp dir) and named, with --minimize also
its shortest failing prefix (graph_S_I_minK.mlir: the first K ops, the same
draws); the exit status is 1 on any mismatch, crash or hang, so that a ctest
entry fails. --batch B runs B graphs a fusec-run process (`fusec-run
--batch`: one MLIRContext, JIT and CUDA context for them); a graph a batch
died in is run again alone, which names the crash or hang.
"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time


FLOATS = ("f32", "bf16", "f16")


def ttype(shape, dt):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dt + ">"


class Graph:
    def __init__(self, rng, dtype):
        self.rng = rng
        self.dtype = dtype
        self.args = []    # (name, shape, dt)
        self.values = []  # (name, shape, dt)
        self.lines = []
        self.n = 0

    def dt(self):
        if self.dtype == "mixed":
            return self.rng.choice(["f32", "f32", "bf16", "f16"])
        return self.dtype

    def fresh(self):
        self.n += 1
        return f"%v{self.n}"

    def shape(self):
        rank = self.rng.choice([1, 2, 2, 3, 3, 4])
        return [self.rng.choice([1, 2, 3, 5, 7, 8, 16, 17, 32, 33, 64]) for _ in range(rank)]

    def arg(self, shape, dt):
        name = f"%a{len(self.args)}"
        self.args.append((name, list(shape), dt))
        self.values.append((name, list(shape), dt))
        return self.values[-1]

    def pick(self, dt=None, rank_min=0):
        pool = [v for v in self.values if (v[2] == dt if dt else v[2] in FLOATS)
                and len(v[1]) >= rank_min]
        if not pool or self.rng.random() < 0.15:
            return self.arg(self.shape() if rank_min <= 1 else
                            [self.rng.choice([2, 3, 8, 17]) for _ in range(max(rank_min, 2))],
                            dt or self.dt())
        return self.rng.choice(pool[-6:])

    def emit(self, text, shape, dt):
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        self.values.append((name, list(shape), dt))

    def op(self):
        r = self.rng.random()
        if r < 0.20:
            self.binary()
        elif r < 0.32:
            self.unary()
        elif r < 0.36:
            self.guarded()
        elif r < 0.46:
            self.reduce()
        elif r < 0.58:
            self.movement()
        elif r < 0.63:
            self.cast()
        elif r < 0.76:
            self.composite()
        elif r < 0.86:
            self.matmul()
        elif r < 0.89:
            self.select()
        elif r < 0.92:
            self.gather()
        elif r < 0.95:
            self.integer()
        elif r < 0.97:
            self.fp8()
        elif r < 0.985:
            self.attention()
        elif self.rng.random() < 0.65:
            self.conv()
        else:
            self.pool()

    def const(self, value, shape, dt):
        name = self.fresh()
        self.lines.append(f"  {name} = fusec.constant dense<{value}> : {ttype(shape, dt)}")
        return name

    def guarded(self):
        """Ops defined on part of the line, fed |x| + 1: div, sqrt, rsqrt, log,
        pow; and sin, cos."""
        name, shape, dt = self.pick()
        t = ttype(shape, dt)
        kind = self.rng.choice(["div", "sqrt", "rsqrt", "log", "pow", "sin", "cos"])
        if kind in ("sin", "cos"):
            self.emit(f"fusec.{kind} {name} : {t}", shape, dt)
            return
        a = self.fresh()
        self.lines.append(f"  {a} = fusec.abs {name} : {t}")
        one = self.const("1.0", shape, dt)
        pos = self.fresh()
        self.lines.append(f"  {pos} = fusec.add {a}, {one} : {t}")
        if kind == "div":
            num = self.pick(dt)
            if num[1] != shape:
                num = self.arg(shape, dt)
            self.emit(f"fusec.div {num[0]}, {pos} : {t}", shape, dt)
        elif kind == "pow":
            e = self.const(self.rng.choice(["2.0", "0.5", "-1.5", "3.0"]), shape, dt)
            self.emit(f"fusec.pow {pos}, {e} : {t}", shape, dt)
        else:
            self.emit(f"fusec.{kind} {pos} : {t}", shape, dt)

    def select(self):
        """compare and select: the choice flips with rounding, the value does not."""
        name, shape, dt = self.pick()
        same = [v for v in self.values if v[1] == shape and v[2] == dt and v[0] != name]
        other = self.rng.choice(same)[0] if same else self.arg(shape, dt)[0]
        t = ttype(shape, dt)
        pred = self.rng.choice(["lt", "le", "gt", "ge"])
        m = self.fresh()
        self.lines.append(f"  {m} = fusec.compare {pred}, {name}, {other} : {t}")
        # Choosing between the compared values keeps the result continuous
        # (a mask cast to numbers, or a choice between other values, would
        # flip with any rounding).
        if self.rng.random() < 0.5:
            self.emit(f"fusec.select {m}, {name}, {other} : {t}", shape, dt)
        else:
            self.emit(f"fusec.select {m}, {other}, {name} : {t}", shape, dt)

    def gather(self):
        """An embedding lookup (axis 0) or a column gather (axis 1) from a
        table argument at i32/i64 index arguments (drawn in range)."""
        dt = self.dt()
        rows, cols = self.rng.choice([3, 17, 64, 100]), self.rng.choice([1, 5, 16, 33, 64])
        idx_shape = self.rng.choice([[1], [7], [2, 9], [4, 1]])
        it = self.rng.choice(["i32", "i64"])
        table = self.arg([rows, cols], dt)
        ids = self.arg(idx_shape, it)
        axis = 0 if self.rng.random() < 0.75 else 1
        out = idx_shape + [cols] if axis == 0 else [rows] + idx_shape
        self.emit(f"fusec.gather {table[0]}[{ids[0]}] axis {axis} : ({ttype([rows, cols], dt)}, "
                  f"{ttype(idx_shape, it)}) -> {ttype(out, dt)}", out, dt)

    def integer(self):
        """A chain on integer arguments (values in [-8, 8)), cast to a float."""
        it = self.rng.choice(["i32", "i64"])
        shape = self.shape()
        t = ttype(shape, it)
        a = self.arg(shape, it)[0]
        b = self.arg(shape, it)[0]
        cur = a
        for _ in range(self.rng.randint(1, 3)):
            kind = self.rng.choice(["add", "sub", "mul", "max", "min", "abs", "neg"])
            nxt = self.fresh()
            if kind in ("abs", "neg"):
                self.lines.append(f"  {nxt} = fusec.{kind} {cur} : {t}")
            else:
                self.lines.append(f"  {nxt} = fusec.{kind} {cur}, {b} : {t}")
            cur = nxt
        dt = self.dt()
        self.emit(f"fusec.cast {cur} : {t} to {ttype(shape, dt)}", shape, dt)

    def fp8(self):
        """A quantize/dequantize round trip through an fp8 type."""
        name, shape, dt = self.pick()
        f8 = self.rng.choice(["f8E4M3FN", "f8E5M2"])
        q = self.fresh()
        self.lines.append(f"  {q} = fusec.cast {name} : {ttype(shape, dt)} to {ttype(shape, f8)}")
        self.emit(f"fusec.cast {q} : {ttype(shape, f8)} to {ttype(shape, dt)}", shape, dt)

    def attention(self):
        """Scaled dot-product attention on bf16/f16 arguments (the intrinsic's
        types and head dims), GQA, causal and key masks; the result cast to
        the graph's type."""
        at = self.rng.choice(["bf16", "f16"])
        b = self.rng.choice([1, 2])
        hkv = self.rng.choice([1, 2])
        h = hkv * self.rng.choice([1, 2])
        sq = self.rng.choice([1, 5, 17, 64, 130])
        skv = self.rng.choice([1, 7, 64, 129])
        d = self.rng.choice([64, 128])
        q = self.arg([b, h, sq, d], at)
        k = self.arg([b, hkv, skv, d], at)
        v = self.arg([b, hkv, skv, d], at)
        attrs = [f"scale = {1.0 / d ** 0.5:.6f} : f64"]
        if self.rng.random() < 0.4:
            attrs.append("causal")
        mask = ""
        if self.rng.random() < 0.3:
            m = self.arg([b, skv], "i1")
            mask = f" mask {m[0]} : {ttype([b, skv], 'i1')}"
        qt, kt = ttype([b, h, sq, d], at), ttype([b, hkv, skv, d], at)
        o = self.fresh()
        self.lines.append(f"  {o} = fusec.attention {q[0]}, {k[0]}, {v[0]}{mask} {{{', '.join(attrs)}}} "
                          f": ({qt}, {kt}, {kt}) -> {qt}")
        dt = self.dt()
        if dt == at:
            self.values.append((o, [b, h, sq, d], at))
        else:
            self.emit(f"fusec.cast {o} : {qt} to {ttype([b, h, sq, d], dt)}", [b, h, sq, d], dt)

    def window(self, dims, kernel_max, transposed=False):
        """Per spatial dim of `dims`: (kernel, stride, dilation, pad_low,
        pad_high, output size), the output at least 1. Transposed windows
        keep their pads within the dilated kernel, as a transposed output
        needs."""
        out = []
        for d in dims:
            k = self.rng.choice([kk for kk in (1, 2, 3, 5) if kk <= kernel_max])
            s = self.rng.choice([1, 1, 2, 3])
            dil = self.rng.choice([1, 1, 1, 2]) if k > 1 else 1
            span = dil * (k - 1) + 1
            pl = self.rng.randint(0, span - 1)
            ph = self.rng.randint(0, span - 1)
            if transposed:
                if (d - 1) * s - pl - ph + span < 1:
                    pl, ph = 0, 0
                o = (d - 1) * s - pl - ph + span
            else:
                if d + pl + ph < span:
                    pl, ph = 0, 0
                    k, dil, span = 1, 1, 1
                o = (d + pl + ph - span) // s + 1
            out.append((k, s, dil, pl, ph, o))
        return out

    @staticmethod
    def window_attrs(w, with_kernel=False):
        def arr(i):
            return "array<i64: " + ", ".join(str(x[i]) for x in w) + ">"
        attrs = [f"strides = {arr(1)}", f"dilations = {arr(2)}", f"pad_low = {arr(3)}",
                 f"pad_high = {arr(4)}"]
        if with_kernel:
            attrs.insert(0, f"kernel = {arr(0)}")
        return attrs

    def conv(self):
        """A convolution: 1-D to 3-D, strides, dilations, asymmetric pads,
        groups (depthwise too), or transposed; 64 channels at times (the
        tensor-core paths: implicit GEMM, TMA im2col for 16-bit floats);
        the input channels first, or a channels-last argument transposed in
        (the layout a network runs); the filter an argument."""
        dt = self.dt()
        rng = self.rng
        sp = rng.choice([1, 2, 2, 2, 3])
        n = rng.choice([1, 2])
        transposed = rng.random() < 0.15
        if rng.random() < 0.2 and not transposed:
            groups, c, k = 1, 64, rng.choice([8, 64])
            dims = [rng.choice([3, 5, 8]) for _ in range(sp)]
        else:
            groups = rng.choice([1, 1, 1, 2, 3])
            cpg = rng.choice([1, 2, 3, 8])
            kpg = rng.choice([1, 2, 4, 8])
            if rng.random() < 0.15:  # depthwise
                cpg, kpg = 1, 1
                groups = rng.choice([2, 4, 8])
            c, k = groups * cpg, groups * kpg
            dims = [rng.choice([1, 3, 5, 8, 13]) if sp < 3 else rng.choice([1, 3, 4, 5])
                    for _ in range(sp)]
        w = self.window(dims, 5 if sp < 3 else 3, transposed)
        kernel = [x[0] for x in w]
        x_shape = [n, c] + dims
        if rng.random() < 0.3:
            # A channels-last argument, moved to channels first.
            xl = self.arg([n] + dims + [c], dt)
            perm = [0, sp + 1] + list(range(1, sp + 1))
            x = self.fresh()
            self.lines.append(f"  {x} = fusec.transpose {xl[0]} perm [{', '.join(map(str, perm))}] : "
                              f"{ttype(xl[1], dt)} -> {ttype(x_shape, dt)}")
        else:
            x = self.arg(x_shape, dt)[0]
        f_shape = ([c, k // groups] if transposed else [k, c // groups]) + kernel
        f = self.arg(f_shape, dt)[0]
        out = [n, k] + [x[5] for x in w]
        attrs = self.window_attrs(w)
        if groups > 1:
            attrs.append(f"groups = {groups} : i64")
        if transposed:
            attrs.append("transposed")
        self.emit(f"fusec.conv {x}, {f} {{{', '.join(attrs)}}} : ({ttype(x_shape, dt)}, "
                  f"{ttype(f_shape, dt)}) -> {ttype(out, dt)}", out, dt)

    def pool(self):
        """Max or average pooling (with or without the padding counted),
        1-D to 3-D, strides, dilations, pads below the window, floor or
        ceil output sizes."""
        dt = self.dt()
        rng = self.rng
        sp = rng.choice([1, 2, 2, 3])
        dims = [rng.choice([1, 2, 5, 8, 13]) if sp < 3 else rng.choice([1, 3, 4, 6]) for _ in range(sp)]
        shape = [rng.choice([1, 2]), rng.choice([1, 3, 8])] + dims
        x = self.arg(shape, dt)[0]
        w = self.window(dims, 3)
        ceil = rng.random() < 0.3
        out = list(shape[:2])
        for d, (k, s, dil, pl, ph, o) in zip(dims, w):
            span = dil * (k - 1) + 1
            if ceil:
                o = -(-(d + pl + ph - span) // s) + 1
                if (o - 1) * s >= d + pl:  # a last window starting in the high padding
                    o -= 1
            out.append(o)
        kind = rng.choice(["max", "mean"])
        attrs = self.window_attrs(w, with_kernel=True)
        if kind == "mean" and rng.random() < 0.5:
            attrs.append("count_include_pad")
        self.emit(f"fusec.pool {kind} {x} {{{', '.join(attrs)}}} : {ttype(shape, dt)} -> {ttype(out, dt)}",
                  out, dt)

    def binary(self):
        a = self.pick()
        name, shape, dt = a
        kind = self.rng.choice(["add", "sub", "mul", "max", "min"])
        if self.rng.random() < 0.3 and len(shape) >= 2:
            # A broadcast operand along the last dim.
            b = self.arg([shape[-1]], dt)
            bb = self.fresh()
            self.lines.append(f"  {bb} = fusec.broadcast {b[0]} dims [{len(shape) - 1}] : "
                              f"{ttype([shape[-1]], dt)} -> {ttype(shape, dt)}")
            other = bb
        else:
            same = [v for v in self.values if v[1] == shape and v[2] == dt and v[0] != name]
            other = self.rng.choice(same)[0] if same else self.arg(shape, dt)[0]
        self.emit(f"fusec.{kind} {name}, {other} : {ttype(shape, dt)}", shape, dt)

    def unary(self):
        name, shape, dt = self.pick()
        kind = self.rng.choice(["neg", "abs", "tanh", "sigmoid", "exp", "erf", "silu", "gelu"])
        if kind == "exp":
            # Bounded first, so that exp stays finite in every type.
            t = self.fresh()
            self.lines.append(f"  {t} = fusec.tanh {name} : {ttype(shape, dt)}")
            name = t
        self.emit(f"fusec.{kind} {name} : {ttype(shape, dt)}", shape, dt)

    def reduce(self):
        name, shape, dt = self.pick(rank_min=2)
        rank = len(shape)
        dims = sorted(self.rng.sample(range(rank), self.rng.randint(1, rank - 1)))
        kind = self.rng.choice(["sum", "max", "min", "mean"])
        out = [d for i, d in enumerate(shape) if i not in dims]
        self.emit(f"fusec.reduce {kind} {name} dims [{', '.join(map(str, dims))}] : "
                  f"{ttype(shape, dt)} -> {ttype(out, dt)}", out, dt)

    def movement(self):
        name, shape, dt = self.pick(rank_min=2)
        kind = self.rng.choice(["transpose", "reshape", "slice", "concat"])
        rank = len(shape)
        if kind == "transpose":
            perm = list(range(rank))
            self.rng.shuffle(perm)
            out = [shape[p] for p in perm]
            self.emit(f"fusec.transpose {name} perm [{', '.join(map(str, perm))}] : "
                      f"{ttype(shape, dt)} -> {ttype(out, dt)}", out, dt)
        elif kind == "reshape":
            n = 1
            for d in shape:
                n *= d
            out = [n] if self.rng.random() < 0.5 or rank < 2 else [shape[0], n // shape[0]]
            self.emit(f"fusec.reshape {name} : {ttype(shape, dt)} -> {ttype(out, dt)}", out, dt)
        elif kind == "slice":
            offsets, out = [], []
            for d in shape:
                o = self.rng.randint(0, d - 1)
                offsets.append(o)
                out.append(self.rng.randint(1, d - o))
            self.emit(f"fusec.slice {name} offsets [{', '.join(map(str, offsets))}] strides "
                      f"[{', '.join('1' for _ in shape)}] : {ttype(shape, dt)} -> {ttype(out, dt)}",
                      out, dt)
        else:
            # One part more, or (one in five) 9 to 40 more: a wide concat
            # picks its part by branches in code generation.
            dim = self.rng.randrange(rank)
            parts = [(name, list(shape))]
            for _ in range(self.rng.randint(9, 40) if self.rng.random() < 0.2 else 1):
                other = list(shape)
                other[dim] = self.rng.choice([1, 2, 5])
                parts.append((self.arg(other, dt)[0], other))
            out = list(shape)
            out[dim] = sum(p[1][dim] for p in parts)
            self.emit(f"fusec.concat {', '.join(p[0] for p in parts)} dim {dim} : "
                      f"({', '.join(ttype(p[1], dt) for p in parts)}) -> {ttype(out, dt)}", out, dt)

    def cast(self):
        name, shape, dt = self.pick()
        to = self.rng.choice([d for d in ("f32", "bf16", "f16") if d != dt])
        if self.dtype != "mixed" and to != "f32":
            to = "f32" if dt != "f32" else dt
            if to == dt:
                return self.unary()
        self.emit(f"fusec.cast {name} : {ttype(shape, dt)} to {ttype(shape, to)}", shape, to)

    def composite(self):
        name, shape, dt = self.pick(rank_min=2)
        kind = self.rng.choice(["softmax", "layer_norm", "rms_norm", "gelu_tanh"])
        t = ttype(shape, dt)
        if kind == "softmax":
            self.emit(f"fusec.softmax {name} dim {self.rng.randrange(len(shape))} : {t}", shape, dt)
        elif kind == "gelu_tanh":
            self.emit(f"fusec.gelu {name} {{tanh}} : {t}", shape, dt)
        else:
            v = ttype([shape[-1]], dt)
            g = self.arg([shape[-1]], dt)
            if kind == "layer_norm":
                b = self.arg([shape[-1]], dt)
                self.emit(f"fusec.layer_norm {name}, {g[0]}, {b[0]} {{epsilon = 1.0e-5 : f64}} : "
                          f"({t}, {v}, {v}) -> {t}", shape, dt)
            else:
                self.emit(f"fusec.rms_norm {name}, {g[0]} {{epsilon = 1.0e-5 : f64}} : ({t}, {v}) -> {t}",
                          shape, dt)

    def matmul(self):
        name, shape, dt = self.pick(rank_min=2)
        k = shape[-1]
        n = self.rng.choice([1, 3, 8, 16, 33])
        transpose = self.rng.random() < 0.5
        w_shape = [n, k] if transpose else [k, n]
        w = self.arg(w_shape, dt)
        out = shape[:-1] + [n]
        attr = " {transpose_rhs}" if transpose else ""
        self.emit(f"fusec.matmul {name}, {w[0]}{attr} : ({ttype(shape, dt)}, {ttype(w_shape, dt)}) "
                  f"-> {ttype(out, dt)}", out, dt)

    def text(self, ops):
        for _ in range(ops):
            self.op()
        # Return the computed values nothing uses (the last six of them), so
        # that little of the graph is dead.
        body_text = "\n".join(self.lines)
        uses = {}
        for tok in re.findall(r"%v[0-9]+\b", body_text):
            uses[tok] = uses.get(tok, 0) + 1
        results = [v for v in self.values if v[0].startswith("%v") and uses.get(v[0], 0) == 1][-6:]
        if not results:
            results = [self.values[-1]]
        params = ", ".join(f"{n}: {ttype(s, d)}" for n, s, d in self.args)
        rtypes = ", ".join(ttype(s, d) for _, s, d in results)
        body = "\n".join(self.lines)
        return (f"func.func @g({params}) -> ({rtypes}) {{\n{body}\n"
                f"  return {', '.join(n for n, _, _ in results)} : {rtypes}\n}}\n")


def graph_text(seed, i, dtype, ops=None):
    """Graph i of a seed; with `ops`, its first `ops` ops only (the same
    draws, so a prefix of the whole graph: what minimization shrinks)."""
    rng = random.Random(seed * 1000003 + i)
    n = rng.randint(3, 12)
    return Graph(rng, dtype).text(n if ops is None else min(ops, n)), n


def check(a, path, i):
    """(ok, why, seconds) of one graph: the reference path (pipeline before
    and after), or with --gpu the whole JIT path against the interpreter,
    under compute-sanitizer when asked."""
    if a.gpu:
        cmd = [a.fusec_run, path, f"--seed={i + 1}", "--runs=1", "--warmup=0"]
        if a.sanitize:
            cmd = [a.sanitizer, "--tool", a.sanitize, "--error-exitcode=97",
                   "--print-limit=5"] + cmd
    else:
        cmd = [a.fusec_run, path, "--reference", f"--verify-pipeline={a.pipeline}",
               "--trials=1", f"--seed={i + 1}"]
    start = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
        ok, why = r.returncode == 0, (r.stdout + r.stderr)[-1500:]
        if r.returncode == 97:
            why = "sanitizer error\n" + why
        elif r.returncode < 0:
            why = f"killed by signal {-r.returncode}\n" + why
    except subprocess.TimeoutExpired:
        ok, why = False, f"timed out after {a.timeout} s"
    return ok, why, time.time() - start


def check_batch(a, items):
    """[(i, ok, why, seconds)] of graphs [(i, path)], run by one fusec-run
    --batch process (one JIT and CUDA context for all). A graph the process
    died in (a crash, a hang) is checked again alone, which names what
    happened; the ones after it run as a new batch."""
    if not items:
        return []
    listing = items[0][1] + ".batch"
    with open(listing, "w") as f:
        for i, path in items:
            f.write(f"{path} {i + 1}\n")
    cmd = [a.fusec_run, f"--batch={listing}"]
    cmd += (["--runs=1", "--warmup=0"] if a.gpu else
            ["--reference", f"--verify-pipeline={a.pipeline}", "--trials=1"])
    start = time.time()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=a.timeout * len(items))
        out = r.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    os.remove(listing)
    done = {}
    for m in re.finditer(r"^==> (\S+)\n(.*?)^<== \1 exit (\d+)\n", out, re.M | re.S):
        done[m.group(1)] = (int(m.group(3)), m.group(2))
    results = []
    per = (time.time() - start) / len(items)
    for k, (i, path) in enumerate(items):
        if path not in done:
            # The process ended inside this graph: alone it tells why.
            ok, why, secs = check(a, path, i)
            results.append((i, ok, why, secs))
            return results + check_batch(a, items[k + 1:])
        rc, text = done[path]
        results.append((i, rc == 0, text[-1500:], per))
    return results


def classify(why):
    if why.startswith("timed out"):
        return "hang"
    if why.startswith("sanitizer error"):
        return "sanitizer"
    if why.startswith("killed by signal"):
        return "crash"
    low = why.lower()
    if "mismatch" in low or "does not match" in low or "changes the graph" in low:
        return "wrong"
    if "Segmentation" in why or "Aborted" in why or "LLVM ERROR" in why or "internal error" in why:
        return "crash"
    return "error"


def minimize(a, i, full_ops, keep):
    """The shortest prefix of graph i that still fails: a reproducer."""
    best = None
    for ops in range(1, full_ops):
        text, _ = graph_text(a.seed, i, a.dtype, ops)
        path = os.path.join(keep, f"graph_{a.seed}_{i}_min{ops}.mlir")
        with open(path, "w") as f:
            f.write(text)
        ok, why, _ = check(a, path, i)
        if not ok:
            best = (path, why)
            break
        os.remove(path)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("fusec_run")
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--first", type=int, default=0, help="index of the first graph")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pipeline", default="fusec-pipeline")
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16", "mixed"])
    p.add_argument("--keep")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--gpu", action="store_true",
                   help="run each graph on the GPU (fusec-run's JIT path) against the interpreter")
    p.add_argument("--sanitize", choices=["memcheck", "racecheck", "initcheck", "synccheck"],
                   help="with --gpu: under compute-sanitizer with this tool")
    p.add_argument("--sanitizer", default="compute-sanitizer")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--batch", type=int, default=1,
                   help="graphs per fusec-run process (--batch mode: one JIT and CUDA "
                        "context for all; not with --sanitize)")
    p.add_argument("--minimize", action="store_true",
                   help="shrink each failure to its shortest failing prefix")
    p.add_argument("--json", help="write a summary (counts, failures) here")
    p.add_argument("--deadline", type=float,
                   help="start no graph after this many seconds (the rest count as not run)")
    a = p.parse_args()
    keep = a.keep or tempfile.mkdtemp(prefix="fusec-random-")
    os.makedirs(keep, exist_ok=True)

    if a.batch > 1 and a.sanitize:
        p.error("--batch runs no sanitizer: compute-sanitizer checks one graph a process")

    def chunk(indices):
        """The graphs `indices`, written and checked (None once past the
        deadline)."""
        if a.deadline and time.time() - start > a.deadline:
            return None
        items, sizes = [], {}
        for i in indices:
            text, sizes[i] = graph_text(a.seed, i, a.dtype)
            path = os.path.join(keep, f"graph_{a.seed}_{i}.mlir")
            with open(path, "w") as f:
                f.write(text)
            items.append((i, path))
        if len(items) == 1:
            ok, why, secs = check(a, items[0][1], items[0][0])
            checked = [(items[0][0], ok, why, secs)]
        else:
            checked = check_batch(a, items)
        out = []
        for (i, path), (_, ok, why, secs) in zip(items, checked):
            if ok:
                os.remove(path)
            out.append((i, sizes[i], path, ok, why, secs))
        return out

    start = time.time()
    failures = []
    ran = 0
    indices = list(range(a.first, a.first + a.count))
    chunks = [indices[k:k + a.batch] for k in range(0, len(indices), max(1, a.batch))]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for rs in pool.map(chunk, chunks):
            for r in rs or []:
                ran += 1
                i, n, path, ok, why, secs = r
                if not ok:
                    kind = classify(why)
                    entry = {"graph": path, "index": i, "kind": kind, "why": why}
                    if a.minimize:
                        m = minimize(a, i, n, keep)
                        if m:
                            entry["minimized"] = m[0]
                    failures.append(entry)
                    print(f"FAIL ({kind}) {path}:\n{why}", flush=True)
    mode = ("gpu" + (f"+{a.sanitize}" if a.sanitize else "")) if a.gpu else a.pipeline
    print(f"random graphs ({a.dtype}, {mode}, seed {a.seed}): "
          f"{ran - len(failures)}/{ran} pass in {time.time() - start:.0f} s"
          + (f" ({a.count - ran} not run: deadline)" if ran < a.count else ""))
    if a.json:
        kinds = {}
        for f in failures:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        with open(a.json, "w") as f:
            json.dump({"dtype": a.dtype, "mode": mode, "seed": a.seed, "first": a.first,
                       "count": ran, "passed": ran - len(failures), "kinds": kinds,
                       "seconds": round(time.time() - start, 1), "failures": failures}, f, indent=1)
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
