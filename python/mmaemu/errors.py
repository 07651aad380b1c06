"""The exceptions and warnings of mmaemu (docs/reference.md §7, R.3, R.4): exception classes with the bases the
reference gives them, and ``UserWarning`` subclasses emitted through the ``warnings`` module.
"""

from __future__ import annotations

__all__ = [
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
    "WARNING_CLASSES",
]


class MmaemuError(Exception):
    """The umbrella of mmaemu's errors; raised directly only when the CPU flushes subnormals or rounds
    other than to nearest (§5.2 step 12)."""


class ReferenceRejectsError(MmaemuError, RuntimeError):
    """torch 2.7.1 or the profile's cuBLASLt refuses the call (§5.2 steps 2, 5, 6)."""


class UnsupportedFeatureError(MmaemuError, NotImplementedError):
    """The reference runs the call, mmaemu does not model it (bias, row-wise scales, grad, ...)."""


class SplitKUnknownError(MmaemuError, LookupError):
    """``splitk="auto"`` cannot be decided (§6.7); the message names the three ways out."""


class BackendUnavailableError(MmaemuError, RuntimeError):
    """An explicitly named backend cannot serve the call (§9.5)."""


class DataError(RuntimeError):
    """Embedded or read data fail their integrity check (§6.4); not a kind of MmaemuError (R.3)."""


class MmaemuWarning(UserWarning):
    """The umbrella of mmaemu's warnings."""


class ExperimentalPresetWarning(MmaemuWarning):
    """The call uses an experimental or custom preset, or an experimental profile (§7.2)."""


class UnverifiedSplitWarning(MmaemuWarning):
    """The split-K decision was never replayed on hardware (§6.6)."""


class UnvalidatedEnvelopeWarning(UnverifiedSplitWarning):
    """S = 1 was inferred by an envelope without a passed held-out test (§6.5)."""


class BackendFallbackWarning(MmaemuWarning, RuntimeWarning):
    """A faster backend failed its self-check or gate and a slower one ran (same bits, §9.5); also a
    ``RuntimeWarning``, as in mmaemu 0.1.0."""


class OutResizedWarning(MmaemuWarning):
    """out= had another shape and at least one element, and was resized (§5.4)."""


class OutUnchangedWarning(MmaemuWarning):
    """out= is neither row- nor column-major and is returned unchanged (§5.2 step 9)."""


WARNING_CLASSES: dict[str, type[MmaemuWarning]] = {
    cls.__name__: cls
    for cls in (
        ExperimentalPresetWarning,
        UnverifiedSplitWarning,
        UnvalidatedEnvelopeWarning,
        BackendFallbackWarning,
        OutResizedWarning,
        OutUnchangedWarning,
    )
}
