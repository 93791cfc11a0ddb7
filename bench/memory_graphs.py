"""The memory-bound graph suite (issue #15): graphs from real inference and
training code, each as a fusec function, a PyTorch function and a jax function
over the same inputs, at any size.

Used two ways:
- `test/memory_bound_suite.py` (CI, no GPU): every graph at a small size
  through `fusec-run --reference --verify-pipeline` (the graph before and
  after the pipeline on the interpreter), and its kernel count after the
  pipeline against the graph's `max_kernels`;
- `bench/memory_bound_suite.py` (the GPU): every graph at its benchmark sizes
  against eager PyTorch, TorchInductor and XLA.

A graph is a function of a size dict returning a `Graph`. Shapes and dtypes
are given once; the fusec text, the torch and the jax functions use the same
argument order. Bytes: each argument read once and each result written once,
except where `bytes_read` says otherwise (a gather reads the rows it takes).
"""
import math

DT_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f8E4M3FN": 1, "i32": 4, "i64": 8, "i1": 1}


def ttype(shape, dt):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dt + ">"


def numel(shape):
    return math.prod(shape)


class Arg:
    """An argument: its shape, dtype and how to draw it ('normal', 'positive',
    or ('ids', n) for integers in [0, n))."""

    def __init__(self, name, shape, dt, kind="normal"):
        self.name, self.shape, self.dt, self.kind = name, list(shape), dt, kind

    @property
    def type(self):
        return ttype(self.shape, self.dt)


class Graph:
    def __init__(self, name, cls, args, body, results, torch_fn, jax_fn,
                 max_kernels, bytes_read=None, note=""):
        self.name, self.cls = name, cls
        self.args = args
        self.body = body            # MLIR lines (without the return)
        self.results = results      # [(value, shape, dt)]
        self.torch_fn, self.jax_fn = torch_fn, jax_fn
        self.max_kernels = max_kernels
        self._bytes_read = bytes_read
        self.note = note

    def mlir(self):
        params = ", ".join(f"%{a.name}: {a.type}" for a in self.args)
        rtypes = ", ".join(ttype(s, d) for _, s, d in self.results)
        rvals = ", ".join(f"%{v}" for v, _, _ in self.results)
        body = "\n".join("  " + l for l in self.body)
        return (f"func.func @{self.name}({params}) -> ({rtypes}) {{\n{body}\n"
                f"  return {rvals} : {rtypes}\n}}\n")

    def bytes(self):
        read = self._bytes_read
        if read is None:
            read = sum(numel(a.shape) * DT_BYTES[a.dt] for a in self.args)
        written = sum(numel(s) * DT_BYTES[d] for _, s, d in self.results)
        return read + written


# --- helpers for the torch and jax sides -----------------------------------

def _t():
    import torch
    return torch


def _F():
    import torch.nn.functional as F
    return F


def _jnp():
    import jax.numpy as jnp
    return jnp


def _jax():
    import jax
    return jax


# --- the graphs ------------------------------------------------------------

def residual_layer_norm(s):
    r, c = s["rows"], s["cols"]
    T, V = ttype([r, c], "bf16"), ttype([c], "bf16")
    return Graph(
        "residual_layer_norm", "row", [Arg("x", [r, c], "bf16"), Arg("r", [r, c], "bf16"),
                                       Arg("g", [c], "bf16"), Arg("b", [c], "bf16")],
        [f"%h = fusec.add %x, %r : {T}",
         f"%y = fusec.layer_norm %h, %g, %b : ({T}, {V}, {V}) -> {T}"],
        [("h", [r, c], "bf16"), ("y", [r, c], "bf16")],
        lambda x, r_, g, b: ((h := x + r_), _F().layer_norm(h, (c,), g, b)),
        lambda x, r_, g, b: _jax_layer_norm(x + r_, g, b),
        max_kernels=1)


def _jax_layer_norm(h, g, b):
    jnp = _jnp()
    hf = h.astype(jnp.float32)
    m = hf.mean(-1, keepdims=True)
    v = ((hf - m) ** 2).mean(-1, keepdims=True)
    y = (hf - m) * _jax().lax.rsqrt(v + 1e-5) * g.astype(jnp.float32) + b.astype(jnp.float32)
    return h, y.astype(h.dtype)


