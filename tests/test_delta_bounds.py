"""``delta_bounds``: valid upper bounds of a composition's privacy profile at many ε at once.

The conversion to GDP reads a profile at hundreds of ε; these bounds let it ask the sharp,
per-point ``delta`` only where the answer depends on it. Every bound must hold the exact profile,
computed here independently: mpmath quadrature of the composed loss law, or exact sums for
randomized response (the pair of binomial laws), with a Laplace pair's closed-form profile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

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
    to the largest loss (exact binomial sums). No grid yet: only δ(ε) ≤ 10 − ε, from the largest
    loss 10 = 20·0.5 (where δ = 0, bounded by its float margin)."""
    r = compose_pld([(sdp.RandomizedResponse(0.5), 20)])
    eps = np.linspace(0.0, 10.0, 81)
    first = r.delta_upper_bounds(eps)
    assert np.allclose(first[:-1], np.minimum(1.0, 10.0 - eps[:-1]), rtol=0.0, atol=1e-12)
    assert 0.0 < first[-1] <= 2e-14
    assert all(b >= _binary_rr_delta(0.5, 20, float(e)) for b, e in zip(first, eps, strict=True))
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
        # with a Gaussian item (no largest loss) far out in the tail, where the Chernoff bound
        # on the finite part is below e^{-700}: δ is p∞ plus that bound, p∞ again as a bracket
        result = compose_pld([(sdp.ApproxDP(0.5, 1e-7), 3), (sdp.Gaussian(1.0), 1)])
        lo, hi = result.delta_bracket(60.0)
        assert lo <= p_inf <= hi, (lo, hi)
        assert hi <= p_inf * (1 + 1e-13)
        assert result.lower_delta(60.0) <= p_inf
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


def _br_pair_delta(x: object, eta: float) -> mp.mpf:
    """δ at any real x of the bounded-range pair, from its loss density p(l) = C·e^{l/2} on
    (−η, η), C = e^{η/2}/(2(e^η − 1)): ∫_{max(x, −η)}^{η} (1 − e^{x − l}) p(l) dl in closed form
    (for x ≤ −η it is 1 − e^x: Q has mass 1)."""
    x, e = mp.mpf(x), mp.mpf(eta)
    if x >= e:
        return mp.mpf(0)
    a = max(x, -e)
    c = mp.e ** (e / 2) / (2 * mp.expm1(e))
    return (
        2
        * c
        * ((mp.e ** (e / 2) - mp.e ** (a / 2)) + mp.e**x * (mp.e ** (-e / 2) - mp.e ** (-a / 2)))
    )


def _br_density_quad(
    eta: float, inner: Callable[[mp.mpf], mp.mpf], kinks: Sequence[float], epsilon: float
) -> mp.mpf:
    """E_{L ~ BR pair}[inner(ε − L)] by quadrature over the density, with breakpoints where
    ε − L crosses a kink of ``inner``."""
    e, eps = mp.mpf(eta), mp.mpf(epsilon)
    c = mp.e ** (e / 2) / (2 * mp.expm1(e))
    pts = sorted({-e, e, *(eps - k for k in kinks if -e < eps - k < e)})
    return mp.quad(lambda y: c * mp.e ** (y / 2) * inner(eps - y), pts)


def _window_holds(result: object, epsilon: float, exact: mp.mpf) -> None:
    """The top-window bracket alone (when it applies) holds the exact value too: the composed
    bracket would hide a window that errs by discarding it as inconsistent."""
    top = result._top_loss()[1]  # type: ignore[attr-defined]
    lo, hi, _ = result._top_window_bracket(epsilon, top)  # type: ignore[attr-defined]
    assert lo == math.inf or lo <= exact <= hi, (epsilon, lo, hi, exact)


#: The absolute accuracy the PLD stops at (1e3 × its tail bound): below it δ is "good enough".
_FLOOR = 1e3 * 1e-24


