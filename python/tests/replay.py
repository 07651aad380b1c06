"""Recording rows (docs/recording-format.md) rebuilt as calls of the Python API: the exact torch call of a
``scaled_mm`` row (layouts, padding, offsets, scale tensors, bias, out=, omitted keywords), ``gemm`` and
``accumulator`` rows through ``accumulate`` and the epilogue, ``mma`` rows through ``model.dot``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Dict, Optional, Tuple

import torch

import mmaemu
from mmaemu.model import epilogue

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RECORDINGS = os.path.join(REPO, "datasets", "recordings")

SHORT = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
INT_OF_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def dtype_of(name: str) -> torch.dtype:
    return getattr(torch, SHORT.get(name, name))


def logical(data: bytes, dtype: torch.dtype, shape: Tuple[int, ...]) -> torch.Tensor:
    """A contiguous tensor of ``dtype`` holding the little-endian element bytes ``data``."""
    width = torch.empty((), dtype=dtype).element_size()
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    return raw.view(INT_OF_WIDTH[width]).view(dtype).reshape(shape)


def strided(values: torch.Tensor, strides: Tuple[int, int], offset: int) -> torch.Tensor:
    """``values`` [r, c] copied bit for bit into a fresh storage at ``offset`` with ``strides``."""
    r, c = values.shape
    extent = 0 if r == 0 or c == 0 else (r - 1) * strides[0] + (c - 1) * strides[1] + 1
    width = values.element_size()
    ints = INT_OF_WIDTH[width]
    storage = torch.full((offset + extent + 1,), 0x11, dtype=ints)
    view = storage.as_strided((r, c), strides, offset)
    view.copy_(values.view(ints))
    return storage.view(values.dtype).as_strided((r, c), strides, offset)


def mat1(row: Dict[str, Any], spec: Dict[str, Any]) -> torch.Tensor:
    m, k = row["m"], row["k"]
    dtype = dtype_of(spec.get("dtype") or row["fmt_a"])
    a = logical(row["a"], dtype, (m, k))
    pad, off = spec.get("ld_pad", 0), spec.get("offset", 0)
    strides = (k + pad, 1) if spec.get("layout", "std") == "std" else (1, m + pad)
    return strided(a, strides, off)


def mat2(row: Dict[str, Any], spec: Dict[str, Any]) -> torch.Tensor:
    n, k = row["n"], row["k"]
    dtype = dtype_of(spec.get("dtype") or row["fmt_b"])
    b = logical(row["b"], dtype, (n, k))  # B is [n, k]; mat2 is its transpose [k, n]
    pad, off = spec.get("ld_pad", 0), spec.get("offset", 0)
    if spec.get("layout", "std") == "std":
        return strided(b, (k + pad, 1), off).t()
    return strided(b, (1, n + pad), off).t()


WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}


def scale_tensor(spec: Dict[str, Any]) -> torch.Tensor:
    shape = tuple(spec.get("shape", []))
    count = math.prod(shape)
    v = spec["value"]
    if v == "rowwise":
        values = [0.25 + 0.0625 * ((7 * i) % 16) for i in range(count)]
    else:
        values = [WORDS[v] if isinstance(v, str) else float(v)] * count
    return torch.tensor(values, dtype=torch.float64).reshape(shape).to(dtype_of(spec.get("dtype", "float32")))


def scale_bits(bits: int) -> torch.Tensor:
    """A 0-dim float32 scale with exactly these bits."""
    signed = bits - (1 << 32) if bits >= 1 << 31 else bits
    return torch.tensor([signed], dtype=torch.int32).view(torch.float32).reshape(())


def out_buffer(spec: Dict[str, Any]) -> torch.Tensor:
    dtype = dtype_of(spec["dtype"])
    shape = tuple(spec["shape"])
    if len(shape) == 2 and not spec.get("contiguous", True):
        buf = torch.empty((shape[1], shape[0]), dtype=dtype).t()
    else:
        buf = torch.empty(shape, dtype=dtype)
    fill = spec.get("fill")
    if fill is None:
        width = buf.element_size()
        buf.view(INT_OF_WIDTH[width]).fill_(int.from_bytes(b"\x7f" * width, "little", signed=width > 1))
    else:
        buf.fill_(WORDS.get(fill, fill) if isinstance(fill, str) else fill)
    return buf


def split_of(row: Dict[str, Any]) -> Any:
    s, scheme = row["split_s"] or 1, row["split_scheme"] or "none"
    if scheme == "unknown":
        return None
    return 1 if scheme == "none" else (s, scheme)


def out_dtype_of(row: Dict[str, Any]) -> str:
    """The effective out dtype of a row (docs/recording-format.md, column notes)."""
    if row["op"] in ("mma", "accumulator"):
        return "float32"
    if row["out_dtype"]:
        return row["out_dtype"]
    call = json.loads(row["call"]) if row["call"] else {}
    if call.get("out"):
        return call["out"]["dtype"]
    return SHORT.get(row["fmt_a"], row["fmt_a"])


def scaled_mm_args(row: Dict[str, Any]) -> Tuple[list, Dict[str, Any]]:
    """The positional and keyword arguments of the row's exact torch call (profile and split included)."""
    call = json.loads(row["call"]) if row["call"] else {}
    a = mat1(row, call.get("mat1") or {})
    b = mat2(row, call.get("mat2") or {})
    sa = scale_tensor(call["scale_a"]) if call.get("scale_a") else scale_bits(row["scale_a"])
    sb = scale_tensor(call["scale_b"]) if call.get("scale_b") else scale_bits(row["scale_b"])
    kwargs: Dict[str, Any] = {}
    if call.get("scale_result"):
        kwargs["scale_result"] = scale_tensor(call["scale_result"])
    elif row["scale_result"] is not None:
        kwargs["scale_result"] = scale_bits(row["scale_result"])
    args = [a, b, sa, sb]
    bias_spec = call.get("bias")
    if bias_spec:
        n = bias_spec["len"]
        bias = torch.tensor([0.125 * j - 1 for j in range(n)], dtype=torch.float64).to(dtype_of(bias_spec["dtype"]))
        if call.get("positional_bias"):
            args.append(bias)
        else:
            kwargs["bias"] = bias
    if row["out_dtype"] is not None and call.get("out_dtype_passed", True):
        kwargs["out_dtype"] = dtype_of(row["out_dtype"])
    if call.get("use_fast_accum_passed", True):
        kwargs["use_fast_accum"] = bool(row["fast_accum"])
    if call.get("out"):
        kwargs["out"] = out_buffer(call["out"])
    kwargs.update(profile=row["profile"], splitk=split_of(row))
    return args, kwargs


