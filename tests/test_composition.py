"""compose() against independent computations: enumeration, closed forms, pinned published values."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import mpmath
import pytest

import sharpdp as sdp
from reference import (
    br_delta,
    laplace_delta_quad,
    laplace_k_fold_epsilon_lower,
    rr_delta,
    two_laplace_delta,
)
from sharpdp.accounting.composition import compose, max_compositions


def rr_k_fold_delta(eps0: float, k: int, eps: float) -> float:
    """δ(ε) of k-fold ε0-randomized response by enumerating all 2^k outcomes (50 digits)."""
    with mpmath.workdps(50):
        e0 = mpmath.mpf(eps0)
        p = [mpmath.e**e0 / (1 + mpmath.e**e0), 1 / (1 + mpmath.e**e0)]
        total = mpmath.mpf(0)
        for outcome in itertools.product((0, 1), repeat=k):
            pp = mpmath.fprod(p[o] for o in outcome)
            qq = mpmath.fprod(p[1 - o] for o in outcome)
            total += max(mpmath.mpf(0), pp - mpmath.e ** mpmath.mpf(eps) * qq)
        return float(total)


def grr_k_fold_delta(eta: float, t: float, k: int, eps: float) -> float:
    """δ(ε) of the k-fold GRR_t pair of η-BR (losses t, t − η) by enumeration (50 digits)."""
    with mpmath.workdps(50):
        eta_, t_ = mpmath.mpf(eta), mpmath.mpf(t)
        qa = (mpmath.e ** (-t_) - mpmath.e ** (-eta_)) / (1 - mpmath.e ** (-eta_))
        pa = mpmath.e**t_ * qa
        p, q = [pa, 1 - pa], [qa, 1 - qa]
        total = mpmath.mpf(0)
        for outcome in itertools.product((0, 1), repeat=k):
            pp = mpmath.fprod(p[o] for o in outcome)
            qq = mpmath.fprod(q[o] for o in outcome)
            total += max(mpmath.mpf(0), pp - mpmath.e ** mpmath.mpf(eps) * qq)
        return float(total)


@pytest.mark.parametrize("k", [1, 2, 5, 8])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.5])
def test_pure_dp_composition_is_exactly_k_fold_randomized_response(k: int, eps: float) -> None:
    want = rr_k_fold_delta(0.4, k, eps)
    got = compose([(sdp.PureDP(0.4), k)]).delta(eps)
    assert got >= want
    assert got == pytest.approx(want, rel=1e-8, abs=1e-15)


@pytest.mark.parametrize("k", [2, 4, 6])
def test_non_adaptive_bounded_range_is_the_worst_grr_product(k: int) -> None:
    eta, eps = 1.0, 0.5
    brute = max(grr_k_fold_delta(eta, t, k, eps) for t in [j * eta / 200 for j in range(201)])
    got = compose([(sdp.BoundedRange(eta), k)], adaptive=False).delta(eps)
    assert got >= brute
    assert got == pytest.approx(brute, rel=1e-3)


# (k, ε0) → (KOV15 Thm 3.3 for ε0-DP, Dong–Durfee–Rogers 2020 Thm 3 for ε0-BR), ε at δ = 1e-6,
# computed independently in mpmath (bench/accounting.py's references).
TABLE = [(10, 0.1, 0.99937, 0.62864), (50, 0.1, 3.17290, 1.53374), (200, 1.0, 147.442, 56.769)]


@pytest.mark.parametrize(("k", "eps0", "kov", "ddr"), TABLE)
def test_formulas_table(k: int, eps0: float, kov: float, ddr: float) -> None:
    pure = compose([(sdp.PureDP(eps0), k)]).epsilon(1e-6)
    br = compose([(sdp.BoundedRange(eps0), k)], adaptive=False).epsilon(1e-6)
    assert pure == pytest.approx(kov, abs=6e-6 * max(1.0, kov))
    assert br == pytest.approx(ddr, abs=6e-6 * max(1.0, ddr))


def test_ddr20_is_used_only_when_declared_non_adaptive() -> None:
    c = compose([(sdp.Exponential(0.1), 50)])
    rows = {r.name: r for r in c.explain(delta=1e-6).rows}
    assert rows["ddr20"].value is None
    assert "adaptive=False" in rows["ddr20"].note
    assert c.epsilon(1e-6) > compose([(sdp.Exponential(0.1), 50)], adaptive=False).epsilon(1e-6)


def test_gaussians_compose_exactly() -> None:
    # Dong–Roth–Su 2019 Cor 3.3: σ = 5 composed 100 times is σ = 0.5: ε(1e-5) = 9.997256
    # (Balle–Wang 2018 Thm 8)
    c = compose([(sdp.Gaussian(5.0), 100)])
    assert round(c.epsilon(1e-5), 6) == 9.997256
    assert c.explain(delta=1e-5).winner.name in {"gdp", "pld"}
    mixed = compose([sdp.Gaussian(1.0), (sdp.Gaussian(2.0, sensitivity=2.0), 3)])
    assert mixed.epsilon(1e-6) == pytest.approx(sdp.GDP(2.0).epsilon(1e-6), rel=1e-12)


def test_max_compositions_of_exponential_mechanisms() -> None:
    # 359 EMs at ε0 = 0.025 fit (1, 1e-6) non-adaptively (Dong–Durfee–Rogers 2020 Thm 3); 26
    # under 2ε0-DP (Kairouz–Oh–Viswanath 2015 Thm 3.3).
    budget = sdp.ApproxDP(1.0, 1e-6)
    assert max_compositions(sdp.Exponential(0.025), budget, adaptive=False) == 359
    assert max_compositions(sdp.PureDP(0.05), budget) == 26
    assert max_compositions(sdp.PureDP(2.0), budget) == 0


def test_max_compositions_under_a_zcdp_budget_divides_exactly() -> None:
    """A zCDP budget ρ holds ⌊ρ/ρ_i⌋ items (Bun–Steinke 2016 Lemma 2.3), ρ_i exact where known:
    Gaussian(σ = 4) has ρ_i = 1/32 (Δ²/2σ²), so 0.5 holds exactly 16; ε-DP items carry
    ε·tanh(ε/2) (Steinke 2024); free items and (ε, δ) items are refused by name. The count is
    the accountant's: k spends fit, the (k + 1)-th is refused."""
    assert max_compositions(sdp.Gaussian(4.0), sdp.ZCDP(0.5)) == 16
    assert max_compositions(sdp.Gaussian(4.0), sdp.ZCDP(0.5 - 1e-12)) == 15
    assert max_compositions(sdp.PureDP(0.1), sdp.ZCDP(0.5)) == math.floor(
        Fraction(0.5) / Fraction(0.1 * math.tanh(0.05))
    )
    with pytest.raises(sdp.NumericalError, match="free"):
        max_compositions(sdp.ZCDP(0.0), sdp.ZCDP(1.0))
    with pytest.raises(sdp.NotImplied):
        max_compositions(sdp.ApproxDP(1.0, 1e-6), sdp.ZCDP(1.0))
    item, budget = sdp.Gaussian(3.0, sensitivity=2.0), sdp.ZCDP(0.7)
    k = max_compositions(item, budget)
    acc = sdp.Accountant(budget)
    acc.spend(item, count=k)
    with pytest.raises(sdp.BudgetExceeded):
        acc.spend(item)


