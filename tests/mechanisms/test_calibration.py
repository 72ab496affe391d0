"""Calibration returns the least noise meeting the target, checked against closed forms here."""

from __future__ import annotations

import math
import random

import mpmath
import pytest

import sharpdp as sdp


def gaussian_delta_mp(sigma: float, eps: float, sens: float = 1.0) -> float:
    """Balle–Wang Thm 8 in 50-digit arithmetic: Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ)."""
    with mpmath.workdps(50):
        s, d, e = mpmath.mpf(sigma), mpmath.mpf(sens), mpmath.mpf(eps)
        return float(
            mpmath.ncdf(d / (2 * s) - e * s / d)
            - mpmath.e**e * mpmath.ncdf(-d / (2 * s) - e * s / d)
        )


@pytest.mark.parametrize(
    ("eps", "delta", "sens"), [(1.0, 1e-6, 1.0), (0.3, 1e-5, 2.0), (5.0, 1e-9, 1.0)]
)
def test_gaussian_is_the_least_sigma_meeting_the_target(
    eps: float, delta: float, sens: float
) -> None:
    m = sdp.calibrate(sdp.Gaussian, target=sdp.ApproxDP(eps, delta), sensitivity=sens)
    assert isinstance(m, sdp.Gaussian)
    assert m.sensitivity == sens
    assert gaussian_delta_mp(m.sigma, eps, sens) <= delta * (1 + 1e-12)
    assert gaussian_delta_mp(m.sigma * (1 - 1e-9), eps, sens) > delta  # least, to 1e-9


def test_classical_gaussian_rule_is_offered_and_looser() -> None:
    target = sdp.ApproxDP(0.5, 1e-6)
    classical = sdp.calibrate(sdp.Gaussian, target, method="classical")
    assert classical.sigma == pytest.approx(math.sqrt(2 * math.log(1.25e6)) / 0.5, rel=1e-15)
    exact = sdp.calibrate(sdp.Gaussian, target)
    assert exact.sigma < 0.8 * classical.sigma
    with pytest.raises(sdp.NotImplied):
        sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(1.5, 1e-6), method="classical")


def test_gaussian_zcdp_and_gdp_targets() -> None:
    assert sdp.calibrate(sdp.Gaussian, sdp.ZCDP(0.5), sensitivity=2.0).sigma == pytest.approx(
        2.0, rel=1e-11
    )
    assert sdp.calibrate(sdp.Gaussian, sdp.GDP(0.25)).sigma == pytest.approx(4.0, rel=1e-11)


def test_laplace_pure_and_approximate() -> None:
    assert sdp.calibrate(sdp.Laplace, sdp.PureDP(0.5), sensitivity=3.0).scale == pytest.approx(
        6.0, rel=1e-11
    )
    # the Laplace profile inverted: ε(δ) = ε0 + 2 log(1 − δ), so (ε, δ) needs ε0 = ε − 2 log(1 − δ)
    m = sdp.calibrate(sdp.Laplace, sdp.ApproxDP(0.5, 0.01))
    assert 1.0 / m.scale == pytest.approx(0.5 - 2 * math.log(0.99), rel=1e-11)
    assert 1.0 / m.scale <= 0.5 - 2 * math.log(0.99)


def test_exponential_mechanism_targets() -> None:
    assert sdp.calibrate(sdp.Exponential, sdp.PureDP(0.7)).epsilon_ == pytest.approx(0.7, rel=1e-11)
    # zCDP: the tight BR constant is the max KL y − 1 − log y, y = η/(e^η − 1) (the KL of GRR_t
    # maximised over t) < η²/8,
    # so the calibrated ε exceeds √(8ρ).
    m = sdp.calibrate(sdp.Exponential, sdp.ZCDP(0.125))
    eta = m.epsilon_
    y = eta / math.expm1(eta)
    assert y - 1 - math.log(y) <= 0.125
    assert 1.0 < eta < 1.02


def test_top_k_calibrates_the_per_round_epsilon() -> None:
    m = sdp.calibrate(sdp.TopK, sdp.PureDP(1.0), k=4)
    assert isinstance(m, sdp.TopK)
    assert m.k == 4
    assert m.epsilon_ == pytest.approx(0.25, rel=1e-11)


def test_randomized_response_closed_form() -> None:
    # δ(ε) = (e^{ε0} − e^ε)/(1 + e^{ε0}) = δ  ⇔  e^{ε0} = (e^ε + δ)/(1 − δ)
    m = sdp.calibrate(sdp.RandomizedResponse, sdp.ApproxDP(1.0, 0.01))
    assert m.epsilon_ == pytest.approx(math.log((math.e + 0.01) / 0.99), rel=1e-11)


