"""``mmaemu.model.dot`` with MXFP8 block scales (docs/reference.md §2.8): the worked examples of the reference, the
argument errors, and MMA-Sim's block-scaled models on random and adversarial chains (computed here, where the
``mmasim`` package is installed)."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
import torch

import mmaemu
from mmaemu.model import dot

h = float.fromhex
BLACKWELL = ["b200_tcgen05", "rtx50_mma_sync"]
TORCH_FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def f32_bits(x: torch.Tensor) -> list:
    return [b & 0xFFFFFFFF for b in x.reshape(-1).view(torch.int32).tolist()]


def scaled_dot(a, b, sa, sb, c=None, preset="b200_tcgen05", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mmaemu.ExperimentalPresetWarning)
        return dot(a, b, c, preset=preset, scale_a=sa, scale_b=sb, **kw)


def e4m3(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64).to(torch.float8_e4m3fn)


def e8m0(codes) -> torch.Tensor:
    return torch.tensor(codes, dtype=torch.uint8).view(torch.float8_e8m0fnu)


# §2.8 worked examples: (a, b, scale codes of a, of b, c, result bits)
EXAMPLES = [
    ([1] * 32, [1] * 32, [130], [126], None, 0x43000000),  # 0x1p+7
    ([1] * 64, [1] * 64, [127, 128], [127, 128], None, 0x43200000),  # 0x1.4p+7
    ([1] * 33, [1] * 33, [127, 129], [127, 127], None, 0x42100000),  # 0x1.2p+5
    ([1], [1], [112], [112], 1.0, 0x3F800000),  # 0x1p+0
    ([1], [1], [117], [117], 1.0, 0x3F800008),  # 0x1.00001p+0
    ([1], [1], [57], [57], None, 0x00000200),  # 0x1p-140
    ([1.5], [1], [52], [52], None, 0x00000000),  # +0
    ([0], [0], [0xFF], [127], None, 0x7FFFFFFF),  # NaN
    ([448], [448], [254], [254], None, 0x7F800000),  # +Inf
]


@pytest.mark.parametrize("preset", BLACKWELL)
@pytest.mark.parametrize("a,b,sa,sb,c,want", EXAMPLES)
def test_s2_8_worked_examples(preset, a, b, sa, sb, c, want) -> None:
    cc = None if c is None else torch.tensor(c, dtype=torch.float32)
    got = scaled_dot(e4m3(a), e4m3(b), e8m0(sa), e8m0(sb), cc, preset=preset)
    assert got.dtype == torch.float32 and got.shape == ()
    assert f32_bits(got) == [want]


def test_s2_8_examples_as_uint8_codes_and_numpy() -> None:
    """The scales as uint8 codes, and the whole call in numpy, give the same bits; a batch is one chain per row."""
    rows = [ex for ex in EXAMPLES if len(ex[0]) == 1]
    a = e4m3([ex[0] for ex in rows])
    b = e4m3([ex[1] for ex in rows])
    sa = torch.tensor([ex[2] for ex in rows], dtype=torch.uint8)
    sb = torch.tensor([ex[3] for ex in rows], dtype=torch.uint8)
    c = torch.tensor([0.0 if ex[4] is None else ex[4] for ex in rows], dtype=torch.float32)
    want = [ex[5] for ex in rows]
    assert f32_bits(scaled_dot(a, b, sa, sb, c)) == want
    got = scaled_dot(
        mmaemu.Codes(a.view(torch.uint8).numpy(), "e4m3"),
        mmaemu.Codes(b.view(torch.uint8).numpy(), "e4m3"),
        sa.numpy(),
        sb.numpy(),
        c.numpy(),
    )
    assert isinstance(got, np.ndarray) and got.view(np.uint32).tolist() == want


def test_unscaled_presets_and_the_scales_agree_at_scale_one() -> None:
    """Scales of 2^0 (code 127) leave the preset's unscaled chain: §2.8 is §2.2 with the exponents added."""
    g = torch.Generator().manual_seed(7)
    a = torch.randint(0, 256, (40, 70), generator=g, dtype=torch.uint8)
    b = torch.randint(0, 256, (40, 70), generator=g, dtype=torch.uint8)
    ones = torch.full((40, 3), 127, dtype=torch.uint8)
    for preset in BLACKWELL:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mmaemu.ExperimentalPresetWarning)
            plain = dot(a, b, preset=preset, fmt=("e4m3", "e5m2"))
        scaled = scaled_dot(a, b, ones, ones, preset=preset, fmt=("e4m3", "e5m2"))
        assert f32_bits(plain) == f32_bits(scaled)


