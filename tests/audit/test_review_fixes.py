"""Audit defects found by review, each checked against a hand computation."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

import sharpdp as sdp


def test_check_tests_an_approx_claim_at_its_own_epsilon_and_delta() -> None:
    # P = (0.02, 0.49, 0.49), Q = (0, 0.5, 0.5): δ(1) = 0.02 (P's mass where Q has none; the
    # other terms (0.49 − e·0.5)₊ are 0). A claim of δ = 0.015 at ε = 1 lies between the grids'
    # points and passed; so did (3, 0.0199) (δ(ε) = 0.02 for every ε) and, for the pair
    # (1, 0) vs (½, ½), (1, 0.49) where δ(1) = 1 − e/2 = 0.5
    r = sdp.audit.exact_pair([0.02, 0.49, 0.49], [0.0, 0.5, 0.5])
    assert r.delta(1.0) == pytest.approx(0.02, rel=1e-12)
    assert not r.check(sdp.ApproxDP(1.0, 0.015)).ok
    assert not r.check(sdp.ApproxDP(3.0, 0.0199)).ok
    assert r.check(sdp.ApproxDP(1.0, 0.02)).ok
    assert not sdp.audit.exact_pair([1.0, 0.0], [0.5, 0.5]).check(sdp.ApproxDP(1.0, 0.49)).ok


def test_check_tests_an_rdp_claim_at_its_own_orders() -> None:
    # binary randomized response at ε = 1: D_5 = log(p⁵q⁻⁴ + q⁵p⁻⁴)/4, p = e/(1+e), q = 1 − p
    with mp.workdps(40):
        p = mp.e / (1 + mp.e)
        q = 1 - p
        d5 = float(mp.log(p**5 / q**4 + q**5 / p**4) / 4)
    r = sdp.audit.exact(sdp.RandomizedResponse(1.0, 2), 0, 1)
    assert r.renyi(5.0) == pytest.approx(d5, rel=1e-12)
    assert not r.check(sdp.RDP((5.0,), (d5 * (1 - 1e-3),))).ok  # (order 5 is not in ORDERS)
    assert r.check(sdp.RDP((5.0,), (d5 * (1 + 1e-9),))).ok


def test_score_vectors_more_than_the_sensitivity_apart_are_not_neighbours() -> None:
    # 2⁵² and 2⁵² + 3 are 3 apart (exact floats); a slack of 4 ulps of the scores' magnitude
    # (2 at 2⁵²) accepted them, and check() then reported a violation of a correct mechanism
    with pytest.raises(sdp.InvalidParameter, match="not neighbours"):
        sdp.audit.exact(sdp.Exponential(1.0), [2.0**52, 0.0], [2.0**52 + 3, 0.0])
    m = sdp.Exponential(1.0, monotonic=True)
    with pytest.raises(sdp.InvalidParameter, match="not neighbours"):
        sdp.audit.exact(m, [1e6, 0.0], [1e6 + 1 + 4e-10, 0.0])
    assert sdp.audit.exact(sdp.Exponential(1.0), [0.1, 0.0], [1.1, 0.0]).check().ok


def test_epsilon_of_a_discrete_gaussian_report_at_tiny_delta() -> None:
    # its law's tail is summed as a bound, so δ(ε) > 0 at every ε: the bisection raised
    r = sdp.audit.exact(sdp.DiscreteGaussian(1.0), 0, 1)
    assert r.epsilon(0.0) == math.inf
    assert r.check(r).ok


def test_exact_randomized_response_over_too_many_categories_is_refused() -> None:
    with pytest.raises(sdp.InvalidParameter, match="at most"):
        sdp.audit.exact(sdp.RandomizedResponse(1.0, 2**40), 0, 1)  # (asked for 8 TiB)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (([11], 10, 0.05), "k"),
        (([-1], 10, 0.05), "k"),
        (([1], 10, 1.5), "level"),
        (([1], 0, 0.1), "n"),
    ],
)
def test_clopper_pearson_refuses_bad_input(args: tuple[object, int, float], name: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match=name):  # (NaN bounds before)
        sdp.audit.clopper_pearson(*args)  # type: ignore[arg-type]


def test_local_helpers_refuse_what_is_not_reports() -> None:
    # (TypeError: 'NoneType' object is not iterable; AttributeError: 'list' has no 'categories')
    with pytest.raises(sdp.InvalidParameter, match="reports"):
        sdp.local.combine(None)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="reports"):
        sdp.local.support_counts([0, 1])  # type: ignore[arg-type]


def test_sample_names_outputs_it_cannot_count() -> None:
    import numpy as np

    def grids(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.zeros((n, 2, 2), dtype=int) + x  # 3-D: rows are lists (TypeError before)

    with pytest.raises(sdp.InvalidParameter, match="hashable"):
        sdp.audit.sample(grids, 0, 1, 1000, rng=0)

    def infinite(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(n, np.inf)  # (bins with NaN edges and a RuntimeWarning before)

    with pytest.raises(sdp.InvalidParameter, match="finite"):
        sdp.audit.sample(infinite, 0, 1, 100, bins=3, rng=0)
