#!/usr/bin/env bash
# mmaemu CUDA backend checks for the H200 device machine (CUDA 13, no Rust toolchain there).
# Build here first and carry the binaries (see kernels/src/cuda/README.md):
#   bash kernels/device/build-for-device.sh     (release binary with --features cuda + the GPU test binaries)
# Then copy the repository with .device/ to the GPU machine and run `bash kernels/device/h200-cuda.sh` there.
# Writes everything to the directory named by OUT (default ./device-out). Each step is time-boxed; the script never stops at a failure.
set -u
out="${OUT:-device-out}"; mkdir -p "$out"
bin="${MMAEMU_BIN:-.device/mmaemu}"
# The whole run stays within a fixed time budget (H200_BUDGET_S, default 540 s): a step that would start after BUDGET seconds, or
# could run past it, is cut to what is left (and skipped below 10 s).
start=$(date +%s); budget="${H200_BUDGET_S:-540}"
step() { local name="$1" limit="$2"; shift 2; local left=$((budget - ($(date +%s) - start)))
    [ "$left" -lt "$limit" ] && limit="$left"
    if [ "$limit" -lt 10 ]; then echo "== $name: skipped (device budget spent)" | tee -a "$out/summary.txt"; return; fi
    echo "== $name: $*" | tee -a "$out/summary.txt"
    timeout "$limit" "$@" >"$out/$name.log" 2>&1; echo "   rc=$?" | tee -a "$out/summary.txt"; tail -5 "$out/$name.log"; }
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv > "$out/gpu.txt" 2>&1; cat "$out/gpu.txt"
# NVRTC: the toolkit's, else the one of torch's pip wheels (nvidia-cuda-nvrtc), named in MMAEMU_NVRTC_LIB.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
if [ -z "${MMAEMU_NVRTC_LIB:-}" ]; then
    lib=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
hits = [p for r in roots for p in glob.glob(os.path.join(r, "nvidia", "**", "libnvrtc.so*"), recursive=True)
        if "builtins" not in p]
print(sorted(hits)[-1] if hits else "")
PY
)
    [ -n "$lib" ] && export MMAEMU_NVRTC_LIB="$lib" && export LD_LIBRARY_PATH="$(dirname "$lib"):$LD_LIBRARY_PATH"
fi
echo "NVRTC: ${MMAEMU_NVRTC_LIB:-system}" | tee -a "$out/summary.txt"
step selftest 90 "$bin" selftest --json "$out/selftest.json"
step info 30 "$bin" info
step replay 150 "$bin" replay datasets/recordings --backend cuda
# The backend-against-model fuzzing on the GPU: the test binaries built with --features cuda.
for t in .device/tests/*; do [ -x "$t" ] && step "fuzz-$(basename "$t")" 100 "$t"; done
for p in hopper ada; do for s in 4096 8192; do
    step "bench-$p-$s" 90 "$bin" bench gemm --preset "$p" --backend cuda --m "$s" --n "$s" --k "$s" --fast \
        --fmt-a e4m3 --fmt-b e4m3 --reps 3 --no-native --verify --json
done; done
# --verify: each benchmarked GEMM is compared bit for bit with the CPU backend on the same operands;
# the selftest/info/replay logs and the bench JSON lines go into the repository (kernels/device/results/).
cat "$out/summary.txt"
