"""The exact ``torch._scaled_mm`` call of a ``scaled_mm`` row rebuilt from its call object
(docs/recording-format.md, "The call object", revision 2 included): operands, scale tensors in their layouts
(plain, column-major, cuBLAS's blocked layout), bias and keywords, on any device.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Tuple

import torch

SHORT = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}


def dtype_of(name: str) -> torch.dtype:
    """The torch dtype of a format or dtype name; a name this torch lacks raises ``TypeError``."""
    d = getattr(torch, SHORT.get(name, name), None)
    if not isinstance(d, torch.dtype):
        raise TypeError(f"torch {torch.__version__} has no dtype {name}")
    return d


def packing(name: str) -> int:
    """Logical elements per stored element (2 for ``float4_e2m1fn_x2``)."""
    return 2 if name == "float4_e2m1fn_x2" else 1


def element(value: Any, i: int) -> float:
    """Element ``i`` of a scale's value pattern, as float64."""
    if value == "rowwise":
        return 0.25 + 0.0625 * ((7 * i) % 16)
    if value == "pow2":
        return 2.0 ** (((5 * i) % 7) - 3)
    return WORDS[value] if isinstance(value, str) else float(value)


def position(layout: str, rows: int, cols: int, r: int, c: int) -> int:
    """Storage position of logical element (r, c): row-major, column-major or torch's ``to_blocked``."""
    if layout == "std":
        return r * cols + c
    if layout == "col":
        return c * rows + r
    tile = (r // 128) * ((cols + 3) // 4) + c // 4
    rr = r % 128
    return tile * 512 + (rr % 32) * 16 + (rr // 32) * 4 + c % 4


def scale_tensor(spec: Dict[str, Any], device: str = "cpu") -> torch.Tensor:
    """A scale tensor of the call object: ``shape`` of ``value``'s pattern, converted to ``dtype``, laid out."""
    shape = tuple(spec.get("shape", []))
    layout = spec.get("layout", "std")
    dtype = dtype_of(spec.get("dtype", "float32"))
    count = math.prod(shape)
    logical = torch.tensor([element(spec["value"], i) for i in range(count)], dtype=torch.float64)
    logical = logical.to(dtype) if dtype != torch.float8_e8m0fnu else logical.to(torch.float32).to(dtype)
    if layout == "std":
        return logical.reshape(shape).to(device)
    rows, cols = shape
    if layout == "col":
        return logical.reshape(rows, cols).t().contiguous().t().to(device)
    size = ((rows + 127) // 128 * 128) * ((cols + 3) // 4 * 4)
    raw = torch.zeros(size, dtype=torch.uint8)
    src = logical.view(torch.uint8)
    for r in range(rows):
        for c in range(cols):
            raw[position("blocked", rows, cols, r, c)] = src[r * cols + c]
    return raw.view(dtype).to(device)


def operand(data: bytes, name: str, rows: int, k: int) -> torch.Tensor:
    """A [rows, k / packing] tensor of dtype ``name`` holding the row's little-endian bytes."""
    cols = k // packing(name)
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    return raw.reshape(rows, cols).view(dtype_of(name))


def scale_bits(bits: int, device: str) -> torch.Tensor:
    signed = bits - (1 << 32) if bits >= 1 << 31 else bits
    return torch.tensor([signed], dtype=torch.int32).view(torch.float32).reshape(()).to(device)


def scaled_mm_args(row: Dict[str, Any], device: str = "cpu") -> Tuple[List[Any], Dict[str, Any]]:
    """The positional and keyword arguments of the row's torch call (standard operand layouts only)."""
    call = json.loads(row["call"]) if row.get("call") else {}
    fa = (call.get("mat1") or {}).get("dtype") or row["fmt_a"]
    fb = (call.get("mat2") or {}).get("dtype") or row["fmt_b"]
    a = operand(row["a"], fa, row["m"], row["k"]).to(device)
    b = operand(row["b"], fb, row["n"], row["k"]).to(device).t()
    sa = scale_tensor(call["scale_a"], device) if call.get("scale_a") else scale_bits(row["scale_a"], device)
    sb = scale_tensor(call["scale_b"], device) if call.get("scale_b") else scale_bits(row["scale_b"], device)
    kwargs: Dict[str, Any] = {}
    if call.get("scale_result"):
        kwargs["scale_result"] = scale_tensor(call["scale_result"], device)
    elif row.get("scale_result") is not None:
        kwargs["scale_result"] = scale_bits(row["scale_result"], device)
    bias = call.get("bias")
    if bias:
        values = torch.tensor([0.125 * j - 1 for j in range(bias["len"])], dtype=torch.float64)
        kwargs["bias"] = values.to(dtype_of(bias["dtype"])).to(device)
    if row.get("out_dtype") is not None:
        kwargs["out_dtype"] = dtype_of(row["out_dtype"])
    kwargs["use_fast_accum"] = bool(row.get("fast_accum"))
    return [a, b, sa, sb], kwargs
