"""mmaemu: the FP8 GEMM results of NVIDIA tensor cores (cuBLASLt through torch 2.7.1 ``torch._scaled_mm``),
bit for bit, on a CPU. ``scaled_mm`` has torch's exact signature; the Rust core does the checks, the
split-K decisions and the arithmetic (docs/reference.md). torch and numpy are optional.
"""

from __future__ import annotations

import importlib.util as _util

from . import _api, errors
from ._api import *  # noqa: F401,F403  (the names of _api.__all__)
from ._arrays import Codes, codes
from ._core import __version__
from ._patch import install, installed, patch, uninstall
from ._trace import Attribution, attribute, trace
from ._v2 import ScalingType, SwizzleType, explain_v2, scaled_mm_v2
from .errors import *  # noqa: F401,F403  (the error and warning classes of errors.__all__)
from . import model, testing, datasets, functional  # noqa: E402  (after the API they build on)

if _util.find_spec("torch") is not None:
    # The public entry points are opaque to torch.compile: dynamo runs them as they are (graph break).
    import torch as _torch

    scaled_mm = _torch.compiler.disable(scaled_mm)
    explain = _torch.compiler.disable(explain)
    accumulate = _torch.compiler.disable(accumulate)
    scaled_mm_v2 = _torch.compiler.disable(scaled_mm_v2)
    model.dot = _torch.compiler.disable(model.dot)
    model.epilogue.apply = _torch.compiler.disable(model.epilogue.apply)

# The API, the error and warning classes (each module's own list), and what this module adds.
__all__ = [
    *_api.__all__,
    *(name for name in errors.__all__ if name != "WARNING_CLASSES"),
    "codes",
    "Codes",
    "trace",
    "attribute",
    "Attribution",
    "patch",
    "install",
    "uninstall",
    "installed",
    "model",
    "testing",
    "datasets",
    "functional",
    "scaled_mm_v2",
    "explain_v2",
    "ScalingType",
    "SwizzleType",
    "errors",
    "__version__",
]
