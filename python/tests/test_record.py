"""``python -m mmaemu.record --simulate``: a small spec recorded through mmaemu, read back by the project's
reader and replayed call by call (the row's exact call rebuilt from its call object): every row passes, and
every case is a row or a skip that says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import mmaemu  # noqa: E402
from mmaemu import _core  # noqa: E402
from mmaemu._record import spec as specs, tensors  # noqa: E402

HERE = os.path.dirname(__file__)
SPEC = os.path.join(HERE, "data", "record-scales.toml")
WIDTH_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32}

needs_writer = pytest.mark.skipif(not hasattr(_core, "write_recording_rows"),
                                  reason="this build of mmaemu._core has no write_recording_rows")


def replay(row):
    """The row's call through mmaemu: its bits, or the name of the error it raised."""
    args, kwargs = tensors.scaled_mm_args(row)
    try:
        out = mmaemu.scaled_mm(*args, **kwargs, profile=row["profile"], splitk=row["split_s"],
                               experimental=row["scope"] in (None, "in"))
    except (mmaemu.UnsupportedFeatureError, mmaemu.ReferenceRejectsError) as e:
        return ("error", type(e).__name__)
    return ("bits", out.contiguous().view(WIDTH_INT[out.element_size()]).numpy().tobytes())


@needs_writer
def test_simulated_recording_round_trips(tmp_path):
    from mmaemu.record import record

    out = tmp_path / "scales.parquet"
    summary = record(SPEC, str(out), simulate=True, log=open(os.devnull, "w"))
    rows = mmaemu.datasets.read_recording(out)
    cases = list(specs.parse(open(SPEC).read()).cases())
    assert len(rows) + len(summary["skipped"]) == len(cases) == 2 * 2 * 6 * 2
    assert len(rows) == summary["rows"] > 0
    for why in summary["skipped"]:
        assert ": " in why, why
    if not hasattr(torch, "float4_e2m1fn_x2"):
        assert sum("(nvfp4)" in s for s in summary["skipped"]) == 8
    by_mode = {}
    for row in rows:
        assert row["truth"] == "model" and row["op"] == "scaled_mm"
        assert replay(row) == tuple(row["expected"]), row["id"]
        call = json.loads(row["call"]) if row["call"] else {}
        mode = (call.get("scale_a") or {}).get("scaling", "TensorWise")
        by_mode.setdefault(mode, []).append(row)
        if row["expected"][0] == "error" and row["expected"][1] == "UnsupportedFeatureError":
            assert row["scope"].startswith("out:"), row["id"]
    # Tensor-wise without bias is what mmaemu computes today: bits, never a refusal.
    plain = [r for r in by_mode["TensorWise"] if not r["call"]]
    assert len(plain) == 4 and all(r["expected"][0] == "bits" for r in plain)
    assert {"RowWise", "BlockWise1x128", "BlockWise1x32"} <= set(by_mode)


@needs_writer
def test_replay_catches_a_changed_bit(tmp_path):
    from mmaemu.record import record

    out = tmp_path / "one.parquet"
    record(SPEC, str(out), simulate=True, log=open(os.devnull, "w"))
    row = next(r for r in mmaemu.datasets.read_recording(out) if r["expected"][0] == "bits")
    bits = bytearray(row["expected"][1])
    bits[0] ^= 1
    assert replay(row) != ("bits", bytes(bits))


def test_bad_specs_are_refused(tmp_path):
    for text, needle in [
        ('name = "x"\nbogus = 1\n[[shapes]]\nmnk = [[16, 16, 16]]\n', "bogus"),
        ('name = "x"\nscaling = ["colwise"]\n[[shapes]]\nmnk = [[16, 16, 16]]\n', "colwise"),
        ('name = "x"\n', "shapes"),
        ('name = "x"\nruns = 1\n[[shapes]]\nmnk = [[16, 16, 16]]\n', "runs"),
    ]:
        with pytest.raises(specs.SpecError, match=needle):
            specs.parse(text)
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nbogus = 1\n')
    r = subprocess.run([sys.executable, "-m", "mmaemu.record", str(bad), "--out", str(tmp_path / "o.parquet"),
                        "--simulate"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "bogus" in r.stderr


def test_blocked_layout_is_torchs_to_blocked():
    # torch's to_blocked written as its view/permute/reshape steps, against the recorder's position rule.
    rows, cols = 130, 6
    m = torch.arange(rows * cols, dtype=torch.int32).reshape(rows, cols)
    rb, cb = -(-rows // 128), -(-cols // 4)
    padded = torch.full((rb * 128, cb * 4), -1, dtype=torch.int32)
    padded[:rows, :cols] = m
    blocks = padded.view(rb, 128, cb, 4).permute(0, 2, 1, 3)
    flat = blocks.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16).flatten()
    for r in range(rows):
        for c in range(cols):
            assert flat[tensors.position("blocked", rows, cols, r, c)] == r * cols + c
