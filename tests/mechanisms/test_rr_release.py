"""RandomizedResponse.release: the empirical law against the closed form, shapes and bad input.

Expected law (independent of sharpdp): the true category with probability e^ε/(e^ε + k − 1), each
other one with 1/(e^ε + k − 1). Chi-square tests with fixed seeds, false-failure rate ≤ 1e-6 each.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import sharpdp as sdp

FALSE_FAILURE = 1e-6


@pytest.mark.parametrize(("epsilon", "k", "value"), [(1.0, 2, 1), (0.5, 3, 0), (2.0, 5, 3), (0.0, 4, 2)])
def test_reports_have_the_randomized_response_law(epsilon: float, k: int, value: int) -> None:
    n = 200_000
    out = sdp.RandomizedResponse(epsilon, categories=k).release(np.full(n, value), rng=5)
    counts = np.bincount(out, minlength=k)
    denom = math.exp(epsilon) + k - 1
    expected = np.array([math.exp(epsilon) if j == value else 1.0 for j in range(k)]) / denom * n
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert stat < stats.chi2.isf(FALSE_FAILURE, k - 1)


def test_each_entry_uses_its_own_true_category() -> None:
    # With ε large the report is almost surely the truth: P[any of 1000 flips] ≤ 1000·4e-18.
    m = sdp.RandomizedResponse(40.0, categories=7)
    values = np.random.default_rng(0).integers(0, 7, size=(10, 100))
    assert np.array_equal(m.release(values, rng=1), values)


def test_shapes_and_types() -> None:
    m = sdp.RandomizedResponse(1.0, categories=3)
    one = m.release(2, rng=0)
    assert isinstance(one, int)
    assert 0 <= one < 3
    assert m.release(np.int64(1), rng=0) in (0, 1, 2)
    arr = m.release([[0, 1], [2, 2]], rng=0)
    assert arr.shape == (2, 2)
    assert arr.dtype == np.int64
    assert m.release([], rng=0).shape == (0,)
    assert m.release(1, rng=9) == m.release(1, rng=9)  # reproducible from the seed


@pytest.mark.parametrize("value", [3, -1, 1.5, True, "a", [0, 5], [0.0, 1.0], None])
def test_bad_values_raise(value: object) -> None:
    with pytest.raises(sdp.InvalidParameter):
        sdp.RandomizedResponse(1.0, categories=3).release(value, rng=0)
