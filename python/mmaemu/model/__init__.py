"""The model level: ``dot``, one tensor-core chain per output (docs/reference.md §2.7), and
:mod:`mmaemu.model.epilogue` (§4).
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple, Union

from .. import _arrays as arr
from .. import _core
from .._api import Preset, emit, get_preset, list_presets
from . import epilogue

__all__ = ["dot", "epilogue", "Preset", "get_preset", "list_presets"]

_FP8 = ("float8_e4m3fn", "float8_e5m2")


def _formats(a: Any, b: Any, fmt: Union[None, str, Sequence[str]]) -> Tuple[str, str]:
    if fmt is None:
        given: Tuple[Optional[str], Optional[str]] = (None, None)
    elif isinstance(fmt, str):
        given = (fmt, fmt)
    elif isinstance(fmt, (tuple, list)) and all(isinstance(f, str) for f in fmt):
        if len(fmt) != 2:
            raise ValueError(f"dot(): fmt must be one format or a pair (fmt_a, fmt_b), got {len(fmt)} formats")
        given = (fmt[0], fmt[1])
    else:
        raise TypeError(f"dot(): argument 'fmt' must be str or a pair of str, not {arr.type_name(fmt)}")
    out = []
    for name, x, f in (("a", a, given[0]), ("b", b, given[1])):
        dtype = arr.dtype_name(x)
        if dtype in _FP8:
            if f is not None and arr.format_dtype(f) != dtype:
                raise ValueError(f"dot(): {name} is {dtype}, but fmt says {f}")
            out.append(dtype)
        elif f is None:
            raise TypeError(
                f"dot(): {name} has dtype {dtype}: pass float8_e4m3fn/float8_e5m2 tensors, or give fmt= for uint8 "
                f"codes or float values exact in the format"
            )
        else:
            out.append(arr.format_dtype(f))
    return out[0], out[1]


def dot(
    a: Any,
    b: Any,
    c: Any = None,
    *,
    preset: Union[str, "os.PathLike[str]"] = "ada",
    fmt: Union[None, str, Sequence[str]] = None,
    scale_a: Any = None,
    scale_b: Any = None,
) -> Any:
    """One chain of the preset per output: ``out[...] = c[...] + sum_k a[..., k] * b[..., k]`` as the tensor
    core computes it (§2.7). ``a`` and ``b`` have the same shape [..., K] (no broadcasting); ``c`` (fp32,
    shape a.shape[:-1], default +0) is the accumulator input. Operands are float8 tensors or arrays, or
    uint8 codes / float values exact in ``fmt`` (``"e4m3"``, ``"e5m2"`` or a pair). Returns float32.

    ``scale_a`` and ``scale_b`` (both or neither) are MXFP8 block scales (§2.8), for the presets that take them
    (``b200_tcgen05``, ``rtx50_mma_sync``): e8m0 codes (float8_e8m0fnu or uint8) of shape
    a.shape[:-1] + (ceil(K / 32),), one per 32 elements of K, the last block holding what remains.
    """
    kind = arr.kind_of(a)
    if kind is None:
        raise TypeError(f"dot(): argument 'a' (position 1) must be Tensor, not {arr.type_name(a)}")
    if arr.kind_of(b) != kind:
        raise TypeError(f"dot(): argument 'b' (position 2) must be like a, not {arr.type_name(b)}")
    if c is not None and (arr.kind_of(c) != kind or isinstance(c, arr.Codes)):
        raise TypeError(f"dot(): argument 'c' (position 3) must be like a or None, not {arr.type_name(c)}")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s is not None and (arr.kind_of(s) != kind or isinstance(s, arr.Codes)):
            raise TypeError(f"dot(): argument '{name}' must be like a or None, not {arr.type_name(s)}")
    if isinstance(preset, os.PathLike):
        preset = os.fspath(preset)
    if not isinstance(preset, str):
        raise TypeError(f"dot(): argument 'preset' must be str or a path, not {arr.type_name(preset)}")
    fa, fb = _formats(a, b, fmt)
    from .._api import _devices, _grad, _host_only

    _host_only(_devices((a, b, c, scale_a, scale_b)))
    if _grad(kind, (a, b, c)):
        from ..errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            "mmaemu is inference-only: an input requires grad while grad mode is enabled (no autograd); call it "
            "under torch.no_grad() or pass detached tensors"
        )
    da, db = arr.desc(a), arr.desc(b)
    result = arr.empty(kind, tuple(da[1][:-1]) if da[1] else (), "float32")
    sa, sb = (None if s is None else arr.desc(s) for s in (scale_a, scale_b))
    ws = _core.dot(da, db, None if c is None else arr.desc(c), preset, fa, fb, arr.desc(result), sa, sb)
    if ws:
        emit(ws)
    return result
