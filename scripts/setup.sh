# shellcheck shell=bash
# Sourced by scripts/demo and scripts/test: installs what is missing (as root)
# or prints the exact apt-get line (otherwise), then configures and builds
# into build/. Idempotent: a second run installs nothing and rebuilds nothing
# that is up to date.

FUSEC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUSEC_BUILD="${FUSEC_BUILD:-$FUSEC_ROOT/build}"
FUSEC_PACKAGES=(
  cmake ninja-build g++ python3 ccache
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libabsl-dev libgtest-dev libzstd-dev zlib1g-dev libonnx-testdata xz-utils
  clang-22 libclang-rt-22-dev libfuzzer-22-dev
)

fusec_missing_packages() {
  local p missing=()
  for p in "${FUSEC_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  echo "${missing[@]}"
}

fusec_install_deps() {
  local missing
  missing="$(fusec_missing_packages)"
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "fusec: missing Debian packages. Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y $missing" >&2
    exit 1
  fi
  echo "fusec: installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# ccache as the compiler launcher where it is installed: sets `launcher`.
fusec_launcher() {
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
}

fusec_build() {
  local launcher=()
  fusec_launcher
  if [ ! -f "$FUSEC_BUILD/build.ninja" ]; then
    cmake -G Ninja -S "$FUSEC_ROOT" -B "$FUSEC_BUILD" \
      -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
  fi
  ninja -C "$FUSEC_BUILD"
}

# The same tools linked with FUSEC_STATIC_LLVM=ON into build-static/: what the
# GPU machine (no LLVM there) runs.
fusec_build_static() {
  local static="${FUSEC_STATIC_BUILD:-$FUSEC_ROOT/build-static}" launcher=()
  fusec_launcher
  if [ ! -f "$static/build.ninja" ]; then
    cmake -G Ninja -S "$FUSEC_ROOT" -B "$static" -DCMAKE_BUILD_TYPE=Release \
      -DFUSEC_STATIC_LLVM=ON -DFUSEC_BUILD_TESTS=OFF "${launcher[@]}"
  fi
  ninja -C "$static" fusec-opt fusec-run
}

# The libFuzzer harnesses (test/fuzz), everything built by clang with ASan and
# UBSan, into build-fuzz/; `ctest --test-dir build-fuzz` runs each for
# FUSEC_FUZZ_SECONDS (default 30) from its seeds.
fusec_build_fuzz() {
  local fuzz="${FUSEC_FUZZ_BUILD:-$FUSEC_ROOT/build-fuzz}" launcher=()
  fusec_launcher
  if [ ! -f "$fuzz/build.ninja" ]; then
    cmake -G Ninja -S "$FUSEC_ROOT" -B "$fuzz" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DFUSEC_FUZZ=ON -DFUSEC_BUILD_TESTS=OFF -DFUSEC_BUILD_RUNTIME_KERNELS=OFF \
      -DFUSEC_FUZZ_SECONDS="${FUSEC_FUZZ_SECONDS:-30}" "${launcher[@]}"
  fi
  ninja -C "$fuzz" fusec-fuzzers fusec-sanitized-tools
}

# The LLVM-free runtime and its tests built with ThreadSanitizer into
# build-tsan/: the kernel cache's threads and processes (and the fault tests)
# run under it.
fusec_build_tsan() {
  local tsan="${FUSEC_TSAN_BUILD:-$FUSEC_ROOT/build-tsan}" launcher=()
  fusec_launcher
  if [ ! -f "$tsan/build.ninja" ]; then
    cmake -G Ninja -S "$FUSEC_ROOT" -B "$tsan" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DFUSEC_TSAN=ON -DFUSEC_BUILD_RUNTIME_KERNELS=OFF "${launcher[@]}"
  fi
  ninja -C "$tsan" fusec-runtime-tests
}
