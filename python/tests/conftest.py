"""Shared fixtures: the shipped recordings, read once per test run through the project's reader."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Dict, List

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from replay import RECORDINGS  # noqa: E402

import mmaemu  # noqa: E402


@functools.lru_cache(maxsize=None)
def rows_of(stem: str) -> List[Dict[str, Any]]:
    return mmaemu.datasets.read_recording(os.path.join(RECORDINGS, stem + ".parquet"))


def recording_stems() -> List[str]:
    return sorted(f[: -len(".parquet")] for f in os.listdir(RECORDINGS) if f.endswith(".parquet"))


@pytest.fixture(autouse=True)
def _no_flush_to_zero():
    """Every test starts and ends with subnormals kept (a test that sets FTZ must not leak it)."""
    import torch

    torch.set_flush_denormal(False)
    yield
    torch.set_flush_denormal(False)
