"""The worked examples of docs/reference.md through the Python API: the chain (§2.5-§2.7), the plans
(§3.2, §3.3, §3.7), the epilogue (§4), zero sizes (§5.3), the split key of a column-major out= (§5.5),
explain (§8.1), the profiles (§6.1) and the RTX 4060 facts of §9.6."""

from __future__ import annotations

import os
import struct

import pytest
import torch

import mmaemu
from mmaemu.model import dot, epilogue

h = float.fromhex
S = torch.tensor(1.0)


def f32_bits(x: torch.Tensor) -> list:
    return [b & 0xFFFFFFFF for b in x.reshape(-1).view(torch.int32).tolist()]


def codes(x: torch.Tensor) -> list:
    return x.reshape(-1).view(torch.uint8).tolist()


def vec(values, fmt=torch.float8_e4m3fn, k=None):
    values = list(values) + [0.0] * ((k or len(values)) - len(values))
    return torch.tensor(values, dtype=torch.float64).to(fmt)


CHAIN_EXAMPLES = [
    # §2.6: (preset, a, b, c, result)
    ("ada", [256, 2 ** -6], [1, 1], None, "0x1.0000p+8"),
    ("ada", [256, 2 ** -5], [1, 1], None, "0x1.0008p+8"),
    ("ada", [256, -(2 ** -6)], [1, 1], None, "0x1.0000p+8"),
    ("ada", [448, 1], [448, 1], None, "0x1.8800p+17"),
    ("ada", [1], [1], 2.0 ** 20, "0x1.0000p+20"),
    ("b200_mma_sync", [2 ** -4], [1], 2.0 ** 20, "0x1.0000p+20"),
    ("ada", [2 ** -9, 1], [2 ** -9, 2 ** -6], None, "0x1.001p-6"),
]


@pytest.mark.parametrize("preset,a,b,c,want", CHAIN_EXAMPLES)
def test_s2_6_chain_examples(preset, a, b, c, want) -> None:
    cc = None if c is None else torch.tensor(c, dtype=torch.float32)
    with pytest.warns(mmaemu.ExperimentalPresetWarning) if preset == "b200_mma_sync" else _nothing():
        got = dot(vec(a, k=16), vec(b, k=16), cc, preset=preset)
    assert float(got) == h(want)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_s2_6_block_size_ada_vs_hopper() -> None:
    a = vec([2 ** -6] * 16 + [256], k=32)
    b = vec([1] * 17, k=32)
    assert float(dot(a, b, preset="ada")) == h("0x1.004p+8")
    assert float(dot(a, b, preset="hopper")) == h("0x1.000p+8")


def test_s2_6_mixed_formats_hardware_value_with_fmt() -> None:
    # e5m2 A x e4m3 B: a = [2^-9, 2^-12], b = [1, 2^-9] -> 2^-9 + 2^-21 (recorded on the RTX 4060).
    a = torch.tensor([2 ** -9, 2 ** -12], dtype=torch.float64)
    b = torch.tensor([1, 2 ** -9], dtype=torch.float64)
    assert float(dot(a, b, fmt=("e5m2", "e4m3"))) == 2 ** -9 + 2 ** -21
    with pytest.raises(ValueError, match="not a e4m3 value"):
        dot(torch.tensor([0.3], dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64), fmt="e4m3")


def test_s2_5_subnormal_c_without_products() -> None:
    zero = vec([], k=16)
    for c_bits, want in [(0x00000001, 0), (0x00011400, 0x00011400), (0x000116C2, 0x00011400)]:
        c = torch.tensor([c_bits], dtype=torch.int32).view(torch.float32).reshape(())
        assert f32_bits(dot(zero, zero, c)) == [want]
    for c in [-(2.0 ** -140), -(2.0 ** -145)]:  # tiny negative c gives +0, not -0
        assert f32_bits(dot(zero, zero, torch.tensor(c, dtype=torch.float64))) == [0]


def test_s2_7_k0_returns_c_unchanged_and_shapes() -> None:
    empty = torch.zeros(3, 0).to(torch.float8_e4m3fn)
    c = torch.tensor([-0.0, 1e-40, 2.0])
    assert f32_bits(dot(empty, empty, c)) == f32_bits(c)
    with pytest.raises(ValueError, match="same shape"):
        dot(vec([1], k=16), vec([1], k=32))


def one_then_small_block(k: int, at: int) -> torch.Tensor:
    """[1, k] e4m3: 1 at element 0 and 2^-9 at the 16 elements from ``at`` (each squares to 2^-18)."""
    a = torch.zeros(1, k, dtype=torch.float64)
    a[0, 0] = 1
    a[0, at:at + 16] = 2.0 ** -9
    return a.to(torch.float8_e4m3fn)


