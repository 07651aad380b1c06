"""Write datasets/oracle/mmasim-seeded.bin: MMA-Sim's results for 100,000 seeded FP8 chains on the Blackwell models.

The chains' operands are not stored: each is drawn from a SplitMix64 generator by the recipe below, which
model/tests/mmasim_seeded.rs implements identically, so the file holds only the seed, a digest of the operands and
the result bits. The Rust test rebuilds every chain, checks the digest (the two recipes agree), then compares each
preset's `dot` / `dot_scaled` with MMA-Sim bit for bit. The recipe and the file layout are in
datasets/oracle/README.md; keep the three in step.

Regenerate (needs torch and mmasim; MMA-Sim builds a small C++ extension on first import, so `ninja` must be on
PATH):

    pip install --no-deps mmasim ninja   # next to a torch install
    python python/oracle/mmasim_seeded.py [--chains N] [--seed S] [--out PATH]
"""

import argparse
import collections
import hashlib
import pathlib
import struct
import time

import torch
from mmasim.arithmetic import fdpa
from mmasim.nv_ptx import sim

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
FORMATS = ["e4m3", "e5m2"]
STYLES = ["finite", "nonzero", "nonzero", "subnormal", "zeros", "special", "narrow", "huge"]
SCALE_MODES = ["normal", "normal", "normal", "deep", "high", "edge"]
HUGE = {"e4m3": [0x7E, 0xFE, 0x7D, 0xFD, 0x7B, 0xFB], "e5m2": [0x7B, 0xFB, 0x7A]}
NOTABLE_SCALES = [0, 1, 2, 60, 200, 253, 254]
MODELS = ["b200_tcgen05", "rtx50_mma_sync", "b200_tcgen05+mx", "rtx50_mma_sync+mx"]
OUT = pathlib.Path(__file__).resolve().parents[2] / "datasets" / "oracle" / "mmasim-seeded.bin"


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64; `below(n)` is next() mod n."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + GAMMA) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n

    def between(self, lo, hi):
        """An integer in [lo, hi)."""
        return lo + self.below(hi - lo)

    def per_mille(self, p):
        return self.below(1000) < p

    def choice(self, seq):
        return seq[self.below(len(seq))]


def special(code, fmt):
    """Whether an FP8 code is NaN or Inf."""
    mag = code & 0x7F
    return mag == 0x7F if fmt == "e4m3" else mag >= 0x7C


def finite(rng, fmt):
    while True:
        c = rng.below(256)
        if not special(c, fmt):
            return c


def element(rng, fmt, style):
    """One FP8 code of an operand drawn in the given style (draws in the order written)."""
    mbits = 3 if fmt == "e4m3" else 2
    if style == "finite":
        return finite(rng, fmt)
    if style == "nonzero":
        c = finite(rng, fmt)
        while c & 0x7F == 0:
            c = finite(rng, fmt)
        return c
    if style == "subnormal":
        mant = rng.below(1 << mbits)
        sign = rng.below(2)
        return mant | sign << 7
    if style == "zeros":
        return finite(rng, fmt) if rng.per_mille(300) else rng.choice([0x00, 0x80])
    if style == "special":
        return rng.below(256) if rng.per_mille(100) else finite(rng, fmt)
    if style == "narrow":
        e = rng.between(6, 9)
        mant = rng.below(1 << mbits)
        sign = rng.below(2)
        return e << mbits | mant | sign << 7
    return rng.choice(HUGE[fmt])  # huge


def accumulator(rng):
    """c as fp32 bits: +-0, subnormal, tiny, huge, +-Inf or NaN, or product-sized."""
    style = rng.below(10)
    sign = rng.below(2) << 31
    if style == 0:
        return sign
    if style == 1:
        return sign | rng.between(1, 1 << 23)
    if style in (2, 3):
        lo, hi = (1, 20) if style == 2 else (230, 255)
        e = rng.between(lo, hi)
        return sign | e << 23 | rng.below(1 << 23)
    if style == 4:
        return sign | 0x7F800000 if rng.per_mille(800) else 0x7FC00000
    e = rng.between(100, 160)
    return sign | e << 23 | rng.below(1 << 23)


def scale(rng, mode):
    """One e8m0 code: near 1, deep (far below 2^-126), edge (products near 2^-140), high (overflow); rarely NaN."""
    r = rng.below(1000)
    if r < 10:
        return 0xFF
    if mode == "deep":
        return rng.between(0, 16)
    if mode == "edge":
        return rng.between(40, 70)
    if mode == "high":
        return rng.between(236, 255)
    if r < 150:
        return rng.choice(NOTABLE_SCALES)
    return rng.between(107, 148)


def length(rng):
    r = rng.below(100)
    if r < 35:
        return rng.between(1, 33)
    if r < 90:
        return rng.between(33, 97)
    return rng.between(97, 300)


