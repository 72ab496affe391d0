"""The GDP central-limit estimate: moments against independent integrals, the numbers of the
Dong–Roth–Su 2019 (Thms 3.4–3.5) central-limit μ for ε-DP and η-BR items,
and that it is never presented as a guarantee."""

from __future__ import annotations

import math

import mpmath
import pytest

import sharpdp as sdp


def clt_mu(moments: list[tuple[float, float, int]]) -> float:
    kl = sum(c * m for m, _, c in moments)
    var = sum(c * v for _, v, c in moments)
    return 2 * kl / math.sqrt(var)


def laplace_moments(eps0: float) -> tuple[float, float]:
    """Mean and variance of log(p/q) under p for p = Lap(0, 1), q = Lap(ε0, 1), by quadrature."""
    with mpmath.workdps(30):
        e0 = mpmath.mpf(eps0)
        dens = lambda x: mpmath.e ** (-abs(x)) / 2  # noqa: E731
        loss = lambda x: abs(x - e0) - abs(x)  # noqa: E731
        pts = [-mpmath.inf, 0, e0, mpmath.inf]
        m1 = mpmath.quad(lambda x: loss(x) * dens(x), pts)
        m2 = mpmath.quad(lambda x: loss(x) ** 2 * dens(x), pts)
        return float(m1), float(m2 - m1**2)


def test_gaussians_are_exact() -> None:
    est = sdp.clt_estimate([(sdp.Gaussian(2.0), 4), (sdp.GDP(0.5), 3)])
    assert est.mu == pytest.approx(math.sqrt(4 * 0.25 + 3 * 0.25), rel=1e-12)


@pytest.mark.parametrize("eps0", [0.05, 0.5, 2.0])
def test_pure_dp_and_binary_rr_moments(eps0: float) -> None:
    # the RR pair: loss ±ε0 with P-probabilities e^ε0/(1+e^ε0), 1/(1+e^ε0)
    p = math.exp(eps0) / (1 + math.exp(eps0))
    kl = eps0 * (2 * p - 1)
    var = eps0**2 - kl**2
    expected = clt_mu([(kl, var, 7)])
    assert sdp.clt_estimate([(sdp.PureDP(eps0), 7)]).mu == pytest.approx(expected, rel=1e-12)
    assert sdp.clt_estimate([(sdp.RandomizedResponse(eps0), 7)]).mu == pytest.approx(
        expected, rel=1e-12
    )


@pytest.mark.parametrize("scale", [0.5, 3.0, 10.0])
def test_laplace_moments_by_quadrature(scale: float) -> None:
    kl, var = laplace_moments(1.0 / scale)
    assert sdp.clt_estimate([(sdp.Laplace(scale), 5)]).mu == pytest.approx(
        clt_mu([(kl, var, 5)]), rel=1e-9
    )


@pytest.mark.parametrize(("eta", "mu"), [(1.0, 0.507022), (2.0, 1.058081)])
def test_bounded_range_worst_t(eta: float, mu: float) -> None:
    # Dong–Roth–Su 2019 Thms 3.4–3.5's μ = 2KL/√Var for one η-BR item, sup over the GRR_t pairs;
    # brute force over a fine t grid here.
    def mu_t(t: float) -> float:
        p = (1 - math.exp(t - eta)) / (1 - math.exp(-eta))
        kl = t - eta * (1 - p)
        return 2 * kl / math.sqrt(eta**2 * p * (1 - p))

    brute = max(mu_t(eta * j / 20_000) for j in range(1, 20_000))
    est = sdp.clt_estimate([sdp.BoundedRange(eta)]).mu
    assert est == pytest.approx(brute, rel=1e-7)
    assert est == pytest.approx(mu, abs=1e-6)


def test_formulas_table_of_the_sixteen_fold_claim() -> None:
    # the numbers behind the "16× more mechanisms" of Dong 2020 ("Exponential mechanisms —
    # what's wrong with sensitivity?", blog), computed here: at (1, 1e-6) the CLT fits 358.6 ε0-BR
    # mechanisms (ε0 = 0.025) and 22.4
    # 2ε0-DP ones; the largest whole k is 358, resp. 22.
    def k_max(item: sdp.Guarantee) -> int:
        k = 1
        while sdp.clt_estimate([(item, k + 1)]).epsilon(1e-6) <= 1.0:
            k += 1
        return k

    assert k_max(sdp.Exponential(0.025)) == 358
    assert k_max(sdp.PureDP(0.05)) == 22


def test_it_is_an_estimate_not_a_guarantee() -> None:
    est = sdp.compose([(sdp.Laplace(10.0), 100)]).clt_estimate()
    assert not isinstance(est, sdp.Guarantee)
    assert "NOT a privacy guarantee" in str(est)
    with pytest.raises(sdp.InvalidParameter):
        sdp.compose([est])  # type: ignore[list-item]
    assert 0 < est.delta(est.epsilon(1e-6)) <= 1e-6 * (1 + 1e-6)


def test_unsupported_items_raise() -> None:
    with pytest.raises(sdp.NotImplied):
        sdp.clt_estimate([sdp.ApproxDP(1.0, 1e-6)])
    with pytest.raises(sdp.NotImplied):
        sdp.clt_estimate([sdp.BoundedRange(1.0), sdp.BoundedRange(0.5)])
    with pytest.raises(sdp.NotImplied):
        sdp.clt_estimate([sdp.RandomizedResponse(1.0, categories=3)])
