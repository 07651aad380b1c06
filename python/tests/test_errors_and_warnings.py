"""Every error class with the base the reference gives it (docs/reference.md §7.1), raised by a call that
the reference says raises it; every warning kind through Python's warnings module (§7.2)."""

from __future__ import annotations

import warnings

import pytest
import torch

import mmaemu
from mmaemu import errors

S = torch.tensor(1.0)


def fp8(rows: int, cols: int, value: float = 1.0, dtype=torch.float8_e4m3fn) -> torch.Tensor:
    return torch.full((rows, cols), value).to(dtype)


def call(m=16, n=16, k=32, **kw):
    return mmaemu.scaled_mm(fp8(m, k), fp8(n, k).t(), S, S, **kw)


def test_class_hierarchy() -> None:
    assert issubclass(errors.MmaemuError, Exception)
    assert issubclass(errors.ReferenceRejectsError, (errors.MmaemuError,)) and issubclass(
        errors.ReferenceRejectsError, RuntimeError)
    assert issubclass(errors.UnsupportedFeatureError, errors.MmaemuError)
    assert issubclass(errors.UnsupportedFeatureError, NotImplementedError)
    assert issubclass(errors.SplitKUnknownError, errors.MmaemuError)
    assert issubclass(errors.SplitKUnknownError, LookupError)
    assert issubclass(errors.BackendUnavailableError, errors.MmaemuError)
    assert issubclass(errors.BackendUnavailableError, RuntimeError)
    assert not issubclass(errors.DataError, errors.MmaemuError)
    for w in errors.WARNING_CLASSES.values():
        assert issubclass(w, UserWarning)
    assert issubclass(errors.UnvalidatedEnvelopeWarning, errors.UnverifiedSplitWarning)
    assert mmaemu.ReferenceRejectsError is errors.ReferenceRejectsError


def test_reference_rejects() -> None:
    # §5.2 step 2.7: K % 16 != 0; step 6: e4m3 x e4m3 -> e5m2 on a hopper profile.
    with pytest.raises(mmaemu.ReferenceRejectsError, match="divisible by 16"):
        call(k=24, splitk=1)
    with pytest.raises(mmaemu.ReferenceRejectsError, match=r"rejects e4m3 x e4m3 -> e5m2.*\[profile hopper\]"):
        call(out_dtype=torch.float8_e5m2, splitk=1)
    with pytest.raises(RuntimeError):  # its Python base
        call(k=24)


def test_unsupported_feature() -> None:
    bias = torch.zeros(16, dtype=torch.bfloat16)
    with pytest.raises(mmaemu.UnsupportedFeatureError, match="bias is not supported"):
        call(bias=bias, out_dtype=torch.bfloat16, splitk=1)
    with pytest.raises(NotImplementedError):
        call(bias=bias, out_dtype=torch.bfloat16, splitk=1)
    # Row-wise scales are modelled on sm_90 and sm_89 only (torch 2.7.1's CUTLASS kernel).
    rowwise_a, rowwise_b = torch.ones(16, 1), torch.ones(1, 16)
    with pytest.raises(mmaemu.UnsupportedFeatureError, match="row-wise scales are modelled on sm_90 and sm_89"):
        mmaemu.scaled_mm(fp8(16, 32), fp8(16, 32).t(), rowwise_a, rowwise_b, out_dtype=torch.bfloat16,
                         profile="b200-tcgen05-experimental", splitk=1, experimental=True)
    # slow accumulation on b200_mma_sync (§3.4 step 2).
    with pytest.warns(mmaemu.ExperimentalPresetWarning):  # step 8 warns before step 13 raises
        with pytest.raises(mmaemu.UnsupportedFeatureError, match="slow accumulation"):
            call(profile="b200-mma-sync-experimental", splitk=1, out_dtype=torch.float32)


def test_splitk_unknown_names_the_three_ways_out() -> None:
    # §6.5: on the default profile every K < 1,024 outside the table raises with splitk="auto".
    with pytest.raises(mmaemu.SplitKUnknownError) as e:
        mmaemu.scaled_mm(fp8(16, 128), fp8(256, 128).t(), S, S, out_dtype=torch.float32)
    msg = str(e.value)
    assert "Ways out: (1) pass splitk=1" in msg and "(2) pass splitk=(S, 'contiguous')" in msg and "(3)" in msg
    assert isinstance(e.value, LookupError)


def test_backend_unavailable_and_unknown() -> None:
    with pytest.raises(mmaemu.BackendUnavailableError, match="backend 'cuda' unavailable"):
        call(splitk=1, backend="cuda")
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        call(splitk=1, backend="gpu")


