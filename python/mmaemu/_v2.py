"""torch 2.10's ``torch._scaled_mm_v2`` and ``torch.nn.functional.scaled_mm`` (docs/reference.md §12.6): tensor-wise
calls go to :func:`mmaemu.scaled_mm`; MXFP8 (BlockWise1x32), NVFP4 (BlockWise1x16) and block-wise 1x128 / 128x128
go to the block-scaled GEMMs of the model (§12.4, §12.5), every one experimental and warned.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any, Optional, Sequence

from . import _core, errors
from ._api import _experimental

__all__ = ["ScalingType", "SwizzleType", "scaled_mm_v2", "functional_scaled_mm", "explain_v2"]


class _ScalingType(enum.IntEnum):
    """torch 2.10's ``torch.nn.functional.ScalingType``, with its values, for a torch that lacks it."""

    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class _SwizzleType(enum.IntEnum):
    """torch 2.10's ``torch.nn.functional.SwizzleType``, for a torch that lacks it."""

    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


def _torch_enum(name: str, mirror: Any) -> Any:
    try:
        import torch.nn.functional as F
    except ImportError:
        return mirror
    return getattr(F, name, mirror)


ScalingType = _torch_enum("ScalingType", _ScalingType)
SwizzleType = _torch_enum("SwizzleType", _SwizzleType)



def _value(x: Any) -> int:
    """An enum member of torch's or the mirror (or its int) as its int value."""
    return int(getattr(x, "value", x))


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - the package's tests run with torch
        raise ImportError("mmaemu.scaled_mm_v2 takes torch tensors: install torch") from e
    return torch


def _dtype_name(dtype: Any) -> str:
    """A torch dtype's name without the ``torch.`` prefix (the model's dtype names)."""
    return str(dtype).removeprefix("torch.")


def _codes(t: Any) -> bytes:
    """A tensor's bytes in row-major order (one code per byte)."""
    torch = _torch()
    return t.contiguous().view(torch.uint8).reshape(-1).cpu().numpy().tobytes()


def _unpack_fp4(t: Any) -> bytes:
    """Packed e2m1 bytes (low nibble first, as torch's float4_e2m1fn_x2) as one code per byte."""
    torch = _torch()
    packed = t.contiguous().view(torch.uint8).reshape(-1)
    both = torch.stack([packed & 0x0F, packed >> 4], dim=-1)
    return both.reshape(-1).cpu().numpy().tobytes()


def _is_fp4(t: Any) -> bool:
    torch = _torch()
    return t.dtype == getattr(torch, "float4_e2m1fn_x2", None) or t.dtype == torch.uint8


