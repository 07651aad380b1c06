"""``trace`` and ``attribute``: why a ``scaled_mm`` call gives the bits it gives. ``trace`` re-executes one output
element step by step (docs/trace.md); ``attribute`` splits every output's error against the exact result into its
sources, whose parts add up exactly to the total.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import _core
from ._api import _FN, _call_args, _host_only, _raise_with_warnings
from ._arrays import type_name

__all__ = ["trace", "attribute", "Attribution"]


def _args(input, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, profile, splitk):
    _, args, device = _call_args(
        _FN, input, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, None, profile, splitk,
        "reference",
    )
    _host_only(device)
    return args


_INDEX_LIMIT = 1 << 63


def _element(element: Any) -> Tuple[int, int]:
    """``element`` as (i, j): a pair of integers (Python or numpy, not bool: a bool is no index), each in
    [0, 2^63); the call then checks them against the result's [M, N]."""
    if isinstance(element, (tuple, list)) and len(element) == 2:
        ij = [None if isinstance(x, bool) or not hasattr(type(x), "__index__") else operator.index(x)
              for x in element]
        if ij[0] is not None and ij[1] is not None:
            for v in ij:
                if not 0 <= v < _INDEX_LIMIT:
                    raise ValueError(f"trace(): element = ({ij[0]}, {ij[1]}): each index must be in [0, 2^63), "
                                     f"got {v}")
            return ij[0], ij[1]
    raise TypeError(f"trace(): argument 'element' must be a pair of integers (i, j), not {_describe(element)}")


def _describe(x: Any) -> str:
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of {', '.join(type_name(v) for v in x) or 'nothing'}"
    return type_name(x)


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
    i, j = _element(element)
    try:
        return json.loads(_core.trace(args, i, j))
    except Exception as e:
        _raise_with_warnings(e)
        raise


@dataclass(frozen=True)
class Attribution:
    """Every output of a call attributed. ``summary`` holds per source (total, term truncation, block truncation,
    chunk and split additions, epilogue rounding) the outputs affected, the mean and largest |part| in ulps of the
    out dtype and a histogram. The arrays are [M, N] (``ulps`` [M, N, 5], signed, in that source order): numpy
    arrays when numpy is installed, else flat Python lists. ``attributed`` (bool) marks the outputs with an
    attribution (every value on the way finite); on the others ``exact`` and ``ulps`` are NaN (no exact value
    to compare with, not an error of 0) while ``bits`` and ``emulated`` are still the call's."""

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

