#!/usr/bin/env python3
"""Reads a fusec-roofline-report JSON of a fused module: kernels per function,
the chain's bytes per element fused and unfused, and peak memory."""
import json
import sys
from collections import Counter

r = json.load(open(sys.argv[1]))
per_function = Counter(k["function"] for k in r["kernels"])
for f in ("layer_norm", "rms_norm", "softmax", "softmax_outer"):
    print(f"{f}: {per_function[f]} kernel{'s' if per_function[f] != 1 else ''}")
n = 1048576
fused = sum(k["bytes_read"] + k["bytes_written"] for k in r["kernels"] if k["function"] == "chain")
unfused = sum(k["bytes_read"] + k["bytes_written"] for k in r["unfused"]["ops"] if k["function"] == "chain")
print(f"chain: {unfused // n} -> {fused // n} bytes per element")
assert r["totals"]["peak_bytes"] <= r["unfused"]["peak_bytes"], r["totals"]
print("peak memory: fused <= unfused in every function")