def rms_norm_residual(s):
    r, c = s["rows"], s["cols"]
    T, V = ttype([r, c], "bf16"), ttype([c], "bf16")

    def torch_fn(x, r_, g):
        h = x + r_
        hf = h.float()
        return h, (hf * _t().rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6) * g.float()).to(h.dtype)

    def jax_fn(x, r_, g):
        jnp = _jnp()
        h = x + r_
        hf = h.astype(jnp.float32)
        y = hf * _jax().lax.rsqrt((hf * hf).mean(-1, keepdims=True) + 1e-6) * g.astype(jnp.float32)
        return h, y.astype(h.dtype)
    return Graph(
        "rms_norm_residual", "row",
        [Arg("x", [r, c], "bf16"), Arg("r", [r, c], "bf16"), Arg("g", [c], "bf16")],
        [f"%h = fusec.add %x, %r : {T}",
         f"%y = fusec.rms_norm %h, %g : ({T}, {V}) -> {T}"],
        [("h", [r, c], "bf16"), ("y", [r, c], "bf16")], torch_fn, jax_fn, max_kernels=1)


def softmax_f32(s):
    r, c = s["rows"], s["cols"]
    T = ttype([r, c], "f32")
    return Graph(
        "softmax_f32", "row", [Arg("x", [r, c], "f32")],
        [f"%y = fusec.softmax %x dim 1 : {T}"], [("y", [r, c], "f32")],
        lambda x: _t().softmax(x, -1), lambda x: _jax().nn.softmax(x, axis=-1), max_kernels=1)


def logsumexp(s):
    r, c = s["rows"], s["cols"]
    T, R = ttype([r, c], "f32"), ttype([r], "f32")
    return Graph(
        "logsumexp", "row", [Arg("x", [r, c], "f32")],
        [f"%m = fusec.reduce max %x dims [1] : {T} -> {R}",
         f"%mb = fusec.broadcast %m dims [0] : {R} -> {T}",
         f"%d = fusec.sub %x, %mb : {T}",
         f"%e = fusec.exp %d : {T}",
         f"%s = fusec.reduce sum %e dims [1] : {T} -> {R}",
         f"%l = fusec.log %s : {R}",
         f"%y = fusec.add %l, %m : {R}"],
        [("y", [r], "f32")],
        lambda x: _t().logsumexp(x, -1), lambda x: _jax().nn.logsumexp(x, axis=-1), max_kernels=1)


def masked_softmax(s):
    b, q = s["bh"], s["seq"]
    T, M = ttype([b, q, q], "bf16"), ttype([q, q], "bf16")
    TF = ttype([b, q, q], "f32")
    scale = 0.08838834764831845

    def torch_fn(x, mask):
        return (_t().softmax((x * scale + mask).float(), -1).to(x.dtype),)

    def jax_fn(x, mask):
        jnp = _jnp()
        return (_jax().nn.softmax((x * scale + mask).astype(jnp.float32), axis=-1).astype(x.dtype),)
    return Graph(
        "masked_softmax", "row", [Arg("x", [b, q, q], "bf16"), Arg("mask", [q, q], "bf16")],
        [f"%c = fusec.constant dense<{scale}> : {T}",
         f"%xs = fusec.mul %x, %c : {T}",
         f"%mb = fusec.broadcast %mask dims [1, 2] : {M} -> {T}",
         f"%a = fusec.add %xs, %mb : {T}",
         f"%af = fusec.cast %a : {T} to {TF}",
         f"%p = fusec.softmax %af dim 2 : {TF}",
         f"%y = fusec.cast %p : {TF} to {T}"],
        [("y", [b, q, q], "bf16")], torch_fn, jax_fn, max_kernels=1)


