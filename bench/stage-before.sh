#!/usr/bin/env bash
# Stages the speed graphs of bench/memory_bound.py compiled by another
# (earlier) fusec-opt, with their PTX attached, in .device/before/ for the
# before/after comparison (MEMORY_BOUND_BEFORE=.device/before on the GPU
# machine; the new fusec-run runs the old kernels beside the new ones).
#
#   bash bench/stage-before.sh OLD_FUSEC_OPT
#
# OLD_FUSEC_OPT is the earlier build's fusec-opt (built here, e.g. from a git
# worktree of the earlier commit). It compiles each graph as the earlier
# JIT did (--fusec-pipeline=target=h200 --fusec-codegen); the attributes its
# version wrote that today's dialect declares differently (the untyped
# fusec.launch, fusec.cache_hints and fusec.strategy) are dropped: the JIT
# runs a kernel from fusec.ptx, fusec.entry, fusec.grid and fusec.block.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: stage-before.sh OLD_FUSEC_OPT}
out=.device/before
rm -rf "$out" && mkdir -p "$out"
tmp=$(mktemp -d)
python3 bench/memory_bound.py --write-speed-graphs "$tmp"
for g in "$tmp"/*.mlir; do
  "$old" "$g" --fusec-pipeline=target=h200 --fusec-codegen -o "$tmp/compiled.mlir"
  python3 - "$tmp/compiled.mlir" "$out/$(basename "$g")" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r'fusec\.launch = \{[^{}]*\}, ', '', text)
text = re.sub(r'fusec\.cache_hints = \[[^\]]*\], ', '', text)
text = re.sub(r', fusec\.strategy = "[a-z_]*"', '', text)
text = re.sub(r'fusec\.strategy = "[a-z_]*", ', '', text)
open(sys.argv[2], 'w').write(text)
PY
done
rm -rf "$tmp"
ls "$out" | wc -l
