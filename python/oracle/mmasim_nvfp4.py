"""Write datasets/oracle/mmasim-nvfp4.bin: MMA-Sim's results for 100,000 seeded NVFP4 chains on tcgen05 mxf4nvf4.

The instruction is MMA-Sim's `TCGen05MMABlockScale("Blackwell",
"m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3")` (microsoft/MMA-Sim, PyPI `mmasim` 2.1.1: its
`MMA_GST_FDPA(G=16, F=35, rho="RZ-FP32", L_max=64, e_zero=-139)`), run over a whole chain by its own `dpa`: e2m1
operands (given as their values, one per element), e4m3 scales per 16 elements (the sign bit cleared by MMA-Sim, as
ue4m3), one instruction per 64 elements of K. The operands are not stored: each chain is drawn from a SplitMix64
by the recipe of datasets/oracle/README.md, which model/tests/mmasim_nvfp4.rs implements identically; the file
holds the seed, a digest of the operands and the result bits.

Regenerate (needs torch and mmasim; `ninja` on PATH for MMA-Sim's extension):

    pip install --no-deps mmasim ninja   # next to a torch install
    python python/oracle/mmasim_nvfp4.py [--chains N] [--seed S] [--out PATH]
"""

import argparse
import collections
import hashlib
import pathlib
import struct
import time

import torch
from mmasim.nv_ptx import sim

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
STYLES = ["any", "nonzero", "nonzero", "zeros", "small", "huge"]
SCALE_MODES = ["normal", "normal", "normal", "subnormal", "high", "wide"]
NOTABLE_SCALES = [0x00, 0x01, 0x08, 0x38, 0x7E]
E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
INSTRUCTION = "m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"
MODEL = "b200_tcgen05_mxf4nvf4"
OUT = pathlib.Path(__file__).resolve().parents[2] / "datasets" / "oracle" / "mmasim-nvfp4.bin"


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
        return lo + self.below(hi - lo)

    def per_mille(self, p):
        return self.below(1000) < p

    def choice(self, seq):
        return seq[self.below(len(seq))]


def element(rng, style):
    """One e2m1 code (bit 3 the sign) in the given style."""
    if style == "any":
        return rng.below(16)
    if style == "nonzero":
        return rng.between(1, 8) | rng.below(2) << 3
    if style == "zeros":
        return rng.below(16) if rng.per_mille(300) else rng.choice([0x0, 0x8])
    if style == "small":
        return rng.between(1, 4) | rng.below(2) << 3
    return rng.choice([0x7, 0xF, 0x6, 0xE])  # huge


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
        return sign | rng.between(lo, hi) << 23 | rng.below(1 << 23)
    if style == 4:
        return sign | 0x7F800000 if rng.per_mille(800) else 0x7FC00000
    return sign | rng.between(100, 160) << 23 | rng.below(1 << 23)


def scale(rng, mode):
    """One e4m3 scale code with a random sign bit: near 1, subnormal (zero included), high, or any; rarely NaN."""
    r = rng.below(1000)
    sign = rng.below(2) << 7
    if r < 10:
        return 0x7F | sign
    if mode == "subnormal":
        return rng.between(0, 9) | sign
    if mode == "high":
        return rng.between(0x70, 0x7F) | sign
    if mode == "wide":
        return rng.below(0x7F) | sign
    if r < 150:
        return rng.choice(NOTABLE_SCALES) | sign
    return rng.between(0x30, 0x48) | sign


def chain(seed):
    """One chain (K, c, a, b, scales of a, scales of b); K is a multiple of 16 (one scale per 16 elements)."""
    rng = SplitMix64(seed)
    r = rng.below(100)
    groups = rng.between(1, 5) if r < 35 else rng.between(5, 17) if r < 90 else rng.between(17, 41)
    k = 16 * groups
    style_a = rng.choice(STYLES)
    a = [element(rng, style_a) for _ in range(k)]
    style_b = rng.choice(STYLES)
    b = [element(rng, style_b) for _ in range(k)]
    if rng.per_mille(150):  # cancellation: each odd pair is its predecessor negated
        for i in range(1, k, 2):
            a[i], b[i] = a[i - 1] ^ 0x8, b[i - 1]
    c = accumulator(rng)
    mode = rng.choice(SCALE_MODES)
    sa = [scale(rng, mode) for _ in range(groups)]
    sb = [scale(rng, mode) for _ in range(groups)]
    return k, c, a, b, sa, sb


def chains(seed, n):
    """Chain i is drawn by a SplitMix64 seeded with the i-th output of a SplitMix64 seeded with `seed`."""
    master = SplitMix64(seed)
    return [chain(master.next()) for _ in range(n)]


def digest(all_chains):
    """sha256 over every chain as: u16 K, u32 c, A's codes, B's codes, A's scales, B's scales."""
    h = hashlib.sha256()
    for k, c, a, b, sa, sb in all_chains:
        h.update(struct.pack("<HI", k, c) + bytes(a) + bytes(b) + bytes(sa) + bytes(sb))
    return h.digest()


def values(codes):
    """e2m1 codes as their values (float16, exact), bit 3 the sign."""
    table = torch.tensor(E2M1_VALUES + [-v for v in E2M1_VALUES], dtype=torch.float16)
    return table[torch.tensor(codes, dtype=torch.long)]


def evaluate(group, instr):
    """The instruction's result bits for chains of one K, all at once (MMA-Sim works elementwise over leading
    dimensions): its `dpa` runs one 64-element instruction after another, the last holding K mod 64 elements."""
    a = values([ch[2] for ch in group])
    b = values([ch[3] for ch in group])
    c = torch.tensor([ch[1] - (ch[1] >> 31 << 32) for ch in group], dtype=torch.int32).view(torch.float32)
    sa = torch.tensor([ch[4] for ch in group], dtype=torch.uint8).view(torch.float8_e4m3fn)
    sb = torch.tensor([ch[5] for ch in group], dtype=torch.uint8).view(torch.float8_e4m3fn)
    res = instr.dpa(a, b, c, sa, sb)
    return [v & 0xFFFFFFFF for v in res.view(torch.int32).tolist()]


def results(all_chains):
    groups = collections.defaultdict(list)
    for i, ch in enumerate(all_chains):
        groups[ch[0]].append(i)
    instr = sim.TCGen05MMABlockScale("Blackwell", INSTRUCTION)
    res = [None] * len(all_chains)
    for _, idx in sorted(groups.items()):
        for i, r in zip(idx, evaluate([all_chains[i] for i in idx], instr)):
            res[i] = r
    return res


def encode(seed, all_chains, res):
    """b"mmaemuF1", u64 seed, u32 count, 32-byte digest, u8 name length + name, then one u32 per chain."""
    out = bytearray(b"mmaemuF1")
    out += struct.pack("<QI", seed, len(all_chains))
    out += digest(all_chains)
    out += bytes([len(MODEL)]) + MODEL.encode()
    for r in res:
        out += struct.pack("<I", r)
    return bytes(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=100_000)
    ap.add_argument("--seed", type=lambda s: int(s, 0), default=20261205)
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
        f"wrote {args.chains} chains to {args.out} ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}); "
        f"drawing {t1 - t0:.1f} s, MMA-Sim {t2 - t1:.1f} s"
    )


if __name__ == "__main__":
    main()