def test_explain_lists_every_analysis_and_the_winner() -> None:
    ex = compose([(sdp.PureDP(0.1), 50)]).explain(delta=1e-6)
    names = [r.name for r in ex.rows]
    assert {"kov", "rdp", "zcdp", "basic", "advanced"} <= set(names)
    assert ex.winner.name in {"kov", "pld"}  # both exact up to rounding (KOV rounds up by 1e-9)
    assert ex.runner_up is not None
    assert ex.runner_up.value is not None
    assert ex.runner_up.value >= ex.winner.value  # type: ignore[operator]
    assert "Kairouz" in str(ex)


def test_approx_dp_items_compose_with_kov_and_delta_at_infinity() -> None:
    c = compose([(sdp.ApproxDP(0.5, 1e-7), 10)])
    assert c.delta(math.inf) == pytest.approx(1 - (1 - 1e-7) ** 10, rel=1e-9)
    assert c.epsilon(1e-6) < 10 * 0.5
    assert c.epsilon(1e-7) == math.inf


def test_bad_input() -> None:
    with pytest.raises(sdp.InvalidParameter):
        compose([(sdp.PureDP(1.0), -1)])
    with pytest.raises(sdp.InvalidParameter):
        compose([("gaussian", 1)])  # type: ignore[list-item]
    with pytest.raises(sdp.InvalidParameter):
        compose([sdp.PureDP(1.0)], adaptive="no")  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter):
        compose(sdp.PureDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter):
        max_compositions(sdp.PureDP(1.0), sdp.GDP(1.0))


