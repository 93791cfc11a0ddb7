"""mutate.py TOOL MODEL DIR: runs `TOOL --import-onnx` on every prefix of
MODEL and on copies with one byte changed (every 3rd byte, three values);
prints how many runs crashed (exit by a signal or an exit status other than
0, 1 or 2)."""
import os
import subprocess
import sys

tool, model, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
data = open(model, "rb").read()
mutants = [data[:n] for n in range(len(data))]
for i in range(0, len(data), 3):
    for v in (0x00, 0x7F, 0xFF):
        mutants.append(data[:i] + bytes([v]) + data[i + 1:])
crashed = 0
path = os.path.join(out, "m.onnx")
for m in mutants:
    open(path, "wb").write(m)
    p = subprocess.run([tool, "--import-onnx", path, "-o", os.devnull],
                       capture_output=True)
    if p.returncode not in (0, 1, 2):
        crashed += 1
        print(f"crash: exit {p.returncode} on {len(m)} bytes: {p.stderr[-300:]!r}")
print(f"mutants: {len(mutants)} run, {crashed} crashed")
