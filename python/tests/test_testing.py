"""``mmaemu.testing.assert_bitwise_equal`` (docs/reference.md §9.1): bit patterns, not values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

from mmaemu.testing import assert_bitwise_equal, bits


def f32(*xs: int) -> torch.Tensor:
    return torch.tensor([x - (1 << 32) if x >= 1 << 31 else x for x in xs], dtype=torch.int32).view(torch.float32)


def test_zero_signs_differ() -> None:
    with pytest.raises(AssertionError, match=r"1 of 2 elements differ; first at index 1: expected 0x80000000 "
                                             r"\(-0.0\) actual 0x00000000 \(0.0\) \[float32\]"):
        assert_bitwise_equal(f32(0x3F800000, 0), f32(0x3F800000, 0x80000000))


def test_nan_payloads() -> None:
    a, b = f32(0x7FC00000, 0x7F800000), f32(0x7FFFFFFF, 0x7F800000)
    with pytest.raises(AssertionError, match="0x7FFFFFFF"):
        assert_bitwise_equal(a, b)
    assert_bitwise_equal(a, b, nan="any")
    with pytest.raises(AssertionError):
        assert_bitwise_equal(f32(0x7FC00000), f32(0x7F800000), nan="any")  # NaN is not Inf
    assert_bitwise_equal(a, b, nan="mask")  # the other name of "any"
    with pytest.raises(ValueError):
        assert_bitwise_equal(a, b, nan="payload")
    e4 = torch.tensor([0x7F, 0xFF], dtype=torch.uint8).view(torch.float8_e4m3fn)
    assert_bitwise_equal(e4, torch.tensor([0xFF, 0x7F], dtype=torch.uint8).view(torch.float8_e4m3fn), nan="any")


def test_message_names_the_first_elements_with_their_index() -> None:
    x = torch.zeros(3, 4, dtype=torch.bfloat16)
    y = x.clone()
    y[1, 2] = 1.0
    y[2, 0] = -2.0
    with pytest.raises(AssertionError) as e:
        assert_bitwise_equal(x, y)
    msg = str(e.value)
    assert msg.startswith("2 of 12 elements differ; first at index (1, 2): expected 0x3F80 (1.0 = 0x1p+0)")
    assert "at (2, 0): expected 0xC000" in msg


def test_shapes_dtypes_and_numpy() -> None:
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_bitwise_equal(torch.zeros(2), torch.zeros(3))
    with pytest.raises(AssertionError, match="dtypes differ"):
        assert_bitwise_equal(torch.zeros(2), torch.zeros(2, dtype=torch.float64))
    a = np.array([1.0, -0.0], dtype=ml_dtypes.bfloat16)
    assert_bitwise_equal(a, a.copy())
    with pytest.raises(AssertionError, match="expected 0x0000"):
        assert_bitwise_equal(a, np.array([1.0, 0.0], dtype=ml_dtypes.bfloat16))
    assert bits(torch.tensor([-0.0])).tolist() == [-(1 << 31)]  # the int32 view of 0x80000000
    assert_bitwise_equal(torch.zeros(4, 4).t(), torch.zeros(4, 4))  # logical elements, any layout
