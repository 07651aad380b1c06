"""mmaemu: the FP8 GEMM results of NVIDIA tensor cores (cuBLASLt through torch 2.7.1 ``torch._scaled_mm``),
bit for bit, on a CPU. ``scaled_mm`` has torch's exact signature; the Rust core does the checks, the
split-K decisions and the arithmetic (docs/reference.md). torch and numpy are optional.
"""

from __future__ import annotations

import importlib.util as _util

from . import errors
from ._api import (
    BackendsStatus,
    BackendStatus,
    CallPlan,
    ErrorInfo,
    Preset,
    Profile,
    SplitDecision,
    WarningInfo,
    accumulate,
    backends_status,
    explain,
    get_preset,
    get_profile,
    list_presets,
    list_profiles,
    scaled_mm,
)
from ._arrays import Codes, codes
from ._core import __version__
from ._patch import install, installed, patch, uninstall
from .errors import (
    BackendFallbackWarning,
    BackendUnavailableError,
    DataError,
    ExperimentalPresetWarning,
    MmaemuError,
    MmaemuWarning,
    OutResizedWarning,
    OutUnchangedWarning,
    ReferenceRejectsError,
    SplitKUnknownError,
    UnsupportedFeatureError,
    UnvalidatedEnvelopeWarning,
    UnverifiedSplitWarning,
)
from . import model, testing, datasets  # noqa: E402  (after the API they build on)

if _util.find_spec("torch") is not None:
    # The public entry points are opaque to torch.compile: dynamo runs them as they are (graph break).
    import torch as _torch

    scaled_mm = _torch.compiler.disable(scaled_mm)
    explain = _torch.compiler.disable(explain)
    accumulate = _torch.compiler.disable(accumulate)
    model.dot = _torch.compiler.disable(model.dot)
    model.epilogue.apply = _torch.compiler.disable(model.epilogue.apply)

__all__ = [
    "scaled_mm",
    "explain",
    "accumulate",
    "get_profile",
    "list_profiles",
    "get_preset",
    "list_presets",
    "backends_status",
    "codes",
    "Codes",
    "patch",
    "install",
    "uninstall",
    "installed",
    "model",
    "testing",
    "datasets",
    "errors",
    "CallPlan",
    "ErrorInfo",
    "SplitDecision",
    "WarningInfo",
    "Profile",
    "Preset",
    "BackendStatus",
    "BackendsStatus",
    "MmaemuError",
    "ReferenceRejectsError",
    "UnsupportedFeatureError",
    "SplitKUnknownError",
    "BackendUnavailableError",
    "DataError",
    "MmaemuWarning",
    "ExperimentalPresetWarning",
    "UnverifiedSplitWarning",
    "UnvalidatedEnvelopeWarning",
    "BackendFallbackWarning",
    "OutResizedWarning",
    "OutUnchangedWarning",
    "__version__",
]