def test_s3_2_ada_serial_split() -> None:
    a = one_then_small_block(128, 64)
    assert float(mmaemu.accumulate(a, a, use_fast_accum=True, splitk=1, profile="ada")) == 1.0
    got = mmaemu.accumulate(a, a, use_fast_accum=True, splitk=(2, "serial"), profile="ada")
    assert float(got) == h("0x1.0004p+0")


def test_s3_3_hopper_contiguous_split() -> None:
    a = one_then_small_block(256, 128)
    assert float(mmaemu.accumulate(a, a, use_fast_accum=True, splitk=1, profile="hopper")) == 1.0
    assert float(mmaemu.accumulate(a, a, use_fast_accum=True, splitk=(2, "contiguous"))) == h("0x1.0004p+0")


def test_s4_epilogue_examples() -> None:
    acc = torch.tensor([8192, -8192, 240, 480, 448, 464, float("inf"), float("-inf"), 1e30])
    assert codes(epilogue.apply(acc, 1.0, 1.0, out_dtype=torch.float8_e4m3fn)) == [
        0x7E, 0xFE, 0x77, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7E]
    e5 = codes(epilogue.apply(acc, 1.0, 1.0, out_dtype=torch.float8_e5m2))
    assert e5[:2] == [0x70, 0xF0] and e5[-3:] == [0x7B, 0xFB, 0x7B]
    r = epilogue.apply(torch.tensor([300.0, 3.0, -1000.0]), 1.0, 1.0, out_dtype=torch.float8_e4m3fn,
                       scale_result=torch.tensor(2.0))
    assert r.float().tolist() == [448.0, 6.0, -448.0]
    r = epilogue.apply(torch.tensor([1000.0]), 1.0, 1.0, out_dtype=torch.float8_e4m3fn, scale_result=0.25)
    assert r.float().tolist() == [256.0]
    f16 = epilogue.apply(torch.tensor([65520.0, 65519.0, 70000.0, -1e-8]), 1.0, 1.0, out_dtype=torch.float16)
    assert [x & 0xFFFF for x in f16.view(torch.int16).tolist()] == [0x7C00, 0x7BFF, 0x7C00, 0x8000]
    bf = epilogue.apply(torch.tensor([3.4e38]), 1.0, 1.0, out_dtype=torch.bfloat16)
    assert [x & 0xFFFF for x in bf.view(torch.int16).tolist()] == [0x7F80]
    # Single rounding and zero signs (§4 step 2): -1 * 0 -> +0; -2^-126 * 2^-20 * 2^-5 -> -0; Inf * 0 -> NaN.
    assert f32_bits(epilogue.apply(torch.tensor([0.0]), -1.0, 1.0, out_dtype=torch.float32)) == [0]
    tiny = epilogue.apply(torch.tensor([2.0 ** -5]), -(2.0 ** -126), 2.0 ** -20, out_dtype=torch.float32)
    assert f32_bits(tiny) == [0x80000000]
    assert f32_bits(epilogue.apply(torch.tensor([0.0]), float("inf"), 1.0, out_dtype=torch.float32)) == [0x7FFFFFFF]


def nine_six_a(fmt, row4: float) -> torch.Tensor:
    a = torch.full((16, 32), 16.0)
    a[1] = -16.0
    a[2] = 0.0
    a[2, 0] = 15.0
    a[3] = 0.0
    a[3, 0] = 30.0
    a[4] = 0.0
    a[4, 0] = row4
    return a.to(fmt)


@pytest.mark.parametrize("fa,od,want", [
    (torch.float8_e4m3fn, torch.float8_e4m3fn, [0x7E, 0xFE, 0x77, 0x7E, 0x7E]),
    (torch.float8_e5m2, torch.float8_e4m3fn, [0x7E, 0xFE, 0x78, 0x7E, 0x7E]),
    (torch.float8_e5m2, torch.float8_e5m2, [0x70, 0xF0, 0x5C, 0x60, 0x5F]),
])
def test_s9_6_fp8_outputs(fa, od, want) -> None:
    a = nine_six_a(fa, 29.0 if fa == torch.float8_e4m3fn else 28.0)
    b = torch.full((16, 32), 16.0).to(torch.float8_e4m3fn)
    r = mmaemu.scaled_mm(a, b.t(), S, S, out_dtype=od, use_fast_accum=True, profile="ada", splitk=1)
    assert codes(r[:5, 0].contiguous()) == want


def test_s9_6_e4m3_to_e5m2_is_refused() -> None:
    a = nine_six_a(torch.float8_e4m3fn, 29.0)
    b = torch.full((16, 32), 16.0).to(torch.float8_e4m3fn)
    with pytest.raises(mmaemu.ReferenceRejectsError):
        mmaemu.scaled_mm(a, b.t(), S, S, out_dtype=torch.float8_e5m2, use_fast_accum=True, profile="ada", splitk=1)


