"""``mmaemu.patch`` contexts as a careful user expects them: kept by identity per thread and per asyncio task
(``contextvars``), so contexts left out of order remove exactly their own options and tasks never run with another
task's profile; a ``SplitKUnknownError`` under a context advises the way out that works there."""

from __future__ import annotations

import asyncio

import pytest
import torch

import mmaemu
from mmaemu.testing import assert_bitwise_equal

E4 = torch.float8_e4m3fn
ONE = torch.tensor(1.0)
KW = dict(out_dtype=torch.bfloat16, use_fast_accum=True)


def _mats(m: int = 16, k: int = 1024, n: int = 32, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) * 40).clamp(-448, 448).to(E4)
    b = (torch.randn(n, k, generator=g) * 40).clamp(-448, 448).to(E4)
    return a, b.t()


A, B = _mats()


@pytest.fixture(scope="module")
def want() -> dict:
    w = {p: mmaemu.scaled_mm(A, B, ONE, ONE, **KW, profile=p, splitk=1) for p in ("hopper", "ada")}
    assert not torch.equal(w["hopper"].view(torch.int16), w["ada"].view(torch.int16))  # distinguishable
    return w


def _patched() -> torch.Tensor:
    return torch._scaled_mm(A, B, ONE, ONE, **KW)


def test_contexts_left_out_of_order_remove_exactly_their_own(want: dict) -> None:
    outer, inner = mmaemu.patch(profile="hopper", splitk=1), mmaemu.patch(profile="ada", splitk=1)
    outer.__enter__()
    inner.__enter__()
    try:
        assert_bitwise_equal(_patched(), want["ada"], msg="both open: the inner decides")
        outer.__exit__(None, None, None)  # out of order: the outer leaves first
        assert mmaemu.installed()
        assert_bitwise_equal(_patched(), want["ada"], msg="the outer left: the inner (still open) decides")
    finally:
        inner.__exit__(None, None, None)
    assert not mmaemu.installed()
    # The other order, and a third context in between.
    first, second, third = (mmaemu.patch(profile=p, splitk=1) for p in ("ada", "hopper", "ada"))
    first.__enter__()
    second.__enter__()
    third.__enter__()
    third.__exit__(None, None, None)
    first.__exit__(None, None, None)
    try:
        assert_bitwise_equal(_patched(), want["hopper"], msg="only the second is open")
    finally:
        second.__exit__(None, None, None)
    assert not mmaemu.installed()


def test_two_asyncio_tasks_keep_their_own_profiles(want: dict) -> None:
    async def main() -> None:
        entered = [asyncio.Event(), asyncio.Event()]

        async def task(i: int, profile: str) -> None:
            with mmaemu.patch(profile=profile, splitk=1):
                entered[i].set()
                await entered[1 - i].wait()  # both contexts open, entered in the order hopper, ada
                for _ in range(2):
                    assert_bitwise_equal(_patched(), want[profile], msg=profile)
                    await asyncio.sleep(0)

        await asyncio.gather(task(0, "hopper"), task(1, "ada"))

    asyncio.run(main())
    assert not mmaemu.installed()


def test_a_task_leaving_first_leaves_the_other_its_profile(want: dict) -> None:
    async def main() -> None:
        hopper_in, ada_in, hopper_out = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def hopper() -> None:
            with mmaemu.patch(profile="hopper", splitk=1):
                hopper_in.set()
                await ada_in.wait()
            hopper_out.set()

        async def ada() -> None:
            await hopper_in.wait()
            with mmaemu.patch(profile="ada", splitk=1):
                ada_in.set()
                await hopper_out.wait()  # the earlier context (another task's) has left
                assert_bitwise_equal(_patched(), want["ada"], msg="ada after hopper left")

        await asyncio.gather(hopper(), ada())

    asyncio.run(main())
    assert not mmaemu.installed()


def test_a_task_started_inside_a_context_sees_it_until_it_is_left(want: dict) -> None:
    async def main() -> None:
        with mmaemu.patch(profile="ada", splitk=1):
            with mmaemu.patch(profile="hopper", splitk=1):
                left = asyncio.Event()

                async def child() -> None:
                    assert_bitwise_equal(_patched(), want["hopper"], msg="the child inherits the innermost")
                    await left.wait()
                    # its parent left the inner context: the child's copy of it is no longer open
                    assert_bitwise_equal(_patched(), want["ada"], msg="the child after the inner was left")

                t = asyncio.create_task(child())
                await asyncio.sleep(0)
            left.set()
            await t

    asyncio.run(main())
    assert not mmaemu.installed()


def _split_unknown_args():
    # §6.5: on the default profile every K < 1,024 outside the table raises with splitk="auto".
    g = torch.Generator().manual_seed(1)
    a = torch.randn(16, 128, generator=g).to(E4)
    b = torch.randn(256, 128, generator=g).to(E4).t()
    return a, b


def test_split_unknown_under_patch_advises_the_contexts_option() -> None:
    a, b = _split_unknown_args()
    with pytest.raises(mmaemu.SplitKUnknownError) as direct:
        mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32)
    assert "pass splitk=1 " in str(direct.value) and "mmaemu.patch" not in str(direct.value)
    with mmaemu.patch(profile="hopper"):
        with pytest.raises(mmaemu.SplitKUnknownError) as e:
            torch._scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32)
        msg = str(e.value)
        assert "pass mmaemu.patch(splitk=1)" in msg and "pass mmaemu.patch(splitk=(S, 'contiguous'))" in msg, msg
        assert "pass splitk=" not in msg, msg
        with pytest.raises(TypeError):  # the advice the direct call gets does not work here
            torch._scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=1)  # type: ignore[call-arg]
    try:
        mmaemu.install(profile="hopper")
        with pytest.raises(mmaemu.SplitKUnknownError, match=r"pass mmaemu\.install\(splitk=1\)"):
            torch._scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32)
    finally:
        mmaemu.uninstall()
    # the way out it names works
    with mmaemu.patch(profile="hopper", splitk=1):
        assert_bitwise_equal(torch._scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32),
                             mmaemu.scaled_mm(a, b, ONE, ONE, out_dtype=torch.float32, splitk=1))
