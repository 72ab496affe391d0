"""``delta_bounds``: valid upper bounds of a composition's privacy profile at many ε at once.

The conversion to GDP reads a profile at hundreds of ε; these bounds let it ask the sharp,
per-point ``delta`` only where the answer depends on it. Every bound must hold the exact profile,
computed here independently: mpmath quadrature of the composed loss law, or exact sums for
randomized response (the pair of binomial laws), with a Laplace pair's closed-form profile.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpmath import mp

import sharpdp as sdp
from reference import (
    laplace_gaussian_delta,
    laplace_k_fold_delta,
    laplace_pair_delta,
    least_gdp_mu,
    rr_gaussian_delta,
)
from sharpdp.accounting.pld import compose_pld


def _binary_rr_delta(eps0: float, n: int, epsilon: float) -> float:
    """δ(ε) of n binary randomized responses of ε0: the loss is ε0(n − 2j) with
    j ~ Binomial(n, 1/(1 + e^ε0)), so δ(ε) = Σ_j P(j)(1 − e^{ε − ε0(n − 2j)})_+ (60 digits)."""
    with mp.workdps(60):
        p = 1 / (1 + mp.e ** mp.mpf(eps0))
        return float(
            mp.fsum(
                mp.binomial(n, j)
                * p**j
                * (1 - p) ** (n - j)
                * max(mp.mpf(0), 1 - mp.e ** (mp.mpf(epsilon) - eps0 * (n - 2 * j)))
                for j in range(n + 1)
            )
        )


def _laplace_rr_delta(lap_eps0: float, rr_eps0: float, n: int, epsilon: float) -> mp.mpf:
    """δ(ε) of one Laplace (ε0 = Δ/b) and n binary randomized responses composed: the RR loss
    is an atom ε0(n − 2j) (j ~ Binomial(n, 1/(1 + e^ε0))), and δ(ε) = E[δ_Lap(ε − L_RR)] with the
    Laplace pair's closed-form profile at any real argument (40 digits)."""
    with mp.workdps(40):
        p = 1 / (1 + mp.e ** mp.mpf(rr_eps0))
        e = mp.mpf(epsilon)
        return mp.fsum(
            mp.binomial(n, j)
            * p**j
            * (1 - p) ** (n - j)
            * laplace_pair_delta(e - rr_eps0 * (n - 2 * j), lap_eps0)
            for j in range(n + 1)
        )


def _check(bounds: np.ndarray, exact: list[float], sharp_to: float) -> float:
    """Every bound at or above the exact δ (up to its 1e-13 rounding), and within ``sharp_to``
    relative of it; returns the largest relative excess."""
    worst = 0.0
    for b, x in zip(bounds, exact, strict=True):
        assert b >= x * (1 - 1e-13), (b, x)
        if x > 1e-300:
            worst = max(worst, b / x - 1)
            assert b <= x * (1 + sharp_to) + 1e-300, (b, x)
    return worst


def test_a_single_mechanism_offers_none_and_the_empty_composition_zeros() -> None:
    assert sdp.Laplace(1.0).delta_bounds(np.array([0.0, 1.0])) is None
    assert list(sdp.compose([]).delta_bounds(np.array([0.0, 2.0]))) == [0.0, 0.0]


def test_bad_points_are_refused() -> None:
    """By every guarantee, offering bounds or not, before anything is computed."""
    for g in (sdp.compose([(sdp.Laplace(2.0), 3)]), sdp.Laplace(1.0)):
        for bad in ([-0.1], [math.nan], [0.5, -1.0], -np.inf):
            with pytest.raises(sdp.InvalidParameter, match=r">= 0 \(inf allowed\)"):
                g.delta_bounds(np.array(bad))
        for junk in (["a"], [True, False], [1 + 2j], None):
            with pytest.raises(sdp.InvalidParameter, match="array of real numbers"):
                g.delta_bounds(junk)


