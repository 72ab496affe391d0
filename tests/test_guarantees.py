"""Every guarantee's closed forms against an independent computation.

Expected values come from ``tests/reference.py`` (enumeration of explicit distributions, mpmath
quadrature, brute-force sup over t-grids, closed forms written from the cited papers) or from numbers
published or re-derived there; never from sharpdp itself.

Tolerances: quantities the library calls exact (RR, Laplace, Gaussian/GDP, bounded range, the
(ε, δ)-DP profile) are checked two-sided at a relative 1e-9; bounds (zCDP → (ε, δ), RDP points)
are checked to be never below the exact value of a mechanism meeting the hypothesis and never above
the bound they implement.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

import sharpdp as sdp
from reference import (
    approx_dp_delta,
    br_delta,
    br_epsilon,
    br_max_kl,
    br_renyi,
    cks20_epsilon_point,
    gaussian_delta,
    gaussian_delta_quad,
    gaussian_epsilon,
    gaussian_renyi_quad,
    invert_profile,
    laplace_delta_quad,
    laplace_renyi,
    laplace_renyi_quad,
    rr_delta,
    rr_pair,
    rr_renyi,
    zcdp_cks20_delta,
    zcdp_cks20_epsilon,
)
from stable_ids import stable_id

EXACT = 1e-9  # relative tolerance for values the library states as exact
FLOAT_SLACK = 1e-14
NOISE = 1e-40  # absolute rounding floor of 50-digit sums of O(1) probabilities


def approx(expected: object, *, rel: float = EXACT, abs: float = 0.0) -> object:
    """pytest.approx without its default absolute tolerance of 1e-12 (vacuous for tiny values)."""
    return pytest.approx(expected, rel=rel, abs=abs)


ALPHAS = [1.0, 1.0 + 1e-9, 1.0 + 1e-6, 1.001, 1.5, 2.0, 3.0, 10.0, 100.0, 1e4, math.inf]


def close(got: float, want: object, rel: float = EXACT, abs_: float = 0.0) -> None:
    """Assert ``got`` (a float from sharpdp) equals the reference ``want`` to ``rel``."""
    w = float(want)  # type: ignore[arg-type]
    assert not math.isnan(got)
    assert got == pytest.approx(w, rel=rel, abs=abs_), f"got {got!r}, expected {w!r}"


def not_below(got: float, want: object, slack: float = FLOAT_SLACK) -> None:
    w = float(want)  # type: ignore[arg-type]
    assert not math.isnan(got)
    assert got >= w * (1.0 - slack) - 1e-300, f"got {got!r} below the exact value {w!r}"


def not_above(got: float, bound: object, rel: float = EXACT) -> None:
    """``got`` ≤ a bound the library implements (a δ underflowing to 0 may round up to 5e-324)."""
    b = float(bound)  # type: ignore[arg-type]
    assert got <= b * (1.0 + rel) + 5e-324, f"got {got!r} above the bound {b!r}"


# ----------------------------------------------------------------------------------------------
# Pure DP = binary randomized response (the worst case of ε-DP)
# ----------------------------------------------------------------------------------------------

PURE_EPS = [0.01, 0.1, 1.0, 5.0, 20.0]


@pytest.mark.parametrize("eps", PURE_EPS)
@pytest.mark.parametrize("frac", [0.0, 0.25, 0.5, 0.9, 0.999, 1.0, 1.5, math.inf])
def test_pure_dp_profile_matches_rr_enumeration(eps: float, frac: float) -> None:
    e = eps * frac if frac != math.inf else math.inf
    close(sdp.PureDP(eps).delta(e), rr_delta(eps, e), abs_=NOISE)


@pytest.mark.parametrize("eps", PURE_EPS)
@pytest.mark.parametrize("delta", [0.0, 1e-300, 1e-12, 1e-5, 0.01, 0.3, 0.9])
def test_pure_dp_epsilon_inverts_rr_enumeration(eps: float, delta: float) -> None:
    want = invert_profile(lambda x: rr_delta(eps, x), delta)
    close(sdp.PureDP(eps).epsilon(delta), want, abs_=1e-12)


@pytest.mark.parametrize("eps", PURE_EPS)
@pytest.mark.parametrize("alpha", ALPHAS)
def test_pure_dp_renyi_matches_rr_enumeration(eps: float, alpha: float) -> None:
    close(sdp.PureDP(eps).renyi(alpha), rr_renyi(eps, alpha))


@pytest.mark.parametrize("eps", PURE_EPS)
def test_pure_dp_kl_closed_form(eps: float) -> None:
    # Steinke 2024 Thm 5: KL(RR) = ε·tanh(ε/2); D_∞ = ε.
    with mp.workdps(50):
        close(sdp.PureDP(eps).renyi(1.0), mp.mpf(eps) * mp.tanh(mp.mpf(eps) / 2))
    assert sdp.PureDP(eps).renyi(math.inf) == eps


def test_pure_dp_zero_and_infinite() -> None:
    assert sdp.PureDP(0.0).delta(0.0) == 0.0
    assert sdp.PureDP(0.0).epsilon(0.0) == 0.0
    assert sdp.PureDP(0.0).renyi(2.0) == 0.0
    g = sdp.PureDP(math.inf)
    assert g.epsilon(0.5) == math.inf
    assert g.renyi(2.0) == math.inf


# ----------------------------------------------------------------------------------------------
# Randomized response, k categories
# ----------------------------------------------------------------------------------------------

RR_CASES = [(0.5, 2), (0.5, 3), (2.0, 3), (2.0, 5), (8.0, 10), (1.0, 100)]


@pytest.mark.parametrize(("eps", "k"), RR_CASES)
def test_rr_probabilities(eps: float, k: int) -> None:
    p, q = rr_pair(eps, k)
    m = sdp.RandomizedResponse(eps, k)
    for got, want in zip(m.probabilities(0), p, strict=True):
        close(got, want, rel=1e-14)
    for got, want in zip(m.probabilities(1), q, strict=True):
        close(got, want, rel=1e-14)
    assert math.fsum(m.probabilities(k - 1)) == approx(1.0, rel=1e-14)


@pytest.mark.parametrize(("eps", "k"), RR_CASES)
@pytest.mark.parametrize("frac", [0.0, 0.3, 0.99, 1.0, 2.0, math.inf])
def test_rr_profile_matches_enumeration(eps: float, k: int, frac: float) -> None:
    e = eps * frac if frac != math.inf else math.inf
    close(sdp.RandomizedResponse(eps, k).delta(e), rr_delta(eps, e, k), abs_=NOISE)


@pytest.mark.parametrize(("eps", "k"), RR_CASES)
@pytest.mark.parametrize("delta", [0.0, 1e-10, 1e-3, 0.1])
def test_rr_epsilon_inverts_enumeration(eps: float, k: int, delta: float) -> None:
    want = invert_profile(lambda x: rr_delta(eps, x, k), delta)
    close(sdp.RandomizedResponse(eps, k).epsilon(delta), want, abs_=1e-12)


@pytest.mark.parametrize(("eps", "k"), RR_CASES)
@pytest.mark.parametrize("alpha", ALPHAS)
def test_rr_renyi_matches_enumeration(eps: float, k: int, alpha: float) -> None:
    close(sdp.RandomizedResponse(eps, k).renyi(alpha), rr_renyi(eps, alpha, k))


# ----------------------------------------------------------------------------------------------
# Laplace mechanism (quadrature)
# ----------------------------------------------------------------------------------------------

LAPLACE_CASES = [(1.0, 1.0), (0.25, 1.0), (2.0, 0.5), (10.0, 1.0)]  # (scale, sensitivity)


@pytest.mark.parametrize(("scale", "sens"), LAPLACE_CASES)
@pytest.mark.parametrize("frac", [0.0, 0.3, 0.9, 1.0, 1.5])
def test_laplace_profile_matches_quadrature(scale: float, sens: float, frac: float) -> None:
    e = frac * sens / scale
    want = laplace_delta_quad(scale, e, sens)
    close(sdp.Laplace(scale, sens).delta(e), want, abs_=1e-15)


@pytest.mark.parametrize(("scale", "sens"), LAPLACE_CASES)
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.05, 0.2])
def test_laplace_epsilon(scale: float, sens: float, delta: float) -> None:
    eps0 = sens / scale
    got = sdp.Laplace(scale, sens).epsilon(delta)
    # the Laplace profile's closed form ε(δ) = max(0, ε0 + 2 log(1 − δ)) ...
    with mp.workdps(50):
        close(got, max(mp.mpf(0), eps0 + 2 * mp.log(1 - mp.mpf(delta))), abs_=1e-15)
    # ... and quadrature of the hockey-stick divergence at the returned ε gives back δ.
    # (|dδ/dε| ≤ 1/2, so a float-rounded ε moves δ by ~1e-16 absolute)
    if got > 0:
        close(float(laplace_delta_quad(scale, got, sens)), delta, rel=1e-8, abs_=1e-15)


@pytest.mark.parametrize(("scale", "sens"), LAPLACE_CASES)
@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 10.0, 100.0])
def test_laplace_renyi_matches_quadrature(scale: float, sens: float, alpha: float) -> None:
    want = laplace_renyi_quad(scale, alpha, sens)
    close(float(laplace_renyi(sens / scale, alpha)), want, rel=1e-12)  # reference self-check
    close(sdp.Laplace(scale, sens).renyi(alpha), want)


@pytest.mark.parametrize(("scale", "sens"), LAPLACE_CASES)
@pytest.mark.parametrize("alpha", [1.0 + 1e-9, 1.0 + 1e-6, 1.01, 3.0, 1e4, 1e7, math.inf])
def test_laplace_renyi_matches_mironov(scale: float, sens: float, alpha: float) -> None:
    close(sdp.Laplace(scale, sens).renyi(alpha), laplace_renyi(sens / scale, alpha))


@pytest.mark.parametrize("scale", [1e4, 1e6, 1e8])
@pytest.mark.parametrize("alpha", [1.0, 1.0 + 1e-6, 2.0, 10.0])
def test_laplace_renyi_small_epsilon0(scale: float, alpha: float) -> None:
    # ε0 = 1/scale ≪ 1: D_α ≈ αε0²/2 must keep its relative accuracy (no cancellation).
    close(sdp.Laplace(scale).renyi(alpha), laplace_renyi(1.0 / scale, alpha))


def test_laplace_zero_sensitivity_is_perfectly_private() -> None:
    m = sdp.Laplace(1.0, 0.0)
    assert m.delta(0.0) == 0.0
    assert m.epsilon(0.0) == 0.0
    assert m.renyi(math.inf) == 0.0


# ----------------------------------------------------------------------------------------------
# Gaussian mechanism and GDP
# ----------------------------------------------------------------------------------------------

# Balle–Wang 2018 Thm 8, all at δ = 1e-5 (re-derived by bisection on the closed form: 4.377178096,
# 0.7255217509, 9.997256146, 7.511275901). k-fold composition of σ is one Gaussian with σ/√k.
PINNED_GAUSSIAN = [
    (1.0, 4.377178),
    (5.0, 0.725522),
    (0.5, 9.997256),  # σ = 5, k = 100
    (20.0 / math.sqrt(1000.0), 7.511276),  # σ = 20, k = 1000
]


@pytest.mark.parametrize(("sigma", "pinned"), PINNED_GAUSSIAN)
def test_gaussian_pinned_values(sigma: float, pinned: float) -> None:
    got = sdp.Gaussian(sigma).epsilon(1e-5)
    assert round(got, 6) == pinned
    close(got, gaussian_epsilon(1.0 / sigma, 1e-5))
    # quadrature of the hockey-stick divergence at the returned ε gives back δ = 1e-5
    close(float(gaussian_delta_quad(sigma, got)), 1e-5, rel=1e-8)


def test_gaussian_composition_pinned_equivalence() -> None:
    # σ = 5 composed 100 times ≡ σ = 0.5; σ = 20 composed 1000 times ≡ σ = 20/√1000 (μ adds in L2).
    assert sdp.GDP(math.sqrt(100) / 5.0).epsilon(1e-5) == approx(9.997256, abs=5e-7)
    assert sdp.GDP(math.sqrt(1000) / 20.0).epsilon(1e-5) == approx(7.511276, abs=5e-7)


@pytest.mark.parametrize(("sigma", "sens"), [(0.5, 1.0), (1.0, 1.0), (5.0, 1.0), (3.0, 2.0)])
@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0, 5.0])
def test_gaussian_profile_matches_quadrature(sigma: float, sens: float, eps: float) -> None:
    want = gaussian_delta_quad(sigma, eps, sens)
    close(float(gaussian_delta(sens / sigma, eps)), want, rel=1e-12)  # reference self-check
    close(sdp.Gaussian(sigma, sens).delta(eps), want)


@pytest.mark.parametrize("mu", [1e-3, 0.1, 1.0, 3.0, 10.0, 40.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 10.0, 100.0])
def test_gdp_profile_closed_form(mu: float, eps: float) -> None:
    close(sdp.GDP(mu).delta(eps), gaussian_delta(mu, eps), abs_=1e-300)


@pytest.mark.parametrize("mu", [1e-15, 1e-12, 1e-9, 1e-6, 9e-4])
@pytest.mark.parametrize("ratio", [0.0, 1e-3, 0.5, 2.0, 10.0, 30.0])
def test_gdp_profile_at_tiny_mu_is_valid_and_sharp(mu: float, ratio: float) -> None:
    # At ε = ratio·μ the two erfcx values of the tail form agree to ~log₂(1/μ) bits: their
    # rounding allowance made δ up to 10% loose at μ = 1e-12 (never below). Exact: 80 digits.
    with mp.workdps(80):
        want = gaussian_delta(mu, ratio * mu)
        got = sdp.GDP(mu).delta(ratio * mu)
        assert mp.mpf(got) >= want
        assert mp.mpf(got) <= want * (1 + 1e-6)


@pytest.mark.parametrize("mu", [1e-3, 0.1, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-100, 1e-10, 1e-5, 1e-2, 0.3])
def test_gdp_and_gaussian_epsilon(mu: float, delta: float) -> None:
    want = gaussian_epsilon(mu, delta)
    close(sdp.GDP(mu).epsilon(delta), want, abs_=1e-12)
    close(sdp.Gaussian(1.0 / mu).epsilon(delta), want, abs_=1e-12)
    close(sdp.Gaussian(2.0 / mu, sensitivity=2.0).epsilon(delta), want, abs_=1e-12)


@pytest.mark.parametrize(("sigma", "alpha"), [(1.0, 2.0), (2.0, 5.0), (0.5, 1.0), (1.0, 30.0)])
def test_gaussian_renyi_matches_quadrature(sigma: float, alpha: float) -> None:
    want = gaussian_renyi_quad(sigma, alpha)
    close(float(want), alpha / (2 * sigma**2), rel=1e-12)  # Bun–Steinke 2016 Lemma 2.4
    close(sdp.Gaussian(sigma).renyi(alpha), want)
    close(sdp.GDP(1.0 / sigma).renyi(alpha), want)


def test_gaussian_and_gdp_max_divergence_unbounded() -> None:
    assert sdp.Gaussian(1.0).renyi(math.inf) == math.inf
    assert sdp.GDP(1.0).renyi(math.inf) == math.inf
    assert sdp.Gaussian(1.0).epsilon(0.0) == math.inf
    assert sdp.GDP(0.0).epsilon(0.0) == 0.0
    assert sdp.GDP(0.0).delta(0.0) == 0.0


# ----------------------------------------------------------------------------------------------
# Bounded range (brute-force sup over the GRR_t family)
# ----------------------------------------------------------------------------------------------

ETAS = [0.5, 1.0, 2.0, 5.0]


@pytest.mark.parametrize("eta", ETAS)
@pytest.mark.parametrize("alpha", [1.0, 1.0 + 1e-6, 1.5, 2.0, 4.0, 10.0, 50.0, math.inf])
def test_bounded_range_renyi_is_the_sup_over_t(eta: float, alpha: float) -> None:
    want = br_renyi(eta, alpha)
    got = sdp.BoundedRange(eta).renyi(alpha)
    not_below(got, want)
    close(got, want)


@pytest.mark.parametrize("eta", ETAS)
@pytest.mark.parametrize("frac", [0.0, 0.1, 0.5, 0.9, 1.0, 2.0])
def test_bounded_range_profile_is_the_sup_over_t(eta: float, frac: float) -> None:
    want = br_delta(eta, frac * eta)
    got = sdp.BoundedRange(eta).delta(frac * eta)
    not_below(got, want)
    close(got, want, abs_=NOISE)


@pytest.mark.parametrize("eta", ETAS)
@pytest.mark.parametrize("delta", [1e-9, 1e-3, 0.05])
def test_bounded_range_epsilon_inverts_the_profile(eta: float, delta: float) -> None:
    want = br_epsilon(eta, delta)
    # cross-check the per-t inversion against the brute-force profile at the answer
    close(float(br_delta(eta, float(want))), delta, rel=1e-9)
    close(sdp.BoundedRange(eta).epsilon(delta), want, abs_=1e-12)


@pytest.mark.parametrize(("eta", "pinned"), [(0.5, 0.031142), (1.0, 0.123302), (2.0, 0.474475)])
def test_bounded_range_max_kl(eta: float, pinned: float) -> None:
    # derived: max_t KL(GRR_t) = y − 1 − log y, y = η/(e^η − 1); pinned to 6 decimals.
    grid = br_max_kl(eta)
    with mp.workdps(50):
        y = mp.mpf(eta) / mp.expm1(eta)
        close(float(grid), y - 1 - mp.log(y), rel=1e-30)
    assert round(float(grid), 6) == pinned
    close(sdp.BoundedRange(eta).renyi(1.0), grid)


def test_bounded_range_contains_rr_half() -> None:
    # GRR at t = η/2 is RR(η/2), so η-BR is never better than (η/2)-RR.
    for eta in ETAS:
        for e in [0.0, 0.2 * eta, 0.45 * eta]:
            not_below(sdp.BoundedRange(eta).delta(e), rr_delta(eta / 2, e))


# ----------------------------------------------------------------------------------------------
# zCDP, approximate zCDP, mCDP
# ----------------------------------------------------------------------------------------------


def test_zcdp_pinned_cks20() -> None:
    # ρ = 0.1, δ = 1e-5: CKS20 1.91424 versus BS16 Lemma 3.5 2.24597.
    got = sdp.ZCDP(0.1).epsilon(1e-5)
    assert got == approx(1.91424, abs=5e-6)
    close(float(zcdp_cks20_epsilon(0.1, 1e-5)), 1.91424, rel=5e-6)
    assert got <= 2.24597
    with mp.workdps(50):
        assert got < float(0.1 + 2 * mp.sqrt(0.1 * mp.log(1e5)))


ZCDP_RHOS = [1e-6, 1e-3, 0.1, 1.0, 10.0]


@pytest.mark.parametrize("rho", ZCDP_RHOS)
@pytest.mark.parametrize("delta", [1e-100, 1e-10, 1e-5, 1e-2])
def test_zcdp_epsilon_between_gaussian_and_cks20(rho: float, delta: float) -> None:
    got = sdp.ZCDP(rho).epsilon(delta)
    # The Gaussian with μ²/2 = ρ is ρ-zCDP, so no valid bound is below its exact ε.
    not_below(got, gaussian_epsilon(math.sqrt(2 * rho), delta))
    # The library takes the minimum of valid analyses, CKS20 Cor 13 among them.
    not_above(got, zcdp_cks20_epsilon(rho, delta))


@pytest.mark.parametrize("rho", ZCDP_RHOS)
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 5.0, 30.0])
def test_zcdp_delta_between_gaussian_and_cks20(rho: float, eps: float) -> None:
    got = sdp.ZCDP(rho).delta(eps)
    not_below(got, gaussian_delta(math.sqrt(2 * rho), eps))
    not_above(got, zcdp_cks20_delta(rho, eps))


@pytest.mark.parametrize(("rho", "xi"), [(0.1, 0.0), (0.5, 0.3), (0.2, -0.1), (0.0, 1.5)])
@pytest.mark.parametrize("alpha", [1.0, 1.5, 7.0, 1e3])
def test_zcdp_renyi_is_the_definition(rho: float, xi: float, alpha: float) -> None:
    got = sdp.ZCDP(rho, xi).renyi(alpha)
    if rho == 0.0:
        # (ξ, 0)-zCDP is ξ-DP: randomized response's curve [Steinke 2024 Thm 4], below ξ
        assert got <= xi
        close(got, float(rr_renyi_exact(xi, alpha)), rel=1e-12)
        return
    close(got, max(0.0, xi + rho * alpha), rel=1e-15)


def rr_renyi_exact(eps: float, alpha: float) -> mp.mpf:
    """D_α of binary randomized response ε (p = e^ε/(1 + e^ε) against 1 − p), 50 digits."""
    with mp.workdps(50):
        e = mp.mpf(eps)
        p = mp.e**e / (1 + mp.e**e)
        q = 1 - p
        if alpha == 1.0:
            return p * mp.log(p / q) + q * mp.log(q / p)
        a = mp.mpf(alpha)
        return mp.log(p**a * q ** (1 - a) + q**a * p ** (1 - a)) / (a - 1)


def test_zcdp_max_divergence() -> None:
    assert sdp.ZCDP(0.1).renyi(math.inf) == math.inf
    assert sdp.ZCDP(0.0, 2.0).renyi(math.inf) == 2.0
    assert sdp.ZCDP(0.0).renyi(math.inf) == 0.0


@pytest.mark.parametrize("xi", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("frac", [0.0, 0.5, 1.0])
def test_zcdp_rho_zero_is_pure_dp(xi: float, frac: float) -> None:
    # BS16 Lemma 3.2: (ξ, 0)-zCDP ⇔ ξ-DP, whose tight profile is RR's.
    close(sdp.ZCDP(0.0, xi).delta(frac * xi), rr_delta(xi, frac * xi), abs_=NOISE)
    close(
        sdp.ZCDP(0.0, xi).epsilon(1e-3),
        invert_profile(lambda e: rr_delta(xi, e), 1e-3),
        abs_=1e-12,
    )


@pytest.mark.parametrize("rho", [0.1, 0.5, 3.0])
def test_zcdp_with_xi_minus_rho_is_perfect_privacy(rho: float) -> None:
    # (ξ = −ρ, ρ)-zCDP gives KL = D_1 ≤ ξ + ρ = 0, so P = Q: δ(ε) = 0 and ε(δ) = 0 for every δ
    # (this is what MCDP(0, τ) reduces to by BS16 Lemma 4.2).
    for g in [sdp.ZCDP(rho, -rho), sdp.MCDP(0.0, math.sqrt(2 * rho))]:
        assert g.renyi(1.0) == pytest.approx(0.0, abs=1e-15)
        for e in [0.0, 0.5, math.inf]:
            assert g.delta(e) == pytest.approx(0.0, abs=1e-15)
        for d in [0.0, 1e-300, 1e-5]:
            assert g.epsilon(d) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(("rho", "xi"), [(0.1, 0.2), (1.0, 0.5)])
def test_zcdp_with_xi_below_cks20_with_xi(rho: float, xi: float) -> None:
    got = sdp.ZCDP(rho, xi).epsilon(1e-6)
    not_above(got, zcdp_cks20_epsilon(rho, 1e-6, xi))
    not_below(got, _zcdp_xi_lower_bound(rho, xi, 1e-6))


def _zcdp_xi_lower_bound(rho: float, xi: float, delta: float) -> float:
    # (ξ, ρ)-zCDP contains both ρ-zCDP (the Gaussian) and ξ-DP (RR): a valid ε is ≥ both.
    return max(
        float(gaussian_epsilon(math.sqrt(2 * rho), delta)),
        float(invert_profile(lambda e: rr_delta(xi, e), delta)),
    )


@pytest.mark.parametrize(("rho", "d0"), [(0.1, 1e-6), (1.0, 1e-3)])
@pytest.mark.parametrize("eps", [0.0, 1.0, 3.0])
def test_approx_zcdp_profile(rho: float, d0: float, eps: float) -> None:
    got = sdp.ApproxZCDP(rho, d0).delta(eps)
    mu = math.sqrt(2 * rho)
    # Mixture (1 − δ0)·Gaussian + δ0·(infinite loss) is δ0-approximately ρ-zCDP.
    not_below(got, d0 + (1 - d0) * gaussian_delta(mu, eps))
    not_above(got, d0 + (1 - d0) * zcdp_cks20_delta(rho, eps))


def test_approx_zcdp_epsilon_below_delta0_is_infinite() -> None:
    g = sdp.ApproxZCDP(0.1, 1e-4)
    assert g.epsilon(1e-5) == math.inf
    assert g.renyi(2.0) == math.inf
    assert math.isfinite(g.epsilon(1e-3))
    not_below(g.epsilon(2e-4), gaussian_epsilon(math.sqrt(0.2), (2e-4 - 1e-4) / (1 - 1e-4)))


@pytest.mark.parametrize(("mu", "tau"), [(0.5, 1.0), (0.1, 0.3), (2.0, 0.5)])
def test_mcdp_via_bs16_lemma_4_2(mu: float, tau: float) -> None:
    rho, xi = tau * tau / 2, mu - tau * tau / 2
    for alpha in [1.0, 2.0, 10.0]:
        close(sdp.MCDP(mu, tau).renyi(alpha), max(0.0, xi + rho * alpha), rel=1e-14)
    not_above(sdp.MCDP(mu, tau).epsilon(1e-5), zcdp_cks20_epsilon(rho, 1e-5, xi))


# ----------------------------------------------------------------------------------------------
# Approximate DP: the KOV four-point pair
# ----------------------------------------------------------------------------------------------

APPROX_CASES = [(0.5, 1e-6), (1.0, 1e-3), (3.0, 0.1), (1.0, 0.0)]


@pytest.mark.parametrize(("eps0", "d0"), APPROX_CASES)
@pytest.mark.parametrize("frac", [0.0, 0.5, 1.0, 2.0, math.inf])
def test_approx_dp_profile_matches_enumeration(eps0: float, d0: float, frac: float) -> None:
    e = frac * eps0 if frac != math.inf else math.inf
    close(sdp.ApproxDP(eps0, d0).delta(e), approx_dp_delta(eps0, d0, e), abs_=NOISE)


@pytest.mark.parametrize(("eps0", "d0"), APPROX_CASES)
@pytest.mark.parametrize("delta", [0.0, 1e-7, 1e-3, 0.15, 0.5])
def test_approx_dp_epsilon_inverts_enumeration(eps0: float, d0: float, delta: float) -> None:
    got = sdp.ApproxDP(eps0, d0).epsilon(delta)
    if delta < d0:
        assert got == math.inf
    else:
        want = invert_profile(lambda e: approx_dp_delta(eps0, d0, e), delta)
        close(got, want, abs_=1e-12)


def test_approx_dp_renyi() -> None:
    assert sdp.ApproxDP(1.0, 1e-9).renyi(1.0) == math.inf
    assert sdp.ApproxDP(1.0, 1e-9).renyi(2.0) == math.inf
    close(sdp.ApproxDP(1.0, 0.0).renyi(2.0), rr_renyi(1.0, 2.0))


# ----------------------------------------------------------------------------------------------
# RDP given at points / by a function
# ----------------------------------------------------------------------------------------------

GAUSS_ORDERS = [1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0]


@pytest.mark.parametrize("rho", [0.01, 0.5])
def test_rdp_points_interpolation_is_valid(rho: float) -> None:
    g = sdp.RDP(GAUSS_ORDERS, [rho * a for a in GAUSS_ORDERS])
    for a, e in zip(GAUSS_ORDERS, [rho * a for a in GAUSS_ORDERS], strict=True):
        assert g.renyi(a) == approx(e, rel=1e-15)
    # Between the orders the value must still bound the true curve ρα of the Gaussian.
    for alpha in [1.6, 2.5, 4.0, 7.0, 20.0, 50.0]:
        not_below(g.renyi(alpha), rho * alpha)
    assert g.renyi(100.0) == math.inf  # nothing known beyond the last order


@pytest.mark.parametrize("rho", [0.01, 0.5])
@pytest.mark.parametrize("delta", [1e-10, 1e-5])
def test_rdp_points_epsilon(rho: float, delta: float) -> None:
    g = sdp.RDP(GAUSS_ORDERS, [rho * a for a in GAUSS_ORDERS])
    got = g.epsilon(delta)
    not_below(got, gaussian_epsilon(math.sqrt(2 * rho), delta))
    with mp.workdps(50):
        best = min(cks20_epsilon_point(mp.mpf(a), rho * mp.mpf(a), delta) for a in GAUSS_ORDERS)
    not_above(got, best)


@pytest.mark.parametrize("rho", [0.01, 0.5])
def test_rdp_function_epsilon(rho: float) -> None:
    g = sdp.RDP.from_function(lambda a: rho * a if a < math.inf else math.inf)
    got = g.epsilon(1e-6)
    not_below(got, gaussian_epsilon(math.sqrt(2 * rho), 1e-6))
    not_above(got, zcdp_cks20_epsilon(rho, 1e-6), rel=1e-6)
    assert g.renyi(3.0) == approx(3 * rho, rel=1e-15)


# ----------------------------------------------------------------------------------------------
# group()
# ----------------------------------------------------------------------------------------------

GROUP_KS = [1, 2, 3, 10]


@pytest.mark.parametrize("k", GROUP_KS)
def test_group_pure_dp(k: int) -> None:
    h = sdp.PureDP(0.7).group(k)
    assert isinstance(h, sdp.PureDP)
    assert h.epsilon_ == approx(0.7 * k, rel=1e-15)


@pytest.mark.parametrize("k", GROUP_KS)
def test_group_approx_dp(k: int) -> None:
    # k steps along a path of neighbours: (kε, δ·Σ_{i<k} e^{iε}), the sum added term by term in mpmath
    h = sdp.ApproxDP(0.2, 1e-8).group(k)
    assert isinstance(h, sdp.ApproxDP)
    assert h.epsilon_ == approx(0.2 * k, rel=1e-15)
    assert h.epsilon_ >= 0.2 * k
    exact = mp.mpf("1e-8") * mp.fsum(mp.exp(i * mp.mpf(0.2)) for i in range(k))
    assert h.delta_ >= exact
    assert h.delta_ == approx(float(exact), rel=1e-10)


@pytest.mark.parametrize(
    ("epsilon", "delta", "k", "expected"),
    [
        (1.0, 1e-6, 3, "1.1107337927389695e-5"),  # δ(1 + e + e²); k·e^{(k−1)ε}δ gives 2.2e-5
        (1.897091776157263, 1.367160307146927e-08, 10, "0.41828383887"),  # not vacuous
        (0.0, 1e-3, 4, "4e-3"),  # kδ at ε = 0
    ],
)
def test_group_approx_dp_values(epsilon: float, delta: float, k: int, expected: str) -> None:
    h = sdp.ApproxDP(epsilon, delta).group(k)
    with mp.workdps(30):
        exact = mp.mpf(delta) * mp.fsum(mp.exp(i * mp.mpf(epsilon)) for i in range(k))
    assert h.delta_ >= exact
    assert h.delta_ == approx(float(mp.mpf(expected)), rel=1e-9)


def test_group_approx_dp_vacuous() -> None:
    with pytest.raises(sdp.NotImplied):
        sdp.ApproxDP(1.0, 0.1).group(5)


@pytest.mark.parametrize("k", GROUP_KS)
def test_group_zcdp(k: int) -> None:
    # k²ρ, rounded up from the exact product (9 × 0.3 rounds to nearest an ulp below it)
    got = sdp.ZCDP(0.3).group(k).rho
    assert Fraction(got) >= Fraction(0.3) * k * k
    assert got == approx(k * k * 0.3, rel=4e-16)
    h = sdp.ZCDP(0.0, 0.4).group(k)  # pure 0.4-DP
    close(h.delta(0.1), rr_delta(0.4 * k, 0.1))


@pytest.mark.parametrize("k", GROUP_KS)
def test_group_bounded_range_and_gdp(k: int) -> None:
    assert sdp.BoundedRange(0.5).group(k).eta == approx(0.5 * k, rel=1e-15)
    assert sdp.GDP(0.5).group(k).mu == approx(0.5 * k, rel=1e-15)
    # the GRR_t family at group distance k: losses add, so the range is kη
    close(sdp.BoundedRange(0.5).group(k).renyi(2.0), br_renyi(0.5 * k, 2.0))


@pytest.mark.parametrize("k", GROUP_KS)
def test_group_gaussian(k: int) -> None:
    # inputs k apart shift the mean by kΔ: exactly the Gaussian with μ = kΔ/σ
    h = sdp.Gaussian(2.0, 0.5).group(k)
    close(h.epsilon(1e-6), gaussian_epsilon(k * 0.5 / 2.0, 1e-6))


@pytest.mark.parametrize("k", [2, 3])
def test_group_laplace(k: int) -> None:
    # inputs k apart shift the centre by kΔ: exactly the Laplace pair at distance kΔ.
    h = sdp.Laplace(1.0, 0.5).group(k)
    close(h.delta(0.2), laplace_delta_quad(1.0, 0.2, 0.5 * k))


@pytest.mark.parametrize(
    "g",
    [sdp.PureDP(1.0), sdp.ZCDP(0.1), sdp.BoundedRange(1.0), sdp.GDP(1.0), sdp.Gaussian(1.0)],
    ids=stable_id,
)
def test_group_one_is_identity(g: sdp.Guarantee) -> None:
    assert g.group(1) == g


# ----------------------------------------------------------------------------------------------
# Extreme parameters: finite, not NaN, no warnings (filterwarnings = error), still exact
# ----------------------------------------------------------------------------------------------


def test_extreme_pure_dp_700() -> None:
    g = sdp.PureDP(700.0)
    close(g.epsilon(1e-300), invert_profile(lambda e: rr_delta(700.0, e), 1e-300), abs_=1e-9)
    close(g.renyi(2.0), rr_renyi(700.0, 2.0))
    close(g.renyi(1.0), rr_renyi(700.0, 1.0))
    close(g.delta(0.0), rr_delta(700.0, 0.0))
    close(g.delta(699.0), rr_delta(700.0, 699.0))


def test_extreme_laplace_and_rr_700() -> None:
    m = sdp.Laplace(1.0 / 700.0)
    e0 = 1.0 / (1.0 / 700.0)
    close(m.renyi(2.0), laplace_renyi(e0, 2.0))
    close(m.renyi(1.0), laplace_renyi(e0, 1.0))
    close(m.epsilon(1e-300), e0)
    close(m.delta(1.0), 1 - mp.exp((1.0 - e0) / 2))
    rr = sdp.RandomizedResponse(700.0, 3)
    close(rr.renyi(2.0), rr_renyi(700.0, 2.0, 3))
    close(rr.epsilon(1e-300), invert_profile(lambda e: rr_delta(700.0, e, 3), 1e-300), abs_=1e-9)


def test_extreme_bounded_range_700() -> None:
    g = sdp.BoundedRange(700.0)
    close(g.renyi(2.0), br_renyi(700.0, 2.0))
    close(g.delta(10.0), br_delta(700.0, 10.0))
    assert math.isfinite(g.epsilon(1e-300))


#: At μ = 1/σ = 1e-6 the two terms of δ(ε) cancel to about 6 digits; the library adds its own
#: rounding error back as a bound, so it may sit this far above the exact value (never below).
TINY_MU_SLACK = 1e-7


@pytest.mark.parametrize("sigma", [1e-3, 1e6])
@pytest.mark.parametrize("delta", [1e-300, 1e-5, 0.5])
def test_extreme_gaussian_sigma(sigma: float, delta: float) -> None:
    got, want = sdp.Gaussian(sigma).epsilon(delta), gaussian_epsilon(1.0 / sigma, delta)
    not_below(got, want, slack=0.0)
    not_above(got, want, rel=TINY_MU_SLACK)


@pytest.mark.parametrize("sigma", [1e-3, 1e6])
@pytest.mark.parametrize("eps", [0.0, 1e-7, 1.0, 1e3, 5e5])
def test_extreme_gaussian_profile(sigma: float, eps: float) -> None:
    got, want = sdp.Gaussian(sigma).delta(eps), gaussian_delta(1.0 / sigma, eps)
    not_below(got, want, slack=0.0)
    assert got <= float(want) * (1.0 + TINY_MU_SLACK) + 1e-300  # (an underflowed δ: a subnormal)


@pytest.mark.parametrize(
    ("mu", "eps"),
    [
        (1.0736125749900795e-12, 4.963030615860658e-12),  # was 0.14% below the exact δ
        (1e-12, 3e-12),
        (1e-6, 1e-7),
        (1e-4, 1e-5),
        (1.0, 5.0),
    ],
)
def test_gdp_delta_never_below_the_exact_value_at_tiny_mu(mu: float, eps: float) -> None:
    """δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) at 60 digits (mpmath): the two terms nearly
    cancel for tiny μ, and the float computation had fallen below the exact value."""
    import mpmath

    mpmath.mp.dps = 60
    m, e = mpmath.mpf(mu), mpmath.mpf(eps)
    exact = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
    got = sdp.GDP(mu).delta(eps)
    assert mpmath.mpf(got) >= exact
    assert got <= float(exact) * (1.0 + (0.2 if mu < 1e-9 else 1e-7))


def test_gdp_delta_lower_bound_is_never_above_the_exact_value() -> None:
    """The lower bound of δ_μ(ε) that certifies conversions to GDP, at 1,500 random (μ, ε) from
    μ = 1e-6 to 100 (both sides of a = μ/2 − ε/μ = 0), against 50-digit values: never above, and
    within 10⁻⁹ of them where δ is not tiny next to the terms that cancel."""
    import mpmath
    import numpy as np

    from sharpdp import _divergences

    mpmath.mp.dps = 50
    rng = np.random.default_rng(7)
    mus = 10 ** rng.uniform(-6, 2, 1500)
    epss = np.where(
        rng.random(1500) < 0.8,
        rng.uniform(0, 1, 1500) * (2 * mus * mus + 3 * mus),
        10 ** rng.uniform(-8, 3, 1500),
    )
    low = _divergences.gaussian_delta_lower(mus, epss)
    close = 0
    for mu, eps, got in zip(mus.tolist(), epss.tolist(), low.tolist(), strict=True):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        exact = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
        assert mpmath.mpf(got) <= exact, (mu, eps, got)
        if mu > 1e-2 and exact > 1e-200:
            assert got >= float(exact) * (1 - 1e-9), (mu, eps, got, float(exact))
            close += 1
    assert close > 500


def test_gdp_slope_lower_bound_is_never_above_the_exact_value() -> None:
    """The lower bound of log Φ(−μ/2 − ε/μ) (the slope of δ_μ in e^ε, for the tangent check of
    conversions to GDP) at 2,000 random (μ, ε), μ from 1e-8 to 1e4 and ε up to 1e5, against
    50-digit values: never above, and within 10⁻¹² (absolute, plus relative) of them."""
    import mpmath
    import numpy as np

    from sharpdp import _divergences

    rng = np.random.default_rng(11)
    mus = 10 ** rng.uniform(-8, 4, 2000)
    epss = np.where(
        rng.random(2000) < 0.5, rng.uniform(0, 3, 2000) * mus * mus, 10 ** rng.uniform(-9, 5, 2000)
    )
    low = _divergences.gaussian_log_slope_lower(mus, epss)
    with mpmath.workdps(50):
        for mu, eps, got in zip(mus.tolist(), epss.tolist(), low.tolist(), strict=True):
            m, e = mpmath.mpf(mu), mpmath.mpf(eps)
            exact = mpmath.log(mpmath.ncdf(-m / 2 - e / m))
            assert mpmath.mpf(got) <= exact, (mu, eps, got)
            assert got >= float(exact) - 1e-12 * (1 + abs(float(exact))), (mu, eps, got)
    assert _divergences.gaussian_log_slope_lower(0.0, 1.0) == -np.inf


def test_gdp_delta_bounds_hold_at_large_mu() -> None:
    """At large μ, a = μ/2 − ε/μ inherits the rounding of ε/μ, far larger than an ulp of a when
    the two nearly cancel: the upper bound of δ_μ(ε) fell below the exact value from μ ≈ 109
    (505 of these 600 points were below at μ ≥ 10, by up to ~1e-13 relative) and the lower bound
    rose above it. 60-digit values, μ from 10 to 10⁴, ε = μ²/2 + tμ with t ∈ [−2, 40]."""
    import mpmath
    import numpy as np

    from sharpdp import _divergences

    mpmath.mp.dps = 60
    rng = np.random.default_rng(5)
    mus = 10 ** rng.uniform(1, 4, 600)
    epss = np.maximum(mus * mus / 2 + rng.uniform(-2, 40, 600) * mus, 0.0)
    low = _divergences.gaussian_delta_lower(mus, epss)
    checked = 0
    for mu, eps, lo in zip(mus.tolist(), epss.tolist(), low.tolist(), strict=True):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        exact = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
        assert mpmath.mpf(_divergences.gaussian_log_delta(mu, eps)) >= mpmath.log(exact)
        assert mpmath.mpf(lo) <= exact, (mu, eps, lo)
        checked += exact > 1e-280
    assert checked > 300


def test_gdp_log_delta_upper_bound_holds_at_tiny_mu() -> None:
    """At μ ≲ 3e-7 and ε < μ²/2 the final rounding of the logarithm was not in the margin: the
    upper bound of log δ_μ(ε) fell below the exact value (by up to 6.5e-16, 221 of 50,000
    points). 80-digit values at 400 points, μ from 1e-12 to 1e-5."""
    import mpmath
    import numpy as np

    from sharpdp import _divergences

    mpmath.mp.dps = 80
    rng = np.random.default_rng(3)
    for _ in range(400):
        mu = float(10 ** rng.uniform(-12, -5))
        eps = 0.0 if rng.random() < 0.3 else float(rng.uniform(0, 1) * mu * mu / 2)
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        exact = mpmath.log(mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m))
        assert mpmath.mpf(_divergences.gaussian_log_delta(mu, eps)) >= exact, (mu, eps)


def test_randomized_response_renyi_is_never_below_the_exact_value() -> None:
    """D_α of k-ary randomized response, p = e^ε/(e^ε + k − 1), q = 1/(e^ε + k − 1):
    log(p^α q^{1−α} + q^α p^{1−α} + (k − 2)q)/(α − 1) at 80 digits. The log-sum-exp form lost
    a few ulps of terms ~ log(1/k) much larger than D_α (6e-13 of it below at k = 1000) and
    the series form ~1e-15 (ε = 0.01); never below now, within 1e-10 of it."""
    import mpmath
    import numpy as np

    from sharpdp import _divergences

    mpmath.mp.dps = 80
    rng = np.random.default_rng(3)
    for _ in range(600):
        eps = float(10 ** rng.uniform(-4, 1))
        alpha = float(1 + 10 ** rng.uniform(-3, 3))
        k = int(rng.choice([2, 3, 10, 1000]))
        e, a = mpmath.mpf(eps), mpmath.mpf(alpha)
        p, q = mpmath.exp(e) / (mpmath.exp(e) + k - 1), 1 / (mpmath.exp(e) + k - 1)
        exact = mpmath.log(p**a * q ** (1 - a) + q**a * p ** (1 - a) + (k - 2) * q) / (a - 1)
        got = _divergences.rr_renyi(eps, alpha, k)
        assert exact <= mpmath.mpf(got) <= exact * (1 + 1e-10), (eps, alpha, k)


@pytest.mark.parametrize("rho", [1e-12, 1e-3, 1e4])
def test_extreme_zcdp_tiny_delta(rho: float) -> None:
    got = sdp.ZCDP(rho).epsilon(1e-300)
    assert math.isfinite(got)
    not_below(got, gaussian_epsilon(math.sqrt(2 * rho), 1e-300))
    not_above(got, zcdp_cks20_epsilon(rho, 1e-300))


EXTREME_TABLE = [
    sdp.PureDP(700.0),
    sdp.PureDP(1e-300),
    sdp.ApproxDP(700.0, 1e-300),
    sdp.ZCDP(1e-300),
    sdp.ZCDP(1e6),
    sdp.ApproxZCDP(1e3, 1e-300),
    sdp.BoundedRange(700.0),
    sdp.BoundedRange(1e-300),
    sdp.GDP(1e-300),
    sdp.GDP(1e3),
    sdp.MCDP(1e3, 1e2),
    sdp.Laplace(1 / 700.0),
    sdp.Laplace(1e-300),
    sdp.Laplace(1e300),
    sdp.Gaussian(1e-3),
    sdp.Gaussian(1e6),
    sdp.RandomizedResponse(700.0, 1000),
    sdp.RDP([1.5, 1e6, math.inf], [1e-300, 1e3, 1e4]),
]


@pytest.mark.parametrize("g", EXTREME_TABLE, ids=stable_id)
def test_extreme_parameters_are_finite_and_not_nan(g: sdp.Guarantee) -> None:
    for d in [1e-300, 1e-5, 0.5]:
        e = g.epsilon(d)
        assert not math.isnan(e)
        assert e >= 0.0
    for e in [0.0, 1e-300, 1.0, 700.0, 1e300, math.inf]:
        d = g.delta(e)
        assert 0.0 <= d <= 1.0
    for a in [1.0, 1.0 + 1e-12, 2.0, 1e300, math.inf]:
        r = g.renyi(a)
        assert not math.isnan(r)
        assert r >= 0.0


@pytest.mark.parametrize(
    ("eta", "delta"), [(1e-4, 1e-12), (1e-6, 1e-15), (0.3, 1e-14), (5.0, 1e-9)]
)
def test_bounded_range_epsilon_is_valid_where_its_inverse_is_ill_conditioned(
    eta: float, delta: float
) -> None:
    """ε(δ) = η + 2 log(1 − √(δ(1 − e^{−η}))) with √(δc) ≪ 1: the exact profile (40 digits) at
    the reported ε is at most δ. (The log of 1 − δc once lost the term and under-reported ε.)"""

    e = sdp.BoundedRange(eta).epsilon(delta)
    with mp.workdps(40):
        a = 1 - mp.exp((mp.mpf(e) - eta) / 2)
        exact = a * a / (1 - mp.exp(-mp.mpf(eta))) if e < eta else mp.mpf(0)
    assert exact <= delta
    assert sdp.BoundedRange(eta).delta(e) <= delta


@pytest.mark.parametrize("k", [2, 3, 7])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_vectorised_rr_renyi_is_an_upper_bound_within_1e11(k: int, alpha: float) -> None:
    # the vectorised curve that RDP sums use for many randomized-response / pure-DP items, at
    # ε across the series/log-sum-exp switch (λε = 1/2) and the e^{−ε} regimes, against
    # enumeration in mpmath: never below, at most 1e-11 above (it is rounded up by 2^-40)
    from sharpdp._divergences import rr_renyi_many

    eps = [1e-9, 1e-4, 0.01, 0.3, 0.49, 0.5, 0.51, 0.99, 1.0, 1.01, 2.5, 7.0, 40.0]
    got = rr_renyi_many(np.array(eps), alpha, k)
    for e, value in zip(eps, got, strict=True):
        want = rr_renyi(e, alpha, k)  # mpmath at 40 digits (its last digits are rounding)
        assert want * (1 - mp.mpf(10) ** -30) <= value <= want * (1 + 1e-11) + 1e-300
    assert list(rr_renyi_many(np.array([0.0, math.inf]), alpha, k)) == [0.0, math.inf]


@pytest.mark.parametrize("mu", [1e6, 1e8, 1e9, 1e10, 1e12])
def test_gaussian_delta_holds_at_huge_mu(mu: float) -> None:
    """δ(ε) = Φ(a) − e^ε Φ(b), a = μ/2 − ε/μ, b = a − μ, in 80 digits, at ε = μ²/2 − xμ (a ≈ x):
    for μ ≥ 1e9 the outside term was exp(log(e^ε − 1) + log Φ(b)), two terms of size ~ε whose
    rounding swamped their sum, and δ came out as low as 3e-7 for an exact 0.977; calibrating a
    Gaussian to (5e17, 1e-6) then returned a σ that did not meet it."""
    with mp.workdps(80):
        for x in (-3.0, 0.0, 0.5, 2.0, 5.0, 20.0):
            eps = mu * mu / 2 - x * mu
            m, e = mp.mpf(mu), mp.mpf(eps)  # (the floats, exactly)
            a = m / 2 - e / m
            exact = mp.ncdf(a) - mp.e**e * mp.ncdf(a - m)
            got = sdp.GDP(mu).delta(eps)
            assert exact <= got, (x, got, exact)
            # a = μ/2 − ε/μ is known to the last bit of ε/μ (~1.1e-16·μ), at slope ≤ φ(a)
            assert got <= exact * (1 + 1e-9) + 1e-15 * mu, (x, got, exact)
    sigma = sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(mu * mu / 2, 1e-6)).sigma
    with mp.workdps(80):
        m, e = 1 / mp.mpf(sigma), mp.mpf(mu * mu / 2)
        a = m / 2 - e / m
        assert mp.ncdf(a) - mp.e**e * mp.ncdf(a - m) <= 1e-6


@pytest.mark.parametrize(
    "rho", [5e-324, 1e-320, 1e-310, 1e-308, 1e-100, 1e-60, 1e-30, 1e-20, 1e-12, 1e-3, 1.0]
)
def test_zcdp_epsilon_is_never_below_the_gaussians_own(rho: float) -> None:
    """The Gaussian of μ = √(2ρ) is ρ-zCDP, so a valid ε(δ) of ρ-zCDP has that Gaussian's δ at it
    ≤ δ (100 digits). CKS20's optimum was evaluated with log λ − log1p λ (~1e-14 of rounding at
    λ = 1e7…1e51): ε(1e-20) of ZCDP(1e-30) came out 3.1e-15 (the Gaussian's δ there 6.9e-18),
    and 0 for ZCDP(1e-100) at δ = 1e-300. At subnormal ρ, log(1/δ)/ρ overflowed the order's
    bracket (a NaN, read as ε = 0) and BS16 Lemma 3.6's overflowing denominator was read as
    δ = 5e-324: ZCDP(1e-310).epsilon(1e-300) was 9e-301, the Gaussian's own 3.6e-154. (Digits:
    the Gaussian's δ is a difference of two values near ½ that differ by ~√ρ.)"""
    with mp.workdps(100 + math.ceil(-math.log10(rho))):
        m = mp.sqrt(2 * mp.mpf(rho))
        for delta in (1e-300, 1e-100, 1e-20, 1e-6, 0.5):
            for e in (sdp.ZCDP(rho).epsilon(delta), sdp.compose([sdp.ZCDP(rho)]).epsilon(delta)):
                x = mp.mpf(e)
                a = m / 2 - x / m
                assert mp.ncdf(a) - mp.e**x * mp.ncdf(a - m) <= delta * (1 + 1e-12), (delta, e)
        for e in (0.0, 1e-160, 1e-150, 1e-20):
            x = mp.mpf(e)
            a = m / 2 - x / m
            assert sdp.ZCDP(rho).delta(e) >= mp.ncdf(a) - mp.e**x * mp.ncdf(a - m), e


def test_tiny_parameters_never_underflow_to_zero_privacy_loss() -> None:
    """A positive divergence or δ must never be reported as 0: D_α of a 1e-300-DP item rounded
    to 0, so 10⁸ of them composed by Rényi sums certified δ(0) = 0; two GDP(1e-300) composed to
    μ = 0 (c·μ² underflowed); GDP(1e-300) converted to ZCDP(0)."""
    for item in (sdp.PureDP(1e-300), sdp.RandomizedResponse(1e-300), sdp.BoundedRange(1e-300)):
        assert item.renyi(2.0) > 0.0, item
    # δ(0) of μ-GDP is 2Φ(μ/2) − 1 = μ/√(2π) to first order; two composed: μ√2
    with mp.workdps(50):
        exact = 2 * mp.ncdf(mp.mpf(1e-300) * mp.sqrt(2) / 2) - 1
    assert sdp.compose([(sdp.GDP(1e-300), 2)]).delta(0.0) >= exact
    # k items of ε-DP: δ(0) = TV of the k-fold binary RR ≥ P[Bin(k, p) > k/2] − P[Bin(k, q) > k/2],
    # which the CLT makes ≈ 2√k·ε/√(2π)·(1/2) > 0: certainly positive
    assert sdp.compose([(sdp.PureDP(1e-300), 10**8)]).delta(0.0) > 0.0
    assert sdp.compose([(sdp.PureDP(1e-300), 10**9)]).epsilon(1e-300) > 0.0
    assert sdp.convert(sdp.GDP(1e-300), sdp.ZCDP).rho > 0.0


def test_gdp_to_zcdp_rounds_up() -> None:
    """ρ = μ²/2 as the least float ≥ it (0.5·μ·μ rounded to nearest: 0.24499999999999997 for
    μ = 0.7, below the exact 0.2449999999999999689...)."""
    rng = np.random.default_rng(5)
    for mu in [0.7, *rng.uniform(0, 10, 200), *10.0 ** rng.uniform(-200, 150, 200)]:
        rho = sdp.convert(sdp.GDP(float(mu)), sdp.ZCDP).rho
        exact = Fraction(float(mu)) ** 2 / 2
        assert Fraction(rho) >= exact
        assert Fraction(math.nextafter(rho, 0.0)) < exact


@pytest.mark.parametrize("epsilon0", [1e-3, 1.0, 30.0, 1e154])
def test_epsilon_of_delta_never_rises_with_delta(epsilon0: float) -> None:
    """ε(δ) is non-increasing: ε(1e-300) was 4 ulps above ε(0) = ε0 (ε0 + log1p(−x) rounded up
    when the log1p is 0), and BR's ε(0.5) above its ε(1e-6) at η ≥ 1e154."""
    deltas = [0.0, 1e-300, 1e-100, 1e-20, 1e-6, 0.1, 0.5, 1 - 1e-16]
    for g in (
        sdp.PureDP(epsilon0),
        sdp.Laplace(1.0 / epsilon0),
        sdp.RandomizedResponse(epsilon0),
        sdp.BoundedRange(epsilon0),
        sdp.Exponential(epsilon0),
        sdp.ApproxDP(epsilon0, 1e-300),
    ):
        values = [g.epsilon(d) for d in deltas]
        assert all(a >= b for a, b in itertools.pairwise(values)), (g, values)


@pytest.mark.parametrize("mu", [3e154, 1e160, 1e200, 1e300])
def test_gaussian_log_delta_at_a_past_the_float_square_root_is_a_number(mu: float) -> None:
    """With a = μ/2 − ε/μ past 1.3e154, a² overflows: the outside term's rounding allowance was
    0·inf, a NaN (δ still read 1 by luck of min(1, NaN)). Here δ = Φ(a) − e^ε Φ(b) with
    a > 1e144 and e^ε Φ(b) = φ(a)·Φ(b)/φ(b) ≤ φ(a)·√(π/2) (e^ε φ(b) = φ(a); Mills' ratio):
    1 − δ is far below any float's spacing at 1, so 1.0 is the least valid float."""
    from sharpdp._divergences import gaussian_log_delta

    for eps in (0.0, 1.0, 1e10):
        assert not math.isnan(gaussian_log_delta(mu, eps))
        assert sdp.GDP(mu).delta(eps) == 1.0


def test_pure_and_laplace_epsilon_of_delta_never_below_near_delta_zero() -> None:
    # ε(δ) = ε0 + log(1 − x) nearly cancels where δ(0) ≈ δ: 4 ulps of the small result were
    # below the error of ε0's own last bits (PureDP(2).epsilon(0.7616) was 1.8e-15 against an
    # exact 2.2e-15, and δ(ε(δ)) > δ). Exact: RR's and Laplace's closed forms in 50 digits.
    from sharpdp import _divergences

    rng = np.random.default_rng(7)
    with mp.workdps(50):
        for _ in range(400):
            e0 = float(10 ** rng.uniform(-3, 1.5))
            top = -math.expm1(-e0)  # δ(0) of Laplace; RR's is tanh(ε0/2)
            for d in (top * float(rng.uniform(0.9, 1.0)), math.tanh(e0 / 2) * (1 - 1e-15)):
                x = mp.mpf(d) * (1 + mp.exp(-mp.mpf(e0)))
                exact_rr = max(mp.mpf(0), mp.mpf(e0) + mp.log(1 - x)) if x < 1 else 0
                assert mp.mpf(sdp.PureDP(e0).epsilon(d)) >= exact_rr
                exact_lap = max(mp.mpf(0), mp.mpf(e0) + 2 * mp.log(1 - mp.mpf(d)))
                assert mp.mpf(_divergences.laplace_epsilon(e0, d)) >= exact_lap
    g = sdp.PureDP(2.0)
    d = 0.7615941559557646
    assert g.delta(g.epsilon(d)) <= d


def test_group_parameters_are_rounded_up() -> None:
    # k·x rounded to nearest fell an ulp below the exact product about a third of the time
    from fractions import Fraction

    rng = np.random.default_rng(11)
    for _ in range(300):
        x, k = float(rng.uniform(1e-3, 10.0)), int(rng.integers(2, 50))
        assert Fraction(sdp.PureDP(x).group(k).epsilon_) >= Fraction(x) * k
        assert Fraction(sdp.GDP(x).group(k).mu) >= Fraction(x) * k
        assert Fraction(sdp.BoundedRange(x).group(k).eta) >= Fraction(x) * k
        assert Fraction(sdp.ZCDP(x).group(k).rho) >= Fraction(x) * k * k
        assert Fraction(sdp.ZCDP(0.0, x).group(k).xi) >= Fraction(x) * k
        assert Fraction(sdp.RandomizedResponse(x).group(k).epsilon(0.0)) >= Fraction(x) * k


def test_zero_rho_zcdp_is_pure_dp_in_compositions() -> None:
    # (ξ, 0)-zCDP is ξ-DP (Bun–Steinke 2016 Def 1.1 at α = ∞): its sharp Rényi curve is
    # randomized response's (Steinke 2024 Thm 4), not the flat ξ, which made compositions
    # 2× looser than the same PureDP items; and (ξ, 0, δ)-approximate zCDP is (ξ, δ)-DP
    for alpha in (1.0, 1.5, 2.0, 10.0, math.inf):
        assert sdp.ZCDP(0.0, 0.7).renyi(alpha) == sdp.PureDP(0.7).renyi(alpha)
    as_zcdp = sdp.compose([(sdp.ZCDP(0.0, 0.1), 100), sdp.Gaussian(5.0)]).epsilon(1e-6)
    as_pure = sdp.compose([(sdp.PureDP(0.1), 100), sdp.Gaussian(5.0)]).epsilon(1e-6)
    assert as_zcdp == as_pure  # (10.90 before; the PLD reads it by the ξ-RR pair too)
    approx = sdp.compose([(sdp.ApproxZCDP(0.0, 1e-9, 0.1), 100)]).epsilon(1e-6)
    assert approx == sdp.compose([(sdp.ApproxDP(0.1, 1e-9), 100)]).epsilon(1e-6)
    assert sdp.convert(sdp.ApproxZCDP(0.1, 0.0, 0.2), sdp.ZCDP) == sdp.ZCDP(0.1, 0.2)
    with pytest.raises(sdp.NotImplied):
        sdp.convert(sdp.ApproxZCDP(0.1, 1e-6), sdp.ZCDP)


def test_group_of_zcdp_with_xi() -> None:
    # (ξ, ρ)-zCDP with ξ > 0 is (ρ + ξ)-zCDP (ξ + ρα ≤ (ξ + ρ)α for α ≥ 1), whose group of k is
    # k²(ρ + ξ)-zCDP (Bun–Steinke 2016 Prop 1.9); with ξ < 0 it is ρ-zCDP (it raised before)
    from fractions import Fraction

    got = sdp.ZCDP(0.1, 0.2).group(3)
    assert got.xi == 0.0
    assert Fraction(got.rho) >= (Fraction(0.1) + Fraction(0.2)) * 9
    assert got.rho == pytest.approx(2.7, rel=1e-15)
    assert sdp.ZCDP(0.5, -0.1).group(3).rho == pytest.approx(4.5, rel=1e-15)


def test_rdp_from_a_formula_with_limits_and_overflow() -> None:
    # Mironov's Laplace formula: 1/(α − 1) at α = 1, NaN at α = ∞, OverflowError past α ≈ 700.
    # Those orders now read as "no bound" (∞, always valid); epsilon() raised before.
    def laplace(alpha: float, b: float = 1.0) -> float:
        lam = alpha - 1
        inner = alpha / (2 * alpha - 1) * math.exp(lam / b) + lam / (2 * alpha - 1) * math.exp(
            -alpha / b
        )
        return math.log(inner) / lam

    g = sdp.RDP.from_function(laplace)
    assert g.renyi(1.0) == math.inf
    assert g.renyi(math.inf) == math.inf
    assert g.renyi(2.0) == pytest.approx(float(laplace_renyi_quad(1.0, 2.0)), rel=1e-12)
    assert sdp.Laplace(1.0).epsilon(1e-5) <= g.epsilon(1e-5) < 1.1
    assert sdp.RDP.from_function(lambda a: np.float32(0.1 * a)).epsilon(1e-5) > 0  # (refused)
    with pytest.raises(sdp.InvalidParameter, match="raised KeyError"):
        sdp.RDP.from_function(lambda a: {}[a]).renyi(2.0)


def test_listed_rdp_orders_are_read_between_the_points() -> None:
    # ε(δ) took the least CKS20 value at the listed orders only, while renyi() bounds the orders
    # between them (convexity of (α − 1)D_α); and a finite D_α meant no mass at infinite loss
    def lap(a: float, e0: float = 0.1) -> float:  # Laplace's curve (Mironov 2017 Table II)
        return math.log(
            a / (2 * a - 1) * math.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * math.exp(-a * e0)
        ) / (a - 1)

    orders = [1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    listed = sdp.RDP(orders, [lap(a) for a in orders])
    points_only = min(float(cks20_epsilon_mp(a, lap(a), 1e-2)) for a in orders)
    got = listed.epsilon(1e-2)
    assert got <= points_only * (1 - 4e-3)  # (0.080458 at the points, 0.080036 between them)
    assert got >= sdp.Laplace(10.0).epsilon(1e-2)  # the exact Laplace profile is below any RDP read
    assert sdp.RDP([1.0], [0.01]).delta(math.inf) == 0.0


def cks20_epsilon_mp(alpha: float, tau: float, delta: float) -> mp.mpf:
    """CKS20 Prop 12: ε = τ + log((α − 1)/α) − (log δ + log α)/(α − 1), in 40 digits."""
    with mp.workdps(40):
        a = mp.mpf(alpha)
        return mp.mpf(tau) + mp.log((a - 1) / a) - (mp.log(mp.mpf(delta)) + mp.log(a)) / (a - 1)


# -- extreme parameters: each reference is independent of sharpdp (mpmath, rationals, a pair) -----


def _gaussian_delta(mu: mp.mpf, epsilon: mp.mpf) -> mp.mpf:
    """The Gaussian mechanism's exact δ(ε) at μ = Δ/σ, Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)."""
    return mp.ncdf(mu / 2 - epsilon / mu) - mp.e**epsilon * mp.ncdf(-mu / 2 - epsilon / mu)


@pytest.mark.parametrize(
    ("mu", "tau"), [(1e-20, 1.0), (1.0, 1e9), (10.0, 1e150), (0.3, 1e6), (5e-324, 1e-300)]
)
def test_mcdp_never_loses_its_mean(mu: float, tau: float) -> None:
    """ξ = μ − τ²/2 in floats lost μ when μ ≪ τ²/2 (and ρ = τ²/2 underflowed to 0 at τ = 1e-300):
    MCDP(1e-20, 1) read as perfectly private. The Gaussian with μ_g = min(τ, √(2μ)) is
    (μ, τ)-mCDP (its loss is N(μ_g²/2, μ_g²)), so every answer must cover its (2000 digits)."""
    g = sdp.MCDP(mu, tau)
    with mp.workdps(2000):
        m = min(mp.mpf(tau), mp.sqrt(2 * mp.mpf(mu)))
        assert g.delta(0.0) >= 2 * mp.ncdf(m / 2) - 1
        e = g.epsilon(1e-6)
        if e < 1e4:  # (δ(ε) decreases: past it, below 1e-6 for every μ_g here)
            assert _gaussian_delta(m, mp.mpf(e)) <= 1e-6
        for alpha in (1.0, 2.0, 10.0):
            assert g.renyi(alpha) >= mp.mpf(alpha) * m * m / 2 * (1 - mp.mpf(10) ** -100)
    assert Fraction(g.renyi(1.0)) >= Fraction(mu)  # E[Z] ≤ μ is attained: KL = μ possible
    assert math.isinf(g.renyi(math.inf))  # a subgaussian loss is unbounded
    laplace = sdp.convert(sdp.Laplace(1.0, sensitivity=20.0), sdp.MCDP)
    with mp.workdps(40):  # the Laplace KL ε0 + e^{−ε0} − 1 (it read 1.1e-14 below)
        assert laplace.renyi(1.0) >= 19 + mp.exp(-20)


def test_listed_rdp_points_far_apart_interpolate_validly() -> None:
    """The chord weight w = (a − α)/(a − a0) rounded to 1 with a = 1e20, dropping the upper
    point: D_10 read 0.111 below D_2 = 1. The pair P = (0.2, 0.8), Q = (0.2e⁻², 1 − 0.2e⁻²)
    meets D_2 ≤ 1 and D_∞ = 2 ≤ 1000, so it satisfies the guarantee; its D_10 and δ(1) are
    lower bounds on the guarantee's."""
    r = sdp.RDP((2.0, 1e20), (1.0, 1000.0))
    with mp.workdps(50):
        p = [mp.mpf("0.2"), mp.mpf("0.8")]
        q = [mp.mpf("0.2") * mp.e**-2, 1 - mp.mpf("0.2") * mp.e**-2]

        def renyi(alpha: mp.mpf) -> mp.mpf:
            return mp.log(sum(a**alpha * b ** (1 - alpha) for a, b in zip(p, q, strict=False))) / (
                alpha - 1
            )

        assert renyi(2) <= 1
        assert r.renyi(10.0) >= renyi(10)
        assert r.renyi(10.0) >= r.renyi(2.0)
        assert r.delta(1.0) >= sum(max(0, a - mp.e * b) for a, b in zip(p, q, strict=False))
        assert sdp.compose([r]).delta(1.0) >= sum(
            max(0, a - mp.e * b) for a, b in zip(p, q, strict=False)
        )


def test_tiny_parameters_keep_positive_bounds() -> None:
    """αμ²/2 underflowed to 0 (GDP(1e-200)); RR's δ at ε0 − ε of one subnormal unit rounded to
    0; CKS20's log δ overflowed to −inf (α = 1e300, ε = 1e10) and read as δ = 0."""
    assert Fraction(sdp.GDP(1e-200).renyi(2.0)) >= Fraction(1e-200) ** 2
    with mp.workdps(700):
        mu = mp.mpf(1e-300)
        assert sdp.convert(sdp.GDP(1e-300), sdp.RDP).delta(0.0) >= 2 * mp.ncdf(mu / 2) - 1
        tiny = mp.mpf(5e-324)
        assert sdp.PureDP(5e-324).delta(0.0) >= mp.tanh(tiny / 2)
        assert sdp.RandomizedResponse(5e-324).delta(0.0) >= mp.tanh(tiny / 2)
        assert sdp.ApproxDP(5e-324, 5e-324).delta(0.0) >= tiny + (1 - tiny) * mp.tanh(tiny / 2)
    assert sdp.convert(sdp.PureDP(5e-324), sdp.ApproxDP, epsilon=0.0).delta_ > 0.0
    assert sdp.RDP((1e300,), (1.0,)).delta(1e10) > 0.0
    assert sdp.RDP((10.0,), (710.0,)).delta(1.7e308) > 0.0


def test_products_are_rounded_up() -> None:
    """ρα, αμ²/2, k·η (TopK's D_∞ and group) and k·Δ_eff (Laplace's group) were rounded to
    nearest: about half fell an ulp below the exact rational (TopK(3, 0.7).epsilon(0) =
    2.0999999999999996 < 3 × 0.7, and δ there read 0)."""
    rng = np.random.default_rng(5)
    for rho, alpha in zip(rng.uniform(0, 2, 300), rng.uniform(1, 50, 300), strict=False):
        assert Fraction(sdp.ZCDP(rho).renyi(alpha)) >= Fraction(rho) * Fraction(alpha)
        assert Fraction(sdp.GDP(rho).renyi(alpha)) >= Fraction(alpha) * Fraction(rho) ** 2 / 2
    top = sdp.TopK(3, 0.7)
    assert Fraction(top.epsilon(0.0)) >= 3 * Fraction(0.7)
    assert Fraction(top.renyi(math.inf)) >= 3 * Fraction(0.7)
    assert Fraction(sdp.TopK(3, 1e-20).group(3).epsilon_) >= 3 * Fraction(1e-20)
    assert Fraction(sdp.TopK(3, 0.1).group(1000).epsilon_) >= 1000 * Fraction(0.1)
    laplace = sdp.Laplace(2.0527327176660117, sensitivity=6.407829781405481)
    k = 9269811
    assert Fraction(laplace.group(k).effective_sensitivity) >= k * Fraction(
        laplace.effective_sensitivity
    )


def test_composition_of_subnormal_epsilons_is_valid() -> None:
    """KOV's sums lost whole units at subnormal ε: 16 × PureDP(5e-324) read δ(5e-324) =
    4.9e-324 (exactly 5.8e-324), and max_compositions allowed 23 where 23 copies have δ =
    7.1e-324. Exact: the k-fold randomized response, Σ_i C(k, i) pⁱ(1 − p)^{k−i}
    (1 − e^{ε − (2i − k)ε0})₊, p = e^{ε0}/(1 + e^{ε0}) (800 digits)."""

    def exact(k: int, epsilon: float) -> mp.mpf:
        e0, e = mp.mpf(5e-324), mp.mpf(epsilon)
        p = mp.e**e0 / (1 + mp.e**e0)
        return mp.fsum(
            mp.binomial(k, i)
            * p**i
            * (1 - p) ** (k - i)
            * max(0, 1 - mp.e ** (e - (2 * i - k) * e0))
            for i in range(k + 1)
        )

    with mp.workdps(800):
        assert sdp.compose([(sdp.PureDP(5e-324), 16)]).delta(5e-324) >= exact(16, 5e-324)
        eps = sdp.compose([(sdp.PureDP(5e-324), 50)]).epsilon(5e-324)
        assert exact(50, eps) <= 5e-324
        count = sdp.max_compositions(sdp.PureDP(5e-324), sdp.ApproxDP(5e-324, 5e-324))
        assert exact(count, 5e-324) <= 5e-324


def test_laplace_renyi_is_never_below_mironovs_formula() -> None:
    """D_α of the Laplace mechanism [Mironov 2017 Prop 6] in 60 digits, α → 1 the KL
    ε0 + e^{−ε0} − 1: the float closed forms were a few ulps either way (KL at ε0 = 20 one
    below)."""
    with mp.workdps(60):
        for eps0 in (1e-8, 0.01, 0.3, 1.0, 3.0, 20.0, 300.0):
            e0 = mp.mpf(eps0)
            m = sdp.Laplace(1.0 / eps0) if eps0 <= 1.0 else sdp.Laplace(1.0, sensitivity=eps0)
            assert Fraction(m.epsilon0) == Fraction(eps0)
            assert m.renyi(1.0) >= e0 + mp.exp(-e0) - 1
            for alpha in (1.001, 1.5, 2.0, 7.0, 100.0, 1e4):
                a = mp.mpf(alpha)
                exact = mp.log(
                    a / (2 * a - 1) * mp.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * mp.exp(-a * e0)
                ) / (a - 1)
                assert m.renyi(alpha) >= exact, (eps0, alpha)
                assert m.renyi(alpha) <= exact * (1 + 1e-12) + 1e-300
        # random pairs, and two that a 4-ulp padding left below (a relative 1.3e-16)
        rng = np.random.default_rng(11)
        pairs = [(1 / 91.71923532275162, 1.017413686228344)]
        pairs += [(1 / 283.04440851210506, 1.1222563572305242)]
        pairs += list(
            zip(10 ** rng.uniform(-6, 2.5, 400), 1 + 10 ** rng.uniform(-6, 3, 400), strict=True)
        )
        for eps0, alpha in pairs:
            m = sdp.Laplace(1.0 / eps0) if eps0 < 1 else sdp.Laplace(1.0, sensitivity=eps0)
            e0, a = mp.mpf(m.epsilon0), mp.mpf(alpha)  # (a float converts exactly)
            exact = mp.log(
                a / (2 * a - 1) * mp.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * mp.exp(-a * e0)
            ) / (a - 1)
            assert m.renyi(alpha) >= exact, (eps0, alpha)
    # Below the normal floats a relative padding meant nothing: the terms lost whole subnormal
    # units. 700 digits: the divergences (~ε0²) are differences of numbers near 1.
    # (With one ulp of padding, 34 of 300 random points at ε0 ∈ [1e-162, 1e-145] were below,
    # with α near 1 — some underflowed to 0; three of them are listed.)
    from sharpdp import _divergences

    rng = np.random.default_rng(2)
    points = [
        (2.9279426814015727e-162, 1.6156915207740798),
        (3.586080076039411e-156, 1.0018153734300403),
        (5.492945095626903e-160, 1.0037603793733396),
    ]
    for eps0 in (1e-160, 1e-150, 1e-146, 1e-140, *(10 ** rng.uniform(-162, -145, 20))):
        points += [(eps0, alpha) for alpha in (1.0, 2.0, 1e3, *(1 + 10 ** rng.uniform(-3, 0, 3)))]
    with mp.workdps(700):  # (the divergences, ~ε0², are differences of numbers near 1)
        for eps0, alpha in points:
            got = _divergences.laplace_renyi(eps0, alpha)
            e0, a = mp.mpf(eps0), mp.mpf(alpha)
            if alpha == 1.0:
                exact = e0 + mp.exp(-e0) - 1
            else:
                exact = mp.log(
                    a / (2 * a - 1) * mp.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * mp.exp(-a * e0)
                ) / (a - 1)
            assert got >= exact, (eps0, alpha)
            assert got <= exact * 1.001 + 1e-322  # (αε0²/2 is first-order exact; subnormal units)


def test_zcdp_tail_formulas_are_never_below_their_exact_values() -> None:
    """BS16 Lemma 3.6's δ and CKS20's δ from one RDP point are exponentials of sums whose
    rounding is absolute in the exponent: 4 ulps of δ left the lemma 3e-14 below its own value at
    ρ = 1e-200, ε = 1e-99. Checked against both formulas in 80 digits over random parameters."""
    from sharpdp import _tails

    rng = np.random.default_rng(3)
    with mp.workdps(80):
        for lr, lg, la in zip(
            rng.uniform(-300, 1, 600),
            rng.uniform(-3, 1.5, 600),
            rng.uniform(-3, 3, 600),
            strict=True,
        ):
            rho = 10.0**lr
            eps = rho + 10.0**lg * math.sqrt(rho)
            big_r, big_e = mp.mpf(rho), mp.mpf(eps)
            s = big_e - big_r
            a = s / (2 * big_r)
            lemma = (
                mp.exp(-(s**2) / (4 * big_r))
                * 2
                / (1 + a + mp.sqrt((1 + a) ** 2 + 4 / (mp.pi * big_r)))
            )
            assert _tails.bs16_lemma36_delta(rho, 0.0, eps) >= min(1, lemma), (rho, eps)
            alpha = 1 + 10.0**la
            tau = rho * alpha  # (rounded: the padding covers an ulp of τ too)
            big_a = mp.mpf(alpha)
            point = mp.exp((big_a - 1) * (mp.mpf(tau) - big_e + mp.log(1 - 1 / big_a))) / big_a
            assert _tails.cks20_delta(alpha, tau, eps) >= min(1, point), (alpha, tau, eps)
