"""The contract's guards (an input that requires grad under grad mode, a CPU that flushes subnormals or rounds
off nearest),
the calls torch.compile must leave alone, and determinism across Python threads."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch

import mmaemu
from conftest import rows_of, set_rounding
from replay import compute, expected_tensor, scaled_mm_args

S = torch.tensor(1.0)


def operands(requires_grad: bool = False, k: int = 32):
    a = torch.full((16, k), 1.0).to(torch.float8_e4m3fn)
    b = torch.full((16, k), 2.0).to(torch.float8_e4m3fn)
    sa = torch.tensor(1.0, requires_grad=requires_grad)
    return a, b.t(), sa


def test_grad_guard() -> None:
    a, b, sa = operands(requires_grad=True)
    with pytest.raises(mmaemu.UnsupportedFeatureError, match="requires grad"):
        mmaemu.scaled_mm(a, b, sa, S, out_dtype=torch.float32, splitk=1)
    plan = mmaemu.explain(a, b, sa, S, out_dtype=torch.float32, splitk=1)
    assert plan.validation.name == "UnsupportedFeatureError"
    with torch.no_grad():
        r = mmaemu.scaled_mm(a, b, sa, S, out_dtype=torch.float32, splitk=1)
    assert float(r[0, 0]) == 64.0
    r = mmaemu.scaled_mm(a, b, sa.detach(), S, out_dtype=torch.float32, splitk=1)
    assert float(r[0, 0]) == 64.0
    x = a.float().requires_grad_()
    with pytest.raises(mmaemu.UnsupportedFeatureError, match="requires grad"):
        mmaemu.model.dot(x, a.float(), fmt="e4m3")
    with torch.no_grad():
        assert float(mmaemu.model.dot(x, a.float(), fmt="e4m3")[0]) == 32.0


def test_grad_guard_keeps_the_order_of_checks() -> None:
    # §5.2: the guard is step 7.3, after torch's checks and before the split decision; zero-size calls
    # return at step 4.
    a, b, sa = operands(requires_grad=True, k=24)
    with pytest.raises(mmaemu.ReferenceRejectsError):
        mmaemu.scaled_mm(a, b, sa, S, splitk=1)
    a, b, sa = operands(requires_grad=True)
    with pytest.raises(mmaemu.UnsupportedFeatureError, match="requires grad"):
        mmaemu.scaled_mm(a, b, sa, S, out_dtype=torch.float32)  # before SplitKUnknownError
    empty = torch.zeros(0, 32).to(torch.float8_e4m3fn)
    r = mmaemu.scaled_mm(empty, b, sa, S, out_dtype=torch.float32)
    assert tuple(r.shape) == (0, 16)


def test_flush_to_zero_guard_every_entry_point() -> None:
    a, b, _ = operands()
    acc = torch.ones(4)
    torch.set_flush_denormal(True)
    try:
        with pytest.raises(mmaemu.MmaemuError, match="FTZ/DAZ"):
            mmaemu.scaled_mm(a, b, S, S, out_dtype=torch.float32, splitk=1)
        with pytest.raises(mmaemu.MmaemuError, match="FTZ/DAZ"):
            mmaemu.accumulate(a, b.t(), use_fast_accum=True, splitk=1, profile="ada")
        with pytest.raises(mmaemu.MmaemuError, match="FTZ/DAZ"):
            mmaemu.model.dot(a[0], a[0])
        with pytest.raises(mmaemu.MmaemuError, match="FTZ/DAZ"):
            mmaemu.model.epilogue.apply(acc, 1.0, 1.0, out_dtype=torch.bfloat16)
        # explain computes nothing and reads no data: no FTZ check (§8.1).
        assert mmaemu.explain(a, b, S, S, out_dtype=torch.float32, splitk=1).ok
    finally:
        torch.set_flush_denormal(False)
    assert float(mmaemu.scaled_mm(a, b, S, S, out_dtype=torch.float32, splitk=1)[0, 0]) == 64.0


def test_rounding_off_nearest_is_refused_at_every_entry_point() -> None:
    # §5.2 step 12: fp32 arithmetic rounded upward, downward or toward zero would give other bits, so every entry
    # point that computes refuses it, a large call (run on a thread of its own) included.
    a, b, _ = operands()
    big_a, big_b = torch.ones(256, 256).to(torch.float8_e4m3fn), torch.ones(256, 256).to(torch.float8_e4m3fn)
    acc = torch.ones(4)
    for mode in ("upward", "downward", "toward_zero"):
        set_rounding(mode)
        try:
            calls = [
                lambda: mmaemu.scaled_mm(a, b, S, S, out_dtype=torch.float32, splitk=1),
                lambda: mmaemu.scaled_mm(big_a, big_b.t(), S, S, out_dtype=torch.float32, splitk=1),
                lambda: mmaemu.accumulate(a, b.t(), use_fast_accum=True, splitk=1, profile="ada"),
                lambda: mmaemu.model.dot(a[0], a[0]),
                lambda: mmaemu.model.epilogue.apply(acc, 1.0, 1.0, out_dtype=torch.bfloat16),
            ]
            for call in calls:
                with pytest.raises(mmaemu.MmaemuError, match="rounds other than to nearest"):
                    call()
        finally:
            set_rounding("nearest")
    assert float(mmaemu.scaled_mm(big_a, big_b.t(), S, S, out_dtype=torch.float32, splitk=1)[0, 0]) == 256.0


def test_flush_to_zero_is_per_thread() -> None:
    # The flag belongs to the thread that sets it (threads started later inherit it, so this one starts first).
    a, b, _ = operands()
    seen = []
    go, done = threading.Event(), threading.Event()

    def other() -> None:
        go.wait()
        seen.append(float(mmaemu.scaled_mm(a, b, S, S, out_dtype=torch.float32, splitk=1)[0, 0]))
        done.set()

    t = threading.Thread(target=other)
    t.start()
    torch.set_flush_denormal(True)
    try:
        go.set()
        done.wait(60)
        with pytest.raises(mmaemu.MmaemuError):
            mmaemu.scaled_mm(a, b, S, S, out_dtype=torch.float32, splitk=1)
    finally:
        torch.set_flush_denormal(False)
        t.join()
    assert seen == [64.0]


def largest_hardware_row():
    rows = [r for r in rows_of("rtx4060-gemm") if r["op"] == "scaled_mm" and r["expected"][0] == "bits"]
    return max(rows, key=lambda r: r["m"] * r["n"] * r["k"])


def test_eight_threads_give_the_recorded_bits() -> None:
    row = largest_hardware_row()
    results = {}

    def work(i: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results[i] = compute(row)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(8))
    expected = expected_tensor(row, tuple(results[0].shape))
    for i in range(8):
        mmaemu.testing.assert_bitwise_equal(results[i], expected)


def test_torch_compile_leaves_the_entry_points_alone() -> None:
    for fn in (mmaemu.scaled_mm, mmaemu.explain, mmaemu.accumulate, mmaemu.model.dot, mmaemu.model.epilogue.apply):
        assert getattr(fn, "_torchdynamo_disable", False), fn
    row = [r for r in rows_of("rtx4060-gemm") if r["op"] == "scaled_mm" and r["expected"][0] == "bits"
           and not r["call"] and r["out_dtype"] == "bfloat16"][0]
    expected = expected_tensor(row, (row["m"], row["n"]))
    args, kwargs = scaled_mm_args(row)
    torch._dynamo.reset()

    @torch.compile(backend="eager")
    def layer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return mmaemu.scaled_mm(a, b, *args[2:], **kwargs) * 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = layer(args[0], args[1])
    mmaemu.testing.assert_bitwise_equal(got, expected)