def test_k_fold_laplace_bounds_hold_the_quadrature() -> None:
    """The inversion with the first binomial terms in closed form (one Laplace group), from a
    few plans for all points: within 1e-7 of the exact profile (measured 8e-10 on 10 Laplace
    mechanisms over 257 points)."""
    c = sdp.compose([(sdp.Laplace(3.0), 6)])
    eps = np.array([0.0, 0.35, 0.9, 1.6])
    exact = [float(laplace_k_fold_delta(1 / 3, 6, float(e))) for e in eps]
    _check(c.delta_bounds(eps), exact, 1e-7)


def test_laplace_and_gaussian_bounds_hold_the_quadrature() -> None:
    """The inversion of the whole law (a density throughout)."""
    c = sdp.compose([(sdp.Laplace(2.0), 2), (sdp.Gaussian(1.0), 1)])
    eps = np.array([0.0, 0.8, 2.5])
    exact = [float(laplace_gaussian_delta(0.5, 2, 1.0, float(e))) for e in eps]
    _check(c.delta_bounds(eps), exact, 1e-7)


def test_randomized_response_and_gaussian_bounds_hold_the_exact_sum() -> None:
    c = sdp.compose([(sdp.RandomizedResponse(0.3), 5), (sdp.Gaussian(1.0), 1)])
    eps = np.linspace(0.0, 6.0, 41)
    exact = [float(rr_gaussian_delta(0.3, 5, 1.0, float(e))) for e in eps]
    _check(c.delta_bounds(eps), exact, 1e-7)


def test_the_pld_grids_bound_the_profile_everywhere() -> None:
    """Each pessimistic grid bounds the exact profile at every ε, not only at the ε it was
    refined for: 20 randomized responses, one grid made for ε = 0.4, read at 81 points from 0
    to the largest loss (exact binomial sums). No grid yet: no information, 1, except at the
    largest loss itself (10 = 20·0.5, where δ = 0), bounded by its float margin."""
    r = compose_pld([(sdp.RandomizedResponse(0.5), 20)])
    eps = np.linspace(0.0, 10.0, 81)
    first = r.delta_upper_bounds(eps)
    assert np.all(first[:-1] == 1.0)
    assert 0.0 < first[-1] <= 2e-14
    r.delta(0.4)
    bounds = r.delta_upper_bounds(eps)
    exact = [_binary_rr_delta(0.5, 20, float(e)) for e in eps]
    assert all(b >= x * (1 - 1e-13) for b, x in zip(bounds, exact, strict=True))
    # sharp near the ε the grid was made for (the certified accuracy there, 1e-4)
    near = np.abs(eps - 0.4) < 0.2
    assert np.all(bounds[near] <= np.array(exact)[near] * (1 + 1e-4))


def test_the_pld_grids_of_a_density_bound_the_quadrature() -> None:
    """The same on an FFT-composed grid (three Laplace mechanisms: no atoms summed apart), one
    grid made for ε = 0.5, against quadrature of the 3-fold Laplace law."""
    r = compose_pld([(sdp.Laplace(3.0), 3)])
    r.delta(0.5)
    eps = np.array([0.0, 0.45, 0.55, 0.9])
    bounds = r.delta_upper_bounds(eps)
    exact = [float(laplace_k_fold_delta(1 / 3, 3, float(e))) for e in eps]
    assert all(b >= x * (1 - 1e-13) for b, x in zip(bounds, exact, strict=True))
    assert all(b <= x * (1 + 1e-4) for b, x in zip(bounds[1:3], exact[1:3], strict=True))


MIX = st.lists(
    st.tuples(
        st.one_of(
            st.builds(sdp.Laplace, st.floats(0.5, 10.0)),
            st.builds(sdp.RandomizedResponse, st.floats(0.05, 1.0)),
            st.builds(sdp.Exponential, st.floats(0.05, 1.0)),
        ),
        st.integers(1, 4),
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=20, deadline=None)
@given(items=MIX, fractions=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8))
def test_bounds_never_fall_below_the_optimistic_pld(
    items: list[tuple[sdp.Guarantee, int]], fractions: list[float]
) -> None:
    """Any mix (inversion, PLD or none): each bound lies in [0, 1] and at or above the optimistic
    side of a PLD composition (a lower bound of the exact profile at every ε)."""
    c = sdp.compose(items)
    top = c.renyi(math.inf)
    eps = np.array([f * top for f in fractions])
    bounds = c.delta_bounds(eps)
    if bounds is None:
        return
    assert bounds.shape == eps.shape
    assert np.all((bounds >= 0.0) & (bounds <= 1.0))
    _, optimistic = compose_pld(items).plds(0.01)  # one optimistic grid: a lower bound anywhere
    for e, b in zip(eps, bounds, strict=True):
        assert b >= optimistic.delta(float(e)), (e, b)


