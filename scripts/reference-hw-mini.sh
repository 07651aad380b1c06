#!/usr/bin/env bash
# Run mmaemu 0.1.0's own hardware-subset test (tests/test_hw_mini.py, its reader hwmini.py, its conftest.py
# and its committed data tests/data/hw_mini, 2519 recorded RTX 4060 cases) unchanged against the mmaemu
# package installed in the Python environment of interpreter $1 (default: python3).
#
#   scripts/reference-hw-mini.sh [PYTHON] [PYTEST ARGS...]
#
# The 0.1.0 source distribution comes from the package index (pip download); only its tests/ files are
# used, copied into a temporary folder, so that `import mmaemu` is the installed package. Exit: pytest's.
set -euo pipefail
py="${1:-python3}"
shift || true
# A path to an interpreter (a virtual environment's bin/python) is made absolute, since the tests run from a
# temporary folder; its symlink is kept, not resolved, so that the interpreter stays the environment's.
if [[ "$py" == */* ]]; then
    py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$py" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: 'mmaemu==0.1.0' \
    -d "$work/sdist"
tar -xzf "$work"/sdist/mmaemu-0.1.0.tar.gz -C "$work/sdist"
src="$work/sdist/mmaemu-0.1.0/tests"
mkdir -p "$work/run/tests/data"
cp "$src/conftest.py" "$src/hwmini.py" "$src/test_hw_mini.py" "$work/run/tests/"
cp -r "$src/data/hw_mini" "$work/run/tests/data/"
cd "$work/run"
"$py" -c 'import mmaemu, sys; print(f"mmaemu {mmaemu.__version__} from {mmaemu.__file__}", file=sys.stderr)'
"$py" -m pytest tests/test_hw_mini.py -q -p no:cacheprovider "$@"
