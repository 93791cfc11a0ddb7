"""ptxas_clean.py PTXAS ARCH MAXREGS FILE...: assembles each PTX file with
`ptxas -v -arch=ARCH`; fails on any warning or C75xx advisory (wgmma
serialization, which ptxas reports as "info"),
any stack or spill, or more than MAXREGS registers a thread."""
import re
import subprocess
import sys

ptxas, arch, maxregs, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
bad = 0
for f in files:
    p = subprocess.run([ptxas, f"-arch={arch}", "-v", f, "-o", "/dev/null"],
                       capture_output=True, text=True)
    out = p.stdout + p.stderr
    regs = re.search(r"Used (\d+) registers", out)
    problems = []
    if p.returncode != 0:
        problems.append("ptxas failed")
    if re.search(r"warning", out, re.IGNORECASE):
        problems.append("a warning")
    # Performance advisories come as "info": C75xx is a serialized wgmma.
    if re.search(r"\(C75\d\d\)|Performance Loss", out):
        problems.append("a C75xx performance advisory")
    if not re.search(r"0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", out):
        problems.append("stack or spills")
    if not regs or int(regs.group(1)) > maxregs:
        problems.append(f"registers {regs.group(1) if regs else '?'} > {maxregs}")
    print(f"{f}: {'ok' if not problems else 'FAIL: ' + ', '.join(problems)}"
          f" ({regs.group(1) if regs else '?'} registers)")
    if problems:
        print(out)
        bad += 1
sys.exit(1 if bad else 0)
