#!/usr/bin/env bash
# Install torch 2.7.1 for CPU use into the Python environment of interpreter $1, as cheaply as it imports.
# PyPI's Linux x86_64 wheel is the CUDA build; its requirements pull every nvidia-* wheel. libtorch loads
# only some of them at import (cudart, cublas, cudnn, cufft, cufile, curand, cusparse, cusparseLt, nccl,
# nvJitLink, cupti); cusolver, nvrtc, nvtx and triton are used for GPU work only and are left out. The pins
# are torch's own (its metadata). Elsewhere (another platform) torch is installed with its requirements.
# No pip cache: these wheels are about 3 GB, and a cached copy of each would double what the disk must hold.
set -euo pipefail
py="$1"
pip=("$py" -m pip install --quiet --disable-pip-version-check --no-cache-dir)
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    "${pip[@]}" 'torch==2.7.1'
    exit 0
fi
"${pip[@]}" --no-deps 'torch==2.7.1'
mapfile -t reqs < <("$py" - <<'PY'
import importlib.metadata as metadata
from pip._vendor.packaging.requirements import Requirement

GPU_ONLY = {"nvidia-cusolver-cu12", "nvidia-cuda-nvrtc-cu12", "nvidia-nvtx-cu12", "triton"}
for line in metadata.requires("torch") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if req.name not in GPU_ONLY:
        print(f"{req.name}{req.specifier}")
PY
)
# torch's own requirements list the left-out wheels: pip's conflict report about them is expected, not shown.
"${pip[@]}" --no-warn-conflicts "${reqs[@]}"
"$py" -c 'import torch; assert torch.__version__.startswith("2.7.1"), torch.__version__; torch.ones(2) @ torch.ones(2)'
