"""check(): what is compared, the tolerance, and how violations are named."""

from __future__ import annotations

import math

import pytest

import sharpdp as sdp
from sharpdp.audit import AuditFailure, CheckResult, exact, exact_many, exact_pair


def rr_report(eps: float) -> sdp.audit.ExactReport:
    return exact(sdp.RandomizedResponse(eps), 0, 1)


def test_tight_claim_passes_and_a_tiny_real_violation_is_caught() -> None:
    # RR(ε) is exactly ε-DP (D_∞ = ε, δ(ε′) = the PureDP profile): the tight claim passes...
    r = rr_report(1.0)
    assert r.check(sdp.PureDP(1.0)).ok
    # ... and a claim 1e-9 (relative) too small is refuted: the default tolerance (1e-12 relative,
    # 1e-15 absolute) forgives only float error.
    result = r.check(sdp.PureDP(1.0 - 1e-9))
    assert not result.ok
    kinds = {v.quantity for v in result.violations}
    assert "renyi" in kinds  # D_∞ = 1 > 1 − 1e-9
    [inf_order] = [v for v in result.violations if v.quantity == "renyi" and v.argument == math.inf]
    assert inf_order.measured == pytest.approx(1.0, rel=1e-15)
    # A looser tolerance is the caller's explicit choice; rtol is relative to the claimed value,
    # so a claimed δ of 0 (the ε(δ = 0) comparison) needs atol.
    assert not r.check(sdp.PureDP(1.0 - 1e-9), rtol=1e-6).ok
    assert r.check(sdp.PureDP(1.0 - 1e-9), rtol=1e-6, atol=1e-6).ok
    with pytest.raises(sdp.InvalidParameter, match="rtol"):
        r.check(sdp.PureDP(1.0), rtol=-1.0)


def test_every_kind_of_violation_is_named() -> None:
    r = rr_report(2.0)
    result = r.check(sdp.BoundedRange(2.0))  # RR(2) is 4-BR, and its profile exceeds 2-BR's
    kinds = {v.quantity for v in result.violations}
    assert kinds == {"renyi", "bounded_range", "epsilon", "delta"}
    text = str(result)
    for needle in ["bounded range", "Rényi divergence", "ε(δ)", "δ(ε)", "more of the same kind"]:
        assert needle in text
    assert len(result.messages()) == len(result.violations)
    assert result.compared > len(result.violations)
    with pytest.raises(AuditFailure) as info:
        result.assert_ok()
    assert isinstance(info.value, sdp.SharpDPError)
    assert isinstance(info.value, AssertionError)
    assert "BoundedRange(eta=2.0)" in str(info.value)


def test_claims_without_a_bounded_range_skip_it() -> None:
    r = exact(sdp.PermuteAndFlip(1.0), [0.0, 1.0], [1.0, 0.0])
    result = r.check(sdp.ZCDP(10.0))
    assert result.ok
    assert result.skipped == ("bounded_range (the claim implies no finite bounded range)",)
    assert "passed" in str(result)
    assert isinstance(result, CheckResult)


def test_approximate_claims_compare_profiles() -> None:
    # RR(1) satisfies (0, tanh(1/2))-DP exactly and nothing with a smaller δ at ε = 0.
    r = rr_report(1.0)
    tv = math.tanh(0.5)
    assert r.check(sdp.ApproxDP(0.0, tv * (1 + 1e-12))).ok
    bad = r.check(sdp.ApproxDP(0.0, tv * (1 - 1e-6)))
    assert not bad.ok
    # (the claim's own δ is now tested too: ε(δ) at it is the claim's 0, where δ is too large)
    assert {v.quantity for v in bad.violations} == {"delta", "epsilon"}
    # at ε = 0, and wherever else the search between points finds the profile above the claim:
    # each a real excess, RR(1)'s δ(ε) = (e − e^ε)/(1 + e) (ε ≤ 1) against the claim's
    deltas = [v for v in bad.violations if v.quantity == "delta"]
    assert any(v.argument == 0.0 for v in deltas)
    for v in deltas:
        assert v.argument is not None
        assert 0.0 <= v.argument < 1.0
        exact_delta = (math.e - math.exp(v.argument)) / (1.0 + math.e)
        assert v.measured == pytest.approx(exact_delta, rel=1e-12)
        assert exact_delta > sdp.ApproxDP(0.0, tv * (1 - 1e-6)).delta(v.argument) * (1 + 1e-12)


