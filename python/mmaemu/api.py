"""The entry points by the module path of mmaemu 0.1.0 (``from mmaemu.api import scaled_mm``): the same
objects as ``mmaemu.scaled_mm``, ``mmaemu.accumulate``, ``mmaemu.explain`` and ``mmaemu.CallPlan``.
"""

from __future__ import annotations

from . import CallPlan, accumulate, explain, scaled_mm

__all__ = ["scaled_mm", "accumulate", "explain", "CallPlan"]
