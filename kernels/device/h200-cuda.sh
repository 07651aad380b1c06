#!/usr/bin/env bash
# mmaemu CUDA backend checks for the H200 device machine (CUDA 13, no Rust toolchain there).
# Build here first and carry the binaries (see kernels/src/cuda/README.md):
#   cargo build --release --features cuda -p mmaemu && cargo test --release -p mmaemu-kernels --features cuda --no-run
# Then: run(command="bash kernels/device/h200-cuda.sh", carry=["target/release/mmaemu", "target/device-tests"]).
# Writes everything to $OUT (or ./device-out). Each step is time-boxed; the script never stops at a failure.
set -u
out="${OUT:-device-out}"; mkdir -p "$out"
bin="${MMAEMU_BIN:-target/release/mmaemu}"
step() { local name="$1" limit="$2"; shift 2; echo "== $name: $*" | tee -a "$out/summary.txt"
    timeout "$limit" "$@" >"$out/$name.log" 2>&1; echo "   rc=$?" | tee -a "$out/summary.txt"; tail -5 "$out/$name.log"; }
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv > "$out/gpu.txt" 2>&1; cat "$out/gpu.txt"
# NVRTC: the toolkit's, else a carried wheel directory.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; done
step selftest 120 "$bin" selftest
step info 30 "$bin" info
step replay 240 "$bin" replay datasets/recordings --backend cuda
# The backend-against-model fuzzing on the GPU: the test binaries built with --features cuda.
for t in target/device-tests/cuda_*; do [ -x "$t" ] && step "fuzz-$(basename "$t")" 120 "$t" --nocapture; done
for p in hopper ada; do for s in 4096 8192; do
    step "bench-$p-$s" 120 "$bin" bench gemm --preset "$p" --backend cuda --m "$s" --n "$s" --k "$s" --fast --format e4m3
done; done
cat "$out/summary.txt"
