"""Row-wise scales and bias (docs/reference.md §4.2): ``mmaemu.scaled_mm`` and ``torch._scaled_mm`` under ``patch``
return, for every output, the validated accumulator (the tensor-wise call with unit scales and float32 out) scaled
as CUTLASS f8f8bf16_rowwise's epilogue does, within PyTorch's own row-wise tolerance of an exact emulation, with an
experimental warning, once opted in; torch 2.7.1's rejections (float32 out, e5m2 mat2, bias dtype) match; without the
opt-in the call raises UnsupportedFeatureError, as the 0.1 contract says."""

from __future__ import annotations

import warnings

import pytest
import torch

import mmaemu

ONE = torch.tensor(1.0)


@pytest.fixture(autouse=True)
def opted_in(monkeypatch):
    """The tests of the model opt in through MMAEMU_EXPERIMENTAL; the opt-in itself is tested below without it."""
    monkeypatch.setenv("MMAEMU_EXPERIMENTAL", "1")


def operands(m: int, n: int, k: int, seed: int):
    """Gaussian rows quantized to e4m3 with their own scales (amax / 448), as PyTorch's row-wise tests make them."""
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
    sa = x.abs().amax(dim=1, keepdim=True) / 448.0
    sb = y.abs().amax(dim=1, keepdim=True) / 448.0
    a = (x / sa).to(torch.float8_e4m3fn)
    w = (y / sb).to(torch.float8_e4m3fn)
    bias = torch.randn(n, generator=g).to(torch.bfloat16)
    return a, w, sa.contiguous(), sb.t().contiguous(), bias


def accumulator(a, w, fast: bool) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mmaemu.scaled_mm(a, w.t(), ONE, ONE, out_dtype=torch.float32, use_fast_accum=fast, profile="hopper",
                                splitk=1)


def cutlass_epilogue(acc, sa, sb, bias, swapped: bool) -> torch.Tensor:
    """The contract's epilogue, in float32 (each torch CPU float32 operation rounds to nearest even)."""
    first, second = (sb, sa) if swapped else (sa, sb)
    y = second * (first * acc)
    b = torch.zeros(acc.shape[1]) if bias is None else bias.float()
    return (b + y).to(torch.bfloat16)


# (M, N): (16, 32) runs the kernel on the operands as given; (64, 256) on the swapped problem (the M/N heuristic).
@pytest.mark.parametrize("m,n,swapped", [(16, 32, False), (64, 256, True)])
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_rowwise_is_the_accumulator_through_the_cutlass_epilogue(m, n, swapped, fast, with_bias) -> None:
    for seed in range(3):
        a, w, sa, sb, bias = operands(m, n, 384, seed)
        b = bias if with_bias else None
        with pytest.warns(mmaemu.ExperimentalPresetWarning, match="row-wise scales are experimental"):
            got = mmaemu.scaled_mm(a, w.t(), sa, sb, bias=b, out_dtype=torch.bfloat16, use_fast_accum=fast,
                                   profile="hopper")
        want = cutlass_epilogue(accumulator(a, w, fast), sa, sb, b, swapped)
        mmaemu.testing.assert_bitwise_equal(got, want)
        # PyTorch's own row-wise test tolerance (atol = rtol = 7e-2 for bf16) against an exact emulation.
        exact = (a.double() @ w.double().t()) * sa.double() * sb.double()
        if b is not None:
            exact = exact + b.double()
        torch.testing.assert_close(got.double(), exact, atol=7e-2, rtol=7e-2)


def test_patch_runs_torch_scaled_mm_rowwise() -> None:
    a, w, sa, sb, bias = operands(16, 32, 128, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = mmaemu.scaled_mm(a, w.t(), sa, sb, bias=bias, out_dtype=torch.bfloat16, profile="hopper")
        with mmaemu.patch(profile="hopper"):
            got = torch._scaled_mm(a, w.t(), sa, sb, bias=bias, out_dtype=torch.bfloat16)
    mmaemu.testing.assert_bitwise_equal(got, want)


def test_explain_names_the_kernel_and_its_source() -> None:
    a, w, sa, sb, _ = operands(16, 32, 128, 1)
    plan = mmaemu.explain(a, w.t(), sa, sb, out_dtype=torch.bfloat16, profile="hopper")
    assert plan.ok, plan.validation
    assert "f8f8bf16_rowwise" in plan.kernel and "RowwiseScaledMM.cu" in plan.kernel
    assert plan.split.source == "kernel" and plan.split.s == 1


def test_torch_2_7_1_rejections() -> None:
    a, w, sa, sb, bias = operands(16, 32, 128, 2)
    with pytest.raises(mmaemu.ReferenceRejectsError, match="Only bf16 high precision output types"):
        mmaemu.scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32, profile="hopper")
    with pytest.raises(mmaemu.ReferenceRejectsError, match=r"Expected b.dtype\(\) == at::kFloat8_e4m3fn"):
        mmaemu.scaled_mm(a, w.to(torch.float8_e5m2).t(), sa, sb, out_dtype=torch.bfloat16, profile="hopper")
    with pytest.raises(mmaemu.ReferenceRejectsError, match="Bias must be BFloat16 to compute BFloat16"):
        mmaemu.scaled_mm(a, w.t(), sa, sb, bias=bias.half(), out_dtype=torch.bfloat16, profile="hopper")
    # e5m2 x e4m3 runs (mat1 may be e5m2).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mmaemu.scaled_mm(a.float().to(torch.float8_e5m2), w.t(), sa, sb, out_dtype=torch.bfloat16, profile="hopper")


