"""The exact audit's numbers against independent mpmath computations on explicit pairs.

References: direct summation at 50 digits (``reference.renyi`` / ``reference.hockey_stick``), and
closed forms of randomized response (Steinke 2024 Thm 4; its hockey-stick divergence) and of the
discrete Gaussian.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from audit_reference import shift_laws
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from reference import hockey_stick, renyi, sym_hockey_stick, sym_renyi
from sharpdp.audit import (
    DiscreteGaussianNoise,
    DiscreteLaplaceNoise,
    FiniteLaw,
    ShiftLaw,
    exact_pair,
)

ORDERS = [1.0, 1.001, 1.5, 2.0, 5.0, 40.0, math.inf]
EPSILONS = [0.0, 0.05, 0.3, 1.0, 2.5, math.inf]


def close(measured: float, expected: object, rel: float = 1e-10, abs_: float = 1e-15) -> bool:
    e = float(expected)  # type: ignore[arg-type]
    if math.isinf(e) or math.isinf(measured):
        return measured == e
    return abs(measured - e) <= abs_ + rel * abs(e)


def mp_range(p: list[mp.mpf], q: list[mp.mpf]) -> float:
    """max − min of log P/Q over the common support (inf if the supports differ)."""
    if any((pi > 0) != (qi > 0) for pi, qi in zip(p, q, strict=True)):
        return math.inf
    z = [mp.log(pi / qi) for pi, qi in zip(p, q, strict=True) if pi > 0]
    return float(max(z) - min(z))


weights = st.lists(st.integers(0, 30), min_size=2, max_size=6)


@given(weights, weights)
def test_random_pairs_match_direct_summation(wp: list[int], wq: list[int]) -> None:
    m = min(len(wp), len(wq))
    wp, wq = wp[:m], wq[:m]
    if sum(wp) == 0 or sum(wq) == 0:
        return
    with mp.workdps(50):
        p = [mp.mpf(v) / sum(wp) for v in wp]
        q = [mp.mpf(v) / sum(wq) for v in wq]
    r = exact_pair([v / sum(wp) for v in wp], [v / sum(wq) for v in wq])
    for alpha in ORDERS:
        assert close(r.renyi(alpha), sym_renyi(p, q, alpha)), alpha
    for eps in EPSILONS:
        assert close(r.delta(eps), sym_hockey_stick(p, q, eps)), eps
    assert close(r.bounded_range(), mp_range(p, q))
    assert close(r.max_divergence(), sym_renyi(p, q, math.inf))


@pytest.mark.parametrize("t", [1e-3, 1e-6, 1e-9])
def test_nearby_pairs_lose_no_accuracy_to_cancellation(t: float) -> None:
    # D_α ≈ (α/2)·χ² ≈ t²: a naive log Σ P^α Q^{1−α} would err by ~1e-16/(α − 1) absolutely.
    # The identity with non-negative terms leaves only the rounding of the log-probabilities
    # (Z = log P − log Q to ~1e-16 absolute): relative error ~1e-16/t, absolute ~1e-16·t.
    pf = [0.5 + t, 0.25 - t, 0.25]
    with mp.workdps(60):
        p = [mp.mpf(v) for v in pf]
        total = mp.fsum(p)
        p = [v / total for v in p]
        q = [mp.mpf(0.5), mp.mpf(0.25), mp.mpf(0.25)]
        r = exact_pair(pf, [0.5, 0.25, 0.25])
        for alpha in [1.0, 1.5, 2.0, 10.0]:
            expected = sym_renyi(p, q, alpha)
            assert close(r.renyi(alpha), expected, rel=1e-8, abs_=1e-15 * t), alpha


def test_differing_supports() -> None:
    # P puts mass 0.1 where Q has none; Q is absolutely continuous w.r.t. P.
    p = [mp.mpf("0.5"), mp.mpf("0.4"), mp.mpf("0.1")]
    q = [mp.mpf("0.7"), mp.mpf("0.3"), mp.mpf(0)]
    r = exact_pair([0.5, 0.4, 0.1], [0.7, 0.3, 0.0])
    assert r.max_divergence() == math.inf
    assert r.bounded_range() == math.inf
    assert r.renyi(1.0) == math.inf  # D(P‖Q) is infinite
    assert close(r.delta(math.inf), 0.1)  # P[Z = ∞]
    assert close(r.delta(0.2), sym_hockey_stick(p, q, 0.2))
    assert r.epsilon(0.05) == math.inf  # δ(ε) ≥ 0.1 for every ε
    # The reverse order alone is finite: D_α(Q‖P) by direct summation.
    lo, hi = r.losses()
    assert hi == math.inf
    assert close(lo, math.log(0.5 / 0.7))
    assert math.isfinite(float(renyi(q, p, 2.0)))  # only D(P‖Q) is infinite, and max takes it


@pytest.mark.parametrize("eps0", [0.01, 0.5, 1.0, 3.0])
def test_binary_randomized_response_closed_forms(eps0: float) -> None:
    # the hockey-stick divergence: δ(ε) = (e^{ε0} − e^ε)/(1 + e^{ε0}) on [0, ε0]; KL = ε0·tanh(ε0/2)
    # (Steinke 2024 Thm 5); D_∞ = ε0;
    # range 2ε0; ε(δ) = log(e^{ε0} − δ(1 + e^{ε0})).
    with mp.workdps(50):
        e0 = mp.mpf(eps0)
        r = sdp.audit.exact(sdp.RandomizedResponse(eps0), 0, 1)
        assert close(r.max_divergence(), e0)
        assert close(r.bounded_range(), 2 * e0)
        assert close(r.renyi(1.0), e0 * mp.tanh(e0 / 2))
        for frac in [0.0, 0.3, 0.9]:
            e = frac * eps0
            assert close(r.delta(e), (mp.exp(e0) - mp.exp(e)) / (1 + mp.exp(e0)))
        for d in [1e-6, 0.01, 0.1]:
            expected = mp.log(mp.exp(e0) - d * (1 + mp.exp(e0)))
            if expected > 0:
                assert close(r.epsilon(d), expected, rel=1e-9)
        assert r.delta(eps0 * 1.0001) == 0.0


def test_k_ary_randomized_response_by_enumeration() -> None:
    from reference import rr_pair

    p, q = rr_pair(1.3, 4)
    r = sdp.audit.exact(sdp.RandomizedResponse(1.3, 4), 0, 1)
    for alpha in ORDERS:
        assert close(r.renyi(alpha), sym_renyi(p, q, alpha))
    for eps in EPSILONS:
        assert close(r.delta(eps), sym_hockey_stick(p, q, eps))


def test_mappings_are_aligned_by_outcome_and_log_input() -> None:
    p = {"a": 0.5, "b": 0.5}
    q = {"b": 0.25, "c": 0.0, "a": 0.75}
    r = exact_pair(p, q)
    assert close(r.max_divergence(), math.log(2.0))
    assert close(r.bounded_range(), math.log(2.0) + math.log(1.5))
    r2 = exact_pair([math.log(0.5), math.log(0.5)], [math.log(0.75), math.log(0.25)], log=True)
    assert close(r2.bounded_range(), r.bounded_range())
    r3 = exact_pair(FiniteLaw.from_probabilities(p), FiniteLaw.from_probabilities(q))
    assert close(r3.renyi(2.0), r.renyi(2.0))


# -- infinite integer supports --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "param", "d"),
    [("laplace", 1.0, 1), ("laplace", 2.5, 3), ("gaussian", 1.0, 1), ("gaussian", 0.7, 2)],
)
def test_shift_pairs_match_wide_direct_summation(kind: str, param: float, d: int) -> None:
    noise = DiscreteLaplaceNoise(param) if kind == "laplace" else DiscreteGaussianNoise(param)
    r = exact_pair(ShiftLaw(noise, 0), ShiftLaw(noise, d))
    p, q = shift_laws(kind, param, 0, d)
    for alpha in [1.0, 1.01, 2.0, 4.0]:
        assert close(r.renyi(alpha), sym_renyi(p, q, alpha), rel=1e-11), alpha
    for eps in [0.0, 0.2, 1.0, 2.0]:
        assert close(r.delta(eps), sym_hockey_stick(p, q, eps), rel=1e-11), eps
    if kind == "laplace":
        # Z is constant (±d/s) on both tails: the range over ℤ is the window's.
        assert close(r.max_divergence(), d / param)
        assert close(r.bounded_range(), 2 * d / param)
    else:
        assert r.max_divergence() == math.inf  # Z is linear in the output: unbounded
        assert r.bounded_range() == math.inf


def test_discrete_laplace_at_unit_shift_is_randomized_response() -> None:
    # Z = +1/s for y ≤ 0 and −1/s for y ≥ 1: the pair is exactly binary RR with ε0 = 1/s.
    s = 0.8
    noise = DiscreteLaplaceNoise(s)
    r = exact_pair(ShiftLaw(noise, 0), ShiftLaw(noise, 1))
    with mp.workdps(50):
        e0 = 1 / mp.mpf(s)
        assert close(r.renyi(1.0), e0 * mp.tanh(e0 / 2))
        assert close(r.delta(0.0), mp.tanh(e0 / 2))
        assert close(r.delta(0.5), (mp.exp(e0) - mp.exp(0.5)) / (1 + mp.exp(e0)))


@pytest.mark.parametrize("sigma", [0.4, 1.0, 3.0, 200.0])
def test_discrete_gaussian_closed_forms(sigma: float) -> None:
    # KL = E_P[Z] = d²/(2σ²) exactly (E[noise] = 0); D_α = αd²/(2σ²) when (α − 1)d is an integer
    # (the sum Σ exp(−(y − m)²/2σ²) over ℤ is then the normaliser); δ(0) at d = 1 is P(Z = 0) = 1/N.
    noise = DiscreteGaussianNoise(sigma)
    r = exact_pair(ShiftLaw(noise, 0), ShiftLaw(noise, 1))
    assert close(r.renyi(1.0), 1 / (2 * sigma**2))
    for alpha in [2.0, 3.0, 11.0]:
        assert close(r.renyi(alpha), alpha / (2 * sigma**2), rel=1e-11)
    with mp.workdps(50):
        s = mp.mpf(sigma)
        w = int(40 * sigma) + 40
        norm = mp.fsum(mp.exp(-(mp.mpf(z) ** 2) / (2 * s * s)) for z in range(-w, w + 1))
        assert close(r.delta(0.0), 1 / norm, rel=1e-11)


def test_shift_pair_in_each_order() -> None:
    noise = DiscreteGaussianNoise(1.5)
    p, q = shift_laws("gaussian", 1.5, 3, 1)
    r = exact_pair(ShiftLaw(noise, 3), ShiftLaw(noise, 1))
    assert close(r.delta(0.4), max(hockey_stick(p, q, 0.4), hockey_stick(q, p, 0.4)), rel=1e-11)
    assert close(r.renyi(3.0), sym_renyi(p, q, 3.0), rel=1e-11)


def test_too_wide_windows_are_refused() -> None:
    noise = DiscreteGaussianNoise(1e6)
    with pytest.raises(sdp.InvalidParameter, match="window"):
        exact_pair(ShiftLaw(noise, 0), ShiftLaw(noise, 1))


def test_laws_must_be_comparable() -> None:
    with pytest.raises(sdp.InvalidParameter, match="different noises"):
        exact_pair(ShiftLaw(DiscreteLaplaceNoise(1.0), 0), ShiftLaw(DiscreteLaplaceNoise(2.0), 1))
    with pytest.raises(sdp.InvalidParameter, match="cannot compare"):
        exact_pair(ShiftLaw(DiscreteLaplaceNoise(1.0), 0), [0.5, 0.5])


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        ([0.5, 0.5], [0.2, 0.3, 0.5], "different numbers of outcomes"),
        ([0.5, 0.6], [0.5, 0.5], "sum to 1"),
        ([1.5, -0.5], [0.5, 0.5], ">= 0"),
        ([float("nan"), 1.0], [0.5, 0.5], "finite"),
        ([[0.5, 0.5]], [0.5, 0.5], "1-D"),
        ("ab", [0.5, 0.5], "array of numbers"),
        ([], [], "non-empty"),
    ],
)
def test_bad_laws_are_rejected(p: object, q: object, match: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match=match):
        exact_pair(p, q)


def test_bad_log_laws_and_labels() -> None:
    with pytest.raises(sdp.InvalidParameter, match="NaN"):
        exact_pair([0.0, float("nan")], [0.0, -1.0], log=True)
    with pytest.raises(sdp.InvalidParameter, match="distinct"):
        FiniteLaw(np.log([0.5, 0.5]), ("a", "a"))
    with pytest.raises(sdp.InvalidParameter, match="labels"):
        FiniteLaw(np.log([0.5, 0.5]), ("a",))
    with pytest.raises(sdp.InvalidParameter, match="log must be a bool"):
        exact_pair([1.0], [1.0], log=1)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="noise"):
        ShiftLaw("gaussian", 0)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="sigma"):
        DiscreteGaussianNoise(-1.0)


def test_report_is_a_guarantee_with_validated_queries() -> None:
    r = exact_pair([0.6, 0.4], [0.4, 0.6])
    assert isinstance(r, sdp.Guarantee)
    with pytest.raises(sdp.InvalidParameter):
        r.renyi(0.5)
    with pytest.raises(sdp.InvalidParameter):
        r.delta(-1.0)
    with pytest.raises(sdp.InvalidParameter):
        r.epsilon(2.0)
    # ε(δ) is the smallest ε with δ(ε) ≤ δ: checked at the returned point, errs upwards.
    for d in [0.0, 1e-3, 0.1]:
        e = r.epsilon(d)
        assert r.delta(e) <= d
        assert e == 0.0 or r.delta(e * (1 - 1e-9)) > d
    assert "ExactReport" in repr(r)
    assert r.size == 2
