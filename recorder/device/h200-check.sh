#!/usr/bin/env bash
# recorder/device/h200-check.sh: the H200 device check of the recorder, at most 8 minutes.
#
# Runs on the GPU machine (NVIDIA H200, sm_90, CUDA 13, python3 with torch and its cuBLAS 13), which has no
# Rust toolchain: the binaries are built on the development machine and carried (recorder/README.md,
# "Device check"). Steps:
#   (a) cross-check: record ~9,000 calls (recorder/sweeps/h200-crosscheck*.toml) with mmaemu-record and
#       recompute each with torch._scaled_mm on the same GPU, through the same libcublasLt; every bit must
#       agree (recorder/device/torch_check.py);
#   (b) the first H200 sweep (recorder/sweeps/h200-sweep.toml) and heuristic grid (h200-grid.toml);
#   (c) everything to commit lands in $OUT (7 files, each far below 16 MiB): h200-sweep.parquet and its
#       .manifest.json, the table h200-cublaslt-<version>.parquet, its .json sidecar and .manifest.json,
#       report.tar.gz (probe, cross-check report, replay report, cross-check manifests), log.txt;
#   (d) the sweep is replayed with the hopper preset (mmaemu replay, if the mmaemu binary was carried);
#   (e) the table and the sweep become a platform bundle, $OUT/platform-h200-cublaslt-<version>
#       (mmaemu platform build, preset hopper, profile h200; docs/platform-format.md), and `mmaemu platform check`
#       prints its computed status: the bundle is what docs/bring-up.md's steps 3 to 7 make of a new GPU;
#   (f) the one command: `mmaemu-record bring-up --device 0` (probe, grid, sweeps, fits, experiments, bundle, check)
#       into $OUT/bring-up (bring-up.json, bring-up.html, the bundle h200-bringup), within what is left of the budget
#       (at most H200_BRINGUP_S, default 240 s; it resumes where an interrupted run stopped).
#
# Usage: recorder/device/h200-check.sh [BIN_DIR]
#   BIN_DIR holds mmaemu-record and mmaemu (or bin.tar.gz with them); default: .device/ in the repository.
# Environment: OUT (output folder; default ./device-out), H200_BUDGET_S (default 470), H200_BRINGUP_S (default 240). For a dry run of the
# script's flow on a machine without a GPU: H200_SIMULATE=1 (the recorder's simulated device, no torch) and
# H200_LIMIT=N (only the first N cases / grid keys of each spec; `small`: 32, and bring-up's small plan).

set -uo pipefail
START=$(date +%s)
BUDGET=${H200_BUDGET_S:-470}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN_DIR=${1:-$ROOT/.device}
OUT=${OUT:-$ROOT/device-out}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/h200-check.XXXXXX)
exec > >(tee "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1

step() { echo "== [$(( $(date +%s) - START ))s] $*" >&2; }
# left CAP: seconds this step may take: CAP, or what remains of the budget (at least 5).
left() {
    local rest=$(( BUDGET - ($(date +%s) - START) ))
    (( rest < 5 )) && rest=5
    (( rest < $1 )) && echo "$rest" || echo "$1"
}
FAILED=()
run() { # run NAME CAP command...: run with a time limit, remember failures, never stop the script
    local name=$1 cap=$2; shift 2
    step "$name (limit $(left "$cap")s)"
    timeout "$(left "$cap")" "$@"
    local rc=$?
    (( rc != 0 )) && { echo "!! $name: exit code $rc" >&2; FAILED+=("$name:$rc"); }
    return $rc
}

# --- binaries --------------------------------------------------------------------------------------------
if [[ -f "$BIN_DIR/bin.tar.gz" ]]; then
    tar -xzf "$BIN_DIR/bin.tar.gz" -C "$WORK" || { echo "cannot unpack $BIN_DIR/bin.tar.gz"; exit 2; }
    BIN=$WORK
else
    BIN=$BIN_DIR
fi
REC=$BIN/mmaemu-record
MMA=$BIN/mmaemu
[[ -x "$REC" ]] || { echo "no mmaemu-record in $BIN (see recorder/README.md, Device check)"; exit 2; }
SWEEPS=$ROOT/recorder/sweeps
EXTRA=()
[[ -n "${H200_SIMULATE:-}" ]] && EXTRA+=(--simulate)
# H200_LIMIT=small: a few cases per spec (32), and bring-up's small plan.
[[ -n "${H200_LIMIT:-}" ]] && EXTRA+=(--limit "$([[ $H200_LIMIT == small ]] && echo 32 || echo "$H200_LIMIT")")
CHECK=$ROOT/recorder/device/torch_check.py

# --- platform, and the libcublasLt torch uses --------------------------------------------------------------
step "platform"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
TORCH=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo unknown)
LT=$(timeout 120 python3 "$CHECK" --which-cublaslt 2>/dev/null | tail -n 1)
echo "torch $TORCH; torch's libcublasLt: ${LT:-not found}"
mkdir -p "$WORK/lib"
if [[ -n "$LT" && -f "$LT" ]]; then
    # cudarc tries libcublasLt.so first: make that name the very library torch loaded.
    ln -sf "$LT" "$WORK/lib/libcublasLt.so"
    ln -sf "$LT" "$WORK/lib/$(basename "$LT")"
fi
export LD_LIBRARY_PATH=$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PLATFORM_JSON=$(printf '{"torch": "%s", "cublaslt_path": "%s"}' "$TORCH" "$LT")
if [[ -n "${H200_SIMULATE:-}" ]]; then
    echo '{"cublaslt": "simulated"}' > "$WORK/probe.json"
