#!/usr/bin/env bash
# Install NVIDIA's NVRTC library from PyPI (the nvidia-cuda-nvrtc-cu12 wheel) for the CUDA kernels'
# compilation test (kernels/tests/cuda_nvrtc.rs); no GPU or CUDA toolkit needed. Prints the library path.
# Usage: eval "$(.ci/install-nvrtc.sh [DIR])"  -> exports MMAEMU_NVRTC_LIB and LD_LIBRARY_PATH.
set -euo pipefail
dir="${1:-${TMPDIR:-/tmp}/mmaemu-nvrtc}"
lib="$dir/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
if [ ! -f "$lib" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir --no-deps --target "$dir" \
        'nvidia-cuda-nvrtc-cu12==12.8.*' >&2
fi
test -f "$lib"
echo "export MMAEMU_NVRTC_LIB='$lib'"
echo "export LD_LIBRARY_PATH='$(dirname "$lib")'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
