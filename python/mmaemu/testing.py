"""Bitwise comparison for tests (docs/reference.md §9.1): results are compared as integer bit patterns of
their dtype's width, so +0 and -0 differ and NaN payloads count (unless ``nan="any"``).
"""

from __future__ import annotations

from typing import Any, Tuple

from . import _arrays as arr

__all__ = ["assert_bitwise_equal", "bits"]

# Element width in bytes and the NaN test on the bit pattern (non-negative after masking the sign).
_NAN = {
    1: {"float8_e4m3fn": (0x7F, 0x7F, "eq"), "float8_e5m2": (0x7F, 0x7C, "gt")},
    2: {"bfloat16": (0x7FFF, 0x7F80, "gt"), "float16": (0x7FFF, 0x7C00, "gt")},
    4: {"float32": (0x7FFFFFFF, 0x7F800000, "gt")},
    8: {"float64": (0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, "gt")},
}


def bits(x: Any) -> Any:
    """The integer view of a tensor or array with the same element width, shape and device, no copy: uint8
    for 1-byte types, int16, int32 or int64 otherwise (a torch tensor for a tensor, a numpy array for an
    array). ``bits(a).tolist()`` gives the signed patterns; mask with ``(1 << 8 * width) - 1`` for unsigned."""
    kind = arr.kind_of(x)
    if kind is None:
        raise TypeError(f"bits(): expected a tensor or an array, got {arr.type_name(x)}")
    if isinstance(x, arr.Codes):
        return x.array
    if kind == "torch":
        torch = arr.torch_module()
        if x.is_complex():
            raise TypeError(f"bits() does not support complex dtypes ({x.dtype})")
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(x.element_size())
        if ints is None:
            raise TypeError(f"bits(): unsupported element size {x.element_size()} ({x.dtype})")
        return x if x.dtype == ints else x.view(ints)
    np = arr.numpy_module()
    ints = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}.get(x.itemsize)
    if ints is None or x.dtype.kind == "c":
        raise TypeError(f"bits(): unsupported dtype {x.dtype}")
    return x if x.dtype == ints else x.view(ints)


def _flat_bits(x: Any) -> Tuple[str, Any, int, str]:
    """(kind, flat signed-integer view of the bits, width, dtype name)."""
    kind = arr.kind_of(x)
    if kind is None:
        raise TypeError(f"expected a tensor or an array, got {arr.type_name(x)}")
    if isinstance(x, arr.Codes):
        x = x.array
    name = arr.dtype_name(x)
    if kind == "torch":
        torch = arr.torch_module()
        t = x.detach().cpu().contiguous().reshape(-1)
        width = t.element_size()
        ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[width]
        return kind, (t if t.dtype == ints else t.view(ints)), width, name
    np = arr.numpy_module()
    a = np.ascontiguousarray(x).reshape(-1)
    width = a.itemsize
    ints = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[width]
    return kind, a.view(ints), width, name


def _hex(v: int, width: int) -> str:
    return f"0x{v & ((1 << (8 * width)) - 1):0{2 * width}X}"


def _hexf(v: float) -> str:
    """``0x1.xxxp+e`` without trailing zeros (finite nonzero ``v``)."""
    mant, _, exp = v.hex().partition("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"


def _show(x: Any, i: int) -> str:
    v = float(x.reshape(-1)[i])
    if v != v or v in (float("inf"), float("-inf")) or v == 0.0:
        return repr(v)
    return f"{v!r} = {_hexf(v)}"


def assert_bitwise_equal(actual: Any, expected: Any, nan: str = "bits", *, msg: str = "") -> None:
    """Assert that two tensors (or arrays) hold the same bits: same shape, same dtype, every element's bit
    pattern equal (+0 and -0 differ). ``nan="bits"`` compares NaN payloads too; ``nan="any"`` (or its
    other name ``"mask"``) takes any NaN as equal to any NaN, so only the NaNs' positions must match.
    The failure message starts with ``msg`` (when given) and names the first differing elements.
    """
    if nan not in ("bits", "any", "mask"):
        raise ValueError(f"nan must be 'bits', 'any' or 'mask', got {nan!r}")
    if not isinstance(msg, str):
        raise TypeError(f"assert_bitwise_equal(): msg must be str, not {arr.type_name(msg)}")
    head = f"{msg}: " if msg else ""
    ka, fa, wa, na = _flat_bits(actual)
    ke, fe, we, ne = _flat_bits(expected)
    shape_a, shape_e = tuple(actual.shape), tuple(expected.shape)
    if shape_a != shape_e:
        raise AssertionError(f"{head}shapes differ: actual {shape_a}, expected {shape_e}")
    if na != ne:
        raise AssertionError(f"{head}dtypes differ: actual {na}, expected {ne}")
    if ka != ke:  # a tensor against an array: compare both as numpy bit patterns
        fa, fe = (f.numpy() if k == "torch" else f for k, f in ((ka, fa), (ke, fe)))
        ka = ke = "numpy"
        actual, expected = (x.detach().cpu().numpy() if arr.kind_of(x) == "torch" and not isinstance(x, arr.Codes)
                            else x for x in (actual, expected))
    differ = fa != fe
    if nan != "bits" and na in _NAN.get(wa, {}):
        mask, limit, how = _NAN[wa][na]
        sa, se = fa & mask, fe & mask
        both = ((sa == limit) & (se == limit)) if how == "eq" else ((sa > limit) & (se > limit))
        differ = differ & ~both
    if ka == "torch":
        idx = differ.nonzero().reshape(-1)
        count, first = int(idx.numel()), [int(i) for i in idx[:8].tolist()]
    else:
        np = arr.numpy_module()
        idx = np.flatnonzero(differ)
        count, first = int(idx.size), [int(i) for i in idx[:8]]
    if count == 0:
        return
    total = int(differ.numel()) if ka == "torch" else int(differ.size)
    shape = shape_a

    def where(i: int) -> str:
        if len(shape) <= 1:
            return str(i)
        pos = []
        for d in reversed(shape):
            pos.append(i % d)
            i //= d
        return str(tuple(reversed(pos)))

    lines = [
        f"{head}{count} of {total} elements differ; first at index {where(first[0])}: expected "
        f"{_hex(int(fe[first[0]]), we)} ({_show(expected, first[0])}) actual {_hex(int(fa[first[0]]), wa)} "
        f"({_show(actual, first[0])}) [{na}]"
    ]
    for i in first[1:]:
        lines.append(
            f"  at {where(i)}: expected {_hex(int(fe[i]), we)} ({_show(expected, i)}) actual "
            f"{_hex(int(fa[i]), wa)} ({_show(actual, i)})"
        )
    raise AssertionError("\n".join(lines))
