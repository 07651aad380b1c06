"""The torch-facing API: ``scaled_mm`` with torch 2.7.1's signature, ``explain``, ``accumulate`` and the profile,
preset and backend queries (docs/reference.md §5, §6.1, §8.1, §9.5): the Python argument checks (R.6), the tensor
descriptions, the result allocation and the warnings; the contract's checks and arithmetic are the Rust core's.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import sys
import warnings
import operator
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

from . import _arrays as arr
from . import _core
from ._records import (BackendsStatus, BackendStatus, CallPlan, ErrorInfo, Preset, Profile, RejectRule, SplitArg,
                       SplitDecision, SplitK, WarningInfo, _short)
from .errors import WARNING_CLASSES, ReferenceRejectsError, UnsupportedFeatureError

if TYPE_CHECKING:  # Python 3.9 has no ParamSpec; only type checkers read it (annotations are strings).
    from typing_extensions import ParamSpec

    _P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "scaled_mm",
    "experimental",
    "explain",
    "accumulate",
    "get_profile",
    "list_profiles",
    "load_profile",
    "get_preset",
    "list_presets",
    "backends_status",
    "CallPlan",
    "ErrorInfo",
    "SplitDecision",
    "SplitK",
    "RejectRule",
    "WarningInfo",
    "Profile",
    "Preset",
    "BackendStatus",
    "BackendsStatus",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------------------
# Argument checks of a dynamically typed caller (R.6)


def _type_error(fn: str, name: str, pos: Optional[int], expected: str, got: Any) -> TypeError:
    where = f" (position {pos})" if pos else ""
    return TypeError(f"{fn}(): argument '{name}'{where} must be {expected}, not {arr.type_name(got)}")


def _tensor(fn: str, kind: str, name: str, pos: Optional[int], x: Any, optional: bool, codes: bool = False) -> None:
    if x is None and optional:
        return
    k = arr.kind_of(x)
    if k == kind and (codes or not isinstance(x, arr.Codes)):
        return
    raise _type_error(fn, name, pos, "Tensor" if kind == "torch" else "numpy.ndarray", x)


# The opt-in to the experimental modes of this thread or asyncio task (None: MMAEMU_EXPERIMENTAL's, read by the core).
_EXPERIMENTAL: "contextvars.ContextVar[Optional[bool]]" = contextvars.ContextVar("mmaemu_experimental", default=None)


@contextlib.contextmanager
def experimental(enabled: bool = True) -> Iterator[None]:
    """A context in which calls of this thread or asyncio task opt in to (or, with ``enabled=False``, out of) the
    experimental modes: row-wise scales with or without a bias, and ``scaled_mm_v2``'s block-scaled calls. Without
    an opt-in (this, a call's ``experimental=True``, ``patch(experimental=True)`` or ``MMAEMU_EXPERIMENTAL=1``) they
    raise :class:`UnsupportedFeatureError`, as the 0.1 contract says (docs/reference.md §5.2 step 7)."""
    if type(enabled) is not bool:
        raise _type_error("experimental", "enabled", 1, "bool", enabled)
    token = _EXPERIMENTAL.set(enabled)
    try:
        yield
    finally:
        _EXPERIMENTAL.reset(token)


def _experimental(fn: str, value: Any) -> Optional[bool]:
    """A call's opt-in: its own bool, else the context's, else None (MMAEMU_EXPERIMENTAL decides in the core)."""
    if value is None:
        return _EXPERIMENTAL.get()
    if type(value) is not bool:
        raise _type_error(fn, "experimental", None, "bool or None", value)
    return value


_SPLIT_LIMIT = 1 << 62


def _split_count(fn: str, s: Any) -> Optional[int]:
    """S as an int (Python or numpy integer, not bool), checked against the binding's range; None if not one."""
    if isinstance(s, bool) or not hasattr(type(s), "__index__"):
        return None
    v = operator.index(s)
    if not -_SPLIT_LIMIT < v < _SPLIT_LIMIT:
        raise ValueError(f"{fn}(): splitk S = {v} is far beyond any split a GEMM can have (K / 64 at most)")
    return v


def _splitk(fn: str, splitk: Any) -> Tuple[str, int, str]:
    if isinstance(splitk, str):
        if splitk == "auto":
            return ("auto", 0, "")
        raise ValueError(f"{fn}(): splitk must be 'auto', an integer S or (S, scheme), got {splitk!r}")
    if isinstance(splitk, SplitK):
        s = _split_count(fn, splitk.S)
        return ("count", 1, "") if s == 1 else ("pair", s or 0, splitk.scheme)
    s = _split_count(fn, splitk)
    if s is not None:
        return ("count", s, "")
    if isinstance(splitk, (tuple, list)) and len(splitk) == 2:
        s, scheme = _split_count(fn, splitk[0]), splitk[1]
        if s is not None and isinstance(scheme, str):
            return ("pair", s, scheme)
    raise _type_error(fn, "splitk", None, "'auto', int, (int, str) or SplitK", splitk)


def _is_bundle(profile: Any) -> bool:
    """A path to a platform bundle rather than a profile's name (docs/platform-format.md)."""
    if isinstance(profile, os.PathLike):
        return True
    path = profile.split("#", 1)[0]
    return "/" in path or os.sep in path or path.endswith("platform.toml")


def _profile(fn: str, profile: Any) -> Optional[str]:
    if profile is not None and (isinstance(profile, os.PathLike) or (isinstance(profile, str) and _is_bundle(profile))):
        return load_profile(profile).name
    if profile is None or isinstance(profile, str):
        return profile
    if isinstance(profile, Profile):
        return profile.name
    raise _type_error(fn, "profile", None, "str, Profile or None", profile)


def _backend(fn: str, backend: Any) -> str:
    if isinstance(backend, str):
        return backend
    raise _type_error(fn, "backend", None, "str", backend)


def _bool(fn: str, name: str, pos: Optional[int], x: Any) -> bool:
    if type(x) is bool:
        return x
    raise _type_error(fn, name, pos, "bool", x)


def _dtype(fn: str, kind: str, name: str, pos: Optional[int], x: Any) -> Optional[str]:
    if x is None:
        return None
    got = arr.dtype_arg_name(kind, x)
    if got is None:
        raise _type_error(fn, name, pos, "torch.dtype" if kind == "torch" else "numpy.dtype", x)
    return got


def _grad(kind: str, tensors: Sequence[Any]) -> bool:
    if kind != "torch":
        return False
    torch = arr.torch_module()
    if not torch.is_grad_enabled():
        return False
    return any(t is not None and not isinstance(t, arr.Codes) and t.requires_grad for t in tensors)


def _devices(tensors: Sequence[Any]) -> str:
    """The one device of the tensors; ReferenceRejectsError for several (§5.2 step 2.14)."""
    devices = []
    for t in tensors:
        if t is not None:
            d = arr.device_of(t)
            if d not in devices:
                devices.append(d)
    if len(devices) > 1:
        raise ReferenceRejectsError(
            f"Expected all tensors to be on the same device, but found at least two devices, {devices[0]} and "
            f"{devices[1]}!"
        )
    return devices[0] if devices else "cpu"


def _host_only(device: str) -> None:
    if device != "cpu":
        raise UnsupportedFeatureError(
            f"tensors on {device}: mmaemu's Python package computes on host tensors; pass .cpu() tensors (the "
            f"result has the same bits)"
        )


def _stacklevel() -> int:
    """The stack level of the first frame outside this package and torch's compiler wrappers."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_PACKAGE_DIR) and "_dynamo" not in name:
            return level
        frame = frame.f_back
        level += 1
    return level


def emit(ws: Sequence[Tuple[str, str]]) -> None:
    """Emit the warnings a call reported, in order, through the warnings module."""
    for kind, message in ws:
        warnings.warn(message, WARNING_CLASSES.get(kind, UserWarning), stacklevel=_stacklevel() + 1)


def _raise_with_warnings(e: BaseException) -> None:
    """Emit the warnings a failing call reported before it failed (§7.2)."""
    ws = getattr(e, "mmaemu_warnings", None)
    if ws:
        emit(ws)


_FN = "scaled_mm"


def _writable(out: Any) -> None:
    """ValueError when out= cannot be written (a numpy array or memmap with ``writeable=False``), before
    anything runs."""
    np = arr.numpy_module()
    target = out.array if isinstance(out, arr.Codes) else out
    if np is not None and isinstance(target, np.ndarray) and not target.flags.writeable:
        raise ValueError("scaled_mm(): out= is read-only (its writeable flag is False, e.g. a numpy.memmap "
                         "opened with mode='r'); pass a writable array")


def _call_args(
    fn: str,
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    bias: Any,
    scale_result: Any,
    out_dtype: Any,
    use_fast_accum: Any,
    out: Any,
    profile: Any,
    splitk: Any,
    backend: Any,
    experimental: Any = None,
) -> Tuple[str, Any, str]:
    """(kind, the arguments for the extension, the tensors' device) after the checks of R.6."""
    opt_in = _experimental(fn, experimental)
    torch = arr.torch_module()
    if torch is not None and isinstance(input, torch.Tensor):
        # The common case, kept short: every argument a CPU torch tensor.
        T = torch.Tensor
        if (isinstance(mat2, T) and isinstance(scale_a, T) and isinstance(scale_b, T)
                and (bias is None or isinstance(bias, T)) and (scale_result is None or isinstance(scale_result, T))
                and (out is None or isinstance(out, T)) and type(use_fast_accum) is bool
                and (out_dtype is None or isinstance(out_dtype, torch.dtype))
                and (profile is None or (isinstance(profile, str) and not _is_bundle(profile)))
                and isinstance(backend, str) and input.is_cpu and mat2.is_cpu and scale_a.is_cpu and scale_b.is_cpu
                and (bias is None or bias.is_cpu) and (scale_result is None or scale_result.is_cpu)
                and (out is None or out.is_cpu)):
            d = arr.cpu_desc
            grad = torch.is_grad_enabled() and (
                input.requires_grad or mat2.requires_grad or scale_a.requires_grad or scale_b.requires_grad
                or (bias is not None and bias.requires_grad)
                or (scale_result is not None and scale_result.requires_grad))
            descs = (d(input), d(mat2), d(scale_a), d(scale_b), None if bias is None else d(bias),
                     None if scale_result is None else d(scale_result))
            od = None if out_dtype is None else arr.torch_dtype_info(out_dtype)[0]
            split = ("auto", 0, "") if splitk == "auto" else _splitk(fn, splitk)
            options = (od, use_fast_accum, None if out is None else d(out), profile, split, backend, grad, opt_in)
            return "torch", (descs, options), "cpu"
    # Anything else: every argument checked as torch's argument parser checks it.
    kind = arr.kind_of(input)
    if kind is None:
        raise _type_error(fn, "input", 1, "Tensor", input)
    _tensor(fn, kind, "input", 1, input, False, codes=True)
    _tensor(fn, kind, "mat2", 2, mat2, False, codes=True)
    _tensor(fn, kind, "scale_a", 3, scale_a, False)
    _tensor(fn, kind, "scale_b", 4, scale_b, False)
    _tensor(fn, kind, "bias", 5, bias, True)
    _tensor(fn, kind, "scale_result", 6, scale_result, True)
    od = _dtype(fn, kind, "out_dtype", 7, out_dtype)
    fast = _bool(fn, "use_fast_accum", 8, use_fast_accum)
    _tensor(fn, kind, "out", None, out, True)
    tensors = (input, mat2, scale_a, scale_b, bias, scale_result, out)
    device = _devices(tensors)
    descs = (
        arr.desc(input),
        arr.desc(mat2),
        arr.desc(scale_a),
        arr.desc(scale_b),
        None if bias is None else arr.desc(bias),
        None if scale_result is None else arr.desc(scale_result),
    )
    options = (
        od,
        fast,
        None if out is None else arr.desc(out),
        _profile(fn, profile),
        _splitk(fn, splitk),
        _backend(fn, backend),
        _grad(kind, tensors[:6]),
        opt_in,
    )
    return kind, (descs, options), device


# ---------------------------------------------------------------------------------------------------------
# The entry points


def scaled_mm(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    bias: Any = None,
    scale_result: Any = None,
    out_dtype: Any = None,
    use_fast_accum: bool = False,
    *,
    out: Any = None,
    profile: Optional[Union[str, Profile]] = None,
    splitk: SplitArg = "auto",
    backend: str = "auto",
    experimental: Optional[bool] = None,
) -> Any:
    """``torch._scaled_mm`` of torch 2.7.1 as the profile's GPU computes it, bit for bit (§5).

    ``input`` [M, K] and ``mat2`` [K, N] are float8 tensors (or numpy arrays of ml_dtypes float8 types,
    or :func:`mmaemu.codes`); the scales are one-element float32 tensors. The result is a new [M, N]
    tensor of ``out_dtype`` (default: the input's dtype), or ``out`` itself. ``profile`` defaults to
    ``MMAEMU_PROFILE``, else ``"hopper"``; ``splitk`` is ``"auto"``, ``1`` or ``(S, scheme)``;
    ``backend`` is ``"auto"``, ``"reference"``, ``"cpu"`` or ``"cpu:<simd>"``; ``experimental=True`` opts in to
    the experimental row-wise scales (and their bias; None: :func:`experimental`'s context, else
    ``MMAEMU_EXPERIMENTAL``), which otherwise raise UnsupportedFeatureError.
    """
    kind, args, device = _call_args(
        _FN, input, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out, profile, splitk,
        backend, experimental,
    )
    _host_only(device)
    dst = None
    result = None
    shape_a, shape_b = args[0][0][1], args[0][1][1]
    if out is not None:
        _writable(out)
    if out is None and len(shape_a) == 2 and len(shape_b) == 2:
        m, n = shape_a[0], shape_b[1]
        od = args[1][0] or args[0][0][0]
        if kind == "torch" and (out_dtype is None or isinstance(out_dtype, arr.torch_module().dtype)):
            dt = out_dtype if out_dtype is not None else input.dtype
            arr.check_result_bytes((m, n), arr.torch_module().empty((), dtype=dt).element_size())
        try:
            if kind == "torch":
                dt = out_dtype if out_dtype is not None and not isinstance(out_dtype, type) else arr.torch_dtype(od)
                result = arr.torch_module().empty((m, n), dtype=dt)
                size = arr.torch_dtype_info(dt)[1]
                dst = (od, (m, n), (n, 1), 0, result.data_ptr(), size)
            else:
                result = arr.empty(kind, (m, n), od)
                dst = arr.desc(result)
        except (TypeError, AttributeError, RuntimeError, ValueError):
            result = dst = None
    try:
        status, payload, ws = _core.scaled_mm(args, dst)
    except Exception as e:
        _raise_with_warnings(e)
        raise
    if ws:
        emit(ws)
    if status == "result":
        return result
    if status == "resized":
        m, n = shape_a[0], shape_b[1]
        if kind == "torch":
            out.resize_((m, n))
        else:
            out.resize((m, n), refcheck=False)
        _core.fill(arr.desc(out), payload)
    return out


def _same_arguments_as(call: Callable[_P, Any]) -> Callable[[Callable[[Dict[str, Any]], _R]], Callable[_P, _R]]:
    """Gives the decorated function ``call``'s signature; it receives the bound arguments, defaults
    applied, as one mapping. ``explain`` takes ``scaled_mm``'s arguments this way, so that the two
    signatures are one and cannot drift apart."""
    signature = inspect.signature(call)

    def wrap(body: Callable[[Dict[str, Any]], _R]) -> Callable[_P, _R]:
        def bound(*args: Any, **kwargs: Any) -> _R:
            try:
                arguments = signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{body.__name__}(): {e}") from None
            arguments.apply_defaults()
            return body(dict(arguments.arguments))

        functools.update_wrapper(bound, body)
        returns = inspect.signature(body).return_annotation
        bound.__signature__ = signature.replace(return_annotation=returns)  # type: ignore[attr-defined]
        return bound  # type: ignore[return-value]

    return wrap


@_same_arguments_as(scaled_mm)
def explain(args: Dict[str, Any]) -> CallPlan:
    """What :func:`scaled_mm` would do with these arguments (§8.1), without computing or reading data.

    Takes exactly :func:`scaled_mm`'s arguments. Never raises for the call: the first error it would
    raise is ``validation``. Tensors on the meta device are accepted (only shapes, strides and dtypes
    are read).
    """
    try:
        _, call, _ = _call_args("explain", **args)
    except (TypeError, ValueError, ReferenceRejectsError) as e:
        return CallPlan(ErrorInfo(type(e).__name__, str(e)))
    return _plan(_core.explain(call))


def _plan(d: Dict[str, Any]) -> CallPlan:
    v = d["validation"]
    split = d["split"]
    return CallPlan(
        validation="ok" if v is None else ErrorInfo(*v),
        profile=d["profile"],
        preset=d["preset"],
        preset_maturity=d["preset_maturity"],
        split=None if split is None else SplitDecision(
            split["s"], split["scheme"], split["source"], split["verified"], split["table_id"], split["note"]),
        backend=d["backend"],
        fallbacks=list(d["fallbacks"]),
        warnings=[WarningInfo(k, m) for k, m in d["warnings"]],
        kernel=d.get("kernel"),
    )


def accumulate(
    a: Any,
    b: Any,
    *,
    use_fast_accum: bool,
    splitk: SplitArg = "auto",
    profile: Optional[Union[str, Profile]] = None,
    backend: str = "auto",
    out_dtype_for_split: Any = None,
) -> Any:
    """The fp32 accumulator [M, N] of ``a`` [M, K] x ``b`` [N, K]ᵀ before any scale (§5.6).

    Note: ``b`` is [N, K] (mat2 transposed). Any K, any format pair; ``splitk="auto"`` is decided on the
    profile with the key (M, N, K, formats, ``out_dtype_for_split``, default float32) of a standard layout.
    """
    fn = "accumulate"
    kind = arr.kind_of(a)
    if kind is None:
        raise _type_error(fn, "a", 1, "Tensor", a)
    _tensor(fn, kind, "b", 2, b, False, codes=True)
    np = arr.numpy_module()
    if np is not None and isinstance(use_fast_accum, np.bool_):  # accumulate is not torch's: numpy's bool too
        use_fast_accum = bool(use_fast_accum)
    fast = _bool(fn, "use_fast_accum", None, use_fast_accum)
    od = _dtype(fn, kind, "out_dtype_for_split", None, out_dtype_for_split) or "float32"
    _host_only(_devices((a, b)))
    da, db = arr.desc(a), arr.desc(b)
    shape = (da[1][0], db[1][0]) if len(da[1]) == 2 and len(db[1]) == 2 else (0, 0)
    result = arr.empty(kind, shape, "float32")
    try:
        ws = _core.accumulate(
            da, db, fast, _splitk(fn, splitk), _profile(fn, profile), _backend(fn, backend), od, _grad(kind, (a, b)),
            arr.desc(result),
        )
    except Exception as e:
        _raise_with_warnings(e)
        raise
    if ws:
        emit(ws)
    return result


def get_profile(name: Optional[str] = None) -> Profile:
    """A profile by name (§6.1); None: ``MMAEMU_PROFILE``, else ``"hopper"``. Unknown names: KeyError."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"get_profile(): name must be str or None, not {arr.type_name(name)}")
    return _profile_record(_core.get_profile(name))


def _profile_record(d: Dict[str, Any]) -> Profile:
    """The :class:`Profile` of the extension's dict (``get_profile`` and ``load_profile`` alike)."""
    d["rejects"] = tuple(
        RejectRule(_short(r["fmt_a"]), _short(r["fmt_b"]), r["out"], r["message"]) for r in d["rejects"])
    return Profile(**d)


def load_profile(path: Union[str, "os.PathLike[str]"]) -> Profile:
    """The profile of a platform bundle (docs/platform-format.md): ``DIR`` (a bundle with one profile) or
    ``DIR#NAME``. Its platform joins the known ones, so ``profile=`` takes the name afterwards; ``profile=`` also
    takes the path or the returned profile. A bad bundle (missing or extra file, sha256 mismatch, unknown key, a
    name clash): ``mmaemu.errors.DataError`` naming the file."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_profile(): path must be str or os.PathLike, not {arr.type_name(path)}")
    return _profile_record(_core.load_profile(os.fspath(path)))


def list_profiles() -> List[str]:
    """The profile names, in the reference's order (§6.1)."""
    return list(_core.list_profiles())


def get_preset(name: Union[str, "os.PathLike[str]"]) -> Preset:
    """A preset by name (§2.1; ``blackwell`` is an alias of ``b200_mma_sync``), or from the ``mmaemu-preset/1``
    document at a path (docs/preset-format.md). Unknown names: KeyError."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        raise TypeError(f"get_preset(): name must be str, not {arr.type_name(name)}")
    d = _core.get_preset(name)
    d["schemes"] = tuple(d["schemes"])
    return Preset(**d)


def list_presets() -> List[str]:
    """The built-in preset names, sorted (§2.1)."""
    return list(_core.list_presets())


def backends_status(device: Any = None) -> BackendsStatus:
    """Every backend with its status, and what ``backend="auto"`` selects for tensors on ``device``
    (None or ``"cpu"``: host tensors, what this package computes on; ``"cuda"``, ``"cuda:N"``; a
    ``torch.device`` is taken by its name)."""
    torch = arr.torch_module()
    if torch is not None and isinstance(device, torch.device):
        device = str(device)
    if device is not None and not isinstance(device, str):
        raise TypeError(f"backends_status(): device must be str or None, not {arr.type_name(device)}")
    dev = device or "cpu"
    rows, auto, fallbacks = _core.backends_status(dev)
    return BackendsStatus(dev, auto, tuple(fallbacks), tuple(BackendStatus(*r) for r in rows))
