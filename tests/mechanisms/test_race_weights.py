"""The exact race with multiplicities (log-weights) and the fast filtering pass.

Expected laws are computed here in mpmath: P[r] = n_r e^{a_r} / Σ_s n_s e^{a_s}. Each chi-square
test has false-failure probability ≤ 1e-6 (fixed seeds).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

import sharpdp as sdp
from sharpdp.mechanisms import _race

from ._gof import assert_law


def weighted_law(a: list[Fraction], n: list[int]) -> dict[object, float]:
    with mpmath.workdps(50):
        w = [
            n_i * mpmath.e ** (mpmath.mpf(x.numerator) / x.denominator)
            for x, n_i in zip(a, n, strict=True)
        ]
        total = mpmath.fsum(w)
        return {i: float(x / total) for i, x in enumerate(w)}


def offsets(a: list[Fraction], n: list[int]) -> _race.Offsets:
    return _race.Offsets(
        np.array([float(x) for x in a]), None, lambda i: a[i], 0.0, np.array(n, dtype=np.int64)
    )


@pytest.mark.parametrize(
    ("a", "n"),
    [
        ([Fraction(0), Fraction(-1, 2), Fraction(-1)], [1, 3, 7]),
        ([Fraction(0), Fraction(0), Fraction(0)], [5, 5, 2]),  # ties in offset and weight
        ([Fraction(0), Fraction(-42), Fraction(-41)], [1, 2**60, 2**59]),  # huge multiplicities
        ([Fraction(-3), Fraction(0)], [2**62, 1]),
    ],
)
def test_race_with_multiplicities_has_the_weighted_law(a: list[Fraction], n: list[int]) -> None:
    draws = _race.race(offsets(a, n), 1, "gumbel", np.random.default_rng(5), 30_000)[:, 0]
    assert_law(list(draws.tolist()), weighted_law(a, n))


def test_single_draw_streaming_path_with_multiplicities() -> None:
    a, n = [Fraction(0), Fraction(-1, 3), Fraction(-2)], [2, 2**40, 9]
    rng = np.random.default_rng(6)
    draws = [int(_race.race(offsets(a, n), 1, "gumbel", rng, None)[0]) for _ in range(20_000)]
    assert_law(draws, weighted_law(a, n))


def test_decimal_path_with_multiplicities(monkeypatch: pytest.MonkeyPatch) -> None:
    """Absurdly wide float intervals: every draw is decided by the decimal refinement."""
    monkeypatch.setattr(_race, "_TAU", 0.25)
    a, n = [Fraction(0), Fraction(-1, 2), Fraction(1, 3) - 1], [3, 1, 2**50]
    draws = _race.race(offsets(a, n), 1, "gumbel", np.random.default_rng(7), 3_000)[:, 0]
    assert_law(list(draws.tolist()), weighted_law(a, n))


def test_multiplicities_are_gumbel_only() -> None:
    with pytest.raises(ValueError, match="Gumbel"):
        _race.race(offsets([Fraction(0)], [2]), 1, "exponential", np.random.default_rng(0), None)


def test_fast_filtering_pass_keeps_the_law() -> None:
    """One draw at a time over 400 candidates (the filtering path) against the softmax law."""
    q = np.linspace(0.0, 12.0, 400)
    em, rng = sdp.Exponential(1.0), np.random.default_rng(8)
    draws = [em.select(q, rng=rng) for _ in range(20_000)]
    law = weighted_law([Fraction(float(x)) / 2 - 6 for x in q], [1] * q.size)
    assert_law(draws, law)


def test_fast_filtering_pass_over_blocks_with_excluded_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The filtering pass over more than one block, with every 7th candidate excluded.

    Excluded candidates are dropped before the race, so at the real block size (2²⁰) the 2²⁰ + 1000
    scores leave ~900k live candidates: one block of the race, ~40 ms a draw. A few draws there
    check the index map and that only the four top candidates win. The law is checked with the
    block monkeypatched to 1024: the 1734 live candidates take two blocks of the race, and the four
    top ones sit at live positions 3, 100 | B − 2, B + 5, on both sides of its boundary."""
    n = _race._BLOCK + 1000
    q = np.full(n, -50.0)
    q[::7] = -np.inf
    live = [3, 100, _race._BLOCK - 2, _race._BLOCK + 5]
    q[live] = [0.0, 1.0, 2.0, 0.5]
    em, rng = sdp.Exponential(2.0), np.random.default_rng(9)
    draws = [em.select(q, rng=rng) for _ in range(10)]
    assert set(draws) <= set(live)
    top = sdp.TopK(2, 2.0).select(q, rng=10)
    assert set(top) <= set(live)

    monkeypatch.setattr(_race, "_BLOCK", 1024)
    n = _race._BLOCK + 1000
    q = np.full(n, -50.0)
    q[::7] = -np.inf
    index = np.flatnonzero(np.isfinite(q))  # live position -> index
    assert index.size > _race._BLOCK
    live = [int(index[p]) for p in (3, 100, _race._BLOCK - 2, _race._BLOCK + 5)]
    q[live] = [0.0, 1.0, 2.0, 0.5]
    em, rng = sdp.Exponential(2.0), np.random.default_rng(9)
    draws = [em.select(q, rng=rng) for _ in range(1_000)]
    assert set(draws) <= set(live)
    # c = ε/(2Δ) = 1: offsets q − max q = q − 2
    law = weighted_law([Fraction(float(q[i])) - 2 for i in index], [1] * index.size)
    assert_law(draws, {int(index[p]): v for p, v in law.items()})
    top = sdp.TopK(2, 2.0).select(q, rng=10)
    assert set(top) <= set(live)