def test_delta_near_the_largest_loss_is_bracketed_from_the_top_windows() -> None:
    """Just below the largest finite loss t of a composition, δ(ε) comes from the losses near each
    pair's top alone (windows of width t − ε, finely gridded). An exponential and a Laplace
    mechanism there took ~40 s and stayed 3% wide at ε = t(1 − 1e-6), and raised
    AccuracyNotReached at t(1 − 1e-5). Checked against quadrature of the bounded-range pair's
    density with the Laplace pair's closed-form profile (40 digits), from 3% below the top to
    1e-13: every bracket holds the exact value, and is within the default 1e-4 wherever the
    float nodes allow it (ε ≤ t(1 − 1e-7))."""
    eta, e0 = 0.452, 1.599
    items = [(sdp.BoundedRange(eta), 1), (sdp.Laplace(1 / e0), 1)]
    result = compose_pld(items)
    public = sdp.compose(items)
    top = eta + e0

    def lap(t: mp.mpf) -> mp.mpf:
        return laplace_pair_delta(t, e0)

    with mp.workdps(40):
        for rel in (3e-2, 1e-3, 1e-5, 1e-6, 1e-7, 1e-9, 1e-11, 1e-13):
            e = top * (1 - rel)
            exact = _br_density_quad(eta, lap, (-e0, e0), e)
            lo, hi = result.delta_bracket(e)
            assert lo <= exact <= hi, (rel, lo, hi, exact)
            _window_holds(result, e, exact)
            if rel >= 1e-7:
                assert hi - lo <= 1e-4 * hi, (rel, lo, hi)
                value = public.delta(e)  # certified to the default accuracy: no exception
                assert exact <= value <= exact * (1 + 1e-4), (rel, value, exact)
            else:
                assert hi <= 4 * exact, (rel, hi, exact)


def test_cheap_bounds_near_the_largest_loss_hold_and_are_below_one() -> None:
    """δ(ε) ≤ P[L = ∞] + (t − ε) below the top loss t too ((1 − e^{ε−L})_+ ≤ (t − ε)_+): points
    asked only near the top, where no grid had been composed, were all bounded by 1. Against the
    quadrature of the bounded-range and Laplace mix."""
    eta, e0 = 0.452, 1.599
    items = [(sdp.BoundedRange(eta), 1), (sdp.Laplace(1 / e0), 1)]
    top = eta + e0
    rels = np.array([3e-2, 1e-3, 1e-6, 1e-9])
    eps = top * (1 - rels)
    bounds = sdp.compose(items).delta_bounds(eps)
    assert bounds is not None
    with mp.workdps(40):
        for e, bound, rel in zip(eps, bounds, rels, strict=True):
            exact = _br_density_quad(eta, lambda t: laplace_pair_delta(t, e0), (-e0, e0), e)
            assert exact <= bound <= top * rel + 1e-13, (rel, bound, exact)  # (t's float margin)


