"""Emulate unchanged code: the emulator registered as the CPU implementation of ``aten::_scaled_mm`` (and
its ``out=`` overload) through ``torch.library``, so ``torch._scaled_mm`` on CPU tensors returns the
profile's GPU bits; uninstalling restores torch's own behaviour.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

from . import _api

__all__ = ["patch", "install", "uninstall", "installed"]


@dataclass(frozen=True)
class _Config:
    profile: Optional[str]
    splitk: _api.SplitK
    backend: str


_lock = threading.Lock()
_library: Any = None
_config: Optional[_Config] = None


def _impl(self: Any, mat2: Any, scale_a: Any, scale_b: Any, bias: Any = None, scale_result: Any = None,
          out_dtype: Any = None, use_fast_accum: bool = False) -> Any:
    cfg = _config
    if cfg is None:  # uninstalled while a call was on its way
        raise RuntimeError("mmaemu.patch is not installed")
    return _api.scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum,
                          profile=cfg.profile, splitk=cfg.splitk, backend=cfg.backend)


def _impl_out(self: Any, mat2: Any, scale_a: Any, scale_b: Any, bias: Any = None, scale_result: Any = None,
              out_dtype: Any = None, use_fast_accum: bool = False, *, out: Any) -> Any:
    cfg = _config
    if cfg is None:
        raise RuntimeError("mmaemu.patch is not installed")
    return _api.scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out=out,
                          profile=cfg.profile, splitk=cfg.splitk, backend=cfg.backend)


def install(profile: Optional[Union[str, _api.Profile]] = "hopper", *, splitk: _api.SplitK = "auto",
            backend: str = "auto") -> None:
    """Register the emulator as the CPU kernel of ``aten::_scaled_mm`` (and ``_scaled_mm.out``) with these
    options; a second call changes the options. Every ``torch._scaled_mm`` on CPU tensors then runs
    :func:`mmaemu.scaled_mm`, warnings and errors included."""
    global _library, _config
    import torch

    cfg = _Config(_api._profile("install", profile), splitk, _api._backend("install", backend))
    _api._splitk("install", splitk)
    with _lock:
        if _library is None:
            lib = torch.library.Library("aten", "IMPL")
            lib.impl("_scaled_mm", _impl, "CPU")
            lib.impl("_scaled_mm.out", _impl_out, "CPU")
            _library = lib
        _config = cfg


def uninstall() -> None:
    """Remove the registration: ``torch._scaled_mm`` on CPU behaves as torch's own again."""
    global _library, _config
    with _lock:
        if _library is not None:
            _library._destroy()
            _library = None
        _config = None


def installed() -> bool:
    """Is the emulator registered?"""
    return _library is not None


@contextlib.contextmanager
def patch(profile: Optional[Union[str, _api.Profile]] = "hopper", *, splitk: _api.SplitK = "auto",
          backend: str = "auto") -> Iterator[None]:
    """A context in which ``torch._scaled_mm`` on CPU tensors is the emulator (see :func:`install`);
    leaving it restores what was there before (torch's own behaviour, or an outer patch's options)."""
    before = _config
    install(profile, splitk=splitk, backend=backend)
    try:
        yield
    finally:
        if before is None:
            uninstall()
        else:
            install(before.profile, splitk=before.splitk, backend=before.backend)
