#!/usr/bin/env python3
"""Counts the kernels of a fused module and the ops in each kernel's body;
prints 'kernels: K, largest: L ops, at most M' (exit 1 if L > M)."""
import re
import sys

text = open(sys.argv[1]).read().splitlines()
limit = int(sys.argv[2])
sizes, inside = [], False
for line in text:
    if 'fusec.kernel "' in line:
        sizes.append(0)
        inside = True
    elif inside and "fusec.yield" in line:
        inside = False
    elif inside and re.search(r"= fusec\.", line):
        sizes[-1] += 1
largest = max(sizes) if sizes else 0
print(f"kernels: {len(sizes)}, largest: {largest} ops, {'at most' if largest <= limit else 'more than'} {limit}")
sys.exit(0 if largest <= limit else 1)