def test_worst_case_report_names_the_pair() -> None:
    m = sdp.Exponential(1.0)
    pairs = [([0.0, 0.0], [0.0, 0.5]), ([0.0, 0.0], [1.0, -1.0]), ([0.0, 0.0], [0.0, 1.0])]
    w = exact_many(m, pairs)
    assert w.worst("bounded_range") == 1
    assert w.worst("max_divergence") == 1
    assert w.worst("renyi", 2.0) == 1
    assert w.worst("delta", 0.1) == 1
    with pytest.raises(sdp.InvalidParameter, match="unknown quantity"):
        w.worst("volume")
    assert w.bounded_range() == pytest.approx(1.0, rel=1e-13)
    result = w.check(sdp.BoundedRange(0.6))
    [br] = [v for v in result.violations if v.quantity == "bounded_range"]
    assert br.where.startswith("pair #1")
    assert "pair #1" in str(br)
    assert "WorstCaseReport" in repr(w)
    assert w.check().ok  # the mechanism's own claim
    assert w.epsilon(1e-3) == max(r.epsilon(1e-3) for r in w.reports)


def test_claims_must_be_guarantees() -> None:
    r = exact_pair([0.5, 0.5], [0.4, 0.6])
    with pytest.raises(sdp.InvalidParameter, match="needs a claim"):
        r.check()
    with pytest.raises(sdp.InvalidParameter, match="claim must be"):
        r.check("PureDP(1)")  # type: ignore[arg-type]
    w = exact_many(lambda x: [0.5 + x, 0.5 - x], [(0.0, 0.1), (0.0, 0.2)])
    with pytest.raises(sdp.InvalidParameter, match="needs a claim"):
        w.check()
    assert w.max_divergence() == pytest.approx(math.log(0.5 / 0.3))


def test_a_violation_between_the_compared_points_is_found() -> None:
    # EM(2) on scores (0, 0, 0) vs (1, −1, 0): P uniform, Q = softmax(1, −1, 0). Gaussian(1.1)
    # claims δ(0.8055) = 0.13159, the pair has 0.13186 — between grid points 0.25 apart, where
    # a sampled grid let the claim pass. Both values computed here in mpmath.
    import mpmath

    r = exact(sdp.Exponential(2.0), [0, 0, 0], [1, -1, 0])
    with mpmath.workdps(40):
        p = [mpmath.mpf(1) / 3] * 3
        z = mpmath.e + mpmath.e**-1 + 1
        q = [mpmath.e / z, mpmath.e**-1 / z, 1 / z]
        eps = mpmath.mpf(0.8055)
        pair = max(
            sum(max(0, a - mpmath.e**eps * b) for a, b in zip(x, y, strict=True))
            for x, y in ((p, q), (q, p))
        )
        mu = 1 / mpmath.mpf(1.1)  # Balle–Wang: δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)
        claimed = mpmath.ncdf(mu / 2 - eps / mu) - mpmath.e**eps * mpmath.ncdf(-mu / 2 - eps / mu)
    assert pair > claimed * (1 + 1e-3)
    assert not r.check(sdp.Gaussian(1.1)).ok
    # a zCDP claim just below the pair's sup_α D_α/α (scanned here on a fine grid of α),
    # violated between the fixed orders 1.25 and 1.5
    with mpmath.workdps(30):

        def renyi(alpha: mpmath.mpf) -> mpmath.mpf:
            one = sum(a**alpha * b ** (1 - alpha) for a, b in zip(p, q, strict=True))
            two = sum(b**alpha * a ** (1 - alpha) for a, b in zip(p, q, strict=True))
            return mpmath.log(max(one, two)) / (alpha - 1)

        rho = max(
            renyi(1 + mpmath.mpf(i) / 1000) / (1 + mpmath.mpf(i) / 1000) for i in range(1, 2000)
        )
    assert not r.check(sdp.ZCDP(float(rho) * (1 - 2e-5))).ok
    assert r.check(sdp.ZCDP(float(rho) * (1 + 1e-6))).ok


def test_a_local_randomizer_is_checked_against_its_own_guarantee() -> None:
    rand = sdp.local.Randomizer("oue", 1.0, 4)
    result = exact(rand, 0, 1).check()
    assert result.ok
    assert result.claim == sdp.PureDP(1.0)
