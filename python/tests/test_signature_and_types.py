"""The public signature equals torch 2.7.1's live schema of ``aten::_scaled_mm`` (``self`` exposed as
``input``), and wrong Python argument types raise TypeError where torch's argument parser does."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import mmaemu

P = inspect.Parameter


def schema_args():
    schema = torch.ops.aten._scaled_mm.default._schema
    return schema, list(schema.arguments)


def test_torch_is_2_7_1() -> None:
    assert torch.__version__.split("+")[0] == "2.7.1"


@pytest.mark.parametrize("fn", [mmaemu.scaled_mm, mmaemu.explain])
def test_signature_equals_the_live_schema(fn) -> None:
    schema, args = schema_args()
    assert schema.name == "aten::_scaled_mm"
    params = list(inspect.signature(fn).parameters.values())
    torch_part = params[: len(args)]
    assert [p.name for p in torch_part] == ["input" if a.name == "self" else a.name for a in args]
    for p, a in zip(torch_part, args):
        assert p.kind is (P.KEYWORD_ONLY if a.kwarg_only else P.POSITIONAL_OR_KEYWORD), p.name
        if a.has_default_value():
            assert p.default == a.default_value, p.name
        else:
            assert p.default is P.empty, p.name
    # The out= overload's keyword-only out, then mmaemu's own keyword-only options.
    out_schema = torch.ops.aten._scaled_mm.out._schema
    out_arg = [a for a in out_schema.arguments if a.kwarg_only]
    assert [a.name for a in out_arg] == ["out"]
    rest = params[len(args):]
    assert [(p.name, p.kind, p.default) for p in rest] == [
        ("out", P.KEYWORD_ONLY, None),
        ("profile", P.KEYWORD_ONLY, None),
        ("splitk", P.KEYWORD_ONLY, "auto"),
        ("backend", P.KEYWORD_ONLY, "auto"),
        ("experimental", P.KEYWORD_ONLY, None),
    ]


def test_accumulate_and_model_signatures() -> None:
    acc = inspect.signature(mmaemu.accumulate).parameters
    assert list(acc) == ["a", "b", "use_fast_accum", "splitk", "profile", "backend", "out_dtype_for_split"]
    assert acc["use_fast_accum"].kind is P.KEYWORD_ONLY and acc["use_fast_accum"].default is P.empty
    assert acc["out_dtype_for_split"].default is None
    dot = inspect.signature(mmaemu.model.dot).parameters
    assert [(n, p.kind, p.default) for n, p in dot.items()] == [
        ("a", P.POSITIONAL_OR_KEYWORD, P.empty),
        ("b", P.POSITIONAL_OR_KEYWORD, P.empty),
        ("c", P.POSITIONAL_OR_KEYWORD, None),
        ("preset", P.KEYWORD_ONLY, "ada"),
        ("fmt", P.KEYWORD_ONLY, None),
        ("scale_a", P.KEYWORD_ONLY, None),
        ("scale_b", P.KEYWORD_ONLY, None),
    ]
    epi = inspect.signature(mmaemu.model.epilogue.apply).parameters
    assert list(epi) == ["acc", "scale_a", "scale_b", "out_dtype", "scale_result"]
    assert epi["out_dtype"].kind is P.KEYWORD_ONLY and epi["scale_result"].default is None
    abe = inspect.signature(mmaemu.testing.assert_bitwise_equal).parameters
    assert list(abe) == ["actual", "expected", "nan", "msg"]
    assert abe["msg"].kind is P.KEYWORD_ONLY and abe["msg"].default == "" and abe["nan"].default == "bits"


A = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
B = torch.zeros(16, 32, dtype=torch.float8_e4m3fn).t()
S = torch.tensor(1.0)

BAD_CALLS = {
    "a Python float scale": ((A, B, 1.0, S), {}),
    "a positional fifth argument that is not a tensor": ((A, B, S, S, 1.0), {}),
    "use_fast_accum=1": ((A, B, S, S), {"use_fast_accum": 1}),
    "a numpy.bool_ use_fast_accum": ((A, B, S, S), {"use_fast_accum": np.bool_(True)}),
    "use_fast_accum=None": ((A, B, S, S), {"use_fast_accum": None}),
    "a string dtype": ((A, B, S, S), {"out_dtype": "float32"}),
    "a list for a tensor": (([[1.0]], B, S, S), {}),
    "a numpy scalar for a tensor": ((A, B, np.float32(1), S), {}),
    "an int for out": ((A, B, S, S), {"out": 3}),
    "too many positional arguments": ((A, B, S, S, None, None, None, False, None), {}),
    "an unknown keyword": ((A, B, S, S), {"foo": 3}),
    "a missing argument": ((A, B, S), {}),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_wrong_python_types_raise_type_error_like_torch(case: str) -> None:
    args, kwargs = BAD_CALLS[case]
    with pytest.raises(TypeError):
        torch._scaled_mm(*args, **kwargs)  # torch's own argument parser (CPU: before any kernel)
    with pytest.raises(TypeError) as e:
        mmaemu.scaled_mm(*args, **kwargs)
    # explain reports the same first error instead of raising.
    try:
        plan = mmaemu.explain(*args, **kwargs)
    except TypeError:
        return  # Python itself refused the call (arity, unknown keyword)
    assert plan.validation.name == "TypeError", plan
    assert not isinstance(e.value, mmaemu.MmaemuError)


def test_messages_name_the_argument_as_torch_does() -> None:
    with pytest.raises(TypeError, match=r"argument 'scale_a' \(position 3\) must be Tensor, not float"):
        mmaemu.scaled_mm(A, B, 1.0, S)
    with pytest.raises(TypeError, match=r"argument 'use_fast_accum' \(position 8\) must be bool, not numpy.bool"):
        mmaemu.scaled_mm(A, B, S, S, use_fast_accum=np.bool_(False))
    with pytest.raises(TypeError, match=r"argument 'out_dtype' \(position 7\) must be torch.dtype, not str"):
        mmaemu.scaled_mm(A, B, S, S, out_dtype="bfloat16")


def test_accepted_non_tensor_values() -> None:
    # torch accepts a Python scalar type as a dtype (float is float64): refused later by the out-dtype check.
    with pytest.raises(mmaemu.ReferenceRejectsError, match="out dtype float64"):
        mmaemu.scaled_mm(A, B, S, S, out_dtype=float, splitk=1)
    for bad in (2.0, True, "two", (2,), (2, 3)):
        with pytest.raises((TypeError, ValueError)):
            mmaemu.scaled_mm(A, B, S, S, splitk=bad)
    with pytest.raises(TypeError):
        mmaemu.scaled_mm(A, B, S, S, profile=3)
    with pytest.raises(TypeError):
        mmaemu.scaled_mm(A, B, S, S, backend=None)
    with pytest.raises(TypeError):
        mmaemu.accumulate(A, B.t(), use_fast_accum=1)
    with pytest.raises(TypeError):
        mmaemu.accumulate(A, B.t())  # use_fast_accum has no default
    with pytest.raises(TypeError):
        mmaemu.model.dot(A[0], A[0], fmt=3)
    with pytest.raises(ValueError):
        mmaemu.model.dot(A[0], A[0], fmt=("e4m3", "e4m3", "e4m3"))