def cross_entropy(s):
    n, v = s["rows"], s["vocab"]
    T, TF, R = ttype([n, v], "bf16"), ttype([n, v], "f32"), ttype([n], "f32")
    TI, RI, VI = ttype([n, v], "i32"), ttype([n], "i32"), ttype([v], "i32")

    def torch_fn(x, t, iota):
        return (_F().cross_entropy(x.float(), t.long(), reduction="none"),)

    def jax_fn(x, t, iota):
        jnp = _jnp()
        xf = x.astype(jnp.float32)
        lse = _jax().nn.logsumexp(xf, axis=-1)
        return (lse - jnp.take_along_axis(xf, t[:, None], axis=-1)[:, 0],)
    return Graph(
        "cross_entropy", "row",
        [Arg("x", [n, v], "bf16"), Arg("t", [n], "i32", ("ids", v)), Arg("iota", [v], "i32", "iota")],
        [f"%xf = fusec.cast %x : {T} to {TF}",
         f"%m = fusec.reduce max %xf dims [1] : {TF} -> {R}",
         f"%mb = fusec.broadcast %m dims [0] : {R} -> {TF}",
         f"%d = fusec.sub %xf, %mb : {TF}",
         f"%e = fusec.exp %d : {TF}",
         f"%s = fusec.reduce sum %e dims [1] : {TF} -> {R}",
         f"%l = fusec.log %s : {R}",
         f"%lse = fusec.add %l, %m : {R}",
         f"%tb = fusec.broadcast %t dims [0] : {RI} -> {TI}",
         f"%ib = fusec.broadcast %iota dims [1] : {VI} -> {TI}",
         f"%eq = fusec.compare eq, %ib, %tb : {TI}",
         f"%z = fusec.constant dense<0.0> : {TF}",
         f"%sel = fusec.select %eq, %xf, %z : {TF}",
         f"%xt = fusec.reduce sum %sel dims [1] : {TF} -> {R}",
         f"%loss = fusec.sub %lse, %xt : {R}"],
        [("loss", [n], "f32")], torch_fn, jax_fn, max_kernels=1,
        note="the target logit as a masked row sum against an iota input (an exporter's one-hot form)")


def column_sum(s):
    r, c, dt = s["rows"], s["cols"], s.get("dt", "bf16")
    T, V = ttype([r, c], dt), ttype([c], dt)
    return Graph(
        "column_sum", "column", [Arg("dy", [r, c], dt)],
        [f"%y = fusec.reduce sum %dy dims [0] : {T} -> {V}"], [("y", [c], dt)],
        lambda dy: (dy.sum(0),),
        lambda dy: (dy.astype(_jnp().float32).sum(0).astype(dy.dtype),), max_kernels=1,
        note="a bias gradient")


def batch_norm_stats(s):
    n, c, h, w = s["n"], s["c"], s["h"], s["w"]
    T, TF, V = ttype([n, c, h, w], "bf16"), ttype([n, c, h, w], "f32"), ttype([c], "f32")

    def torch_fn(x):
        xf = x.float()
        m = xf.mean(dim=(0, 2, 3), keepdim=True)
        return m.flatten(), ((xf - m) ** 2).mean(dim=(0, 2, 3))

    def jax_fn(x):
        xf = x.astype(_jnp().float32)
        m = xf.mean(axis=(0, 2, 3), keepdims=True)
        return m.reshape(-1), ((xf - m) ** 2).mean(axis=(0, 2, 3))
    return Graph(
        "batch_norm_stats", "middle", [Arg("x", [n, c, h, w], "bf16")],
        [f"%xf = fusec.cast %x : {T} to {TF}",
         f"%m = fusec.reduce mean %xf dims [0, 2, 3] : {TF} -> {V}",
         f"%mb = fusec.broadcast %m dims [1] : {V} -> {TF}",
         f"%d = fusec.sub %xf, %mb : {TF}",
         f"%sq = fusec.mul %d, %d : {TF}",
         f"%v = fusec.reduce mean %sq dims [0, 2, 3] : {TF} -> {V}"],
        [("m", [c], "f32"), ("v", [c], "f32")], torch_fn, jax_fn, max_kernels=2,
        note="the variance needs the mean: fusec-decompose computes each (n, c) "
             "plane's mean and variance in one row kernel, then combines the planes "
             "(the law of total variance)")


