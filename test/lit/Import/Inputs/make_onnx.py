"""make_onnx.py OUT_DIR: writes small ONNX models for the import tests, with
a protobuf writer of its own (no onnx package needed):

  add_relu.onnx      y = Relu(x + b), b an initializer (opset 13)
  external.onnx      y = x * w, w stored in external.onnx.data
  unsupported.onnx   a node of op type Acosh named 'my_acosh' (opset 13)
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
"""
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


FLOAT, INT64, FLOAT16 = 1, 7, 10


def tensor(name, dtype, dims, values=None, external=None):
    t = b"".join(vi(1, d) for d in dims) + vi(2, dtype) + ld(8, name)
    if external:
        t += ld(13, ld(1, "location") + ld(2, external)) + vi(14, 1)
    elif dtype == FLOAT:
        t += ld(9, struct.pack(f"<{len(values)}f", *values))
    elif dtype == FLOAT16:
        t += ld(9, struct.pack(f"<{len(values)}e", *values))
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
    w("unsupported.onnx", model([node("Acosh", ["x"], ["y"], "my_acosh")], [],
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


if __name__ == "__main__":
    main()