else
    run probe 60 "$REC" probe > "$WORK/probe.json"
fi
cat "$WORK/probe.json"
VERSION=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cublaslt"])' "$WORK/probe.json" 2>/dev/null || echo unknown)
echo "cuBLASLt seen by mmaemu-record: $VERSION"

# --- (a) cross-check against torch._scaled_mm --------------------------------------------------------------
run record-crosscheck 120 "$REC" sweep "$SWEEPS/h200-crosscheck.toml" --out "$WORK/xc.parquet" --restart \
    --platform-json "$PLATFORM_JSON" "${EXTRA[@]}"
run record-crosscheck-scales 60 "$REC" sweep "$SWEEPS/h200-crosscheck-scales.toml" --out "$WORK/xcs.parquet" \
    --restart --platform-json "$PLATFORM_JSON" "${EXTRA[@]}"
XC_INPUTS=()
for f in xc xcs; do
    if [[ -f "$WORK/$f.parquet" ]]; then
        if python3 -c 'import pyarrow' 2>/dev/null; then
            XC_INPUTS+=("$WORK/$f.parquet")
        else
            "$REC" dump "$WORK/$f.parquet" --out "$WORK/$f.dump" && XC_INPUTS+=("$WORK/$f.dump")
        fi
    fi
done
if [[ -n "${H200_SIMULATE:-}" ]]; then
    echo "simulated dry run: no torch cross-check"
elif (( ${#XC_INPUTS[@]} )); then
    # torch 2.7.1's cuBLASLt workspace is 1 MiB; newer torch defaults may differ: pin it (KiB).
    run torch-crosscheck 150 env CUBLASLT_WORKSPACE_SIZE=1024 python3 "$CHECK" "${XC_INPUTS[@]}" \
        --report "$WORK/crosscheck.json"
fi

# --- (b) the first H200 sweep and heuristic grid -----------------------------------------------------------
run sweep 90 "$REC" sweep "$SWEEPS/h200-sweep.toml" --out "$OUT/h200-sweep.parquet" --restart \
    --platform-json "$PLATFORM_JSON" "${EXTRA[@]}"
TABLE=$OUT/h200-cublaslt-$VERSION.parquet
run grid 150 "$REC" heuristics --grid "$SWEEPS/h200-grid.toml" --out "$TABLE" --restart \
    --platform-json "$PLATFORM_JSON" "${EXTRA[@]}"

# --- (d) replay with the hopper preset ---------------------------------------------------------------------
if [[ -x "$MMA" && -f "$OUT/h200-sweep.parquet" ]]; then
    run replay 120 "$MMA" replay --json "$OUT/h200-sweep.parquet" > "$WORK/replay.json"
    python3 - "$WORK/replay.json" <<'EOF' || true
import json, sys
r = json.load(open(sys.argv[1]))
print("replay: %s passed, %s failed, %s skipped" % (r["passed"], r["failed"], r["skipped"]))
EOF
else
    echo "no mmaemu binary carried: replay the sweep on the development machine (mmaemu replay FILE)"
fi

# --- (e) the platform bundle -------------------------------------------------------------------------------
BUNDLE=$OUT/platform-h200-cublaslt-$VERSION
if [[ -x "$MMA" && -f "$TABLE" && -f "$OUT/h200-sweep.parquet" && ! -e "$BUNDLE" ]]; then
    run platform-build 30 "$MMA" platform build --name "h200-cublaslt-$VERSION" --profile h200 --preset hopper \
        --table "$TABLE" --recordings "$OUT/h200-sweep.parquet" --out "$BUNDLE" \
        && run platform-check 120 "$MMA" platform check "$BUNDLE"
fi

# --- (f) the one command: bring-up ---------------------------------------------------------------------------
BRINGUP=(--device 0)
if [[ -n "${H200_SIMULATE:-}" ]]; then
    # The dry run's simulated device plays a random GPU (seed H200_SIMULATE_SEED, default 1).
    RTX=$ROOT/datasets/platforms/rtx4060-cublaslt-12.8.3.14/rtx4060-cublaslt-12.8.3.14.parquet
    "$REC" truth --seed "${H200_SIMULATE_SEED:-1}" --table "$RTX" --out "$WORK/truth" > /dev/null
    BRINGUP=(--simulate --profile "$WORK/truth")
fi
BRINGUP_SIZE=()
[[ "${H200_LIMIT:-}" == small || -n "${H200_SIMULATE:-}" ]] && BRINGUP_SIZE=(--size small)
BUDGET_LEFT=$(left "${H200_BRINGUP_S:-240}")
run bring-up "${H200_BRINGUP_S:-240}" "$REC" bring-up --name h200-bringup --out "$OUT/bring-up" "${BRINGUP[@]}" \
    "${BRINGUP_SIZE[@]}" --budget-minutes "$(( BUDGET_LEFT * 2 / 3 / 60 + 1 ))" > "$WORK/bring-up.out"
cat "$WORK/bring-up.out" 2>/dev/null || true

# --- (c) pack the report -----------------------------------------------------------------------------------
step "pack"
( cd "$WORK" && tar -czf "$OUT/report.tar.gz" --ignore-failed-read probe.json crosscheck.json replay.json bring-up.out \
    ./*.manifest.json 2>/dev/null ) || true
ls -la "$OUT"
step "done; failed steps: ${FAILED[*]:-none}"
(( ${#FAILED[@]} == 0 ))