def batch_norm_stats_nhwc(s):
    n, h, w, c = s["n"], s["h"], s["w"], s["c"]
    T, TF, V = ttype([n, h, w, c], "bf16"), ttype([n, h, w, c], "f32"), ttype([c], "f32")

    def torch_fn(x):
        xf = x.float()
        m = xf.mean(dim=(0, 1, 2), keepdim=True)
        return m.flatten(), ((xf - m) ** 2).mean(dim=(0, 1, 2))

    def jax_fn(x):
        xf = x.astype(_jnp().float32)
        m = xf.mean(axis=(0, 1, 2), keepdims=True)
        return m.reshape(-1), ((xf - m) ** 2).mean(axis=(0, 1, 2))
    return Graph(
        "batch_norm_stats_nhwc", "column", [Arg("x", [n, h, w, c], "bf16")],
        [f"%xf = fusec.cast %x : {T} to {TF}",
         f"%m = fusec.reduce mean %xf dims [0, 1, 2] : {TF} -> {V}",
         f"%mb = fusec.broadcast %m dims [3] : {V} -> {TF}",
         f"%d = fusec.sub %xf, %mb : {TF}",
         f"%sq = fusec.mul %d, %d : {TF}",
         f"%v = fusec.reduce mean %sq dims [0, 1, 2] : {TF} -> {V}"],
        [("m", [c], "f32"), ("v", [c], "f32")], torch_fn, jax_fn, max_kernels=3,
        note="channels-last statistics: a column reduction whose variance reads its "
             "mean; fusec-decompose cuts the N*H*W rows into groups of 256 (28 x 28 "
             "of them), each group's mean and variance, then the groups' in two steps")


def mean_pool(s):
    b, q, d = s["batch"], s["seq"], s["dim"]
    T, V = ttype([b, q, d], "bf16"), ttype([b, d], "bf16")
    return Graph(
        "mean_pool", "middle", [Arg("x", [b, q, d], "bf16")],
        [f"%y = fusec.reduce mean %x dims [1] : {T} -> {V}"], [("y", [b, d], "bf16")],
        lambda x: (x.mean(1),),
        lambda x: (x.astype(_jnp().float32).mean(1).astype(x.dtype),), max_kernels=1,
        note="mean over the sequence")


def head_split(s):
    b, q, h, d = s["batch"], s["seq"], s["heads"], s["dim"]
    X, R, O = ttype([b, q, h * d], "bf16"), ttype([b, q, h, d], "bf16"), ttype([b, h, q, d], "bf16")
    return Graph(
        "head_split", "movement", [Arg("x", [b, q, h * d], "bf16")],
        [f"%r = fusec.reshape %x : {X} -> {R}",
         f"%y = fusec.transpose %r perm [0, 2, 1, 3] : {R} -> {O}"],
        [("y", [b, h, q, d], "bf16")],
        lambda x: (x.view(b, q, h, d).permute(0, 2, 1, 3).contiguous(),),
        lambda x: (x.reshape(b, q, h, d).transpose(0, 2, 1, 3),), max_kernels=1)


def head_merge(s):
    b, q, h, d = s["batch"], s["seq"], s["heads"], s["dim"]
    X, T, O = ttype([b, h, q, d], "bf16"), ttype([b, q, h, d], "bf16"), ttype([b, q, h * d], "bf16")
    return Graph(
        "head_merge", "movement", [Arg("x", [b, h, q, d], "bf16")],
        [f"%t = fusec.transpose %x perm [0, 2, 1, 3] : {X} -> {T}",
         f"%y = fusec.reshape %t : {T} -> {O}"],
        [("y", [b, q, h * d], "bf16")],
        lambda x: (x.permute(0, 2, 1, 3).reshape(b, q, h * d),),
        lambda x: (x.transpose(0, 2, 1, 3).reshape(b, q, h * d),), max_kernels=1)


def head_transpose_scale(s):
    b, q, h, d = s["batch"], s["seq"], s["heads"], s["dim"]
    X, O = ttype([b, q, h, d], "bf16"), ttype([b, h, q, d], "bf16")
    return Graph(
        "head_transpose_scale", "movement", [Arg("x", [b, q, h, d], "bf16")],
        [f"%t = fusec.transpose %x perm [0, 2, 1, 3] : {X} -> {O}",
         f"%c = fusec.constant dense<0.125> : {O}",
         f"%y = fusec.mul %t, %c : {O}"],
        [("y", [b, h, q, d], "bf16")],
        lambda x: (x.permute(0, 2, 1, 3) * 0.125,),
        lambda x: (x.transpose(0, 2, 1, 3) * 0.125,), max_kernels=1)


def matrix_transpose(s):
    r, c = s["rows"], s["cols"]
    X, O = ttype([r, c], "bf16"), ttype([c, r], "bf16")
    return Graph(
        "matrix_transpose", "movement", [Arg("x", [r, c], "bf16")],
        [f"%y = fusec.transpose %x perm [1, 0] : {X} -> {O}"], [("y", [c, r], "bf16")],
        lambda x: (x.t().contiguous(),), lambda x: (x.T,), max_kernels=1)


