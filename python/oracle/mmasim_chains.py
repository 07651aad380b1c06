"""Write datasets/oracle/mmasim-chains.bin: FP8 chains and MMA-Sim's result for each of them.

MMA-Sim (microsoft/MMA-Sim, PyPI `mmasim`) is an independent bit-accurate model of NVIDIA tensor cores. This script
draws random and adversarial chains (every format pair, NaN/Inf, subnormals, zero runs, cancellation, accumulators
+-0 / subnormal / huge / Inf / NaN, K below, at and past the block, long chains, extreme e8m0 scales) and records what
MMA-Sim's instruction models return for them. The Rust test model/tests/mmasim_oracle.rs reads the file; this script
is not needed at test time.

Regenerate (needs torch and mmasim; mmasim compiles nothing for these models):

    pip install --no-deps mmasim ninja   # next to a torch install
    python python/oracle/mmasim_chains.py [--chains N] [--seed S]

File layout (little-endian): b"mmaemuO1", u8 model count, then per model u8 length + ASCII name; u32 chain count;
per chain: u8 format of A (0 e4m3, 1 e5m2), u8 format of B, u16 K, u32 fp32 bits of c, K codes of A, K codes of B,
ceil(K/32) e8m0 codes of A's scales, as many of B's, then one u32 fp32 result per model.
"""

import argparse
import math
import pathlib
import random
import struct

import torch
from mmasim.arithmetic import fdpa
from mmasim.nv_ptx import sim

FORMATS = ["e4m3", "e5m2"]
TORCH = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
MODELS = ["ada", "hopper", "b200_tcgen05", "rtx50_mma_sync", "b200_tcgen05+mx", "rtx50_mma_sync+mx"]
OUT = pathlib.Path(__file__).resolve().parents[2] / "datasets" / "oracle" / "mmasim-chains.bin"


def instructions(fa, fb):
    """MMA-Sim's instruction models for A of format fa and B of format fb, in the order of MODELS."""
    return [
        sim.MMA("Ada Lovelace", f"m16n8k32.f32.{fa}.{fb}.f32"),
        sim.WGMMA("Hopper", f"m64n8k32.f32.{fa}.{fb}"),
        sim.TCGen05MMA("Blackwell", f"m64n8k32.kind::f8f6f4.f32.{fa}.{fb}"),
        sim.MMA("RTX Blackwell", f"m16n8k32.kind::f8f6f4.f32.{fa}.{fb}.f32"),
        sim.TCGen05MMABlockScale("Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.ue8m0"),
        sim.MMABlockScale("RTX Blackwell", f"m16n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.f32.ue8m0"),
    ]


def special(code, fmt):
    """Whether an FP8 code is NaN or Inf."""
    mag = code & 0x7F
    return mag == 0x7F if fmt == "e4m3" else mag >= 0x7C


def operand(rng, fmt, k, style):
    """K codes of one operand in one of the adversarial styles."""
    def finite():
        while True:
            c = rng.randrange(256)
            if not special(c, fmt):
                return c
    mbits = 3 if fmt == "e4m3" else 2
    out = []
    for _ in range(k):
        if style == "finite":
            c = finite()
        elif style == "nonzero":
            c = finite()
            while c & 0x7F == 0:
                c = finite()
        elif style == "subnormal":
            c = rng.randrange(1 << mbits) | (rng.randrange(2) << 7)
        elif style == "zeros":
            c = finite() if rng.random() < 0.3 else rng.choice([0x00, 0x80])
        elif style == "special":
            c = rng.randrange(256) if rng.random() < 0.1 else finite()
        elif style == "narrow":
            e = rng.randrange(6, 9)
            c = (e << mbits) | rng.randrange(1 << mbits) | (rng.randrange(2) << 7)
        else:  # huge
            c = rng.choice([0x7E, 0xFE, 0x7D, 0xFD, 0x7B, 0xFB]) if fmt == "e4m3" else rng.choice([0x7B, 0xFB, 0x7A])
        out.append(c)
    return out


def accumulator(rng):
    """c: +-0, subnormal, tiny, product-sized, huge, Inf or NaN (fp32 bits)."""
    style = rng.randrange(10)
    sign = rng.randrange(2) << 31
    if style == 0:
        return sign
    if style == 1:
        return sign | rng.randrange(1, 1 << 23)
    if style == 2:
        return sign | (rng.randrange(1, 20) << 23) | rng.randrange(1 << 23)
    if style == 3:
        return sign | (rng.randrange(230, 255) << 23) | rng.randrange(1 << 23)
    if style == 4:
        return sign | 0x7F800000 if rng.random() < 0.8 else 0x7FC00000
    return sign | (rng.randrange(100, 160) << 23) | rng.randrange(1 << 23)