def test_discrete_mechanisms() -> None:
    dg = sdp.calibrate(sdp.DiscreteGaussian, sdp.ApproxDP(1.0, 1e-6))
    assert dg.delta(1.0) <= 1e-6
    assert sdp.DiscreteGaussian(float(dg.sigma) * (1 - 1e-9)).delta(1.0) > 1e-6
    dl = sdp.calibrate(sdp.DiscreteLaplace, sdp.PureDP(0.5))
    assert float(dl.scale) == pytest.approx(2.0, rel=1e-11)


def test_impossible_and_bad_requests() -> None:
    with pytest.raises(sdp.NotImplied):
        sdp.calibrate(sdp.Gaussian, sdp.PureDP(1.0))
    with pytest.raises(sdp.InvalidParameter):
        sdp.calibrate(sdp.ZCDP, sdp.PureDP(1.0))  # type: ignore[type-var]
    with pytest.raises(sdp.InvalidParameter):
        sdp.calibrate(sdp.Gaussian, sdp.RDP([2.0], [1.0]))
    with pytest.raises(sdp.InvalidParameter):
        sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(1.0, 1e-6), method="magic")
    with pytest.raises(sdp.InvalidParameter):
        sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(1.0, 1e-6), sensitivity=-1.0)
    for k in (0, -5):  # a bad fixed argument is the caller's error, not "no TopK meets it"
        with pytest.raises(sdp.InvalidParameter, match="k must be >= 1"):
            sdp.calibrate(sdp.TopK, sdp.PureDP(1.0), k=k)


def test_a_fixed_argument_valid_for_some_noise_only_is_not_refused() -> None:
    """A Gaussian's granularity must not exceed σ: granularity 2 is valid for σ ≥ 2, and the
    least such σ for (0.1, 1e-6) is far above it (the check for bad fixed arguments briefly
    built σ = 1 alone and refused it). No rounded Gaussian needs less noise than the continuous
    one: σ is at least the analytic Gaussian's 36.3 (Balle–Wang 2018, for Δ = 1)."""
    g = sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(0.1, 1e-6), granularity=2.0)
    assert g.granularity == 2.0
    assert g.sigma >= 36.0


@pytest.mark.parametrize("epsilon", [1e20, 1e100, 1e300, 1e308])
def test_the_least_noise_of_a_very_loose_target_is_found(epsilon: float) -> None:
    """Below the search's usual floor of 2^-40: Laplace's least scale for ε-DP is exactly Δ/ε
    (the loss is |x − x'|/b ≤ Δ/b), and was reported as 2^-40 ≈ 9.1e-13 at ε = 1e308."""
    b = sdp.calibrate(sdp.Laplace, sdp.PureDP(epsilon)).scale
    least = 1.0 / epsilon
    assert least <= b <= least * (1 + 1e-9) + 2 * math.ulp(least)


@pytest.mark.parametrize("epsilon", [1e160, 1e200, 1e300, 1e308])
def test_a_gaussian_at_an_epsilon_past_the_float_square_root_has_no_delta(epsilon: float) -> None:
    """δ_μ(ε) ≤ Φ(μ/2 − ε/μ) ≤ e^{−(ε/μ − μ/2)²/2} (Chernoff), below any float for these ε and
    μ ≤ 1e6. a² overflowed to a NaN there, read as δ = 1: a valid bound, and a σ of 1.8e8 as the
    'least' noise for ApproxDP(1e300, 1e-6) (the least is near 1/√(2ε) = 7.1e-151)."""
    for sigma in (1e-6, 1.0, 1e8):
        assert sdp.Gaussian(sigma).delta(epsilon) < 1e-300
    if epsilon <= 1e300:
        sigma = sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(epsilon, 1e-6)).sigma
        # μ = 1/σ needs μ²/2 + μ·√(2 ln 1/δ) ≳ ε (BS16 Lemma 3.5 bounds it from above)
        assert sigma <= 1.01 / math.sqrt(2.0 * epsilon)
        assert sigma >= 0.99 / math.sqrt(2.0 * epsilon) / (1 + 6 / math.sqrt(epsilon))