def test_ada_needs_an_explicit_split() -> None:
    a, w, sa, sb, _ = operands(16, 32, 128, 3)
    with pytest.raises(mmaemu.SplitKUnknownError, match="stream-K"):
        mmaemu.scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, profile="ada")
    with pytest.warns(mmaemu.ExperimentalPresetWarning):
        mmaemu.scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, profile="ada", splitk=1)


def test_without_the_opt_in_rowwise_is_out_of_scope(monkeypatch) -> None:
    """No opt-in: UnsupportedFeatureError from scaled_mm, torch._scaled_mm under patch and explain, with or without a
    bias, on either profile; torch's rejections still come first."""
    monkeypatch.delenv("MMAEMU_EXPERIMENTAL")
    a, w, sa, sb, bias = operands(16, 32, 128, 4)
    for profile in ["hopper", "ada"]:
        for b in [None, bias]:
            with pytest.raises(mmaemu.UnsupportedFeatureError, match="row-wise scales are not supported in mmaemu 0.1"):
                mmaemu.scaled_mm(a, w.t(), sa, sb, bias=b, out_dtype=torch.bfloat16, profile=profile)
            with mmaemu.patch(profile=profile):
                with pytest.raises(mmaemu.UnsupportedFeatureError, match="MMAEMU_EXPERIMENTAL=1"):
                    torch._scaled_mm(a, w.t(), sa, sb, bias=b, out_dtype=torch.bfloat16)
            plan = mmaemu.explain(a, w.t(), sa, sb, bias=b, out_dtype=torch.bfloat16, profile=profile)
            assert plan.validation.name == "UnsupportedFeatureError", plan.validation
    with pytest.raises(mmaemu.ReferenceRejectsError, match="Only bf16 high precision output types"):
        mmaemu.scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32, profile="hopper")


def test_the_four_ways_in(monkeypatch) -> None:
    """experimental=True, mmaemu.experimental(), patch(experimental=True) and MMAEMU_EXPERIMENTAL=1 each give the
    same bits; a call's experimental=False and mmaemu.experimental(False) opt out under the variable."""
    monkeypatch.delenv("MMAEMU_EXPERIMENTAL")
    a, w, sa, sb, bias = operands(16, 32, 128, 6)
    kw = dict(bias=bias, out_dtype=torch.bfloat16, profile="hopper")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = mmaemu.scaled_mm(a, w.t(), sa, sb, **kw, experimental=True)
        with mmaemu.experimental():
            mmaemu.testing.assert_bitwise_equal(mmaemu.scaled_mm(a, w.t(), sa, sb, **kw), want)
            with pytest.raises(mmaemu.UnsupportedFeatureError):
                mmaemu.scaled_mm(a, w.t(), sa, sb, **kw, experimental=False)
        with mmaemu.patch(profile="hopper", experimental=True):
            got = torch._scaled_mm(a, w.t(), sa, sb, bias=bias, out_dtype=torch.bfloat16)
            mmaemu.testing.assert_bitwise_equal(got, want)
        monkeypatch.setenv("MMAEMU_EXPERIMENTAL", "1")
        mmaemu.testing.assert_bitwise_equal(mmaemu.scaled_mm(a, w.t(), sa, sb, **kw), want)
        with mmaemu.experimental(False):
            with pytest.raises(mmaemu.UnsupportedFeatureError):
                mmaemu.scaled_mm(a, w.t(), sa, sb, **kw)
    monkeypatch.setenv("MMAEMU_EXPERIMENTAL", "yes")
    with pytest.raises(ValueError, match="MMAEMU_EXPERIMENTAL"):
        mmaemu.scaled_mm(a, w.t(), sa, sb, **kw)
    with pytest.raises(TypeError, match="experimental"):
        mmaemu.scaled_mm(a, w.t(), sa, sb, **kw, experimental=1)
    with pytest.raises(TypeError, match="experimental"):
        with mmaemu.patch(profile="hopper", experimental="yes"):
            pass
