#!/usr/bin/env bash
# recorder/device/scales-check.sh: the device stage of the scale modes (row-wise, bias, block-wise, MXFP8, NVFP4),
# at most SCALES_BUDGET_S seconds (default 240).
#
# Runs on the GPU machine (python3 with torch and CUDA): the torch-level recorder (python -m mmaemu.record,
# docs/recording-format.md "The torch-level recorder") records what torch._scaled_mm returns for every call of
# recorder/device/scales-torch.toml, with the kernels torch.profiler saw and the torch version; the recording is
# then replayed through mmaemu (python/tests/test_record.py's replay rule), and the rows that disagree or that
# mmaemu refuses are counted in $OUT/scales-replay.json. A step that fails is reported and the next one runs.
#
# Outputs under $OUT (default ./device-out): scales-torch.parquet, scales-replay.json, scales-log.txt.
# Environment: PYTHON (default python3; must import torch and an mmaemu with _core.write_recording_rows),
# SCALES_SPEC (default recorder/device/scales-torch.toml), SCALES_SIMULATE=1 for a dry run without a GPU
# (--simulate: mmaemu computes the rows, truth = model).

set -uo pipefail
START=$(date +%s)
BUDGET=${SCALES_BUDGET_S:-240}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/device-out}
PY=${PYTHON:-python3}
SPEC=${SCALES_SPEC:-$ROOT/recorder/device/scales-torch.toml}
mkdir -p "$OUT"
exec > >(tee "$OUT/scales-log.txt") 2>&1
export PYTHONUNBUFFERED=1

step() { echo "== [$(( $(date +%s) - START ))s] $*" >&2; }
left() {
    local rest=$(( BUDGET - ($(date +%s) - START) ))
    (( rest < 5 )) && rest=5
    (( rest < $1 )) && echo "$rest" || echo "$1"
}
FAILED=()
run() { # run NAME CAP command...: with a time limit; a failure is remembered, never fatal
    local name=$1 cap=$2; shift 2
    step "$name (limit $(left "$cap")s)"
    timeout "$(left "$cap")" "$@"
    local rc=$?
    (( rc != 0 )) && { echo "!! $name: exit code $rc" >&2; FAILED+=("$name:$rc"); }
    return $rc
}

SIM=()
[[ "${SCALES_SIMULATE:-0}" == 1 ]] && SIM=(--simulate)
step "environment: $("$PY" -c 'import torch, mmaemu; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "mmaemu", mmaemu.__version__)' 2>&1)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

run "torch-level recording" 150 "$PY" -m mmaemu.record "$SPEC" --out "$OUT/scales-torch.parquet" "${SIM[@]}"

if [[ -f "$OUT/scales-torch.parquet" ]]; then
    run "replay through mmaemu" 80 "$PY" - "$OUT/scales-torch.parquet" "$OUT/scales-replay.json" <<'PYEOF'
import collections, json, sys
import mmaemu
from mmaemu._record import tensors
rows = mmaemu.datasets.read_recording(sys.argv[1])
count = collections.Counter()
for row in rows:
    args, kwargs = tensors.scaled_mm_args(row)
    mode = (json.loads(row["call"] or "{}").get("scale_a") or {}).get("scaling", "TensorWise")
    split = row["split_s"] if row["split_scheme"] != "unknown" else None
    try:
        # A row is evidence of its call: opted in to the experimental modes unless recorded as out of scope.
        out = mmaemu.scaled_mm(*args, **kwargs, profile=row["profile"], splitk=split,
                               experimental=row["scope"] in (None, "in"))
        import torch
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[out.element_size()]
        got = ("bits", out.contiguous().view(ints).numpy().tobytes())
    except (mmaemu.UnsupportedFeatureError, mmaemu.ReferenceRejectsError, mmaemu.SplitKUnknownError) as e:
        got = ("error", type(e).__name__)
    verdict = "pass" if got == tuple(row["expected"]) else ("refused" if got[0] == "error" else "differs")
    count[f"{mode} {verdict}"] += 1
json.dump({"rows": len(rows), "verdicts": dict(sorted(count.items()))}, open(sys.argv[2], "w"), indent=1)
print(json.dumps(dict(sorted(count.items()))))
PYEOF
fi

step "done in $(( $(date +%s) - START ))s; failed steps: ${FAILED[*]:-none}"
ls -l "$OUT"/scales-* 2>/dev/null
(( ${#FAILED[@]} == 0 ))