def chain(seed):
    """One chain (fa, fb, K, c, a, b, scales of a, scales of b) from its own generator."""
    rng = SplitMix64(seed)
    fa, fb = rng.below(2), rng.below(2)
    k = length(rng)
    style_a = rng.choice(STYLES)
    a = [element(rng, FORMATS[fa], style_a) for _ in range(k)]
    style_b = rng.choice(STYLES)
    b = [element(rng, FORMATS[fb], style_b) for _ in range(k)]
    if rng.per_mille(150):  # cancellation: each odd pair is its predecessor negated
        for i in range(1, k, 2):
            a[i], b[i] = a[i - 1] ^ 0x80, b[i - 1]
    c = accumulator(rng)
    mode = rng.choice(SCALE_MODES)
    if mode == "edge":  # products near 2^-150..2^-120, where a subnormal c's exponent decides the grid
        sign = rng.below(2) << 31
        c = sign | rng.between(1, 1 << 23)
    blocks = (k + 31) // 32
    sa = [scale(rng, mode) for _ in range(blocks)]
    sb = [scale(rng, mode) for _ in range(blocks)]
    return fa, fb, k, c, a, b, sa, sb


def chains(seed, n):
    """Chain i is drawn by a SplitMix64 seeded with the i-th output of a SplitMix64 seeded with `seed`."""
    master = SplitMix64(seed)
    return [chain(master.next()) for _ in range(n)]


def digest(all_chains):
    """sha256 over every chain as: u8 fa, u8 fb, u16 K, u32 c, A's codes, B's codes, A's scales, B's scales."""
    h = hashlib.sha256()
    for fa, fb, k, c, a, b, sa, sb in all_chains:
        h.update(struct.pack("<BBHI", fa, fb, k, c) + bytes(a) + bytes(b) + bytes(sa) + bytes(sb))
    return h.digest()


def models(fa, fb):
    fa, fb = FORMATS[fa], FORMATS[fb]
    return [
        sim.TCGen05MMA("Blackwell", f"m64n8k32.kind::f8f6f4.f32.{fa}.{fb}"),
        sim.MMA("RTX Blackwell", f"m16n8k32.kind::f8f6f4.f32.{fa}.{fb}.f32"),
        sim.TCGen05MMABlockScale("Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.ue8m0"),
        sim.MMABlockScale("RTX Blackwell", f"m16n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.f32.ue8m0"),
    ]


def evaluate(group, instrs):
    """Each model's result bits for chains of one (fa, fb, K), all at once: MMA-Sim works elementwise over leading
    dimensions, so a batch of N chains is N independent dot products. The block-scaled models go one block and its
    two scales at a time, the last block holding K mod 32 pairs when K is not a multiple of 32."""
    k = group[0][2]
    ta = torch.tensor([ch[4] for ch in group], dtype=torch.uint8)
    tb = torch.tensor([ch[5] for ch in group], dtype=torch.uint8)
    tc = torch.tensor([ch[3] - (ch[3] >> 31 << 32) for ch in group], dtype=torch.int32).view(torch.float32)
    tsa = torch.tensor([ch[6] for ch in group], dtype=torch.uint8)
    tsb = torch.tensor([ch[7] for ch in group], dtype=torch.uint8)
    out = []
    for m in instrs:
        if isinstance(m, (sim.MMABlockScale, sim.TCGen05MMABlockScale)):
            op = m.arithmetic_op
            acc = tc.clone()
            for i in range(0, k, op.L_max):
                x = ta[:, i : i + op.L_max].view(m.a_type)
                y = tb[:, i : i + op.L_max].view(m.b_type)
                s_a = tsa[:, i // op.L_max : i // op.L_max + 1].view(torch.float8_e8m0fnu)
                s_b = tsb[:, i // op.L_max : i // op.L_max + 1].view(torch.float8_e8m0fnu)
                acc = fdpa.st_fdpa(x, y, acc, s_a, s_b, op.F, op.rho, op.e_zero)
            res = acc
        else:
            res = m.dpa(ta.view(m.a_type), tb.view(m.b_type), tc.clone())
        out.append([v & 0xFFFFFFFF for v in res.view(torch.int32).tolist()])
    return [list(r) for r in zip(*out)]


def results(all_chains):
    """Every chain's result bits per model, in chain order."""
    groups = collections.defaultdict(list)
    for i, ch in enumerate(all_chains):
        groups[(ch[0], ch[1], ch[2])].append(i)
    cache = {}
    res = [None] * len(all_chains)
    for (fa, fb, _), idx in sorted(groups.items()):
        instrs = cache.setdefault((fa, fb), models(fa, fb))
        for i, r in zip(idx, evaluate([all_chains[i] for i in idx], instrs)):
            res[i] = r
    return res


def encode(seed, all_chains, res):
    """The file: see datasets/oracle/README.md."""
    out = bytearray(b"mmaemuS1")
    out += struct.pack("<QI", seed, len(all_chains))
    out += digest(all_chains)
    out += bytes([len(MODELS)])
    for name in MODELS:
        out += bytes([len(name)]) + name.encode()
    for r in res:
        flags = 0
        for m in range(1, len(MODELS)):
            flags |= (r[m] == r[m - 1]) << m
        out.append(flags)
        for m, v in enumerate(r):
            if not flags >> m & 1:
                out += struct.pack("<I", v)
    return bytes(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=100_000)
    ap.add_argument("--seed", type=lambda s: int(s, 0), default=20261204)
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.monotonic()
    all_chains = chains(args.seed, args.chains)
    t1 = time.monotonic()
    res = results(all_chains)
    t2 = time.monotonic()
    data = encode(args.seed, all_chains, res)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(
        f"wrote {args.chains} chains x {len(MODELS)} models to {args.out} ({len(data)} bytes, "
        f"sha256 {hashlib.sha256(data).hexdigest()}); drawing {t1 - t0:.1f} s, MMA-Sim {t2 - t1:.1f} s"
    )


if __name__ == "__main__":
    main()