def kov_binomial_delta(eps0: float, k: int, eps: mpmath.mpf) -> mpmath.mpf:
    """δ(ε) of k-fold ε0-DP as a binomial sum over the RR loss (k − 2i)ε0 (KOV15), 40 digits.

    The terms C(k, i) p^{k−i} (1 − p)^i by their ratio (k − i)/(i + 1) · (1 − p)/p, from i = 0;
    the sum stops at the first i whose loss is ≤ ε (the loss decreases in i)."""
    e0 = mpmath.mpf(eps0)
    p = mpmath.e**e0 / (1 + mpmath.e**e0)
    ratio = (1 - p) / p
    term = p**k
    total = mpmath.mpf(0)
    for i in range(k + 1):
        loss = (k - 2 * i) * e0
        if loss <= eps:
            break
        total += term * (1 - mpmath.e ** (eps - loss))
        term *= ratio * (k - i) / (i + 1)
    return total


@functools.cache
def kov_exact_epsilon(eps0: float, k: int, delta: str) -> float:
    """The root ε of kov_binomial_delta(eps0, k, ε) = δ (40 digits; bracketed near k·ε0's tail)."""
    with mpmath.workdps(40):
        return float(
            mpmath.findroot(
                lambda e: kov_binomial_delta(eps0, k, e) - mpmath.mpf(delta),
                (96.0, 97.0),
                solver="anderson",
            )
        )


@pytest.mark.parametrize("item", [sdp.PureDP(0.1), sdp.RandomizedResponse(0.1)])
def test_many_pure_items_reach_the_exact_optimum(item: sdp.Guarantee) -> None:
    # k = 10^4: ε(1e-6) within 1e-9 relative of the exact root, and never below it.
    eps = compose([(item, 10_000)]).epsilon(1e-6)
    exact = kov_exact_epsilon(0.1, 10_000, "1e-6")
    assert exact <= eps <= exact * (1 + 1e-9)


def test_pure_composition_at_delta_zero_is_exactly_k_epsilon() -> None:
    assert compose([(sdp.PureDP(0.0625), 16)]).epsilon(0.0) == 1.0
    assert compose([(sdp.PureDP(0.1), 3)]).epsilon(0.0) >= 0.3  # rounded up, never down


MIXES = [
    ([(sdp.Gaussian(2.0), 30), (sdp.GDP(0.3), 2)], True),
    ([(sdp.PureDP(0.2), 40)], True),
    ([(sdp.RandomizedResponse(0.5), 20)], False),
    ([(sdp.RandomizedResponse(0.5, categories=3), 20)], True),
    ([(sdp.Laplace(4.0), 50), (sdp.Gaussian(9.0), 10)], True),
    ([(sdp.Exponential(0.3), 60)], False),
    ([(sdp.Exponential(0.3), 60), (sdp.PureDP(0.1), 5)], True),
    ([(sdp.ApproxDP(0.5, 1e-8), 30)], True),
]


@pytest.mark.parametrize(("items", "adaptive"), MIXES)
def test_the_short_cuts_never_change_the_answer(items: list, adaptive: bool) -> None:
    # epsilon()/delta() skip dominated analyses and stop at an exact one; explain() evaluates
    # every analysis. The minimum must agree (up to the float accuracy of the α searches).
    c = compose(items, adaptive=adaptive)
    for delta in (1e-9, 1e-5):
        rows = [r.value for r in c.explain(delta=delta).rows if r.value is not None]
        assert c.epsilon(delta) == pytest.approx(min(rows), rel=1e-9)
    for eps in (0.5, 3.0):
        rows = [r.value for r in c.explain(epsilon=eps).rows if r.value is not None]
        assert c.delta(eps) == pytest.approx(min(rows), rel=1e-9, abs=1e-300)