def run_scaled_mm(row: Dict[str, Any], backend: str = "auto") -> torch.Tensor:
    args, kwargs = scaled_mm_args(row)
    # A row is evidence of its call (scope null or "in"): an experimental mode is opted in to; a row recorded as out
    # of scope expects the UnsupportedFeatureError a call without the opt-in raises.
    experimental = row.get("scope") in (None, "in")
    return mmaemu.scaled_mm(*args, **kwargs, backend=backend, experimental=experimental)


def codes_tensor(data: bytes, fmt: str, shape: Tuple[int, ...]) -> torch.Tensor:
    return logical(data, dtype_of(fmt), shape)


def run_gemm(row: Dict[str, Any], backend: str = "auto") -> torch.Tensor:
    m, n, k = row["m"], row["n"], row["k"]
    a = codes_tensor(row["a"], row["fmt_a"], (m, k))
    b = codes_tensor(row["b"], row["fmt_b"], (n, k))
    profile = row["profile"] or {"ada": "ada", "hopper": "hopper"}[row["preset"]]
    acc = mmaemu.accumulate(a, b, use_fast_accum=bool(row["fast_accum"]), splitk=split_of(row), profile=profile,
                            backend=backend)
    if row["op"] == "accumulator":
        return acc
    od = dtype_of(out_dtype_of(row))
    if k == 0:  # K = 0 gives +0 without an epilogue (docs/reference.md §4)
        out = torch.zeros((m, n), dtype=od)
    else:
        sr = None if row["scale_result"] is None else scale_bits(row["scale_result"])
        out = epilogue.apply(acc, scale_bits(row["scale_a"]), scale_bits(row["scale_b"]), out_dtype=od,
                             scale_result=sr)
    if row["out_select"] == "diagonal":
        return torch.diagonal(out).contiguous()
    return out


def run_mma(row: Dict[str, Any]) -> torch.Tensor:
    batch, m, n, k = row["batch"], row["m"], row["n"], row["k"]
    a = codes_tensor(row["a"], row["fmt_a"], (batch, m, k))
    b = codes_tensor(row["b"], row["fmt_b"], (batch, n, k))
    c = logical(row["c"], torch.float32, (batch, m, n))
    # out[t, i, j] over a[t, i, :] and b[t, j, :]: both broadcast to [batch, m, n, k] as strided views.
    ae = a[:, :, None, :].expand(batch, m, n, k)
    be = b[:, None, :, :].expand(batch, m, n, k)
    return mmaemu.model.dot(ae, be, c, preset=row["preset"])


def compute(row: Dict[str, Any], backend: str = "auto") -> Optional[torch.Tensor]:
    """The row's result through the Python API (None: the row records a split without a rule)."""
    if split_of(row) is None and row["op"] != "mma":
        return None
    if row["op"] == "scaled_mm":
        return run_scaled_mm(row, backend)
    if row["op"] in ("gemm", "accumulator"):
        return run_gemm(row, backend)
    return run_mma(row)


def expected_tensor(row: Dict[str, Any], actual_shape: Tuple[int, ...]) -> torch.Tensor:
    kind, value = row["expected"]
    assert kind == "bits"
    return logical(value, dtype_of(out_dtype_of(row)), actual_shape)


def sha256_of(t: torch.Tensor) -> str:
    width = t.element_size()
    data = t.contiguous().view(INT_OF_WIDTH[width]).numpy().tobytes()
    return hashlib.sha256(data).hexdigest()
