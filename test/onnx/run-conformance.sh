#!/usr/bin/env bash
# run-conformance.sh FUSEC_RUN DATA_DIR EXPECTED: the ctest entry.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$2" ]; then
  echo "skipped: no ONNX backend tests at $2 (install libonnx-testdata)"
  exit 77
fi
# The node suite's expanded composites must also compile to one kernel each.
one=()
[ "$(basename "$2")" = node ] && one=(--one-kernel '^test_(softmax|logsoftmax|layer_normalization)_.*_expanded$')
python3 "$here/conformance.py" "$1" "$2" --reference --expect "$3" "${one[@]}"
