"""Ctrl-C during a long call raises KeyboardInterrupt within about a second, and a bad value of an ``MMAEMU_*``
variable is a typed error that names the variable."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import mmaemu

E4 = torch.float8_e4m3fn
ONE = torch.tensor(1.0)

# The child: one long call on one thread. It prints `ready` just before the call and, when the call ends,
# `interrupted` (KeyboardInterrupt) or `finished` with the call's duration.
CHILD = textwrap.dedent(
    """
    import sys, time, torch, mmaemu
    m, n, k, backend = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    g = torch.Generator().manual_seed(1)
    a = (torch.randn(m, k, generator=g) * 40).clamp(-448, 448).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, generator=g) * 40).clamp(-448, 448).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0)
    print("ready", flush=True)
    t = time.monotonic()
    try:
        if backend == "attribute":
            mmaemu.attribute(a, b, one, one, out_dtype=torch.float32, splitk=1)
        elif backend == "trace":
            mmaemu.trace(a, b, one, one, out_dtype=torch.float32, splitk=1, element=(0, 0))
        else:
            mmaemu.scaled_mm(a, b, one, one, out_dtype=torch.float32, splitk=1, backend=backend)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(0)
    print("finished %.2f" % (time.monotonic() - t), flush=True)
    sys.exit(3)
    """
)


def interrupt_after(seconds: float, m: int, n: int, k: int, backend: str) -> float:
    """Start the child's call, send SIGINT `seconds` after it starts; the seconds from the signal to the child's
    KeyboardInterrupt, after checking that the call ended in it (not in its result)."""
    env = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(m), str(n), str(k), backend],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(seconds)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        # The child's answer (not its exit: the interpreter's shutdown with torch loaded is not the call's).
        ready, _, _ = select.select([child.stdout], [], [], 120)
        line = child.stdout.readline().strip() if ready else "(nothing within 120 s)"
        took = time.monotonic() - sent
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0 and line == "interrupted", (child.returncode, line, out, err[-2000:])
    return took


# The bound is generous for a loaded two-core machine (the call itself checks between tiles, well under a
# second apart), and far below the uninterrupted call: 4096 x 4096 x 16384 on one thread is 275 G multiply-adds,
# tens of seconds at the CPU kernels' single-thread speed.
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
@pytest.mark.parametrize(
    "m, n, k, what, after",
    [
        # The CPU kernels check between tiles.
        (4096, 4096, 16384, "auto", 1.0),
        # 512 x 512 x 4096 on the model's own engine: minutes uninterrupted; it checks between rows.
        (512, 512, 4096, "reference", 1.0),
        # 1024^3 attributed: tens of seconds uninterrupted; it checks between rows of outputs.
        (1024, 1024, 1024, "attribute", 1.0),
        # One element of K = 262,144 traced on exact values: about a second of work, then 54 MB of JSON text that
        # Python parses for another second; it checks every 256 blocks and every MB of text, and the signal comes
        # half a second in.
        (16, 16, 262144, "trace", 0.5),
    ],
)
def test_ctrl_c_stops_a_long_call(m: int, n: int, k: int, what: str, after: float) -> None:
    took = interrupt_after(after, m, n, k, what)
    assert took < 3.0, f"{what}: KeyboardInterrupt {took:.2f} s after SIGINT"


def mats(m: int = 32, k: int = 64, n: int = 16):
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(m, k, generator=g) * 40).clamp(-448, 448).to(E4)
    b = (torch.randn(n, k, generator=g) * 40).clamp(-448, 448).to(E4)
    return a, b


def test_a_bad_backend_variable_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = mats()
    want = mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)
    monkeypatch.setenv("MMAEMU_BACKEND", "garbage")
    with pytest.raises(ValueError, match="MMAEMU_BACKEND=\"garbage\": unknown backend 'garbage'"):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)
    with pytest.raises(ValueError, match="MMAEMU_BACKEND"):
        mmaemu.accumulate(a, b, use_fast_accum=True, splitk=1)
    # An explicit backend is not the variable's: it is used, and its errors do not name the variable.
    got = mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1, backend="reference")
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    with pytest.raises(ValueError) as e:
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1, backend="nonsense")
    assert "MMAEMU_BACKEND" not in str(e.value)


def test_a_bad_simd_variable_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = mats()
    monkeypatch.setenv("MMAEMU_SIMD", "sse2")
    with pytest.raises(ValueError, match="MMAEMU_SIMD=\"sse2\": expected avx512, avx2 or portable"):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)
    with pytest.raises(ValueError, match="MMAEMU_SIMD"):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1, backend="reference")


def test_a_bad_profile_variable_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = mats()
    monkeypatch.setenv("MMAEMU_PROFILE", "garbage")
    with pytest.raises(KeyError, match="MMAEMU_PROFILE"):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)
    with pytest.raises(KeyError, match="MMAEMU_PROFILE"):
        mmaemu.accumulate(a, b, use_fast_accum=True, splitk=1)
    with pytest.raises(KeyError, match="MMAEMU_PROFILE"):
        mmaemu.get_profile()
    # A profile given by the caller does not read the variable.
    assert mmaemu.get_profile("ada").name == "ada"
    mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1, profile="hopper")


def test_a_bad_memory_ceiling_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = mats()
    monkeypatch.setenv("MMAEMU_MAX_BYTES", "lots")
    with pytest.raises(ValueError, match="MMAEMU_MAX_BYTES=\"lots\""):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)
    with pytest.raises(ValueError, match="MMAEMU_MAX_BYTES"):
        mmaemu.accumulate(a, b, use_fast_accum=True, splitk=1)


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("MMAEMU_SPLITK_STRICT", "true"),
        ("MMAEMU_DISABLE_CUDA", "perhaps"),
        ("MMAEMU_NATIVE", "openblas-please"),
        ("MMAEMU_MAX_BYTES", " 1024"),
        ("MMAEMU_SIMD", "sse2"),
    ],
)
def test_every_bad_variable_is_a_value_error_naming_it(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    # One rule for every variable (docs/reference.md §9.3): a value the library cannot use is a ValueError that
    # names the variable and its value, in every call, never a silent default.
    a, b = mats()
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=f"{var}=\"{value}\""):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32)
    with pytest.raises(ValueError, match=var):
        mmaemu.accumulate(a, b, use_fast_accum=True)
    with pytest.raises(ValueError, match=var):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1, backend="reference")
    # Empty is the default, like unset.
    monkeypatch.setenv(var, "")
    mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)


def test_a_large_call_under_flush_to_zero_still_raises() -> None:
    # 256^3 = 2^24 multiply-adds: large enough to run on a thread of its own, which must not hide the caller's
    # flush-to-zero state.
    a, b = mats(256, 256, 256)
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormals")
    with pytest.raises(mmaemu.MmaemuError, match="flushes subnormals"):
        mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)
    torch.set_flush_denormal(False)
    mmaemu.scaled_mm(a, b.t(), ONE, ONE, out_dtype=torch.float32, splitk=1)
