"""Code written against mmaemu 0.1.0's public API, as its users write it (its names, keywords, module paths,
attributes and messages), runs unchanged here (python/README.md "Coming from mmaemu 0.1.0").
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
import torch

import mmaemu
from mmaemu.api import CallPlan, accumulate, explain, scaled_mm
from mmaemu.errors import MmaemuError, ReferenceRejectsError, SplitKUnknownError, UnsupportedFeatureError
from mmaemu.testing import assert_bitwise_equal, bits

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
ONE = torch.tensor(1.0)


def _mats(M=32, K=64, N=32, fa=E4, fb=E4, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(M, K, generator=g) * 40).clamp(-448, 448).to(fa)
    b = (torch.randn(N, K, generator=g) * 40).clamp(-448, 448).to(fb)
    return a, b.t()


def test_the_api_module_path_holds_the_same_entry_points() -> None:
    assert scaled_mm is mmaemu.scaled_mm and explain is mmaemu.explain and accumulate is mmaemu.accumulate
    assert CallPlan is mmaemu.CallPlan


def test_assert_bitwise_equal_takes_msg_and_mask() -> None:
    a, b = _mats()
    y = scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=1)
    assert_bitwise_equal(y, y.clone(), nan="bits", msg="layer 3")
    z = y.clone()
    z[0, 0] = -z[0, 0] if z[0, 0] != 0 else 1.0
    with pytest.raises(AssertionError, match=r"^layer 3: 1 of 1024 elements differ"):
        assert_bitwise_equal(z, y, nan="bits", msg="layer 3")
    with pytest.raises(AssertionError, match=r"^layer 3: shapes differ"):
        assert_bitwise_equal(y[:1], y, msg="layer 3")
    nan1 = torch.tensor([0x7FC00000, 0], dtype=torch.int32).view(torch.float32)
    nan2 = torch.tensor([0x7FFFFFFF, 0], dtype=torch.int32).view(torch.float32)
    assert_bitwise_equal(nan1, nan2, nan="mask")  # positions of NaN must match, payloads not
    with pytest.raises(AssertionError):
        assert_bitwise_equal(nan1, nan2, nan="bits")
    with pytest.raises(AssertionError):
        assert_bitwise_equal(nan1, torch.zeros(2), nan="mask")
    # a tensor against a numpy array of the same dtype
    assert_bitwise_equal(y, y.numpy().copy(), msg="numpy expected")


def test_bits_is_an_integer_view() -> None:
    x = torch.tensor([-0.0, 1.0])
    v = bits(x)
    assert v.dtype == torch.int32 and v.shape == x.shape
    assert (v.tolist()[0] & 0xFFFFFFFF, v.tolist()[1]) == (0x80000000, 0x3F800000)
    assert bits(torch.zeros(3, dtype=E4)).dtype == torch.uint8
    assert bits(torch.zeros(3, dtype=torch.bfloat16)).dtype == torch.int16
    assert bits(np.zeros(2, np.float32)).dtype == np.int32


def test_split_decision_has_S_and_converts_to_a_splitk() -> None:
    a, b = _mats(16, 8192, 48)
    bf = dict(out_dtype=torch.bfloat16, profile="ada")
    d = explain(a, b, ONE, ONE, **bf).split
    assert (d.S, d.scheme) == (d.s, d.scheme) and d.S > 1
    assert d.splitk == mmaemu.SplitK(d.S, d.scheme)
    assert_bitwise_equal(scaled_mm(a, b, ONE, ONE, **bf, splitk=d.splitk), scaled_mm(a, b, ONE, ONE, **bf))
    assert_bitwise_equal(scaled_mm(a, b, ONE, ONE, **bf, splitk=(np.int64(d.S), d.scheme)),
                         scaled_mm(a, b, ONE, ONE, **bf))
    with pytest.raises(ValueError):
        mmaemu.SplitK(2, "none")
    with pytest.raises(ValueError):
        mmaemu.SplitK(1, "serial")


def test_warnings_are_strings_that_carry_their_kind() -> None:
    a, b = _mats(16, 64, 32)
    o = torch.full((16, 64), float("nan"), dtype=torch.bfloat16)[:, ::2]
    cp = explain(a, b, ONE, ONE, out_dtype=torch.bfloat16, out=o)
    assert any("returned unchanged" in w for w in cp.warnings)
    w = next(w for w in cp.warnings if "returned unchanged" in w)
    assert isinstance(w, str) and w.kind == "OutUnchangedWarning" and w.message == str(w)
    assert issubclass(w.category, UserWarning)
    assert pickle.loads(pickle.dumps(w)).kind == w.kind
    with pytest.warns(UserWarning, match="returned unchanged"):
        y = scaled_mm(a, b, ONE, ONE, out_dtype=torch.bfloat16, out=o, splitk=1)
    assert y is o and o.isnan().all()
    cp = explain(a, b, ONE, ONE, out_dtype=torch.float32, use_fast_accum=True, profile="hopper-experimental",
                 splitk=1)
    assert any("profile 'hopper-experimental' is experimental" in w for w in cp.warnings)


def test_call_plan_as_0_1_reads_it() -> None:
    a, b = _mats()
    cp = explain(a, b, ONE, ONE, out_dtype=torch.float32, splitk=1, profile="ada")
    assert isinstance(cp, CallPlan) and cp.validation == "ok"
    assert cp.profile == "ada" and cp.preset == "ada" and cp.preset_maturity == "validated"
    assert cp.split.S == 1 and cp.split.source == "explicit"
    assert isinstance(cp.fallbacks, list) and isinstance(cp.warnings, list) and cp.warnings == []
    cp = explain(a, b, ONE, ONE, out_dtype=E5)
    assert cp.validation[0] == "ReferenceRejectsError"
    name, message = cp.validation
    assert name == "ReferenceRejectsError" and message
    cp = explain(a, b, ONE, ONE, torch.zeros(32, dtype=torch.bfloat16), out_dtype=torch.bfloat16, splitk=1)
    assert cp.validation[0] == "UnsupportedFeatureError"
    for prof, split in (("hopper", (2, "serial")), ("ada", (2, "contiguous"))):
        cp = explain(a, b, ONE, ONE, out_dtype=torch.float32, use_fast_accum=True, splitk=split, profile=prof)
        assert cp.validation[0] == "ValueError" and "is not a split-K layout of preset" in cp.validation[1]
        with pytest.raises(ValueError, match="is not a split-K layout of preset"):
            scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, use_fast_accum=True, splitk=split, profile=prof)
    assert CallPlan().validation == "ok"


def test_grad_guard_says_inference_only() -> None:
    a, b = _mats()
    sg = torch.tensor(1.0, requires_grad=True)
    with pytest.raises(UnsupportedFeatureError, match="inference-only"):
        scaled_mm(a, b, sg, ONE, out_dtype=torch.float32, splitk=1)
    ag = a.float().to(E4).requires_grad_(True)
    with pytest.raises(UnsupportedFeatureError, match="inference-only"):
        accumulate(ag, b.t(), use_fast_accum=True, splitk=1)
    with pytest.raises(UnsupportedFeatureError, match="inference-only"):
        mmaemu.model.dot(ag[0], ag[0])
    with torch.no_grad():
        scaled_mm(a, b, sg, ONE, out_dtype=torch.float32, splitk=1)


def test_accumulate_checks_as_0_1() -> None:
    a = torch.zeros(4, 32).to(E4)
    with pytest.raises(TypeError):
        accumulate(a.float(), a, use_fast_accum=True)
    with pytest.raises(ValueError, match="K mismatch"):
        accumulate(a, torch.zeros(4, 48).to(E4), use_fast_accum=True)
    with pytest.raises(TypeError):
        accumulate(a, a, use_fast_accum="yes")
    assert accumulate(a, a, use_fast_accum=np.bool_(True), splitk=1).shape == (4, 4)
    assert accumulate(a, a, use_fast_accum=True, splitk=1, out_dtype_for_split=torch.float32).shape == (4, 4)


def test_errors_and_split_unknown() -> None:
    a2, b2 = _mats(17, 4112, 112)
    with pytest.raises(SplitKUnknownError):
        scaled_mm(a2, b2, ONE, ONE, out_dtype=torch.float32)
    assert issubclass(ReferenceRejectsError, RuntimeError) and issubclass(UnsupportedFeatureError, NotImplementedError)
    assert issubclass(SplitKUnknownError, LookupError) and issubclass(ReferenceRejectsError, MmaemuError)


def test_backends_status_reads_as_a_mapping() -> None:
    st = mmaemu.backends_status(torch.device("cpu"))
    assert "reference" in st and st["reference"].available and st["reference"].reason == ""
    assert set(st) == set(st.keys()) and len(st) == len(st.backends)
    assert all(name == b.name for name, b in st.items())
    assert "cuda:v9" not in st or not st["cuda:v9"].available


def test_profiles_and_presets_as_0_1() -> None:
    p = mmaemu.get_profile("ada")
    rule = p.rejection("e4m3", "e4m3", "float8_e5m2")
    assert rule is not None and rule.fmt_a in (None, "e4m3") and rule.message
    assert p.rejection(E4, E4, torch.float8_e5m2) == rule
    assert p.rejection("e4m3", "e4m3", "bfloat16") is None
    assert mmaemu.get_preset("ada").late_c is False
    assert "ada" in mmaemu.list_profiles() and "hopper" in mmaemu.list_presets()


def test_an_emulated_linear_layer_as_the_0_1_readme_writes_it() -> None:
    class EmulatedFP8Linear(torch.nn.Module):
        def __init__(self, weight, scale_x, scale_w, profile="hopper-te"):
            super().__init__()
            self.scale_x, self.scale_w, self.profile = scale_x, scale_w, profile
            self.wq = (weight.detach().float() * scale_w).clamp(-448, 448).to(torch.float8_e4m3fn)

        def forward(self, x):
            xq = (x.float() * self.scale_x).clamp(-448, 448).to(torch.float8_e4m3fn).reshape(-1, x.shape[-1])
            y = mmaemu.scaled_mm(xq, self.wq.t(), 1 / self.scale_x, 1 / self.scale_w,
                                 out_dtype=torch.bfloat16, use_fast_accum=True, profile=self.profile)
            return y.reshape(*x.shape[:-1], -1)

    g = torch.Generator().manual_seed(1)
    lin = EmulatedFP8Linear(torch.randn(5760, 1920, generator=g), torch.tensor(16.0), torch.tensor(32.0),
                            profile="hopper")  # a shape of the H100 PCIe's recorded table
    with torch.inference_mode():
        y = lin(torch.randn(1, 16, 1920, generator=g))
    assert y.shape == (1, 16, 5760) and y.dtype == torch.bfloat16
    results = []

    def run() -> None:
        with torch.inference_mode():
            results.append(lin(torch.ones(1, 16, 1920)))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_bitwise_equal(results[0], results[1], msg="two threads")
