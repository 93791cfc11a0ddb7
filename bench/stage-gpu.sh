#!/usr/bin/env bash
# Builds (here, on a development machine) the static binaries the GPU machine
# runs and stages them in .device/ (git-ignored), for the device tool's
# `carry`. The GPU machine has no LLVM: everything is linked with
# FUSEC_STATIC_LLVM=ON; Google Benchmark, which Debian ships only as a shared
# library, travels beside the binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
fusec_install_deps
B=build-gpu
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$B/build.ninja" ]; then
  cmake -G Ninja -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DFUSEC_STATIC_LLVM=ON \
    -DFUSEC_BUILD_BENCH=ON "${launcher[@]}"
fi
# Each tool that links the compiler carries LLVM's code generator (about 20
# MB after xz): stage only what the run needs (FUSEC_GPU_TOOLS), within the
# device tool's 64 MiB.
TOOLS=${FUSEC_GPU_TOOLS:-"fusec-opt fusec-run fusec-runtime-tests fusec-jit-tests fusec-calibrate"}
# shellcheck disable=SC2086
ninja -C "$B" $TOOLS
# The nvcc-built runtime kernels (the attention intrinsic's library and
# test), when this machine has nvcc.
kernels=0
# (grep the whole list: `grep -q` would close the pipe early, and under
# pipefail ninja's SIGPIPE would read as "no such target".)
targets=$(ninja -C "$B" -t targets all 2>/dev/null || true)
if grep -qE '(^|/)fusec-runtime-kernels:' <<<"$targets"; then
  ninja -C "$B" fusec-runtime-kernels
  kernels=1
fi
rm -rf .device/bin .device/lib .device/bin.tar.xz .device/onnx-node.tar.xz && mkdir -p .device/bin .device/lib
for t in $TOOLS; do
  case $t in
  # TSan reports name functions through the symbol table, and its
  # suppressions (test/unit/Jit/tsan.supp) match those names: keep it
  # (about 14 MB as xz).
  *-tsan-*) strip --strip-debug -o ".device/bin/$t" "$B/bin/$t" ;;
  *) strip -o ".device/bin/$t" "$B/bin/$t" ;;
  esac
done
cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian .device/lib/
if [ $kernels = 1 ]; then
  strip -o .device/bin/fusec-attention-tests "$B/bin/fusec-attention-tests"
  strip -o .device/bin/fusec-sm90-ptx-tests "$B/bin/fusec-sm90-ptx-tests"
  cp "$B/lib/libfusec_attention.so" .device/lib/
fi
# The ONNX backend node tests (libonnx-testdata, ~1.2 MB as xz) for the GPU
# path of the conformance run (bench/onnx-gpu.sh).
if [ -d /usr/share/libonnx-testdata/data/node ]; then
  tar -C /usr/share/libonnx-testdata/data -cf - node | xz -T2 -6 > .device/onnx-node.tar.xz
fi
(cd .device && tar -cf - bin | xz -T2 -6 > bin.tar.xz && rm -rf bin)
du -sh .device/*
size=$(du -sm .device | cut -f1)
if [ "$size" -gt 60 ]; then
  echo "stage-gpu: .device is ${size} MiB, over what the device tool carries; stage fewer FUSEC_GPU_TOOLS" >&2
  exit 1
fi
