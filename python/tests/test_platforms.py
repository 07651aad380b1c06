"""Platform bundles from Python (docs/platform-format.md): ``mmaemu.load_profile`` and ``profile=`` a bundle path.

A bundle is assembled here from the shipped RTX 4060 table under a fictional GPU's profile name; its decisions must be
the built-in ``ada`` profile's (the same recorded table), and a damaged bundle must raise ``DataError``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pathlib
import shutil

import pytest
import torch

import mmaemu
from mmaemu.errors import DataError

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEM = "rtx4060-cublaslt-12.8.3.14"
SHIPPED = ROOT / "datasets" / "platforms" / STEM


def _sha(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _bundle(tmp: pathlib.Path, profile: str) -> pathlib.Path:
    d = tmp / f"bundle-{profile}"
    d.mkdir()
    for ext in ("parquet", "json"):
        shutil.copy(SHIPPED / f"{STEM}.{ext}", d / f"{STEM}.{ext}")
    (d / "platform.toml").write_text(
        f"""format = "mmaemu-platform/1"
name = "{profile}"
description = "the RTX 4060 table under another profile name"

[gpu]
name = "NVIDIA GeForce RTX 4060"
capability = [8, 9]

[library]
cublaslt = "12.8.3.14"

[preset]
format = "mmaemu-preset/1"
name = "lab-ada"
nfma = 16
frac = 13
frac_out = 13
min_exp = -132
c_entry = "early"
slow_chunk = 128

[splitk]
table = "{STEM}.parquet"

[[profile]]
name = "{profile}"
caller = "torch._scaled_mm"
workspace = 1048576
description = "{profile}"

[files]
"{STEM}.parquet" = "{_sha(d / f'{STEM}.parquet')}"
"{STEM}.json" = "{_sha(d / f'{STEM}.json')}"
"""
    )
    return d


def test_a_bundle_decides_and_computes_like_ada(tmp_path: pathlib.Path) -> None:
    d = _bundle(tmp_path, "py-lab-a")
    p = mmaemu.load_profile(d)
    assert p.name == "py-lab-a"
    assert p.maturity == "experimental"
    assert "py-lab-a" in mmaemu.list_profiles()
    # docs/reference.md §8.1's example: ada splits M=16, N=48, K=8192, bf16, slow as S = 8 pairwise.
    g = torch.Generator().manual_seed(7)
    a = torch.randn(16, 8192, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(48, 8192, generator=g).to(torch.float8_e4m3fn).t()
    one = torch.ones((), dtype=torch.float32)
    ours = mmaemu.explain(a, b, one, one, out_dtype=torch.bfloat16, profile=str(d))
    ada = mmaemu.explain(a, b, one, one, out_dtype=torch.bfloat16, profile="ada")
    assert (ours.split.S, ours.split.scheme) == (ada.split.S, ada.split.scheme) == (8, "pairwise")
    with pytest.warns(Warning):
        got = mmaemu.scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, profile=p)
    want = mmaemu.scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, profile="ada")
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))


def test_a_damaged_bundle_is_a_data_error(tmp_path: pathlib.Path) -> None:
    d = _bundle(tmp_path, "py-lab-b")
    (d / "notes.txt").write_text("not listed")
    with pytest.raises(DataError, match="notes.txt"):
        mmaemu.load_profile(d)
    (d / "notes.txt").unlink()
    with (d / f"{STEM}.json").open("a") as f:
        f.write("\n")
    with pytest.raises(DataError, match="sha256"):
        mmaemu.load_profile(str(d))


def test_a_fitted_rule_is_a_split_scheme() -> None:
    # The RTX 4060's customOption 1 splits as `interleaved64/pairwise/restart2` (docs/platform-format.md): by that
    # name it is ada's `pairwise`, fast and slow; a name that is no rule is refused.
    g = torch.Generator().manual_seed(11)
    a = torch.randn(4, 4096, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(32, 4096, generator=g).to(torch.float8_e4m3fn).t()
    one = torch.ones((), dtype=torch.float32)
    for fast in (False, True):
        by_rule = mmaemu.scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=fast, profile="ada",
                                   splitk=mmaemu.SplitK(5, "interleaved64/pairwise/restart2"))
        by_name = mmaemu.scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=fast, profile="ada",
                                   splitk=(5, "pairwise"))
        assert torch.equal(by_rule.view(torch.int32), by_name.view(torch.int32))
    with pytest.raises(ValueError, match="split rule"):
        mmaemu.SplitK(5, "interleaved64/sideways")


def test_a_loaded_profile_is_the_named_profile_field_by_field(tmp_path: pathlib.Path) -> None:
    d = _bundle(tmp_path, "py-lab-c")
    toml = (d / "platform.toml").read_text()
    (d / "platform.toml").write_text(toml.replace("[[profile]]", """[[reject]]
fmt_a = "e4m3"
fmt_b = "e5m2"
out = "float8_e5m2"
message = "this cuBLASLt rejects e4m3 x e5m2 -> e5m2 output"

[[reject]]
out = "float8_e4m3fn"
message = "this cuBLASLt rejects every e4m3 output"

[[profile]]"""))
    loaded = mmaemu.load_profile(d)
    named = mmaemu.get_profile("py-lab-c")
    assert type(loaded) is type(named)
    for field in dataclasses.fields(named):
        assert getattr(loaded, field.name) == getattr(named, field.name), field.name
    assert loaded == named and len(loaded.rejects) == 2
    for r in loaded.rejects:
        assert type(r) is mmaemu.RejectRule
    first, second = loaded.rejects
    assert (first.fmt_a, first.fmt_b, first.out_dtype) == ("e4m3", "e5m2", "float8_e5m2")
    assert (second.fmt_a, second.fmt_b, second.out_dtype) == (None, None, "float8_e4m3fn")
    assert loaded.rejection(torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e5m2) == first
    assert loaded.rejection("e5m2", "e5m2", torch.float8_e4m3fn) == second
    assert loaded.rejection("e4m3", "e4m3", torch.bfloat16) is None
    # the call is refused as the bundle says
    a = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    b = torch.zeros(16, 32, dtype=torch.float8_e5m2).t()
    one = torch.ones((), dtype=torch.float32)
    with pytest.raises(mmaemu.ReferenceRejectsError, match="e4m3 x e5m2 -> e5m2"):
        mmaemu.scaled_mm(a, b, one, one, out_dtype=torch.float8_e5m2, profile=loaded, splitk=1)
