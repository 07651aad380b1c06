"""Type stubs of the Rust extension ``mmaemu._core`` (the typed API is in the Python modules)."""

from typing import Any, Dict, List, Optional, Tuple

# (dtype name, shape, strides in elements, storage offset, address of storage element 0, element size)
Desc = Tuple[str, Tuple[int, ...], Tuple[int, ...], int, int, int]
Split = Tuple[str, int, str]
Warnings = List[Tuple[str, str]]
CallArgs = Tuple[
    Tuple[Desc, Desc, Desc, Desc, Optional[Desc], Optional[Desc]],
    Tuple[Optional[str], bool, Optional[Desc], Optional[str], Split, str, bool],
]

__version__: str

def scaled_mm(args: CallArgs, dst: Optional[Desc]) -> Tuple[str, Optional[bytes], Warnings]: ...
def explain(args: CallArgs) -> Dict[str, Any]: ...
def trace(args: CallArgs, i: int, j: int) -> str: ...
def attribute(args: CallArgs) -> Tuple[str, bytes, bytes, bytes, bytes, bytes]: ...
def accumulate(
    a: Desc,
    b: Desc,
    use_fast_accum: bool,
    splitk: Split,
    profile: Optional[str],
    backend: str,
    out_dtype_for_split: str,
    grad: bool,
    dst: Desc,
) -> Warnings: ...
def fill(dst: Desc, payload: bytes) -> None: ...
def dot(
    a: Desc,
    b: Desc,
    c: Optional[Desc],
    preset: str,
    fa: str,
    fb: str,
    dst: Desc,
    scale_a: Optional[Desc] = None,
    scale_b: Optional[Desc] = None,
) -> Warnings: ...
def epilogue(
    acc: Desc, scale_a: float, scale_b: float, scale_result: Optional[float], out_dtype: str, dst: Desc
) -> None: ...
def get_profile(name: Optional[str] = None) -> Dict[str, Any]: ...
def list_profiles() -> List[str]: ...
def load_profile(path: str) -> Dict[str, Any]: ...
def get_preset(name: str) -> Dict[str, Any]: ...
def list_presets() -> List[str]: ...
def backends_status(device: str) -> Tuple[List[Tuple[str, bool, str]], str, List[str]]: ...
def read_recording_rows(path: str) -> List[Dict[str, Any]]: ...
def block_scaled_mm(
    mode: str,
    preset: str,
    fa: str,
    fb: str,
    a: bytes,
    b: bytes,
    m: int,
    n: int,
    k: int,
    scale_a: bytes,
    scale_b: bytes,
    shapes: Tuple[str, str],
    globals: Tuple[float, float],
    out: str,
    experimental: Optional[bool],
) -> Tuple[bytes, Warnings]: ...
