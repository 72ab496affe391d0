"""The ``approx_rdp`` analysis (δ-approximate RDP, Bun–Steinke 2016 Def 1.12 with an RDP curve),
against independent exact values and the analysis's own formula computed independently in mpmath.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest
from tests.reference import gaussian_delta, zcdp_cks20_delta

import sharpdp as sdp
from sharpdp.accounting.analyses.approx_rdp import _approx_rdp


def _row(c: sdp.Composition, epsilon: float) -> float:
    (row,) = [r for r in c.explain(epsilon=epsilon).rows if r.name == "approx_rdp"]
    assert row.value is not None
    return row.value


@pytest.mark.parametrize(("sigma", "k", "delta0", "m"), [(5.0, 20, 1e-7, 1), (2.0, 3, 1e-4, 5)])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_gaussians_with_delta_parts(
    sigma: float, k: int, delta0: float, m: int, epsilon: float
) -> None:
    c = sdp.compose([(sdp.Gaussian(sigma), k), (sdp.ApproxDP(0.0, delta0), m)])
    value = _row(c, epsilon)
    keep = (1 - mp.mpf(delta0)) ** m
    # exact: the Gaussians compose to √k/σ-GDP; the (0, δ0) pairs multiply in (a lower bound on
    # anything valid, since these pairs are attained)
    exact = 1 - keep * (1 - gaussian_delta(math.sqrt(k) / sigma, epsilon))
    # the analysis's formula: δ_tot + (1 − δ_tot)·CKS20(ρ = k/(2σ²)), computed independently
    formula = 1 - keep * (1 - zcdp_cks20_delta(k / (2 * sigma**2), epsilon))
    assert value >= exact
    assert value == pytest.approx(float(formula), rel=1e-6)
    assert c.delta(epsilon) <= value  # the composition takes the minimum over its analyses


@pytest.mark.parametrize(("epsilon0", "delta0", "k"), [(0.1, 1e-6, 50), (0.5, 1e-5, 8)])
@pytest.mark.parametrize("epsilon", [0.0, 0.7, 2.0])
def test_never_below_the_exact_optimum_of_approx_dp_items(
    epsilon0: float, delta0: float, k: int, epsilon: float
) -> None:
    """k-fold (ε0, δ0)-DP: exact δ = 1 − (1 − δ0)^k (1 − δ_RR^k(ε)) [Kairouz–Oh–Viswanath 2015]."""
    c = sdp.compose([(sdp.ApproxDP(epsilon0, delta0), k)])
    with mp.workdps(40):
        e0, e = mp.mpf(epsilon0), mp.mpf(epsilon)
        rr_k = (
            sum(
                mp.binomial(k, i) * max(mp.mpf(0), mp.exp((k - i) * e0) - mp.exp(e + i * e0))
                for i in range(k + 1)
            )
            / (1 + mp.exp(e0)) ** k
        )
        exact = 1 - (1 - mp.mpf(delta0)) ** k * (1 - rr_k)
    assert _row(c, epsilon) >= exact


def test_epsilon_and_delta_agree() -> None:
    c = sdp.compose(
        [(sdp.BoundedRange(0.3), 4), sdp.ApproxDP(0.0, 1e-7), sdp.DiscreteLaplace(10.0)]
    )
    g = _approx_rdp(c.items, True)
    for target in (1e-6, 1e-5, 1e-3):
        eps = g.epsilon(target)
        assert g.delta(eps) <= target * (1 + 1e-9)
    assert g.epsilon(1e-8) == math.inf  # below δ_tot = 1e-7 nothing is certified
    assert g.renyi(2.0) == math.inf


def test_wins_over_the_pure_dp_view_of_bounded_range_items() -> None:
    """Four 0.3-BR rounds and a (0, 1e-7) part: the PLD sees each round as 0.3-DP (1.2 in all);
    the Rényi curve of bounded range sees far less."""
    c = sdp.compose([(sdp.BoundedRange(0.3), 4), sdp.ApproxDP(0.0, 1e-7)])
    assert c.explain(delta=1e-6).winner.name == "approx_rdp"
    assert c.epsilon(1e-6) < 1.1


def test_applies_only_with_a_delta_part() -> None:
    with pytest.raises(sdp.NotImplied, match="no item has a δ part"):
        _approx_rdp(sdp.compose([sdp.Gaussian(1.0)]).items, True)
    with pytest.raises(sdp.NotImplied, match="Rényi curve"):
        _approx_rdp(
            sdp.compose([sdp.ApproxDP(0.0, 1e-6), sdp.RDP.from_function(lambda a: math.inf)]).items,
            True,
        )
