"""Every shipped recording file replayed through the Python API, compared bit for bit with the hardware's
bits (+0 and -0 differ, NaN payloads count) or with the error class the hardware's stack raised."""

from __future__ import annotations

import collections
import json
import warnings
from typing import Any, Dict, List

import pytest
import torch

import mmaemu
from conftest import recording_stems, rows_of
from replay import compute, expected_tensor, out_dtype_of, sha256_of, split_of

ERRORS = {"ReferenceRejectsError": mmaemu.ReferenceRejectsError, "UnsupportedFeatureError": mmaemu.UnsupportedFeatureError}


def replay(row: Dict[str, Any]) -> str:
    """None if the row passes, else what differs."""
    kind, value = row["expected"]
    # A row recorded when mmaemu refused the call (scope out:row-wise) holds no result bits: now that row-wise scales
    # are modelled (experimentally) it has nothing to compare (the Rust replay counts it as skipped).
    recorded_out_of_scope = kind == "error" and value == "UnsupportedFeatureError"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = compute(row)
        except mmaemu.MmaemuError as e:
            if kind == "error" and isinstance(e, ERRORS[value]):
                return ""
            if recorded_out_of_scope:
                return ""
            return f"raised {type(e).__name__}: {e}"
    if got is None or recorded_out_of_scope:
        return ""
    if kind == "error":
        return f"expected {value}, got a result"
    if kind == "sha256":
        return "" if sha256_of(got) == value else "sha256 differs"
    try:
        mmaemu.testing.assert_bitwise_equal(got, expected_tensor(row, tuple(got.shape)))
    except AssertionError as e:
        return str(e)
    return ""


@pytest.mark.parametrize("stem", recording_stems())
def test_every_row_gives_the_recorded_bits(stem: str) -> None:
    rows = rows_of(stem)
    assert rows, stem
    failures = []
    for row in rows:
        why = replay(row)
        if why:
            failures.append(f"{row['id']} ({row['op']}, {row['origin']}): {why}")
    assert not failures, f"{len(failures)} of {len(rows)} rows differ:\n" + "\n".join(failures[:10])


def features(row: Dict[str, Any]) -> List[str]:
    call = json.loads(row["call"]) if row["call"] else {}
    out = [f"op:{row['op']}", f"expected:{row['expected'][0]}"]
    if row["op"] in ("scaled_mm", "gemm") and row["expected"][0] == "bits":
        out.append(f"out_dtype:{out_dtype_of(row)}")
    if row["expected"][0] == "error":
        out.append(f"error:{row['expected'][1]}")
    for name in ("mat1", "mat2"):
        spec = call.get(name) or {}
        if spec.get("layout", "std") != "std":
            out.append(f"layout:{name}:{spec['layout']}")
        if spec.get("ld_pad", 0):
            out.append("layout:padded")
        if spec.get("offset", 0):
            out.append("layout:offset")
    if call.get("out"):
        o = call["out"]
        out.append("out=" + ("" if o.get("contiguous", True) else ":column-major"))
        if list(o["shape"]) != [row["m"], row["n"]]:
            out.append("out=:resized")
    if row["m"] * row["n"] * row["k"] == 0:
        out.append("zero-size")
    if split_of(row) not in (None, 1):
        out.append("split-k")
    return out


def test_the_replay_covers_every_feature() -> None:
    seen = collections.Counter(f for stem in recording_stems() for row in rows_of(stem) for f in features(row))
    want = ["op:scaled_mm", "op:gemm", "op:accumulator", "op:mma", "error:ReferenceRejectsError",
            "error:UnsupportedFeatureError", "layout:mat1:col", "layout:mat2:row", "layout:padded", "layout:offset",
            "out=", "out=:column-major", "out=:resized", "zero-size", "split-k"]
    want += [f"out_dtype:{d}" for d in ("float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")]
    missing = [w for w in want if seen[w] == 0]
    assert not missing, missing


@pytest.mark.parametrize("backend", ["reference", "cpu:portable", "cpu"])
def test_every_backend_gives_the_recorded_bits(backend: str) -> None:
    # A sample of the GEMM rows (every 25th, small ones for the model) through each named backend.
    rows = [r for r in rows_of("rtx4060-gemm") if r["expected"][0] == "bits"][::25]
    if backend == "reference":
        rows = [r for r in rows if r["m"] * r["n"] * r["k"] <= 1 << 20]
    failures = []
    for row in rows:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compute(row, backend=backend)
        try:
            mmaemu.testing.assert_bitwise_equal(got, expected_tensor(row, tuple(got.shape)))
        except AssertionError as e:
            failures.append(f"{row['id']}: {e}")
    assert rows and not failures, failures[:5]
