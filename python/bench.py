"""Benchmark of the Python package against the command line in the same run: scaled_mm at 1024^3 (hopper, fast,
e4m3) from Python against `mmaemu bench gemm` on the same backend, and the time of one 16 x 16 x 32 call.
Usage: python python/bench.py [--rounds 11] [--reps 9] [--cli target/release/mmaemu]
"""

# The command line times the plan execution alone (`execute`); the Python figure is the whole call (argument checks,
# split decision, execution, epilogue, result tensor). Each side is the best of its repetitions; the rounds alternate
# the two sides. The verdict is the median over the rounds of each round's ratio (Python / command line): the two
# sides of a round run seconds apart, under the same load, while a shared virtual machine's speed drifts by tens of
# percent from minute to minute, so the best of each side over the whole run may come from different moments.
# Without --cli the script builds the command line with `cargo build --release` at the repository root.

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

import torch

# The script's own folder holds the package's sources, without the built extension: import the installed package.
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != os.path.dirname(os.path.abspath(__file__))]
import mmaemu  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SHAPE = (1024, 1024, 1024)


def cli_path(given: str) -> str:
    if given:
        return given
    subprocess.run(["cargo", "build", "--release", "--bin", "mmaemu"], cwd=REPO, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    return os.path.join(target, "release", "mmaemu")


def cli_bench(cli: str, reps: int) -> dict:
    m, n, k = SHAPE
    cmd = [cli, "bench", "gemm", "--m", str(m), "--n", str(n), "--k", str(k), "--profile", "hopper", "--fast",
           "--no-native", "--reps", str(reps), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def finite_e4m3(rows: int, cols: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 256, (rows, cols), dtype=torch.uint8, generator=g)
    codes[(codes & 0x7F) == 0x7F] = 0x00  # no NaN codes (e4m3 has no infinities)
    return codes.view(torch.float8_e4m3fn)


def best_of(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--small-calls", type=int, default=2000)
    ap.add_argument("--cli", default="")
    args = ap.parse_args()
    cli = cli_path(args.cli)

    m, n, k = SHAPE
    a, w = finite_e4m3(m, k, 1), finite_e4m3(n, k, 2)
    one = torch.tensor(1.0)
    backend = cli_bench(cli, 1)["backend"]

    def big() -> torch.Tensor:
        return mmaemu.scaled_mm(a, w.t(), one, one, use_fast_accum=True, profile="hopper", splitk=1,
                                backend=backend)

    sa, sw = finite_e4m3(16, 32, 3), finite_e4m3(16, 32, 4)

    def small_batch() -> None:
        for _ in range(args.small_calls):
            mmaemu.scaled_mm(sa, sw.t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True, profile="hopper",
                             splitk=1)

    cli_best = py_best = small_best = float("inf")
    ratios = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would mean another call than the command line's
        for r in range(args.rounds):
            c = cli_bench(cli, args.reps)
            p = best_of(big, args.reps)
            s = best_of(small_batch, 3) / args.small_calls
            cli_best, py_best, small_best = min(cli_best, c["emulated_s"]), min(py_best, p), min(small_best, s)
            ratios.append(p / c["emulated_s"])
            print(f"round {r + 1}: command line {c['emulated_s'] * 1e3:.1f} ms, Python {p * 1e3:.1f} ms "
                  f"(ratio {ratios[-1]:.3f}), 16x16x32 {s * 1e6:.1f} us", flush=True)

    macs = m * n * k
    ratio = statistics.median(ratios)
    print(f"backend {backend}, {torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs")
    print(f"1024^3 hopper fast e4m3: command line {cli_best * 1e3:.1f} ms ({macs / cli_best / 1e9:.1f} GMAC/s), "
          f"Python scaled_mm {py_best * 1e3:.1f} ms ({macs / py_best / 1e9:.1f} GMAC/s) (best of each); Python / "
          f"command line, median of {len(ratios)} rounds: {ratio:.3f} ({'within' if ratio <= 1.10 else 'NOT within'} "
          f"10 %)")
    print(f"16x16x32 scaled_mm from Python: {small_best * 1e6:.1f} us per call "
          f"({'under' if small_best < 50e-6 else 'NOT under'} 50 us)")
    return 0 if ratio <= 1.10 and small_best < 50e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
