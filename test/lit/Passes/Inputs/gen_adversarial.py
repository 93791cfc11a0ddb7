#!/usr/bin/env python3
"""Adversarial graph shapes for fusec-fuse and code generation (issue #19):
`chain N` is N alternating neg/tanh ops in one dependence chain; `fan N` is
one input read by N multiplies whose results are summed in a chain (a use
list of N); `concat N` concatenates N arguments of 8x3 (the last 8x5) along
dim 1 and scales the result (one kernel whose elements pick among N parts);
`sum N` adds N arguments in a chain (one kernel of N inputs, before the cap
on a kernel's parameters); `concat-kernel N` is `concat N` already inside
one fusec.kernel (code generation alone: a kernel of N + 1 parameters);
`fan-mixed N SEED` is a random fan-out of N readers of one or two inputs
(multiplies by constants, unary ops, row reductions broadcast back, adds)
consumed by one to three chains after a random lag: past the 1,024-op
kernel cap, fusion's memory replay meets kernels with readers placed before
them, nested and overlapping (the peak's windows)."""
import random
import sys

T = "tensor<8x128xf32>"
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "concat":
    shapes = [3] * (n - 1) + [5]
    total = sum(shapes)
    args = ", ".join(f"%a{i}: tensor<8x{w}xf32>" for i, w in enumerate(shapes))
    R = f"tensor<8x{total}xf32>"
    print(f"func.func @concat({args}) -> {R} {{\n"
          f"  %c = fusec.concat {', '.join(f'%a{i}' for i in range(n))} dim 1 : "
          f"({', '.join(f'tensor<8x{w}xf32>' for w in shapes)}) -> {R}\n"
          f"  %s = fusec.constant dense<2.0> : {R}\n"
          f"  %y = fusec.mul %c, %s : {R}\n"
          f"  return %y : {R}\n}}")
    sys.exit(0)
if kind == "concat-kernel":
    shapes = [3] * (n - 1) + [5]
    total = sum(shapes)
    types = ", ".join(f"tensor<8x{w}xf32>" for w in shapes)
    R = f"tensor<8x{total}xf32>"
    args = ", ".join(f"%a{i}: tensor<8x{w}xf32>" for i, w in enumerate(shapes))
    bargs = ", ".join(f"%b{i}: tensor<8x{w}xf32>" for i, w in enumerate(shapes))
    print(f"func.func @concat_kernel({args}) -> {R} {{\n"
          f"  %r = fusec.kernel \"k0_concat\" ({', '.join(f'%a{i}' for i in range(n))}) : "
          f"({types}) -> {R} {{\n"
          f"  ^bb0({bargs}):\n"
          f"    %c = fusec.concat {', '.join(f'%b{i}' for i in range(n))} dim 1 : ({types}) -> {R}\n"
          f"    fusec.yield %c : {R}\n"
          f"  }}\n"
          f"  return %r : {R}\n}}")
    sys.exit(0)
if kind == "fan-mixed":
    rng = random.Random(int(sys.argv[3]))
    R = "tensor<8xf32>"
    lines = [f"func.func @fan_mixed(%x: {T}, %z: {T}) -> ({T}, {T}) {{"]
    chains = ["%x", "%z", "%x"][:rng.choice([1, 1, 2, 3])]
    hubs = ["%x"] + (["%z"] if rng.random() < 0.5 else [])
    lag = rng.choice([0, 0, 1, 3, 10])
    pending, k = [], 0

    def consume(p):
        global k
        j = rng.randrange(len(chains))
        k += 1
        lines.append(f"  %a{k} = fusec.{rng.choice(['add', 'add', 'mul', 'max'])} "
                     f"{chains[j]}, {p} : {T}")
        chains[j] = f"%a{k}"
        if rng.random() < 0.05:
            k += 1
            lines.append(f"  %t{k} = fusec.tanh %a{k - 1} : {T}")
            chains[j] = f"%t{k}"

    for i in range(n):
        k += 1
        v, h, c = f"%y{k}", rng.choice(hubs), rng.random()
        if c < 0.6:
            lines.append(f"  %c{k} = fusec.constant dense<{i % 7 + 1}.0> : {T}")
            lines.append(f"  {v} = fusec.mul {h}, %c{k} : {T}")
        elif c < 0.8:
            lines.append(f"  {v} = fusec.{rng.choice(['tanh', 'exp', 'neg'])} {h} : {T}")
        elif c < 0.9:
            lines.append(f"  %r{k} = fusec.reduce {rng.choice(['sum', 'max'])} {h} dims [1] : "
                         f"{T} -> {R}")
            lines.append(f"  {v} = fusec.broadcast %r{k} dims [0] : {R} -> {T}")
        else:
            lines.append(f"  {v} = fusec.add {h}, {rng.choice(hubs)} : {T}")
        pending.append(v)
        if rng.random() < 0.01:
            hubs.append(v)
        while len(pending) > lag or (pending and rng.random() < 0.2):
            consume(pending.pop(0))
    while pending:
        consume(pending.pop(0))
    lines.append(f"  return {chains[0]}, {chains[-1]} : {T}, {T}\n}}")
    print("\n".join(lines))
    sys.exit(0)
if kind == "sum":
    args = ", ".join(f"%a{i}: {T}" for i in range(n))
    lines = [f"func.func @sum({args}) -> {T} {{"]
    prev = "%a0"
    for i in range(1, n):
        lines.append(f"  %s{i} = fusec.add {prev}, %a{i} : {T}")
        prev = f"%s{i}"
    lines.append(f"  return {prev} : {T}\n}}")
    print("\n".join(lines))
    sys.exit(0)
lines = [f"func.func @{kind}(%x: {T}) -> {T} {{"]
prev = "%x"
for i in range(n):
    if kind == "chain":
        lines.append(f"  %v{i} = {'fusec.tanh' if i % 2 else 'fusec.neg'} {prev} : {T}")
        prev = f"%v{i}"
    else:
        lines.append(f"  %c{i} = fusec.constant dense<{i + 1}.0> : {T}")
        lines.append(f"  %y{i} = fusec.mul %x, %c{i} : {T}")
        lines.append(f"  %a{i} = fusec.add {prev}, %y{i} : {T}")
        prev = f"%a{i}"
lines.append(f"  return {prev} : {T}\n}}")
print("\n".join(lines))