def test_gdp_of_a_composition_is_the_least_mu_of_its_exact_profile() -> None:
    """One Laplace and four randomized responses (the PLD's grids; the conversion takes the
    bounds first and the sharp δ where the answer depends on it): never below the least μ of
    the exact profile, and within 1e-5 of it (measured 1.2e-6, as when every point took the
    sharp δ: the PLD's δ is certified to 1e-4 relative; 3.8 s then, 0.9 s now)."""
    lap, rr, n = 0.7, 0.2, 4
    got = sdp.convert(
        sdp.compose([(sdp.Laplace(1 / lap), 1), (sdp.RandomizedResponse(rr), n)]), sdp.GDP
    ).mu
    least = least_gdp_mu(lambda e: _laplace_rr_delta(lap, rr, n, float(e)), lap + n * rr)
    assert least <= got <= least * (1 + 1e-5)


def test_delta_at_the_largest_loss_is_bounded_without_grids() -> None:
    """At ε within the float margin of the largest finite loss t, the PLD reports
    δ ≤ p∞ + (t − ε) (1 − e^{−x} ≤ x) instead of refining grids that cannot resolve the top atoms
    (an exponential mechanism and a Laplace mechanism at ε = t took ~40 s and gave 5.2e-15).
    Checked against the exact profile of two randomized responses, whose top atom at 2ε0 has
    mass p² (p = e^{ε0}/(1 + e^{ε0})): δ(ε) = p²(1 − e^{ε − 2ε0}) for 0 ≤ ε ≤ 2ε0, in 40 digits."""
    eps0 = 0.7
    result = compose_pld([(sdp.RandomizedResponse(eps0), 2)])
    top = 2 * eps0  # exact in floats (a doubling)
    with mp.workdps(40):
        p = mp.e ** mp.mpf(eps0) / (1 + mp.e ** mp.mpf(eps0))
        for e in (
            math.nextafter(top, 0.0),
            top - 2e-15,
            top,
            math.nextafter(top, 3.0),
            top + 1e-9,
        ):
            exact = p**2 * (1 - mp.e ** (mp.mpf(e) - top)) if e < top else mp.mpf(0)
            lo, hi = result.delta_bracket(e)
            assert lo <= exact <= hi, (e, lo, hi, exact)
            assert hi <= 1e-14
            bound = result.delta_upper_bounds(np.array([e]))[0]
            assert exact <= bound <= 1e-14
    # with mass at +∞ (three (0.5, 1e-7)-DP items): at and above the top loss δ = P[L = ∞]
    # = 1 − (1 − 1e-7)³ exactly (1e-7 as the float it is), which the bracket must hold
    result = compose_pld([(sdp.ApproxDP(0.5, 1e-7), 3), (sdp.RandomizedResponse(eps0), 2)])
    with mp.workdps(40):
        p_inf = 1 - (1 - mp.mpf(1e-7)) ** 3
        for e in (math.inf, 5.0, result._top_loss()[1]):  # type: ignore[index]
            lo, hi = result.delta_bracket(e)
            assert lo <= p_inf <= hi, (e, lo, hi)
            assert hi <= p_inf * (1 + 1e-13)
    # the exponential and Laplace mix that used to refine for ~40 s, at its top loss
    items = [(sdp.Exponential(0.45198666297669143), 1), (sdp.Laplace(1 / 1.5990240684169157), 1)]
    at = sdp.compose(items).renyi(math.inf)
    lo, hi = compose_pld(items).delta_bracket(at)
    assert lo == 0.0
    assert 0.0 <= hi <= 1e-14
    bounds = sdp.compose(items).delta_bounds(np.array([0.5, at]))
    assert bounds is not None
    assert 0.4 < bounds[0] < 0.5  # (exact 0.42766...: a grid still answers below the top)
    assert bounds[1] <= 1e-14