def _packed_glu(name, act, s):
    r, f = s["rows"], s["ff"]
    X, H = ttype([r, 2 * f], "bf16"), ttype([r, f], "bf16")
    lines = [f"%g = fusec.slice %x offsets [0, 0] strides [1, 1] : {X} -> {H}",
             f"%u = fusec.slice %x offsets [0, {f}] strides [1, 1] : {X} -> {H}"]
    if act == "silu":
        lines.append(f"%a = fusec.silu %g : {H}")
        tf = lambda g: _F().silu(g)
        jf = lambda g: _jax().nn.silu(g)
    else:
        lines.append(f"%a = fusec.gelu %g {{tanh}} : {H}")
        tf = lambda g: _F().gelu(g, approximate="tanh")
        jf = lambda g: _jax().nn.gelu(g, approximate=True)
    lines.append(f"%y = fusec.mul %a, %u : {H}")
    return Graph(
        name, "elementwise", [Arg("x", [r, 2 * f], "bf16")], lines, [("y", [r, f], "bf16")],
        lambda x: (tf(x[:, :f]) * x[:, f:],), lambda x: (jf(x[:, :f]) * x[:, f:],),
        max_kernels=1, note="gate and up packed in one tensor")


def swiglu_packed(s):
    return _packed_glu("swiglu_packed", "silu", s)


def geglu_packed(s):
    return _packed_glu("geglu_packed", "gelu", s)


def kv_cache_concat(s):
    b, h, q, t, d = s["batch"], s["heads"], s["seq"], s["new"], s["dim"]
    C, N, O = (ttype([b, h, q, d], "bf16"), ttype([b, h, t, d], "bf16"),
               ttype([b, h, q + t, d], "bf16"))
    return Graph(
        "kv_cache_concat", "movement",
        [Arg("cache", [b, h, q, d], "bf16"), Arg("new", [b, h, t, d], "bf16")],
        [f"%y = fusec.concat %cache, %new dim 2 : ({C}, {N}) -> {O}"],
        [("y", [b, h, q + t, d], "bf16")],
        lambda c, n: (_t().cat([c, n], 2),), lambda c, n: (_jnp().concatenate([c, n], 2),),
        max_kernels=1)


def cast_bf16_scaled(s):
    n = s["n"]
    X, O, S = ttype([n], "f32"), ttype([n], "bf16"), ttype([], "f32")
    return Graph(
        "cast_bf16_scaled", "elementwise", [Arg("x", [n], "f32"), Arg("s", [], "f32")],
        [f"%sb = fusec.broadcast %s dims [] : {S} -> {X}",
         f"%m = fusec.mul %x, %sb : {X}",
         f"%y = fusec.cast %m : {X} to {O}"],
        [("y", [n], "bf16")],
        lambda x, sc: ((x * sc).to(_t().bfloat16),),
        lambda x, sc: ((x * sc).astype(_jnp().bfloat16),), max_kernels=1)


def cast_fp8_scaled(s):
    n = s["n"]
    X, O, S = ttype([n], "f32"), ttype([n], "f8E4M3FN"), ttype([], "f32")
    return Graph(
        "cast_fp8_scaled", "elementwise", [Arg("x", [n], "f32"), Arg("s", [], "f32")],
        [f"%sb = fusec.broadcast %s dims [] : {S} -> {X}",
         f"%m = fusec.mul %x, %sb : {X}",
         f"%hi = fusec.constant dense<448.0> : {X}",
         f"%lo = fusec.constant dense<-448.0> : {X}",
         f"%c1 = fusec.min %m, %hi : {X}",
         f"%c2 = fusec.max %c1, %lo : {X}",
         f"%y = fusec.cast %c2 : {X} to {O}"],
        [("y", [n], "f8E4M3FN")],
        lambda x, sc: ((x * sc).clamp(-448, 448).to(_t().float8_e4m3fn),),
        lambda x, sc: (_jnp().clip(x * sc, -448, 448).astype(_jnp().float8_e4m3fn),),
        max_kernels=1)


