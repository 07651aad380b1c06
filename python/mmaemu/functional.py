"""``mmaemu.functional``: torch 2.10's ``torch.nn.functional.scaled_mm`` with its ``ScalingType`` and ``SwizzleType``
(torch's own where the installed torch has them, mirrored otherwise), on the model (docs/reference.md §12.6).
"""

from ._v2 import ScalingType, SwizzleType
from ._v2 import functional_scaled_mm as scaled_mm

__all__ = ["scaled_mm", "ScalingType", "SwizzleType"]
