#!/usr/bin/env python3
"""Cross-check mmaemu-record against torch._scaled_mm on the same GPU (recorder/device/h200-check.sh).

For every row of the given recordings (mmaemu-recording/1 Parquet, read with pyarrow; or raw dumps written
by `mmaemu-record dump FILE --out DIR`), the same call is made with torch._scaled_mm:

    torch._scaled_mm(A[m, k], B[n, k].t(), scale_a, scale_b, scale_result=..., out_dtype=..., use_fast_accum=...)

and its output bytes must equal the recorded ones (or their sha256); a row that records a rejection must
make torch raise. The report (JSON) counts matches and mismatches per setting and lists the first
mismatches with the recorded split and algorithm, so a difference can be traced to the descriptor.

Other mode: `--which-cublaslt` runs one FP8 GEMM and prints the path of the libcublasLt torch loaded (from
/proc/self/maps), so the recorder can be pointed at the very same library.

Exit status: 0 when every row agrees, 1 when some row differs, 2 on a usage or environment error.
"""

import argparse
import hashlib
import json
import os
import struct
import sys
from collections import Counter, defaultdict


def die(msg):
    print(f"torch_check: {msg}", file=sys.stderr)
    sys.exit(2)


try:
    import torch
except ImportError:  # pragma: no cover - environment check
    die("torch is not importable")

DTYPES = {
    "e4m3": torch.float8_e4m3fn,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "e5m2": torch.float8_e5m2,
    "float8_e5m2": torch.float8_e5m2,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def which_cublaslt():
    a = torch.zeros(16, 16, device="cuda", dtype=torch.float8_e4m3fn)
    one = torch.tensor(1.0, device="cuda")
    torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and "libcublasLt" in parts[-1]:
                return parts[-1]
    return ""


def rows_from_parquet(path):
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    names = set(table.column_names)
    cols = {name: table.column(name).to_pylist() for name in table.column_names}
    for i in range(table.num_rows):
        row = {name: cols[name][i] for name in cols}
        if "inputs" not in names:
            row["inputs"] = None
        yield row


def rows_from_dump(directory):
    with open(os.path.join(directory, "data.bin"), "rb") as f:
        data = f.read()
    with open(os.path.join(directory, "index.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            take = lambda span: None if span is None else data[span[0] : span[0] + span[1]]
            r["a"], r["b"], r["expected"] = take(r["a"]), take(r["b"]), take(r["expected"])
            yield r


def call_torch(r):
    m, n, k = r["m"], r["n"], r["k"]
    fa, fb = DTYPES[r["fmt_a"]], DTYPES[r["fmt_b"]]
    a = torch.frombuffer(bytearray(r["a"]), dtype=torch.uint8).view(fa).reshape(m, k).cuda()
    b = torch.frombuffer(bytearray(r["b"]), dtype=torch.uint8).view(fb).reshape(n, k).cuda()
    sa = torch.tensor(f32(r["scale_a"]), dtype=torch.float32, device="cuda")
    sb = torch.tensor(f32(r["scale_b"]), dtype=torch.float32, device="cuda")
    sr = r.get("scale_result")
    sr = None if sr is None else torch.tensor(f32(sr), dtype=torch.float32, device="cuda")
    od = DTYPES[r["out_dtype"]] if r.get("out_dtype") else None
    y = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, scale_result=sr, out_dtype=od,
                         use_fast_accum=bool(r["fast_accum"]))
    return y.contiguous().view(torch.uint8).cpu().numpy().tobytes(), y.element_size()


def first_difference(x, y, width):
    n = min(len(x), len(y)) // width
    diff = [i for i in range(n) if x[i * width:(i + 1) * width] != y[i * width:(i + 1) * width]]
    return len(diff) + abs(len(x) - len(y)) // width, (diff[0] if diff else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", help="recordings (.parquet) or dump directories")
    ap.add_argument("--report", help="write the JSON report here")
    ap.add_argument("--which-cublaslt", action="store_true", help="print torch's libcublasLt path and exit")
    ap.add_argument("--details", type=int, default=40, help="mismatches listed in the report")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        die("CUDA is not available to torch")
    if args.which_cublaslt:
        print(which_cublaslt())
        return 0
    if not args.inputs:
        die("no recordings given")

    totals = Counter()
    per_setting = defaultdict(Counter)
    mismatches = []
    nondeterministic_rows = 0
    for src in args.inputs:
        rows = rows_from_dump(src) if os.path.isdir(src) else rows_from_parquet(src)
        for r in rows:
            totals["rows"] += 1
            if r.get("note") and "nondeterministic" in r["note"]:
                nondeterministic_rows += 1
            if (not r["a"] and r["m"] * r["k"] > 0) or (not r["b"] and r["n"] * r["k"] > 0):
                totals["skipped_by_reference"] += 1  # operands only in the dump; run the dump instead
                continue
            key = f'{r["fmt_a"]}x{r["fmt_b"]}->{r["out_dtype"]} {"fast" if r["fast_accum"] else "slow"} S={r.get("split_s")}'
            try:
                got, width = call_torch(r)
                err = None
            except RuntimeError as e:
                got, width, err = None, 1, str(e).splitlines()[0][:300]
            want_err = r.get("expected_error")
            if want_err:
                ok = err is not None
                what = "torch raised as recorded" if ok else "recorded a rejection, torch returned a result"
            elif err is not None:
                ok, what = False, f"torch raised: {err}"
            elif r.get("expected") is not None:
                ok = got == r["expected"]
                what = "bits equal" if ok else "bits differ"
            else:
                ok = hashlib.sha256(got).hexdigest() == r["expected_sha256"]
                what = "sha256 equal" if ok else "sha256 differs"
            totals["match" if ok else "mismatch"] += 1
            per_setting[key]["match" if ok else "mismatch"] += 1
            if not ok and len(mismatches) < args.details:
                detail = {"file": os.path.basename(src), "id": r["id"], "m": r["m"], "n": r["n"], "k": r["k"],
                          "setting": key, "what": what, "algo": r.get("algo"), "note": r.get("note")}
                if got is not None and r.get("expected") is not None:
                    count, first = first_difference(r["expected"], got, width)
                    detail.update({"elements_differing": count, "first_index": first})
                mismatches.append(detail)
    report = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0),
        "cublaslt_loaded_by_torch": which_cublaslt(),
        "env": {k: os.environ.get(k) for k in ("CUBLASLT_WORKSPACE_SIZE", "CUBLAS_WORKSPACE_CONFIG")},
        "inputs": [os.path.basename(p) for p in args.inputs],
        "totals": dict(totals),
        "recorder_nondeterministic_rows": nondeterministic_rows,
        "per_setting": {k: dict(v) for k, v in sorted(per_setting.items())},
        "mismatches": mismatches,
    }
    text = json.dumps(report, indent=1, sort_keys=True)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text + "\n")
    print(json.dumps({"totals": dict(totals), "torch": torch.__version__}, sort_keys=True))
    return 0 if totals["mismatch"] == 0 and totals["match"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