def test_the_pld_stops_refining_only_when_it_cannot_win() -> None:
    from sharpdp.accounting._items import normalise as _normalise
    from sharpdp.accounting.analyses.pld import _PLDGuarantee
    from sharpdp.accounting.pld import compose_pld

    items = _normalise([(sdp.Laplace(20.0), 40), (sdp.RandomizedResponse(0.05), 30)])
    g = _PLDGuarantee(items)
    fine_lo, _ = compose_pld(list(items)).epsilon_bracket(1e-6)
    # no rival: the fully refined value
    assert g.value_unless_beaten("epsilon", 1e-6, math.inf) == g.epsilon(1e-6)
    # a rival below every possible PLD value: a coarse value, still a valid (upper) bound
    coarse = g.value_unless_beaten("epsilon", 1e-6, 0.0)
    assert coarse >= fine_lo
    assert (
        g.value_unless_beaten("delta", 1.0, 0.0) >= compose_pld(list(items)).delta_bracket(1.0)[0]
    )


def ddr20_delta_reference(eta: float, k: int, eps: float) -> mpmath.mpf:
    """DDR20 Thm 3 evaluated term by term in 40-digit arithmetic: the maximum over the candidates
    t*_l = clip((ε + (l+1)η)/(k+1), 0, η) of Σ_i C(k,i) p^{k−i}(1−p)^i (e^{kt − iη} − e^ε)_+."""
    with mpmath.workdps(40):
        eta_, eps_ = mpmath.mpf(eta), mpmath.mpf(eps)
        best = mpmath.mpf(0)
        for lq in range(k + 1):
            t = min(max((eps_ + (lq + 1) * eta_) / (k + 1), mpmath.mpf(0)), eta_)
            p = (mpmath.exp(-t) - mpmath.exp(-eta_)) / (1 - mpmath.exp(-eta_))
            total = mpmath.mpf(0)
            for i in range(k + 1):
                gap = k * t - i * eta_ - eps_
                if gap > 0:
                    total += (
                        mpmath.binomial(k, i)
                        * p ** (k - i)
                        * (1 - p) ** i
                        * (mpmath.exp(k * t - i * eta_) - mpmath.exp(eps_))
                    )
            best = max(best, total)
        return best


@pytest.mark.parametrize(
    ("k", "eta", "eps"),
    [(3, 1.0, 0.2), (3, 2.5, 1.0), (40, 0.1, 0.5), (40, 1.0, 3.0), (40, 1.0, 12.0),
     (150, 0.1, 2.0), (150, 0.5, 20.0), (150, 0.05, 0.0)],
)  # fmt: skip
def test_ddr20_binomial_cdf_evaluation_against_term_by_term_sums(
    k: int, eta: float, eps: float
) -> None:
    from sharpdp.accounting.analyses.ddr20 import _DDR

    want = ddr20_delta_reference(eta, k, eps)
    got = _DDR(eta, k).delta(eps)
    assert got >= want
    assert got <= want * (1 + 1e-6)


def binomial_cdf_reference(k: int, m: int, p: float) -> mpmath.mpf:
    """P[Bin(k, p) ≤ m] in 30 digits: the pmf summed away from m (downwards, or upwards for the
    complement when m is above the mean) until the terms fall below 1e-40 of the sum."""
    with mpmath.workdps(30):
        pp = mpmath.mpf(p)
        ratio_up = pp / (1 - pp)  # pmf(i+1)/pmf(i) = (k − i)/(i + 1)·p/(1 − p)
        below = m < k * p
        i = m if below else m + 1
        term = mpmath.binomial(k, i) * pp**i * (1 - pp) ** (k - i)
        total = mpmath.mpf(0)
        while 0 <= i <= k and (term > total * mpmath.mpf(10) ** -40 or total == 0):
            total += term
            if below:
                term = term * i / ((k - i + 1) * ratio_up) if i > 0 else mpmath.mpf(0)
                i -= 1
            else:
                term = term * (k - i) / (i + 1) * ratio_up if i < k else mpmath.mpf(0)
                i += 1
            if term == 0:
                break
        return total if below else 1 - total


