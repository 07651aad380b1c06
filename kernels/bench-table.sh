#!/usr/bin/env bash
# The performance table of kernels/README.md: every row is one `mmaemu bench gemm ... --json` run (the
# emulated GEMM and the native fp32 GEMM of the same shape, timed in the same process, best of --reps),
# printed as a Markdown table row with the command that produced it.
#
#   cargo build --release && bash kernels/bench-table.sh [path/to/mmaemu]
#
# Measure on a quiet machine (`uptime`): both sides share the cores with whatever else runs.
set -euo pipefail
BIN=${1:-target/release/mmaemu}

rows=(
  "--m 1024 --n 1024 --k 1024 --profile hopper --fast"
  "--m 1024 --n 1024 --k 1024 --profile ada --fast"
  "--m 1024 --n 1024 --k 1024 --profile hopper --slow"
  "--m 1024 --n 1024 --k 1024 --profile ada --slow"
  "--m 1024 --n 1024 --k 1024 --profile hopper --fast --splitk 4,contiguous"
  "--m 1024 --n 1024 --k 1024 --profile ada --fast --splitk 3,serial"
  "--m 1024 --n 1024 --k 1024 --profile ada --slow --splitk 2,pairwise"
  "--m 1024 --n 1024 --k 1024 --profile hopper --fast --fmt-b e5m2"
  "--m 1024 --n 1024 --k 1024 --profile ada --fast --fmt-a e5m2"
  "--m 1024 --n 1024 --k 1024 --preset b200_mma_sync --fast"
  "--m 1024 --n 1024 --k 1024 --profile hopper --fast --threads 1"
  "--m 2048 --n 5760 --k 1920 --profile hopper --fast"
  "--m 2048 --n 5760 --k 1920 --profile ada --fast"
)

echo "| shape | preset | formats | fast/slow | split | backend | SIMD | threads | GMAC/s | native fp32 GMAC/s | ratio | time | command |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for args in "${rows[@]}"; do
  # shellcheck disable=SC2086
  "$BIN" bench gemm $args --reps 5 --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
args = sys.argv[1]
print("| %s | %s | %s | %s | %s | %s | %s | %d | %.1f | %.1f | %.3f (1/%.1f) | %.3f s | `mmaemu bench gemm %s` |" % (
    r["shape"], r["preset"], r["formats"], "fast" if r["fast"] else "slow", r["split"], r["backend"], r["simd"],
    r["threads"], r["emulated_gmacs"], r["native_f32_gmacs"], r["ratio"], 1 / r["ratio"], r["emulated_s"], args))
' "$args"
done
