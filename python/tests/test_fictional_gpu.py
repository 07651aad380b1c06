"""A GPU that exists nowhere, brought up from data alone (docs/bring-up.md): its bundle in ``data/fx1`` was made by
the loop that ``tests/fictional_gpu.rs`` runs in ``cargo test`` — sweeps and a heuristic grid recorded on the simulated
device of a preset none of the built-ins has (64-product blocks, 20 term bits) with a split rule none of them uses
(``interleaved32/tree/restart4``), the preset and the rule fitted back from those rows, the bundle built from the fits.
From Python the bundle loads and its profile gives every recorded bit, deciding its splits from its own table.
"""

from __future__ import annotations

import pathlib
import warnings

import torch

import mmaemu
from replay import expected_tensor, run_gemm, scaled_mm_args

FX1 = pathlib.Path(__file__).resolve().parent / "data" / "fx1"


def test_the_fictional_gpu_loads_and_gives_its_recorded_bits() -> None:
    p = mmaemu.load_profile(FX1)
    assert (p.name, p.maturity) == ("fx1", "experimental")
    splits = mmaemu.datasets.read_recording(FX1 / "split.parquet")
    gemms = mmaemu.datasets.read_recording(FX1 / "inst.parquet")
    assert len(splits) == 6 and len(gemms) == 36
    for row in splits:
        args, kwargs = scaled_mm_args(row)
        kwargs.pop("splitk")  # the rows recorded the layout as unknown: the bundle's table decides it
        kwargs["profile"] = str(FX1)
        plan = mmaemu.explain(*args, **kwargs)
        assert (plan.split.S, plan.split.scheme) == (row["split_s"], "interleaved32/tree/restart4"), row["id"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a loaded profile is experimental: every call warns
            got = mmaemu.scaled_mm(*args, **kwargs)
        mmaemu.testing.assert_bitwise_equal(got, expected_tensor(row, tuple(got.shape)), msg=row["id"])
    for row in gemms:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = run_gemm(row)
        mmaemu.testing.assert_bitwise_equal(got, expected_tensor(row, tuple(got.shape)), msg=row["id"])
