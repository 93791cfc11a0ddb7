#!/usr/bin/env python3
"""Checks the seeds' roofline facts in fusec-roofline-report JSON reports.

usage: check_roofline.py b200.json h200.json
"""
import json
import sys


def kernels_of(report, function):
    return [k for k in report["kernels"] if k["function"] == function]


def one(report, function):
    ks = kernels_of(report, function)
    assert len(ks) == 1, (function, ks)
    return ks[0]


def main():
    b200 = json.load(open(sys.argv[1]))
    h200 = json.load(open(sys.argv[2]))
    assert b200["target"] == "b200" and h200["target"] == "h200"
    for r in (b200, h200):
        for key in ("kernels", "totals", "unfused", "roofs"):
            assert key in r, key
        for key in ("kernels", "flops", "bytes", "predicted_us", "peak_bytes"):
            assert key in r["totals"] and key in r["unfused"], key

    # An f32 vector add: 0.083 FLOP/byte, 120x under B200's fp32 ridge of 10.
    add = one(b200, "vector_add")
    assert abs(add["intensity"] - 1 / 12) < 1e-9, add
    assert add["flops"] == 1048576 and add["bytes_read"] + add["bytes_written"] == 12582912
    ridge = b200["roofs"]["ridge_flop_per_byte"]["fp32"]
    assert abs(ridge - 10.0) < 1e-9, ridge
    assert abs(ridge / add["intensity"] - 120) < 1e-6
    assert abs(add["headroom"]["fp32"] - 120) < 1e-6, add["headroom"]
    assert add["bound"] == "hbm"

    # Four elementwise FLOPs: 36 bytes an element unfused, 12 fused, 3x.
    n = 1048576
    unfused = kernels_of(b200, "chain_unfused")
    assert len(unfused) == 4
    assert sum(k["bytes_read"] + k["bytes_written"] for k in unfused) == 36 * n
    fused = one(b200, "chain_fused")
    assert fused["bytes_read"] + fused["bytes_written"] == 12 * n and fused["ops"] == 4
    assert abs(fused["intensity"] / (4 * n / (36 * n)) - 3) < 1e-9

    # Attention, bf16, head dim 128: SFU-bound on B200 or within 10% of it;
    # tensor-bound on H200 with the SFU far from binding.
    att = one(b200, "attention_d128")
    sfu, tensor = att["roof_us"]["sfu"], att["roof_us"]["tensor"]
    assert att["bound"] == "sfu" or (att["bound"] == "tensor" and sfu >= 0.9 * tensor), att
    att = one(h200, "attention_d128")
    assert att["bound"] == "tensor", att
    assert att["roof_us"]["sfu"] < 0.6 * att["roof_us"]["tensor"], att

    # A large bf16 matmul is tensor-bound; layer_norm is hbm-bound.
    for r in (b200, h200):
        assert one(r, "matmul_8192")["bound"] == "tensor"
        assert one(r, "layer_norm")["bound"] == "hbm"
    print("seeds' roofline facts: OK")


if __name__ == "__main__":
    main()
