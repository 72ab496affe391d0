"""The KL route to δ: δ(ε) ≤ δ(0) = TV ≤ min(Pinsker, Bretagnolle–Huber), checked against exact total
variations computed independently (Bernoulli pairs, the Gaussian)."""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from sharpdp import _math, _tails


@given(p=st.floats(1e-6, 1 - 1e-6), q=st.floats(1e-6, 1 - 1e-6))
def test_the_kl_bound_on_delta_is_never_below_the_total_variation(p: float, q: float) -> None:
    # Bernoulli(p) against Bernoulli(q): TV = |p − q| and KL in 50 digits, independently
    with mpmath.workdps(50):
        mp, mq = mpmath.mpf(p), mpmath.mpf(q)
        kl = mp * mpmath.log(mp / mq) + (1 - mp) * mpmath.log((1 - mp) / (1 - mq))
        tv = abs(mp - mq)
    bound = _tails.kl_tv_delta(_math.up(float(kl)))
    assert bound >= tv
    # Pinsker's √(KL/2) where it is the smaller, Bretagnolle–Huber's √(1 − e^{−KL}) elsewhere
    want = min(mpmath.sqrt(kl / 2), mpmath.sqrt(-mpmath.expm1(-kl)))
    assert bound == pytest.approx(float(want), rel=1e-12)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.1, 0.5, 1.0])
def test_zcdp_delta_at_zero_is_pinskers_bound(rho: float) -> None:
    # δ(0) = TV ≤ √(KL/2) ≤ √(ρ/2) (KL ≤ ρ); it read Bretagnolle–Huber's √(1 − e^{−ρ}), 10–25%
    # larger for ρ ≤ 1. The Gaussian with μ = √(2ρ) is ρ-zCDP with TV = 2Φ(μ/2) − 1: a floor.
    got = sdp.ZCDP(rho).delta(0.0)
    assert got == pytest.approx(math.sqrt(rho / 2.0), rel=1e-14)
    assert got >= float(2 * mpmath.ncdf(mpmath.sqrt(2 * rho) / 2) - 1)
    assert sdp.ZCDP(rho).epsilon(math.sqrt(rho / 2.0) * (1 + 1e-12)) == 0.0
