"""mmaemu.scaled_mm_v2 / mmaemu.functional.scaled_mm (docs/reference.md §12.6): MXFP8, NVFP4 and block-wise calls
against an fp32 emulation within PyTorch's own tolerances (test_matmul_cuda.py: MX and NVFP4 compare with a bf16
output tolerance; block-wise with cosine similarity >= 0.999), MXFP8 as the e8m0 block-scaled `dot` chained over K
(an independent path through the package), torch's blocked layout, and the rejections. Seeded; the seed is in
every failure message."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import mmaemu  # noqa: E402
from mmaemu import ScalingType, SwizzleType  # noqa: E402
from mmaemu.errors import ExperimentalPresetWarning, UnsupportedFeatureError  # noqa: E402

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
E2M1 = E2M1 + [-v for v in E2M1]


def to_blocked(x):
    """torch's to_blocked (test/test_matmul_cuda.py), verbatim in its steps."""
    rows, cols = x.shape
    rb, cb = -(-rows // 128), -(-cols // 4)
    padded = torch.zeros((rb * 128, cb * 4), dtype=x.dtype)
    padded[:rows, :cols] = x
    blocks = padded.view(rb, 128, cb, 4).permute(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16).flatten()


def fp8(g, shape, lo=-2.0, hi=2.0):
    return (torch.rand(shape, generator=g) * (hi - lo) + lo).to(torch.float8_e4m3fn)


@pytest.fixture(autouse=True)
def opted_in(monkeypatch):
    """The block-scaled modes are experimental: these tests opt in (the opt-in itself is tested below)."""
    monkeypatch.setenv("MMAEMU_EXPERIMENTAL", "1")


def call(*args, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = mmaemu.functional.scaled_mm(*args, **kw)
    assert any(issubclass(x.category, ExperimentalPresetWarning) for x in w), "every block-scaled call warns"
    return out


@pytest.mark.parametrize("seed", range(4))
def test_mxfp8_within_torch_tolerance_and_equal_to_chained_dot(seed):
    g = torch.Generator().manual_seed(seed)
    m, n, k = 16 * (1 + seed), 16, 64 * (1 + seed % 2)
    a, bt = fp8(g, (m, k)), fp8(g, (n, k))
    sa = torch.randint(120, 134, (m, k // 32), generator=g).to(torch.uint8)
    sb = torch.randint(120, 134, (n, k // 32), generator=g).to(torch.uint8)
    out = call(
        a, bt.t(), to_blocked(sa).view(torch.float8_e8m0fnu), ScalingType.BlockWise1x32,
        to_blocked(sb).view(torch.float8_e8m0fnu), ScalingType.BlockWise1x32,
        swizzle_a=SwizzleType.SWIZZLE_32_4_4, swizzle_b=SwizzleType.SWIZZLE_32_4_4, output_dtype=torch.float32,
    )
    # the fp32 emulation of PyTorch's MX tests: dequantise with the scales, matmul, compare
    da = a.float() * torch.exp2(sa.float() - 127).repeat_interleave(32, dim=1)
    db = bt.float() * torch.exp2(sb.float() - 127).repeat_interleave(32, dim=1)
    ref = da.double() @ db.double().t()
    torch.testing.assert_close(out.double(), ref, atol=1e-2, rtol=1e-2, msg=f"seed {seed}")
    # exact: output (i, j) is the block-scaled instruction chained one 32-element block at a time
    for i in range(0, m, 7):
        for j in range(0, n, 5):
            acc = None
            for blk in range(k // 32):
                r = slice(32 * blk, 32 * blk + 32)
                acc = mmaemu.model.dot(
                    a[i, r].view(torch.uint8), bt[j, r].view(torch.uint8),
                    c=None if acc is None else acc, preset="b200_tcgen05", fmt="e4m3",
                    scale_a=sa[i, blk : blk + 1], scale_b=sb[j, blk : blk + 1],
                )
            assert acc.item() == out[i, j].item() or (np.isnan(acc.item()) and np.isnan(out[i, j].item())), (
                f"seed {seed} ({i}, {j})"
            )


@pytest.mark.parametrize("seed", range(4))
def test_nvfp4_within_torch_tolerance(seed):
    g = torch.Generator().manual_seed(100 + seed)
    m, n, k = 32, 16, 64 * (1 + seed)
    ca = torch.randint(0, 16, (m, k), generator=g, dtype=torch.uint8)
    cb = torch.randint(0, 16, (n, k), generator=g, dtype=torch.uint8)
    pack = lambda c: (c[:, 1::2] << 4) | c[:, ::2]  # noqa: E731  torch's pack_uint4
    sa = torch.randint(0x30, 0x40, (m, k // 16), generator=g, dtype=torch.uint8)
    sb = torch.randint(0x30, 0x40, (n, k // 16), generator=g, dtype=torch.uint8)
    ga, gb = torch.tensor(0.5), torch.tensor(3.0)
    out = call(
        pack(ca), pack(cb).t(), [to_blocked(sa).view(torch.float8_e4m3fn), ga], ScalingType.BlockWise1x16,
        [to_blocked(sb).view(torch.float8_e4m3fn), gb], ScalingType.BlockWise1x16,
        swizzle_a=SwizzleType.SWIZZLE_32_4_4, swizzle_b=SwizzleType.SWIZZLE_32_4_4, output_dtype=torch.float32,
    )
    table = torch.tensor(E2M1, dtype=torch.float64)
    sa_v = sa.view(torch.float8_e4m3fn).double().repeat_interleave(16, dim=1)
    sb_v = sb.view(torch.float8_e4m3fn).double().repeat_interleave(16, dim=1)
    ref = ((table[ca.long()] * sa_v) @ (table[cb.long()] * sb_v).t()) * 1.5
    torch.testing.assert_close(out.double(), ref, atol=1e-2, rtol=1e-2, msg=f"seed {seed}")


@pytest.mark.parametrize("seed", range(3))
def test_blockwise_cosine_and_fp32_order(seed):
    g = torch.Generator().manual_seed(200 + seed)
    m, n, k = 128, 32, 256 + 128 * seed
    a, bt = fp8(g, (m, k)), fp8(g, (n, k))
    kb = k // 128
    sa = (torch.rand((m, kb), generator=g) + 0.5).t().contiguous().t()  # (M, KB), strides (1, M)
    l4 = -(-kb // 4) * 4
    sb_logical = torch.rand((1, kb), generator=g) + 0.5  # N / 128 = 1 tile row
    sb = torch.zeros((1, l4))
    sb[:, :kb] = sb_logical
    sb = sb.t()  # (L4, N / 128), strides (1, L4)
    out = call(a, bt.t(), sa, ScalingType.BlockWise1x128, sb, ScalingType.BlockWise128x128, output_dtype=torch.float32)
    ref = sum(
        (a[:, c * 128 : (c + 1) * 128].double() @ bt[:, c * 128 : (c + 1) * 128].double().t())
        * sa[:, c : c + 1].double()
        * sb_logical[0, c].double()
        for c in range(kb)
    )
    cos = torch.nn.functional.cosine_similarity(out.double().flatten(), ref.flatten(), dim=0)
    assert cos >= 0.999, f"seed {seed}: cosine {cos}"


def test_rejections_are_typed():
    a, bt = torch.zeros((16, 64), dtype=torch.float8_e4m3fn), torch.zeros((16, 64), dtype=torch.float8_e4m3fn)
    s = torch.full((128 * 4,), 127, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    mx = dict(swizzle_a=SwizzleType.SWIZZLE_32_4_4, swizzle_b=SwizzleType.SWIZZLE_32_4_4)
    with pytest.raises(ValueError, match="should have 512 elements, got: 511"):
        mmaemu.functional.scaled_mm(a, bt.t(), s[:511], ScalingType.BlockWise1x32, s, ScalingType.BlockWise1x32, **mx)
    with pytest.raises(ValueError, match="swizzled to SWIZZLE_32_4_4"):
        mmaemu.functional.scaled_mm(a, bt.t(), s, ScalingType.BlockWise1x32, s, ScalingType.BlockWise1x32)
    with pytest.raises(ValueError, match="divisible by 16"):
        mmaemu.functional.scaled_mm(a[:, :40], bt[:, :40].t(), s, 3, s, 3, **mx)
    with pytest.raises(ValueError, match="must have shape 16 x 1 Float"):
        mmaemu.functional.scaled_mm(
            a, bt.t(), torch.ones(16, 2), ScalingType.BlockWise1x128, torch.ones(16, 1), ScalingType.BlockWise1x128
        )
    with pytest.raises(ValueError, match="use_fast_accum"):
        mmaemu.functional.scaled_mm(
            a, bt.t(), torch.ones(16, 1), ScalingType.BlockWise1x128, torch.ones(16, 1), ScalingType.BlockWise1x128,
            use_fast_accum=True,
        )
    with pytest.raises(UnsupportedFeatureError):
        mmaemu.functional.scaled_mm(a, bt.t(), torch.ones(16, 1), ScalingType.RowWise, torch.ones(1, 16), 1)
    with pytest.raises(TypeError):
        mmaemu.functional.scaled_mm(a.float(), bt.t(), s, 3, s, 3, **mx)


def test_tensorwise_goes_to_scaled_mm():
    g = torch.Generator().manual_seed(7)
    a, bt = fp8(g, (128, 1024)), fp8(g, (128, 1024))
    one = torch.tensor(1.0)
    got = mmaemu.functional.scaled_mm(a, bt.t(), one, ScalingType.TensorWise, one, ScalingType.TensorWise)
    want = mmaemu.scaled_mm(a, bt.t(), one, one, out_dtype=torch.bfloat16)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))


def test_block_scaled_calls_need_the_opt_in(monkeypatch):
    """Without the opt-in every block-scaled mode raises UnsupportedFeatureError after torch's checks; with
    experimental=True or mmaemu.experimental() it computes the same bits as under MMAEMU_EXPERIMENTAL=1."""
    g = torch.Generator().manual_seed(11)
    a, bt = fp8(g, (32, 64)), fp8(g, (32, 64))
    s = to_blocked(torch.full((32, 2), 127, dtype=torch.uint8)).view(torch.float8_e8m0fnu)
    mx = dict(swizzle_a=SwizzleType.SWIZZLE_32_4_4, swizzle_b=SwizzleType.SWIZZLE_32_4_4)
    args = (a, bt.t(), s, ScalingType.BlockWise1x32, s, ScalingType.BlockWise1x32)
    want = call(*args, **mx)
    monkeypatch.delenv("MMAEMU_EXPERIMENTAL")
    with pytest.raises(UnsupportedFeatureError, match="not supported in mmaemu 0.1 without opting in"):
        mmaemu.functional.scaled_mm(*args, **mx)
    mmaemu.testing.assert_bitwise_equal(call(*args, **mx, experimental=True), want)
    with mmaemu.experimental():
        mmaemu.testing.assert_bitwise_equal(call(*args, **mx), want)
    # torch's own checks come first.
    with pytest.raises(ValueError):
        mmaemu.functional.scaled_mm(a, bt.t(), s[:5], ScalingType.BlockWise1x32, s, ScalingType.BlockWise1x32, **mx)


def test_checks_before_the_scales_are_the_models_in_order():
    """torch's checks before the scales are the model's one implementation (the one `mmaemu explain --scales` runs,
    docs/reference.md §12.7), in order: bias, out dtype, K and N multiples of 16, use_fast_accum, FP8 operands; each
    call below has every later fault too, so only the order names the error."""
    a, bt = torch.zeros((16, 64), dtype=torch.float8_e4m3fn), torch.zeros((16, 64), dtype=torch.float8_e4m3fn)
    s = torch.ones(16, 1)
    blk = (ScalingType.BlockWise1x128, ScalingType.BlockWise1x128)
    ragged = (a[:, :40].half(), bt[:, :40].t())
    cases = [
        (dict(bias=torch.zeros(16, dtype=torch.bfloat16), output_dtype=torch.float8_e4m3fn), UnsupportedFeatureError,
         "bias with block-scaled"),
        (dict(output_dtype=torch.float8_e4m3fn), ValueError, "out_dtype must be float32, bfloat16 or float16"),
        (dict(), ValueError, "divisible by 16"),
    ]
    for kwargs, error, text in cases:
        with pytest.raises(error, match=text):
            mmaemu.functional.scaled_mm(*ragged, s, blk[0], s, blk[1], use_fast_accum=True, **kwargs)
    with pytest.raises(ValueError, match="use_fast_accum"):
        mmaemu.functional.scaled_mm(a.half(), bt.t(), s, blk[0], s, blk[1], use_fast_accum=True)
    with pytest.raises(TypeError, match="Expected mat_a to be Float8 or Float4_x2 matrix got torch.float16"):
        mmaemu.functional.scaled_mm(a.half(), bt.t(), s, blk[0], s, blk[1])


def test_explain_v2_names_each_mode_and_shares_the_calls_checks():
    """explain_v2 describes each block-scaled mode with the model's checks (the ones scaled_mm_v2 runs): the kernel,
    plan and sources with the opt-in, UnsupportedFeatureError without it, ReferenceRejectsError on a profile whose GPU
    cannot run the mode, and the call's own first error for a bad call."""
    b200 = "b200-tcgen05-experimental"
    for mode, profile, other, scale_mode in [("block128", "hopper", b200, "VEC128_32F"),
                                             ("block128x128", "hopper", b200, "BLK128x128_32F"),
                                             ("mx", b200, "hopper", "VEC32_UE8M0"),
                                             ("nvfp4", b200, "hopper", "VEC16_UE4M3")]:
        plan = mmaemu.explain_v2(mode, 128, 256, 512, profile=profile, experimental=True)
        assert plan.validation == "ok", (mode, plan)
        assert scale_mode in plan.kernel and "modelled from" in plan.kernel and "32768 outputs" in plan.kernel, plan
        assert mmaemu.explain_v2(mode, 128, 256, 512, experimental=True).profile == profile
        assert mmaemu.explain_v2(mode, 128, 256, 512, profile=profile, experimental=False).validation.name == \
            "UnsupportedFeatureError"
        assert mmaemu.explain_v2(mode, 128, 256, 512, profile=other, experimental=True).validation.name == \
            "ReferenceRejectsError"
    # The call and its explanation fail alike.
    a, bt = torch.zeros((16, 64), dtype=torch.float8_e4m3fn), torch.zeros((16, 64), dtype=torch.float8_e4m3fn)
    s = torch.ones(16, 1)
    plan = mmaemu.explain_v2("block128", 16, 16, 64, use_fast_accum=True, experimental=True)
    with pytest.raises(ValueError) as raised:
        mmaemu.functional.scaled_mm(a, bt.t(), s, ScalingType.BlockWise1x128, s, ScalingType.BlockWise1x128,
                                    use_fast_accum=True, experimental=True)
    assert (plan.validation.name, plan.validation.message) == ("ValueError", str(raised.value))
