"""Privacy loss distributions (sharpdp.accounting.pld), tested from first principles.

Expected values never come from sharpdp. They are computed in this file or in ``reference.py``:

* composed finite pairs (randomized response, pure DP, the four-point (ε, δ)-DP pair) by brute-force
  enumeration of every tuple of outcomes with mpmath: δ(ε) = Σ_y max(0, P(y) − e^ε Q(y));
* the k-fold pure-DP profile by Kairouz–Oh–Viswanath / Murtagh–Vadhan's formula (KOV15 Thm 3.3; MV16 Thm 1.5);
* k-fold Gaussians by the closed form of √k·μ-GDP (Dong–Roth–Su 2019 Cor 2.13, 3.3) in mpmath;
* the Laplace mechanism by its closed-form profile (hockey-stick integral), and the discrete
  Laplace/Gaussian by direct summation over the integers;
* the FFT error bound against an exact DFT computed in extended precision.

The contract checked everywhere: optimistic ≤ exact ≤ pessimistic (never below the exact value),
and close (the reported pessimistic value is within its certified bracket).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from typing import Any

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sharpdp as sdp
from reference import (
    approx_dp_pair,
    br_pair_k_fold_delta,
    gaussian_delta,
    hockey_stick,
    invert_profile,
    rr_delta,
    rr_pair,
)
from sharpdp.accounting import pld
from sharpdp.errors import InvalidParameter, NotImplied
from sharpdp.mechanisms.discrete import DiscreteGaussian, DiscreteLaplace

Dist = list[Any]


@pytest.fixture(autouse=True, scope="module")
def _forty_digits() -> Iterator[None]:
    """The references below run at 40 digits (at 50 inside ``reference``'s functions), set for
    this module's tests only: a module-level ``mp.mp.dps = 40`` would leak into the worker's other
    tests, and a setting of theirs into these."""
    with mp.workdps(40):
        yield


# -------------------------------------------------------------------------------------------------
# independent references


def product_pair(pairs: Sequence[tuple[Dist, Dist]]) -> tuple[Dist, Dist]:
    """The product of finite pairs (composition), by enumeration of outcome tuples."""
    p_out: Dist = []
    q_out: Dist = []
    for combo in itertools.product(*[range(len(p)) for p, _ in pairs]):
        pp = mp.mpf(1)
        qq = mp.mpf(1)
        for (p, q), i in zip(pairs, combo, strict=True):
            pp *= p[i]
            qq *= q[i]
        p_out.append(pp)
        q_out.append(qq)
    return p_out, q_out


def product_pair_of_groups(groups: Sequence[tuple[tuple[Dist, Dist], int]]) -> tuple[Dist, Dist]:
    """The product of ``count`` copies of each finite pair, by enumeration of outcome tuples with
    the orderings of one multiset of a group's outcomes merged: they have the same P- and
    Q-probability (a product of the same factors), and outcomes with equal (P, Q) merge into one
    without changing any hockey-stick divergence. One outcome per multiset, P and Q times its
    number of orderings (C(9, 3) outcomes instead of 4⁶ for six copies of a four-point pair)."""
    p_out: Dist = []
    q_out: Dist = []
    per_group = [
        list(itertools.combinations_with_replacement(range(len(pair[0])), count))
        for pair, count in groups
    ]
    for combo in itertools.product(*per_group):
        pp = qq = mp.mpf(1)
        for ((p, q), count), multiset in zip(groups, combo, strict=True):
            orderings = math.factorial(count)
            for multiplicity in Counter(multiset).values():
                orderings //= math.factorial(multiplicity)
            pp *= orderings * mp.fprod(p[i] for i in multiset)
            qq *= orderings * mp.fprod(q[i] for i in multiset)
        p_out.append(pp)
        q_out.append(qq)
    return p_out, q_out


@cache
def _kov_terms(eps0: float, k: int, prec: int) -> tuple[list[tuple[int, Any, Any]], Any]:
    """(C(k, i), e^{iε0}, e^{(k − i)ε0}) for i = 0..k and (1 + e^{ε0})^k at ``prec`` bits: the
    ε-free parts of :func:`kov_delta`, computed once per (ε0, k) (its inversion evaluates it
    ~150 times)."""
    with mp.workprec(prec):
        e0 = mp.mpf(eps0)
        terms = [(math.comb(k, i), mp.exp(i * e0), mp.exp((k - i) * e0)) for i in range(k + 1)]
        return terms, (1 + mp.exp(e0)) ** k


def kov_delta(eps0: float, k: int, eps: Any) -> Any:
    """δ of k-fold ε0-DP at ε [KOV15 Thm 3.3; MV16 Thm 1.5]:
    Σ_i C(k, i)(e^{iε0} − e^ε e^{(k − i)ε0})_+ / (1 + e^{ε0})^k."""
    terms, norm = _kov_terms(eps0, k, mp.mp.prec)
    f = mp.exp(mp.mpf(eps))
    total = mp.mpf(0)
    for binomial, up, down in terms:
        v = up - f * down
        if v > 0:
            total += binomial * v
    return total / norm


def laplace_delta(eps0: float, eps: Any) -> Any:
    """Laplace profile (hockey-stick integral): δ(ε) = 1 − e^{(ε−ε0)/2} on [−ε0, ε0], 0 above,
    1 − e^ε below."""
    e0, e = mp.mpf(eps0), mp.mpf(eps)
    if e >= e0:
        return mp.mpf(0)
    if e <= -e0:
        return -mp.expm1(e)
    return -mp.expm1((e - e0) / 2)


def _eps0(scale: float, sens: float) -> float:
    """ε0 = Δ_eff/b of sdp.Laplace, whose query is rounded to the grid γℤ: Δ_eff = γ⌈Δ/γ⌉."""
    gamma = sdp.Laplace(scale, sens).granularity
    assert gamma is not None
    return gamma * math.ceil(sens / gamma) / scale


@cache
def _discrete_laplace_weights(scale: float, sens: int, prec: int) -> tuple[list[Any], Any]:
    """e^{−n/scale} for n = 0 … zmax + Δ and the normaliser Σ_{|z| ≤ zmax} e^{−|z|/scale}, at
    ``prec`` bits: the ε-free parts of :func:`discrete_laplace_delta`, computed once."""
    with mp.workprec(prec):
        t = mp.mpf(scale)
        zmax = int(60 * scale) + sens + 10
        weights = [mp.exp(-n / t) for n in range(zmax + sens + 1)]
        norm = mp.fsum(weights[abs(z)] for z in range(-zmax, zmax + 1))
        return weights, norm


def discrete_laplace_delta(scale: float, sens: int, eps: Any) -> Any:
    """Σ_z max(0, P(z) − e^ε P(z − Δ)), P(z) ∝ exp(−|z|/scale), summed over a wide window."""
    zmax = int(60 * scale) + sens + 10
    weights, norm = _discrete_laplace_weights(scale, sens, mp.mp.prec)
    f = mp.exp(mp.mpf(eps))
    return mp.fsum(
        max(0, weights[abs(z)] - f * weights[abs(z - sens)]) / norm for z in range(-zmax, zmax + 1)
    )


def discrete_gaussian_delta(sigma: float, sens: int, eps: Any) -> Any:
    """Σ_z max(0, P(z) − e^ε P(z − Δ)), P(z) ∝ exp(−z²/(2σ²)), summed over ±(14σ + Δ)."""
    s2 = 2 * mp.mpf(sigma) ** 2
    zmax = int(14 * sigma) + sens + 10
    norm = mp.fsum(mp.e ** (-(z * z) / s2) for z in range(-zmax, zmax + 1))
    f = mp.e ** mp.mpf(eps)
    return mp.fsum(
        max(0, mp.e ** (-(z * z) / s2) - f * mp.e ** (-((z - sens) ** 2) / s2)) / norm
        for z in range(-zmax, zmax + 1)
    )


def profile_of(pld: pld.DiscretePLD, t: float) -> float:
    """δ(t) = Σ_j m_j (1 − e^{t − l_j})_+ + m_∞ of a discretised PLD, any real t (numpy)."""
    ls, ms = pld.losses, pld.masses
    return float((ms * np.maximum(0.0, -np.expm1(t - ls))).sum()) + pld.inf_mass


# -------------------------------------------------------------------------------------------------
# 1. discretisation: optimistic ≤ exact ≤ pessimistic at every real ε (order lemma's hypothesis)


PAIR_CASES: list[tuple[str, Any, Any]] = [
    ("gaussian mu=0.8", sdp.GDP(0.8), lambda e: gaussian_delta(0.8, e)),
    ("laplace eps0=0.37", sdp.Laplace(2.7), lambda e: laplace_delta(1 / 2.7, e)),
    ("laplace eps0=1.3", sdp.Laplace(1.0, 1.3), lambda e: laplace_delta(_eps0(1.0, 1.3), e)),
    ("rr eps=0.9", sdp.RandomizedResponse(0.9), lambda e: hockey_stick(*rr_pair(0.9), e)),
    ("rr3 eps=1.2", sdp.RandomizedResponse(1.2, 3), lambda e: hockey_stick(*rr_pair(1.2, 3), e)),
    ("pure eps=0.3", sdp.PureDP(0.3), lambda e: hockey_stick(*rr_pair(0.3), e)),
    (
        "approx",
        sdp.ApproxDP(0.6, 0.01),
        lambda e: hockey_stick(*approx_dp_pair(0.6, 0.01), e),
    ),
    ("dlap", DiscreteLaplace(2, 2), lambda e: discrete_laplace_delta(2.0, 2, e)),
    ("dgauss", DiscreteGaussian(1.5, 1), lambda e: discrete_gaussian_delta(1.5, 1, e)),
    ("br eta=0.8", sdp.BoundedRange(0.8), lambda e: br_pair_k_fold_delta(0.8, 1, e)),
]


@pytest.mark.parametrize(("label", "item", "exact"), PAIR_CASES, ids=[c[0] for c in PAIR_CASES])
@pytest.mark.parametrize("h", [0.0137, 0.051])
def test_discretisations_bracket_the_exact_profile_everywhere(
    label: str, item: object, exact: Any, h: float
) -> None:
    ((pair, count),) = pld.dominating_pairs(item)
    assert count == 1
    pess = pld.discretise(pair, h, pessimistic=True)
    opt = pld.discretise(pair, h, pessimistic=False)
    for t in np.linspace(-3.0, 3.0, 25 if label.startswith("d") else 61):
        ex = float(exact(float(t)))
        dp, do = profile_of(pess, float(t)), profile_of(opt, float(t))
        assert do <= ex + 1e-15, (label, t, do, ex)
        assert dp >= ex - 1e-15, (label, t, dp, ex)
        # connect the dots errs by O(h²) per unit density; atoms cost at most O(h) locally
        assert dp - ex <= 0.02 * h / 0.05 + 1e-12
        assert ex - do <= 0.05 * h / 0.05 + 1e-12
    # total mass: connect-the-dots keeps it (up to its error margins); both are measures >= 0
    assert np.all(pess.masses >= 0.0)
    assert np.all(opt.masses >= 0.0)
    assert float(pess.masses.sum()) + pess.inf_mass == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("eps0", [1e-9, 1e-6, 0.37])
@pytest.mark.parametrize("cells", [200, 2_000, 20_000])
def test_fine_grids_bracket_the_laplace_profile(eps0: float, cells: int) -> None:
    """Grids fine against ε0 (h = 2ε0/cells): optimistic ≤ exact ≤ pessimistic, relative to the
    closed form 1 − e^{(t − ε0)/2} at 50 digits, the laws' profiles summed exactly (math.fsum of
    expm1 terms). The optimistic top node's mass was R/(1 − e^{−h}) with 1 − e^{−h} computed as
    1.0 − e^{−h} (relative error u/h): its profile lay 8e-8 above the exact one at ε0 = 1e-9 with
    the default grid, 3e-4 at h = 1e-13."""
    ((pair, _),) = pld.dominating_pairs(sdp.Laplace(1.0, eps0))
    h = 2.0 * eps0 / cells
    opt = pld.discretise(pair, h, pessimistic=False)
    pess = pld.discretise(pair, h, pessimistic=True)

    def profile(law: pld.DiscretePLD, t: float) -> float:
        terms = law.masses * np.maximum(0.0, -np.expm1(t - law.losses))
        return math.fsum(terms.tolist()) + law.inf_mass

    assert math.fsum(opt.masses.tolist()) + opt.inf_mass <= 1.0
    with mp.workdps(50):
        e0 = mp.mpf(pair.epsilon0)
        for frac in (-2.0, -1.0, -0.5, 0.0, 0.3, 0.9):
            t = frac * eps0
            exact = 1 - mp.exp(min(mp.mpf(t), (mp.mpf(t) - e0) / 2))
            assert profile(opt, t) <= exact * (1 + mp.mpf(1e-14)), (frac, profile(opt, t), exact)
            assert profile(pess, t) >= exact * (1 - mp.mpf(1e-14)), (frac, profile(pess, t), exact)


@pytest.mark.parametrize("eps0", [0.1, 0.04148387766219205, 0.7, 1.3])
@pytest.mark.parametrize("n", [1, 5, 7])
def test_atoms_on_the_grid_are_exact_on_both_sides(eps0: float, n: int) -> None:
    """With h = ε0/n every atom of k-RR lies on a node (up to float rounding of the nodes): both
    discretisations keep all the mass and reproduce the exact profile."""
    ((pair, _),) = pld.dominating_pairs(sdp.RandomizedResponse(eps0, 4))
    ref = rr_pair(eps0, 4)
    h = eps0 / n
    for pess in (True, False):
        grid_pld = pld.discretise(pair, h, pessimistic=pess)
        assert float(grid_pld.masses.sum()) == pytest.approx(1.0, abs=1e-9)
        for t in (-eps0, -0.5 * eps0, 0.0, 0.3 * eps0, 0.99 * eps0):
            assert profile_of(grid_pld, t) == pytest.approx(float(hockey_stick(*ref, t)), abs=1e-9)


def test_each_pair_is_symmetric() -> None:
    """The law of L under Q (masses m e^{−L}) is the law of −L under P: the pair dominates both
    orders of a neighbouring pair."""
    for item in (
        sdp.RandomizedResponse(0.7, 4),
        sdp.ApproxDP(0.4, 0.02),
        DiscreteLaplace(3, 4),
        DiscreteGaussian(2, 3),
    ):
        ((pair, _),) = pld.dominating_pairs(item)
        assert isinstance(pair, pld.pairs.FinitePair)
        ls = np.array(pair.losses)
        ms = np.array(pair.masses)
        q = ms * np.exp(-ls)
        order_p = np.argsort(ls)
        order_q = np.argsort(-ls)
        np.testing.assert_allclose(-ls[order_q], ls[order_p], rtol=0, atol=1e-12)
        np.testing.assert_allclose(q[order_q], ms[order_p], rtol=1e-9, atol=1e-300)
    for item, mu_or_e0 in ((sdp.Gaussian(2.0), 0.5), (sdp.Laplace(2.0), 0.5)):
        ((pair, _),) = pld.dominating_pairs(item)
        for t in (0.05, 0.3, 1.0):
            lhs = pair.delta(-t)
            rhs = -math.expm1(-t) + math.exp(-t) * pair.delta(t)
            assert lhs == pytest.approx(rhs, rel=1e-12), (item, t, mu_or_e0)


# -------------------------------------------------------------------------------------------------
# 2. composed finite pairs against brute-force enumeration


def test_composed_rr_and_pure_dp_match_enumeration() -> None:
    items = [
        (sdp.RandomizedResponse(0.7, 3), 2),
        (sdp.PureDP(0.45), 2),
        (sdp.RandomizedResponse(1.1), 1),
    ]
    ref = product_pair_of_groups([(rr_pair(0.7, 3), 2), (rr_pair(0.45), 2), (rr_pair(1.1), 1)])
    for h in (0.0123, None):
        result = pld.compose_pld(items, value_discretization=h)
        for eps in (0.0, 0.4, 1.0, 1.7, 2.5, 3.5):
            exact = float(hockey_stick(*ref, eps))
            lo, hi = result.delta_bracket(eps)
            assert lo <= exact <= hi, (h, eps, lo, exact, hi)
            tol = 5e-3 if h is not None else 1e-4 * exact + 1e-12
            assert hi - lo <= tol, (h, eps, lo, hi)
        for d in (1e-2, 1e-4, 1e-6):
            exact_eps = float(invert_profile(lambda e: hockey_stick(*ref, e), d))
            lo, hi = result.epsilon_bracket(d)
            assert lo <= exact_eps <= hi
            if h is None:
                assert hi - exact_eps <= 1e-4 * exact_eps


def test_kov_formula_for_k_fold_pure_dp() -> None:
    for eps0, k in ((0.1, 10), (0.5, 40), (1.0, 100)):
        result = pld.compose_pld([(sdp.PureDP(eps0), k)])
        for d in (1e-3, 1e-9):
            exact = float(invert_profile(lambda e, eps0=eps0, k=k: kov_delta(eps0, k, e), d))
            lo, hi = result.epsilon_bracket(d)
            assert lo <= exact <= hi, (eps0, k, d, lo, exact, hi)
            assert hi - exact <= 1e-6 * exact  # the atoms lie on the grid: nearly exact
        for eps in (0.0, 0.5 * k * eps0**2, 2.0):
            exact_d = float(kov_delta(eps0, k, eps))
            lo, hi = result.delta_bracket(eps)
            assert lo <= exact_d <= hi


def test_approx_dp_infinite_mass_composes_exactly() -> None:
    items = [(sdp.ApproxDP(0.5, 1e-3), 3), (sdp.ApproxDP(1.0, 1e-2), 2)]
    ref = product_pair_of_groups([(approx_dp_pair(0.5, 1e-3), 3), (approx_dp_pair(1.0, 1e-2), 2)])
    result = pld.compose_pld(items)
    p_inf = 1 - (1 - mp.mpf("1e-3")) ** 3 * (1 - mp.mpf("1e-2")) ** 2
    assert float(hockey_stick(*ref, math.inf)) == pytest.approx(float(p_inf), rel=1e-12)
    assert result.delta(math.inf) == pytest.approx(float(p_inf), rel=1e-12)
    assert result.delta(math.inf) >= float(p_inf) * (1 - 1e-15)
    assert result.epsilon(float(p_inf) * 0.999) == math.inf
    for eps in (0.0, 0.8, 2.0, 3.4):
        exact = float(hockey_stick(*ref, eps))
        lo, hi = result.delta_bracket(eps)
        assert lo <= exact <= hi
        assert hi - lo <= 1e-4 * hi
    for d in (0.05, 0.025):
        exact_eps = float(invert_profile(lambda e: hockey_stick(*ref, e), d))
        lo, hi = result.epsilon_bracket(d)
        assert lo <= exact_eps <= hi


# -------------------------------------------------------------------------------------------------
# 3. continuous mechanisms against closed forms


@pytest.mark.parametrize(("sigma", "k"), [(1.0, 1), (5.0, 100), (20.0, 1000)])
def test_k_fold_gaussian_is_sqrt_k_mu_gdp(sigma: float, k: int) -> None:
    mu = math.sqrt(k) / sigma
    result = pld.compose_pld([(sdp.Gaussian(sigma), k)])
    for d in (1e-5, 1e-9):
        exact = float(invert_profile(lambda e: gaussian_delta(mu, e), d))
        lo, hi = result.epsilon_bracket(d)
        assert lo <= exact <= hi, (sigma, k, d, lo, exact, hi)
        assert hi - lo <= 1e-4 * hi  # certified accuracy
    for eps in (0.5, 2.0):
        exact_d = float(gaussian_delta(mu, eps))
        lo, hi = result.delta_bracket(eps)
        assert lo <= exact_d <= hi
        assert hi - lo <= 1e-4 * hi


@pytest.mark.parametrize(("scale", "sens"), [(10.0, 1.0), (0.8, 1.0), (3.0, 2.0)])
def test_single_laplace_matches_formulas_section_6(scale: float, sens: float) -> None:
    eps0 = _eps0(scale, sens)
    result = pld.compose_pld([sdp.Laplace(scale, sens)])
    for d in (0.3, 1e-2, 1e-4):
        exact = max(0.0, eps0 + 2 * math.log1p(-d))
        lo, hi = result.epsilon_bracket(d)
        assert lo <= exact + 1e-15
        assert exact <= hi
        assert hi - lo <= 1e-4 * hi
    for eps in (0.0, 0.3 * eps0, 0.9 * eps0, 1.1 * eps0):
        exact_d = float(laplace_delta(eps0, eps))
        lo, hi = result.delta_bracket(eps)
        assert lo <= exact_d <= hi


def test_discrete_laplace_and_gaussian_match_summation() -> None:
    for item, exact in (
        (DiscreteLaplace(3, 2), lambda e: discrete_laplace_delta(3.0, 2, e)),
        (DiscreteGaussian(2, 1), lambda e: discrete_gaussian_delta(2.0, 1, e)),
    ):
        result = pld.compose_pld([item])
        for eps in (0.0, 0.1, 0.3, 0.6):
            ex = float(exact(eps))
            lo, hi = result.delta_bracket(eps)
            assert lo <= ex <= hi, (item, eps, lo, ex, hi)
            assert hi - lo <= 1e-4 * hi + 1e-15


@pytest.mark.parametrize(("scale", "sens"), [(0.5, 64), (3.0, 64), (3.0, 200), (50.0, 150)])
def test_discrete_laplace_log_mgf_in_closed_form_matches_the_noise_law(
    scale: float, sens: int
) -> None:
    """Large sensitivities take the log-MGF as a geometric sum; here it is summed directly from
    the law P(z) ∝ e^{−|z|/b} and the loss (|z − Δ| − |z|)/b, including orders β < −½ where
    masses that underflow in floats carry most of E_P[e^{βL}]."""
    pair = pld.pairs.discrete_laplace_pair(scale, sens)
    assert type(pair) is pld.pairs.DiscreteLaplacePair
    t = mp.mpf(scale)
    zmax = int(60 * scale) + sens + 10
    zs = range(-zmax, zmax + 1)
    weights = [mp.exp(-n / t) for n in range(zmax + 1)]  # e^{−|z|/b}, one per |z|
    norm = mp.fsum(weights[abs(z)] for z in zs)
    for beta in (-2.0, -0.7, -0.5, -0.3, 0.0, 0.4, 2.0):
        b = mp.mpf(beta)
        # e^{βL} at L = (|z − Δ| − |z|)/b = j/b, one per integer j in [−Δ, Δ]
        tilts = {j: mp.exp(b * j / t) for j in range(-sens, sens + 1)}
        exact = mp.log(mp.fsum(weights[abs(z)] * tilts[abs(z - sens) - abs(z)] for z in zs) / norm)
        got = float(pair.log_mgf(np.array([beta]))[0])
        assert abs(got - float(exact)) <= 1e-12 * max(1.0, abs(float(exact))), (beta, got, exact)


@pytest.mark.parametrize(("sigma", "sens"), [(64.0, 1), (100.0, 7), (150.0, 40)])
def test_discrete_gaussian_log_mgf_in_closed_form_matches_the_noise_law(
    sigma: float, sens: int
) -> None:
    """From σ = 64 on the log-MGF is the Gaussian's (β + β²)Δ²/(2σ²) (Poisson summation; the
    theta-function correction is at most about 4e^{−2π²σ²}); here it is summed from P(z) ∝ e^{−z²/(2σ²)}."""
    pair = pld.pairs.discrete_gaussian_pair(sigma, sens)
    assert type(pair) is pld.pairs.DiscreteGaussianPair
    s2 = 2 * mp.mpf(sigma) ** 2
    # Each sum is Gaussian in z: −z²/s2 + β(Δ² − 2zΔ)/s2 = −(z + βΔ)²/s2 + const, centred at
    # −βΔ, |β| ≤ 3. The window keeps 12σ on either side of every centre; the terms left out sum
    # to below e^{−72} ≈ 5e-32 of each sum, far below the 1e-13 the check resolves.
    half = int(12 * sigma) + 3 * sens + 1
    zs = range(-half, half + 1)
    norm = mp.fsum(mp.exp(-(z * z) / s2) for z in zs)
    for beta in (-2.0, -0.5, 0.0, 0.7, 3.0):
        b = mp.mpf(beta)
        exact = mp.log(
            mp.fsum(mp.exp(-(z * z) / s2 + b * (sens * sens - 2 * z * sens) / s2) for z in zs)
            / norm
        )
        got = float(pair.log_mgf(np.array([beta]))[0])
        assert abs(got - float(exact)) <= 1e-13 * max(1.0, abs(float(exact))), (beta, got, exact)


def test_discrete_laplace_with_a_large_sensitivity_composes_within_its_bracket() -> None:
    item = DiscreteLaplace(40, 100)  # 101 atoms: the closed-form log-MGF is used
    result = pld.compose_pld([item, sdp.Laplace(2.0)])
    assert isinstance(pld.dominating_pairs(item)[0][0], pld.pairs.DiscreteLaplacePair)
    alone = pld.compose_pld([item])
    for eps in (0.5, 1.5, 2.4):
        ex = float(discrete_laplace_delta(40.0, 100, eps))
        lo, hi = alone.delta_bracket(eps)
        assert lo <= ex <= hi, (eps, lo, ex, hi)
    # with Laplace(2) (ε0 = ½): δ(ε) is at least the discrete part's own δ(ε + ½) [the Laplace
    # loss is ≤ ½], and the composition is (Δ/b + ½, 0) = (3, 0)-DP
    assert result.delta(2.0) >= float(discrete_laplace_delta(40.0, 100, 2.5))
    assert result.delta(3.1) == 0.0


def test_a_discrete_gaussian_too_wide_for_the_pld_leaves_the_composition_to_rdp() -> None:
    """A pair table of ~27σ atoms is refused beyond MAX_GAUSSIAN_ATOMS (σ = 2·10⁵ used to exhaust
    memory); a composition then answers by the analyses that need no atoms."""
    wide = DiscreteGaussian(2e5, 100)
    with pytest.raises(sdp.NumericalError, match="too many atoms"):
        pld.dominating_pairs(wide)
    c = sdp.compose([wide, (sdp.Laplace(10.0), 3)])
    eps = c.epsilon(1e-6)
    rows = {r.name: r for r in c.explain(delta=1e-6).rows}
    assert rows["pld"].value is None
    # between the Laplace part alone (composition never lowers ε) and the classical zCDP bound
    # of ρ = Δ²/(2σ²) + 3·ε0²/2 (Bun–Steinke 2016: Prop 1.4 for the Laplace, Lemma 3.5 to (ε, δ))
    rho = 100**2 / (2 * 2e5**2) + 3 * 0.1**2 / 2
    assert sdp.compose([(sdp.Laplace(10.0), 3)]).epsilon(1e-6) <= eps
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1e6))


def test_a_discrete_laplace_too_wide_for_the_pld_leaves_the_composition_to_others() -> None:
    wide = DiscreteLaplace(2**23, 2**23)  # ε0 = 1, with 2²³ + 1 atoms
    with pytest.raises(sdp.NumericalError, match="too many atoms"):
        pld.dominating_pairs(wide)
    c = sdp.compose([wide, sdp.PureDP(0.5)])
    assert {r.name: r for r in c.explain(delta=0.0).rows}["pld"].value is None
    assert 1.5 <= c.epsilon(0.0) <= 1.5 * (1 + 1e-12)  # pure: Σ ε0 (rounded up, never below)
    assert c.epsilon(1e-6) <= 1.5


def test_mechanisms_without_a_pair_use_their_characterisation() -> None:
    """The interval quantile is exactly ε-BR (its characterisation): the PLD composes it as the
    ε-BR pair, like the exponential mechanism, instead of declining the whole composition."""
    from sharpdp.mechanisms import Quantile

    q = Quantile(0.3, 0.5, bounds=(0.0, 100.0), cells=100)
    assert pld.supports(q)
    ((pair, count),) = pld.dominating_pairs(q)
    assert count == 1
    assert pair == pld.pairs.BoundedRangePair(0.3)
    mixed = pld.compose_pld([q, sdp.Laplace(1.0)]).epsilon(1e-6)
    assert mixed == pld.compose_pld([sdp.BoundedRange(0.3), sdp.Laplace(1.0)]).epsilon(1e-6)
    assert mixed < pld.compose_pld([sdp.PureDP(0.3), sdp.Laplace(1.0)]).epsilon(1e-6)
    rows = {r.name: r for r in sdp.compose([q, sdp.Laplace(1.0)]).explain(delta=1e-6).rows}
    assert rows["pld"].value is not None
    assert not pld.supports(sdp.ZCDP(0.1))  # a guarantee with no pair still has none


def test_laplace_k_fold_is_certified_and_below_the_pure_dp_bound() -> None:
    """500 × Laplace(b = 10): the bracket is within 1e-4, and ε0-Laplace being ε0-DP, the value
    is below the (KOV) k-fold 0.1-DP value."""
    result = pld.compose_pld([(sdp.Laplace(10.0), 500)])
    lo, hi = result.epsilon_bracket(1e-6)
    assert hi - lo <= 1e-4 * hi
    # hi is below the KOV ε(1e-6) iff the (decreasing) KOV profile still exceeds 1e-6 at hi
    assert 0.0 < lo <= hi
    assert kov_delta(0.1, 500, hi) > 1e-6


# -------------------------------------------------------------------------------------------------
# 4. composition machinery


def test_self_compose_equals_repeated_compose_and_tilts_agree() -> None:
    pair = pld.pairs.LaplacePair(0.4)
    h = 0.01
    one = pld.discretise(pair, h)
    repeated = one
    for _ in range(4):
        repeated = repeated.compose(one)
    powered = one.self_compose(5)
    ref = product_pair([rr_pair(0.4)] * 5)  # a lower bound: RR dominates... no: Laplace ≤ RR
    for eps in (0.0, 0.5, 1.0, 1.6):
        a, b = repeated.delta(eps), powered.delta(eps)
        assert a == pytest.approx(b, rel=1e-9, abs=1e-14)
        assert a <= float(hockey_stick(*ref, eps)) + 1e-12  # ε0-Laplace is ε0-DP (KOV bound)
    tilted = pld.discretise(pair, h, tilt=2.0).self_compose(5)
    for eps in (0.5, 1.6):
        assert tilted.delta(eps) == pytest.approx(powered.delta(eps), rel=1e-9, abs=1e-14)


def _assert_tables_match_direct_sums(lv: np.ndarray, h: float | None, every: int = 1) -> None:
    """log A_k and log δ_k of ``_suffix_log_tables`` against 40-digit direct sums at every
    ``every``-th bin, within the relative error the caller's margin assumes: the tables' own bound
    plus the exps and logs of weights and results (64u + 8u per unit of the largest |log w|)."""
    log_a, log_d, bound = pld.discrete._suffix_log_tables(lv, h)
    finite = lv[np.isfinite(lv)]
    mags = float(np.max(np.abs(finite))) if finite.size else 0.0
    allowed = (bound + 64.0 + 8.0 * mags) * 2.0**-53
    n = lv.size
    with mp.workdps(40):
        w = [mp.e ** mp.mpf(v) if v > -math.inf else mp.mpf(0) for v in lv.tolist()]
        decay = [1 - mp.e ** (-m * mp.mpf(h)) for m in range(n)] if h else []  # by distance j − k
        for k in range(0, n, every):
            pairs = [(log_a[k], mp.fsum(w[k:]))]
            if h:
                pairs.append((log_d[k], mp.fsum(w[j] * decay[j - k] for j in range(k + 1, n))))
            for got, want in pairs:
                if want == 0:
                    assert got == -math.inf, (k, got)
                else:
                    assert got > -math.inf, (k, want)
                    assert abs(mp.e ** (mp.mpf(got) - mp.log(want)) - 1) <= allowed, (k, got)


@pytest.mark.parametrize("h", [1e-4, 0.05, 3.0])
def test_delta_tables_match_direct_sums_within_their_stated_margin(h: float) -> None:
    """log A_k and log δ_k (the recursion without cancellation) against 40-digit direct sums on
    weights spanning 600 orders of magnitude, within the bound the tables report (and that
    bound is O(n·u): below 12n·u here)."""
    rng = np.random.default_rng(7)
    n = 400
    lv = np.cumsum(rng.normal(-3.0, 1.0, n)) + rng.normal(0.0, 2.0, n)
    lv[rng.integers(0, n, 20)] = -np.inf  # empty bins
    _assert_tables_match_direct_sums(lv, h, every=7)
    assert pld.discrete._suffix_log_tables(lv, h)[2] <= 12 * n


@pytest.mark.parametrize("h", [None, 1e-4, 0.05, 1.0])
@pytest.mark.parametrize("shape", ["valley", "cliffs", "wild"])
def test_delta_tables_stay_exact_across_segments_and_huge_log_ranges(
    h: float | None, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one pass from the right in short segments (``_SEGMENT`` cut to 16 bins here, so the
    carries between segments are exercised hundreds of times): weights whose logs span thousands
    of nats, rise by cliffs of ~1,000 nats going left (a new scale each time: the carried sums
    become negligible), fall the same way (the tiny right-hand sums keep full relative accuracy),
    and jump about at random, against 40-digit direct sums at every bin. The pass this replaced
    lost some of these entirely: where a suffix's largest weight came first with nothing
    comparable after it, it stopped restarting, and every later bin's A and δ were left at 0."""
    monkeypatch.setattr(pld.discrete, "_SEGMENT", 16)
    rng = np.random.default_rng(11)
    n = 260
    if shape == "valley":  # a loss law's two tails, 4,000 nats deep
        lv = -np.abs(np.linspace(-4000.0, 4000.0, n)) + rng.normal(0.0, 1.0, n)
    elif shape == "cliffs":  # steps of ±1,000 nats every 20 bins
        steps = np.repeat(rng.choice([-1000.0, 1000.0], n // 20 + 1), 20)[:n]
        lv = steps.cumsum() + rng.normal(0.0, 3.0, n)
    else:
        lv = rng.normal(0.0, 700.0, n)
    lv[rng.integers(0, n, 12)] = -np.inf
    lv[-3:] = -np.inf  # empty bins at the top
    _assert_tables_match_direct_sums(lv, h)


def test_delta_tables_of_two_million_bins_spanning_17_600_nats_take_one_pass() -> None:
    """A grid of 2.9M bins whose weights fall by 17,600 nats (a 10⁶-fold composition's upper
    tail; the pass it replaced restarted 30 times over the whole tail, 3.6 s, now 0.13 s): three
    bins against 40-digit sums, and both tables finite and non-increasing."""
    rng = np.random.default_rng(3)
    n = 2_900_000
    lv = -np.linspace(0.0, 17_600.0, n) + rng.normal(0.0, 1.0, n)
    log_a, log_d, bound = pld.discrete._suffix_log_tables(lv, 1e-4)
    allowed = (bound + 64.0 + 8.0 * 17_610.0) * 2.0**-53
    with mp.workdps(40):
        for k in (0, 1_234_567, n - 40):
            w = [mp.e ** mp.mpf(v) for v in lv[k : k + 40_000 : 1].tolist()]
            a = mp.fsum(w)  # the rest lies ≥ 200 nats below: far under the tolerance
            assert abs(mp.e ** (mp.mpf(log_a[k]) - mp.log(a)) - 1) <= allowed
    assert np.isfinite(log_d[:-1]).all()
    assert log_d[-1] == -np.inf
    assert np.all(np.diff(log_a) <= 1e-9)
    assert np.all(np.diff(log_d[:-1]) <= 1e-9)


@pytest.mark.parametrize("step", [0.01, 0.1, 0.5])
def test_weaker_pairs_are_dominated_by_the_originals(step: float) -> None:
    """Each family member the lower-bound pass swaps in has a profile ≤ the original's at every
    ε (closed forms in 40 digits), and its parameter lies within the relative step below."""
    cases = [
        (pld.pairs.GaussianPair(0.37), lambda p, e: gaussian_delta(p.mu, e), "mu"),
        (pld.pairs.LaplacePair(0.23), lambda p, e: laplace_delta(p.epsilon0, e), "epsilon0"),
    ]
    for pair, profile, attr in cases:
        weak = pair.weaker(step)
        x, y = getattr(pair, attr), getattr(weak, attr)
        assert x / (1 + step) <= y <= x
        for e in (-1.0, -0.1, 0.0, 0.05, 0.2, 0.5, 1.5):
            assert profile(weak, e) <= profile(pair, e)
    rr = pld.pairs.randomized_response_pair(0.7)
    weak = rr.weaker(step)
    e_weak = weak.losses[0]  # type: ignore[attr-defined]
    assert 0.7 / (1 + step) <= e_weak <= 0.7
    for e in (-1.0, 0.0, 0.3, 0.69):
        assert float(rr_delta(e_weak, e)) <= float(rr_delta(0.7, e))
    # pairs outside an ordered family are left alone
    kov = pld.pairs.approx_dp_pair(0.5, 1e-6)
    assert kov.weaker(step) is kov
    assert pld.pairs.randomized_response_pair(0.7, 3).weaker(
        step
    ) == pld.pairs.randomized_response_pair(0.7, 3)


def test_quick_lower_bound_is_below_the_exact_value_and_the_bracket() -> None:
    """lower_epsilon/lower_delta against the GDP closed form of a mix of Gaussians (exact), and
    below the certified upper end for a Gaussian/Laplace/RR mix."""
    items = [(sdp.Gaussian(s), 30) for s in (20.0, 23.0, 31.0, 47.0)]
    mu = math.sqrt(sum(30 / s**2 for s in (20.0, 23.0, 31.0, 47.0)))
    r = pld.compose_pld(items, target_relative_error=1e-2)
    exact = float(invert_profile(lambda e: gaussian_delta(mu, e), 1e-6))
    assert r.lower_epsilon(1e-6) <= exact
    assert r.lower_epsilon(1e-6) >= 0.8 * exact  # and not vacuous
    assert r.lower_delta(1.0) <= float(gaussian_delta(mu, 1.0))
    mix = [(sdp.Gaussian(30.0), 40), (sdp.Laplace(60.0), 50), (sdp.RandomizedResponse(0.02), 70)]
    full = pld.compose_pld(mix)
    _, hi = full.epsilon_bracket(1e-6)  # exact ≤ hi, so a lower bound must be too
    quick = pld.compose_pld(mix, target_relative_error=1e-2).lower_epsilon(1e-6)
    assert 0.7 * hi <= quick <= hi


def test_distinct_gaussians_merge_exactly_into_one_gdp_pair() -> None:
    """Several distinct Gaussian pairs (plus a Laplace) become one μ = √Σμ² pair, μ rounded up on
    the pessimistic side and down on the optimistic one; the bracket of a Gaussian-only mix
    contains the GDP closed form."""
    from fractions import Fraction

    sigmas = (3.0, 7.0, 11.0, 13.0)
    items = pld.composition._normalise_items(
        [(sdp.Gaussian(s), 5) for s in sigmas] + [sdp.Laplace(9.0)]
    )
    up = pld.composition._merge_gaussians(items, up=True)
    down = pld.composition._merge_gaussians(items, up=False)
    assert len(up) == len(down) == 2
    mu_up, mu_down = up[0][0].gdp_mu(), down[0][0].gdp_mu()
    assert mu_up is not None
    assert mu_down is not None
    exact_sq = sum(5 * Fraction(sdp.Gaussian(s).mu) ** 2 for s in sigmas)
    assert Fraction(mu_down) ** 2 <= exact_sq <= Fraction(mu_up) ** 2
    assert mu_up - mu_down <= 2 * math.ulp(mu_up)
    mu = math.sqrt(sum(5 / s**2 for s in sigmas))
    exact = float(invert_profile(lambda e: gaussian_delta(mu, e), 1e-6))
    lo, hi = pld.compose_pld([(sdp.Gaussian(s), 5) for s in sigmas]).epsilon_bracket(1e-6)
    assert lo <= exact <= hi
    assert hi - lo <= 1e-4 * hi


def test_clt_estimate_for_planning_is_close_for_gaussians() -> None:
    """clt_epsilon (an estimate used only to skip work) against the GDP closed form: Gaussians
    are exactly GDP, and μ²/2 + μΦ⁻¹(1 − δ) drops δ's second term, so it sits above (4% here)."""
    mu = math.sqrt(40 / 9.0)
    exact = float(invert_profile(lambda e: gaussian_delta(mu, e), 1e-6))
    est = pld.compose_pld([(sdp.Gaussian(3.0), 40)]).clt_epsilon(1e-6)
    assert exact <= est <= exact * 1.1
    assert pld.compose_pld([(sdp.ApproxDP(0.1, 1e-9), 5)]).clt_epsilon(1e-6) == math.inf


def test_fft_componentwise_error_bound() -> None:
    """|fft(x)_ω − DFT(x)_ω| ≤ FFT_ULPS·u·log2(N)·Σ|x|, the bound the error tracking relies on."""
    rng = np.random.default_rng(7)
    u = 2.0**-53
    pi = 4 * np.arctan(np.longdouble(1))
    for n in (16, 256, 1024):
        turns = np.outer(np.arange(n // 2 + 1), np.arange(n)) % n  # exact integers
        ang = -2 * pi * turns.astype(np.longdouble) / n
        cos, sin = np.cos(ang), np.sin(ang)  # the DFT matrix, once for the three kinds
        for kind in ("uniform", "spiky", "geometric"):
            if kind == "uniform":
                x = rng.random(n)
            elif kind == "spiky":
                x = np.zeros(n)
                x[rng.integers(0, n, 5)] = rng.random(5) * 10.0 ** rng.integers(-8, 1, 5)
            else:
                x = 0.5 ** np.arange(n)
            got = np.fft.rfft(x)
            exact = (cos @ x.astype(np.longdouble)) + 1j * (sin @ x.astype(np.longdouble))
            err = np.abs(got.astype(np.clongdouble) - exact).max()
            assert float(err) <= pld.discrete.FFT_ULPS * u * math.log2(n) * float(np.abs(x).sum())


def test_registry_and_decompositions() -> None:
    assert pld.supports(sdp.Laplace(1.0))
    assert pld.supports(DiscreteLaplace(2, 1))
    assert not pld.supports(sdp.ZCDP(0.1))
    ((pair, count),) = pld.dominating_pairs(sdp.TopK(3, 0.5))
    assert count == 3
    assert pair == pld.pairs.BoundedRangePair(0.5)
    ((pair, _),) = pld.dominating_pairs(sdp.Exponential(0.7))
    assert pair == pld.pairs.BoundedRangePair(0.7)
    ((pair, _),) = pld.dominating_pairs(sdp.PureDP(0.7))
    assert sorted(pair.losses) == [-0.7, 0.7]  # type: ignore[attr-defined]
    ((pair, _),) = pld.dominating_pairs(sdp.GDP(1.5))
    assert isinstance(pair, pld.pairs.GaussianPair)
    assert pair.mu == 1.5
    # items compose by groups: TopK(k) is k copies of the ε-BR pair
    a = pld.compose_pld([sdp.TopK(4, 0.3)]).epsilon(1e-6)
    b = pld.compose_pld([(sdp.BoundedRange(0.3), 4)]).epsilon(1e-6)
    assert a == b

    class Custom:
        pass

    @pld.register_pair(Custom)
    def _custom(item: Custom) -> pld.pairs.DominatingPair:
        return pld.pairs.GaussianPair(1.0)

    assert pld.compose_pld([Custom()]).epsilon(1e-5) == pld.compose_pld([sdp.GDP(1.0)]).epsilon(
        1e-5
    )


def test_perfect_and_no_privacy_edge_cases() -> None:
    assert pld.compose_pld([]).epsilon(1e-6) == 0.0
    assert pld.compose_pld([(sdp.Laplace(1.0), 0)]).delta(0.0) == 0.0
    assert pld.compose_pld([sdp.Laplace(1.0, 0.0)]).epsilon(1e-9) == 0.0
    assert pld.compose_pld([sdp.PureDP(math.inf)]).epsilon(0.5) == math.inf
    assert pld.compose_pld([sdp.PureDP(math.inf)]).delta(3.0) == 1.0
    assert pld.compose_pld([sdp.GDP(0.0)]).epsilon(0.0) == 0.0
    assert pld.compose_pld([sdp.GDP(0.0), sdp.PureDP(0.0)]).delta(0.0) == 0.0
    result = pld.compose_pld([sdp.PureDP(0.5), sdp.Laplace(2.0)])
    assert result.epsilon(1.0) == 0.0
    assert result.epsilon(0.0) == pytest.approx(1.0, rel=1e-9)  # pure: ε(0) = Σ ε_i
    assert result.epsilon(0.0) >= 1.0


# -------------------------------------------------------------------------------------------------
# 5. bad input and NaN-freedom


def test_bad_input_raises_sharpdp_errors() -> None:
    with pytest.raises(InvalidParameter, match="count"):
        pld.compose_pld([(sdp.Laplace(1.0), -1)])
    with pytest.raises(InvalidParameter, match="count"):
        pld.compose_pld([(sdp.Laplace(1.0), 2.5)])
    with pytest.raises(NotImplied, match=r"ZCDP\(rho=0.1"):
        pld.compose_pld([sdp.ZCDP(0.1)])
    with pytest.raises(NotImplied, match="'not an item'"):
        pld.compose_pld(["not an item"])
    with pytest.raises(InvalidParameter, match="value_discretization"):
        pld.compose_pld([sdp.Laplace(1.0)], value_discretization=-0.1)
    with pytest.raises(InvalidParameter, match="target_relative_error"):
        pld.compose_pld([sdp.Laplace(1.0)], target_relative_error=0.0)
    with pytest.raises(InvalidParameter, match="items must be"):
        pld.compose_pld([(sdp.Laplace(1.0), 1, 2)])
    result = pld.compose_pld([sdp.Laplace(1.0)])
    with pytest.raises(InvalidParameter, match="delta"):
        result.epsilon(1.5)
    with pytest.raises(InvalidParameter, match="delta"):
        result.epsilon(math.nan)
    with pytest.raises(InvalidParameter, match="epsilon"):
        result.delta(-0.1)
    a = pld.discretise(pld.pairs.LaplacePair(1.0), 0.01)
    b = pld.discretise(pld.pairs.LaplacePair(1.0), 0.02)
    with pytest.raises(InvalidParameter, match="value_discretization"):
        a.compose(b)
    with pytest.raises(InvalidParameter, match="count"):
        a.self_compose(0)


ITEMS = st.one_of(
    st.builds(sdp.Laplace, st.floats(0.05, 50.0), st.floats(0.0, 3.0)),
    st.builds(sdp.Gaussian, st.floats(0.05, 50.0), st.floats(0.0, 3.0)),
    st.builds(sdp.PureDP, st.floats(0.0, 3.0)),
    st.builds(sdp.RandomizedResponse, st.floats(0.0, 3.0), st.integers(2, 6)),
    st.builds(sdp.ApproxDP, st.floats(0.0, 2.0), st.floats(0.0, 0.1)),
)


@settings(max_examples=30)
@given(
    st.lists(st.tuples(ITEMS, st.integers(0, 40)), min_size=1, max_size=3),
    st.floats(1e-12, 0.5),
    st.floats(0.0, 20.0),
)
def test_no_nan_and_ordered_brackets(items: list[tuple[object, int]], d: float, e: float) -> None:
    result = pld.compose_pld(items, target_relative_error=1e-2)
    lo, hi = result.epsilon_bracket(d)
    assert not math.isnan(lo)
    assert not math.isnan(hi)
    assert 0.0 <= lo <= hi
    dlo, dhi = result.delta_bracket(e)
    assert not math.isnan(dlo)
    assert not math.isnan(dhi)
    assert 0.0 <= dlo <= dhi <= 1.0
    # on one discretised law, ε(δ) and δ(ε) are consistent (the pessimistic ε certifies δ)
    for pess, opt in list(result._cache.values())[:1]:
        eps = pess.epsilon(d)
        assert not math.isnan(eps)
        if math.isfinite(eps):
            assert pess.delta(eps) <= d
        assert opt.epsilon(d) <= eps


def test_group_cache_reuses_groups_and_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # Self-composed groups are cached across compositions (an accountant recomposes its history
    # at every spend). A cached answer must equal a fresh one, cached masses must be read-only,
    # and the cache must respect its size cap.
    monkeypatch.setattr(pld.composition, "_group_cache", type(pld.composition._group_cache)())
    monkeypatch.setattr(pld.composition, "_group_cache_size", [0])
    items = [(sdp.Laplace(scale=20.0), 300), (sdp.RandomizedResponse(0.3), 50)]
    first = pld.compose_pld(items).epsilon_bracket(1e-6)
    assert len(pld.composition._group_cache) >= 2
    for q in pld.composition._group_cache.values():
        assert not q.data.flags.writeable
    again = pld.compose_pld(items).epsilon_bracket(1e-6)
    assert again == first
    pld.clear_cache()
    assert len(pld.composition._group_cache) == 0
    assert pld.composition._group_cache_size[0] == 0
    assert pld.compose_pld(items).epsilon_bracket(1e-6) == first
    # a cap below one group's size keeps nothing, and answers do not change
    monkeypatch.setattr(pld.composition, "_GROUP_CACHE_BINS", 8)
    monkeypatch.setattr(pld.composition, "_group_cache", type(pld.composition._group_cache)())
    monkeypatch.setattr(pld.composition, "_group_cache_size", [0])
    assert pld.compose_pld(items).epsilon_bracket(1e-6) == first
    assert pld.composition._group_cache_size[0] <= 8


@pytest.mark.parametrize("h", [1e-9, 3.7e-5, 1e-3, 0.0123, 0.5])
def test_ladder_rounds_grids_down_by_less_than_a_ninth_of_an_octave(h: float) -> None:
    r = pld.composition._ladder(h)
    assert r <= h * (1 + 1e-15)
    assert r > h * 2.0 ** (-1.0 / 8.0) * (1 - 1e-15)
    assert pld.composition._ladder(r) == r  # ladder values are fixed points: grids repeat


@cache
def _rr_group(e0: float, k: int) -> list[tuple[Any, Any]]:
    """(P-mass, loss) of each number i of '+' outcomes of k-fold ε0-RR, at 50 digits (the same
    for every ε below: computed once)."""
    with mp.workdps(50):
        e = mp.mpf(e0)
        p = mp.e**e / (1 + mp.e**e)
        return [
            (math.comb(k, i) * p**i * (1 - p) ** (k - i), (2 * i - k) * e) for i in range(k + 1)
        ]


def _two_rr_groups_delta(
    e_wide: float, k_wide: int, e_narrow: float, k_narrow: int, eps: float
) -> float:
    """δ(ε) of k_wide-fold ε_wide-RR composed with k_narrow-fold ε_narrow-RR, by summing over the
    numbers of '+' outcomes of each group (50 digits)."""
    with mp.workdps(50):
        total = mp.mpf(0)
        groups = [_rr_group(e_wide, k_wide), _rr_group(e_narrow, k_narrow)]
        e = mp.mpf(eps)
        for w1, l1 in groups[0]:
            for w2, l2 in groups[1]:
                loss_ = l1 + l2
                if loss_ > e:
                    total += w1 * w2 * (1 - mp.exp(e - loss_))
        return float(total)


def test_the_widest_group_is_cut_below_zero_without_changing_the_answer() -> None:
    # Losses of the widest group that stay below 0 whatever the others add are not needed for
    # δ(ε ≥ 0): its FFT window is cut there. The bracket must still hold the exact value,
    # including at ε = 0, where the cut is closest to mattering.
    items = [(sdp.RandomizedResponse(0.2), 400), (sdp.RandomizedResponse(1.0), 3)]
    result = pld.compose_pld(items)
    for eps in (0.0, 0.3, 2.0, 6.0):
        exact = _two_rr_groups_delta(0.2, 400, 1.0, 3, eps)
        lo, hi = result.delta_bracket(eps)
        assert lo <= exact <= hi, (eps, lo, exact, hi)
    h = 0.01
    pairs = pld.composition._normalise_items(items)
    parts = pld.composition._group_plds(pairs, h, 2.0, True, pld.discrete.DEFAULT_TAIL)
    wide = parts[0][0]
    lowest = wide.offset * h + wide.phase
    # the narrow group reaches at most 3 (+ 2h of slack, rounded up to h·2^j): cut at −6.4
    # (at tilt 2: the FFT window also keeps all but 1e-15 of the *tilted* mass, which at tilt 0
    # would reach as low as the untilted bulk)
    assert -6.4 - h <= lowest < 0.0
    lo, hi = pld.compose_pld(items, value_discretization=h).delta_bracket(0.3)
    assert lo <= _two_rr_groups_delta(0.2, 400, 1.0, 3, 0.3) <= hi


def _exact_run_contents(scale: float, d: int, t: np.ndarray) -> dict[str, list[mp.mpf]]:
    """Grid contents of the middle atoms z = 1 … d − 1 of a discrete Laplace pair, summed atom by
    atom in 40-digit arithmetic, the module's precision (losses (d − 2z)A and masses c·e^{−zA},
    A = 1/scale exactly)."""
    a = mp.mpf(1) / mp.mpf(scale)
    c = (1 - mp.e ** (-a)) / (1 + mp.e ** (-a))
    nodes = [mp.mpf(float(x)) for x in t]
    out: dict[str, list[mp.mpf]] = {
        "d": [mp.mpf(0)] * (len(t) - 1),
        "u": [mp.mpf(0)] * (len(t) - 1),
    }
    out["p_low"], out["u_low"], out["eq_up"], out["d_up"] = ([mp.mpf(0)] for _ in range(4))
    for z in range(1, d):
        loss, mass = (d - 2 * z) * a, c * mp.e ** (-z * a)
        if loss < nodes[0]:
            out["p_low"][0] += mass
            out["u_low"][0] += mass * (mp.e ** (nodes[0] - loss) - 1)
        elif loss > nodes[-1]:
            out["eq_up"][0] += mass * mp.e ** (nodes[-1] - loss)
            out["d_up"][0] += mass * (1 - mp.e ** (nodes[-1] - loss))
        else:
            j = max(i for i in range(len(t) - 1) if nodes[i] <= loss)
            assert nodes[j] < loss < nodes[j + 1]  # the test's phases put no atom on a node
            out["d"][j] += mass * (1 - mp.e ** (nodes[j] - loss))
            out["u"][j] += mass * (mp.e ** (nodes[j + 1] - loss) - 1)
    return out


@pytest.mark.parametrize(
    ("scale", "d", "cells_per_unit", "reach", "phase"),
    [
        (3000.0, 300, 50.0, 1.2, 0.37),  # the grid covers every atom
        (20000.0, 400, 300.0, 0.5, 0.61),  # atoms above and below the grid
        (50.0, 250, 2.0, 0.8, 0.13),  # wide losses (ε0 = 5), coarse cells
        (40000.0, 600, 2000.0, 0.3, 0.9),  # h = 20A: about the narrowest closed-form cells
    ],
)
def test_discrete_laplace_contents_in_closed_form_enclose_the_exact_sums(
    scale: float, d: int, cells_per_unit: float, reach: float, phase: float
) -> None:
    """The closed-form runs of :class:`DiscreteLaplacePair` (O(grid) instead of O(Δ)) against
    the atom-by-atom sums in 40 digits: every functional within its stated error bound (the end
    atoms, and those near nodes, go through the generic path and are left out of both)."""
    pair = pld.pairs.discrete_laplace_pair(scale, d)
    assert isinstance(pair, pld.pairs.DiscreteLaplacePair)
    a = 1.0 / scale
    h = 1.0 / cells_per_unit
    assert h >= 16 * a
    top = d * a * reach
    lo, hi = math.floor(-top / h), math.ceil(top / h)
    ph = phase * h
    t = np.arange(lo, hi + 1, dtype=np.int64) * h + ph
    closed = pair._contents(h, lo, hi, ph)
    # what the generic path adds for the atoms near nodes and at the ends, subtracted back out
    zc = (d - t / a) / 2.0
    near = sorted(
        {z for c in zc for z in range(math.floor(c) - 1, math.ceil(c) + 2) if 1 <= z <= d - 1}
    )
    ls, ms = (np.asarray(v) for v in (pair.losses, pair.masses))
    listed = np.array([0, 1, *(z + 1 for z in near)], dtype=np.int64)
    generic = pld.pairs.GridContents.empty(h, lo, hi, ph, 0.0)
    pld.pairs._add_atoms(generic, ls[listed], ms[listed], pair.rel_err)
    exact = _exact_run_contents(scale, d, t)
    excluded = set(near)
    # the exact sums over the atoms the closed form summed (all middle atoms not listed)
    for z in excluded:
        loss = (d - 2 * z) * (mp.mpf(1) / mp.mpf(scale))
        mass = (1 - mp.e ** (-1 / mp.mpf(scale))) / (1 + mp.e ** (-1 / mp.mpf(scale)))
        mass *= mp.e ** (-z / mp.mpf(scale))
        nodes = [mp.mpf(float(x)) for x in t]
        if loss < nodes[0]:
            exact["p_low"][0] -= mass
            exact["u_low"][0] -= mass * (mp.e ** (nodes[0] - loss) - 1)
        elif loss > nodes[-1]:
            exact["eq_up"][0] -= mass * mp.e ** (nodes[-1] - loss)
            exact["d_up"][0] -= mass * (1 - mp.e ** (nodes[-1] - loss))
        else:
            j = max(i for i in range(len(t) - 1) if nodes[i] <= loss)
            exact["d"][j] -= mass * (1 - mp.e ** (nodes[j] - loss))
            exact["u"][j] -= mass * (mp.e ** (nodes[j + 1] - loss) - 1)
    checked = 0
    for name in ("d", "u", "p_low", "u_low", "eq_up", "d_up"):
        got = np.atleast_1d(getattr(closed, name)) - np.atleast_1d(getattr(generic, name))
        err = np.atleast_1d(getattr(closed, name + "_err")) + np.atleast_1d(
            getattr(generic, name + "_err")
        )
        for g, e, x in zip(got.tolist(), err.tolist(), exact[name], strict=True):
            assert abs(g - float(x)) <= e + 1e-300, (name, g, float(x), e)
            assert e <= 1e-10 * max(abs(float(x)), 1e-300) + 1e-300  # and the bound is tight
            checked += x != 0
    assert checked >= 3


@pytest.mark.parametrize("seed", range(4))
def test_discrete_laplace_contents_in_closed_form_match_the_atom_by_atom_sums(seed: int) -> None:
    """Wide pairs (Δ up to 2·10⁵) on random grids and phases, on-node atoms included: the closed
    form and the generic atom-by-atom path agree within the sum of their error bounds."""
    rng = np.random.default_rng(seed)
    for _ in range(10):
        d = int(rng.integers(64, 200_000))
        eps0 = float(10 ** rng.uniform(-3, 1.3))
        pair = pld.pairs.discrete_laplace_pair(d / eps0, d)
        a = eps0 / d
        h = float(a * 10 ** rng.uniform(1.2, 4.0))
        span = d * a * float(rng.uniform(0.3, 1.3))
        lo, hi = math.floor(-span / h), max(math.ceil(span * rng.uniform(0.3, 1.3) / h), 2)
        ph = pair.phase(h) if rng.random() < 0.5 else float(rng.uniform(0, h))
        closed = pair._contents(h, lo, hi, ph)
        atomwise = pld.pairs.FinitePair._contents(pair, h, lo, hi, ph)
        for name in ("atoms", "d", "u", "p_low", "u_low", "eq_up", "d_up"):
            v1, v2 = np.atleast_1d(getattr(closed, name)), np.atleast_1d(getattr(atomwise, name))
            e1 = np.atleast_1d(getattr(closed, name + "_err"))
            e2 = np.atleast_1d(getattr(atomwise, name + "_err"))
            assert np.all(np.abs(v1 - v2) <= e1 + e2 + 1e-300), (name, d, eps0, h / a)


def test_wide_pairs_hash_cheaply_and_consistently() -> None:
    """Pairs key the composition caches: equal pairs hash alike (built twice, not cached), and
    pairs that differ only past their first atoms are told apart by equality."""
    pld.pairs.discrete_laplace_pair.cache_clear()
    p1 = pld.pairs.discrete_laplace_pair(1000.0, 5000)
    pld.pairs.discrete_laplace_pair.cache_clear()
    p2 = pld.pairs.discrete_laplace_pair(1000.0, 5000)
    assert p1 is not p2
    assert p1 == p2
    assert hash(p1) == hash(p2)
    base = pld.pairs.FinitePair((1.0, 0.5, 0.2, 0.1, 0.0, -0.3), (0.1,) * 5 + (0.5,))
    other = pld.pairs.FinitePair((1.0, 0.5, 0.2, 0.1, 0.0, -0.4), (0.1,) * 5 + (0.5,))
    assert base != other
    assert len({base: 1, other: 2}) == 2


@lru_cache(maxsize=8)
def _tilted_discrete_laplace_atoms(scale: float, d: int, a: float, lm: float) -> list[Any]:
    """(l_j, p_j e^{a l_j − lm}) over the whole discrete Laplace pair on the lattice of
    A = fl(1/scale) (losses ±dA and (d − 2z)A, masses m, m·e^{−dA}, c·e^{−zA}), in 40 digits:
    the ω-free part of :func:`_exact_discrete_laplace_cf`, computed once per pair and tilt."""
    with mp.workdps(40):
        big_a = mp.mpf(1.0 / scale)
        m = 1 / (1 + mp.e ** (-big_a))
        c = (1 - mp.e ** (-big_a)) * m
        atoms = [(d * big_a, m), (-d * big_a, m * mp.e ** (-d * big_a))]
        atoms += [((d - 2 * z) * big_a, c * mp.e ** (-z * big_a)) for z in range(1, d)]
        return [(loss, p * mp.exp(a * loss - lm)) for loss, p in atoms]


def _exact_discrete_laplace_cf(scale: float, d: int, a: float, lm: float, omega: float) -> complex:
    """Σ_j p_j e^{(a + iω) l_j − lm} = Σ_j (p_j e^{a l_j − lm})·e^{iω l_j} over the whole discrete
    Laplace pair (:func:`_tilted_discrete_laplace_atoms`), in 40 digits."""
    with mp.workdps(40):
        w = mp.mpf(omega)
        atoms = _tilted_discrete_laplace_atoms(scale, d, a, lm)
        return complex(mp.fsum(p * mp.expj(w * loss) for loss, p in atoms))


@pytest.mark.parametrize(
    ("scale", "d"), [(1.0, 64), (0.05, 64), (10.0, 200), (1e3, 500), (7.0, 1500)]
)
@pytest.mark.parametrize("a", [1e-3, 0.5, 4.0, 40.0])
def test_discrete_laplace_cf_by_doubling_is_within_its_bound(
    scale: float, d: int, a: float
) -> None:
    """The O(log d) characteristic function of a wide discrete Laplace pair against the whole atom
    sum in 40 digits: |φ̃ − φ| ≤ its bound at every node (generic, at and beside the lattice's
    resonances ω = πk/A where ρ = e^{x} nears 1 in angle, and far out), and the bound is no
    more than 50× the atom sum's own (it replaced that sum: O(d) per node)."""
    pair = pld.pairs.discrete_laplace_pair(scale, d)
    assert isinstance(pair, pld.pairs.DiscreteLaplacePair)
    big_a = 1.0 / scale
    om = np.array(
        [0.0, 0.37, 3.0, 25.0, 1e4, *(math.pi / big_a * k + e for k in (1, 3) for e in (0.0, 1e-7))]
    )
    got = pair.tilted_cf(a, om)
    assert got is not None
    phi, err = got
    lm = float(pair.log_mgf(np.array([a]))[0])
    for w, value, bound in zip(om, phi, err, strict=True):
        assert abs(value - _exact_discrete_laplace_cf(scale, d, a, lm, float(w))) <= bound
    direct = pld.pairs.FinitePair.tilted_cf(pair, a, om)
    assert direct is not None
    assert np.all(err <= 50.0 * direct[1] + 1e-15)


@settings(max_examples=30)
@given(
    log_scale=st.floats(-3.0, 9.0),
    d=st.integers(64, 300),
    a=st.floats(1e-4, 60.0),
    omega=st.one_of(st.floats(0.0, 1e5), st.integers(1, 5).map(float)),
    at_resonance=st.booleans(),
)
def test_discrete_laplace_cf_bound_holds_anywhere(
    log_scale: float, d: int, a: float, omega: float, at_resonance: bool
) -> None:
    """The doubling bound against the 40-digit atom sum at random pairs, tilts and nodes (half of
    them on a resonance ω = πk/A, k = ⌈ω⌉ for small integer ω)."""
    scale = math.exp(log_scale)
    pair = pld.pairs.discrete_laplace_pair(scale, d)
    if at_resonance:
        omega = math.pi * scale * max(1.0, math.ceil(omega) % 7)
    got = pair.tilted_cf(a, np.array([omega]))
    assert got is not None
    lm = float(pair.log_mgf(np.array([a]))[0])
    exact = _exact_discrete_laplace_cf(scale, d, a, lm, omega)
    assert abs(got[0][0] - exact) <= got[1][0]
