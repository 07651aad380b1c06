#!/usr/bin/env bash
# The square-shape table of kernels/performance.md: every row is one `mmaemu bench gemm ... --json` run (the
# emulated GEMM and the native fp32 GEMM of the same shape, timed in the same process, best of --reps),
# printed as a Markdown table row with the command that produced it.
#
#   cargo build --release && bash bench/bench-table.sh [path/to/mmaemu] [ROUNDS]
#
# Measure on a quiet machine (`uptime`): both sides share the cores with whatever else runs. On shared
# 2-vCPU machines a whole process can run 30 % slower than the next one, so the table runs ROUNDS rounds
# (default 3) of all rows in turn, and keeps for each row the best emulated and the best native time
# (each already the best of 15 runs); the ratio is taken between those two bests.
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

ROUNDS=${2:-3}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for round in $(seq "$ROUNDS"); do
  for i in "${!rows[@]}"; do
    # shellcheck disable=SC2086
    printf '%s\t%s\n' "$i" "$("$BIN" bench gemm ${rows[$i]} --reps 15 --json | tr -d '\n')" >> "$tmp"
  done
done
python3 - "$tmp" "${rows[@]}" <<'PY'
import json, sys
lines = [l.split("\t", 1) for l in open(sys.argv[1]) if l.strip()]
args = sys.argv[2:]
best = {}
for i, js in lines:
    r = json.loads(js)
    b = best.setdefault(int(i), dict(r))
    b["emulated_gmacs"] = max(b["emulated_gmacs"], r["emulated_gmacs"])
    b["emulated_s"] = min(b["emulated_s"], r["emulated_s"])
    b["native_f32_gmacs"] = max(b["native_f32_gmacs"], r["native_f32_gmacs"])
print("| shape | preset | formats | fast/slow | split | backend | SIMD | threads | GMAC/s | native fp32 GMAC/s | ratio | time | command |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for i in sorted(best):
    r = best[i]
    ratio = r["emulated_gmacs"] / r["native_f32_gmacs"]
    print("| %s | %s | %s | %s | %s | %s | %s | %d | %.1f | %.1f | %.3f (1/%.1f) | %.3f s | `mmaemu bench gemm %s` |" % (
        r["shape"], r["preset"], r["formats"], "fast" if r["fast"] else "slow", r["split"], r["backend"], r["simd"],
        r["threads"], r["emulated_gmacs"], r["native_f32_gmacs"], ratio, 1 / ratio, r["emulated_s"], args[i]))
PY