def test_binomial_cdf_accuracy_assumed_by_ddr20_holds_with_margin() -> None:
    """scipy's bdtr against a 30-digit term sum, on random points up to
    k = 10^5 trials: the error is at most a tenth of the relative accuracy DDR20 assumes."""
    import numpy as np
    from scipy.special import bdtr

    from sharpdp.accounting.analyses.ddr20 import _DDR

    rng = np.random.default_rng(20261122)
    worst = 0.0
    for _ in range(60):
        k = int(10 ** rng.uniform(0.5, 5.0))
        p = float(rng.uniform(0.001, 0.999))
        mean, sd = k * p, math.sqrt(k * p * (1 - p))
        m = int(min(k - 1, max(0, round(mean + rng.uniform(-8, 3) * sd))))
        want = binomial_cdf_reference(k, m, p)
        if want < mpmath.mpf(10) ** -290:
            continue
        got = float(bdtr(m, k, p))
        worst = max(worst, abs(got - float(want)) / float(want))
    assert worst <= _DDR.CDF_REL / 10


def test_accuracy_sharpens_the_pld_and_stays_valid() -> None:
    """k-fold Laplace: the PLD's default (1e-4) and a sharper accuracy are both above an independent
    lower bound on the exact ε (the binned-output pair composed by a plain FFT power,
    tests/reference.py), and the sharper one is within its accuracy of it."""
    from sharpdp.accounting.pld import compose_pld

    items = [(sdp.Laplace(scale=10.0), 100)]
    lower = laplace_k_fold_epsilon_lower(sdp.Laplace(scale=10.0).epsilon0, 100, 1e-6, 2000)
    # compose answers k-fold Laplace by the (exact) MGF inversion; the PLD alone shows accuracy
    default = compose_pld(items).epsilon(1e-6)
    sharp = compose_pld(items, target_relative_error=1e-6).epsilon(1e-6)
    assert lower * (1 - 1e-9) <= sharp <= default
    assert sharp <= lower * (1 + 1.2e-6)
    assert default - lower > sharp - lower  # the finer grid is sharper here
    exact = compose(items).epsilon(1e-6)
    assert lower * (1 - 1e-9) <= exact <= sharp
    for bad in (0.0, -1e-3, 1.0, float("nan")):
        with pytest.raises(sdp.InvalidParameter):
            compose(items, accuracy=bad)


def test_ddr20_far_tail_never_reports_zero_while_positive() -> None:
    """Beyond the O(k²) reference's range (k > 2000) a δ below the binomial CDFs' float range is
    reported as a tiny positive bound, never 0; at ε ≥ kη (pure kη-DP) δ is exactly 0."""
    from sharpdp.accounting.analyses.ddr20 import _DDR

    g = _DDR(0.5, 3000)
    assert 0.0 < g.delta(1000.0) <= 1e-260
    assert g.delta(1500.0) == 0.0
    assert _DDR(0.5, 1500).delta(600.0) > 0.0  # the O(k²) path keeps relative accuracy


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 7.25, 40.0, math.inf])
def test_rdp_curve_of_a_gaussian_laplace_mix_is_the_exact_sum(alpha: float) -> None:
    # The Gaussians' Rényi terms are summed as one linear curve α·Σc·μ²/2; the reference sums
    # each item's closed form (Gaussian α/(2σ²), Laplace Mironov 2017 Prop 6) in 50 digits.
    from reference import laplace_renyi

    items = [
        (sdp.Gaussian(2.0), 3),
        (sdp.Gaussian(5.0), 1),
        (sdp.GDP(0.7), 2),
        (sdp.Laplace(scale=3.0), 4),
    ]
    got = compose(items).renyi(alpha)
    if alpha == math.inf:
        assert got == math.inf
        return
    with mpmath.workdps(50):
        a = mpmath.mpf(alpha)
        gauss = 3 * a / (2 * mpmath.mpf(2) ** 2) + a / (2 * mpmath.mpf(5) ** 2)
        gauss += 2 * a * mpmath.mpf(0.7) ** 2 / 2
        exact = gauss + 4 * laplace_renyi(mpmath.mpf(1) / 3, alpha)
    # never below the exact sum (μ = 1/5 and 1/3 are rounded up), and within a few ulps of it
    assert got >= exact
    assert got <= exact * (1 + 1e-13)


