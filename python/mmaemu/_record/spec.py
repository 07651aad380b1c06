"""The spec of a torch-level recording (TOML, the sweep spec's fields where they apply; docs/recording-format.md,
"The torch-level recorder") and the calls it names: shapes x formats x out dtypes x fast_accum x scalings x bias.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None  # type: ignore[assignment]

SCALINGS = ("tensorwise", "rowwise", "blockwise_1x128", "blockwise_1x128_128x128", "mxfp8", "nvfp4")
FIELDS = {"kind", "name", "description", "seed", "profile", "formats", "out_dtypes", "fast_accum", "scales",
          "scaling", "bias", "shapes", "runs"}


class SpecError(ValueError):
    """The spec is not a torch-level recording spec; the message says why."""


@dataclass(frozen=True)
class Case:
    index: int
    m: int
    n: int
    k: int
    fmt_a: str
    fmt_b: str
    out_dtype: str
    fast_accum: bool
    scales: Tuple[float, float]
    scaling: str
    bias: bool


@dataclass
class Spec:
    name: str
    seed: int
    profile: str
    runs: int
    fields: Dict[str, Any]
    shapes: List[Tuple[int, int, int]]

    def cases(self) -> Iterator[Case]:
        f = self.fields
        grid = itertools.product(self.shapes, f["formats"], f["out_dtypes"], f["fast_accum"], f["scales"],
                                 f["scaling"], f["bias"])
        for i, ((m, n, k), (fa, fb), out, fast, sc, scaling, bias) in enumerate(grid):
            yield Case(i, m, n, k, fa, fb, out, bool(fast), (float(sc[0]), float(sc[1])), scaling, bool(bias))


def _dims(block: Dict[str, Any]) -> List[Tuple[int, int, int]]:
    if "mnk" in block:
        return [tuple(int(x) for x in t) for t in block["mnk"]]  # type: ignore[misc]

    def values(d: Any) -> List[int]:
        if isinstance(d, int):
            return [d]
        if isinstance(d, list):
            return [int(x) for x in d]
        if isinstance(d, dict) and "pow2" in d:
            lo, hi = d["pow2"]
            return [1 << e for e in range(64) if lo <= (1 << e) <= hi]
        if isinstance(d, dict):
            return list(range(d["from"], d["to"] + 1, d["step"]))
        raise SpecError(f"shapes: {d!r} is not a dimension")

    return list(itertools.product(values(block["m"]), values(block["n"]), values(block["k"])))


def parse(text: str) -> Spec:
    """Parses and checks a spec's TOML text."""
    if tomllib is None:
        raise SpecError("reading a spec needs Python 3.11 (tomllib)")
    try:
        t = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"not TOML: {e}") from None
    unknown = sorted(set(t) - FIELDS)
    if unknown:
        raise SpecError(f"unknown field(s) {unknown}: a torch-level spec has {sorted(FIELDS)}")
    if t.get("kind", "sweep") != "sweep":
        raise SpecError(f"kind {t.get('kind')!r}: the torch-level recorder takes sweep specs")
    name = t.get("name", "")
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        raise SpecError(f"name {name!r} must be non-empty ASCII letters, digits, '-', '_' or '.'")
    fields = {
        "formats": t.get("formats", [["e4m3", "e4m3"]]),
        "out_dtypes": t.get("out_dtypes", ["bfloat16"]),
        "fast_accum": t.get("fast_accum", [False]),
        "scales": t.get("scales", [[1.0, 1.0]]),
        "scaling": t.get("scaling", ["tensorwise"]),
        "bias": t.get("bias", [False]),
    }
    for key, v in fields.items():
        if not isinstance(v, list) or not v:
            raise SpecError(f"{key} must be a non-empty list")
    bad = [s for s in fields["scaling"] if s not in SCALINGS]
    if bad:
        raise SpecError(f"scaling {bad} is not one of {list(SCALINGS)}")
    if any(not all(map(math.isfinite, s)) for s in fields["scales"]):
        raise SpecError("scales must be finite")
    shapes: List[Tuple[int, int, int]] = []
    for block in t.get("shapes", []):
        for s in _dims(block):
            if any(d < 0 or d >= 1 << 16 for d in s):
                raise SpecError(f"shape {s}: dimensions must be in [0, 2^16)")
            if s not in shapes:
                shapes.append(s)
    if not shapes:
        raise SpecError("no [[shapes]]")
    runs = int(t.get("runs", 2))
    if runs < 2:
        raise SpecError("runs must be at least 2 (each call runs twice to check determinism)")
    return Spec(name, int(t.get("seed", 1)), t.get("profile", "hopper"), runs, fields, shapes)


def scale_specs(case: Case) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    """The call object's scale_a / scale_b of a case's scaling (None: the tensor-wise columns)."""
    m, n, k = case.m, case.n, case.k
    f32 = "float32"

    def block(rows: int, size: int, dtype: str, value: str, scaling: str, layout: str) -> Dict[str, Any]:
        return {"dtype": dtype, "shape": [rows, -(-k // size)], "value": value, "scaling": scaling,
                "layout": layout}

    if case.scaling == "tensorwise":
        return None, None
    if case.scaling == "rowwise":
        return ({"dtype": f32, "shape": [m, 1], "value": "rowwise", "scaling": "RowWise"},
                {"dtype": f32, "shape": [1, n], "value": "rowwise", "scaling": "RowWise"})
    if case.scaling == "blockwise_1x128":
        return (block(m, 128, f32, "rowwise", "BlockWise1x128", "col"),
                block(n, 128, f32, "rowwise", "BlockWise1x128", "col"))
    if case.scaling == "blockwise_1x128_128x128":
        b = block(-(-n // 128), 128, f32, "rowwise", "BlockWise128x128", "std")
        return block(m, 128, f32, "rowwise", "BlockWise1x128", "col"), b
    if case.scaling == "mxfp8":
        e8 = "float8_e8m0fnu"
        return (block(m, 32, e8, "pow2", "BlockWise1x32", "blocked"),
                block(n, 32, e8, "pow2", "BlockWise1x32", "blocked"))
    e4 = "float8_e4m3fn"
    return (block(m, 16, e4, "pow2", "BlockWise1x16", "blocked"),
            block(n, 16, e4, "pow2", "BlockWise1x16", "blocked"))
