"""Discrete Laplace and discrete Gaussian mechanisms, tested from first principles.

Expected values come from brute force, computed independently of sharpdp:

* privacy profiles and Rényi divergences by direct summation over the integers with mpmath (40
  significant digits), with pmfs normalised by direct summation. Windows are wide enough that the
  omitted mass is below 1e-40 of the quantity, and they are centred on the mass of P^α Q^{1−α}
  for large α. Both orders of the neighbouring pair are summed, and so are the smaller shifts
  d < Δ;
* the continuum limits (the Laplace profile 1 − e^{(ε−ε0)/2}, the hockey-stick integral) for tiny grids;
* the exact output law by chi-square goodness of fit on many draws with a fixed seed. The critical
  value ``chi2.isf(1e-6, dof)`` makes the false-failure rate ≤ 1e-6, and bins are merged until
  each expects ≥ 20 draws.

sharpdp must never report less than the brute force (valid upper bounds). It may report more only
by its stated rounding margins: 2e-14 relative for closed forms, 1e-12 for summations, and a little
more in the Euler–Maclaurin regime σ ≥ 1024.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sharpdp as sdp
from goodness_of_fit import assert_chi_square
from sharpdp.conversions import convert
from sharpdp.errors import InvalidParameter, NotImplied
from sharpdp.guarantees import RDP, ZCDP, PureDP
from sharpdp.mechanisms.discrete import DiscreteGaussian, DiscreteLaplace
from stable_ids import stable_id

DPS = 40
FALSE_FAILURE = 1e-6
CLOSED_FORM_REL = 1e-13  # allowed excess over the truth for closed forms (margin 2e-14)
SUM_REL = 3e-12  # for the discrete Gaussian's summed profile (margin 1e-12)

LogPmf = Callable[[int], mp.mpf]


# --------------------------------------------------------------------------------------------------
# Independent references (mpmath; nothing from sharpdp)
# --------------------------------------------------------------------------------------------------


def _mpq(x: Fraction | float | int) -> mp.mpf:
    f = Fraction(x)
    return mp.mpf(f.numerator) / f.denominator


def dl_logpmf(scale: Fraction | float | int) -> tuple[LogPmf, int]:
    """log P(z) = log((1 − q)/(1 + q)) − |z|/t and a half-width beyond which the mass is < e^-75."""
    with mp.workdps(DPS):
        t = _mpq(scale)
        q = mp.exp(-1 / t)
        log_c = mp.log((1 - q) / (1 + q))
    half_width = math.ceil(75 * float(scale)) + 5
    return (lambda z: log_c - abs(z) / t), half_width


def dg_logpmf(sigma: Fraction | float | int) -> tuple[LogPmf, int]:
    """log P(z) = −z²/(2σ²) − log Σ_y e^{−y²/(2σ²)} (normaliser by direct summation)."""
    with mp.workdps(DPS):
        s2 = _mpq(sigma) ** 2
        half_width = math.ceil(16 * float(sigma)) + 5  # e^{-128} beyond
        norm = mp.fsum(
            mp.exp(-(mp.mpf(y) ** 2) / (2 * s2)) for y in range(-half_width, half_width + 1)
        )
        log_norm = mp.log(norm)
    return (lambda z: -(mp.mpf(z) ** 2) / (2 * s2) - log_norm), half_width


def _table(logp: LogPmf, shift: int, zs: range) -> dict[int, mp.mpf]:
    """log P(z) for every z of ``zs`` and of ``zs`` − d, each evaluated once (the sums below use
    each up to four times): the same values as evaluating it where it is used."""
    assert zs.step == 1
    return {z: logp(z) for z in range(zs.start - shift, zs.stop)}


def hockey_stick(logp: LogPmf, shift: int, epsilon: float, zs: range) -> mp.mpf:
    """max over both orders of Σ_z max(0, P(z) − e^ε P(z − d)) (the second order is Q vs P)."""
    with mp.workdps(DPS):
        f = mp.exp(_mpq(epsilon))
        pmf = {z: mp.exp(lp) for z, lp in _table(logp, shift, zs).items()}  # P(z), once per z
        pq = mp.fsum(max(mp.mpf(0), pmf[z] - f * pmf[z - shift]) for z in zs)
        qp = mp.fsum(max(mp.mpf(0), pmf[z - shift] - f * pmf[z]) for z in zs)
        return max(pq, qp)


def renyi(logp: LogPmf, shift: int, alpha: float, zs: range) -> mp.mpf:
    """max over both orders of D_α(P‖Q), Q = P(· − d), by summation (α = 1: KL; α = ∞: max)."""
    with mp.workdps(DPS):
        logp = _table(logp, shift, zs).__getitem__  # log P(z), once per z

        def one(lp: LogPmf, lq: LogPmf) -> mp.mpf:
            if alpha == math.inf:
                return max(lp(z) - lq(z) for z in zs)
            if alpha == 1:
                return mp.fsum(mp.exp(lp(z)) * (lp(z) - lq(z)) for z in zs)
            a = _mpq(alpha)
            terms = [a * lp(z) + (1 - a) * lq(z) for z in zs]
            top = max(terms)
            return (top + mp.log(mp.fsum(mp.exp(x - top) for x in terms))) / (a - 1)

        return max(one(logp, lambda z: logp(z - shift)), one(lambda z: logp(z - shift), logp))


def dl_profile(scale: Fraction | float | int, sens: int, epsilon: float, shift: int = 0) -> mp.mpf:
    logp, w = dl_logpmf(scale)
    d = shift or sens
    return hockey_stick(logp, d, epsilon, range(-w, w + d + 1))


def dl_renyi(scale: Fraction | float | int, sens: int, alpha: float, shift: int = 0) -> mp.mpf:
    logp, w = dl_logpmf(scale)
    d = shift or sens
    return renyi(logp, d, alpha, range(-w, w + d + 1))


def dg_profile(sigma: Fraction | float | int, sens: int, epsilon: float, shift: int = 0) -> mp.mpf:
    logp, w = dg_logpmf(sigma)
    d = shift or sens
    # P > e^ε Q only for z < d/2 − εσ²/d (and Q > e^ε P mirrored): reach that far into the tails
    reach = w + math.ceil(epsilon * float(sigma) ** 2 / d)
    return hockey_stick(logp, d, epsilon, range(-reach, reach + d + 1))


def dg_renyi(sigma: Fraction | float | int, sens: int, alpha: float, shift: int = 0) -> mp.mpf:
    """P^α Q^{1−α} ∝ exp(−(z + λd)²/(2σ²)): centre the window on −λd (and on Δ + λd, reversed)."""
    logp, w = dg_logpmf(sigma)
    d = shift or sens
    lam = 0.0 if alpha in (1, math.inf) else alpha - 1.0
    c = round(lam * d)
    zs = range(min(-w, -c - w), max(w + d, d + c + w) + 1)
    return renyi(logp, d, alpha, zs)


def check_upper(got: float, exact: mp.mpf, rel: float, what: str) -> None:
    """got is a valid upper bound on exact, and sharp to ``rel`` (exact 0 must be reported as 0)."""
    with mp.workdps(DPS):
        assert mp.mpf(got) >= exact * (1 - mp.mpf(10) ** -30), f"{what}: {got!r} < exact {exact}"
        assert mp.mpf(got) <= exact * (1 + rel) + mp.mpf(10) ** -300, (
            f"{what}: {got!r} exceeds exact {mp.nstr(exact, 20)} by more than {rel}"
        )


# --------------------------------------------------------------------------------------------------
# Discrete Laplace: profile, Rényi, pure DP, ε(δ), zCDP
# --------------------------------------------------------------------------------------------------

DL_CASES = [
    (Fraction(1, 3), 1),
    (0.7, 1),
    (1, 2),
    (2.5, 3),
    (Fraction(13, 2), 7),
    (12, 1),
]


@pytest.mark.parametrize(("scale", "sens"), DL_CASES)
@pytest.mark.parametrize("epsilon", [0.0, 0.05, 0.3, 1.1, 2.9])
def test_discrete_laplace_profile_is_the_enumerated_one(
    scale: Fraction | float, sens: int, epsilon: float
) -> None:
    m = DiscreteLaplace(scale, sens)
    exact = dl_profile(scale, sens, epsilon)
    if epsilon >= sens / Fraction(scale):
        assert m.delta(epsilon) == 0.0  # beyond ε0 the profile vanishes exactly
        return
    check_upper(m.delta(epsilon), exact, CLOSED_FORM_REL, f"{m!r}.delta({epsilon})")


@pytest.mark.parametrize(("scale", "sens"), DL_CASES)
@pytest.mark.parametrize("alpha", [1.0, 1.0 + 1e-9, 1.001, 1.5, 2.0, 7.25, 300.0])
def test_discrete_laplace_renyi_is_the_enumerated_one(
    scale: Fraction | float, sens: int, alpha: float
) -> None:
    m = DiscreteLaplace(scale, sens)
    check_upper(m.renyi(alpha), dl_renyi(scale, sens, alpha), CLOSED_FORM_REL, f"{m!r}.renyi")


@pytest.mark.parametrize(("scale", "sens"), DL_CASES)
def test_discrete_laplace_is_exactly_eps0_dp(scale: Fraction | float, sens: int) -> None:
    m = DiscreteLaplace(scale, sens)
    eps0 = Fraction(sens) / Fraction(scale)
    # D_∞ by enumeration equals Δ/t; sharpdp reports the smallest float ≥ Δ/t
    with mp.workdps(DPS):
        assert abs(dl_renyi(scale, sens, math.inf) - _mpq(eps0)) < mp.mpf(10) ** -30
    assert Fraction(m.renyi(math.inf)) >= eps0
    assert Fraction(math.nextafter(m.renyi(math.inf), 0.0)) < eps0
    assert m.epsilon0 == m.renyi(math.inf) == m.epsilon(0.0)
    assert convert(m, PureDP).epsilon_ == m.epsilon0
    assert m.delta(m.epsilon0) == 0.0
    assert m.delta(m.epsilon0 * (1 - 1e-9)) > 0.0  # and no smaller ε is pure


def test_discrete_laplace_tends_to_laplace_on_a_fine_grid() -> None:
    # scale t = Δ = 2^40: ε0 = 1 and the pair approaches Laplace's (hockey-stick integral):
    # δ(ε) = 1 − e^{(ε − ε0)/2}, D_α from Mironov 2017 Prop 6, KL = ε0 + e^{−ε0} − 1.
    m = DiscreteLaplace(2**40, 2**40)
    for eps in (0.0, 0.3, 0.9):
        assert m.delta(eps) == pytest.approx(-math.expm1(0.5 * (eps - 1.0)), rel=1e-9)
    assert m.renyi(1.0) == pytest.approx(math.exp(-1.0), rel=1e-9)
    a = 3.0
    mironov = math.log(a / (2 * a - 1) * math.exp(a - 1) + (a - 1) / (2 * a - 1) * math.exp(-a))
    assert m.renyi(a) == pytest.approx(mironov / (a - 1), rel=1e-9)


@pytest.mark.parametrize(("scale", "sens"), [(Fraction(1, 3), 1), (2.5, 3), (Fraction(13, 2), 7)])
@pytest.mark.parametrize("delta", [1e-9, 1e-3, 0.1])
def test_discrete_laplace_epsilon_is_the_enumerated_inverse(
    scale: Fraction | float, sens: int, delta: float
) -> None:
    m = DiscreteLaplace(scale, sens)
    got = m.epsilon(delta)
    if float(dl_profile(scale, sens, 0.0)) <= delta:
        assert got == 0.0
        return
    # the enumerated profile at sharpdp's ε is ≤ δ (valid), and just below it is > δ (sharp)
    assert dl_profile(scale, sens, got) <= delta
    assert dl_profile(scale, sens, got * (1 - 1e-10)) > delta


@pytest.mark.parametrize("scale", [Fraction(1, 3), 0.7, 4])
def test_discrete_laplace_with_unit_sensitivity_is_randomized_response(
    scale: Fraction | float,
) -> None:
    # Δ = 1: the loss is ±ε0 only, so the tight zCDP is ε0·tanh(ε0/2) [Steinke 2024 Thm 5], which
    # is also the enumerated KL divergence, and the profile is RR's (e^{ε0} − e^ε)/(e^{ε0} + 1).
    m = DiscreteLaplace(scale, 1)
    eps0 = float(1 / Fraction(scale))
    rho = convert(m, ZCDP).rho
    assert rho == pytest.approx(eps0 * math.tanh(eps0 / 2), rel=1e-13)
    check_upper(rho, dl_renyi(scale, 1, 1.0), CLOSED_FORM_REL, "rho vs KL")
    rr = (math.exp(eps0) - math.exp(0.2)) / (math.exp(eps0) + 1) if eps0 > 0.2 else 0.0
    assert m.delta(0.2) == pytest.approx(rr, rel=1e-13)


@pytest.mark.parametrize(("scale", "sens"), [(2.5, 3), (Fraction(13, 2), 7), (0.4, 2)])
def test_discrete_laplace_zcdp_is_valid_and_sharp(scale: Fraction | float, sens: int) -> None:
    m = DiscreteLaplace(scale, sens)
    rho = convert(m, ZCDP).rho
    # valid: ρ ≥ D_α/α by enumeration at a spread of orders (the KL is the α → 1 limit)
    for alpha in (1.0, 1.0001, 1.01, 1.5, 3.0, 20.0):
        with mp.workdps(DPS):
            assert mp.mpf(rho) >= dl_renyi(scale, sens, alpha) / alpha
    # sharp: the supremum of D_α/α is at least the KL, and ρ is within 1e-6 of it, and better
    # than the pure-DP route ε0·tanh(ε0/2)
    kl = float(dl_renyi(scale, sens, 1.0))
    assert rho <= kl * (1 + 1e-6)
    eps0 = float(sens / Fraction(scale))
    assert rho < eps0 * math.tanh(eps0 / 2)


# --------------------------------------------------------------------------------------------------
# Discrete Gaussian: profile, Rényi, zCDP, ε(δ)
# --------------------------------------------------------------------------------------------------

DG_CASES = [
    (0.1, 1),
    (0.3, 2),
    (Fraction(3, 4), 1),
    (1, 3),
    (2.5, 1),
    (Fraction(41, 5), 4),
]


@pytest.mark.parametrize(("sigma", "sens"), DG_CASES)
@pytest.mark.parametrize("epsilon", [0.0, 0.05, 0.4, 1.5, 6.0])
def test_discrete_gaussian_profile_is_the_enumerated_one(
    sigma: Fraction | float, sens: int, epsilon: float
) -> None:
    m = DiscreteGaussian(sigma, sens)
    check_upper(m.delta(epsilon), dg_profile(sigma, sens, epsilon), SUM_REL, f"{m!r}.delta")


@pytest.fixture(scope="module")
def large_sigma_weights() -> Callable[[int, int], list[mp.mpf]]:
    """e^{−k²/2σ²} for k = 0 … n at 25 digits, each (σ, k) computed once for the cases below
    (their sums share most terms: the normaliser, e^{−(z−Δ)²/2σ²} with e^{−z²/2σ²}, and two
    cases per σ); the same values, to the bit, as computing each where it is used, at |z|
    ((−z)² = z² exactly)."""
    tables: dict[int, list[mp.mpf]] = {}

    def weights(sigma: int, n: int) -> list[mp.mpf]:
        table = tables.setdefault(sigma, [])
        with mp.workdps(25):
            two_s2 = 2 * mp.mpf(sigma) ** 2
            table.extend(mp.exp(-(mp.mpf(k) ** 2) / two_s2) for k in range(len(table), n + 1))
        return table

    return weights


@pytest.mark.parametrize(
    ("sigma", "sens", "epsilon"),
    [
        (1100, 1, 0.0),
        (1100, 1, 0.005),  # δ ≈ 1e-9
        (1500, 40, 0.1),  # δ ≈ 1e-5
        (1030, 5000, 0.0),  # m1 < 0: the other branch
        (1030, 5000, 20.0),
    ],
)
def test_discrete_gaussian_profile_for_large_sigma(
    sigma: int, sens: int, epsilon: float, large_sigma_weights: Callable[[int, int], list[mp.mpf]]
) -> None:
    # σ ≥ 1024: sharpdp switches to Euler–Maclaurin with a remainder bound. The reference sums
    # e^{−z²/2σ²} − e^ε e^{−(z−Δ)²/2σ²} over the z where it is positive (z ≤ Δ/2 − εσ²/Δ), down to
    # 24σ below that threshold (the rest is below e^{−280} of the result), at 25 digits, and
    # normalises by a direct sum over |z| ≤ 12σ (the rest is below e^{−70}).
    w = 12 * sigma
    top = math.floor(sens / 2 - epsilon * sigma**2 / sens)
    zs = range(top - 2 * w, top + 1)
    g = large_sigma_weights(sigma, max(w, *(abs(z) for z in (zs[0] - sens, zs[-1], zs[-1] - sens))))
    with mp.workdps(25):
        f = mp.exp(mp.mpf(epsilon))
        num = mp.fsum(g[abs(z)] - f * g[abs(z - sens)] for z in zs)
        norm = 1 + 2 * mp.fsum(g[z] for z in range(1, w + 1))
        exact = num / norm
    assert exact > mp.mpf(10) ** -12  # a meaningful case
    m = DiscreteGaussian(sigma, sens)
    check_upper(m.delta(epsilon), exact, 1e-9, f"{m!r}.delta({epsilon})")


@pytest.mark.parametrize(("sigma", "sens"), [*DG_CASES, (0.24, 1), (0.26, 3)])
@pytest.mark.parametrize("alpha", [1.0, 1.0 + 2**-30, 1.25, 1.5, 2.0, 3.7, 41.0, 500.5])
def test_discrete_gaussian_renyi_is_the_enumerated_one(
    sigma: Fraction | float, sens: int, alpha: float
) -> None:
    m = DiscreteGaussian(sigma, sens)
    check_upper(m.renyi(alpha), dg_renyi(sigma, sens, alpha), CLOSED_FORM_REL, f"{m!r}.renyi")


@pytest.mark.parametrize(("sigma", "sens"), DG_CASES)
def test_discrete_gaussian_zcdp_is_tight(sigma: Fraction | float, sens: int) -> None:
    m = DiscreteGaussian(sigma, sens)
    rho_exact = Fraction(sens * sens) / (2 * Fraction(sigma) ** 2)
    rho = convert(m, ZCDP).rho
    assert rho == m.rho
    assert Fraction(rho) >= rho_exact
    assert Fraction(math.nextafter(rho, 0.0)) < rho_exact
    with mp.workdps(DPS):
        # tight: the KL divergence (the α → 1 limit of D_α/α) is ρ itself
        assert abs(dg_renyi(sigma, sens, 1.0) - _mpq(rho_exact)) < mp.mpf(10) ** -25 * _mpq(rho)
        # valid: D_α ≤ αρ, with equality when (α − 1)Δ is an integer
        for alpha in (1.3, 2.0, 2.5, 6.0):
            assert dg_renyi(sigma, sens, alpha) <= alpha * _mpq(rho_exact) * (1 + mp.mpf(10) ** -30)
    assert m.renyi(3.0) == pytest.approx(3 * rho, rel=1e-15)
    # not pure DP
    assert m.renyi(math.inf) == math.inf
    assert m.epsilon(0.0) == math.inf
    with pytest.raises(NotImplied):
        convert(m, PureDP)


@pytest.mark.parametrize(("sigma", "sens"), [(0.3, 2), (2.5, 1), (Fraction(41, 5), 4)])
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.05])
def test_discrete_gaussian_epsilon_is_the_enumerated_inverse(
    sigma: Fraction | float, sens: int, delta: float
) -> None:
    m = DiscreteGaussian(sigma, sens)
    got = m.epsilon(delta)
    if float(dg_profile(sigma, sens, 0.0)) <= delta:
        assert got == 0.0
        return
    assert dg_profile(sigma, sens, got) <= delta
    assert dg_profile(sigma, sens, got * (1 - 1e-10)) > delta


# --------------------------------------------------------------------------------------------------
# Worst case, group privacy, conversions
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_smaller_shifts_are_never_worse(family: str) -> None:
    # the characterisation is for |f(x) − f(x′)| = Δ; every shift d < Δ must be dominated
    sens = 4
    if family == "laplace":
        m: DiscreteLaplace | DiscreteGaussian = DiscreteLaplace(Fraction(3, 2), sens)
        prof, ren = dl_profile, dl_renyi
        param: float | Fraction = Fraction(3, 2)
    else:
        m = DiscreteGaussian(0.45, sens)
        prof, ren = dg_profile, dg_renyi
        param = 0.45
    for d in range(1, sens):
        for eps in (0.0, 0.7, 2.0):
            assert m.delta(eps) >= prof(param, sens, eps, shift=d)
        for alpha in (1.0, 1.7, 4.0):
            assert m.renyi(alpha) >= ren(param, sens, alpha, shift=d)


def test_group_privacy_is_the_sensitivity_multiplied() -> None:
    m = DiscreteLaplace(2.5, 3)
    assert m.group(1) is m
    assert m.group(4) == DiscreteLaplace(2.5, 12)
    check_upper(m.group(2).delta(0.5), dl_profile(2.5, 6, 0.5), CLOSED_FORM_REL, "group delta")
    g = DiscreteGaussian(Fraction(3, 4), 1)
    assert g.group(3) == DiscreteGaussian(Fraction(3, 4), 3)
    check_upper(g.group(3).renyi(1.5), dg_renyi(0.75, 3, 1.5), CLOSED_FORM_REL, "group renyi")


def test_conversions_through_the_registry() -> None:
    m = DiscreteLaplace(2.0, 3)
    assert convert(m, RDP).renyi(2.5) == m.renyi(2.5)
    approx = convert(m, sdp.ApproxDP, delta=1e-6)
    assert approx.delta_ == 1e-6
    assert approx.epsilon_ == m.epsilon(1e-6)
    g = DiscreteGaussian(1.5, 1)
    assert convert(g, ZCDP) == ZCDP(g.rho)
    assert convert(g, sdp.ApproxDP, epsilon=1.0).delta_ == g.delta(1.0)
    # the exact profile beats the zCDP conversion (which is valid but loose)
    assert g.epsilon(1e-6) < ZCDP(g.rho).epsilon(1e-6)


def test_compositions_use_the_exact_curves() -> None:
    from sharpdp.accounting.composition import compose

    g, lap = DiscreteGaussian(2, 1), DiscreteLaplace(3, 2)
    both = compose([(g, 4), lap])
    # valid: never below one of its parts; sharp: at least as good as the plain zCDP sum
    assert both.epsilon(1e-6) >= g.epsilon(1e-6)
    assert both.epsilon(1e-6) <= ZCDP(4 * g.rho + convert(lap, ZCDP).rho).epsilon(1e-6)
    assert both.renyi(2.0) <= 4 * g.renyi(2.0) + lap.renyi(2.0) + 1e-12


def test_trivial_mechanisms() -> None:
    for m in (DiscreteLaplace(1, 0), DiscreteGaussian(1, 0)):
        assert m.delta(0.0) == 0.0
        assert m.epsilon(1e-9) == 0.0
        assert m.renyi(2.0) == 0.0
        assert m.renyi(math.inf) == 0.0
    assert DiscreteLaplace(3, 2).delta(math.inf) == 0.0
    assert DiscreteGaussian(3, 2).delta(math.inf) == 0.0
    assert DiscreteGaussian(3, 2).epsilon(1.0) == 0.0


def test_float_parameters_are_exact_dyadics() -> None:
    # 0.1 is the float 3602879701896397/2^55, not 1/10: the sampler and the accounting both use it
    a, b = DiscreteLaplace(0.1, 2**40), DiscreteLaplace(Fraction(1, 10), 2**40)
    assert Fraction(a.scale) == Fraction(3602879701896397, 2**55)
    assert Fraction(a.epsilon0) >= 2**40 / Fraction(3602879701896397, 2**55)
    assert b.epsilon0 == 10 * 2**40
    g = DiscreteGaussian(0.1)
    assert g.sigma_squared == Fraction(3602879701896397, 2**55) ** 2
    assert Fraction(g.rho) >= 1 / (2 * g.sigma_squared)
    # other exact types are kept exactly
    assert DiscreteLaplace(Decimal("0.5")).scale == Fraction(1, 2)
    assert DiscreteLaplace(np.int64(3)).scale == 3
    assert DiscreteGaussian(np.float32(0.5)).sigma == 0.5
    assert DiscreteGaussian(Fraction(6, 2)).sigma == 3
    assert DiscreteLaplace(2, 3.0).sensitivity == 3
    assert DiscreteGaussian(2).sigma_squared == 4
    assert DiscreteLaplace(2) == DiscreteLaplace(2.0)


def test_frozen_and_hashable() -> None:
    m = DiscreteGaussian(2, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.sigma = 3  # type: ignore[misc]
    assert len({m, DiscreteGaussian(2.0, 1), DiscreteGaussian(3, 1)}) == 2
    assert repr(DiscreteLaplace(Fraction(1, 3), 2)) == (
        "DiscreteLaplace(scale=Fraction(1, 3), sensitivity=2)"
    )


# --------------------------------------------------------------------------------------------------
# release: the exact output law, shapes, types, determinism
# --------------------------------------------------------------------------------------------------


def assert_law(samples: np.ndarray, pmf: Callable[[int], float], lo: int, hi: int) -> None:
    """Chi-square goodness of fit of integer samples against ``pmf`` on [lo, hi] (mass outside it
    < 1e-15); bins expecting < 20 draws are merged left to right. False-failure rate 1e-6."""
    assert samples.min() >= lo
    assert samples.max() <= hi
    probs = np.array([pmf(k) for k in range(lo, hi + 1)])
    assert_chi_square(samples.astype(np.int64), probs, lo, FALSE_FAILURE)


@pytest.mark.parametrize("scale", [Fraction(2, 3), 2.5])
def test_discrete_laplace_release_law(scale: Fraction | float) -> None:
    m = DiscreteLaplace(scale, 2)
    n = 200_000
    out = m.release(np.full(n, 7), rng=20261123)
    assert out.dtype == np.int64
    assert out.shape == (n,)
    q = math.exp(-1 / float(scale))

    def pmf(k: int) -> float:  # P(7 + Z = k), Z discrete Laplace (closed form)
        return (1 - q) / (1 + q) * q ** abs(k - 7)

    w = math.ceil(40 * float(scale))
    assert_law(out, pmf, 7 - w, 7 + w)


@pytest.mark.parametrize("sigma", [Fraction(1, 2), 1.7])
def test_discrete_gaussian_release_law(sigma: Fraction | float) -> None:
    m = DiscreteGaussian(sigma)
    n = 200_000
    out = m.release(np.full((400, 500), -3, dtype=np.int32), rng=77)
    assert out.dtype == np.int64
    assert out.shape == (400, 500)
    logp, w = dg_logpmf(sigma)

    def pmf(k: int) -> float:
        return float(mp.exp(logp(k + 3)))

    assert_law(out.ravel(), pmf, -3 - w, -3 + w)
    assert out.size == n


class _ArrayLike:
    """A minimal array-like (as pandas Series are): not a Sequence, but has ``__array__``."""

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        return np.array([4, 5])


def test_release_types_shapes_and_determinism() -> None:
    for m in (DiscreteLaplace(1.5), DiscreteGaussian(1.5)):
        x = m.release(5, rng=1)
        assert type(x) is int
        assert type(m.release(np.int16(5), rng=1)) is int
        assert type(m.release(5.0, rng=1)) is int  # an integral float is an integer
        assert m.release(5, rng=1) == x  # the same seed, the same draw
        a = m.release([1, 2, 3], rng=np.random.default_rng(4))
        assert isinstance(a, np.ndarray)
        assert a.dtype == np.int64
        assert a.shape == (3,)
        b = m.release(np.array([[1.0, -2.0], [3.0, 2.0**61]]), rng=9)
        assert b.shape == (2, 2)
        assert b.dtype == np.int64
        assert m.release(np.array([], dtype=np.int64), rng=1).shape == (0,)
        assert m.release(np.uint8(200), rng=1) - 200 == m.release(0, rng=1)
        big = m.release(2**62 - 1, rng=2)
        assert type(big) is int
        assert abs(big - (2**62 - 1)) < 1000
        assert m.release(_ArrayLike(), rng=3).shape == (2,)  # anything with __array__
        gen = np.random.default_rng(5)
        first, second = m.release(np.zeros(50, int), rng=gen), m.release(np.zeros(50, int), rng=gen)
        assert not np.array_equal(first, second)  # a Generator continues its stream


# --------------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------------

BAD_NOISE = [0, -1, -0.5, 0.0, math.nan, math.inf, -math.inf, "1", None, True, 2**53, 1j, [1]]
BAD_SENSITIVITY = [1.5, -1, math.nan, math.inf, True, "1", None, 2**63, Fraction(1, 2), [1]]


@pytest.mark.parametrize("cls", [DiscreteLaplace, DiscreteGaussian])
@pytest.mark.parametrize("value", BAD_NOISE, ids=stable_id)
def test_bad_noise_parameter(cls: type, value: object) -> None:
    name = "scale" if cls is DiscreteLaplace else "sigma"
    with pytest.raises(InvalidParameter, match=name):
        cls(value)


@pytest.mark.parametrize("cls", [DiscreteLaplace, DiscreteGaussian])
@pytest.mark.parametrize("value", BAD_SENSITIVITY, ids=stable_id)
def test_bad_sensitivity(cls: type, value: object) -> None:
    with pytest.raises(InvalidParameter, match="sensitivity"):
        cls(1, value)


def test_scale_with_a_huge_numerator_is_rejected() -> None:
    with pytest.raises(InvalidParameter, match="numerator"):
        DiscreteLaplace(Fraction(2**63 + 1, 2**12))


BAD_VALUES = [
    1.5,
    math.nan,
    math.inf,
    True,
    np.bool_(False),
    "3",
    None,
    Fraction(3, 1),
    2**62,
    -(2**62),
    [1, 2.5],
    [1, math.nan],
    [[1, 2], [3]],
    np.array([True, False]),
    np.array(["1"]),
    np.array([2**63 - 1]),
    np.array([1.0, 2.0**62]),
    [1, 2**70],
    np.array([1 + 1j]),
]


@pytest.mark.parametrize("cls", [DiscreteLaplace, DiscreteGaussian])
@pytest.mark.parametrize("value", BAD_VALUES, ids=stable_id)
def test_bad_release_value(cls: type, value: object) -> None:
    with pytest.raises(InvalidParameter, match="value"):
        cls(1).release(value, rng=0)


def test_bad_input_message_names_the_value() -> None:
    with pytest.raises(InvalidParameter, match=r"value\[1\].*2\.5"):
        DiscreteLaplace(1).release([1, 2.5, 3], rng=0)
    with pytest.raises(InvalidParameter, match=r"1\.5"):
        DiscreteGaussian(1).release(1.5)
    with pytest.raises(InvalidParameter, match="rng"):
        DiscreteGaussian(1).release(1, rng="seed")  # type: ignore[call-overload]
    with pytest.raises(InvalidParameter, match="alpha"):
        DiscreteGaussian(1).renyi(0.5)
    with pytest.raises(InvalidParameter, match="delta"):
        DiscreteLaplace(1).epsilon(math.nan)


# --------------------------------------------------------------------------------------------------
# Properties (hypothesis): profile shape, validity against brute force, inverse consistency
# --------------------------------------------------------------------------------------------------

scales = st.integers(1, 24).map(lambda k: Fraction(k, 4))
sigmas = st.integers(1, 30).map(lambda k: Fraction(k, 5))
sensitivities = st.integers(1, 5)
epsilons = st.floats(0.0, 6.0, allow_nan=False)


def mechanism(kind: str, param: Fraction, sens: int) -> DiscreteLaplace | DiscreteGaussian:
    return DiscreteLaplace(param, sens) if kind == "laplace" else DiscreteGaussian(param, sens)


@settings(max_examples=30)
@given(
    kind=st.sampled_from(["laplace", "gaussian"]),
    param=st.one_of(scales, sigmas),
    sens=sensitivities,
    e1=epsilons,
    e2=epsilons,
)
def test_profile_is_in_the_unit_interval_and_non_increasing(
    kind: str, param: Fraction, sens: int, e1: float, e2: float
) -> None:
    m = mechanism(kind, param, sens)
    lo, hi = sorted((e1, e2))
    d_lo, d_hi = m.delta(lo), m.delta(hi)
    assert 0.0 <= d_hi <= d_lo <= 1.0
    assert d_lo > 0.0 or (kind == "laplace" and lo >= m.epsilon0)


@settings(max_examples=25)
@given(
    kind=st.sampled_from(["laplace", "gaussian"]), sens=sensitivities, e=epsilons, data=st.data()
)
def test_profile_is_never_below_brute_force(
    kind: str, sens: int, e: float, data: st.DataObject
) -> None:
    param = data.draw(scales if kind == "laplace" else sigmas)
    m = mechanism(kind, param, sens)
    exact = dl_profile(param, sens, e) if kind == "laplace" else dg_profile(param, sens, e)
    with mp.workdps(DPS):
        assert mp.mpf(m.delta(e)) >= exact * (1 - mp.mpf(10) ** -30)


@settings(max_examples=25)
@given(
    kind=st.sampled_from(["laplace", "gaussian"]),
    sens=sensitivities,
    # α within 1e-6 of 1 (but not 1) is excluded: the mpmath reference divides by α − 1 and
    # loses the digits the 1e-30 tolerance needs there (α = 1 itself is the KL limit).
    alpha=st.one_of(st.just(1.0), st.floats(1.0 + 1e-6, 60.0, allow_nan=False)),
    data=st.data(),
)
def test_renyi_is_never_below_brute_force(
    kind: str, sens: int, alpha: float, data: st.DataObject
) -> None:
    param = data.draw(scales if kind == "laplace" else sigmas)
    m = mechanism(kind, param, sens)
    exact = dl_renyi(param, sens, alpha) if kind == "laplace" else dg_renyi(param, sens, alpha)
    with mp.workdps(DPS):
        assert mp.mpf(m.renyi(alpha)) >= exact * (1 - mp.mpf(10) ** -30)


@settings(max_examples=40)
@given(
    kind=st.sampled_from(["laplace", "gaussian"]),
    param=st.one_of(scales, sigmas),
    sens=sensitivities,
    log10_delta=st.floats(-14.0, -0.5),
)
def test_epsilon_of_delta_is_consistent(
    kind: str, param: Fraction, sens: int, log10_delta: float
) -> None:
    m = mechanism(kind, param, sens)
    delta = 10.0**log10_delta
    eps = m.epsilon(delta)
    assert eps >= 0.0
    assert m.delta(eps) <= delta  # certified
    if eps > 0.0:
        assert m.delta(eps * (1 - 1e-9)) > delta  # and (nearly) the smallest such ε
    if kind == "laplace":
        assert eps <= m.epsilon0