def scales(rng, blocks, mode):
    """e8m0 codes: near 1, deep (whole blocks far below 2^-126), edge (products near 2^-140), high (overflow), or
    mixed; rarely NaN."""
    out = []
    for _ in range(blocks):
        r = rng.random()
        if r < 0.01:
            out.append(0xFF)
        elif mode == "deep":
            out.append(rng.randrange(0, 16))
        elif mode == "edge":
            out.append(rng.randrange(40, 70))
        elif mode == "high":
            out.append(rng.randrange(236, 255))
        elif r < 0.15:
            out.append(rng.choice([0, 1, 2, 60, 200, 253, 254]))
        else:
            out.append(rng.randrange(107, 148))
    return out


def length(rng):
    r = rng.random()
    if r < 0.35:
        return rng.randrange(1, 33)
    if r < 0.9:
        return rng.randrange(33, 97)
    return rng.randrange(97, 300)


def f32_bits(t):
    return struct.unpack("<I", struct.pack("<f", float(t)))[0]


def run(models, a, b, c, sa, sb):
    """Each model's result bits for one chain (the block-scaled ones one block and its scales at a time)."""
    ta, tb = torch.tensor(a, dtype=torch.uint8), torch.tensor(b, dtype=torch.uint8)
    cc = torch.tensor([struct.unpack("<f", struct.pack("<I", c))[0]], dtype=torch.float32)
    out = []
    for m in models:
        if isinstance(m, (sim.MMABlockScale, sim.TCGen05MMABlockScale)):
            op = m.arithmetic_op
            acc = cc
            for i in range(0, len(a), op.L_max):
                x = ta[i : i + op.L_max].view(m.a_type)[None, :]
                y = tb[i : i + op.L_max].view(m.b_type)[None, :]
                s_a = torch.tensor([[sa[i // op.L_max]]], dtype=torch.uint8).view(torch.float8_e8m0fnu)
                s_b = torch.tensor([[sb[i // op.L_max]]], dtype=torch.uint8).view(torch.float8_e8m0fnu)
                acc = fdpa.st_fdpa(x, y, acc, s_a, s_b, op.F, op.rho, op.e_zero)
            out.append(f32_bits(acc[0]))
        else:
            out.append(f32_bits(m.dpa(ta.view(m.a_type)[None, :], tb.view(m.b_type)[None, :], cc)[0]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20261204)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cache = {(fa, fb): instructions(fa, fb) for fa in FORMATS for fb in FORMATS}
    body = bytearray()
    styles = ["finite", "nonzero", "nonzero", "subnormal", "zeros", "special", "narrow", "huge"]
    for _ in range(args.chains):
        fa, fb = rng.choice(FORMATS), rng.choice(FORMATS)
        k = length(rng)
        a = operand(rng, fa, k, rng.choice(styles))
        b = operand(rng, fb, k, rng.choice(styles))
        if rng.random() < 0.15:  # cancellation: each pair followed by its negation
            for i in range(1, k, 2):
                a[i], b[i] = a[i - 1] ^ 0x80, b[i - 1]
        c = accumulator(rng)
        blocks = math.ceil(k / 32)
        mode = rng.choice(["normal", "normal", "normal", "deep", "high", "edge"])
        if mode == "edge":  # products scaled to about 2^-150..2^-120, where a subnormal c's exponent decides the grid
            c = (rng.randrange(2) << 31) | rng.randrange(1, 1 << 23)
        sa, sb = scales(rng, blocks, mode), scales(rng, blocks, mode)
        res = run(cache[(fa, fb)], a, b, c, sa, sb)
        body += struct.pack("<BBHI", FORMATS.index(fa), FORMATS.index(fb), k, c)
        body += bytes(a) + bytes(b) + bytes(sa) + bytes(sb)
        body += struct.pack(f"<{len(res)}I", *res)
    head = bytearray(b"mmaemuO1") + bytes([len(MODELS)])
    for name in MODELS:
        head += bytes([len(name)]) + name.encode()
    head += struct.pack("<I", args.chains)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(bytes(head + body))
    print(f"wrote {args.chains} chains x {len(MODELS)} models to {OUT}")


if __name__ == "__main__":
    main()
