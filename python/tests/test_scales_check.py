"""recorder/device/scales-check.sh in its dry run (SCALES_SIMULATE=1): the torch-level recording and its replay
land under $OUT, every replayed row passes, and the script exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
from mmaemu import _core  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.mark.skipif(not hasattr(_core, "write_recording_rows"), reason="no _core.write_recording_rows in this build")
def test_dry_run(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable, SCALES_SIMULATE="1",
               SCALES_SPEC=os.path.join(ROOT, "python", "tests", "data", "record-scales.toml"))
    r = subprocess.run(["bash", os.path.join(ROOT, "recorder", "device", "scales-check.sh")], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (tmp_path / "scales-torch.parquet").is_file() and (tmp_path / "scales-log.txt").is_file()
    report = json.loads((tmp_path / "scales-replay.json").read_text())
    assert report["rows"] > 0
    assert all(v.endswith("pass") for v in (k.split()[-1] for k in report["verdicts"])), report
