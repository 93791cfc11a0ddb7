#!/usr/bin/env bash
# Runs on the GPU machine (device tool, `carry: [".device"]`) from the
# repository root, with fusec-run staged by
#   FUSEC_GPU_TOOLS="fusec-run" bash bench/stage-gpu.sh
# bench/elementwise_probe.py (fusec's streaming kernels under launch
# variants beside Inductor, Inductor's code, ncu's DRAM counters of both).
# Everything goes into $OUT/results.tar.xz (the device tool returns few
# files); the table is printed last.
set -uo pipefail
OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT/probe"
D="$PWD/.device"
[ -f "$D/bin.tar.xz" ] && [ ! -x "$D/bin/fusec-run" ] && tar -C "$D" -xJf "$D/bin.tar.xz"
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FUSEC_CACHE_DIR="${FUSEC_CACHE_DIR:-$(mktemp -d)/fusec-cache}"
export FUSEC_BIN="$D/bin" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/probe/machine.txt"
PROBE_NCU=${PROBE_NCU:-1} OUT="$OUT/probe" python3 bench/elementwise_probe.py "$@" > "$OUT/probe/probe.log" 2>&1
echo "probe rc=$?"
tar -C "$OUT" -cJf "$OUT/results.tar.xz" probe
cp "$OUT/probe/elementwise_probe.json" "$OUT/" 2>/dev/null
python3 - "$OUT"/probe/ncu-*.csv <<'PY'
import csv, io, os, sys
for path in sys.argv[1:]:
    text = open(path).read()
    rows = list(csv.reader(io.StringIO(text[text.find('"ID"'):]))) if '"ID"' in text else []
    print("==", os.path.basename(path), "" if rows else text[-300:])
    for r in rows[1:]:
        if len(r) >= 15:
            print(f"  {r[0]:>3} {r[4][:40]:40} {r[12]:55} {r[13]:>8} {r[14]}")
PY
sed -n '/^copy /,$p' "$OUT/probe/probe.log"
