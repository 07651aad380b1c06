"""Hardware recordings (format ``mmaemu-recording/1``, docs/recording-format.md) read by the Rust
reader of the project, row by row, as plain dicts of the format's columns.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Union

from . import _core

__all__ = ["read_recording"]


def read_recording(path: Union[str, "os.PathLike[str]"]) -> List[Dict[str, Any]]:
    """Every row of one recording file, validated as the project's reader validates it. Binary columns are
    ``bytes``, ``call`` is the call object's JSON text, ``expected`` is ``("bits", bytes)``,
    ``("sha256", hex)`` or ``("error", class name)``. A file that fails its checks raises DataError."""
    return list(_core.read_recording_rows(os.fspath(path)))