def test_a_lone_release_is_read_by_its_own_profile() -> None:
    """One exponential mechanism (ε-BR) composed alone: the PLD's dominating pair is the ε-DP
    one, so the composition read δ(0) = 0.2876 at ε = 1 where BR's exact profile gives 0.2449
    (by quadrature here); an accountant charged one such release now reads BR's own ε(δ)."""
    for item in (sdp.BoundedRange(1.0), sdp.Exponential(1.0)):
        c = compose([(item, 1)])
        for e in (0.0, 0.4, 0.9):
            assert c.delta(e) == pytest.approx(float(br_delta(1.0, e)), rel=1e-9)
    acc = sdp.Accountant(sdp.ApproxDP(1.0, 1e-6))
    acc.spend(sdp.Exponential(1.0))
    assert acc.spent() == sdp.BoundedRange(1.0).epsilon(1e-6) < 0.999
    # two: a composition again, read through the BR pair (exact two-fold law: 0.32261)
    assert compose([(sdp.BoundedRange(1.0), 2)]).delta(0.0) > float(br_delta(1.0, 0.0)) + 0.05


@pytest.mark.parametrize(
    ("item", "profile"),
    [
        (sdp.Laplace(0.5), lambda e: laplace_delta_quad(0.5, e)),
        (sdp.RandomizedResponse(1.0, categories=3), lambda e: rr_delta(1.0, e, 3)),
    ],
    ids=["laplace", "rr3"],
)
def test_a_lone_laplace_or_randomized_response_is_read_by_its_own_profile(
    item: sdp.Guarantee, profile: Callable[[float], mpmath.mpf]
) -> None:
    """Alone, Laplace and k-ary randomized response are read by their closed-form profiles
    (quadrature and enumeration here), also at the top of the range: at ε(1e-12), where the
    MGF inversion's bracket is wide, δ went to the PLD, which refined for ~30 s and answered 4%
    above the exact value."""
    c = compose([(item, 1)])
    top = c.epsilon(1e-12)
    for e in (0.0, 0.3, 0.8 * top, top):
        exact = float(profile(e))
        got = c.delta_bound(e)
        assert exact <= got <= exact * (1 + 1e-9) + 1e-300
    assert c.explain(delta=1e-12).winner.name == "single"


@pytest.mark.parametrize(
    ("epsilon0", "epsilon"),
    [(1000.0, 0.0), (1000.0, 1500.0), (1000.0, 1999.0), (300.0, 10.0), (1.0, 0.5), (5.0, 1.0)],
)
def test_delta_of_two_near_noiseless_laplace_mechanisms(epsilon0: float, epsilon: float) -> None:
    # With the losses far above ε, the Chernoff tilt λ = 1/64 weighted the FFT's rounding error
    # by e^{λ(2ε₀ − ε)} > δ: at ε₀ = 1000 no grid certified anything, and after 19–37 s
    # delta(0) raised AccuracyNotReached ([0, 1]). Exact: the two losses' law (reference.py).
    exact = float(two_laplace_delta(epsilon0, epsilon))
    got = compose([(sdp.Laplace(1.0 / epsilon0), 2)]).delta(epsilon)
    assert exact <= got <= exact * (1.0 + 1e-4) + 1e-15