def test_top_windows_of_groups_and_atoms_hold_the_exact_profile() -> None:
    """The windows with several copies (self-composed, cut below c·t − g), atoms on and off the
    top, and mass at +∞, against exact sums over the atoms of the finite pairs with the
    closed-form profile of the other pair (40 digits):

    * a Laplace pair and three randomized responses (the RR loss is an atom: δ = E[δ_Lap(ε − L)]);
    * two bounded-range pairs and two randomized responses (the BR pair twice by quadrature of
      its density against its own closed-form profile, per atom);
    * two (0.5, 1e-8)-DP pairs and a bounded-range pair: P[L = ∞] = 1 − (1 − 1e-8)² plus the
      finite atoms' sum.

    Each bracket is within 1e-4 relative, or within the absolute floor the PLD stops at."""
    with mp.workdps(40):
        # Laplace + 3 RR
        lap_e0, rr_e0 = 0.8, 0.3
        result = compose_pld([(sdp.Laplace(1 / lap_e0), 1), (sdp.RandomizedResponse(rr_e0), 3)])
        top = lap_e0 + 3 * rr_e0
        for rel in (1e-2, 1e-4, 1e-6, 1e-8):
            e = top * (1 - rel)
            exact = _laplace_rr_delta(lap_e0, rr_e0, 3, e)
            lo, hi = result.delta_bracket(e)
            assert lo <= exact <= hi, ("lap+rr", rel, lo, hi, exact)
            _window_holds(result, e, exact)
            assert hi - lo <= 1e-4 * hi + _FLOOR, ("lap+rr", rel, lo, hi)
        # 2 BR + 2 RR
        eta, rr = 0.6, 0.25
        result = compose_pld([(sdp.BoundedRange(eta), 2), (sdp.RandomizedResponse(rr), 2)])
        top = 2 * eta + 2 * rr

        def br(t: mp.mpf) -> mp.mpf:
            return _br_pair_delta(t, eta)

        p = 1 / (1 + mp.e ** mp.mpf(rr))
        for rel in (1e-2, 1e-4, 1e-6):
            e = top * (1 - rel)
            exact = mp.fsum(
                mp.binomial(2, j)
                * p**j
                * (1 - p) ** (2 - j)
                * _br_density_quad(eta, br, (-eta, eta), e - rr * (2 - 2 * j))
                for j in range(3)
            )
            lo, hi = result.delta_bracket(e)
            assert lo <= exact <= hi, ("br+rr", rel, lo, hi, exact)
            _window_holds(result, e, exact)
            assert hi - lo <= 1e-4 * hi + _FLOOR, ("br+rr", rel, lo, hi)
        # 2 ApproxDP + BR (mass at +∞)
        eps0, delta0, eta = 0.5, 1e-8, 0.3
        result = compose_pld([(sdp.ApproxDP(eps0, delta0), 2), (sdp.BoundedRange(eta), 1)])
        top = 2 * eps0 + eta
        d0 = mp.mpf(delta0)
        w = (1 - d0) / (1 + mp.e ** mp.mpf(-eps0))  # the atom at +ε0
        v = (1 - d0) - w  # the atom at −ε0
        atoms = [(2 * mp.mpf(eps0), w * w), (mp.mpf(0), 2 * w * v), (-2 * mp.mpf(eps0), v * v)]
        p_inf = 1 - (1 - d0) ** 2
        for rel in (1e-2, 1e-4, 1e-6):
            e = top * (1 - rel)
            exact = p_inf + mp.fsum(m * _br_pair_delta(e - x, eta) for x, m in atoms)
            lo, hi = result.delta_bracket(e)
            assert lo <= exact <= hi, ("approx+br", rel, lo, hi, exact)
            _window_holds(result, e, exact)
            assert hi - lo <= 1e-4 * hi + _FLOOR, ("approx+br", rel, lo, hi)


def test_the_bounded_range_density_has_the_pairs_profile() -> None:
    """The density used by the quadratures above gives the bounded-range profile computed
    independently, as the supremum over the two-point GRR pairs (:func:`reference.br_delta`)."""
    from reference import br_delta

    with mp.workdps(30):
        for eta, eps in ((0.6, 0.1), (0.6, 0.5), (2.0, 1.2)):
            assert abs(_br_pair_delta(eps, eta) - br_delta(eta, eps)) <= 1e-12 * br_delta(eta, eps)


def test_top_windows_hold_the_exact_profile_on_random_mixes() -> None:
    """Random mixes of one Laplace or bounded-range pair with 1–4 randomized responses, at ε a
    random relative distance 1e-10 … 5e-2 below the largest loss: every bracket holds the exact
    profile (sums over the binomial RR atoms with the other pair's closed-form profile, 40
    digits). Seeded; deterministic."""
    rng = np.random.default_rng(20261129)
    with mp.workdps(40):
        for case in range(40):
            n = int(rng.integers(1, 5))
            rr = float(rng.uniform(0.05, 1.0))
            other = float(rng.uniform(0.1, 2.0))
            laplace = case % 2 == 0
            pair = sdp.Laplace(1 / other) if laplace else sdp.BoundedRange(other)
            result = compose_pld([(pair, 1), (sdp.RandomizedResponse(rr), n)])
            top = other + n * rr
            e = top * (1 - 10 ** float(rng.uniform(-10, -1.3)))
            if laplace:
                exact = _laplace_rr_delta(1 / (1 / other), rr, n, e)
            else:
                p = 1 / (1 + mp.e ** mp.mpf(rr))
                exact = mp.fsum(
                    mp.binomial(n, j)
                    * p**j
                    * (1 - p) ** (n - j)
                    * _br_pair_delta(mp.mpf(e) - rr * (n - 2 * j), other)
                    for j in range(n + 1)
                )
            lo, hi = result.delta_bracket(e)
            assert lo <= exact <= hi, (case, pair, rr, n, e, lo, hi, exact)
            _window_holds(result, e, exact)
