"""ptxas_all.py PTXAS DIR COUNT: assembles every DIR/<arch>/*.ptx for its arch
with `ptxas -v`; fails unless each arch has COUNT kernels and every one
reports 0 bytes of stack, spill stores and spill loads."""
import os
import re
import subprocess
import sys

ptxas, root, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = 0
for arch in sorted(os.listdir(root)):
    files = sorted(f for f in os.listdir(os.path.join(root, arch)) if f.endswith(".ptx"))
    if len(files) != count:
        print(f"{arch}: {len(files)} kernels, expected {count}")
        bad += 1
    for f in files:
        p = subprocess.run([ptxas, f"-arch={arch}", "-v", os.path.join(root, arch, f),
                            "-o", os.devnull], capture_output=True, text=True)
        out = p.stdout + p.stderr
        ok = p.returncode == 0 and re.search(
            r"0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", out)
        if not ok:
            print(f"{arch}/{f}: FAIL\n{out}")
            bad += 1
print(f"checked {root}: {'ok' if not bad else f'{bad} failures'}")
sys.exit(1 if bad else 0)
