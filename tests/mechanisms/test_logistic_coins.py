"""Exact coins of probability 1/(1 + c·e^{−s}): digits against mpmath, the tie path, the law.

Expected values are independent of sharpdp: p's base-2^63 digits from mpmath at 800 significant
digits (p = 1 − 3e^{−700} needs over 304 of them before its first non-9); the coin's frequency
against p by an exact binomial test (two-sided, false-failure rate 1e-6 per case, fixed seeds).
"""

from __future__ import annotations

from typing import Any

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from sharpdp.mechanisms import _logistic

FALSE_FAILURE = 1e-6
CASES = [(1.0, 1), (-1.0, 1), (0.1, 999), (2.5, 7), (-30.0, 1), (700.0, 3), (1e-9, 1)]


def mp_p(s: float, c: int) -> mp.mpf:
    with mp.workdps(800):
        return 1 / (1 + c * mp.exp(-mp.mpf(s)))


def mp_digit(s: float, c: int, j: int) -> int:
    with mp.workdps(800):
        return int(mp.floor(mp_p(s, c) * mp.mpf(2) ** (63 * (j + 1)))) % 2**63


@pytest.mark.parametrize(("s", "c"), CASES)
def test_digits_are_those_of_p(s: float, c: int) -> None:
    for j in range(4):
        assert _logistic.digit(s, c, j) == mp_digit(s, c, j)


class Words:
    """A stand-in generator that hands out chosen words (as ``integers`` over int64 would)."""

    def __init__(self, batches: list[list[int]]) -> None:
        self.batches = batches

    def integers(self, low: int, high: int, size: int, dtype: Any) -> np.ndarray:
        batch = self.batches.pop(0)
        assert (low, high, size) == (-(2**63), 2**63, len(batch))
        return np.array(batch, dtype=np.int64)


@pytest.mark.parametrize(("s", "c"), [(1.0, 1), (0.1, 999), (-30.0, 1)])
def test_a_word_equal_to_a_digit_is_decided_by_the_next_digits(s: float, c: int) -> None:
    d0, d1, d2 = (mp_digit(s, c, j) for j in range(3))
    assert 0 < d1 < 2**63 - 1  # (so d1 ± 1 are words)
    # slot 0: below d0 (1); slot 1: above (0); slots 2–4 tie on d0, then below/above/tie on d1;
    # slot 4 ties again and is decided by d2 from above (0)
    rng = Words([[d0 - 1 if d0 else 0, d0 + 1, d0, d0, d0], [d1 - 1, d1 + 1, d1], [d2 + 1]])
    out = _logistic.coins(rng, s, c, 5)  # type: ignore[arg-type]
    expected = [d0 > 0, False, True, False, False]
    assert out.tolist() == expected
    assert rng.batches == []  # exactly the words the comparison needs


@pytest.mark.parametrize(("s", "c"), [*CASES, (0.0, 1), (0.0, 4)])
def test_coin_frequency_matches_p(s: float, c: int) -> None:
    n = 400_000
    heads = int(_logistic.coins(np.random.default_rng(7), s, c, n).sum())
    p = float(mp_p(s, c))
    assert stats.binomtest(heads, n, p).pvalue > FALSE_FAILURE


@pytest.mark.parametrize(("s", "c"), [(1e7, 1), (float("nan"), 1), (float("inf"), 1), (1.0, 0)])
def test_out_of_range_parameters_are_refused(s: float, c: int) -> None:
    with pytest.raises(ValueError, match="coins need"):
        _logistic.coins(np.random.default_rng(0), s, c, 3)
