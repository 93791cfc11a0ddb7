# Sourced by the device-call scripts (bench/stop*-gpu.sh) on the GPU
# machine, from the repository root: the staged static tools of
# bench/stage-gpu.sh in .device/ (unpacked on first use), their library
# path, a fresh kernel cache, $OUT and the card's description in
# $OUT/machine.txt, and `el` (seconds since sourcing).
D=$PWD/.device
[ -x "$D/bin/fusec-run" ] || tar -C "$D" -xJf "$D/bin.tar.xz"
export OUT="${OUT:-$PWD/bench/out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D/lib" FUSEC_BIN="$D/bin" FUSEC_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export FUSEC_ATTENTION_LIB="$D/lib/libfusec_attention.so"
export FUSEC_CACHE_DIR="$(mktemp -d)/cache"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
{ date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
  python3 -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -1; } > "$OUT/machine.txt"
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }
