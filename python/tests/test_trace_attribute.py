"""``mmaemu.trace`` ends in ``mmaemu.scaled_mm``'s bits; ``mmaemu.attribute``'s parts add up to its total on every
output and its values are the call's."""

import math

import numpy as np
import pytest

import mmaemu

torch = pytest.importorskip("torch")


def _operands(m, n, k, seed):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, generator=g) * 4).to(torch.float8_e4m3fn).t()
    return a, b


@pytest.mark.parametrize("profile,fast,out,split", [("hopper", True, torch.bfloat16, 1),
                                                    ("ada", False, torch.float32, (3, "serial")),
                                                    ("hopper", False, torch.float8_e4m3fn, (2, "contiguous"))])
def test_trace_ends_in_the_calls_bits(profile, fast, out, split):
    a, b = _operands(5, 16, 208, 1)
    sa, sb = torch.tensor(0.75), torch.tensor(1.25)
    want = mmaemu.scaled_mm(a, b, sa, sb, out_dtype=out, use_fast_accum=fast, profile=profile, splitk=split)
    width = want.element_size() * 8
    bits = want.view({8: torch.uint8, 16: torch.int16, 32: torch.int32}[width]).numpy().astype(np.int64)
    bits &= (1 << width) - 1
    for i, j in [(0, 0), (4, 15), (2, 3)]:
        t = mmaemu.trace(a, b, sa, sb, out_dtype=out, use_fast_accum=fast, profile=profile, splitk=split,
                         element=(i, j))
        assert t["bits"] == bits[i, j], (i, j)
        assert t["element"] == [i, j]


def test_trace_raises_what_the_call_raises():
    a, b = _operands(2, 16, 32, 2)
    with pytest.raises(ValueError):
        mmaemu.trace(a, b, torch.tensor(1.0), torch.tensor(1.0), splitk=1, element=(5, 0))


def test_attribute_parts_add_up_and_values_are_the_calls():
    a, b = _operands(12, 16, 304, 3)
    sa, sb = torch.tensor(0.5), torch.tensor(3.0)
    r = mmaemu.attribute(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True, profile="hopper", splitk=1)
    assert r.summary["outputs"] == 192 and r.summary["attributed"] == 192
    assert r.summary["exact_checks"] == 192
    assert r.ulps.shape == (12, 16, 5) and r.bits.shape == (12, 16)
    want = mmaemu.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True, profile="hopper",
                            splitk=1)
    assert np.array_equal(r.emulated, want.to(torch.float64).numpy())
    # The total is emulated − exact (here within f64 rounding of the nearest doubles), and the four parts sum to
    # it (checked exactly in Rust; here again in f64 with the rounding of five doubles).
    for i in range(12):
        for j in range(16):
            u = r.ulps[i, j]
            assert math.isclose(u[1] + u[2] + u[3] + u[4], u[0], rel_tol=1e-12, abs_tol=1e-12)
    names = [s["source"] for s in r.summary["sources"]]
    assert names == ["total", "term truncation", "block truncation", "chunk and split additions",
                     "epilogue rounding"]


@pytest.mark.parametrize("element", [(1.5, 2), (1, 2.0), (True, 0), (0, np.bool_(False)), "ab", (1,), (1, 2, 3),
                                     None, 3, (None, 0)])
def test_trace_element_takes_integers_only(element):
    a, b = _operands(2, 16, 32, 2)
    with pytest.raises(TypeError, match="'element'"):
        mmaemu.trace(a, b, torch.tensor(1.0), torch.tensor(1.0), splitk=1, element=element)


def test_trace_element_accepts_numpy_integers_and_refuses_negatives():
    a, b = _operands(2, 16, 32, 2)
    one = torch.tensor(1.0)
    t = mmaemu.trace(a, b, one, one, splitk=1, element=(np.int64(1), np.uint8(15)))
    assert t["element"] == [1, 15]
    assert mmaemu.trace(a, b, one, one, splitk=1, element=[1, 15]) == t
    for bad in [(-1, 0), (0, -1), (1 << 64, 0)]:
        with pytest.raises(ValueError, match=r"element .*\[0, 2\^63\)"):
            mmaemu.trace(a, b, one, one, splitk=1, element=bad)
    with pytest.raises(ValueError, match=r"element \(2, 0\) is outside the \[2, 16\] result"):
        mmaemu.trace(a, b, one, one, splitk=1, element=(2, 0))


def test_outputs_without_an_attribution_are_nan_and_flagged():
    a, b = _operands(4, 16, 64, 5)
    a[1, 7] = float("nan")  # row 1: a NaN on the way, no exact value to attribute against
    one = torch.tensor(1.0)
    r = mmaemu.attribute(a, b, one, one, out_dtype=torch.float32, profile="hopper", splitk=1)
    assert r.attributed.dtype == np.bool_
    assert not r.attributed[1].any() and r.attributed[[0, 2, 3]].all()
    assert r.summary["attributed"] == 48
    assert np.isnan(r.exact[1]).all() and np.isnan(r.ulps[1]).all()  # never 0.0: that reads as "no error"
    assert np.isfinite(r.exact[[0, 2, 3]]).all() and np.isfinite(r.ulps[[0, 2, 3]]).all()
    assert np.isnan(r.emulated[1]).all()  # the call's own values are still there
    want = mmaemu.scaled_mm(a, b, one, one, out_dtype=torch.float32, profile="hopper", splitk=1)
    assert np.array_equal(r.emulated, want.to(torch.float64).numpy(), equal_nan=True)
