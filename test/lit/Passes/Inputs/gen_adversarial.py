#!/usr/bin/env python3
"""Adversarial graph shapes for fusec-fuse and code generation (issue #19):
`chain N` is N alternating neg/tanh ops in one dependence chain; `fan N` is
one input read by N multiplies whose results are summed in a chain (a use
list of N); `concat N` concatenates N arguments of 8x3 (the last 8x5) along
dim 1 and scales the result (one kernel whose elements pick among N parts);
`sum N` adds N arguments in a chain (one kernel of N inputs, before the cap
on a kernel's parameters); `concat-kernel N` is `concat N` already inside
one fusec.kernel (code generation alone: a kernel of N + 1 parameters)."""
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
