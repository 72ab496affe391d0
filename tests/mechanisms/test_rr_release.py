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


@pytest.mark.parametrize(
    ("epsilon", "k", "value"), [(1.0, 2, 1), (0.5, 3, 0), (2.0, 5, 3), (0.0, 4, 2)]
)
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


@pytest.mark.parametrize(("epsilon", "k"), [(1.0, 1000), (3.0, 10**12), (0.0, 10**6)])
def test_many_categories_keep_the_truth_with_the_stated_probability(epsilon: float, k: int) -> None:
    """Large k: the kept share against e^ε/(e^ε + k − 1) (exact binomial test, two-sided at 1e-6),
    and the moved reports uniform on the other k − 1 (χ² over 8 equal-width bins of the shift)."""
    n = 200_000
    value = k // 3
    out = sdp.RandomizedResponse(epsilon, categories=k).release(np.full(n, value), rng=11)
    assert out.min() >= 0
    assert out.max() < k
    kept = int((out == value).sum())
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    assert stats.binomtest(kept, n, p).pvalue > FALSE_FAILURE
    shift = (out[out != value] - value) % k  # in {1, …, k − 1}, uniform
    bins = np.minimum((shift - 1) * 8 // (k - 1), 7)
    counts = np.bincount(bins, minlength=8)
    expected = np.array([((j + 1) * (k - 1) + 7) // 8 - (j * (k - 1) + 7) // 8 for j in range(8)])
    expected = expected / (k - 1) * shift.size
    assert float(((counts - expected) ** 2 / expected).sum()) < stats.chi2.isf(FALSE_FAILURE, 7)


def test_categories_near_the_int64_limit_wrap_without_overflow() -> None:
    k = 2**63 - 1
    out = sdp.RandomizedResponse(0.1, categories=k).release(np.full(1000, k - 1), rng=3)
    assert out.dtype == np.int64
    assert out.min() >= 0  # (v + R) mod k computed without overflowing
    assert (out != k - 1).mean() > 0.9


def test_an_epsilon_beyond_the_coin_range_uses_the_race() -> None:
    # ε = 2·10⁶ > _logistic.MAX_ABS_S: the race decides keep-or-move; P[move] < 10⁻⁸⁰⁰⁰⁰⁰.
    m = sdp.RandomizedResponse(2e6, categories=2**40)
    values = np.arange(0, 2**40, 2**30)
    assert np.array_equal(m.release(values, rng=4), values)


@pytest.mark.parametrize(("epsilon", "k"), [(1.0, 2), (0.7, 5), (2.0, 10**9)])
def test_the_race_path_has_the_same_law(
    epsilon: float, k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the coin range emptied, small ε goes through the race: kept share against
    e^ε/(e^ε + k − 1), exact binomial test at 1e-6."""
    from sharpdp.mechanisms import _logistic

    monkeypatch.setattr(_logistic, "MAX_ABS_S", -1.0)
    n = 100_000
    out = sdp.RandomizedResponse(epsilon, categories=k).release(np.full(n, 1), rng=8)
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    assert stats.binomtest(int((out == 1).sum()), n, p).pvalue > FALSE_FAILURE


@pytest.mark.parametrize(("epsilon", "k"), [(1.0, 2), (0.3, 50)])
def test_keep_coins_have_the_keep_probability(epsilon: float, k: int) -> None:
    """keeps(): True with e^ε/(e^ε + k − 1) (exact binomial test at 1e-6); bad sizes refused."""
    m = sdp.RandomizedResponse(epsilon, categories=k)
    n = 200_000
    kept = m.keeps(n, rng=6)
    assert kept.dtype == np.bool_
    assert kept.shape == (n,)
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    assert stats.binomtest(int(kept.sum()), n, p).pvalue > FALSE_FAILURE
    for bad in (-1, 2.5, "3"):
        with pytest.raises(sdp.InvalidParameter):
            m.keeps(bad, rng=0)  # type: ignore[arg-type]


def test_the_law_of_very_many_categories_is_refused_not_listed() -> None:
    # a list of 2**40 floats: the process was killed for memory; release() stays O(1) in k
    rr = sdp.RandomizedResponse(0.7, 2**40)
    with pytest.raises(sdp.InvalidParameter, match="at most 1048576 categories"):
        rr.probabilities(1)
    assert 0 <= int(rr.release(5, rng=0)) < 2**40
    assert len(sdp.RandomizedResponse(0.7, 2**20).probabilities(3)) == 2**20
