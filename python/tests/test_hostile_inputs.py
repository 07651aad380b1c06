"""Inputs that once aborted, crashed or wrote where they must not: each now ends in a typed exception, before
anything is allocated (the memory ceiling MMAEMU_MAX_BYTES), and ``mmaemu.patch`` under threads."""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest
import torch

import mmaemu

E4 = torch.float8_e4m3fn
ONE = torch.tensor(1.0)


def mats(m: int = 64, k: int = 1024, n: int = 64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) * 40).clamp(-448, 448).to(E4)
    b = (torch.randn(n, k, generator=g) * 40).clamp(-448, 448).to(E4)
    return a, b.t()


def test_a_huge_split_is_refused_before_the_plan_is_built() -> None:
    a, b = mats()
    # Contiguous: most of its splits would own no k-tile (§6.6); interleaved on ada: the plan's fixed bound.
    with pytest.raises(ValueError, match="without k-tiles"):
        mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=(2**40, "contiguous"))
    plan = mmaemu.explain(a, b, ONE, ONE, out_dtype=torch.float32, splitk=(2**40, "contiguous"))
    assert plan.validation[0] == "ValueError" and "without k-tiles" in plan.validation[1]
    with pytest.raises(ValueError, match="bytes it may take"):
        mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=(2**40, "serial"), profile="ada")
    with pytest.raises(ValueError, match="far beyond any split"):
        mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=2**70)
    assert mmaemu.explain(a, b, ONE, ONE, splitk=(2**70, "contiguous")).validation[0] == "ValueError"


def test_explain_allocates_nothing_for_a_huge_meta_out() -> None:
    a, b = torch.empty(2**20, 16, dtype=E4, device="meta"), torch.empty(2**20, 16, dtype=E4, device="meta").t()
    out = torch.empty(2**20, 2**20, dtype=torch.float32, device="meta")
    plan = mmaemu.explain(a, b, ONE.to("meta"), ONE.to("meta"), out_dtype=torch.float32, out=out, splitk=1)
    assert plan.validation == "ok" and plan.split.S == 1


def test_large_scales_are_refused_by_their_shape_without_being_read() -> None:
    a, b = mats()
    big = torch.ones(1, 1).expand(2**16, 2**16)
    with pytest.raises(mmaemu.ReferenceRejectsError):
        mmaemu.scaled_mm(a, b, big, ONE, out_dtype=torch.float32, splitk=1)
    meta = torch.empty(2**28, dtype=torch.float32, device="meta")
    plan = mmaemu.explain(a.to("meta"), b.to("meta"), meta, ONE.to("meta"), out_dtype=torch.float32, splitk=1)
    assert plan.validation[0] == "ReferenceRejectsError"


def test_results_above_the_ceiling_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = mats(256, 64, 256)
    want = mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.bfloat16, splitk=1)
    monkeypatch.setenv("MMAEMU_MAX_BYTES", str(1 << 18))
    with pytest.raises(ValueError, match="MMAEMU_MAX_BYTES"):
        mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.bfloat16, splitk=1)
    with pytest.raises(ValueError, match="MMAEMU_MAX_BYTES"):
        mmaemu.accumulate(a, b.t(), use_fast_accum=True, splitk=1)
    out = torch.empty(256, 256, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="MMAEMU_MAX_BYTES"):
        mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.bfloat16, splitk=1, out=out)
    monkeypatch.setenv("MMAEMU_MAX_BYTES", str(1 << 30))
    mmaemu.testing.assert_bitwise_equal(mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.bfloat16, splitk=1), want)


def test_an_accumulator_of_a_terabyte_is_refused_before_it_is_allocated() -> None:
    a = torch.zeros(2**20, 16, dtype=E4)
    with pytest.raises(ValueError, match="MMAEMU_MAX_BYTES"):
        mmaemu.accumulate(a, a, use_fast_accum=True, splitk=1)


def test_read_only_out_is_refused(tmp_path) -> None:
    a8 = np.zeros((16, 32), dtype=ml_dtypes.float8_e4m3fn)
    s = np.ones((), np.float32)
    path = tmp_path / "out.bin"
    np.full((16, 16), 7.0, np.float32).tofile(path)
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=(16, 16))
    with pytest.raises(ValueError, match="read-only"):
        mmaemu.scaled_mm(a8, a8.T, s, s, out_dtype=np.dtype(np.float32), out=ro, splitk=1)
    frozen = np.full((16, 16), 7.0, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        mmaemu.scaled_mm(a8, a8.T, s, s, out_dtype=np.dtype(np.float32), out=frozen, splitk=1)
    assert (frozen == 7.0).all() and (np.fromfile(path, np.float32) == 7.0).all()


def test_patch_checks_its_arguments_on_entry() -> None:
    with pytest.raises(KeyError):
        with mmaemu.patch(profile="garbage"):
            pass
    with pytest.raises(ValueError):
        with mmaemu.patch(backend="garbage"):
            pass
    with pytest.raises(ValueError):
        with mmaemu.patch(splitk=(2, "sideways")):
            pass
    with pytest.raises(KeyError):
        mmaemu.install(profile="garbage")
    assert not mmaemu.installed()


def test_overlapping_patches_in_two_threads_keep_their_own_options() -> None:
    a, b = mats(16, 1024, 32, seed=3)
    kw = dict(out_dtype=torch.bfloat16, use_fast_accum=True)
    want = {p: mmaemu.scaled_mm(a, b, ONE, ONE, **kw, profile=p, splitk=1) for p in ("hopper", "ada")}
    assert not torch.equal(want["hopper"].view(torch.int16), want["ada"].view(torch.int16))  # distinguishable
    entered, first_left = threading.Barrier(2), threading.Event()
    errors: list = []

    def worker(profile: str, leaves_first: bool) -> None:
        try:
            with mmaemu.patch(profile=profile, splitk=1):
                entered.wait(timeout=30)
                for _ in range(3):
                    mmaemu.testing.assert_bitwise_equal(torch._scaled_mm(a, b, ONE, ONE, **kw), want[profile],
                                                        msg=profile)
                if not leaves_first:
                    assert first_left.wait(timeout=30)
                    # the other thread has left its context: this one is still patched, with its own options
                    assert mmaemu.installed()
                    mmaemu.testing.assert_bitwise_equal(torch._scaled_mm(a, b, ONE, ONE, **kw), want[profile],
                                                        msg=f"{profile} after the other left")
            if leaves_first:
                first_left.set()
        except BaseException as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)
            first_left.set()

    threads = [threading.Thread(target=worker, args=("hopper", True)),
               threading.Thread(target=worker, args=("ada", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert not mmaemu.installed()
    with pytest.raises(NotImplementedError):
        torch._scaled_mm(a, b, ONE, ONE, **kw)


def test_a_bad_strict_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = mats()
    monkeypatch.setenv("MMAEMU_SPLITK_STRICT", "true")
    with pytest.raises(ValueError, match="MMAEMU_SPLITK_STRICT"):
        mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=1)
    with pytest.raises(ValueError, match="MMAEMU_SPLITK_STRICT"):
        mmaemu.accumulate(a, b.t(), use_fast_accum=True, splitk=1)
    assert mmaemu.explain(a, b, ONE, ONE, out_dtype=torch.float32, splitk=1).validation[0] == "ValueError"
    monkeypatch.setenv("MMAEMU_SPLITK_STRICT", "1")
    mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=1)
