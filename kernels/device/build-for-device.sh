#!/usr/bin/env bash
# Build what kernels/device/h200-cuda.sh runs on the GPU machine (which has no Rust toolchain) into .device/:
#   .device/mmaemu           the CLI with the CUDA backend (--features cuda), release
#   .device/tests/against_model   the CPU and CUDA engines against the model (kernels/tests/against_model.rs)
#   .device/tests/fuzz            the harness's fuzz trials, fuzz/backend/cuda included
#   .device/mmaemu-record         the recorder, for recorder/device/h200-check.sh (which takes .device/ too)
# Then copy the repository with .device/ to the GPU machine and run `bash kernels/device/h200-cuda.sh` there.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device/tests
cargo build --release --features cuda --bin mmaemu
cp target/release/mmaemu .device/mmaemu
cargo build --release -p mmaemu-bringup --bin mmaemu-record
cp target/release/mmaemu-record .device/mmaemu-record
# The test executables: the last "executable" of cargo's JSON messages for each target.
exe() { python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1" | tail -1; }
cp "$(cargo test --release -p mmaemu-kernels --features cuda --test against_model --no-run --message-format=json 2>/dev/null | exe against_model)" .device/tests/against_model
cp "$(cargo test --release -p mmaemu-harness --features cuda --test fuzz --no-run --message-format=json 2>/dev/null | exe fuzz)" .device/tests/fuzz
strip .device/mmaemu .device/tests/* 2>/dev/null || true
ls -la .device .device/tests
