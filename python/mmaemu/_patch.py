"""Emulate unchanged code: the emulator registered as the CPU implementation of ``aten::_scaled_mm`` (and
its ``out=`` overload) through ``torch.library``, so ``torch._scaled_mm`` on CPU tensors returns the
profile's GPU bits; uninstalling restores torch's own behaviour.

The thread model: the registration is process-wide and counted (it stays while :func:`install` is in force
or any :func:`patch` context, in any thread, is open); the options are per thread and per asyncio task (kept in
a :mod:`contextvars` variable: the innermost context still open in this thread or task decides its calls; a
task started inside a context sees it; a thread or task without one uses :func:`install`'s options, else those
of the latest context still open elsewhere). Contexts are kept by identity, so leaving them out of order
removes exactly the one left.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple, Union

from . import _api
from .errors import SplitKUnknownError

__all__ = ["patch", "install", "uninstall", "installed"]


@dataclass(frozen=True)
class _Config:
    profile: Optional[str]
    splitk: _api.SplitArg
    backend: str
    experimental: Optional[bool] = None


_lock = threading.Lock()
_library: Any = None
_installed: Optional[_Config] = None  # install()'s options, while it is in force
_open: Dict[object, _Config] = {}  # every open patch context of the process by its token, in the order entered
# The tokens of the contexts this thread or asyncio task entered, innermost last (a task started inside a context
# inherits them; a token whose context was left elsewhere is skipped, as it is no longer in _open).
_entered: "contextvars.ContextVar[Tuple[object, ...]]" = contextvars.ContextVar("mmaemu_patch_entered", default=())


def _current() -> Tuple[_Config, str]:
    """The options of a call from torch, and what set them (``"patch"`` or ``"install"``)."""
    mine = _entered.get()
    with _lock:
        cfg = next((_open[t] for t in reversed(mine) if t in _open), None)
        if cfg is not None:
            return cfg, "patch"
        if _installed is not None:
            return _installed, "install"
        cfg = next(reversed(_open.values()), None)
    if cfg is None:  # uninstalled while a call was on its way
        raise RuntimeError("mmaemu.patch is not installed")
    return cfg, "patch"


# "pass splitk=X if ...": torch._scaled_mm takes no splitk (a TypeError); the way out is the context's option.
_SPLITK_ADVICE = re.compile(r"pass splitk=(.+?) if ")


def _emulate(by: str, cfg: _Config, *args: Any, **kwargs: Any) -> Any:
    try:
        return _api.scaled_mm(*args, **kwargs, profile=cfg.profile, splitk=cfg.splitk, backend=cfg.backend,
                              experimental=cfg.experimental)
    except SplitKUnknownError as e:
        if e.args and isinstance(e.args[0], str):
            e.args = (_SPLITK_ADVICE.sub(
                lambda m: f"pass mmaemu.{by}(splitk={m.group(1)}) (torch._scaled_mm takes no splitk) if ",
                e.args[0]),) + e.args[1:]
        raise


def _impl(self: Any, mat2: Any, scale_a: Any, scale_b: Any, bias: Any = None, scale_result: Any = None,
          out_dtype: Any = None, use_fast_accum: bool = False) -> Any:
    cfg, by = _current()
    return _emulate(by, cfg, self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)


def _impl_out(self: Any, mat2: Any, scale_a: Any, scale_b: Any, bias: Any = None, scale_result: Any = None,
              out_dtype: Any = None, use_fast_accum: bool = False, *, out: Any) -> Any:
    cfg, by = _current()
    return _emulate(by, cfg, self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out=out)


def _checked(fn: str, profile: Any, splitk: Any, backend: Any, experimental: Any = None) -> _Config:
    """The options, checked on entry as a call would check them: an unknown profile (KeyError), a bad
    split or an unknown backend (TypeError, ValueError, KeyError) raise here, not at the first call."""
    name = _api._profile(fn, profile)
    _api.get_profile(name)
    kind, s, scheme = _api._splitk(fn, splitk)
    if kind == "pair":
        _api.SplitK(s, scheme)
    elif kind == "count" and s < 1:
        raise ValueError(f"{fn}(): splitk S must be >= 1, got {s}")
    _api._backend(fn, backend)
    st = _api.backends_status()
    if backend != "auto" and backend not in st:
        raise ValueError(f"{fn}(): unknown backend {backend!r}; expected 'auto' or one of {', '.join(st)}")
    if experimental is not None and type(experimental) is not bool:
        raise _api._type_error(fn, "experimental", None, "bool or None", experimental)
    return _Config(name, splitk, backend, experimental)


def _register() -> None:
    """The torch.library registration (under _lock)."""
    global _library
    if _library is None:
        import torch

        lib = torch.library.Library("aten", "IMPL")
        lib.impl("_scaled_mm", _impl, "CPU")
        lib.impl("_scaled_mm.out", _impl_out, "CPU")
        _library = lib


def _release() -> None:
    """Drop the registration when nothing keeps it (under _lock)."""
    global _library
    if _library is not None and _installed is None and not _open:
        _library._destroy()
        _library = None


def install(profile: Optional[Union[str, _api.Profile]] = "hopper", *, splitk: _api.SplitArg = "auto",
            backend: str = "auto", experimental: Optional[bool] = None) -> None:
    """Register the emulator as the CPU kernel of ``aten::_scaled_mm`` (and ``_scaled_mm.out``) with these
    options (checked here); a second call changes the options. Every ``torch._scaled_mm`` on CPU tensors
    then runs :func:`mmaemu.scaled_mm`, warnings and errors included."""
    global _installed
    cfg = _checked("install", profile, splitk, backend, experimental)
    with _lock:
        _register()
        _installed = cfg


def uninstall() -> None:
    """End :func:`install`'s registration: ``torch._scaled_mm`` on CPU behaves as torch's own again once no
    :func:`patch` context is open either."""
    global _installed
    with _lock:
        _installed = None
        _release()


def installed() -> bool:
    """Is the emulator registered?"""
    return _library is not None


@contextlib.contextmanager
def patch(profile: Optional[Union[str, _api.Profile]] = "hopper", *, splitk: _api.SplitArg = "auto",
          backend: str = "auto", experimental: Optional[bool] = None) -> Iterator[None]:
    """A context in which ``torch._scaled_mm`` on CPU tensors is the emulator with these options (checked
    on entry) for this thread or asyncio task; contexts nest and overlap across threads and tasks (see the
    module's thread model); ``experimental`` opts its calls in to (or out of) the experimental modes (None: the
    caller's :func:`mmaemu.experimental` context, else MMAEMU_EXPERIMENTAL). Leaving it (in any order) removes exactly this context: this thread's or task's
    other contexts decide again, and torch's own behaviour returns when nothing else keeps the registration."""
    cfg = _checked("patch", profile, splitk, backend, experimental)
    token = object()
    with _lock:
        _register()
        _open[token] = cfg
    _entered.set(_entered.get() + (token,))
    try:
        yield
    finally:
        _entered.set(tuple(t for t in _entered.get() if t is not token))
        with _lock:
            del _open[token]
            _release()