def row_quant_fp8(s):
    r, c = s["rows"], s["cols"]
    X, XF, R, O = (ttype([r, c], "bf16"), ttype([r, c], "f32"), ttype([r], "f32"),
                   ttype([r, c], "f8E4M3FN"))

    def torch_fn(x):
        xf = x.float()
        amax = xf.abs().amax(-1)
        return (xf * (448.0 / amax)[:, None]).to(_t().float8_e4m3fn), amax / 448.0

    def jax_fn(x):
        jnp = _jnp()
        xf = x.astype(jnp.float32)
        amax = jnp.abs(xf).max(-1)
        return (xf * (448.0 / amax)[:, None]).astype(jnp.float8_e4m3fn), amax / 448.0
    return Graph(
        "row_quant_fp8", "row", [Arg("x", [r, c], "bf16")],
        [f"%xf = fusec.cast %x : {X} to {XF}",
         f"%a = fusec.abs %xf : {XF}",
         f"%amax = fusec.reduce max %a dims [1] : {XF} -> {R}",
         f"%k = fusec.constant dense<448.0> : {R}",
         f"%sc = fusec.div %k, %amax : {R}",
         f"%sb = fusec.broadcast %sc dims [0] : {R} -> {XF}",
         f"%q = fusec.mul %xf, %sb : {XF}",
         f"%y = fusec.cast %q : {XF} to {O}",
         f"%inv = fusec.div %amax, %k : {R}"],
        [("y", [r, c], "f8E4M3FN"), ("inv", [r], "f32")], torch_fn, jax_fn, max_kernels=1,
        note="per-row fp8 quantization with its scale")


def embedding_gather(s):
    v, d, b, q = s["vocab"], s["dim"], s["batch"], s["seq"]
    W, I, O = ttype([v, d], "bf16"), ttype([b, q], "i32"), ttype([b, q, d], "bf16")
    return Graph(
        "embedding_gather", "gather", [Arg("w", [v, d], "bf16"), Arg("ids", [b, q], "i32", ("ids", v))],
        [f"%y = fusec.gather %w[%ids] axis 0 : ({W}, {I}) -> {O}"], [("y", [b, q, d], "bf16")],
        lambda w, ids: (_F().embedding(ids, w),), lambda w, ids: (_jnp().take(w, ids, axis=0),),
        max_kernels=1, bytes_read=b * q * (4 + d * 2))


def tanh_gelu_f16(s):
    n = s["n"]
    X = ttype([n], "f16")
    return Graph(
        "tanh_gelu_f16", "elementwise", [Arg("x", [n], "f16")],
        [f"%y = fusec.gelu %x {{tanh}} : {X}"], [("y", [n], "f16")],
        lambda x: (_F().gelu(x, approximate="tanh"),),
        lambda x: (_jax().nn.gelu(x, approximate=True),), max_kernels=1)


def gelu_bias_residual(s):
    r, c = s["rows"], s["cols"]
    T, V = ttype([r, c], "bf16"), ttype([c], "bf16")
    return Graph(
        "gelu_bias_residual", "elementwise",
        [Arg("x", [r, c], "bf16"), Arg("b", [c], "bf16"), Arg("r", [r, c], "bf16")],
        [f"%bb = fusec.broadcast %b dims [1] : {V} -> {T}",
         f"%0 = fusec.add %x, %bb : {T}",
         f"%1 = fusec.gelu %0 : {T}",
         f"%h = fusec.constant dense<0.5> : {T}",
         f"%2 = fusec.mul %1, %h : {T}",
         f"%y = fusec.add %2, %r : {T}"],
        [("y", [r, c], "bf16")],
        lambda x, b, r_: (_F().gelu(x + b) * 0.5 + r_,),
        lambda x, b, r_: (_jax().nn.gelu(x + b, approximate=False) * 0.5 + r_,), max_kernels=1)


