"""numpy arrays of ml_dtypes float8 types and uint8 codes with an explicit format (torch optional at
import), and ``mmaemu.patch``: unchanged code calling ``torch._scaled_mm`` on CPU tensors gets the
emulator, and torch's own behaviour comes back after."""

from __future__ import annotations

import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch

import mmaemu
from conftest import rows_of
from replay import expected_tensor


def hardware_rows(n: int = 40):
    rows = [r for r in rows_of("rtx4060-gemm") if r["op"] == "scaled_mm" and r["expected"][0] == "bits"
            and not r["call"] and r["m"] * r["n"] > 0]
    return rows[:: max(1, len(rows) // n)]


NP_FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
NP_OUT = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
          "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}


def scale(bits: int) -> np.ndarray:
    return np.array([bits], dtype=np.uint32).view(np.float32).reshape(())


def split(row):
    return 1 if row["split_scheme"] == "none" else (row["split_s"], row["split_scheme"])


@pytest.mark.parametrize("as_codes", [False, True])
def test_numpy_arrays_give_the_recorded_bits(as_codes: bool) -> None:
    for row in hardware_rows():
        m, n, k = row["m"], row["n"], row["k"]
        a = np.frombuffer(row["a"], dtype=np.uint8).reshape(m, k)
        b = np.frombuffer(row["b"], dtype=np.uint8).reshape(n, k)
        if as_codes:
            a_op, b_op = mmaemu.codes(a, row["fmt_a"]), mmaemu.codes(b.T, row["fmt_b"])
        else:
            a_op, b_op = a.view(NP_FP8[row["fmt_a"]]), b.view(NP_FP8[row["fmt_b"]]).T
        kwargs = {}
        if row["out_dtype"]:
            kwargs["out_dtype"] = NP_OUT[row["out_dtype"]]
        if row["scale_result"] is not None:
            kwargs["scale_result"] = scale(row["scale_result"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = mmaemu.scaled_mm(a_op, b_op, scale(row["scale_a"]), scale(row["scale_b"]),
                                   use_fast_accum=bool(row["fast_accum"]), profile=row["profile"], splitk=split(row),
                                   **kwargs)
        assert isinstance(got, np.ndarray) and got.shape == (m, n)
        want = expected_tensor(row, (m, n))
        width = got.dtype.itemsize
        ints = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
        assert np.array_equal(got.view(ints), want.contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[
            width]).numpy().view(ints)), row["id"]


def test_numpy_accumulate_dot_epilogue_and_testing() -> None:
    # §3.3 worked example: K = 256, a = b, a[0] = 1, a[128..143] = 2^-9, fast, hopper: unsplit 1.0, S = 2
    # contiguous 0x1.0004p+0.
    a = np.zeros((1, 256), dtype=ml_dtypes.float8_e4m3fn)
    a[0, 0] = 1.0
    a[0, 128:144] = 2.0 ** -9
    assert mmaemu.accumulate(a, a, use_fast_accum=True, splitk=1, profile="hopper")[0, 0] == 1.0
    got = mmaemu.accumulate(a, a, use_fast_accum=True, splitk=(2, "contiguous"), profile="hopper")
    assert got.dtype == np.float32 and float(got[0, 0]) == float.fromhex("0x1.0004p+0")
    # §2.6: ada, 256*1 + 2^-5*1 keeps the small term; e4m3 codes as uint8 with an explicit format.
    x = np.array([256.0, 2.0 ** -5] + [0.0] * 14).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    y = np.array([1.0, 1.0] + [0.0] * 14).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert float(mmaemu.model.dot(x, y, fmt="e4m3")) == float.fromhex("0x1.0008p+8")
    assert float(mmaemu.model.dot(mmaemu.codes(x, "e4m3"), mmaemu.codes(y, "e4m3"))) == float.fromhex("0x1.0008p+8")
    # §4 step 3: e4m3 spot values through the epilogue (-0 becomes +0 at step 2: an exactly zero product).
    acc = np.array([448, 464, 480, 1e30, np.inf, -np.inf, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 15, -0.1, -0.0],
                   dtype=np.float32)
    out = mmaemu.model.epilogue.apply(acc, 1.0, 1.0, out_dtype=ml_dtypes.float8_e4m3fn)
    assert list(out.view(np.uint8)) == [0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x01, 0x00, 0x02, 0x57, 0x9D, 0x00]
    mmaemu.testing.assert_bitwise_equal(out, out.copy())


def test_numpy_layouts_and_refusals() -> None:
    a = np.ones((16, 32), dtype=ml_dtypes.float8_e4m3fn)
    s = np.ones((), dtype=np.float32)
    with pytest.raises(TypeError, match="numpy.ndarray, not float"):
        mmaemu.scaled_mm(a, a.T, 1.0, s)
    with pytest.raises(TypeError):
        mmaemu.scaled_mm(a, a.T, s, s, out_dtype="float32")
    with pytest.raises(ValueError, match="negative strides"):
        mmaemu.scaled_mm(a[::-1], a.T, s, s, splitk=1)
    with pytest.raises(mmaemu.ReferenceRejectsError, match="row-major and column-major"):
        mmaemu.scaled_mm(a, np.ascontiguousarray(a.T), s, s, splitk=1)  # a row-major mat2 (§5.2 step 5.2)
    r = mmaemu.scaled_mm(a, a.T, s, s, out_dtype=np.float32, splitk=1)
    assert r.dtype == np.float32 and r[0, 0] == 32.0
    out = np.zeros((16, 16), dtype=np.float32, order="F")
    assert mmaemu.scaled_mm(a, a.T, s, s, out=out, splitk=1) is out and out[3, 5] == 32.0


def test_the_package_imports_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np, ml_dtypes, mmaemu\n"
        "a = np.ones((16, 32), dtype=ml_dtypes.float8_e4m3fn); s = np.ones((), dtype=np.float32)\n"
        "r = mmaemu.scaled_mm(a, a.T, s, s, out_dtype=np.float32, splitk=1)\n"
        "assert r[0, 0] == 32.0 and 'torch' not in str(type(r))\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


# ---------------------------------------------------------------------------------------------------------


def quantize(x: torch.Tensor):
    amax = x.abs().max().clamp(min=1e-12)
    s = (448.0 / amax).float()
    return (x * s).to(torch.float8_e4m3fn), (1.0 / s).reshape(()).float()


class Fp8Linear(torch.nn.Module):
    """A hand-written FP8 linear layer as FP8 inference code writes it against torch._scaled_mm."""

    def __init__(self, n: int, k: int, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(n, k, generator=g) / k ** 0.5
        self.w8, self.sw = quantize(w)

    def forward(self, x: torch.Tensor, matmul) -> torch.Tensor:
        x8, sx = quantize(x)
        return matmul(x8, self.w8.t(), sx, self.sw, out_dtype=torch.bfloat16, use_fast_accum=True)


def mlp(x: torch.Tensor, layers, matmul) -> torch.Tensor:
    h = x
    for i, layer in enumerate(layers):
        h = layer(h.float(), matmul)
        if i + 1 < len(layers):
            h = torch.relu(h)
    return h


def test_patch_runs_unchanged_fp8_code_on_the_emulator() -> None:
    layers = [Fp8Linear(64, 128, 1), Fp8Linear(32, 64, 2), Fp8Linear(16, 32, 3)]
    x = torch.randn(16, 128, generator=torch.Generator().manual_seed(0))
    with pytest.raises(NotImplementedError, match="CPU"):  # torch has no CPU kernel for it
        mlp(x, layers, torch._scaled_mm)

    def emulated(*args, **kwargs):
        return mmaemu.scaled_mm(*args, **kwargs, profile="hopper", splitk=1)

    want = mlp(x, layers, emulated)
    with mmaemu.patch(profile="hopper", splitk=1):
        assert mmaemu.installed()
        got = mlp(x, layers, torch._scaled_mm)
        # out= overload too.
        out = torch.empty(16, 64, dtype=torch.bfloat16)
        x8, sx = quantize(x)
        r = torch._scaled_mm(x8, layers[0].w8.t(), sx, layers[0].sw, out_dtype=torch.bfloat16,
                             use_fast_accum=True, out=out)
        assert r.data_ptr() == out.data_ptr()
        mmaemu.testing.assert_bitwise_equal(out, emulated(x8, layers[0].w8.t(), sx, layers[0].sw,
                                                          out_dtype=torch.bfloat16, use_fast_accum=True))
        # The contract's errors come through torch's call.
        with pytest.raises(mmaemu.ReferenceRejectsError):
            torch._scaled_mm(x8[:, :120], layers[0].w8.t()[:120], sx, layers[0].sw)
    mmaemu.testing.assert_bitwise_equal(got, want)
    assert not mmaemu.installed()
    with pytest.raises(NotImplementedError, match="CPU"):
        mlp(x, layers, torch._scaled_mm)


def test_install_uninstall_and_nesting() -> None:
    row = hardware_rows(1)[0]
    a = torch.frombuffer(bytearray(row["a"]), dtype=torch.uint8).view(torch.float8_e4m3fn)
    try:
        mmaemu.install(profile="ada", splitk=1)
        with mmaemu.patch(profile="hopper-experimental", splitk=1):
            with pytest.warns(mmaemu.ExperimentalPresetWarning):
                torch._scaled_mm(torch.zeros(16, 32, dtype=torch.float8_e4m3fn),
                                 torch.zeros(16, 32, dtype=torch.float8_e4m3fn).t(), torch.tensor(1.0),
                                 torch.tensor(1.0), out_dtype=torch.float32)
        assert mmaemu.installed()  # the outer installation is back
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch._scaled_mm(torch.zeros(16, 32, dtype=torch.float8_e4m3fn),
                             torch.zeros(16, 32, dtype=torch.float8_e4m3fn).t(), torch.tensor(1.0),
                             torch.tensor(1.0), out_dtype=torch.float32)
    finally:
        mmaemu.uninstall()
    assert not mmaemu.installed() and a.numel() > 0
