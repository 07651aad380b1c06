"""The records the API returns and takes (docs/reference.md §6.1, §8.1, §9.5): an explicit split, a split decision,
a call plan with its warnings and errors, profiles, presets and the backends' status. Plain frozen values; the
calls that make them are in ``_api``.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, List, NamedTuple, Optional, Tuple, Union

from .errors import WARNING_CLASSES

_SCHEMES = ("serial", "pairwise", "contiguous")
# A split rule by name (docs/platform-format.md, "Split-K schemes as rules"): `interleaved64/pairwise/restart2`.
_RULE = re.compile(r"(interleaved|contiguous)[1-9][0-9]*/(serial|pairwise|reversed|tree)(/restart[1-9][0-9]*e?)?")

# ---------------------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class SplitK:
    """An explicit split: ``S`` splits combined with ``scheme`` (``"serial"``, ``"pairwise"``: the Ada
    kernels' 64-wide k-tiles t mod S; ``"contiguous"``: runs of the Hopper kernels' 128-wide k-tiles; or a split
    rule by name, as ``mmaemu fit splitk`` reports it: ``"interleaved64/pairwise/restart2"``); ``S = 1`` has the
    scheme ``"none"``. Accepted as ``splitk=`` like ``(S, scheme)``."""

    S: int = 1
    scheme: str = "none"

    def __post_init__(self) -> None:
        if isinstance(self.S, bool) or not hasattr(type(self.S), "__index__") or operator.index(self.S) < 1:
            raise ValueError(f"SplitK.S must be an int >= 1, got {self.S!r}")
        if self.S == 1 and self.scheme != "none":
            raise ValueError(f"S = 1 has no reduction scheme (got {self.scheme!r}); use scheme='none'")
        if self.S > 1 and self.scheme not in _SCHEMES and not (
            isinstance(self.scheme, str) and _RULE.fullmatch(self.scheme)
        ):
            raise ValueError(
                f"S = {self.S} requires scheme 'serial', 'pairwise' or 'contiguous', or a split rule such as "
                f"'interleaved64/pairwise/restart2', got {self.scheme!r}"
            )


SplitArg = Union[str, int, Tuple[int, str], SplitK]


@dataclass(frozen=True)
class SplitDecision:
    """A split-K decision (§8.1): S, the scheme, where it came from, whether hardware verified it."""

    S: int
    scheme: str
    source: str
    verified: bool
    table_id: Optional[str]
    note: str

    @property
    def s(self) -> int:
        """``S`` by its lower-case name."""
        return self.S

    @property
    def splitk(self) -> SplitK:
        """The decision as a :class:`SplitK` (to pass as ``splitk=``)."""
        return SplitK(self.S, self.scheme)


class ErrorInfo(NamedTuple):
    """The first error a call would raise: its class name (or TypeError, ValueError, KeyError) and message;
    a ``(name, message)`` tuple."""

    name: str
    message: str


class WarningInfo(str):
    """One warning a call reports: a ``str`` (its message) that also carries its class name as ``kind``."""

    def __new__(cls, kind: str, message: str) -> "WarningInfo":
        self = super().__new__(cls, message)
        self.__dict__["_kind"] = kind
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"WarningInfo is read-only ({name})")

    def __getnewargs__(self) -> Tuple[str, str]:  # type: ignore[override]
        return (self.kind, str(self))

    def __repr__(self) -> str:
        return f"WarningInfo(kind={self.kind!r}, message={str(self)!r})"

    @property
    def kind(self) -> str:
        return str(self.__dict__["_kind"])

    @property
    def message(self) -> str:
        return str(self)

    @property
    def category(self) -> type:
        return WARNING_CLASSES.get(self.kind, UserWarning)


@dataclass(frozen=True)
class CallPlan:
    """What a call would do (§8.1). ``validation`` is ``"ok"`` or the first error."""

    validation: Union[str, ErrorInfo] = "ok"
    profile: str = ""
    preset: str = ""
    preset_maturity: str = ""
    split: Optional[SplitDecision] = None
    backend: str = ""
    fallbacks: List[str] = field(default_factory=list)
    warnings: List[WarningInfo] = field(default_factory=list)
    #: The kernel the reference runs and the source it is modelled from, where mmaemu models a named kernel
    #: (row-wise scales: CUTLASS f8f8bf16_rowwise); None for the cuBLASLt calls of the tables.
    kernel: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.validation == "ok"


def _dtype_text(x: Any) -> Optional[str]:
    return None if x is None else str(x).replace("torch.", "")


def _short(x: Any) -> Optional[str]:
    t = _dtype_text(x)
    return {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}.get(t, t) if t is not None else None


@dataclass(frozen=True)
class RejectRule:
    """A call the profile's cuBLASLt rejects (§6.1). ``None`` fields match anything; ``fmt_a``, ``fmt_b``:
    ``"e4m3"`` or ``"e5m2"``; ``out_dtype``: a dtype name such as ``"float8_e5m2"``."""

    fmt_a: Optional[str]
    fmt_b: Optional[str]
    out_dtype: Optional[str]
    message: str

    def matches(self, fmt_a: Any, fmt_b: Any, out_dtype: Any) -> bool:
        fa, fb, od = (_short(fmt_a), _short(fmt_b), _dtype_text(out_dtype))
        return ((self.fmt_a is None or self.fmt_a == fa) and (self.fmt_b is None or self.fmt_b == fb)
                and (self.out_dtype is None or self.out_dtype == od))


@dataclass(frozen=True)
class Profile:
    """A profile (§6.1): a reference platform and its caller."""

    name: str
    preset: str
    gpu_name: Optional[str]
    capability: Tuple[int, int]
    sm_count: Optional[int]
    cublaslt_version: Optional[str]
    caller: str
    torch_version: Optional[str]
    workspace_bytes: Optional[int]
    align: Optional[int]
    splitk_table: Optional[str]
    rejects: Tuple[RejectRule, ...]
    maturity: str
    splitk_maturity: Optional[str]
    description: str

    def rejection(self, fmt_a: Any, fmt_b: Any, out_dtype: Any) -> Optional[RejectRule]:
        """The first of ``rejects`` that matches the call, or None."""
        return next((r for r in self.rejects if r.matches(fmt_a, fmt_b, out_dtype)), None)


@dataclass(frozen=True)
class Preset:
    """A tensor-core arithmetic (§2.1)."""

    name: str
    nfma: int
    frac: int
    frac_out: int
    min_exp: int
    c_entry: str
    slow_chunk: Optional[int]
    maturity: str
    schemes: Tuple[str, ...]

    @property
    def late_c(self) -> bool:
        """Whether c enters the chain after the products (``c_entry == "late"``)."""
        return self.c_entry == "late"


@dataclass(frozen=True)
class BackendStatus:
    """One backend: whether it can be selected, and how it was checked or why not."""

    name: str
    available: bool
    status: str

    @property
    def reason(self) -> str:
        """Why the backend cannot be selected ("" when it can)."""
        return "" if self.available else self.status


@dataclass(frozen=True)
class BackendsStatus:
    """Every backend, and what ``backend="auto"`` selects for tensors on ``device``. Also a read-only
    mapping from backend name to :class:`BackendStatus` (``"reference" in st``, ``st["reference"]``)."""

    device: str
    auto: str
    fallbacks: Tuple[str, ...]
    backends: Tuple[BackendStatus, ...]

    def __getitem__(self, name: str) -> BackendStatus:
        for b in self.backends:
            if b.name == name:
                return b
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(b.name == name for b in self.backends)

    def __iter__(self) -> Iterator[str]:
        return iter([b.name for b in self.backends])

    def __len__(self) -> int:
        return len(self.backends)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def keys(self) -> List[str]:
        return [b.name for b in self.backends]

    def values(self) -> List[BackendStatus]:
        return list(self.backends)

    def items(self) -> List[Tuple[str, BackendStatus]]:
        return [(b.name, b) for b in self.backends]
