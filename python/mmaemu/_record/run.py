"""The calls of a torch-level spec made and recorded: on a CUDA GPU through ``torch._scaled_mm`` itself (the
result bits, the kernels torch.profiler saw, the torch version), or with ``simulate`` through mmaemu
(``truth = "model"``), where a mode mmaemu refuses is recorded as that refusal and a call this torch cannot even
build is skipped with its reason. Every row is a ``scaled_mm`` row of ``mmaemu-recording/1``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import tensors
from .spec import Case, Spec, scale_specs


def _operand_bytes(gen: torch.Generator, fmt: str, rows: int, k: int) -> bytes:
    """Seeded operand bytes: normal values rounded to the FP8 format, or random e2m1 pairs (every byte is two
    finite e2m1 codes)."""
    if fmt == "float4_e2m1fn_x2":
        return torch.randint(0, 256, (rows * (k // 2),), generator=gen, dtype=torch.uint8).numpy().tobytes()
    values = torch.randn(rows, k, generator=gen, dtype=torch.float32)
    return values.to(tensors.dtype_of(fmt)).view(torch.uint8).numpy().tobytes()


def base_row(spec: Spec, case: Case, preset: str, gpu: str, truth: str) -> Dict[str, Any]:
    """The row of a case before it runs: operands, call object, columns; ``expected`` still unset."""
    fa, fb = (("float4_e2m1fn_x2",) * 2) if case.scaling == "nvfp4" else (case.fmt_a, case.fmt_b)
    gen = torch.Generator().manual_seed(spec.seed * 1_000_003 + case.index)
    sa, sb = scale_specs(case)
    call: Dict[str, Any] = {}
    if sa is not None:
        call["scale_a"], call["scale_b"] = sa, sb
    if case.bias:
        call["bias"] = {"dtype": case.out_dtype, "len": case.n}
    return {
        "id": f"{spec.name}-{case.index:06d}", "op": "scaled_mm", "preset": preset, "profile": spec.profile,
        "gpu": gpu, "truth": truth, "fmt_a": fa, "fmt_b": fb, "batch": 1, "m": case.m, "n": case.n, "k": case.k,
        "a": _operand_bytes(gen, fa, case.m, case.k), "b": _operand_bytes(gen, fb, case.n, case.k), "c": None,
        "scale_a": None if sa else _f32_bits(case.scales[0]), "scale_b": None if sb else _f32_bits(case.scales[1]),
        "scale_result": None, "out_dtype": case.out_dtype, "fast_accum": case.fast_accum,
        "split_s": 1, "split_scheme": "none", "algo": None, "call": json.dumps(call) if call else None,
        "out_select": None, "scope": None, "note": None,
        "origin": f"python -m mmaemu.record {spec.name} case {case.index} (scaling {case.scaling}, seed {spec.seed})",
    }


def _f32_bits(x: float) -> int:
    return int(torch.tensor([x], dtype=torch.float32).view(torch.int32).item()) & 0xFFFFFFFF


def _bits(out: torch.Tensor) -> bytes:
    width = out.element_size()
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[width]
    return out.detach().cpu().contiguous().view(ints).numpy().tobytes()


def simulate(row: Dict[str, Any], case: Case) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The row computed by mmaemu (S = 1), its refusal recorded as the expected error; or a skip reason."""
    import mmaemu
    from mmaemu.errors import ReferenceRejectsError, UnsupportedFeatureError

    try:
        args, kwargs = tensors.scaled_mm_args(row)
    except (TypeError, RuntimeError, ValueError) as e:
        return None, f"torch {torch.__version__} cannot build the call: {e}"
    try:
        # A GPU computes what torch accepts: the simulated device opts in to the experimental modes.
        out = mmaemu.scaled_mm(*args, **kwargs, profile=row["profile"], splitk=1, experimental=True)
    except UnsupportedFeatureError as e:
        row.update(expected=("error", "UnsupportedFeatureError"), scope=f"out:{case.scaling}",
                   note=f"simulated: mmaemu {mmaemu.__version__} refuses the call: {e}")
        return row, None
    except ReferenceRejectsError as e:
        row.update(expected=("error", "ReferenceRejectsError"),
                   note=f"simulated: mmaemu {mmaemu.__version__} rejects the call as the reference does: {e}")
        return row, None
    except (TypeError, ValueError) as e:
        return None, f"mmaemu {mmaemu.__version__} cannot take the call: {type(e).__name__}: {e}"
    row.update(expected=("bits", _bits(out)), note=f"simulated with mmaemu {mmaemu.__version__}, S = 1",
               algo=json.dumps({"source": "simulated: mmaemu scaled_mm, splitk = 1", "kernel": None}))
    return row, None


def _kernels(prof: Any) -> List[str]:
    names = []
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA") and e.name not in names:
            names.append(e.name)
    return names


def on_gpu(row: Dict[str, Any], case: Case, runs: int) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The row as torch on the current CUDA device computes it, ``runs`` times (run 1 kept, differences
    noted), with the kernels torch.profiler recorded."""
    from torch.profiler import ProfilerActivity, profile

    try:
        args, kwargs = tensors.scaled_mm_args(row, "cuda")
    except (TypeError, RuntimeError, ValueError) as e:
        return None, f"torch {torch.__version__} cannot build the call: {e}"
    results: List[bytes] = []
    kernels: List[str] = []
    try:
        for _ in range(runs):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                out = torch._scaled_mm(*args, **kwargs)
                torch.cuda.synchronize()
            results.append(_bits(out))
            kernels = kernels or _kernels(prof)
    except RuntimeError as e:
        row.update(expected=("error", "ReferenceRejectsError"),
                   note=f"torch {torch.__version__} rejected the call: {str(e).splitlines()[0]}")
        return row, None
    cutlass = any("cutlass" in k.lower() or "rowwise" in k.lower() for k in kernels)
    # CUTLASS row-wise kernels have no split-K on sm_90; a cuBLASLt kernel's split is not visible here.
    row.update(expected=("bits", results[0]), split_scheme="none" if cutlass else "unknown",
               algo=json.dumps({"kernel": kernels[0] if kernels else None, "kernels": kernels,
                                "source": "torch.profiler"}))
    notes = [f"torch {torch.__version__}; kernels: {', '.join(kernels) or 'none seen'}"]
    for r, other in enumerate(results[1:], start=2):
        if other != results[0]:
            notes.append(f"nondeterministic: run {r} differs from run 1; expected holds run 1")
    row["note"] = "; ".join(notes)
    return row, None