@pytest.mark.parametrize("od,want", [
    (torch.float8_e4m3fn, [0x7E, 0x7F, 0xFE]),
    (torch.float8_e5m2, [0x7B, 0x7F, 0xFB]),
])
def test_s9_6_fp8_specials(od, want) -> None:
    a = torch.zeros(16, 32, dtype=torch.uint8)
    a[0, 0], a[1, 0], a[2, 0] = 0x7C, 0x7E, 0xFC
    b = torch.ones(16, 32).to(torch.float8_e4m3fn)
    r = mmaemu.scaled_mm(a.view(torch.float8_e5m2), b.t(), S, S, out_dtype=od, use_fast_accum=True, profile="ada",
                         splitk=1)
    assert codes(r[:3, 0].contiguous()) == want
    r = mmaemu.scaled_mm(a.view(torch.float8_e5m2), b.t(), S, S, out_dtype=torch.float32, use_fast_accum=True,
                         profile="ada", splitk=1)
    assert f32_bits(r[:3, 0].contiguous()) == [0x7F800000, 0x7FFFFFFF, 0xFF800000]


def test_s5_3_zero_sizes() -> None:
    nan = torch.tensor(float("nan"))
    a0 = torch.zeros(16, 0).to(torch.float8_e4m3fn)
    b0 = torch.zeros(16, 0).to(torch.float8_e4m3fn)
    r = mmaemu.scaled_mm(a0, b0.t(), nan, nan, out_dtype=torch.float32)  # K = 0: +0 whatever the scales
    assert tuple(r.shape) == (16, 16) and f32_bits(r) == [0] * 256
    r = mmaemu.scaled_mm(torch.zeros(0, 32).to(torch.float8_e4m3fn), b0.new_zeros(16, 32).t(), S, S,
                         out_dtype=torch.float64)  # any out dtype, even float64
    assert r.dtype == torch.float64 and tuple(r.shape) == (0, 16)
    e5 = torch.zeros(0, 32).to(torch.float8_e5m2)
    with pytest.raises(mmaemu.ReferenceRejectsError, match="two Float8_e5m2"):
        mmaemu.scaled_mm(e5, torch.zeros(16, 32).to(torch.float8_e5m2).t(), S, S)
    out = torch.full((3, 3), 5.0)
    with pytest.warns(mmaemu.OutResizedWarning):
        r = mmaemu.scaled_mm(a0, b0.t(), S, S, out=out)
    assert r is out and f32_bits(out) == [0] * 256
    with pytest.raises(KeyError):  # an unknown profile fails even for an empty call
        mmaemu.scaled_mm(a0, b0.t(), S, S, profile="nope")


def meta(rows, cols, dtype=torch.float8_e4m3fn):
    return torch.empty(rows, cols, dtype=dtype, device="meta")


SM = torch.empty((), device="meta")  # a scale without data: explain reads shapes, strides and dtypes only


def test_s5_5_column_major_out_resolves_the_transposed_problem() -> None:
    a, b = meta(16, 8192), meta(48, 8192).t()
    plan = mmaemu.explain(a, b, SM, SM, out_dtype=torch.bfloat16, profile="ada")
    assert (plan.split.s, plan.split.scheme) == (8, "pairwise")
    col = torch.empty(48, 16, dtype=torch.bfloat16, device="meta").t()
    plan = mmaemu.explain(a, b, SM, SM, out_dtype=torch.bfloat16, profile="ada", out=col)
    assert (plan.split.s, plan.split.scheme) == (12, "pairwise")
    with pytest.raises(mmaemu.ReferenceRejectsError, match="same device"):
        mmaemu.scaled_mm(a, b, S, S)
    with pytest.raises(mmaemu.UnsupportedFeatureError, match="host tensors"):
        mmaemu.scaled_mm(a, b, SM, SM)


def test_s8_1_explain_example() -> None:
    plan = mmaemu.explain(meta(16, 1920), meta(5760, 1920).t(), SM, SM, out_dtype=torch.bfloat16, use_fast_accum=True,
                          profile="hopper")
    assert plan.ok and (plan.profile, plan.preset, plan.preset_maturity) == ("hopper", "hopper", "validated")
    assert plan.split == mmaemu.SplitDecision(1, "none", "table", True, "heur_h100pcie_lt12.8.3.14",
                                              "table row: algo 66, tile 312, numSplitsK 1, customOption 1")
    assert plan.backend.startswith("cpu:") and plan.fallbacks == ["cuda: tensors on cpu"]
    assert plan.warnings == []
    ref = mmaemu.explain(meta(16, 1920), meta(5760, 1920).t(), SM, SM, out_dtype=torch.bfloat16, use_fast_accum=True,
                         backend="reference")
    assert ref.backend == "reference" and ref.fallbacks == []


