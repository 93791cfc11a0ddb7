#!/usr/bin/env bash
# The runtime and the support code it uses must not include LLVM or MLIR
# (the build enforces it too: no LLVM include path reaches those targets).
set -u
root="$1"
hits=$(grep -rnE '#\s*include\s*[<"](llvm|mlir)/' \
  "$root/lib/Runtime" "$root/include/fusec/Runtime" \
  "$root/lib/Support" "$root/include/fusec/Support" "$root/include/fusec/Jit.h" 2>/dev/null)
if [ -n "$hits" ]; then
  echo "FAIL: LLVM/MLIR includes in LLVM-free code:"
  echo "$hits"
  exit 1
fi
echo "ok: lib/Runtime, lib/Support and their public headers include no LLVM or MLIR"
