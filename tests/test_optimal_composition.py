"""The ``kov`` analysis on heterogeneous (ε_i, δ_i)-DP items against an independent computation:
Murtagh–Vadhan 2016 (arXiv 1507.03113) Thm 1.5, δ(ε) = 1 − Π(1 − δ_i)·(1 − δ_RR(ε)), with δ_RR
the hockey-stick divergence of the product of the ε_i-randomized-response pairs, enumerated
here in mpmath (40 digits) over the numbers of flipped answers per group."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from sharpdp.accounting.analyses import kov

Groups = list[tuple[float, float, int]]  # (ε_i, δ_i, count)


def exact_delta(groups: Groups, eps: float) -> mpmath.mpf:
    """δ(ε) of the composition by enumerating m_j ∈ {0..k_j} flips per group: losses and their
    comparison with ε in exact rationals (of the floats), the rest in 40 digits."""
    with mpmath.workdps(40):
        # a = 1 − Π(1 − δ_i)^{k_i} without cancellation (δ_i may be 1e-250)
        a = -mpmath.expm1(mpmath.fsum(k * mpmath.log1p(-mpmath.mpf(d)) for _, d, k in groups))
        if eps == math.inf:
            return a
        rr = mpmath.mpf(0)
        for flips in itertools.product(*(range(k + 1) for _, _, k in groups)):
            weight, loss = mpmath.mpf(1), Fraction(0)
            for (e_i, _, k), m in zip(groups, flips, strict=True):
                x = mpmath.mpf(e_i)  # the float ε_i, exactly
                # p = e^x/(1 + e^x), 1 − p = 1/(1 + e^x)
                weight *= (
                    mpmath.binomial(k, m) / (1 + mpmath.e**-x) ** (k - m) / (1 + mpmath.e**x) ** m
                )
                loss += (k - 2 * m) * Fraction(e_i)
            gap = loss - Fraction(eps)
            if gap > 0:
                rr += weight * -mpmath.expm1(-mpmath.mpf(gap.numerator) / gap.denominator)
        return a + (1 - a) * rr


def items_of(groups: Groups) -> list[tuple[sdp.Guarantee, int]]:
    return [(sdp.ApproxDP(e, d) if d > 0 else sdp.PureDP(e), k) for e, d, k in groups]


# The issue's case: two groups of five (ε_i, δ_i)-DP items.
ISSUE = [
    (0.029173237126389136, 6.590809620046115e-05, 5),
    (0.07086965211108984, 0.00022243374817793737, 5),
]
ISSUE_EPS = 0.37989198131377916


def test_issue_case_is_the_exact_optimum() -> None:
    # exact (mpmath, 40 digits): 1.98900039436954909...e-3; the PLD reported 2.1270e-3 (+6.9%)
    want = exact_delta(ISSUE, ISSUE_EPS)
    assert float(want) == pytest.approx(1.98900039436954909e-3, rel=1e-15)
    c = sdp.compose(items_of(ISSUE))
    got = c.delta(ISSUE_EPS)
    assert float(want) <= got <= float(want) * (1 + 1e-9)
    # the optimal-composition analysis itself is exact here (the PLD, summing these atoms exactly,
    # may match it to within its float margins)
    kov = next(r.value for r in c.explain(epsilon=ISSUE_EPS).rows if r.name == "kov")
    assert kov is not None
    assert float(want) <= kov <= float(want) * (1 + 1e-9)


@pytest.mark.parametrize("delta_i", [2e-5, 1e-7])
def test_issue_case_at_smaller_item_deltas(delta_i: float) -> None:
    groups = [(e, delta_i, k) for e, _, k in ISSUE]
    want = float(exact_delta(groups, ISSUE_EPS))
    got = sdp.compose(items_of(groups)).delta(ISSUE_EPS)
    assert want <= got <= want * (1 + 1e-9)


@pytest.mark.parametrize("target", [2e-3, 2.5e-3, 1e-2])
def test_epsilon_is_the_smallest_valid_epsilon(target: float) -> None:
    eps = sdp.compose(items_of(ISSUE)).epsilon(target)
    assert 0.0 < eps < 0.5
    assert exact_delta(ISSUE, eps) <= target  # valid: never below the exact ε(δ)
    assert exact_delta(ISSUE, eps * (1 - 1e-9)) > target  # and sharp


def test_items_of_one_epsilon_with_different_deltas() -> None:
    groups = [(0.3, 1e-6, 4), (0.3, 1e-4, 2), (0.3, 0.0, 3)]
    c = sdp.compose(items_of(groups))
    for eps in (0.0, 0.5, 1.7, 2.7):
        want = float(exact_delta(groups, eps))
        assert want <= c.delta(eps) <= want * (1 + 1e-9)


def test_delta_zero_and_infinity() -> None:
    groups = [(0.1, 0.0, 3), (0.2, 0.0, 2)]
    c = sdp.compose(items_of(groups))
    # the loss reaches Σ k_i ε_i (as exact rationals of the floats: just above 0.7) with
    # positive probability, so ε(0) is that sum rounded up, and (0.7, 0)-DP does not hold
    assert c.epsilon(0.0) == math.nextafter(0.7, 1.0)
    assert not c.certifies(0.7, 0.0)
    mixed = sdp.compose([sdp.ApproxDP(0.0, 1e-6), (sdp.ApproxDP(0.5, 1e-7), 3)])
    assert mixed.delta(math.inf) == pytest.approx(1 - (1 - 1e-6) * (1 - 1e-7) ** 3, rel=1e-11)
    assert mixed.delta(math.inf) >= exact_delta([(0.0, 1e-6, 1), (0.5, 1e-7, 3)], math.inf)
    assert mixed.epsilon(1e-6) == math.inf


def test_merged_groups_are_a_valid_bound_not_the_exact_optimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # beyond the enumeration budget the smaller ε of a group pair is raised to the larger
    # (RR(ε) is a post-processing of RR(ε′) for ε ≤ ε′): valid, no longer claimed exact
    groups = [(0.2, 1e-6, 2), (0.25, 0.0, 2), (0.6, 1e-5, 1)]
    items = items_of(groups)
    monkeypatch.setattr(kov, "_MAX_OUTCOMES", 8)
    kov._spec.cache_clear()
    try:
        c = sdp.compose(items)
        spec = kov._spec(c.items)
        assert not isinstance(spec, str)
        assert not spec[3]
        assert not kov._exact_optimum(c.items)
        for eps in (0.0, 0.4, 1.0):
            assert c.delta(eps) >= float(exact_delta(groups, eps))
            row = next(r for r in c.explain(epsilon=eps).rows if r.name == "kov")
            assert row.value is not None
            assert row.value >= float(exact_delta(groups, eps))
    finally:
        kov._spec.cache_clear()


def test_many_distinct_items_fall_back_quickly() -> None:
    # 200 distinct ε: far beyond enumeration; the analysis merges groups and stays valid
    # (every item is 0.05-DP at worst, so (Σε, 0) bounds it: 10.0 at the top)
    items = [sdp.PureDP(0.01 + 0.0002 * i) for i in range(200)]
    c = sdp.compose(items)
    row = next(r for r in c.explain(delta=1e-6).rows if r.name == "kov")
    assert row.value is not None
    assert row.value < sum(0.01 + 0.0002 * i for i in range(200))
    assert c.epsilon(1e-6) <= row.value


group = st.tuples(
    st.floats(0.0, 2.0),
    st.one_of(st.just(0.0), st.floats(0.0, 1e-3)),
    st.integers(1, 6),
)


@given(
    groups=st.lists(group, min_size=1, max_size=3),
    eps=st.floats(0.0, 3.0),
)
def test_delta_is_never_below_and_within_1e_6_of_the_exact_optimum(
    groups: Groups, eps: float
) -> None:
    got = sdp.compose(items_of(groups)).delta(eps)
    want = exact_delta(groups, eps)
    assert got >= want
    assert got <= float(want) * (1 + 1e-6) + 1e-300


@given(
    groups=st.lists(group, min_size=1, max_size=3),
    target=st.floats(1e-9, 0.5),
)
def test_epsilon_never_certifies_more_than_the_exact_optimum(groups: Groups, target: float) -> None:
    eps = sdp.compose(items_of(groups)).epsilon(target)
    if eps == math.inf:
        assert exact_delta(groups, math.inf) > target * (1 - 1e-9)  # δ(∞) = 1 − Π(1 − δ_i)
        return
    assert exact_delta(groups, eps) <= target
    if eps > 1e-12:
        assert exact_delta(groups, eps * (1 - 1e-6)) > target


@pytest.mark.parametrize(
    ("groups", "target", "largest_loss"),
    [
        # one (ε, δ) item among pure ones: δ(ε) = δ_1 exactly once δ_RR vanishes, at ε ≥ Σ ε_i
        ([(1.0, 1e-6, 1), (1.0, 0.0, 1)], 1e-6, 2.0),
        ([(1.0, 0.0, 1), (0.0, 1e-6, 1)], 1e-6, 1.0),
        # 1 − (1 − 1/2)(1 − 1/4) = 5/8, exactly a float
        ([(0.5, 0.5, 1), (0.25, 0.25, 1)], 0.625, 0.75),
    ],
)
def test_delta_at_the_mass_at_infinity_is_met_at_the_largest_loss(
    groups: Groups, target: float, largest_loss: float
) -> None:
    # MV16 Thm 1.5 at δ = 1 − Π(1 − δ_i): (1 − keep)·... leaves nothing for δ_RR, which vanishes
    # exactly from the largest loss Σ k_i ε_i on. (Rounding the mass up read ε as infinite.)
    assert exact_delta(groups, math.inf) == target
    eps = sdp.compose(items_of(groups)).epsilon(target)
    assert eps == largest_loss
    assert exact_delta(groups, eps) <= target
    assert exact_delta(groups, math.nextafter(eps, 0.0)) > target


def test_an_accountant_spends_a_pure_item_beside_one_that_used_the_whole_delta() -> None:
    # (1, 1e-6) then (1, 0): (2, 1e-6) by basic composition, so a (2, 1e-6) budget holds both
    # (it refused the second as unpayable)
    a = sdp.Accountant(budget=sdp.ApproxDP(2.0, 1e-6))
    a.spend(sdp.ApproxDP(1.0, 1e-6))
    a.spend(sdp.PureDP(1.0))
    assert a.epsilon(1e-6) == 2.0
    with pytest.raises(sdp.BudgetExceeded):
        a.spend(sdp.PureDP(1e-9))


@given(
    parts=st.lists(st.tuples(st.floats(0.0, 0.999), st.integers(1, 400)), min_size=1, max_size=4)
)
def test_mass_at_infinity_is_never_below_the_exact_product(parts: list[tuple[float, int]]) -> None:
    from sharpdp.accounting._items import mass_at_infinity

    got = mass_at_infinity(parts)
    with mpmath.workdps(60):
        want = -mpmath.expm1(mpmath.fsum(c * mpmath.log1p(-mpmath.mpf(d)) for d, c in parts))
    assert got >= want
    assert got <= want * (1 + 1e-12) + 1e-300
    if sum(c for d, c in parts if d > 0.0) <= 256:  # exact rationals, rounded up once
        keep = math.prod((1 - Fraction(d)) ** c for d, c in parts)
        assert got == _float_up(1 - keep)


def _float_up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


@pytest.mark.parametrize(
    ("eps0", "delta0", "k"), [(0.5, 0.5, 2), (0.25, 0.5, 4), (0.5, 0.25, 4), (1.0, 1e-5, 1)]
)
def test_budgets_met_exactly_at_the_largest_loss(eps0: float, delta0: float, k: int) -> None:
    # k copies of (ε0, δ0) at the budget (kε0, 1 − (1 − δ0)^k) — exact floats here: MV16's δ
    # is the mass at infinity there (δ_RR vanishes from the largest loss kε0 on), so exactly k
    # copies fit; the delta, certifies and max_compositions routes agree (they read 4 ulps over)
    mass = 1 - (1 - Fraction(delta0)) ** k
    assert Fraction(float(mass)) == mass
    budget = sdp.ApproxDP(k * eps0, float(mass))
    assert exact_delta([(eps0, delta0, k)], k * eps0) == float(mass)
    assert exact_delta([(eps0, delta0, k + 1)], k * eps0) > float(mass)
    c = sdp.compose([(sdp.ApproxDP(eps0, delta0), k)])
    assert c.delta(k * eps0) == float(mass)
    assert c.certifies(k * eps0, float(mass))
    assert sdp.max_compositions(sdp.ApproxDP(eps0, delta0), budget) == k


def test_a_density_item_beside_an_approximate_one_at_their_largest_loss() -> None:
    # (1, 1e-5)-DP and Laplace(1) (its loss in [−1, 1]): δ(2) = 1e-5 exactly (the MGF inversion,
    # exact for such items and so alone, read 1e-5·(1 + 1e-12)); certifies answers alike before
    # and after an epsilon query
    c = sdp.compose([sdp.ApproxDP(1.0, 1e-5), sdp.Laplace(1.0)])
    assert c.certifies(2.0, 1e-5)
    assert c.delta(2.0) == 1e-5
    assert c.epsilon(1e-5) == 2.0


def test_delta_one_ulp_above_the_exact_mass_is_met_below_the_largest_loss() -> None:
    # 200 × (0.01, 1e-6): the mass 1 − (1 − 1e-6)^200 is not a float; at its float rounded up,
    # δ_RR may be (δ − a)/(1 − a) ≈ 1e-20, which the largest losses reach far below Σε = 2
    # (they have probability ~1e-60): decided exactly, ε ≈ 1.21 (it read 2.0)
    groups = [(0.01, 1e-6, 200)]
    c = sdp.compose(items_of(groups))
    target = c.delta(math.inf)
    assert exact_delta(groups, math.inf) < target
    eps = c.epsilon(target)
    assert eps < 1.5
    assert exact_delta(groups, eps) <= target
    assert exact_delta(groups, eps * (1 - 1e-9)) > target
