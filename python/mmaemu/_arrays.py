"""Tensors and arrays as the extension reads them: torch tensors, numpy arrays (ml_dtypes float8 types) and
uint8 code arrays with an explicit format (:func:`codes`), described by dtype, shape, strides, storage
offset and address, so that the Rust core reads them where they lie (docs/reference.md R.2).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Optional, Tuple

__all__ = ["Codes", "codes"]

#: (dtype name, shape, strides in elements, storage offset, address of storage element 0, element size)
Desc = Tuple[str, Tuple[int, ...], Tuple[int, ...], int, int, int]

_FORMATS = {
    "e4m3": "float8_e4m3fn",
    "float8_e4m3fn": "float8_e4m3fn",
    "e5m2": "float8_e5m2",
    "float8_e5m2": "float8_e5m2",
}


def format_dtype(fmt: str) -> str:
    """torch's dtype name of an FP8 format name (``e4m3``, ``float8_e4m3fn``, ``e5m2``, ``float8_e5m2``)."""
    try:
        return _FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown FP8 format {fmt!r}; expected 'e4m3' or 'e5m2'") from None


@dataclass(frozen=True)
class Codes:
    """uint8 FP8 codes (a torch tensor or a numpy array) with their explicit format."""

    array: Any
    fmt: str

    def __post_init__(self) -> None:
        format_dtype(self.fmt)
        name = dtype_name(self.array) if is_array(self.array) else None
        if name != "uint8":
            raise TypeError(f"codes() takes a uint8 tensor or array of FP8 codes, got {type_name(self.array)}"
                            + (f" of dtype {name}" if name else ""))

    @property
    def dtype_name(self) -> str:
        return format_dtype(self.fmt)

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.array.shape)


def codes(array: Any, fmt: str) -> Codes:
    """Mark a uint8 tensor or array as FP8 codes of ``fmt`` (``"e4m3"`` or ``"e5m2"``), for any operand."""
    return Codes(array, fmt)


def torch_module() -> Any:
    return sys.modules.get("torch")


def numpy_module() -> Any:
    return sys.modules.get("numpy")


def is_torch(x: Any) -> bool:
    t = torch_module()
    return t is not None and isinstance(x, t.Tensor)


def is_numpy(x: Any) -> bool:
    np = numpy_module()
    return np is not None and isinstance(x, np.ndarray)


def is_array(x: Any) -> bool:
    return is_torch(x) or is_numpy(x)


def kind_of(x: Any) -> Optional[str]:
    """``"torch"``, ``"numpy"`` or None, for a tensor, an array or a :class:`Codes` of either."""
    if isinstance(x, Codes):
        x = x.array
    if is_torch(x):
        return "torch"
    if is_numpy(x):
        return "numpy"
    return None


def type_name(x: Any) -> str:
    """The type name torch's argument parser prints (``float``, ``numpy.float32``, ...)."""
    t = type(x)
    mod = t.__module__
    return t.__qualname__ if mod == "builtins" else f"{mod.split('.')[0]}.{t.__qualname__}"


_TORCH_NAMES: dict = {}


def torch_dtype_name(dt: Any) -> str:
    name = _TORCH_NAMES.get(dt)
    if name is None:
        name = str(dt).replace("torch.", "")
        _TORCH_NAMES[dt] = name
    return name


def dtype_name(x: Any) -> str:
    """torch's name of an operand's dtype (a float8 dtype for :class:`Codes`)."""
    if isinstance(x, Codes):
        return x.dtype_name
    if is_torch(x):
        return torch_dtype_name(x.dtype)
    return str(x.dtype.name)


def desc(x: Any) -> Desc:
    """The description of a tensor, array or :class:`Codes` the extension reads."""
    if isinstance(x, Codes):
        d = desc(x.array)
        return (x.dtype_name,) + d[1:]
    if is_torch(x):
        return torch_desc(x)
    size = x.itemsize
    strides = []
    for s in x.strides:
        if s < 0 or s % size:
            raise ValueError(
                f"arrays with negative strides or strides that are not a multiple of the element size are not "
                f"supported (strides {x.strides}); pass numpy.ascontiguousarray(x)"
            )
        strides.append(s // size)
    return (str(x.dtype.name), tuple(x.shape), tuple(strides), 0, x.__array_interface__["data"][0], size)


_TORCH_DT: dict = {}


def torch_dtype_info(dt: Any) -> Tuple[str, int]:
    """(name, element size) of a torch dtype."""
    info = _TORCH_DT.get(dt)
    if info is None:
        info = _TORCH_DT[dt] = (torch_dtype_name(dt), dt.itemsize)
    return info


def torch_desc(x: Any) -> Desc:
    """The description of a torch tensor (no host data for tensors off the CPU)."""
    return cpu_desc(x) if x.is_cpu else (torch_dtype_info(x.dtype)[0], x.shape, x.stride(), x.storage_offset(), 0,
                                         x.element_size())


def cpu_desc(x: Any) -> Desc:
    """The description of a CPU torch tensor."""
    off = x.storage_offset()
    dt = x.dtype
    name, size = _TORCH_DT.get(dt) or torch_dtype_info(dt)
    return (name, x.shape, x.stride(), off, x.data_ptr() - off * size, size)


def device_of(x: Any) -> str:
    if isinstance(x, Codes):
        x = x.array
    return str(x.device) if is_torch(x) else "cpu"


def torch_dtype(name: str) -> Any:
    """The torch dtype of a dtype name."""
    return getattr(torch_module(), name)


_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")


def numpy_dtype(name: str) -> Any:
    """The numpy dtype of a dtype name (ml_dtypes for bfloat16 and the float8 types)."""
    np = numpy_module()
    if name in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:
            raise ModuleNotFoundError(
                f"a {name} numpy result needs the ml_dtypes package (pip install ml_dtypes)"
            ) from None
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def check_result_bytes(shape: Tuple[int, ...], itemsize: int) -> None:
    """ValueError when a result of ``shape`` would take more than the memory ceiling (``MMAEMU_MAX_BYTES``),
    before it is allocated."""
    n = itemsize
    for d in shape:
        n *= max(int(d), 0)
    from . import _core

    _core.check_bytes("the result", n)


def empty(kind: str, shape: Tuple[int, ...], name: str) -> Any:
    """A new contiguous tensor (torch) or array (numpy) of the dtype called ``name``, after the memory
    ceiling's check."""
    if kind == "torch":
        torch = torch_module()
        check_result_bytes(shape, torch.empty((), dtype=torch_dtype(name)).element_size())
        return torch.empty(shape, dtype=torch_dtype(name))
    check_result_bytes(shape, numpy_module().dtype(numpy_dtype(name)).itemsize)
    if kind == "torch":
        return torch_module().empty(shape, dtype=torch_dtype(name))
    return numpy_module().empty(shape, dtype=numpy_dtype(name))


def dtype_arg_name(kind: str, dt: Any) -> Optional[str]:
    """The name of a dtype argument (torch: a torch.dtype or a Python scalar type; numpy: a numpy dtype or
    scalar type), or None when ``dt`` is not one."""
    if kind == "torch":
        torch = torch_module()
        if isinstance(dt, torch.dtype):
            return torch_dtype_name(dt)
        python_types = {float: "float64", int: "int64", bool: "bool", complex: "complex128"}
        return python_types.get(dt) if isinstance(dt, type) else None
    np = numpy_module()
    if isinstance(dt, np.dtype):
        return str(dt.name)
    if isinstance(dt, type) and issubclass(dt, np.generic):
        return str(np.dtype(dt).name)
    return None
