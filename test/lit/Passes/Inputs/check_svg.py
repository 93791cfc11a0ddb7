#!/usr/bin/env python3
"""Checks a roofline SVG: well-formed XML, one point (or listed entry) per
kernel of the JSON report, and a faint point per unfused op with FLOPs.

usage: check_svg.py plot.svg report.json
"""
import json
import sys
import xml.dom.minidom


def main():
    doc = xml.dom.minidom.parse(sys.argv[1])  # raises if not well-formed
    report = json.load(open(sys.argv[2]))
    circles = doc.getElementsByTagName("circle")
    texts = doc.getElementsByTagName("text")
    kernels = [c for c in circles if c.getAttribute("class") == "kernel"]
    no_flops = [t for t in texts if t.getAttribute("class") == "kernel-no-flops"]
    unfused = [c for c in circles if c.getAttribute("class") == "unfused"]
    want = len(report["kernels"])
    assert len(kernels) + len(no_flops) == want, (len(kernels), len(no_flops), want)
    with_flops = sum(1 for k in report["kernels"] if k["flops"] > 0)
    assert len(kernels) == with_flops
    want_unfused = sum(1 for k in report["unfused"]["ops"] if k["flops"] > 0)
    assert len(unfused) == want_unfused, (len(unfused), want_unfused)
    assert doc.documentElement.tagName == "svg"
    print(f"svg: OK ({len(kernels)} kernel points, {len(unfused)} unfused points)")


if __name__ == "__main__":
    main()
