"""``trace`` and ``attribute``: why a ``scaled_mm`` call gives the bits it gives. ``trace`` re-executes one output
element step by step (docs/trace.md); ``attribute`` splits every output's error against the exact result into its
sources, whose parts add up exactly to the total.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import _core
from ._api import _FN, _call_args, _host_only, _raise_with_warnings

__all__ = ["trace", "attribute", "Attribution"]


def _args(input, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, profile, splitk):
    _, args, device = _call_args(
        _FN, input, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, None, profile, splitk,
        "reference",
    )
    _host_only(device)
    return args


def trace(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    bias: Any = None,
    scale_result: Any = None,
    out_dtype: Any = None,
    use_fast_accum: bool = False,
    *,
    element: Tuple[int, int] = (0, 0),
    profile: Optional[str] = None,
    splitk: Any = "auto",
) -> Dict[str, Any]:
    """The trace of output ``element`` of ``scaled_mm(...)`` with the same arguments, as ``mmaemu trace --json``
    prints it: the plan, every block and product, every fp32 addition, the epilogue, the attribution and ``bits``
    (the element's bits in the out dtype, equal to ``scaled_mm``'s). Raises what ``scaled_mm`` would raise."""
    args = _args(input, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, profile, splitk)
    i, j = element
    try:
        return json.loads(_core.trace(args, int(i), int(j)))
    except Exception as e:
        _raise_with_warnings(e)
        raise


@dataclass(frozen=True)
class Attribution:
    """Every output of a call attributed. ``summary`` holds per source (total, term truncation, block truncation,
    chunk and split additions, epilogue rounding) the outputs affected, the mean and largest |part| in ulps of the
    out dtype and a histogram. The arrays are [M, N] (``ulps`` [M, N, 5], signed, in that source order): numpy
    arrays when numpy is installed, else flat Python lists."""

    summary: Dict[str, Any]
    bits: Any
    attributed: Any
    exact: Any
    emulated: Any
    ulps: Any


def _arrays(m: int, n: int, raw: List[bytes]) -> List[Any]:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is optional
        import array

        out = []
        for code, b in zip(["I", "B", "d", "d", "d"], raw):
            a = array.array(code)
            a.frombytes(b)
            out.append(a.tolist())
        return out
    shapes = [(m, n), (m, n), (m, n), (m, n), (m, n, 5)]
    dts = ["<u4", "u1", "<f8", "<f8", "<f8"]
    out = [np.frombuffer(b, dtype=d).reshape(s).copy() for b, d, s in zip(raw, dts, shapes)]
    out[1] = out[1].astype(bool)
    return out


def attribute(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    bias: Any = None,
    scale_result: Any = None,
    out_dtype: Any = None,
    use_fast_accum: bool = False,
    *,
    profile: Optional[str] = None,
    splitk: Any = "auto",
) -> Attribution:
    """Every output of ``scaled_mm(...)`` with the same arguments attributed (``mmaemu attribute``): on each, the
    parts were checked in exact arithmetic to add up to the total (emulated − exact)."""
    args = _args(input, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, profile, splitk)
    try:
        s, *raw = _core.attribute(args)
    except Exception as e:
        _raise_with_warnings(e)
        raise
    summary = json.loads(s)
    bits, att, exact, emulated, ulps = _arrays(summary["m"], summary["n"], raw)
    return Attribution(summary, bits, att, exact, emulated, ulps)