def rope(s):
    b, q, h, d = s["batch"], s["seq"], s["heads"], s["dim"]
    half = d // 2
    Q, H, C = ttype([b, q, h, d], "bf16"), ttype([b, q, h, half], "bf16"), ttype([q, d], "bf16")

    def rot_t(x):
        return _t().cat([-x[..., half:], x[..., :half]], -1)

    def rot_j(x):
        return _jnp().concatenate([-x[..., half:], x[..., :half]], -1)
    return Graph(
        "rope", "elementwise",
        [Arg("x", [b, q, h, d], "bf16"), Arg("cos", [q, d], "bf16"), Arg("sin", [q, d], "bf16")],
        [f"%x1 = fusec.slice %x offsets [0, 0, 0, 0] strides [1, 1, 1, 1] : {Q} -> {H}",
         f"%x2 = fusec.slice %x offsets [0, 0, 0, {half}] strides [1, 1, 1, 1] : {Q} -> {H}",
         f"%n2 = fusec.neg %x2 : {H}",
         f"%rh = fusec.concat %n2, %x1 dim 3 : ({H}, {H}) -> {Q}",
         f"%cb = fusec.broadcast %cos dims [1, 3] : {C} -> {Q}",
         f"%sb = fusec.broadcast %sin dims [1, 3] : {C} -> {Q}",
         f"%a = fusec.mul %x, %cb : {Q}",
         f"%r = fusec.mul %rh, %sb : {Q}",
         f"%y = fusec.add %a, %r : {Q}"],
        [("y", [b, q, h, d], "bf16")],
        lambda x, c, sn: (x * c[:, None, :] + rot_t(x) * sn[:, None, :],),
        lambda x, c, sn: (x * c[:, None, :] + rot_j(x) * sn[:, None, :],), max_kernels=1,
        note="rotary embedding, rotate_half form")


def adam_step(s):
    n = s["n"]
    X = ttype([n], "f32")
    lr, b1, b2, eps, bc1, bc2 = 1e-3, 0.9, 0.999, 1e-8, 0.1, 0.001

    def c(v):
        return f"fusec.constant dense<{v:.9e}> : {X}"

    def torch_fn(p, g, m, v):
        m2 = b1 * m + (1 - b1) * g
        v2 = b2 * v.abs() + (1 - b2) * g * g
        return p - lr * (m2 / bc1) / ((v2 / bc2).sqrt() + eps), m2, v2

    def jax_fn(p, g, m, v):
        m2 = b1 * m + (1 - b1) * g
        v2 = b2 * _jnp().abs(v) + (1 - b2) * g * g
        return p - lr * (m2 / bc1) / (_jnp().sqrt(v2 / bc2) + eps), m2, v2
    return Graph(
        "adam_step", "elementwise",
        [Arg("p", [n], "f32"), Arg("g", [n], "f32"), Arg("m", [n], "f32"), Arg("v", [n], "f32")],
        [f"%b1 = {c(b1)}", f"%b1c = {c(1 - b1)}", f"%b2 = {c(b2)}", f"%b2c = {c(1 - b2)}",
         f"%lr = {c(lr)}", f"%eps = {c(eps)}", f"%bc1 = {c(bc1)}", f"%bc2 = {c(bc2)}",
         f"%m1 = fusec.mul %b1, %m : {X}", f"%g1 = fusec.mul %b1c, %g : {X}",
         f"%m2 = fusec.add %m1, %g1 : {X}",
         f"%va = fusec.abs %v : {X}",
         f"%v1 = fusec.mul %b2, %va : {X}", f"%gg = fusec.mul %g, %g : {X}",
         f"%g2 = fusec.mul %b2c, %gg : {X}", f"%v2 = fusec.add %v1, %g2 : {X}",
         f"%mh = fusec.div %m2, %bc1 : {X}", f"%vh = fusec.div %v2, %bc2 : {X}",
         f"%sq = fusec.sqrt %vh : {X}", f"%den = fusec.add %sq, %eps : {X}",
         f"%st = fusec.div %mh, %den : {X}", f"%up = fusec.mul %lr, %st : {X}",
         f"%p2 = fusec.sub %p, %up : {X}"],
        [("p2", [n], "f32"), ("m2", [n], "f32"), ("v2", [n], "f32")], torch_fn, jax_fn,
        max_kernels=1, note="an optimizer step: 4 inputs, 3 outputs (|v| keeps random inputs valid)")


def softmax_backward(s):
    r, c = s["rows"], s["cols"]
    T, TF, R = ttype([r, c], "bf16"), ttype([r, c], "f32"), ttype([r], "f32")

    def torch_fn(y, dy):
        yf, dyf = y.float(), dy.float()
        return ((yf * (dyf - (dyf * yf).sum(-1, keepdim=True))).to(y.dtype),)

    def jax_fn(y, dy):
        jnp = _jnp()
        yf, dyf = y.astype(jnp.float32), dy.astype(jnp.float32)
        return ((yf * (dyf - (dyf * yf).sum(-1, keepdims=True))).astype(y.dtype),)
    return Graph(
        "softmax_backward", "row", [Arg("y", [r, c], "bf16"), Arg("dy", [r, c], "bf16")],
        [f"%yf = fusec.cast %y : {T} to {TF}",
         f"%df = fusec.cast %dy : {T} to {TF}",
         f"%p = fusec.mul %df, %yf : {TF}",
         f"%s = fusec.reduce sum %p dims [1] : {TF} -> {R}",
         f"%sb = fusec.broadcast %s dims [0] : {R} -> {TF}",
         f"%d = fusec.sub %df, %sb : {TF}",
         f"%g = fusec.mul %yf, %d : {TF}",
         f"%dx = fusec.cast %g : {TF} to {T}"],
        [("dx", [r, c], "bf16")], torch_fn, jax_fn, max_kernels=1)


