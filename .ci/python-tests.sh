#!/usr/bin/env bash
# The Python package's tests: a fresh virtual environment (VENV, default .venv-ci) with maturin, pytest,
# numpy, ml_dtypes, torch 2.7.1 for CPU use and MMA-Sim, then `pip install ./python` (the Rust extension built by
# maturin in release mode), `pytest python/tests` (its "no tests collected", exit 5, is a failure), then mmaemu
# 0.1.0's own tests/test_hw_mini.py against the package (scripts/reference-hw-mini.sh).
# pip keeps no cache (--no-cache-dir): a fresh environment each run gains nothing from one but the disk it takes.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${VENV:-.venv-ci}"
python3 -m venv "$venv"
py="$venv/bin/python"
pip=("$py" -m pip install --quiet --disable-pip-version-check --no-cache-dir)
"${pip[@]}" maturin pytest numpy ml_dtypes
bash .ci/install-torch.sh "$py"
"${pip[@]}" ./python
# MMA-Sim, the independent oracle of the instruction-level tests (python/tests/test_block_scaled_dot.py): without its
# dependencies (it asks for a newer torch than the 2.7.1 the package is tested with, and runs with it), plus ninja for
# the C++ extension it compiles on first use. Where it cannot be installed its tests skip and say why.
"${pip[@]}" --no-deps mmasim && "${pip[@]}" ninja || echo ".ci/python-tests.sh: mmasim could not be installed; its tests will skip" >&2
# From the repository root, so that `import mmaemu` is the installed package, not python/mmaemu.
set +e
# The environment's bin first on PATH: torch finds ninja there when MMA-Sim compiles its extension.
PATH="$(cd "$venv/bin" && pwd):$PATH" "$venv/bin/pytest" python/tests -q -p no:cacheprovider
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo ".ci/python-tests.sh: pytest collected no tests" >&2
    exit 1
fi
if [ "$rc" -ne 0 ]; then
    exit "$rc"
fi
# mmaemu 0.1.0's own hardware-subset test, unchanged, against this package (python/README.md, "Coming from
# mmaemu 0.1.0"): about 3 minutes.
bash scripts/reference-hw-mini.sh "$py"
