"""make_onnx.py OUT_DIR: writes small ONNX models for the import tests, with
a protobuf writer of its own (no onnx package needed):

  add_relu.onnx      y = Relu(x + b), b an initializer (opset 13)
  external.onnx      y = x * w, w stored in external.onnx.data
  unsupported.onnx   a node of op type Unique named 'my_unique' (opset 13)
  shapes.onnx        y = Reshape(x, Concat(Shape(x)[0:1], [-1])): folded
  truncated.onnx     add_relu.onnx cut in the middle
  garbage.onnx       bytes that are not a protobuf
  layer_norm.onnx    LayerNormalization over the last dim, opset 17
  layer_norm_mixed.onnx  f32 X with f16 Scale and B, as TorchScript's fp16
                     export writes them (cast to X's type at import)
  argmax_wide.onnx   ArgMax over the last dim of [1024, 4096]
  trilu_causal.onnx  Trilu (lower) of [4096, 4096], opset 14
  pad_reflect.onnx   a reflect Pad of [8, 3, 512, 512] by 3
  attention.onnx     Softmax(MatMul(q, Transpose(k)) * 0.25) @ v, as exports
                     write attention
  convinteger_*/     ONNX backend test folders (model.onnx, test_data_set_0)
                     of ConvInteger, with the expected int32 outputs computed
                     here in Python integers
  convinteger_grouped.onnx  a grouped ConvInteger whose sums could pass 2^24
  reduce_prod_int.onnx  ReduceProd of a known int64 tensor (folded exactly)
  range_int64_extremes.onnx, range_to_minus_inf.onnx  Range at the ends of
                     int64 (by 2^62) and to -inf (empty)
  gather_splat.onnx, reverse_splat.onnx  a large splat gathered by its own
                     elements, and reversed (ReverseSequence)
  ovf_*.onnx         attributes and dims at int64's ends (an empty tensor's
                     huge dims, Pad, Split, GatherElements, MaxPool's
                     Indices, Resize, MelWeightMatrix, grouped Conv,
                     ConvTranspose): each an error naming the node
  matmulinteger_deep/, qlinearmatmul_deep/  backend test folders of
                     MatMulInteger (sums past 2^24) and QLinearMatMul over
                     K = 600, the expected outputs computed here
  crop_resize_{linear,nearest}/  backend test folders of Resize's
                     tf_crop_and_resize with a crop box past the input on both
                     sides (the extrapolation value there)
  lstm_bidir_peep/, gru_reverse_acts/, rnn_ragged_batchwise/, gru_lbr_clip/
  gridsample_*/      GridSample: cubic with reflection (points several ranges
                     outside), nearest with reflection, 3-D linear with
                     border (opset 20), cubic with zeros and aligned corners
  roialign_*/        RoiAlign: max mode, regions partly or wholly outside the
                     image, batch indices out of order, sampling_ratio 0
                     with known regions (one of zero size; avg and max),
                     expected outputs from the definition in Python (f64)
  maxunpool_*/       MaxUnpool: run-time indices (each in its window, as
                     MaxPool writes them) under overlapping windows with
                     pads, in 1-D with an output_shape, and known indices
                     anywhere (duplicates: the later wins) with an
                     output_shape
  splat_*/           large known splats (ConstantOfShape, Expand of a scalar)
                     above 4096 elements, kept one value at import: mixed
                     with run-time values, folded (Cast, ReduceSum), wrapped
                     to uint8 by a Cast, and read element by element
                     (Compress's condition, Gather's indices)
  roialign_adaptive_runtime.onnx  sampling_ratio 0 with run-time regions
                     (refused: the grid depends on them)
  einsum_*/, dft_*/, stft_*/, reverse_sequence_runtime/, scatter_*_dups/
                     what the ONNX node tests leave out of Einsum ('...',
                     diagonals, three operands, implicit outputs), DFT
                     (complex input, another axis, padding, inverse,
                     one-sided; opset 17 and 20), STFT (a run-time window,
                     complex, two-sided), ReverseSequence (lengths as a
                     graph input, batch-major) and scatters that reduce
                     duplicates (max, min, mul), with expected outputs from
                     the direct definitions in Python
                     backend test folders of the recurrent layers with what
                     the ONNX node tests leave out (both directions, reverse,
                     peepholes with initial states, activation lists with
                     alphas and betas, clip, ragged sequence_lens, layout 1),
                     expected outputs from a float64 reference written here
  rnn_reverse_ragged.onnx  a reverse RNN over ragged sequence_lens (refused)
  uint32_wrap/       uint32 add, sub, mul and shifts that leave [0, 2^32) and
                     wrap back, the expected outputs computed here
"""
import cmath
import itertools
import math
import os
import struct
import sys


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, wire, payload):
    return varint(num << 3 | wire) + payload


def ld(num, data):  # length-delimited
    if isinstance(data, str):
        data = data.encode()
    return field(num, 2, varint(len(data)) + data)


def vi(num, n):
    return field(num, 0, varint(n))


FLOAT, UINT8, INT32, INT64, BOOL, FLOAT16, UINT32 = 1, 2, 6, 7, 9, 10, 12


def tensor(name, dtype, dims, values=None, external=None):
    t = b"".join(vi(1, d) for d in dims) + vi(2, dtype) + ld(8, name)
    if external:
        t += ld(13, ld(1, "location") + ld(2, external)) + vi(14, 1)
    elif dtype == FLOAT:
        t += ld(9, struct.pack(f"<{len(values)}f", *values))
    elif dtype == FLOAT16:
        t += ld(9, struct.pack(f"<{len(values)}e", *values))
    elif dtype in (UINT8, BOOL):
        t += ld(9, bytes(values))
    elif dtype == INT32:
        t += ld(9, struct.pack(f"<{len(values)}i", *values))
    elif dtype == UINT32:
        t += ld(9, struct.pack(f"<{len(values)}I", *values))
    else:
        t += ld(9, struct.pack(f"<{len(values)}q", *values))
    return t


def value_info(name, dtype, dims):
    shape = b"".join(ld(1, vi(1, d)) for d in dims)
    return ld(1, name) + ld(2, ld(1, vi(1, dtype) + ld(2, shape)))


def node(op, inputs, outputs, name="", attrs=b""):
    return (b"".join(ld(1, i) for i in inputs) + b"".join(ld(2, o) for o in outputs)
            + ld(3, name) + ld(4, op) + attrs)


def attr_int(name, v):
    return ld(5, ld(1, name) + vi(3, v) + vi(20, 2))


def attr_ints(name, vs):
    return ld(5, ld(1, name) + ld(8, b"".join(varint(v) for v in vs)) + vi(20, 7))