def test_a_curve_finite_only_below_order_two_still_composes() -> None:
    # RDP([1.5], [0.01]) bounds D_α for α ≤ 1.5 only; the RDP analyses checked α = 2 and
    # declined, so composing it with a Laplace gave δ(5) = 1. Reference: Mironov 2017 Prop 1
    # (RDP adds) and Prop 3 at α = 1.5 alone: δ ≤ exp((α − 1)(D_α − ε)), D_α = 0.01 + D_1.5(Lap 1)
    curve = sdp.RDP([1.5], [0.01])
    with mpmath.workdps(30):
        a = mpmath.mpf(1.5)
        lap = mpmath.log(
            a / (2 * a - 1) * mpmath.e ** (a - 1) + (a - 1) / (2 * a - 1) * mpmath.e ** (-a)
        ) / (a - 1)
        mironov = float(mpmath.e ** ((a - 1) * (mpmath.mpf("0.01") + lap - 5)))
    got = compose([curve, sdp.Laplace(1.0)]).delta(5.0)
    assert got < 1.0
    assert got <= mironov


def _discrete_laplace_two_point(scale: float) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """(loss, P-mass) of the discrete Laplace pair at Δ = 1: losses ±1/t, masses 1/(1 + e^{−1/t})
    and e^{−1/t}/(1 + e^{−1/t}) (the geometric law's ratio beyond the shift)."""
    e = 1 / mpmath.mpf(scale)
    q = mpmath.e ** (-e)
    return [(e, 1 / (1 + q)), (-e, q / (1 + q))]


def test_the_far_tail_of_discrete_compositions_keeps_the_unlisted_atoms() -> None:
    # A truncated discrete Gaussian's unlisted atoms were left out of the Chernoff bound that
    # answers δ below e^{−700}: δ(12.131) = 2.5e-323 against an exact 1.27e-68, and ε(1e-68) was
    # then read from that point. Exact: the atoms enumerated in 60 digits (the Gaussian's past
    # |z| = 80, mass < e^{−1000}, are dropped: far below the δ compared).
    dl1, dl2, sigma = 17.970344843543735, 1.5028950989045773, 1.780779900918868
    items = [
        (sdp.DiscreteLaplace(dl1), 47),
        (sdp.DiscreteGaussian(sigma), 1),
        (sdp.DiscreteLaplace(dl2), 1),
    ]
    eps = 12.131010175554984
    with mpmath.workdps(60):
        (a, pa), (b, pb) = _discrete_laplace_two_point(dl1)
        first = [
            (k * a + (47 - k) * b, mpmath.binomial(47, k) * pa**k * pb ** (47 - k))
            for k in range(48)
        ]
        s2 = mpmath.mpf(sigma) ** 2
        weights = [(z, mpmath.e ** (-(z * z) / (2 * s2))) for z in range(-80, 81)]
        norm = sum(w for _, w in weights)
        gauss = [((1 - 2 * mpmath.mpf(z)) / (2 * s2), w / norm) for z, w in weights]
        total = mpmath.mpf(0)
        for l1, m1 in first:
            for l2, m2 in _discrete_laplace_two_point(dl2):
                for l3, m3 in gauss:
                    loss = l1 + l2 + l3
                    if loss > eps:
                        total += m1 * m2 * m3 * -mpmath.expm1(eps - loss)
    c = compose(items)
    assert c.delta(eps) >= float(total) > 1e-69
    assert c.delta(c.epsilon(1e-68)) <= 1e-68


def test_two_narrow_discrete_gaussians_are_not_pure_dp() -> None:
    # Their loss 50(1 − 2z) per copy is unbounded; the unlisted atoms' bound e^{−1250}
    # underflowed to 0, and the composition claimed (700, 0)-DP
    c = compose([(sdp.DiscreteGaussian(0.1), 2)])
    assert c.epsilon(0.0) == math.inf
    assert c.delta(750.0) > 0.0


def test_narrow_discrete_gaussians_answer_epsilon_at_delta_zero() -> None:
    # a grid over their ~6,000-wide loss range had cells 1,000 wide, and e^{cell} overflowed
    # out of the PLD (NumericalError "please report it"); it now declines and ε(0) = inf
    c = compose([(sdp.DiscreteGaussian(0.05, 2), 4)])
    assert c.epsilon(0.0) == math.inf


