#!/usr/bin/env bash
# scripts/bring-up-seeds.sh SEED...: for each seed, a random GPU (`mmaemu-record truth`) brought up on the simulated
# device (`mmaemu-record bring-up --simulate`), one summary line each: exit code, seconds, device calls per stage, the
# preset fit's verdict, each customOption's verdict, and the check (passed/failed/skipped).
# Environment: MMAEMU_RECORD (the binary; default target/release/mmaemu-record), WORK (default a temporary directory).
set -uo pipefail
B=${MMAEMU_RECORD:-target/release/mmaemu-record}
WORK=${WORK:-$(mktemp -d /tmp/bring-up-seeds.XXXXXX)}
for s in "$@"; do
  rm -rf "$WORK/s$s" && mkdir -p "$WORK/s$s"
  "$B" truth --seed "$s" --out "$WORK/s$s/truth" > /dev/null || { echo "seed $s: no truth"; continue; }
  start=$(date +%s)
  "$B" bring-up --simulate --profile "$WORK/s$s/truth" --name "gpu$s" --out "$WORK/s$s/out" -q \
      > "$WORK/s$s/out.json" 2> "$WORK/s$s/err.txt"
  rc=$?
  python3 - "$WORK/s$s/out/bring-up.json" "$s" "$rc" "$(( $(date +%s) - start ))" <<'PY'
import json, sys
path, s, rc, secs = sys.argv[1:]
r = json.load(open(path))
rules = ", ".join(f"{c['label']} {c['verdict']}" for c in r["custom_options"]) or "none fitted"
c = r["check"]
print(f"seed {s}: exit {rc}, {secs} s, {r['calls']['total']} calls {r['calls']['per_stage']}, "
      f"preset {r['preset']['fit']['verdict']}, {rules}, check {c['passed']}/{c['failed']}/{c['skipped']}")
PY
done
