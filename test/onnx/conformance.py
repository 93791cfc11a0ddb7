#!/usr/bin/env python3
"""Runs `fusec-run --onnx-test` over ONNX backend test folders.

(--one-kernel RE: each passing test matching RE must compile to one kernel.)

  conformance.py FUSEC_RUN DATA_DIR [--jobs N] [--reference] [--filter RE]
                 [--expect EXPECTED.txt] [--write-expected EXPECTED.txt]
                 [--skips SKIPS.txt] [--json OUT.json]

Prints a progress line per test and ends with "N passed, N failed, N
skipped", then each skip with its reason. Exit status: 1 if a test failed
(a mismatch or an error), or if --expect lists a test that did not pass;
else 0. --write-expected records the passing tests; --skips writes the
skipped ones with their reasons (committed: test/onnx/skipped.txt).
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys


def run(fusec_run, path, reference):
    cmd = [fusec_run, f"--onnx-test={path}"] + (["--reference"] if reference else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "fail", "timeout (120 s)", None
    out = (p.stdout + p.stderr).strip()
    m = re.search(r"(\d+) kernel\(s\)", out)
    kernels = int(m.group(1)) if m else None
    if p.returncode == 0:
        return "pass", "", kernels
    if p.returncode == 2 and "unsupported" in out:
        reason = out.splitlines()[-1]
        reason = re.sub(r"^fusec-run: unsupported(?: on the GPU)?: \S*model\.onnx: ", "", reason)
        return "skip", reason, kernels
    return "fail", out.splitlines()[-1] if out else f"exit {p.returncode}", kernels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fusec_run")
    ap.add_argument("data_dir")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--filter", default="")
    ap.add_argument("--expect")
    ap.add_argument("--write-expected")
    ap.add_argument("--skips")
    ap.add_argument("--json")
    ap.add_argument("--one-kernel", default="",
                    help="passing tests matching this regex must compile to one kernel")
    a = ap.parse_args()
    tests = sorted(d for d in os.listdir(a.data_dir)
                   if os.path.isfile(os.path.join(a.data_dir, d, "model.onnx"))
                   and re.search(a.filter, d))
    results = {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(run, a.fusec_run, os.path.join(a.data_dir, t), a.reference): t
                   for t in tests}
        done = 0
        for f in concurrent.futures.as_completed(futures):
            t = futures[f]
            results[t] = f.result()
            done += 1
            status, reason, kernels = results[t]
            extra = f" ({kernels} kernel(s))" if status == "pass" and t.endswith("_expanded") else ""
            print(f"[{done}/{len(tests)}] {status.upper():4s} {t}{extra}"
                  + (f": {reason}" if status == "fail" else ""), flush=True)
    passed = [t for t in tests if results[t][0] == "pass"]
    failed = [t for t in tests if results[t][0] == "fail"]
    skipped = [t for t in tests if results[t][0] == "skip"]
    print(f"\n{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    for t in failed:
        print(f"FAILED {t}: {results[t][1]}")
    print("skipped:")
    for t in skipped:
        print(f"  {t}: {results[t][1]}")
    expanded = [(t, results[t][2]) for t in passed if t.endswith("_expanded")]
    if expanded:
        print("kernels of the passing *_expanded models:")
        for t, k in expanded:
            print(f"  {t}: {k}")
    if a.skips:
        with open(a.skips, "w") as f:
            f.write("# ONNX backend node tests fusec skips, with the reason "
                    "(test/onnx/conformance.py --skips)\n")
            for t in skipped:
                f.write(f"{t}: {results[t][1]}\n")
    if a.write_expected:
        with open(a.write_expected, "w") as f:
            f.write("# ONNX backend node tests that pass on the reference path "
                    "(test/onnx/conformance.py --write-expected)\n")
            for t in passed:
                f.write(t + "\n")
    if a.json:
        json.dump({t: {"status": s, "reason": r, "kernels": k}
                   for t, (s, r, k) in results.items()}, open(a.json, "w"), indent=1)
    bad = bool(failed)
    if a.one_kernel:
        many = [(t, k) for t in passed if re.search(a.one_kernel, t)
                for k in [results[t][2]] if k != 1]
        for t, k in many:
            print(f"NOT ONE KERNEL: {t}: {k} kernels")
        checked = sum(1 for t in passed if re.search(a.one_kernel, t))
        print(f"one kernel each: {checked - len(many)}/{checked} of the tests matching {a.one_kernel}")
        bad |= bool(many) or checked == 0
    if a.expect:
        want = [l.strip() for l in open(a.expect) if l.strip() and not l.startswith("#")]
        missing = [t for t in want if t in results and results[t][0] != "pass"]
        absent = [t for t in want if t not in results]
        for t in missing:
            print(f"EXPECTED TO PASS: {t}: {results[t][0]} {results[t][1]}")
        if absent and not a.filter:
            print(f"{len(absent)} expected test(s) not found in {a.data_dir}: {absent[:5]}")
            bad = True
        bad |= bool(missing)
        print(f"expected passes: {len(want) - len(missing) - len(absent)}/{len(want)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