# Each graph: its builder, the benchmark sizes (16 MB to 2 GB), and a small
# size for CI (odd extents where the graph allows them).
SUITE = [
    (residual_layer_norm, [dict(rows=8192, cols=4096), dict(rows=2048, cols=2048)],
     dict(rows=5, cols=72)),
    (rms_norm_residual, [dict(rows=16384, cols=4096)], dict(rows=3, cols=40)),
    (softmax_f32, [dict(rows=4096, cols=32000)], dict(rows=4, cols=100)),
    (logsumexp, [dict(rows=8192, cols=50304)], dict(rows=3, cols=77)),
    (masked_softmax, [dict(bh=64, seq=2048)], dict(bh=2, seq=24)),
    (cross_entropy, [dict(rows=8192, vocab=50304)], dict(rows=4, vocab=33)),
    (column_sum, [dict(rows=16384, cols=4096), dict(rows=65536, cols=1024)],
     dict(rows=300, cols=20)),
    (batch_norm_stats, [dict(n=64, c=256, h=56, w=56)], dict(n=2, c=3, h=5, w=7)),
    (batch_norm_stats_nhwc, [dict(n=64, h=56, w=56, c=256)], dict(n=2, h=5, w=7, c=3)),
    (mean_pool, [dict(batch=32, seq=4096, dim=1024)], dict(batch=2, seq=50, dim=24)),
    (head_split, [dict(batch=8, seq=2048, heads=32, dim=128)],
     dict(batch=2, seq=5, heads=3, dim=8)),
    (head_merge, [dict(batch=8, seq=2048, heads=32, dim=128)],
     dict(batch=2, seq=5, heads=3, dim=8)),
    (head_transpose_scale, [dict(batch=8, seq=2048, heads=32, dim=128)],
     dict(batch=2, seq=5, heads=3, dim=8)),
    (matrix_transpose, [dict(rows=16384, cols=8192)], dict(rows=33, cols=70)),
    (swiglu_packed, [dict(rows=8192, ff=11008)], dict(rows=3, ff=24)),
    (geglu_packed, [dict(rows=8192, ff=8192)], dict(rows=3, ff=24)),
    (kv_cache_concat, [dict(batch=16, heads=32, seq=2048, new=16, dim=128)],
     dict(batch=2, heads=3, seq=9, new=2, dim=8)),
    (cast_bf16_scaled, [dict(n=128 << 20)], dict(n=1001)),
    (cast_fp8_scaled, [dict(n=128 << 20)], dict(n=1001)),
    (row_quant_fp8, [dict(rows=16384, cols=8192)], dict(rows=3, cols=200)),
    (embedding_gather, [dict(vocab=50304, dim=4096, batch=8, seq=2048)],
     dict(vocab=50, dim=16, batch=2, seq=7)),
    (tanh_gelu_f16, [dict(n=64 << 20), dict(n=4 << 20)], dict(n=1000)),
    (gelu_bias_residual, [dict(rows=16384, cols=8192)], dict(rows=5, cols=40)),
    (rope, [dict(batch=8, seq=2048, heads=32, dim=128)], dict(batch=2, seq=5, heads=3, dim=8)),
    (adam_step, [dict(n=64 << 20)], dict(n=999)),
    (softmax_backward, [dict(rows=16384, cols=8192), dict(rows=4096, cols=1024)],
     dict(rows=3, cols=50)),
]


def graphs(which="bench"):
    """Every graph of the suite at its benchmark sizes ('bench') or its small
    CI size ('small')."""
    out = []
    for build, sizes, small in SUITE:
        for s in (sizes if which == "bench" else [small]):
            out.append((build(s), s))
    return out