def test_a_calibrated_gaussian_meets_its_target_both_ways() -> None:
    """δ(ε) ≤ δ and ε(δ) ≤ ε both hold, so an accountant whose budget is the target accepts the
    mechanism (16 of 300 random calibrations read ε(δ) ~1e-14 above ε, and were refused)."""
    rng = random.Random(0)
    cases = [(4.747483410735286, 1e-6, 6.773732291155524), (3.51209, 1e-9, 1.0)]
    cases += [
        (10 ** rng.uniform(-2, 1), 10 ** rng.uniform(-12, -3), 10 ** rng.uniform(-1, 1))
        for _ in range(60)
    ]
    for eps, delta, sensitivity in cases:
        target = sdp.ApproxDP(eps, delta)
        g = sdp.calibrate(sdp.Gaussian, target, sensitivity=sensitivity)
        assert g.delta(eps) <= delta
        assert g.epsilon(delta) <= eps
        sdp.Accountant(target).spend(g)


def test_a_pure_target_for_a_gaussian_is_refused_for_its_reason() -> None:
    """No noise makes a Gaussian (ε, 0)-DP: the refusal says so, not that a search limit was hit."""
    for target in (sdp.PureDP(1.0), sdp.ApproxDP(1.0, 0.0)):
        with pytest.raises(sdp.NotImplied, match="unbounded at any noise"):
            sdp.calibrate(sdp.Gaussian, target)


@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_randomized_response_to_gdp_is_the_closed_form(mu: float) -> None:
    """Binary randomized response's trade-off curve is the two chords through (p, p),
    p = 1/(1 + e^ε), and G_μ is convex through (0, 1) and (1, 0): μ-GDP holds iff G_μ(p) ≤ p,
    i.e. μ ≥ 2Φ⁻¹(e^ε/(1 + e^ε)). So the largest ε at μ is logit Φ(μ/2) (40 digits here); the
    calibration (a search on μ by Brent's method) must return it from below, within 1e-11."""
    with mpmath.workdps(40):
        p = mpmath.ncdf(mpmath.mpf(mu) / 2)
        best = float(mpmath.log(p / (1 - p)))
    eps = sdp.calibrate(sdp.RandomizedResponse, sdp.GDP(mu)).epsilon_
    assert best * (1 - 1e-11) <= eps <= best


@pytest.mark.parametrize(
    ("family", "fixed", "mu"),
    [
        (sdp.Laplace, {"sensitivity": 2.0}, 0.7),
        (sdp.Exponential, {"monotonic": True}, 1.5),
        (sdp.TopK, {"k": 2}, 0.4),
    ],
)
def test_gdp_calibration_is_the_least_noise_its_check_accepts(
    family: type[sdp.Guarantee], fixed: dict[str, object], mu: float
) -> None:
    """The returned parameter meets μ by the library's own conversion, and 1e-11 less noise does
    not: the search on μ is as sharp as the bisection it replaced (rtol 1e-12)."""
    m = sdp.calibrate(family, sdp.GDP(mu), **fixed)  # type: ignore[arg-type]
    assert sdp.convert(m, sdp.GDP).mu <= mu
    if family is sdp.Laplace:
        less = family(scale=m.scale * (1 - 1e-11), **fixed)  # type: ignore[attr-defined,call-arg]
    else:
        less = family(epsilon=m.epsilon_ * (1 + 1e-11), **fixed)  # type: ignore[attr-defined,call-arg]
    assert sdp.convert(less, sdp.GDP).mu > mu


@pytest.mark.parametrize("mu", [1e10, 1e100, 1e154, 1e300])
def test_a_gdp_target_far_below_the_usual_noise_floor(mu: float) -> None:
    """A Gaussian of σ is exactly (Δ/σ)-GDP, so the least σ for GDP(μ) is Δ/μ; below the usual
    search floor 2^-40 it was reported as 2^-40 ≈ 9.1e-13 (for μ = 1e154: 1e-154)."""
    sigma = sdp.calibrate(sdp.Gaussian, sdp.GDP(mu)).sigma
    assert 1.0 / mu <= sigma <= (1.0 / mu) * (1 + 1e-9)


@pytest.mark.parametrize(
    ("epsilon", "delta", "sensitivity"),
    [(0.010468025406843428, 1.9526137623474227e-05, 1.0), (1e-3, 1e-15, 1.0), (1e-4, 1e-8, 0.01)],
)
def test_gaussian_targets_where_the_widening_step_broke_delta(
    epsilon: float, delta: float, sensitivity: float
) -> None:
    # Widening σ until ε(δ) ≤ ε landed on a σ where the δ(ε) check, whose rounding allowance
    # is not monotone in σ at the 1e-11 level, failed: calibrate raised NumericalError.
    # Independent check: Balle–Wang 2018 Thm 8 at μ = Δ_eff/σ in 50 digits.
    m = sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(epsilon, delta), sensitivity=sensitivity)
    with mpmath.workdps(50):
        mu = mpmath.mpf(m.effective_sensitivity) / mpmath.mpf(m.sigma)
        e = mpmath.mpf(epsilon)
        exact = mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)
        assert exact <= delta
        # and not much noisier than needed: 1e-6 less noise fails
        mu_less = mu / (1 - mpmath.mpf("1e-6"))
        less = mpmath.ncdf(mu_less / 2 - e / mu_less) - mpmath.exp(e) * mpmath.ncdf(
            -mu_less / 2 - e / mu_less
        )
        assert less > delta
    assert m.epsilon(delta) <= epsilon


