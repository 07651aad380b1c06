"""``python -m mmaemu.record SPEC --out FILE [--simulate]``: the torch-level recorder. Every call of the spec
(shapes x formats x out dtypes x fast_accum x scales x scaling x bias; docs/recording-format.md, "The
torch-level recorder") is made through ``torch._scaled_mm`` on a CUDA GPU, or with ``--simulate`` through mmaemu
itself, and written as ``scaled_mm`` rows of ``mmaemu-recording/1`` by the project's Rust writer.

Exit status: 0 written; 2 bad spec or arguments; 3 no CUDA GPU (without --simulate); 4 the file could not be
written.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
from typing import Any, Dict, List, Optional

USAGE, NO_GPU, WRITE = 2, 3, 4


def _platform(simulate: bool, profile: str) -> Dict[str, Any]:
    import torch

    import mmaemu

    if simulate:
        return {"gpu": f"simulated (mmaemu {mmaemu.__version__}, profile {profile})", "capability": None,
                "torch": torch.__version__, "caller": "torch._scaled_mm", "simulated": True, "profile": profile}
    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "capability": [props.major, props.minor], "sm_count": props.multi_processor_count,
            "cuda_runtime": torch.version.cuda, "cublaslt": None, "torch": torch.__version__,
            "caller": "torch._scaled_mm", "workspace_bytes": None}


def record(spec_path: str, out: str, simulate: bool, log: Any = sys.stderr) -> Dict[str, Any]:
    """Records the spec into ``out``; returns the summary (rows, skipped cases with their reasons)."""
    import torch

    import mmaemu
    from mmaemu import _core

    from ._record import run, spec as specs

    with open(spec_path, "rb") as f:
        raw = f.read()
    spec = specs.parse(raw.decode("utf-8"))
    preset = _core.get_profile(spec.profile)["preset"]
    gpu = "simulated" if simulate else torch.cuda.get_device_name(0).replace("NVIDIA ", "")
    rows: List[Dict[str, Any]] = []
    skipped: List[str] = []
    for case in spec.cases():
        row = run.base_row(spec, case, preset, gpu, "model" if simulate else "hardware")
        done, why = run.simulate(row, case) if simulate else run.on_gpu(row, case, spec.runs)
        if done is None:
            skipped.append(f"{row['id']} ({case.scaling}): {why}")
            print(f"mmaemu.record: skipped {row['id']} ({case.scaling}): {why}", file=log)
        else:
            rows.append(done)
    provenance = {
        "source": "python -m mmaemu.record" + (" --simulate" if simulate else ""),
        "licence": "Apache-2.0",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tool": f"mmaemu {mmaemu.__version__} (python -m mmaemu.record), torch {torch.__version__}",
        "spec": raw.decode("utf-8"),
        "spec_sha256": hashlib.sha256(raw).hexdigest(),
        "skipped": skipped,
    }
    written = _core.write_recording_rows(os.fspath(out), rows, json.dumps(_platform(simulate, spec.profile)),
                                         json.dumps(provenance))
    return {"rows": written, "skipped": skipped}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mmaemu.record", description=__doc__.split("\n\n")[0])
    p.add_argument("spec", help="the spec (TOML)")
    p.add_argument("--out", required=True, help="the recording to write (Parquet)")
    p.add_argument("--simulate", action="store_true", help="compute with mmaemu instead of a GPU (truth = model)")
    a = p.parse_args(argv)
    from ._record.spec import SpecError

    if not a.simulate:
        import torch

        if not torch.cuda.is_available():
            print("mmaemu.record: no CUDA GPU (torch.cuda.is_available() is false); use --simulate", file=sys.stderr)
            return NO_GPU
    try:
        summary = record(a.spec, a.out, a.simulate)
    except (SpecError, OSError) as e:
        print(f"mmaemu.record: {a.spec}: {e}", file=sys.stderr)
        return USAGE
    except Exception as e:  # the writer's DataError and anything else that stops the file
        print(f"mmaemu.record: {a.out} not written: {type(e).__name__}: {e}", file=sys.stderr)
        return WRITE
    print(json.dumps({"out": a.out, "rows": summary["rows"], "skipped": len(summary["skipped"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
