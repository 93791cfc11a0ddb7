#!/usr/bin/env python3
"""Prints how many kernels a PTX file has and whether each takes at most 256
parameters (the cap fusion keeps to, kMaxKernelParams): "at most 256
parameters, N kernels", or the largest count past it."""
import re
import sys

text = open(sys.argv[1]).read()
kernels = re.split(r"\.visible \.entry ", text)[1:]
counts = [len(set(re.findall(r"_param_(\d+)", k.split("{", 1)[0]))) for k in kernels]
largest = max(counts) if counts else 0
if largest <= 256:
    print(f"at most 256 parameters, {len(counts)} kernels")
else:
    print(f"a kernel of {largest} parameters, {len(counts)} kernels")
