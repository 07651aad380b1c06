"""The epilogue of ``torch._scaled_mm`` with tensor-wise scales (docs/reference.md §4): alpha, the single
rounding of acc · alpha + 0, the conversion to the out dtype with double rounding or saturation.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from .. import _arrays as arr
from .. import _core

__all__ = ["apply"]

Scale = Union[float, int, Any]


def _scale(name: str, kind: str, x: Any) -> float:
    if isinstance(x, bool):
        raise TypeError(f"apply(): argument '{name}' must be a number or a one-element float32 tensor, not bool")
    if isinstance(x, (float, int)):
        return float(x)
    if arr.kind_of(x) == kind and not isinstance(x, arr.Codes):
        if arr.dtype_name(x) != "float32" or int(_numel(x)) != 1:
            raise TypeError(f"apply(): {name} must be a one-element float32 tensor, got {arr.dtype_name(x)} "
                            f"of shape {tuple(x.shape)}")
        return float(x.reshape(-1)[0])
    raise TypeError(f"apply(): argument '{name}' must be a number or a one-element float32 tensor, not "
                    f"{arr.type_name(x)}")


def _numel(x: Any) -> int:
    n = 1
    for d in x.shape:
        n *= int(d)
    return n


def apply(
    acc: Any,
    scale_a: Scale,
    scale_b: Scale,
    *,
    out_dtype: Any,
    scale_result: Optional[Scale] = None,
) -> Any:
    """The fp32 accumulator ``acc`` (any shape) through the epilogue (§4): alpha = RN32(scale_a · scale_b),
    y = RN32(acc · alpha + 0), then ``out_dtype`` (float32, bfloat16, float16: one more rounding; float8:
    ``scale_result``, saturation, round to nearest even), canonical NaNs. Returns ``out_dtype``, acc's shape.
    """
    kind = arr.kind_of(acc)
    if kind is None or isinstance(acc, arr.Codes):
        raise TypeError(f"apply(): argument 'acc' (position 1) must be Tensor, not {arr.type_name(acc)}")
    od = arr.dtype_arg_name(kind, out_dtype)
    if od is None:
        raise TypeError(f"apply(): argument 'out_dtype' must be a dtype, not {arr.type_name(out_dtype)}")
    sa, sb = _scale("scale_a", kind, scale_a), _scale("scale_b", kind, scale_b)
    sr = None if scale_result is None else _scale("scale_result", kind, scale_result)
    from .._api import _devices, _host_only

    _host_only(_devices((acc,)))
    if od not in ("float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"):
        raise TypeError(f"apply(): out_dtype must be float32, bfloat16, float16, float8_e4m3fn or float8_e5m2, "
                        f"got {od}")
    d = arr.desc(acc)
    result = arr.empty(kind, tuple(d[1]), od)
    _core.epilogue(d, sa, sb, sr, od, arr.desc(result))
    return result
