#!/usr/bin/env python3
"""Adversarial graph shapes for fusec-fuse (issue #19): `chain N` is N
alternating neg/tanh ops in one dependence chain; `fan N` is one input read
by N multiplies whose results are summed in a chain (a use list of N)."""
import sys

T = "tensor<8x128xf32>"
kind, n = sys.argv[1], int(sys.argv[2])
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
