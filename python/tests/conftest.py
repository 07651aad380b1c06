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


# fesetround's modes (<fenv.h>) by machine: nearest, upward, downward, toward zero.
_FE_MODES = {
    "x86_64": {"nearest": 0, "upward": 0x800, "downward": 0x400, "toward_zero": 0xC00},
    "aarch64": {"nearest": 0, "upward": 0x400000, "downward": 0x800000, "toward_zero": 0xC00000},
}


def fesetround(mode: str) -> bool:
    """Set the calling thread's rounding mode through the C library's fesetround; False where it is unknown."""
    import ctypes
    import ctypes.util
    import platform

    modes = _FE_MODES.get(platform.machine())
    libm = ctypes.util.find_library("m")
    if modes is None or libm is None:
        return False
    return ctypes.CDLL(libm).fesetround(modes[mode]) == 0


def set_rounding(mode: str) -> None:
    """Set the calling thread's rounding mode; the test is skipped where fesetround is unknown."""
    if not fesetround(mode):
        pytest.skip("no known fesetround on this machine")


@pytest.fixture(autouse=True)
def _default_floating_point_state():
    """Every test starts and ends with subnormals kept and round to nearest (a test that sets either must not
    leak it)."""
    import torch

    torch.set_flush_denormal(False)
    yield
    torch.set_flush_denormal(False)
    fesetround("nearest")