def _fp8_name(t: Any, name: str) -> str:
    torch = _torch()
    names = {torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2"}
    if t.dtype not in names:
        raise TypeError(f"Expected {name} to be Float8 or Float4_x2 matrix got {t.dtype}")
    return names[t.dtype]


def _mode(recipes: tuple[int, int], mat_a: Any) -> str:
    r = recipes
    if r == (ScalingType_values["TensorWise"],) * 2:
        return "tensorwise"
    if r == (ScalingType_values["BlockWise1x32"],) * 2:
        return "mxfp8"
    if r == (ScalingType_values["BlockWise1x16"],) * 2:
        return "nvfp4"
    block = {ScalingType_values["BlockWise1x128"], ScalingType_values["BlockWise128x128"]}
    if set(r) <= block and r != (ScalingType_values["BlockWise128x128"],) * 2:
        return "blockwise"
    if ScalingType_values["RowWise"] in r:
        raise errors.UnsupportedFeatureError(
            "row-wise scales through scaled_mm_v2 are not modelled here; see mmaemu.scaled_mm (docs/reference.md §12.6)"
        )
    raise ValueError(f"Invalid scaling configuration: scale recipes {r} for mat_a.dtype()={mat_a.dtype}")


ScalingType_values = {m.name: m.value for m in _ScalingType}


def _blockwise_scale(s: Any, recipe: int, outer: int, k: int, name: str, other: Any) -> tuple[bytes, str]:
    """Check a block-wise scale as torch 2.10's ScaledBlas.cpp does (shape, dtype, strides; its messages) and
    return its logical row-major (rows, ceil(K / 128)) fp32 matrix and its shape name."""
    torch = _torch()
    kb = -(-k // 128)
    if recipe == ScalingType_values["BlockWise1x128"]:
        ok = tuple(s.shape) == (outer, kb) and s.dtype == torch.float32
        if not ok:
            raise ValueError(f"{name} must have shape {outer} x {kb} Float elements, got {list(s.shape)}")
        if not (s.stride(0) == 1 and (s.stride(1) == outer or (s.shape[1] == 1 and other.stride(1) == 1))):
            raise ValueError(f"{name} strides must be (1, {outer}); got: {list(s.stride())}")
        return s.contiguous().numpy().tobytes(), "1x128"
    l4 = -(-kb // 4) * 4
    tiles = -(-outer // 128)
    if not (tuple(s.shape) == (l4, tiles) and s.dtype == torch.float32):
        raise ValueError(f"{name} must have shape {l4} x {tiles} Float elements, got {list(s.shape)}")
    if not (s.stride(0) == 1 and (s.stride(1) == l4 or (s.shape[1] == 1 and s.stride(1) == 1))):
        raise ValueError(f"{name} must have strides (1, {l4}); got {list(s.stride())}")
    return s.t()[:, :kb].contiguous().numpy().tobytes(), "128x128"


def _blocked(s: Any, rows: int, cols: int, name: str, dtypes: tuple) -> bytes:
    torch = _torch()
    want = -(-rows // 128) * 128 * (-(-cols // 4) * 4)
    if s.dtype not in dtypes:
        raise TypeError(f"{name}: expected {' or '.join(str(d) for d in dtypes)} block scales, got {s.dtype}")
    if s.numel() != want:
        raise ValueError(f"For Blockwise scaling {name} should have {want} elements, got: {s.numel()}")
    if not s.is_contiguous():
        raise ValueError("For Blockwise scaling both scales should be contiguous")
    return s.view(torch.uint8).reshape(-1).cpu().numpy().tobytes()


def _global(scales: list, name: str) -> float:
    if len(scales) < 2:
        return 1.0
    g = scales[1]
    if g.numel() != 1:
        raise ValueError(f"{name}: the NVFP4 tensor scale must hold one element, got {g.numel()}")
    return float(g.float().reshape(-1)[0])


def scaled_mm_v2(
    mat_a: Any,
    mat_b: Any,
    scale_a: Sequence[Any],
    scale_recipe_a: Sequence[int],
    swizzle_a: Sequence[int],
    scale_b: Sequence[Any],
    scale_recipe_b: Sequence[int],
    swizzle_b: Sequence[int],
    bias: Any = None,
    out_dtype: Any = None,
    contraction_dim: Sequence[int] = (),
    use_fast_accum: bool = False,
    experimental: Optional[bool] = None,
    **tensorwise: Any,
) -> Any:
    """``torch._scaled_mm_v2`` of torch 2.10 on the model (docs/reference.md §12.6): lists of scales, recipes
    (``ScalingType`` values) and swizzles per operand. Tensor-wise calls are :func:`mmaemu.scaled_mm` (its keyword
    arguments ``profile``, ``splitk``, ``backend`` pass through); MXFP8, NVFP4 and block-wise calls are experimental:
    they need the opt-in (``experimental=True``, :func:`mmaemu.experimental` or ``MMAEMU_EXPERIMENTAL=1``; else
    UnsupportedFeatureError) and warn. ``mat_b`` is [K, N] (for NVFP4 the packed [K / 2, N], float4_e2m1fn_x2 or uint8 where torch lacks it).
    The output dtype defaults to bfloat16."""
    torch = _torch()
    sa, sb = _as_list(scale_a), _as_list(scale_b)
    ra, rb = [_value(x) for x in _as_list(scale_recipe_a)], [_value(x) for x in _as_list(scale_recipe_b)]
    wa, wb = [_value(x) for x in _as_list(swizzle_a)], [_value(x) for x in _as_list(swizzle_b)]
    if not sa or not sb or not ra or not rb:
        raise ValueError("scale_a, scale_recipe_a, scale_b and scale_recipe_b must each hold at least one entry")
    if mat_a.dim() != 2 or mat_b.dim() != 2:
        raise ValueError("mat_a must be a matrix" if mat_a.dim() != 2 else "mat_b must be a matrix")
    if list(contraction_dim) not in ([], [1, 0]):
        raise errors.UnsupportedFeatureError("contraction_dim other than (1, 0) is not modelled")
    mode = _mode((ra[0], rb[0]), mat_a)
    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    if mode == "tensorwise":
        if bias is not None:
            raise errors.UnsupportedFeatureError("bias with tensor-wise scaled_mm_v2 is not modelled")
        from ._api import scaled_mm

        return scaled_mm(
            mat_a, mat_b, sa[0], sb[0], out_dtype=out_dtype, use_fast_accum=use_fast_accum,
            experimental=experimental, **tensorwise
        )
    if tensorwise:
        raise TypeError(f"unexpected keyword arguments for a block-scaled call: {sorted(tensorwise)}")
    mult = 2 if mode == "nvfp4" else 1
    m, k, n = mat_a.shape[0], mat_a.shape[1] * mult, mat_b.shape[1]
    if mat_a.shape[1] != mat_b.shape[0]:
        raise ValueError(
            f"mat_a and mat_b shapes cannot be multiplied ({mat_a.shape[0]}x{mat_a.shape[1]} and "
            f"{mat_b.shape[0]}x{mat_b.shape[1]})"
        )
    one_by_128 = ScalingType_values["BlockWise1x128"]
    word = {"mxfp8": "mx", "nvfp4": "nvfp4"}.get(mode) or (
        "block128" if (ra[0], rb[0]) == (one_by_128, one_by_128) else "block128x128"
    )
    # torch's checks before the scales (bias, out dtype, K and N multiples of 16, use_fast_accum, the operands'
    # dtypes): the model's, shared with `mmaemu explain --scales` (docs/reference.md §12.7).
    fp8 = None if mode == "nvfp4" else (_dtype_name(mat_a.dtype), _dtype_name(mat_b.dtype))
    _core.block_scaled_check(word, m, n, k, fp8, _dtype_name(out_dtype), bool(use_fast_accum), bias is not None)
    shapes, globals_ = ("1x128", "1x128"), (1.0, 1.0)
    if mode == "blockwise":
        fa, fb = _fp8_name(mat_a, "mat_a"), _fp8_name(mat_b, "mat_b")
        a, b = _codes(mat_a), _codes(mat_b.t())
        xa, ha = _blockwise_scale(sa[0], ra[0], m, k, "scale_a", sb[0])
        xb, hb = _blockwise_scale(sb[0], rb[0], n, k, "scale_b", sb[0])
        shapes = (ha, hb)
    else:
        swizzle = _SwizzleType.SWIZZLE_32_4_4.value
        if (wa[:1] or [0])[0] != swizzle:
            raise ValueError("scale_a must be swizzled to SWIZZLE_32_4_4 format")
        if (wb[:1] or [0])[0] != swizzle:
            raise ValueError("scale_b must be swizzled to SWIZZLE_32_4_4 format")
        if mode == "mxfp8":
            fa, fb = _fp8_name(mat_a, "mat_a"), _fp8_name(mat_b, "mat_b")
            a, b = _codes(mat_a), _codes(mat_b.t())
            e8m0 = (torch.float8_e8m0fnu, torch.uint8)
            xa, xb = _blocked(sa[0], m, -(-k // 32), "scale_a", e8m0), _blocked(sb[0], n, -(-k // 32), "scale_b", e8m0)
        else:
            if not (_is_fp4(mat_a) and _is_fp4(mat_b)):
                raise TypeError(f"mat_a and mat_b must be fp4 types, got: {mat_a.dtype}{mat_b.dtype}")
            fa = fb = "e4m3"
            a, b = _unpack_fp4(mat_a), _unpack_fp4(mat_b.t())
            e4m3 = (torch.float8_e4m3fn, torch.uint8)
            xa, xb = _blocked(sa[0], m, k // 16, "scale_a", e4m3), _blocked(sb[0], n, k // 16, "scale_b", e4m3)
            if (len(sa) > 1) != (len(sb) > 1):
                missing = "global_scale_b" if len(sa) > 1 else "global_scale_a"
                raise ValueError(f"For two-level-scaled NVFP4, {missing} must have a value")
            globals_ = (_global(sa, "scale_a"), _global(sb, "scale_b"))
    opt_in = _experimental("scaled_mm_v2", experimental)
    bits, warned = _core.block_scaled_mm(
        word, fa, fb, a, b, m, n, k, xa, xb, shapes, globals_, _dtype_name(out_dtype), opt_in
    )
    for kind, message in warned:
        warnings.warn(message, getattr(errors, kind), stacklevel=2)
    import numpy as np

    words = np.frombuffer(bits, dtype=np.uint32).reshape(m, n)
    if out_dtype == torch.float32:
        return torch.from_numpy(words.copy()).view(torch.float32)
    return torch.from_numpy(words.astype(np.uint16).view(np.int16)).view(out_dtype)


def explain_v2(
    mode: str,
    m: int,
    n: int,
    k: int,
    *,
    mat_a_dtype: Any = None,
    mat_b_dtype: Any = None,
    out_dtype: Any = None,
    use_fast_accum: bool = False,
    bias: bool = False,
    experimental: Optional[bool] = None,
    profile: Optional[str] = None,
) -> Any:
    """What a block-scaled ``scaled_mm_v2`` call would do (docs/reference.md §12.7), without data: the model's checks
    (the same ones the call runs) and, when it would run, the kernel, plan and sources in ``kernel``, as ``mmaemu
    explain M N K --scales MODE`` prints them. ``mode`` is ``block128``, ``block128x128``, ``mx`` or ``nvfp4``; K counts
    elements (NVFP4's packed operands hold K / 2 bytes per row); the operand dtypes (torch dtypes or names, default
    float8_e4m3fn) are ignored for NVFP4; ``profile`` defaults to the mode's (hopper, b200-tcgen05-experimental).
    Never raises for the call: its first error is ``validation``."""
    from ._api import _plan

    def name(d: Any, default: str) -> str:
        return default if d is None else str(d).removeprefix("torch.")

    fp8 = None if mode == "nvfp4" else (name(mat_a_dtype, "float8_e4m3fn"), name(mat_b_dtype, "float8_e4m3fn"))
    opt_in = _experimental("explain_v2", experimental)
    return _plan(_core.block_scaled_explain(
        mode, m, n, k, fp8, name(out_dtype, "bfloat16"), bool(use_fast_accum), bool(bias), opt_in, profile
    ))


def functional_scaled_mm(
    mat_a: Any,
    mat_b: Any,
    scale_a: Any,
    scale_recipe_a: Any,
    scale_b: Any,
    scale_recipe_b: Any,
    swizzle_a: Any = None,
    swizzle_b: Any = None,
    bias: Optional[Any] = None,
    output_dtype: Optional[Any] = None,
    contraction_dim: Optional[Sequence[int]] = None,
    use_fast_accum: bool = False,
    **kwargs: Any,
) -> Any:
    """``torch.nn.functional.scaled_mm`` of torch 2.10 (docs/reference.md §12.6): single values or lists, as torch
    takes them, forwarded to :func:`scaled_mm_v2`. ``output_dtype`` defaults to bfloat16, as torch's."""
    return scaled_mm_v2(
        mat_a,
        mat_b,
        _as_list(scale_a),
        _as_list(scale_recipe_a),
        _as_list(swizzle_a),
        _as_list(scale_b),
        _as_list(scale_recipe_b),
        _as_list(swizzle_b),
        bias,
        output_dtype,
        list(contraction_dim or []),
        use_fast_accum,
        **kwargs,
    )
