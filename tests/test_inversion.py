"""The certified MGF inversion (``sharpdp.accounting.analyses.mgf``) and its use by ``compose``.

Expected values never come from sharpdp: they are computed in ``reference.py`` by quadrature over
the explicit loss laws (Laplace atoms plus B-spline densities, composed with a Gaussian), by
direct binomial summation (randomized response, the (ε, δ)-DP pair), or bound the answer from
below by an exact post-processing (the binned k-fold Laplace).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sharpdp as sdp
from reference import (
    approx_laplace_gaussian_delta,
    laplace_gaussian_delta,
    laplace_k_fold_delta,
    laplace_k_fold_epsilon_lower,
    rr_gaussian_delta,
)
from sharpdp.accounting import pld
from sharpdp.accounting.analyses.mgf import Inversion, invertible
from sharpdp.errors import NotImplied


def _inversion(items: list[tuple[object, int]]) -> Inversion:
    return Inversion(pld.composition._normalise_items(items))


# (ε0 of the Laplace, its count, μ of the Gaussian)
LAPLACE_GAUSS = [(1.0, 1, 0.5), (0.5, 3, 1.0), (2.0, 2, 0.3), (0.1, 3, 2.0)]


@pytest.mark.parametrize(("eps0", "k", "mu"), LAPLACE_GAUSS)
@pytest.mark.parametrize("epsilon", [0.0, 0.4, 1.5, 4.0])
def test_laplace_gaussian_bracket_holds_quadrature(
    eps0: float, k: int, mu: float, epsilon: float
) -> None:
    exact = float(laplace_gaussian_delta(eps0, k, mu, epsilon))
    inv = _inversion([(sdp.Laplace(scale=1.0 / eps0), k), (sdp.GDP(mu), 1)])
    lo, hi = inv.delta_bracket(epsilon)
    assert lo <= exact * (1 + 1e-13)
    assert hi >= exact * (1 - 1e-13)
    assert hi - exact <= 1e-9 * exact + 1e-300


@pytest.mark.parametrize(("eps0", "k", "mu"), [(0.3, 5, 1.0), (1.0, 20, 0.7), (0.05, 40, 3.0)])
@pytest.mark.parametrize("epsilon", [0.5, 2.0, 6.0])
def test_rr_gaussian_bracket_holds_binomial_sum(
    eps0: float, k: int, mu: float, epsilon: float
) -> None:
    exact = float(rr_gaussian_delta(eps0, k, mu, epsilon))
    inv = _inversion([(sdp.RandomizedResponse(eps0), k), (sdp.Gaussian(1.0 / mu), 1)])
    lo, hi = inv.delta_bracket(epsilon)
    assert lo <= exact * (1 + 1e-13)
    assert hi >= exact * (1 - 1e-13)
    assert hi - exact <= 1e-9 * exact


@pytest.mark.parametrize("epsilon", [0.5, 3.0])
def test_mass_at_infinity_composes(epsilon: float) -> None:
    # three (0.4, 1e-4)-DP items, one Laplace with ε0 = 0.7, and 1-GDP
    exact = float(approx_laplace_gaussian_delta(0.4, 1e-4, 3, 0.7, 1.0, epsilon))
    inv = _inversion(
        [(sdp.ApproxDP(0.4, 1e-4), 3), (sdp.Laplace(scale=1 / 0.7), 1), (sdp.GDP(1.0), 1)]
    )
    lo, hi = inv.delta_bracket(epsilon)
    assert lo <= exact * (1 + 1e-13)
    assert hi >= exact * (1 - 1e-13)
    assert hi - exact <= 1e-9 * exact


@pytest.mark.parametrize(("eps0", "k"), [(0.1, 1000), (0.5, 400), (2.0, 100)])
def test_k_fold_laplace_above_binned_lower_bound(eps0: float, k: int) -> None:
    # the binned mechanism is a post-processing: its exact ε is a lower bound
    lower = laplace_k_fold_epsilon_lower(eps0, k, 1e-6, cells=64)
    eps = _inversion([(sdp.Laplace(scale=1.0 / eps0), k)]).epsilon(1e-6)
    assert eps >= lower
    assert eps <= lower * (1 + 1e-3)


def test_k_fold_laplace_inside_fine_pld_bracket() -> None:
    # two independent methods: the inversion's bracket and a fine PLD bracket must overlap
    items = [(sdp.Laplace(scale=10.0), 10_000)]
    inv = _inversion(items)
    eps = inv.epsilon(1e-6)
    lo, hi = pld.compose_pld(items, target_relative_error=1e-7).epsilon_bracket(1e-6)
    assert lo <= eps <= hi


def test_epsilon_is_certified_and_tight() -> None:
    inv = _inversion([(sdp.Laplace(scale=2.0), 300), (sdp.GDP(0.5), 1)])
    eps = inv.epsilon(1e-6)
    assert inv.delta(eps) <= 1e-6
    assert inv.delta_bracket(eps * (1 - 1e-9))[0] > 1e-6 * (1 - 1e-6)


def test_beyond_the_largest_loss_delta_is_zero() -> None:
    inv = _inversion([(sdp.Laplace(scale=1.0), 200)])
    assert inv.delta_bracket(200.0) == (0.0, 0.0)


def test_atomic_laws_are_declined() -> None:
    items = pld.composition._normalise_items([(sdp.RandomizedResponse(0.5), 100)])
    assert not invertible(items)
    with pytest.raises(NotImplied):
        Inversion(items)


# 10 Laplace items with ε0 = 0.1 are ~61% atomic, and with randomized response beside them the
# binomial split (one Laplace group only) does not apply: the inversion declines
ATOMIC_MIX = [(sdp.Laplace(scale=10.0), 10), (sdp.RandomizedResponse(0.5), 5)]


def test_too_atomic_law_declines_the_query() -> None:
    inv = _inversion(ATOMIC_MIX)
    with pytest.raises(NotImplied, match="atomic"):
        inv.epsilon(1e-6)


@pytest.mark.parametrize(("eps0", "k", "epsilon"), [(0.1, 10, 0.9), (0.1, 10, 0.5), (0.5, 6, 1.5)])
def test_one_laplace_group_split_bracket_holds_quadrature(
    eps0: float, k: int, epsilon: float
) -> None:
    # too atomic to invert whole: the first binomial terms are summed in closed form
    exact = float(laplace_k_fold_delta(eps0, k, epsilon))
    lo, hi = _inversion([(sdp.Laplace(scale=1.0 / eps0), k)]).delta_bracket(epsilon)
    assert lo <= exact * (1 + 1e-13)
    assert hi >= exact * (1 - 1e-13)
    assert hi - exact <= 1e-9 * exact


# -- through compose ---------------------------------------------------------------------------


def test_compose_uses_the_inversion_and_reports_it() -> None:
    c = sdp.compose([(sdp.Laplace(scale=10.0), 10_000)])
    eps = c.epsilon(1e-6)
    row = next(r for r in c.explain(delta=1e-6).rows if r.name == "mgf")
    assert row.value == eps
    assert c.explain(delta=1e-6).winner.name == "mgf"


def test_compose_falls_back_when_the_inversion_declines() -> None:
    c = sdp.compose(ATOMIC_MIX)
    eps = c.epsilon(1e-6)
    rows = c.explain(delta=1e-6).rows
    assert eps == min(r.value for r in rows if r.value is not None)
    row = next(r for r in rows if r.name == "mgf")
    assert row.value is None
    assert "atomic" in row.note


def test_inversion_is_not_exact_for_loose_pairs() -> None:
    # the exponential mechanism's dominating pair is not attained: RDP (exact BR curve) wins
    items = [(sdp.Exponential(epsilon=0.02, sensitivity=1.0), 2000), (sdp.Gaussian(50.0), 1)]
    c = sdp.compose(items)
    explained = c.explain(delta=1e-6)
    assert c.epsilon(1e-6) == min(r.value for r in explained.rows if r.value is not None)


def test_max_compositions_through_the_inversion() -> None:
    # k Laplace(ε0 = 0.1) within (20, 1e-6): between the k whose certified ε straddle 20
    k = sdp.max_compositions(sdp.Laplace(scale=10.0), sdp.ApproxDP(20.0, 1e-6))
    inside = _inversion([(sdp.Laplace(scale=10.0), k)]).epsilon(1e-6)
    outside = _inversion([(sdp.Laplace(scale=10.0), k + 1)]).epsilon(1e-6)
    assert inside <= 20.0 < outside


@settings(max_examples=12, deadline=None)
@given(
    eps0=st.floats(0.05, 3.0),
    k=st.integers(0, 3),
    mu=st.floats(0.2, 3.0),
    epsilon=st.floats(0.0, 8.0),
)
def test_property_bracket_holds_quadrature(eps0: float, k: int, mu: float, epsilon: float) -> None:
    exact = float(laplace_gaussian_delta(eps0, k, mu, epsilon))
    items: list[tuple[object, int]] = [(sdp.GDP(mu), 1)]
    if k:
        items.append((sdp.Laplace(scale=1.0 / eps0), k))
    lo, hi = _inversion(items).delta_bracket(epsilon)
    assert math.isfinite(lo)
    assert math.isfinite(hi)
    assert lo <= exact * (1 + 1e-12) + 1e-300
    assert hi >= exact * (1 - 1e-12)


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 0.9])
def test_reference_decomposition_matches_density_quadrature(epsilon: float) -> None:
    # the lattice × B-spline decomposition of the references, at k = 1, against quadrature of
    # the Laplace densities themselves; and with a vanishing Gaussian, against itself
    from reference import laplace_delta_quad

    assert float(laplace_k_fold_delta(1.0, 1, epsilon)) == pytest.approx(
        float(laplace_delta_quad(1.0, epsilon)), rel=1e-12
    )
    assert float(laplace_gaussian_delta(0.5, 2, 1e-4, epsilon)) == pytest.approx(
        float(laplace_k_fold_delta(0.5, 2, epsilon)), rel=1e-3
    )


def test_far_tail_reports_the_chernoff_bound_not_less() -> None:
    # at ε = 38 with 1-GDP, e^{K(a) − aε} ≈ e^{−703}: the finite part is reported by its Chernoff
    # bound, which must stay above the exact δ (~1e-308, not the least float 5e-324)
    exact = laplace_gaussian_delta(0.1, 1, 1.0, 38.0)
    inv = _inversion([(sdp.Laplace(scale=10.0), 1), (sdp.GDP(1.0), 1)])
    lo, hi = inv.delta_bracket(38.0)
    assert 1e-320 < exact < 1e-300
    assert hi >= exact
    assert lo <= exact


def _rr_gaussian_epsilon(eps0: float, k: int, mu: float, delta: float) -> float:
    """ε(δ) of k-fold ε0-RR with μ-GDP, by bisection on the direct binomial sum (in mpmath)."""
    lo, hi = 0.0, k * eps0 + 10.0 * mu + mu * mu
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):  # adjacent floats: every further step would leave lo and hi as they are
            break
        if rr_gaussian_delta(eps0, k, mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def test_selection_items_are_inverted_and_the_pld_skipped() -> None:
    # Permute-and-flip is represented by the ε-RR pair (ε-DP; not attained by it), so the
    # inversion is one analysis among others here; it brackets the exact composition of the
    # pairs, which the PLD only approaches from above, so once it has answered the PLD is not run
    # (it took seconds on this mix).
    c = sdp.compose([(sdp.Gaussian(5.0), 100), (sdp.PermuteAndFlip(0.1), 50)])  # μ = 2 in all
    eps = c.epsilon(1e-6)
    exact = _rr_gaussian_epsilon(0.1, 50, 2.0, 1e-6)
    assert exact * (1 - 1e-12) <= eps <= exact * (1 + 1e-9)
    assert float(rr_gaussian_delta(0.1, 50, 2.0, eps)) <= 1e-6 * (1 + 1e-12)
    assert c.delta(eps) <= 1e-6
    prepared = c._cache["pld"]
    assert not isinstance(prepared, str)
    assert "_result" not in vars(prepared)
    assert c.explain(delta=1e-6).winner.name == "mgf"  # explain still lists (and runs) the PLD


@pytest.mark.parametrize("epsilon", [1.0, 3.0])
def test_distinct_selection_items_with_a_gaussian_match_the_binomial_sums(epsilon: float) -> None:
    # two distinct ε0-RR groups and a Gaussian: δ is the double binomial sum of the Gaussian
    # profile at the shifted arguments (independent of sharpdp)
    import mpmath as mp

    from reference import _gaussian_delta_any

    e1, k1, e2, k2, mu = 0.05, 7, 0.12, 4, 0.8
    p1 = mp.exp(e1) / (1 + mp.exp(e1))
    p2 = mp.exp(e2) / (1 + mp.exp(e2))
    exact = float(
        mp.fsum(
            mp.binomial(k1, i) * p1 ** (k1 - i) * (1 - p1) ** i
            * mp.binomial(k2, j) * p2 ** (k2 - j) * (1 - p2) ** j
            * _gaussian_delta_any(mp.mpf(mu), epsilon - (k1 - 2 * i) * e1 - (k2 - 2 * j) * e2)
            for i in range(k1 + 1)
            for j in range(k2 + 1)
        )
    )  # fmt: skip
    items = [
        (sdp.ReportNoisyMax(epsilon=e1, noise="exponential"), k1),  # ε-DP: the ε-RR pair
        (sdp.PureDP(e2), k2),
        (sdp.Gaussian(1.0 / mu), 1),
    ]
    value = sdp.compose(items).delta(epsilon)
    assert exact * (1 - 1e-12) <= value <= exact * (1 + 1e-9)


def test_the_largest_loss_of_a_discrete_laplace_is_not_rounded_down() -> None:
    # Laplace(1) and a discrete Laplace of scale 3, Δ = 5: the largest loss is 1 + 5/3 = 8/3, above
    # the float 2.6666666666666665 that the listed atom 5·(1/3) rounds to. There δ is at least
    # P[L = 8/3]·(1 − e^{ε − 8/3}) = ½·1/(1 + e^{−1/3})·(1 − e^{ε − 8/3}) (computed here), not the
    # mass at infinity 0 that the MGF inversion read beyond its (rounded) largest loss.
    import mpmath

    eps = 2.6666666666666665
    with mpmath.workdps(40):
        gap = mpmath.mpf(8) / 3 - mpmath.mpf(eps)
        floor = mpmath.mpf(1) / 2 / (1 + mpmath.e ** (-mpmath.mpf(1) / 3)) * -mpmath.expm1(-gap)
    assert floor > 4e-17
    c = sdp.compose([sdp.Laplace(scale=1.0), sdp.DiscreteLaplace(scale=3.0, sensitivity=5)])
    assert c.delta_bound(eps) >= floor
    assert c.epsilon_bound(1e-300) >= 8 / 3
    assert Fraction(c.epsilon_bound(1e-300)) > Fraction(8, 3)


def test_at_the_mass_at_infinity_the_inversion_answers_the_largest_loss() -> None:
    # (1, 1e-6)-DP and Laplace(1): δ(ε) = 1e-6 from ε = 2 on (losses ≤ 1 + 1), and above it
    # below (the loss 2 has probability ½·e/(1 + e) > 0), so ε(1e-6) = 2 exactly; the inversion
    # certified 2.0 but its accuracy guard, unable to bracket the lower end, declined it
    c = sdp.compose([sdp.ApproxDP(1.0, 1e-6), sdp.Laplace(1.0)])
    rows = {r.name: r.value for r in c.explain(delta=1e-6).rows}
    assert rows["mgf"] == 2.0
    assert c.epsilon(1e-6) == 2.0


def test_the_largest_loss_is_not_claimed_at_a_mass_known_only_as_a_bound() -> None:
    # 200 × (0.01, 1e-6) and a Laplace: the mass at infinity is not a float, and at its float
    # rounded up the exact ε is about 2.2 (the largest losses, near 3, have probability
    # ~1e-60): the inversion, exact for these items and so alone, read 3.0; now it declines
    # and the optimal composition of the items as ε-DP answers
    c = sdp.compose([sdp.Laplace(1.0), (sdp.ApproxDP(0.01, 1e-6), 200)])
    mass = c.delta(math.inf)
    rows = {r.name: r.value for r in c.explain(delta=mass).rows}
    assert rows["mgf"] is None
    assert 2.0 < c.epsilon(mass) < 2.25