def test_s6_6_explicit_contiguous_examples() -> None:
    a, b = meta(16, 6000), meta(256, 6000).t()
    plan = mmaemu.explain(a, b, SM, SM, out_dtype=torch.float32, splitk=(2, "contiguous"), profile="hopper")
    assert plan.split.verified and plan.warnings == []
    plan = mmaemu.explain(a, b, SM, SM, out_dtype=torch.float32, splitk=(2, "contiguous"), profile="hopper-te")
    assert [w.kind for w in plan.warnings] == ["UnverifiedSplitWarning"] and "experimental" in plan.warnings[0].message


def test_s6_1_profiles(monkeypatch) -> None:
    # The built-in profiles first, in this order (bundles loaded in the process follow them).
    assert mmaemu.list_profiles()[:10] == ["ada", "ada-te", "ada-ws0", "hopper", "hopper-te", "hopper-ws0",
                                       "hopper-experimental", "b200-mma-sync-experimental",
                                       "b200-tcgen05-experimental", "rtx50-mma-sync-experimental"]
    p = mmaemu.get_profile("hopper")
    assert (p.preset, p.gpu_name, p.capability, p.sm_count, p.workspace_bytes) == (
        "hopper", "NVIDIA H100 PCIe", (9, 0), 114, 1 << 20)
    assert p.splitk_table == "heur_h100pcie_lt12.8.3.14" and p.maturity == "validated"
    assert mmaemu.get_profile("ada-te").workspace_bytes == 4 << 20 and mmaemu.get_profile("ada-te").align == 256
    assert mmaemu.get_profile("hopper-experimental").workspace_bytes is None
    assert mmaemu.get_profile().name == "hopper"
    monkeypatch.setenv("MMAEMU_PROFILE", "ada")
    assert mmaemu.get_profile().name == "ada"
    assert mmaemu.explain(meta(16, 32), meta(16, 32).t(), SM, SM, splitk=1).profile == "ada"
    assert mmaemu.list_presets() == ["ada", "b200_mma_sync", "b200_tcgen05", "hopper", "rtx50_mma_sync"]
    assert mmaemu.get_preset("blackwell").name == "b200_mma_sync" and mmaemu.get_preset("hopper").nfma == 32
    with pytest.raises(KeyError, match="sm_120"):
        mmaemu.get_preset("rtx5070ti")


def test_s9_3_environment(monkeypatch) -> None:
    a, b = torch.zeros(16, 32).to(torch.float8_e4m3fn), torch.zeros(16, 32).to(torch.float8_e4m3fn).t()
    monkeypatch.setenv("MMAEMU_BACKEND", "reference")
    assert mmaemu.explain(a, b, S, S, splitk=1).backend == "reference"
    monkeypatch.setenv("MMAEMU_BACKEND", " cpu")
    with pytest.raises(ValueError, match="unknown backend ' cpu'"):
        mmaemu.scaled_mm(a, b, S, S, splitk=1)
    monkeypatch.delenv("MMAEMU_BACKEND")
    monkeypatch.setenv("MMAEMU_SPLITK_STRICT", "1")
    big_a, big_b = meta(4096, 1056), meta(4096, 1056).t()
    plan = mmaemu.explain(big_a, big_b, SM, SM, out_dtype=torch.float32)
    assert plan.validation.name == "SplitKUnknownError" and "strict mode" in plan.validation.message
    monkeypatch.delenv("MMAEMU_SPLITK_STRICT")
    assert mmaemu.explain(big_a, big_b, SM, SM, out_dtype=torch.float32).split.source == "envelope"


def test_backends_status() -> None:
    st = mmaemu.backends_status()
    names = [b.name for b in st.backends]
    assert names[0] == "reference" and "cpu:portable" in names and "cuda" in names
    assert st.device == "cpu" and st.auto.startswith("cpu:") and st.fallbacks == ("cuda: tensors on cpu",)
    assert all(b.available == b.status.startswith("available") for b in st.backends)
    with pytest.raises(ValueError, match="unknown device"):
        mmaemu.backends_status("tpu")
    if not any(b.name == "cuda" and b.available for b in st.backends):
        with pytest.raises(mmaemu.BackendUnavailableError):
            mmaemu.backends_status("cuda")


def test_bit_views_agree_with_struct() -> None:
    # The bit views used above match struct's packing.
    assert f32_bits(torch.tensor([1.0])) == [struct.unpack("<I", struct.pack("<f", 1.0))[0]]
    assert os.path.exists(os.path.join(os.path.dirname(__file__), "replay.py"))