def test_topk_is_calibrated_by_its_rounds_composition() -> None:
    # TopK's own profile is its Rényi curve converted (δ(1) = 0.138 at ε₀ = 0.9267); its k
    # rounds' composition, the reading an accountant takes, allows 5% more ε per round than
    # calibrating on the own profile did (0.8791)
    target = sdp.ApproxDP(1.0, 0.1)
    m = sdp.calibrate(sdp.TopK, target, k=3)
    rounds = sdp.compose([(sdp.Exponential(m.epsilon_), 3)])
    assert rounds.delta(1.0) <= 0.1
    assert sdp.compose([(sdp.Exponential(m.epsilon_ * (1 + 1e-6)), 3)]).delta(1.0) > 0.1
    assert m.epsilon_ > 0.92
    acct = sdp.Accountant(target)
    acct.spend(m)


def test_zero_loss_targets_and_the_noise_ceiling() -> None:
    # ε = 0 meets a zero-loss target for the families searched on ε (NumericalError before)
    assert sdp.calibrate(sdp.RandomizedResponse, sdp.PureDP(0.0)).epsilon_ == 0.0
    assert sdp.calibrate(sdp.Exponential, sdp.ZCDP(0.0)).epsilon_ == 0.0
    assert sdp.calibrate(sdp.TopK, sdp.GDP(0.0), k=2).epsilon_ == 0.0
    # no finite noise gives zero loss: said so (it blamed an unbounded loss and δ = 0)
    with pytest.raises(sdp.NotImplied, match="allows no privacy loss"):
        sdp.calibrate(sdp.Gaussian, sdp.ZCDP(0.0))
    # the noise searched grows with the sensitivity (2**50 alone refused a scale of 1e16)
    m = sdp.calibrate(sdp.Laplace, sdp.PureDP(1e-6), sensitivity=1e10)
    assert m.epsilon(0.0) <= 1e-6
    assert m.scale == pytest.approx(1e16, rel=1e-9)
    # a family with no such guarantee is named as such (it blamed the noise ceiling)
    with pytest.raises(sdp.NotImplied, match="no GDP guarantee of a DiscreteGaussian is known"):
        sdp.calibrate(sdp.DiscreteGaussian, sdp.GDP(0.6))


def _laplace_renyi(b: mpmath.mpf, alpha: mpmath.mpf) -> mpmath.mpf:
    """D_α of Laplace(b), Δ = 1 (Mironov 2017, Table II); α = 1: KL = 1/b + e^{−1/b} − 1."""
    if alpha == 1:
        return 1 / b + mpmath.exp(-1 / b) - 1
    return mpmath.log(
        alpha / (2 * alpha - 1) * mpmath.exp((alpha - 1) / b)
        + (alpha - 1) / (2 * alpha - 1) * mpmath.exp(-alpha / b)
    ) / (alpha - 1)


def test_a_zcdp_target_with_xi_is_met_on_the_renyi_curve() -> None:
    # (ρ, ξ) = (0.1, 0.5): D_α ≤ ξ + ρα for all α (Bun–Steinke 2016 Def 1.1). Calibrating on one
    # converted (ρ′, ξ′ = 0) pair gave scale 2.07; the curve allows about 0.95.
    m = sdp.calibrate(sdp.Laplace, sdp.ZCDP(0.1, 0.5))
    with mpmath.workdps(40):
        orders = [mpmath.mpf(1) + mpmath.mpf(10) ** k for k in range(-6, 5)]
        orders += [mpmath.mpf(x) / 4 for x in range(5, 200)]

        def excess(scale: float) -> mpmath.mpf:
            b = mpmath.mpf(scale) / mpmath.mpf(m.effective_sensitivity)
            return max(_laplace_renyi(b, a) - mpmath.mpf("0.1") * a for a in orders)

        assert excess(m.scale) <= mpmath.mpf("0.5")
        assert excess(m.scale * (1 - 1e-3)) > mpmath.mpf("0.5")  # and not much noisier
    assert m.scale < 1.0
