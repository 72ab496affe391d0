"""Smith's interval exponential mechanism: exact law, exact sampling, privacy by enumeration.

Expected laws are computed here by brute force over grid cells with exact rationals and mpmath
(score of cell t: −|#{x ≤ t} − qn|, coefficient ε/(2·m·max(q, 1 − q))), never from sharpdp.
Chi-square tests: false failure ≤ 1e-6 each (fixed seeds).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from sharpdp.mechanisms import Quantile

from ._gof import assert_law


def brute_law(data: list[int], cells: int, q: float, eps: float, m: int) -> list[mpmath.mpf]:
    """P[cell t] ∝ exp(c·u_t) by enumeration of the cells, in 50-digit arithmetic."""
    qf = Fraction(q)
    delta = m * max(qf, 1 - qf)
    with mpmath.workdps(50):
        c = mpmath.mpf(eps) / (2 * (mpmath.mpf(delta.numerator) / delta.denominator))
        qn = Fraction(q) * len(data)
        w = []
        for t in range(cells):
            rank = sum(1 for x in data if x <= t)
            u = -abs(rank - qn)
            w.append(mpmath.e ** (c * mpmath.mpf(u.numerator) / u.denominator))
        total = mpmath.fsum(w)
        return [x / total for x in w]


def as_input(data: list[int]) -> tuple[list[int], list[int]]:
    pos = sorted(set(data))
    return pos, [data.count(p) for p in pos]


CASES = [
    ([2, 2, 5, 9], 12, 0.5, 1.0, 1),
    ([0, 0, 12], 12, 0.25, 2.0, 2),
    ([3, 4, 4, 4, 4, 11], 12, 0.9, 0.5, 3),
    ([], 7, 0.5, 1.0, 1),
    ([1, 6], 8, 1.0, 3.0, 1),
]


@pytest.mark.parametrize(("data", "cells", "q", "eps", "m"), CASES)
def test_exact_law_matches_enumeration(
    data: list[int], cells: int, q: float, eps: float, m: int
) -> None:
    mech = Quantile(eps, q, bounds=(0.0, float(cells)), cells=cells, max_rows=m)
    law = mech.probabilities(*as_input(data))
    expected = [float(x) for x in brute_law(data, cells, q, eps, m)]
    np.testing.assert_allclose(law, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize(("data", "cells", "q", "eps", "m"), CASES)
def test_samples_follow_the_law(data: list[int], cells: int, q: float, eps: float, m: int) -> None:
    mech = Quantile(eps, q, bounds=(0.0, float(cells)), cells=cells, max_rows=m)
    law = {t: float(p) for t, p in enumerate(brute_law(data, cells, q, eps, m))}
    draws = mech.select_cell(*as_input(data), rng=11, size=30_000)
    assert_law(list(draws.tolist()), law)


def test_single_draws_and_midpoints() -> None:
    data = [2, 2, 5, 9]
    mech = Quantile(1.0, 0.5, bounds=(-6.0, 6.0), cells=12)
    rng = np.random.default_rng(12)
    cells = [mech.select_cell(*as_input(data), rng=rng) for _ in range(10_000)]
    law = {t: float(p) for t, p in enumerate(brute_law(data, 12, 0.5, 1.0, 1))}
    assert_law(cells, law)
    values = mech.select(*as_input(data), rng=3, size=100)
    assert set(np.round(values - 0.5, 9).tolist()) <= set(range(-6, 6))


def test_fine_grid_and_many_rows_sample_without_error() -> None:
    rng = np.random.default_rng(1)
    mech = Quantile(0.5, 0.3, bounds=(0.0, 700.0), cells=2**30, max_rows=2)
    pos, cnt = mech.aggregate(rng.gamma(3.0, 50.0, size=100_000))
    starts, lengths, probs = mech.interval_law(pos, cnt)
    assert probs.sum() == pytest.approx(1.0)
    t = mech.select_cell(pos, cnt, rng=2)
    j = int(np.searchsorted(starts, t, side="right")) - 1
    assert starts[j] <= t < starts[j] + lengths[j]


def neighbours(data: list[int], cells: int, m: int) -> list[list[int]]:
    """D plus one person with 1..m rows anywhere on the grid points 0..cells."""
    out = []
    for s in range(1, m + 1):
        for extra in itertools.combinations_with_replacement(range(cells + 1), s):
            out.append(sorted(data + list(extra)))
    return out


PRIVACY_CASES = [([1, 3, 3], 5, 0.5, 1.0, 1), ([0, 2, 4, 4, 5], 5, 0.3, 0.7, 2)]


@pytest.mark.parametrize(
    ("support", "data", "cells", "q", "eps", "m"),
    [
        *[("cells", *case) for case in [*PRIVACY_CASES, ([2], 4, 0.8, 2.0, 2)]],
        *[("points", *case) for case in [*PRIVACY_CASES, ([2, 2, 2], 4, 0.8, 2.0, 2)]],
    ],
)
def test_privacy_by_enumeration(
    support: str, data: list[int], cells: int, q: float, eps: float, m: int
) -> None:
    """Every neighbour (one person, ≤ m rows): |log ratio| ≤ ε and its spread (BR) ≤ ε."""
    law = brute_point_law if support == "points" else brute_law
    base = law(data, cells, q, eps, m)
    worst_spread = mpmath.mpf(0)
    with mpmath.workdps(50):
        for other in neighbours(data, cells, m):
            loss = [
                mpmath.log(p / p2) for p, p2 in zip(base, law(other, cells, q, eps, m), strict=True)
            ]
            assert max(abs(x) for x in loss) <= eps * (1 + 1e-12)
            spread = max(loss) - min(loss)
            assert spread <= eps * (1 + 1e-12)
            worst_spread = max(worst_spread, spread)
    assert worst_spread > 0.3 * eps  # the enumeration is not vacuous


def test_guarantee_is_bounded_range() -> None:
    mech = Quantile(0.8, 0.5, bounds=(0.0, 1.0), max_rows=3)
    assert mech.characterisation() == sdp.BoundedRange(0.8)
    assert sdp.convert(mech, sdp.BoundedRange) == sdp.BoundedRange(0.8)
    assert sdp.convert(mech, sdp.ZCDP).rho <= 0.8**2 / 8
    assert mech.epsilon(0.0) == pytest.approx(0.8)
    assert mech.sensitivity == 1.5
    assert mech.coefficient == pytest.approx(0.8 / 3.0)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"q": 1.5}, "q"),
        ({"bounds": (5.0, 1.0)}, "bounds"),
        ({"bounds": (0.0, float("inf"))}, "bounds"),
        ({"bounds": 3.0}, "bounds"),
        ({"bounds": np.array(3.0)}, "bounds"),  # a 0-d array: numpy's TypeError, before
        ({"cells": 0}, "cells"),
        ({"cells": 2**60}, "cells"),
        ({"max_rows": 0}, "max_rows"),
        ({"max_rows": 1.5}, "max_rows"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, object], name: str) -> None:
    args: dict[str, object] = {"epsilon": 1.0, "q": 0.5, "bounds": (0.0, 1.0)}
    args.update(kwargs)
    with pytest.raises(sdp.InvalidParameter, match=name):
        Quantile(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("positions", "counts", "name"),
    [
        ([3, 1], [1, 1], "positions"),
        ([1, 1], [1, 1], "positions"),
        ([1, 20], [1, 1], "positions"),
        ([-1], [1], "positions"),
        ([1.5], [1], "positions"),
        ([1, 2], [1, 0], "counts"),
        ([1, 2], [1], "same length"),
        ([[1]], [1], "positions"),
    ],
)
def test_bad_data_is_named(positions: object, counts: object, name: str) -> None:
    mech = Quantile(1.0, 0.5, bounds=(0.0, 1.0), cells=10)
    with pytest.raises(sdp.InvalidParameter, match=name):
        mech.select(positions, counts, rng=0)  # type: ignore[arg-type]


# -- support="points": the grid points, ties handled ------------------------------------------------


def brute_point_law(data: list[int], cells: int, q: float, eps: float, m: int) -> list[mpmath.mpf]:
    """P[point t] ∝ exp(−c·dist(qn, [#{x < t}, #{x ≤ t}])) over t = 0..cells, by enumeration."""
    qf = Fraction(q)
    delta = m * max(qf, 1 - qf)
    with mpmath.workdps(50):
        c = mpmath.mpf(eps) / (2 * (mpmath.mpf(delta.numerator) / delta.denominator))
        qn = qf * len(data)
        w = []
        for t in range(cells + 1):
            below = sum(1 for x in data if x < t)
            upto = sum(1 for x in data if x <= t)
            dist = max(Fraction(0), below - qn, qn - upto)
            w.append(mpmath.e ** (-c * mpmath.mpf(dist.numerator) / dist.denominator))
        total = mpmath.fsum(w)
        return [x / total for x in w]


POINT_CASES = [
    *CASES,
    ([4, 4, 4, 4, 4, 4], 10, 0.5, 1.0, 1),  # a constant column
    ([0, 0, 0, 0, 10, 10, 10, 10, 10, 10], 10, 0.5, 2.0, 1),  # two ties, the median in one
    ([3, 3, 7], 9, 0.0, 1.5, 2),
]


@pytest.mark.parametrize(("data", "cells", "q", "eps", "m"), POINT_CASES)
def test_point_law_matches_enumeration(
    data: list[int], cells: int, q: float, eps: float, m: int
) -> None:
    mech = Quantile(eps, q, bounds=(0.0, float(cells)), cells=cells, max_rows=m, support="points")
    assert mech.outcomes == cells + 1
    law = mech.probabilities(*as_input(data))
    expected = [float(x) for x in brute_point_law(data, cells, q, eps, m)]
    np.testing.assert_allclose(law, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize(("data", "cells", "q", "eps", "m"), POINT_CASES)
def test_point_samples_follow_the_law(
    data: list[int], cells: int, q: float, eps: float, m: int
) -> None:
    mech = Quantile(eps, q, bounds=(0.0, float(cells)), cells=cells, max_rows=m, support="points")
    law = {t: float(p) for t, p in enumerate(brute_point_law(data, cells, q, eps, m))}
    draws = mech.select_cell(*as_input(data), rng=13, size=30_000)
    assert_law(list(draws.tolist()), law)
    single = [mech.select_cell(*as_input(data), rng=seed) for seed in range(2_000)]
    assert_law(single, law)


def test_points_release_the_tied_value_where_cells_cannot() -> None:
    """A constant column: the points release its value with probability 1 − O(e^{−c·n/2}); Smith's
    cells spread over every cell whatever ε (the defect the points fix), by the exact laws."""
    data = [7] * 40
    points = Quantile(1.0, 0.5, bounds=(0.0, 20.0), cells=20, support="points")
    assert points.select(*as_input(data), rng=0) == 7.0
    law = points.probabilities(*as_input(data))
    # every other point scores −n/2 = −20 with c = 1: mass 20·e^{−20} in all
    assert 1.0 - law[7] == pytest.approx(20 * math.exp(-20) / (1 + 20 * math.exp(-20)), rel=1e-9)
    cells = Quantile(1.0, 0.5, bounds=(0.0, 20.0), cells=20, support="cells")
    np.testing.assert_allclose(
        cells.probabilities(*as_input(data)), np.full(20, 1 / 20), rtol=1e-12
    )


def test_point_values_are_grid_points() -> None:
    mech = Quantile(1.0, 0.5, bounds=(-6.0, 6.0), cells=12, support="points")
    values = mech.select(*as_input([2, 2, 5, 9]), rng=3, size=200)
    assert set(values.tolist()) <= {float(v) for v in range(-6, 7)}
    assert mech.value_of(12) == 6.0
    assert mech.value_of(0) == -6.0


def test_point_rank_accuracy_has_no_tie_term() -> None:
    """max_t u_t = 0 on any data (the points' rank ranges tile [0, n]): checked by enumeration on
    random tied data sets, so the accuracy bound needs no d*."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        cells = int(rng.integers(1, 12))
        data = rng.integers(0, cells + 1, size=int(rng.integers(1, 15))).tolist()
        q = float(rng.choice([0.0, 0.1, 0.5, 0.77, 1.0]))
        qn = Fraction(q) * len(data)
        best = min(
            max(
                Fraction(0),
                sum(x < t for x in data) - qn,
                qn - sum(x <= t for x in data),
            )
            for t in range(cells + 1)
        )
        assert best == 0


def test_fine_grid_points_sample_without_error() -> None:
    rng = np.random.default_rng(1)
    mech = Quantile(0.5, 0.3, bounds=(0.0, 700.0), cells=2**30, max_rows=2, support="points")
    pos, cnt = mech.aggregate(np.round(rng.gamma(3.0, 50.0, size=100_000)))
    starts, lengths, probs = mech.interval_law(pos, cnt)
    assert probs.sum() == pytest.approx(1.0)
    assert int(lengths.sum()) == 2**30 + 1
    t = mech.select_cell(pos, cnt, rng=2)
    j = int(np.searchsorted(starts, t, side="right")) - 1
    assert starts[j] <= t < starts[j] + lengths[j]


def test_bad_support_is_named() -> None:
    with pytest.raises(sdp.InvalidParameter, match="support"):
        Quantile(1.0, 0.5, bounds=(0.0, 1.0), support="intervals")


@given(
    cells=st.integers(1, 9),
    raw=st.lists(st.integers(0, 9), max_size=12),
    q=st.floats(0.0, 1.0),
    eps=st.floats(0.01, 5.0),
    m=st.integers(1, 3),
    support=st.sampled_from(["cells", "points"]),
)
def test_any_small_data_set_has_the_enumerated_law(
    cells: int, raw: list[int], q: float, eps: float, m: int, support: str
) -> None:
    data = [min(x, cells) for x in raw]
    mech = Quantile(eps, q, bounds=(0.0, float(cells)), cells=cells, max_rows=m, support=support)
    brute = brute_point_law if support == "points" else brute_law
    expected = [float(x) for x in brute(data, cells, q, eps, m)]
    np.testing.assert_allclose(mech.probabilities(*as_input(data)), expected, rtol=1e-11, atol=0)
    t = mech.select_cell(*as_input(data), rng=0)
    assert expected[t] > 0
