#!/usr/bin/env bash
# Checks that each binary given needs only libc, libm and the dynamic loader
# (the FUSEC_STATIC_LLVM=ON contract). Exits 77 (skipped) if a binary is
# missing, saying why.
set -u
status=0
for bin in "$@"; do
  if [ ! -x "$bin" ]; then
    echo "SKIP: $bin was not built (scripts/test builds it with FUSEC_STATIC_LLVM=ON)"
    exit 77
  fi
  extra=$(ldd "$bin" | grep -v -E '^\s*(linux-vdso\.so|libc\.so\.6|libm\.so\.6|/lib64/ld-linux-x86-64\.so)' || true)
  if [ -n "$extra" ]; then
    echo "FAIL: $bin needs more than libc, libm and the loader:"
    echo "$extra"
    status=1
  else
    echo "ok: $bin needs only libc, libm and the loader"
  fi
done
exit $status