def model(nodes, inits, inputs, outputs, opset=13):
    g = (b"".join(ld(1, n) for n in nodes) + ld(2, "g")
         + b"".join(ld(5, t) for t in inits)
         + b"".join(ld(11, value_info(*i)) for i in inputs)
         + b"".join(ld(12, value_info(*o)) for o in outputs))
    return vi(1, 8) + ld(2, "make_onnx") + ld(7, g) + ld(8, ld(1, "") + vi(2, opset))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    w = lambda name, data: open(os.path.join(out, name), "wb").write(data)
    add_relu = model([node("Add", ["x", "b"], ["s"], "add0"), node("Relu", ["s"], ["y"], "relu0")],
                     [tensor("b", FLOAT, [4], [1.0, -2.0, 0.5, 0.0])],
                     [("x", FLOAT, [3, 4])], [("y", FLOAT, [3, 4])])
    w("add_relu.onnx", add_relu)
    w("truncated.onnx", add_relu[: len(add_relu) // 2])
    w("garbage.onnx", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x07hello")
    w("external.onnx", model([node("Mul", ["x", "w"], ["y"], "mul0")],
                             [tensor("w", FLOAT, [2, 2], external="external.onnx.data")],
                             [("x", FLOAT, [2, 2])], [("y", FLOAT, [2, 2])]))
    w("external.onnx.data", struct.pack("<4f", 2.0, 3.0, 4.0, 5.0))
    w("unsupported.onnx", model([node("Unique", ["x"], ["y"], "my_unique")], [],
                                [("x", FLOAT, [2])], [("y", FLOAT, [2])]))
    w("shapes.onnx", model([node("Shape", ["x"], ["s"], "shape0"),
                            node("Slice", ["s", "zero", "one"], ["s0"], "slice0"),
                            node("Concat", ["s0", "minus1"], ["shape"], "concat0", attr_int("axis", 0)),
                            node("Reshape", ["x", "shape"], ["y"], "reshape0")],
                           [tensor("zero", INT64, [1], [0]), tensor("one", INT64, [1], [1]),
                            tensor("minus1", INT64, [1], [-1])],
                           [("x", FLOAT, [2, 3, 4])], [("y", FLOAT, [2, 12])]))
    w("layer_norm.onnx", model([node("LayerNormalization", ["x", "g", "b"], ["y"], "ln0")],
                               [tensor("g", FLOAT, [8], [1.0] * 8), tensor("b", FLOAT, [8], [0.5] * 8)],
                               [("x", FLOAT, [4, 8])], [("y", FLOAT, [4, 8])], opset=17))
    w("layer_norm_mixed.onnx",
      model([node("LayerNormalization", ["x", "g", "b"], ["y"], "ln0")],
            [tensor("g", FLOAT16, [8], [1.0] * 8), tensor("b", FLOAT16, [8], [0.5] * 8)],
            [("x", FLOAT, [4, 8])], [("y", FLOAT, [4, 8])], opset=17))
    shape = [1, 2, 8, 16]
    w("attention.onnx", model([node("Transpose", ["k"], ["kt"], "kt", attr_ints("perm", [0, 1, 3, 2])),
                               node("MatMul", ["q", "kt"], ["s"], "qk"),
                               node("Mul", ["s", "scale"], ["t"], "scale"),
                               node("Softmax", ["t"], ["p"], "softmax", attr_int("axis", -1)),
                               node("MatMul", ["p", "v"], ["o"], "pv")],
                              [tensor("scale", FLOAT, [], [0.25])],
                              [("q", FLOAT, shape), ("k", FLOAT, shape), ("v", FLOAT, shape)],
                              [("o", FLOAT, shape)]))
    # In f16 with head dim 64: what the attention intrinsic runs.
    shape = [1, 2, 8, 64]
    w("attention_f16.onnx", model([node("Transpose", ["k"], ["kt"], "kt", attr_ints("perm", [0, 1, 3, 2])),
                                   node("MatMul", ["q", "kt"], ["s"], "qk"),
                                   node("Mul", ["s", "scale"], ["t"], "scale"),
                                   node("Softmax", ["t"], ["p"], "softmax", attr_int("axis", -1)),
                                   node("MatMul", ["p", "v"], ["o"], "pv")],
                                  [tensor("scale", FLOAT16, [], [0.125])],
                                  [("q", FLOAT16, shape), ("k", FLOAT16, shape), ("v", FLOAT16, shape)],
                                  [("o", FLOAT16, shape)]))
    # ArgMax along the last dim of a [1024, 4096] input: the positions along
    # the axis are a [4096] constant, broadcast (not a constant of 4M).
    w("argmax_wide.onnx", model([node("ArgMax", ["x"], ["y"], "am", attr_int("axis", 1))], [],
                                [("x", FLOAT, [1024, 4096])], [("y", INT64, [1024, 1])]))
    # A causal mask as LLM exports write it (Trilu of a [4096, 4096] input)
    # and a reflect Pad of a batch of images: large maps built at run time.
    w("trilu_causal.onnx", model([node("Trilu", ["x", "k"], ["y"], "tri", attr_int("upper", 0))],
                                 [tensor("k", INT64, [], [0])],
                                 [("x", FLOAT, [4096, 4096])], [("y", FLOAT, [4096, 4096])],
                                 opset=14))
    w("pad_reflect.onnx", model([node("Pad", ["x", "pads"], ["y"], "pad",
                                      ld(5, ld(1, "mode") + ld(4, "reflect") + vi(20, 3)))],
                                [tensor("pads", INT64, [8], [0, 0, 3, 3, 0, 0, 3, 3])],
                                [("x", FLOAT, [8, 3, 512, 512])], [("y", FLOAT, [8, 3, 518, 518])]))
    conv_integer_tests(out)
    matmul_integer_tests(out)
    # ReduceProd of a known int64 tensor (a shape computation): exact at
    # import, 3 x 5 x 7 x 2^40 (past f64's exact integers once more
    # factors join, so no exp-log path).
    w("reduce_prod_int.onnx", model(
        [node("ReduceProd", ["c"], ["y"], "prod", attr_int("keepdims", 0))],
        [tensor("c", INT64, [4], [3, 5, 7, 1 << 40])], [], [("y", INT64, [])], opset=13))
    # Range over all of int64 by 2^62: i * delta passes 2^63 at i = 2,
    # though every element lies between the bounds (a fuzz_onnx find).
    w("range_int64_extremes.onnx", model(
        [node("Range", ["s", "l", "d"], ["y"], "range")],
        [tensor("s", INT64, [], [-(1 << 63)]), tensor("l", INT64, [], [(1 << 63) - 1]),
         tensor("d", INT64, [], [1 << 62])], [], [("y", INT64, [4])], opset=13))
    # A float Range to -inf: ceil((limit - start) / delta) is -inf, an empty
    # range (not a conversion of -inf to an integer).
    w("range_to_minus_inf.onnx", model(
        [node("Range", ["s", "l", "d"], ["y"], "range")],
        [tensor("s", FLOAT, [], [0.0]), tensor("l", FLOAT, [], [float("-inf")]),
         tensor("d", FLOAT, [], [1.0])], [], [("y", FLOAT, [0])], opset=13))
    overflow_tests(out)
    gather_splat_tests(out)
    crop_resize_tests(out)
    recurrent_tests(out)
    more_op_tests(out)
    grid_sample_tests(out)
    roi_align_tests(out)
    max_unpool_tests(out)
    lazy_splat_tests(out)
    uint32_tests(out)


def uint32_tests(out):
    """uint32_wrap/: uint32 arithmetic that leaves [0, 2^32) and comes back
    (the node tests' values never do): x + x, s - x, x * x, x << s and
    x >> s on values near 2^32, the expected outputs mod 2^32."""
    m = 1 << 32
    x = [m - 1, m - 2, 1 << 31, 3, 0x89ABCDEF, 7]
    s = [1, 31, 1, 32, 4, 0]
    nodes = [node("Add", ["x", "x"], ["sum"]), node("Sub", ["s", "x"], ["diff"]),
             node("Mul", ["x", "x"], ["sq"]),
             node("BitShift", ["x", "s"], ["left"], attrs=attr_string("direction", "LEFT")),
             node("BitShift", ["x", "s"], ["right"], attrs=attr_string("direction", "RIGHT"))]
    outs = {"sum": [(a + a) % m for a in x], "diff": [(b - a) % m for a, b in zip(x, s)],
            "sq": [(a * a) % m for a in x],
            "left": [(a << b) % m if b < 32 else 0 for a, b in zip(x, s)],
            "right": [a >> b if b < 32 else 0 for a, b in zip(x, s)]}
    names = ["sum", "diff", "sq", "left", "right"]
    mb = model(nodes, [], [("x", UINT32, [6]), ("s", UINT32, [6])],
               [(n, UINT32, [6]) for n in names], opset=18)
    backend_test(out, "uint32_wrap", mb, [tensor("x", UINT32, [6], x), tensor("s", UINT32, [6], s)],
                 [tensor(n, UINT32, [6], outs[n]) for n in names])


def lcg(seed, n, lo, hi):
    """n integers in [lo, hi] from a small linear congruential generator."""
    out = []
    for _ in range(n):
        seed = (seed * 1103515245 + 12345) % (1 << 31)
        out.append(lo + seed % (hi - lo + 1))
    return out


def conv_integer(x, xs, w, ws, xzp, wzp, pad):
    """ConvInteger of flat lists (NCHW x, [M, C, KH, KW] w, one group,
    stride 1, pads `pad` all round), in Python integers."""
    n, c, h, wd = xs
    m, _, kh, kw = ws
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = []
    for b in range(n):
        for o in range(m):
            for i in range(oh):
                for j in range(ow):
                    acc = 0
                    for ch in range(c):
                        for a in range(kh):
                            for e in range(kw):
                                r, q = i + a - pad, j + e - pad
                                if 0 <= r < h and 0 <= q < wd:
                                    xv = x[((b * c + ch) * h + r) * wd + q] - xzp
                                    wv = w[((o * c + ch) * kh + a) * kw + e] - wzp[o]
                                    acc += xv * wv
                    y.append(acc)
    return y, [n, m, oh, ow]


def backend_test(out, name, model_bytes, inputs, outputs):
    d = os.path.join(out, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(out, name, "model.onnx"), "wb").write(model_bytes)
    for i, t in enumerate(inputs):
        open(os.path.join(d, f"input_{i}.pb"), "wb").write(t)
    for i, t in enumerate(outputs):
        open(os.path.join(d, f"output_{i}.pb"), "wb").write(t)


def attr_float(name, v):
    return ld(5, ld(1, name) + field(2, 5, struct.pack("<f", v)) + vi(20, 1))


def attr_string(name, v):
    return ld(5, ld(1, name) + ld(4, v) + vi(20, 3))


def overflow_tests(out):
    """ovf_*.onnx: attribute and dim values at int64's ends that an audit of
    the importer's arithmetic found (each an overflow, an out-of-range
    conversion or a walk of 2^40 under UBSan before): each is an error
    naming the node."""
    big, low = (1 << 63) - 1, -(1 << 63)

    def w(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    x4 = [("x", FLOAT, [4])]
    # An empty initializer whose other dims multiply past int64.
    w("ovf_empty_huge.onnx", model([node("Flatten", ["e"], ["y"], "flat", attr_int("axis", 1))],
                                   [tensor("e", FLOAT, [0, 1 << 62, 1 << 62], [])], [],
                                   [("y", FLOAT, [0, 0])]))
    # Pad by INT64_MIN before and INT64_MAX after (their sum is -1).
    w("ovf_pad_ends.onnx", model([node("Pad", ["x", "pads"], ["y"], "pad")],
                                 [tensor("pads", INT64, [2], [low, big])], x4, [("y", FLOAT, [3])]))
    # Split into num_outputs INT64_MAX parts (two outputs).
    w("ovf_split_parts.onnx", model([node("Split", ["x"], ["a", "b"], "split",
                                          attr_int("num_outputs", big))], [], x4,
                                    [("a", FLOAT, [2]), ("b", FLOAT, [2])], opset=18))
    # GatherElements whose indices are larger than the data off the axis.
    w("ovf_gather_elements.onnx", model(
        [node("GatherElements", ["d", "i"], ["y"], "ge", attr_int("axis", 1))],
        [tensor("i", INT64, [5, 1], [0, 1, 0, 1, 0])], [("d", FLOAT, [2, 3])], [("y", FLOAT, [5, 1])]))
    # MaxPool's Indices over a window of (2^30)^3 taps.
    w("ovf_maxpool_taps.onnx", model(
        [node("MaxPool", ["x"], ["y", "idx"], "pool",
              attr_ints("kernel_shape", [1 << 30] * 3) + attr_ints("strides", [1 << 30] * 3)
              + attr_ints("pads", [(1 << 30) - 1] * 6))],
        [], [("x", FLOAT, [1, 1, 1, 1, 1])], [("y", FLOAT, [1, 1, 1, 1, 1]), ("idx", INT64, [1, 1, 1, 1, 1])],
        opset=12))
    # Resize to sizes INT64_MAX with the aspect ratio kept (not_smaller).
    w("ovf_resize_sizes.onnx", model(
        [node("Resize", ["x", "", "", "sizes"], ["y"], "resize",
              attr_string("keep_aspect_ratio_policy", "not_smaller") + attr_ints("axes", [0, 1]))],
        [tensor("sizes", INT64, [2], [big, 1])], [("x", FLOAT, [4, 4])], [("y", FLOAT, [4, 4])],
        opset=18))
    # MelWeightMatrix up to 1e30 Hz: bin 2e30.
    w("ovf_mel_upper.onnx", model(
        [node("MelWeightMatrix", ["mels", "dft", "rate", "lo", "hi"], ["y"], "mel")],
        [tensor("mels", INT64, [], [1]), tensor("dft", INT64, [], [2]), tensor("rate", INT64, [], [1]),
         tensor("lo", FLOAT, [], [0.0]), tensor("hi", FLOAT, [], [1e30])], [], [("y", FLOAT, [2, 1])],
        opset=17))
    # A convolution of an empty input (no channels: any group divides them)
    # in 2^62 groups, whose filter's channels times the groups overflow.
    w("ovf_conv_groups.onnx", model(
        [node("Conv", ["x", "w"], ["y"], "conv", attr_int("group", 1 << 62))],
        [tensor("x", FLOAT, [1, 0, 3], []), tensor("w", FLOAT, [1, 4, 1], [1.0] * 4)], [],
        [("y", FLOAT, [1, 1, 3])]))
    # A transposed convolution whose input times its stride passes int64.
    w("ovf_convt_stride.onnx", model(
        [node("ConvTranspose", ["x", "w"], ["y"], "convt", attr_ints("strides", [1 << 30]))],
        [], [("x", FLOAT, [1, 1, 1 << 34]), ("w", FLOAT, [1, 1, 1])], [("y", FLOAT, [1, 1, 1])]))


def gather_splat_tests(out):
    """gather_splat.onnx: a ConstantOfShape (a large known splat) gathered
    by its own elements (fuzz_onnx's slow find): 2^26 elements, the
    folding cap."""
    with open(os.path.join(out, "gather_splat.onnx"), "wb") as f:
        f.write(model(
            [node("ConstantOfShape", ["shp"], ["c"], "fill",
                  attr_tensor("value", tensor("v", INT64, [1], [0]))),
             node("Gather", ["c", "c"], ["y"], "gather", attr_int("axis", 1))],
            [tensor("shp", INT64, [2], [2048, 16])], [], [("y", INT64, [2048, 2048, 16])]))
    # A splat of 2^26 elements reversed along its first dim, each batch
    # entry's full length: the splat again.
    with open(os.path.join(out, "reverse_splat.onnx"), "wb") as f:
        f.write(model(
            [node("ConstantOfShape", ["shp"], ["c"], "fill",
                  attr_tensor("value", tensor("v", FLOAT, [1], [2.5]))),
             node("ReverseSequence", ["c", "lens"], ["y"], "reverse",
                  attr_int("batch_axis", 1) + attr_int("time_axis", 0))],
            [tensor("shp", INT64, [3], [2048, 2048, 16]), tensor("lens", INT64, [2048], [2048] * 2048)],
            [], [("y", FLOAT, [2048, 2048, 16])]))


def crop_resize_tests(out):
    # A 5 x 5 input, crop box rows [-0.25, 1.25] into 13 rows and columns
    # [-0.125, 1.125] into 6: source coordinates -1, -0.5, 0, ..., 5 and
    # -0.5, 0.5, ..., 4.5 (exact in binary), those outside [0, 4] the
    # extrapolation value 10. Expected outputs per ONNX's definition.
    n, rows, cols = 5, 13, 6
    x = [float(v) for v in range(n * n)]
    roi = [0.0, 0.0, -0.25, -0.125, 1.0, 1.0, 1.25, 1.125]

    def coords(out_len, start, end):
        return [start * (n - 1) + o * (end - start) * (n - 1) / (out_len - 1)
                for o in range(out_len)]
    ys, xs_ = coords(rows, -0.25, 1.25), coords(cols, -0.125, 1.125)
    inside = lambda c: 0 <= c <= n - 1

    def linear(c):
        f = int(c // 1)
        r = c - f
        return [(f, 1 - r), (min(f + 1, n - 1), r)]

    def nearest(c):  # round_prefer_floor
        f = int(c // 1)
        return [(min(max(f + (1 if c - f > 0.5 else 0), 0), n - 1), 1.0)]
    for mode, taps in (("linear", linear), ("nearest", nearest)):
        y = []
        for a in ys:
            for b in xs_:
                if not (inside(a) and inside(b)):
                    y.append(10.0)
                    continue
                y.append(sum(wa * wb * x[ia * n + ib] for ia, wa in taps(a) for ib, wb in taps(b)))
        m = model([node("Resize", ["x", "roi", "", "sizes"], ["y"], "crop",
                        attr_string("mode", mode)
                        + attr_string("coordinate_transformation_mode", "tf_crop_and_resize")
                        + attr_float("extrapolation_value", 10.0))],
                  [tensor("roi", FLOAT, [8], roi), tensor("sizes", INT64, [4], [1, 1, rows, cols])],
                  [("x", FLOAT, [1, 1, n, n])], [("y", FLOAT, [1, 1, rows, cols])])
        backend_test(out, f"crop_resize_{mode}", m, [tensor("x", FLOAT, [1, 1, n, n], x)],
                     [tensor("y", FLOAT, [1, 1, rows, cols], y)])


def conv_integer_tests(out):
    # 64 input channels of 3 x 3 taps: 576 products of up to 255 x 255 a
    # sum, past 2^24 (f32's exact integers). With the filter an input (its
    # values unknown at import) the channels go in runs of 28.
    xs, ws = [2, 64, 5, 5], [8, 64, 3, 3]
    x = lcg(7, 2 * 64 * 25, 200, 255)
    w = lcg(11, 8 * 64 * 9, 0, 255)
    xzp, wzp = 0, [0, 1, 2, 3, 250, 5, 6, 7]
    y, ys = conv_integer(x, xs, w, ws, xzp, wzp, 1)
    assert max(abs(v) for v in y) > (1 << 24)
    m = model([node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], "convint",
                    attr_ints("pads", [1, 1, 1, 1]))],
              [tensor("xz", UINT8, [], [xzp]), tensor("wz", UINT8, [8], wzp)],
              [("x", UINT8, xs), ("w", UINT8, ws)], [("y", INT32, ys)], opset=10)
    backend_test(out, "convinteger_deep", m,
                 [tensor("x", UINT8, xs, x), tensor("w", UINT8, ws, w)],
                 [tensor("y", INT32, ys, y)])
    # The same with the filter known (an initializer) and small: one run.
    w2 = lcg(13, 8 * 64 * 9, 0, 3)
    y2, _ = conv_integer(x, xs, w2, ws, 3, [0] * 8, 1)
    m2 = model([node("ConvInteger", ["x", "w", "xz"], ["y"], "convint",
                     attr_ints("pads", [1, 1, 1, 1]))],
               [tensor("w", UINT8, ws, w2), tensor("xz", UINT8, [], [3])],
               [("x", UINT8, xs)], [("y", INT32, ys)], opset=10)
    backend_test(out, "convinteger_known", m2, [tensor("x", UINT8, xs, x)],
                 [tensor("y", INT32, ys, y2)])
    # Grouped, the filter unknown: 2 groups of 32 channels, 288 taps each.
    open(os.path.join(out, "convinteger_grouped.onnx"), "wb").write(
        model([node("ConvInteger", ["x", "w"], ["y"], "convint_g", attr_int("group", 2))], [],
              [("x", UINT8, [1, 64, 5, 5]), ("w", UINT8, [8, 32, 3, 3])],
              [("y", INT32, [1, 8, 3, 3])], opset=10))


def matmul_integer(a, b, m, k, n, azp, bzp):
    """sum over k of (a - azp)(b - bzp[col]) of flat row-major lists, in
    Python integers."""
    return [sum((a[i * k + l] - azp) * (b[l * n + j] - bzp[j]) for l in range(k))
            for i in range(m) for j in range(n)]


def to_f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def matmul_integer_tests(out):
    # K = 600: 600 products of up to 255 x 255 a sum, past 2^24. b is an
    # input (unknown at import): K goes in runs of 258, 258 and 84.
    m, k, n = 6, 600, 5
    a = lcg(17, m * k, 200, 255)
    b = lcg(19, k * n, 0, 255)
    bzp = [0, 1, 250, 3, 128]
    y = matmul_integer(a, b, m, k, n, 0, bzp)
    assert max(abs(v) for v in y) > (1 << 24)
    mm = model([node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], "mmint")],
               [tensor("az", UINT8, [], [0]), tensor("bz", UINT8, [n], bzp)],
               [("a", UINT8, [2, 3, k]), ("b", UINT8, [k, n])], [("y", INT32, [2, 3, n])],
               opset=10)
    backend_test(out, "matmulinteger_deep", mm,
                 [tensor("a", UINT8, [2, 3, k], a), tensor("b", UINT8, [k, n], b)],
                 [tensor("y", INT32, [2, 3, n], y)])
    # QLinearMatMul of the same K: a_scale 0.5, b_scale 0.25, y_scale 1024
    # (the multiplier 2^-13, exact), zero points 128 and 7; the product
    # rounded to f32 (as fusec computes it), halves to even, clamped.
    a2 = lcg(23, m * k, 0, 255)
    b2 = lcg(29, k * n, 0, 255)
    acc = matmul_integer(a2, b2, m, k, n, 128, [128] * n)
    y2 = [min(255, max(0, round(to_f32(to_f32(v) * 2.0 ** -13)) + 7)) for v in acc]
    assert 0 < sum(1 for v in y2 if 0 < v < 255)
    qm = model([node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"],
                     "qmm")],
               [tensor("as", FLOAT, [], [0.5]), tensor("az", UINT8, [], [128]),
                tensor("bs", FLOAT, [], [0.25]), tensor("bz", UINT8, [], [128]),
                tensor("ys", FLOAT, [], [1024.0]), tensor("yz", UINT8, [], [7])],
               [("a", UINT8, [m, k]), ("b", UINT8, [k, n])], [("y", UINT8, [m, n])], opset=10)
    backend_test(out, "qlinearmatmul_deep", qm,
                 [tensor("a", UINT8, [m, k], a2), tensor("b", UINT8, [k, n], b2)],
                 [tensor("y", UINT8, [m, n], y2)])


def attr_floats(name, vs):
    return ld(5, ld(1, name) + ld(7, struct.pack(f"<{len(vs)}f", *vs)) + vi(20, 6))


def attr_strings(name, vs):
    return ld(5, ld(1, name) + b"".join(ld(9, v) for v in vs) + vi(20, 8))


def rand_floats(seed, n, scale):
    return [scale * (v / 500.0 - 1.0) for v in lcg(seed, n, 0, 1000)]


def activation(name, alpha, beta, v):
    import math
    if name == "Tanh":
        return math.tanh(v)
    if name == "Sigmoid":
        return 1.0 / (1.0 + math.exp(-v))
    if name == "Relu":
        return max(v, 0.0)
    if name == "LeakyRelu":
        return v if v >= 0 else alpha * v
    if name == "HardSigmoid":
        return min(max(alpha * v + beta, 0.0), 1.0)
    if name == "ScaledTanh":
        return alpha * math.tanh(beta * v)
    if name == "Affine":
        return alpha * v + beta
    raise ValueError(name)


def recurrent_reference(op, x, w, r, b, lens, h0, c0, p, direction, acts, clip, lbr):
    """ONNX's RNN/GRU/LSTM in float64 on nested lists: x [seq][batch][in],
    w [dirs][gates*H][in], r [dirs][gates*H][H], b [dirs][2*gates*H] (or
    None), lens [batch] (or None), h0/c0 [dirs][batch][H], p [dirs][3H];
    acts: per direction, a list of (name, alpha, beta). Returns Y
    [seq][dirs][batch][H], Y_h and Y_c [dirs][batch][H]."""
    seq, batch = len(x), len(x[0])
    dirs = len(w)
    hid = len(r[0][0])
    gates = len(w[0]) // hid
    dot = lambda u, v: sum(a * c for a, c in zip(u, v))
    cl = (lambda v: min(max(v, -clip), clip)) if clip else (lambda v: v)
    ys = [[[[0.0] * hid for _ in range(batch)] for _ in range(dirs)] for _ in range(seq)]
    yh, yc = [], []
    for d in range(dirs):
        rev = direction == "reverse" or d == 1
        f = acts[d]
        wb = b[d][:gates * hid] if b else [0.0] * (gates * hid)
        rb = b[d][gates * hid:] if b else [0.0] * (gates * hid)
        hs, cs = [], []
        for bi in range(batch):
            h = list(h0[d][bi]) if h0 else [0.0] * hid
            c = list(c0[d][bi]) if c0 else [0.0] * hid
            n = lens[bi] if lens else seq
            steps = range(n - 1, -1, -1) if rev else range(n)
            for t in steps:
                xt = x[t][bi]
                xw = [dot(w[d][g], xt) + wb[g] for g in range(gates * hid)]
                hr = [dot(r[d][g], h) + rb[g] for g in range(gates * hid)]
                act = lambda k, v: activation(f[k][0], f[k][1], f[k][2], cl(v))
                if op == "RNN":
                    h = [act(0, xw[j] + hr[j]) for j in range(hid)]
                elif op == "GRU":
                    z = [act(0, xw[j] + hr[j]) for j in range(hid)]
                    rg = [act(0, xw[hid + j] + hr[hid + j]) for j in range(hid)]
                    if lbr:
                        hh = [act(1, xw[2 * hid + j] + rg[j] * hr[2 * hid + j]) for j in range(hid)]
                    else:
                        rh = [rg[j] * h[j] for j in range(hid)]
                        hh = [act(1, xw[2 * hid + j] + dot(r[d][2 * hid + j], rh) + rb[2 * hid + j])
                              for j in range(hid)]
                    h = [(1 - z[j]) * hh[j] + z[j] * h[j] for j in range(hid)]
                else:
                    pi = p[d][:hid] if p else [0.0] * hid
                    po = p[d][hid:2 * hid] if p else [0.0] * hid
                    pf = p[d][2 * hid:] if p else [0.0] * hid
                    i = [act(0, xw[j] + hr[j] + pi[j] * c[j]) for j in range(hid)]
                    fg = [act(0, xw[2 * hid + j] + hr[2 * hid + j] + pf[j] * c[j]) for j in range(hid)]
                    cc = [act(1, xw[3 * hid + j] + hr[3 * hid + j]) for j in range(hid)]
                    c = [fg[j] * c[j] + i[j] * cc[j] for j in range(hid)]
                    o = [act(0, xw[hid + j] + hr[hid + j] + po[j] * c[j]) for j in range(hid)]
                    h = [o[j] * activation(f[2][0], f[2][1], f[2][2], c[j]) for j in range(hid)]
                ys[t][d][bi] = h
            hs.append(h)
            cs.append(c)
        yh.append(hs)
        yc.append(cs)
    return ys, yh, yc


def flat(v):
    return [a for u in v for a in flat(u)] if isinstance(v, list) else [v]


def nest(values, dims):
    if not dims:
        return values[0]
    step = len(values) // dims[0]
    return [nest(values[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]


def recurrent_tests(out):
    def case(name, op, seq, batch, inp, hid, direction="forward", acts=None, alphas=(),
             betas=(), clip=None, lbr=0, layout=0, bias=True, states=False, peep=False,
             lens=None, seed=1):
        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
        dirs = 2 if direction == "bidirectional" else 1
        per = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
        names = acts or {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                         "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[op] * dirs
        al, be = list(alphas), list(betas)
        parsed = []
        for nm in names:
            a = al.pop(0) if nm in ("LeakyRelu", "HardSigmoid", "ScaledTanh", "Affine") else 0.0
            bb = be.pop(0) if nm in ("HardSigmoid", "ScaledTanh", "Affine") else 0.0
            parsed.append((nm, a, bb))
        acts_d = [parsed[d * per:(d + 1) * per] for d in range(dirs)]
        xv = rand_floats(seed, seq * batch * inp, 1.0)
        wv = rand_floats(seed + 1, dirs * gates * hid * inp, 0.5)
        rv = rand_floats(seed + 2, dirs * gates * hid * hid, 0.5)
        bv = rand_floats(seed + 3, dirs * 2 * gates * hid, 0.3)
        hv = rand_floats(seed + 4, dirs * batch * hid, 0.5)
        cv = rand_floats(seed + 5, dirs * batch * hid, 0.5)
        pv = rand_floats(seed + 6, dirs * 3 * hid, 0.5)
        x = nest(xv, [seq, batch, inp])
        ys, yh, yc = recurrent_reference(
            op, x, nest(wv, [dirs, gates * hid, inp]), nest(rv, [dirs, gates * hid, hid]),
            nest(bv, [dirs, 2 * gates * hid]) if bias else None, lens,
            nest(hv, [dirs, batch, hid]) if states else None,
            nest(cv, [dirs, batch, hid]) if states else None,
            nest(pv, [dirs, 3 * hid]) if peep else None, direction, acts_d, clip, lbr)
        def lay(v, dims, perm):  # layout 1: the batch dim first
            if layout == 0:
                return flat(v), dims
            import itertools
            src = flat(v)
            strides = [1] * len(dims)
            for i in range(len(dims) - 2, -1, -1):
                strides[i] = strides[i + 1] * dims[i + 1]
            nd = [dims[q] for q in perm]
            vals = [src[sum(idx[k] * strides[perm[k]] for k in range(len(perm)))]
                    for idx in itertools.product(*[range(n) for n in nd])]
            return vals, nd
        xl, xd = lay(x, [seq, batch, inp], [1, 0, 2])
        yl, yd = lay(ys, [seq, dirs, batch, hid], [2, 0, 1, 3])
        hl, hd = lay(yh, [dirs, batch, hid], [1, 0, 2])
        cl_, cd = lay(yc, [dirs, batch, hid], [1, 0, 2])
        h0l, h0d = lay(nest(hv, [dirs, batch, hid]), [dirs, batch, hid], [1, 0, 2])
        c0l, _ = lay(nest(cv, [dirs, batch, hid]), [dirs, batch, hid], [1, 0, 2])
        ins = ["x", "w", "r", "b" if bias else "", "lens" if lens else "",
               "h0" if states else ""]
        inits = [tensor("w", FLOAT, [dirs, gates * hid, inp], wv),
                 tensor("r", FLOAT, [dirs, gates * hid, hid], rv)]
        if bias:
            inits.append(tensor("b", FLOAT, [dirs, 2 * gates * hid], bv))
        if states:
            inits.append(tensor("h0", FLOAT, h0d, h0l))
        outs = ["y", "yh"]
        outs_vi = [("y", FLOAT, yd), ("yh", FLOAT, hd)]
        expected = [tensor("y", FLOAT, yd, yl), tensor("yh", FLOAT, hd, hl)]
        if op == "LSTM":
            ins += ["c0" if states else "", "p" if peep else ""]
            if states:
                inits.append(tensor("c0", FLOAT, h0d, c0l))
            if peep:
                inits.append(tensor("p", FLOAT, [dirs, 3 * hid], pv))
            outs.append("yc")
            outs_vi.append(("yc", FLOAT, cd))
            expected.append(tensor("yc", FLOAT, cd, cl_))
        while ins and not ins[-1]:
            ins.pop()
        attrs = attr_int("hidden_size", hid) + attr_string("direction", direction)
        if acts:
            attrs += attr_strings("activations", acts)
        if alphas:
            attrs += attr_floats("activation_alpha", list(alphas))
        if betas:
            attrs += attr_floats("activation_beta", list(betas))
        if clip:
            attrs += attr_float("clip", clip)
        if lbr:
            attrs += attr_int("linear_before_reset", lbr)
        if layout:
            attrs += attr_int("layout", layout)
        graph_in = [("x", FLOAT, xd)] + ([("lens", INT32, [batch])] if lens else [])
        m = model([node(op, ins, outs, name, attrs)], inits, graph_in, outs_vi, opset=14)
        feeds = [tensor("x", FLOAT, xd, xl)] + ([tensor("lens", INT32, [batch], lens)] if lens else [])
        backend_test(out, name, m, feeds, expected)
        return m

    case("lstm_bidir_peep", "LSTM", 5, 3, 4, 6, direction="bidirectional", states=True,
         peep=True, seed=21)
    case("gru_reverse_acts", "GRU", 6, 2, 3, 5, direction="reverse",
         acts=["HardSigmoid", "LeakyRelu"], alphas=(0.3, 0.2), betas=(0.45,), seed=31)
    case("gru_lbr_clip", "GRU", 4, 2, 3, 4, direction="bidirectional", lbr=1, clip=0.8,
         states=True, seed=41)
    case("rnn_ragged_batchwise", "RNN", 5, 3, 4, 3, acts=["ScaledTanh"], alphas=(1.5,),
         betas=(0.7,), layout=1, lens=[5, 2, 1], states=True, seed=51)
    m = case("rnn_reverse_ragged", "RNN", 3, 2, 2, 2, direction="reverse", lens=[3, 1], seed=61)
    open(os.path.join(out, "rnn_reverse_ragged.onnx"), "wb").write(m)


def einsum_reference(terms, out, operands):
    """sum over every index assignment of the product of the operands'
    elements (each operand: (flat values, dims); a dim of 1 broadcasts)."""
    extent = {}
    for t, (_, dims) in zip(terms, operands):
        for c, d in zip(t, dims):
            extent[c] = max(extent.get(c, 1), d)
    letters = sorted(extent)
    out_dims = [extent[c] for c in out]
    result = [0.0] * max(1, math.prod(out_dims))
    for assign in itertools.product(*(range(extent[c]) for c in letters)):
        at = dict(zip(letters, assign))
        prod = 1.0
        for t, (vals, dims) in zip(terms, operands):
            f = 0
            for c, d in zip(t, dims):
                f = f * d + (at[c] if d > 1 else 0)
            prod *= vals[f]
        o = 0
        for c, d in zip(out, out_dims):
            o = o * d + at[c]
        result[o] += prod
    return result, out_dims


def dft_reference(x, dims, axis, length, inverse, onesided):
    """ONNX DFT of flat x ([..., c], c 1 or 2) along `axis`."""
    c = dims[-1]
    sig = dims[:-1]
    n = sig[axis]
    bins = length // 2 + 1 if onesided else length
    odims = sig[:axis] + [bins] + sig[axis + 1:]
    out = []
    for idx in itertools.product(*(range(d) for d in odims)):
        acc = 0j
        for i in range(min(n, length)):
            src = list(idx)
            src[axis] = i
            f = 0
            for s, d in zip(src, sig):
                f = f * d + s
            z = complex(x[f * c], x[f * c + 1] if c == 2 else 0.0)
            acc += z * cmath.exp((1 if inverse else -1) * 2j * math.pi * idx[axis] * i / length)
        if inverse:
            acc /= length
        out += [acc.real, acc.imag]
    return out, odims + [2]


def more_op_tests(out):
    def f32(vals):
        return [struct.unpack("<f", struct.pack("<f", v))[0] for v in vals]

    # Einsum.
    def einsum_case(name, equation, ref_terms, ref_out, shapes, seed):
        ins = [f"x{i}" for i in range(len(shapes))]
        vals = [f32(rand_floats(seed + i, math.prod(d), 1.0)) for i, d in enumerate(shapes)]
        y, ydims = einsum_reference(ref_terms, ref_out, list(zip(vals, shapes)))
        m = model([node("Einsum", ins, ["y"], name, attr_string("equation", equation))], [],
                  [(n, FLOAT, d) for n, d in zip(ins, shapes)], [("y", FLOAT, ydims)], opset=12)
        backend_test(out, name, m, [tensor(n, FLOAT, d, v) for n, d, v in zip(ins, shapes, vals)],
                     [tensor("y", FLOAT, ydims, f32(y))])

    # '...' broadcast across operands ([2, 1] against [5]).
    einsum_case("einsum_ellipsis", "...ij,...jk->...ik", ["xyij", "yjk"], "xyik",
                [[2, 1, 3, 4], [5, 4, 2]], 71)
    einsum_case("einsum_diagonal", "bii,bj->bij", ["bii", "bj"], "bij", [[2, 3, 3], [2, 4]], 73)
    einsum_case("einsum_three", "ij,jk,kl->li", ["ij", "jk", "kl"], "li",
                [[3, 4], [4, 5], [5, 2]], 75)
    einsum_case("einsum_implicit", "kj,ji", ["kj", "ji"], "ik", [[3, 4], [4, 2]], 77)
    einsum_case("einsum_trace_implicit", "ii", ["ii"], "", [[4, 4]], 79)
    einsum_case("einsum_ellipsis_implicit", "...j,j...", ["xyj", "jxy"], "xy",
                [[2, 3, 4], [4, 2, 3]], 81)

    # DFT.
    def dft_case(name, dims, axis, length, inverse, onesided, opset, seed):
        x = f32(rand_floats(seed, math.prod(dims), 1.0))
        y, ydims = dft_reference(x, dims, axis, length or dims[axis], inverse, onesided)
        ins, inits, attrs = ["x"], [], attr_int("inverse", inverse) + attr_int("onesided", onesided)
        ins.append("len" if length else "")
        if length:
            inits.append(tensor("len", INT64, [], [length]))
        if opset >= 20:
            ins.append("axis")
            inits.append(tensor("axis", INT64, [], [axis]))
        else:
            attrs += attr_int("axis", axis)
        while ins[-1] == "":
            ins.pop()
        m = model([node("DFT", ins, ["y"], name, attrs)], inits, [("x", FLOAT, dims)],
                  [("y", FLOAT, ydims)], opset=opset)
        backend_test(out, name, m, [tensor("x", FLOAT, dims, x)], [tensor("y", FLOAT, ydims, f32(y))])

    # Complex [3, 5, 2] along axis 0, padded to 4 points; an inverse along
    # axis 1 of a real [2, 6, 3, 1] cut to 5; one-sided over 7 (odd) at
    # opset 20 with the axis as an input.
    dft_case("dft_complex_axis0_pad", [3, 5, 2], 0, 4, 0, 0, 17, 83)
    dft_case("dft_inverse_cut", [2, 6, 3, 1], 1, 5, 1, 0, 17, 85)
    dft_case("dft_onesided_opset20", [2, 7, 2], 1, None, 0, 1, 20, 87)

    # STFT of a complex [2, 11, 2] signal: frames of 4 every 3 samples,
    # weighted by a run-time window, two-sided.
    batch, length, step, frame = 2, 11, 3, 4
    x = f32(rand_floats(89, batch * length * 2, 1.0))
    win = f32(rand_floats(91, frame, 1.0))
    frames = 1 + (length - frame) // step
    y = []
    for b in range(batch):
        for t in range(frames):
            for k in range(frame):
                acc = 0j
                for i in range(frame):
                    f = (b * length + t * step + i) * 2
                    acc += win[i] * complex(x[f], x[f + 1]) * cmath.exp(-2j * math.pi * k * i / frame)
                y += [acc.real, acc.imag]
    ydims = [batch, frames, frame, 2]
    m = model([node("STFT", ["x", "step", "win"], ["y"], "stft_window_input",
                    attr_int("onesided", 0))], [tensor("step", INT64, [], [step])],
              [("x", FLOAT, [batch, length, 2]), ("win", FLOAT, [frame])], [("y", FLOAT, ydims)],
              opset=17)
    backend_test(out, "stft_window_input", m,
                 [tensor("x", FLOAT, [batch, length, 2], x), tensor("win", FLOAT, [frame], win)],
                 [tensor("y", FLOAT, ydims, f32(y))])

    # ReverseSequence: batch-major [3, 5, 2] with the lengths a graph input.
    dims, lens = [3, 5, 2], [5, 1, 3]
    x = f32(rand_floats(93, math.prod(dims), 1.0))
    y = []
    for b in range(3):
        for t in range(5):
            src = lens[b] - 1 - t if t < lens[b] else t
            y += x[(b * 5 + src) * 2:(b * 5 + src) * 2 + 2]
    m = model([node("ReverseSequence", ["x", "lens"], ["y"], "reverse_batch_major",
                    attr_int("time_axis", 1) + attr_int("batch_axis", 0))], [],
              [("x", FLOAT, dims), ("lens", INT64, [3])], [("y", FLOAT, dims)], opset=10)
    backend_test(out, "reverse_sequence_runtime", m,
                 [tensor("x", FLOAT, dims, x), tensor("lens", INT64, [3], lens)],
                 [tensor("y", FLOAT, dims, y)])

    # Scatters whose indices repeat, reduced: ScatterElements max along axis
    # 1, ScatterND min, ScatterElements mul (opset 18).
    data = f32(rand_floats(95, 12, 2.0))
    upd = f32(rand_floats(97, 6, 2.0))
    idx = [1, 1, 3, 0, 0, 0]  # [3, 2] into [3, 4] along axis 1
    def elements(op):
        y = list(data)
        for r in range(3):
            for j in range(2):
                f = r * 4 + idx[r * 2 + j]
                y[f] = op(y[f], upd[r * 2 + j])
        return y
    for name, red, op in [("scatter_max_dups", "max", max), ("scatter_mul_dups", "mul",
                                                             lambda a, b: a * b)]:
        m = model([node("ScatterElements", ["d", "i", "u"], ["y"], name,
                        attr_int("axis", 1) + attr_string("reduction", red))],
                  [tensor("i", INT64, [3, 2], idx)], [("d", FLOAT, [3, 4]), ("u", FLOAT, [3, 2])],
                  [("y", FLOAT, [3, 4])], opset=18)
        backend_test(out, name, m, [tensor("d", FLOAT, [3, 4], data), tensor("u", FLOAT, [3, 2], upd)],
                     [tensor("y", FLOAT, [3, 4], f32(elements(op)))])
    # ScatterND min: rows [2, 0, 2] of a [3, 4] (row 2 twice).
    rows = [2, 0, 2]
    upd3 = f32(rand_floats(99, 12, 2.0))
    y = list(data)
    for t, r in enumerate(rows):
        for j in range(4):
            y[r * 4 + j] = min(y[r * 4 + j], upd3[t * 4 + j])
    m = model([node("ScatterND", ["d", "i", "u"], ["y"], "scatternd_min_dups",
                    attr_string("reduction", "min"))],
              [tensor("i", INT64, [3, 1], rows)], [("d", FLOAT, [3, 4]), ("u", FLOAT, [3, 4])],
              [("y", FLOAT, [3, 4])], opset=18)
    backend_test(out, "scatternd_min_dups", m,
                 [tensor("d", FLOAT, [3, 4], data), tensor("u", FLOAT, [3, 4], upd3)],
                 [tensor("y", FLOAT, [3, 4], y)])


def grid_sample_reference(x, xd, grid, gd, mode, padding, align):
    """GridSample by its definition: per output point, the taps of each
    spatial dim (unnormalized, brought inside by the padding mode), their
    weights, and the sum over one tap a dim."""
    n_, c_ = xd[0], xd[1]
    sp = xd[2:]
    r = len(sp)
    outsp = gd[1:-1]

    def reflect(v, lo, hi):
        rng = hi - lo
        if v < lo:
            d = lo - v
            k = int(d / rng)
            rest = d - k * rng
            return lo + rest if k % 2 == 0 else hi - rest
        if v > hi:
            d = v - hi
            k = int(d / rng)
            rest = d - k * rng
            return hi - rest if k % 2 == 0 else lo + rest
        return v

    def cubic(t):
        a = -0.75
        def near(s):
            return ((a + 2) * s - (a + 3)) * s * s + 1
        def far(s):
            return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    y = []
    for n in range(n_):
        for c in range(c_):
            for o in itertools.product(*(range(d) for d in outsp)):
                g0 = n
                for oi, od in zip(o, outsp):
                    g0 = g0 * od + oi
                per = []
                for d in range(r):
                    size = sp[d]
                    v = grid[g0 * r + (r - 1 - d)]
                    p = (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2
                    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
                    if p < lo or p > hi:
                        if padding == "border":
                            p = min(max(p, 0), size - 1)
                        elif padding == "reflection":
                            p = reflect(p, lo, hi)
                    if mode == "nearest":
                        t = round(p) if r == 2 else math.floor(abs(p) + 0.5) * (1 if p >= 0 else -1)
                        taps = [(t, 1.0)]
                    else:
                        b = math.floor(p)
                        f = p - b
                        if mode == "linear":
                            taps = [(b, 1 - f), (b + 1, f)]
                        else:
                            taps = list(zip(range(b - 1, b + 3), cubic(f)))
                    fixed = []
                    for t, w in taps:
                        if padding == "zeros":
                            fixed.append((t, w if 0 <= t < size else 0.0))
                        elif padding == "border":
                            fixed.append((min(max(t, 0), size - 1), w))
                        else:
                            fixed.append((int(reflect(t, lo, hi)), w))
                    per.append(fixed)
                acc = 0.0
                for combo in itertools.product(*per):
                    f = n * c_ + c
                    w = 1.0
                    for (t, tw), size in zip(combo, sp):
                        f = f * size + min(max(t, 0), size - 1)
                        w *= tw
                    acc += w * x[f]
                y.append(acc)
    return y, [n_, c_] + list(outsp)


def grid_sample_tests(out):
    def f32(vals):
        return [struct.unpack("<f", struct.pack("<f", v))[0] for v in vals]

    def case(name, xd, outsp, mode, padding, align, opset, spread, seed):
        r = len(xd) - 2
        gd = [xd[0]] + outsp + [r]
        x = f32(rand_floats(seed, math.prod(xd), 1.0))
        grid = f32(rand_floats(seed + 1, math.prod(gd), spread))
        y, yd = grid_sample_reference(x, xd, grid, gd, mode, padding, align)
        m = model([node("GridSample", ["x", "grid"], ["y"], name,
                        attr_string("mode", mode if opset >= 20 else
                                    {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode))
                        + attr_string("padding_mode", padding) + attr_int("align_corners", align))],
                  [], [("x", FLOAT, xd), ("grid", FLOAT, gd)], [("y", FLOAT, yd)], opset=opset)
        backend_test(out, name, m, [tensor("x", FLOAT, xd, x), tensor("grid", FLOAT, gd, grid)],
                     [tensor("y", FLOAT, yd, f32(y))])

    # Points up to 3.5 ranges outside (several reflections either way).
    case("gridsample_cubic_reflection", [2, 2, 4, 5], [3, 4], "cubic", "reflection", 0, 16, 3.5, 101)
    case("gridsample_nearest_reflection", [1, 3, 5, 3], [4, 2], "nearest", "reflection", 1, 16, 2.5, 103)
    case("gridsample_3d_linear_border", [1, 2, 3, 4, 5], [2, 3, 2], "linear", "border", 0, 20, 1.4, 105)
    case("gridsample_cubic_zeros_aligned", [1, 2, 6, 5], [5, 3], "cubic", "zeros", 1, 16, 1.3, 107)
    case("gridsample_3d_nearest_zeros", [2, 1, 3, 3, 4], [2, 2, 3], "nearest", "zeros", 0, 20, 1.2, 109)


def roi_align_reference(x, xd, rois, batch, oh, ow, ratio, scale, half, mode):
    """RoiAlign by its definition (ONNX's operator text and reference)."""
    n, c, h, w = xd
    out = []
    for r in range(len(batch)):
        off = 0.5 if half else 0.0
        x1, y1, x2, y2 = [v * scale - off for v in rois[4 * r:4 * r + 4]]
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(math.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(math.ceil(rw / ow))
        count = max(gh * gw, 1)
        for ch in range(c):
            base = (batch[r] * c + ch) * h * w
            for ph in range(oh):
                for pw in range(ow):
                    acc = None
                    for iy in range(gh):
                        yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                            if yy < -1.0 or yy > h or xx < -1.0 or xx > w:
                                taps = [0.0] * 4
                            else:
                                y, xq = max(yy, 0.0), max(xx, 0.0)
                                yl, xl = int(y), int(xq)
                                if yl >= h - 1:
                                    yl = yh = h - 1
                                    y = float(yl)
                                else:
                                    yh = yl + 1
                                if xl >= w - 1:
                                    xl = xh = w - 1
                                    xq = float(xl)
                                else:
                                    xh = xl + 1
                                ly, lx = y - yl, xq - xl
                                hy, hx = 1 - ly, 1 - lx
                                taps = [hy * hx * x[base + yl * w + xl], hy * lx * x[base + yl * w + xh],
                                        ly * hx * x[base + yh * w + xl], ly * lx * x[base + yh * w + xh]]
                            if mode == "avg":
                                acc = (acc or 0.0) + sum(taps)
                            else:
                                acc = max(taps) if acc is None else max(acc, max(taps))
                    acc = acc or 0.0
                    out.append(acc / count if mode == "avg" else acc)
    return out


def roi_align_tests(out):
    def f32(vals):
        return [struct.unpack("<f", struct.pack("<f", v))[0] for v in vals]

    def case(name, xd, rois, batch, oh, ow, ratio, scale, transform, mode, opset, seed,
             known_rois=False):
        x = f32(rand_floats(seed, math.prod(xd), 2.0))
        rois = f32(rois)
        r = len(batch)
        yd = [r, xd[1], oh, ow]
        attrs = (attr_int("output_height", oh) + attr_int("output_width", ow)
                 + attr_int("sampling_ratio", ratio) + attr_float("spatial_scale", scale)
                 + attr_string("mode", mode))
        if transform:
            attrs += attr_string("coordinate_transformation_mode", transform)
        half = (transform or ("half_pixel" if opset >= 16 else "output_half_pixel")) == "half_pixel"
        scale32 = f32([scale])[0]
        y = f32(roi_align_reference(x, xd, rois, batch, oh, ow, ratio, scale32, half, mode))
        inits = [tensor("rois", FLOAT, [r, 4], rois)] if known_rois else []
        inputs = [("x", FLOAT, xd)] + ([] if known_rois else [("rois", FLOAT, [r, 4])]) + [
            ("batch", INT64, [r])]
        m = model([node("RoiAlign", ["x", "rois", "batch"], ["y"], name, attrs)], inits, inputs,
                  [("y", FLOAT, yd)], opset=opset)
        data = [tensor("x", FLOAT, xd, x)]
        if not known_rois:
            data.append(tensor("rois", FLOAT, [r, 4], rois))
        data.append(tensor("batch", INT64, [r], batch))
        backend_test(out, name, m, data, [tensor("y", FLOAT, yd, y)])
        return m

    # Regions inside, partly outside (points past -1 read 0) and wholly
    # outside; batch indices out of order; the old (opset 10) coordinates.
    case("roialign_max_outside", [2, 3, 6, 7],
         [0.5, 1.0, 4.2, 5.1, -3.0, -2.5, 2.0, 1.5, 8.0, 7.5, 11.0, 9.0, 1.0, 0.0, 6.5, 2.0],
         [1, 0, 1, 0], 3, 2, 2, 1.0, None, "max", 10, 201)
    case("roialign_avg_scaled", [1, 2, 9, 8],
         [2.0, 3.0, 13.0, 15.0, 0.0, 0.0, 15.5, 17.0, 5.0, 5.0, 5.0, 5.0],
         [0, 0, 0], 2, 3, 3, 0.5, "half_pixel", "avg", 16, 203)
    # sampling_ratio 0: the grid from each (known) region, one of zero size.
    case("roialign_adaptive_avg", [2, 2, 10, 9],
         [0.0, 0.0, 8.0, 9.0, 1.5, 2.0, 4.0, 3.0, 3.0, 3.0, 3.0, 3.0],
         [0, 1, 1], 2, 2, 0, 1.0, "half_pixel", "avg", 16, 205, known_rois=True)
    case("roialign_adaptive_max", [1, 3, 8, 8],
         [0.0, 0.5, 7.0, 6.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 3.5, 7.5],
         [0, 0, 0], 3, 2, 0, 1.0, "half_pixel", "max", 16, 207, known_rois=True)
    # ... which run-time regions cannot give.
    m = case("roialign_adaptive_runtime_data", [1, 1, 4, 4], [0.0, 0.0, 3.0, 3.0], [0], 2, 2, 0,
             1.0, "half_pixel", "avg", 16, 209)
    open(os.path.join(out, "roialign_adaptive_runtime.onnx"), "wb").write(m)


def max_unpool_tests(out):
    def f32(vals):
        return [struct.unpack("<f", struct.pack("<f", v))[0] for v in vals]

    def case(name, xd, kernel, strides, pads, out_shape, seed, known=None):
        n = len(kernel)
        inferred = xd[:2] + [(xd[2 + d] - 1) * strides[d] + kernel[d]
                             - (0 if out_shape else pads[d] + pads[n + d]) for d in range(n)]
        x = f32(rand_floats(seed, math.prod(xd), 3.0))
        rng = lcg(seed + 1, 4 * math.prod(xd), 0, 1 << 20)
        if known is None:
            # MaxPool's indices: a position inside each window (and the output).
            idx = []
            for i, pos in enumerate(itertools.product(*[range(v) for v in xd])):
                flat = pos[0] * xd[1] + pos[1]
                for d in range(n):
                    p = pads[d] if not out_shape else 0
                    lo = max(0, pos[2 + d] * strides[d] - p)
                    hi = min(inferred[2 + d], pos[2 + d] * strides[d] - p + kernel[d])
                    flat = flat * inferred[2 + d] + lo + rng[i * n + d] % (hi - lo)
                idx.append(flat)
        else:
            idx = known
        y = [0.0] * math.prod(inferred)
        for i, j in enumerate(idx):
            y[j] = x[i]
        yd = inferred
        if out_shape:
            yd = out_shape
            big = [0.0] * math.prod(yd)
            for pos in itertools.product(*[range(v) for v in inferred]):
                a = b = 0
                for d in range(len(yd)):
                    a = a * inferred[d] + pos[d]
                    b = b * yd[d] + pos[d]
                big[b] = y[a]
            y = big
        attrs = attr_ints("kernel_shape", kernel) + attr_ints("strides", strides) + attr_ints(
            "pads", pads)
        ins = ["x", "i"] + (["shape"] if out_shape else [])
        inits = ([tensor("shape", INT64, [len(yd)], yd)] if out_shape else []) + (
            [tensor("i", INT64, xd, idx)] if known else [])
        inputs = [("x", FLOAT, xd)] + ([] if known else [("i", INT64, xd)])
        m = model([node("MaxUnpool", ins, ["y"], name, attrs)], inits, inputs, [("y", FLOAT, yd)],
                  opset=11)
        data = [tensor("x", FLOAT, xd, x)] + ([] if known else [tensor("i", INT64, xd, idx)])
        backend_test(out, name, m, data, [tensor("y", FLOAT, yd, y)])

    case("maxunpool_overlap_pads", [2, 2, 4, 5], [3, 3], [2, 2], [1, 0, 0, 1], None, 301)
    case("maxunpool_1d_output_shape", [1, 2, 4], [3], [1], [0, 0], [1, 2, 9], 303)
    # Known indices anywhere, with duplicates (the later write wins).
    case("maxunpool_known_dups", [2, 1, 3], [2], [2], [0, 0], [2, 1, 8], 305,
         known=[3, 0, 3, 11, 6, 7])


def attr_tensor(name, t):
    return ld(5, ld(1, name) + ld(5, t) + vi(20, 4))


def lazy_splat_tests(out):
    def f32(v):
        return struct.unpack("<f", struct.pack("<f", v))[0]

    # (x + 1.5) * 2 over [8, 64, 96]: ConstantOfShape and Expand of a scalar.
    dims = [8, 64, 96]
    x = [f32(v) for v in rand_floats(401, math.prod(dims), 2.0)]
    y = [f32(f32(v + 1.5) * 2.0) for v in x]
    m = model([node("ConstantOfShape", ["shp"], ["c"], "cos",
                    attr_tensor("value", tensor("v", FLOAT, [1], [1.5]))),
               node("Add", ["x", "c"], ["s"], "add"),
               node("Expand", ["two", "shp"], ["e"], "expand"),
               node("Mul", ["s", "e"], ["y"], "mul")],
              [tensor("shp", INT64, [3], dims), tensor("two", FLOAT, [], [2.0])],
              [("x", FLOAT, dims)], [("y", FLOAT, dims)])
    backend_test(out, "splat_mixed", m, [tensor("x", FLOAT, dims, x)],
                 [tensor("y", FLOAT, dims, y)])

    # x + Cos(Erf(ConstantOfShape(0.5))) * Max(ConstantOfShape(0.5),
    # Expand(2)) over [8, 64, 96]: elementwise ops of splats fold once, on
    # their scalars (one splat literal, no fusec.erf or fusec.cos).
    c = f32(math.cos(f32(math.erf(0.5))))
    y = [f32(v + f32(c * 2.0)) for v in x]
    m = model([node("ConstantOfShape", ["shp"], ["h"], "cos",
                    attr_tensor("value", tensor("v", FLOAT, [1], [0.5]))),
               node("Erf", ["h"], ["eh"], "erf"), node("Cos", ["eh"], ["ch"], "cosine"),
               node("Expand", ["two", "shp"], ["e"], "expand"),
               node("Max", ["h", "e"], ["mx"], "max"), node("Mul", ["ch", "mx"], ["k"], "mul"),
               node("Add", ["x", "k"], ["y"], "add")],
              [tensor("shp", INT64, [3], dims), tensor("two", FLOAT, [], [2.0])],
              [("x", FLOAT, dims)], [("y", FLOAT, dims)])
    backend_test(out, "splat_elementwise", m, [tensor("x", FLOAT, dims, x)],
                 [tensor("y", FLOAT, dims, y)])

    # x + ReduceSum(Cast(ConstantOfShape([64, 128], 3)), axis 1): folded
    # at import (384 each).
    x = [f32(v) for v in rand_floats(403, 64, 2.0)]
    m = model([node("ConstantOfShape", ["shp"], ["ci"], "cos",
                    attr_tensor("value", tensor("v", INT64, [1], [3]))),
               node("Cast", ["ci"], ["cf"], "cast", attr_int("to", FLOAT)),
               node("ReduceSum", ["cf", "axes"], ["r"], "sum", attr_int("keepdims", 0)),
               node("Add", ["x", "r"], ["y"], "add")],
              [tensor("shp", INT64, [2], [64, 128]), tensor("axes", INT64, [1], [1])],
              [("x", FLOAT, [64])], [("y", FLOAT, [64])])
    backend_test(out, "splat_folded", m, [tensor("x", FLOAT, [64], x)],
                 [tensor("y", FLOAT, [64], [f32(v + 384.0) for v in x])])

    # x + Cast<uint8>(ConstantOfShape([80, 64], 300)) in uint8: 300 wraps
    # to 44, and the sum wraps again.
    dims = [80, 64]
    x = [int(v) % 256 for v in lcg(405, math.prod(dims), 0, 256)]
    m = model([node("ConstantOfShape", ["shp"], ["c"], "cos",
                    attr_tensor("value", tensor("v", INT64, [1], [300]))),
               node("Cast", ["c"], ["c8"], "cast", attr_int("to", UINT8)),
               node("Add", ["x", "c8"], ["y"], "add")],
              [tensor("shp", INT64, [2], dims)], [("x", UINT8, dims)], [("y", UINT8, dims)])
    backend_test(out, "splat_wrap_uint8", m, [tensor("x", UINT8, dims, x)],
                 [tensor("y", UINT8, dims, [(v + 44) % 256 for v in x])])

    # Compress by an all-true splat of 5000 and Gather by a [70, 70] splat
    # of index 3: importers that read the splat's elements.
    x = [f32(v) for v in rand_floats(407, 5000, 2.0)]
    m = model([node("ConstantOfShape", ["n"], ["cond"], "cos_cond",
                    attr_tensor("value", tensor("v", BOOL, [1], [1]))),
               node("Compress", ["x", "cond"], ["y0"], "compress", attr_int("axis", 0)),
               node("ConstantOfShape", ["shp"], ["idx"], "cos_idx",
                    attr_tensor("value", tensor("v", INT64, [1], [3]))),
               node("Gather", ["x", "idx"], ["y1"], "gather")],
              [tensor("n", INT64, [1], [5000]), tensor("shp", INT64, [2], [70, 70])],
              [("x", FLOAT, [5000])], [("y0", FLOAT, [5000]), ("y1", FLOAT, [70, 70])])
    backend_test(out, "splat_read", m, [tensor("x", FLOAT, [5000], x)],
                 [tensor("y0", FLOAT, [5000], x), tensor("y1", FLOAT, [70, 70], [x[3]] * 4900)])


if __name__ == "__main__":
    main()