def test_argument_errors_are_typed() -> None:
    a, b = e4m3([1] * 33), e4m3([1] * 33)
    s = e8m0([127, 127])
    with pytest.raises(ValueError, match="give both or neither"):
        scaled_dot(a, b, s, None)
    with pytest.raises(ValueError, match="give both or neither"):
        scaled_dot(a, b, None, s)
    with pytest.raises(ValueError, match="takes no block scales"):
        scaled_dot(a, b, s, s, preset="ada")
    with pytest.raises(ValueError, match=r"shape a.shape\[:-1\] \+ \(ceil\(K / 32\),\) = \[2\]"):
        scaled_dot(a, b, e8m0([127]), s)
    with pytest.raises(ValueError, match="must have the shape"):
        scaled_dot(a, b, s, e8m0([[127, 127]]))
    with pytest.raises(TypeError, match="float8_e8m0fnu"):
        scaled_dot(a, b, s, torch.ones(2, dtype=torch.float32))
    with pytest.raises(TypeError, match="scale_a"):
        scaled_dot(a, b, [127, 127], s)
    with pytest.raises(TypeError, match="scale_b"):
        scaled_dot(a, b, s, np.array([127, 127], dtype=np.uint8))


# MMA-Sim (microsoft/MMA-Sim): its block-scaled models, computed here.


def _mmasim():
    pytest.importorskip("torch", reason="MMA-Sim needs torch")
    try:
        from mmasim.arithmetic import fdpa
        from mmasim.nv_ptx import sim
    except Exception as e:  # not installed, or its C++ extension cannot be built here
        pytest.skip(f"mmasim is not importable ({type(e).__name__}: {e}); `pip install --no-deps mmasim ninja`")
    return fdpa, sim


def _mmasim_dot(fdpa, sim, preset, fa, fb, a, b, c, sa, sb):
    """MMA-Sim's block-scaled result for each row of a [N, K], one block and its two scales at a time."""
    if preset == "b200_tcgen05":
        m = sim.TCGen05MMABlockScale("Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.ue8m0")
    else:
        m = sim.MMABlockScale("RTX Blackwell", f"m16n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}.f32.ue8m0")
    op = m.arithmetic_op
    acc = c.clone()
    for i in range(0, a.shape[-1], op.L_max):
        j = i // op.L_max
        acc = fdpa.st_fdpa(
            a[:, i : i + op.L_max].view(m.a_type),
            b[:, i : i + op.L_max].view(m.b_type),
            acc,
            sa[:, j : j + 1].view(torch.float8_e8m0fnu),
            sb[:, j : j + 1].view(torch.float8_e8m0fnu),
            op.F,
            op.rho,
            op.e_zero,
        )
    return f32_bits(acc)


def _operand(rng, n, k, style):
    """n rows of k FP8 codes: any code (NaN/Inf included), small magnitudes, subnormals or zeros."""
    pick = {
        "any": lambda: rng.randrange(256),
        "narrow": lambda: rng.randrange(0x30, 0x48) | rng.randrange(2) << 7,
        "subnormal": lambda: rng.randrange(4) | rng.randrange(2) << 7,
        "zeros": lambda: rng.choice([0x00, 0x80, rng.randrange(256)]),
    }[style]
    return torch.tensor([[pick() for _ in range(k)] for _ in range(n)], dtype=torch.uint8)


def _accumulators(rng, n):
    specials = [0.0, -0.0, 2.0**-149, -(2.0**-130), 2.0**100, -(2.0**127), math.inf, -math.inf, math.nan]
    return torch.tensor(
        [rng.choice(specials) if rng.random() < 0.4 else rng.uniform(-1e3, 1e3) for _ in range(n)],
        dtype=torch.float32,
    )


def _scales(rng, n, blocks):
    mode = rng.choice(["normal", "deep", "edge", "high"])
    lo, hi = {"normal": (107, 148), "deep": (0, 16), "edge": (40, 70), "high": (236, 255)}[mode]
    return torch.tensor(
        [[0xFF if rng.random() < 0.01 else rng.randrange(lo, hi) for _ in range(blocks)] for _ in range(n)],
        dtype=torch.uint8,
    )


@pytest.mark.parametrize("preset", BLACKWELL)
def test_equals_mmasim_on_random_and_adversarial_chains(preset) -> None:
    fdpa, sim = _mmasim()
    rng = random.Random(20261204)
    cases = 0
    for fa in ("e4m3", "e5m2"):
        for fb in ("e4m3", "e5m2"):
            for k in (1, 31, 32, 33, 64, 100):
                for style in ("any", "narrow", "subnormal", "zeros"):
                    n = 8
                    a, b = _operand(rng, n, k, style), _operand(rng, n, k, rng.choice(["any", "narrow"]))
                    c = _accumulators(rng, n)
                    blocks = -(-k // 32)
                    sa, sb = _scales(rng, n, blocks), _scales(rng, n, blocks)
                    want = _mmasim_dot(fdpa, sim, preset, fa, fb, a, b, c, sa, sb)
                    got = scaled_dot(
                        a.view(TORCH_FP8[fa]), b.view(TORCH_FP8[fb]), sa.view(torch.float8_e8m0fnu), sb, c, preset=preset
                    )
                    assert f32_bits(got) == want, (preset, fa, fb, k, style)
                    cases += n
    assert cases == 2 * 2 * 6 * 4 * 8