@pytest.mark.parametrize(
    ("item", "delta"),
    [
        (sdp.PureDP(0.060934800734675436), 0.030299395005952776),
        (sdp.ApproxDP(0.022090799735107376, 0.000414456888307134), 0.011249386393317467),
    ],
)
def test_a_lone_pure_or_approximate_item_is_read_by_its_own_profile(
    item: sdp.Guarantee, delta: float
) -> None:
    # kov (exact for such items) answered alone, up to 4.5e-10 above the closed form; the
    # closed form: ε = log(e^ε0 − r(e^ε0 + 1)), r = (δ − δ0)/(1 − δ0) (Kairouz–Oh–Viswanath)
    with mpmath.workdps(50):
        e0 = mpmath.mpf(item.epsilon(0.0) if isinstance(item, sdp.PureDP) else item.epsilon_)
        d0 = mpmath.mpf(0 if isinstance(item, sdp.PureDP) else item.delta_)
        r = (mpmath.mpf(delta) - d0) / (1 - d0)
        exact = mpmath.log(mpmath.e**e0 - r * (mpmath.e**e0 + 1))
    got = compose([item]).epsilon(delta)
    assert got == item.epsilon(delta)
    assert exact <= got <= exact * (1 + 1e-12)


def test_a_composition_converts_to_the_sum_of_its_items_zcdp() -> None:
    # BS16 Prop 1.6 and Lemma 2.3: Gaussian(σ = 3) is 1/18-zCDP, two of them 1/9; it was refused
    # (only the pure-DP route was tried), and max_compositions with it
    c = sdp.compose([(sdp.Gaussian(3.0), 2)])
    rho = sdp.convert(c, sdp.ZCDP).rho
    assert Fraction(rho) >= Fraction(1, 9)
    assert rho == math.nextafter(1 / 9, 1.0) or rho == 1 / 9
    assert sdp.max_compositions(c, sdp.ZCDP(1.0)) == 9
    # two ε-DP items: 2·ε·tanh(ε/2) (each item's sharp zCDP), not the composed 2ε-DP's 2ε·tanh(ε)
    pure = sdp.convert(sdp.compose([(sdp.PureDP(1.0), 2)]), sdp.ZCDP).rho
    assert pure == pytest.approx(2 * math.tanh(0.5), rel=1e-14)
    assert pure >= float(2 * mpmath.tanh(mpmath.mpf(0.5)))
    # Laplace (ε0 = 1/2): ρ = sup_α D_α/α of its Rényi curve (Mironov 2017 Prop 6), between
    # that supremum over a grid of α (mpmath) and the ε0-DP value ε0·tanh(ε0/2)
    mixed = sdp.convert(sdp.compose([sdp.Laplace(2.0), sdp.ZCDP(0.01)]), sdp.ZCDP).rho
    e0 = mpmath.mpf(1) / 2

    def laplace_renyi(a: mpmath.mpf) -> mpmath.mpf:
        inner = a / (2 * a - 1) * mpmath.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * mpmath.exp(
            -a * e0
        )
        return mpmath.log(inner) / (a - 1)

    # (the supremum sits at α → 1, the KL divergence)
    with mpmath.workdps(60):
        floor = max(
            laplace_renyi(1 + mpmath.mpf(10) ** x) / (1 + mpmath.mpf(10) ** x)
            for x in range(-12, 2)
        )
    assert float(floor) + 0.01 <= mixed <= float(e0 * mpmath.tanh(e0 / 2)) + 0.01
    assert mixed == pytest.approx(float(floor) + 0.01, rel=1e-8)
    with pytest.raises(sdp.NotImplied, match="ApproxDP"):
        sdp.convert(sdp.compose([sdp.ApproxDP(1.0, 1e-6), sdp.ZCDP(0.1)]), sdp.ZCDP)


def test_an_item_with_infinite_epsilon_composes_to_infinite_epsilon() -> None:
    # (∞, δ)-DP holds for every mechanism: δ(ε) = 1 at every finite ε (basic composition's
    # rational sums raised "cannot convert Infinity to integer ratio")
    c = sdp.compose([sdp.ApproxDP(math.inf, 0.1), sdp.PureDP(1.0)])
    assert c.epsilon(0.5) == math.inf
    assert c.delta(1.0) == 1.0
    assert not sdp.Accountant(budget=sdp.ApproxDP(5.0, 0.2)).would_fit(sdp.ApproxDP(math.inf, 0.1))