def test_invalid_arguments_are_builtin_errors() -> None:
    with pytest.raises(KeyError, match="unknown profile 'h100'"):
        call(profile="h100", splitk=1)
    with pytest.raises(ValueError, match="needs a reduction scheme"):
        call(splitk=2)
    with pytest.raises(ValueError, match="not a split-K layout of preset 'hopper'"):
        call(splitk=(2, "serial"), out_dtype=torch.float32)
    with pytest.raises(KeyError):
        mmaemu.get_profile("hopper-h100pcie-torch")


def test_data_error(tmp_path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not a parquet file")
    with pytest.raises(mmaemu.DataError):
        mmaemu.datasets.read_recording(bad)


def test_flush_to_zero_is_an_mmaemu_error() -> None:
    torch.set_flush_denormal(True)
    try:
        with pytest.raises(mmaemu.MmaemuError, match="flushes subnormals") as e:
            call(splitk=1)
        assert type(e.value) is mmaemu.MmaemuError
    finally:
        torch.set_flush_denormal(False)


def test_experimental_preset_warning() -> None:
    with pytest.warns(mmaemu.ExperimentalPresetWarning, match="profile 'hopper-experimental' is experimental"):
        call(profile="hopper-experimental", splitk=1, out_dtype=torch.float32)
    with pytest.warns(mmaemu.ExperimentalPresetWarning, match="preset 'b200_mma_sync' is experimental"):
        call(profile="b200-mma-sync-experimental", splitk=1, use_fast_accum=True, out_dtype=torch.float32)
    with pytest.warns(mmaemu.ExperimentalPresetWarning):
        mmaemu.model.dot(fp8(1, 32)[0], fp8(1, 32)[0], preset="blackwell")


def test_maturity_warning_comes_before_the_split_error() -> None:
    # §7.2: hopper-experimental with splitk="auto" warns, then raises SplitKUnknownError.
    with pytest.warns(mmaemu.ExperimentalPresetWarning):
        with pytest.raises(mmaemu.SplitKUnknownError, match="no reference platform"):
            call(profile="hopper-experimental", out_dtype=torch.float32)


def test_unverified_split_warnings() -> None:
    # §6.6: (32, contiguous) on hopper was never replayed on hardware.
    with pytest.warns(mmaemu.UnverifiedSplitWarning, match="never replayed on hardware"):
        call(k=4096, splitk=(32, "contiguous"), out_dtype=torch.float32)
    # (4, contiguous) with K = 768 leaves a split without k-tiles: refused.
    with pytest.raises(ValueError, match="without k-tiles"):
        call(k=768, splitk=(4, "contiguous"), out_dtype=torch.float32)


def test_unvalidated_envelope_warning() -> None:
    # hopper-te (32 MiB): an S = 1 envelope inference is unvalidated (§6.5); M*N = 16,384 > 15,360.
    with pytest.warns(mmaemu.UnvalidatedEnvelopeWarning, match="unvalidated"):
        mmaemu.scaled_mm(fp8(16, 1056), fp8(1024, 1056).t(), S, S, out_dtype=torch.float32, profile="hopper-te")


def test_out_resized_and_unchanged_warnings() -> None:
    out = torch.full((4, 4), 7.0)
    with pytest.warns(mmaemu.OutResizedWarning, match=r"had shape \[4, 4\].*\[16, 16\]"):
        r = call(splitk=1, out_dtype=torch.float32, out=out)
    assert r is out and tuple(out.shape) == (16, 16) and out.is_contiguous()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(splitk=1, out_dtype=torch.float32, out=torch.empty(0))  # an empty out= is resized silently
    odd = torch.full((64, 64), 7.0).as_strided((16, 16), (64, 2))
    before = odd.clone()
    with pytest.warns(mmaemu.OutUnchangedWarning, match="neither row- nor column-major"):
        r = call(out=odd, out_dtype=torch.float32)  # no split decision: no SplitKUnknownError either
    assert r is odd and torch.equal(odd, before)


def test_backend_fallback_warning_goes_through_warnings() -> None:
    # A self-check failure cannot be provoked from Python; its kind maps to its class like every other.
    with pytest.warns(mmaemu.BackendFallbackWarning, match="self-check failed"):
        mmaemu._api.emit([("BackendFallbackWarning", "cpu:avx2: self-check failed: x; using the next backend")])


def test_warnings_become_errors_under_filters() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", mmaemu.MmaemuWarning)
        with pytest.raises(mmaemu.ExperimentalPresetWarning):
            call(profile="hopper-experimental", splitk=1, out_dtype=torch.float32)


def test_warning_points_at_the_caller() -> None:
    with pytest.warns(mmaemu.ExperimentalPresetWarning) as record:
        call(profile="hopper-experimental", splitk=1, out_dtype=torch.float32)
    assert record[0].filename == __file__
