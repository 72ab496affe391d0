"""Exact audits of the local randomizers with ``sdp.audit``: each is ε-DP, sharply.

The registered laws are first checked against the independent mpmath laws of ``local_reference``
(so the audit audits the papers' mechanisms, not a copy of the code under test), then audited on
every ordered pair of distinct inputs: the max divergence must equal ε, the claim PureDP(ε) must
pass and PureDP(ε·(1 − 10⁻⁶)) must fail.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from local_reference import DPS, law

import sharpdp as sdp
from sharpdp.audit import FiniteLaw, exact, law_of

SMALL = [
    ("rr", k) for k in (2, 3, 5)
] + [("oue", k) for k in (2, 3, 4)] + [("hadamard", k) for k in (2, 3, 4, 7)]


@pytest.mark.parametrize(("scheme", "k"), SMALL)
@pytest.mark.parametrize("eps", [1e-6, 0.3, 1.0, 4.0, 50.0])
def test_law_matches_reference_and_sums_to_one(scheme: str, k: int, eps: float) -> None:
    r = sdp.local.Randomizer(scheme, eps, k)
    for x in range(k):
        got = law_of(r, x)  # through the audit's registry
        assert isinstance(got, FiniteLaw)
        ref = law(scheme, eps, k, x)
        labels = got.labels()
        assert len(labels) == len(ref)
        with mp.workdps(DPS):
            want = np.array([float(mp.log(ref[o])) for o in labels])
            assert abs(mp.fsum(ref.values()) - 1) < mp.mpf(10) ** -30
        assert np.allclose(got.log_probabilities, want, rtol=0.0, atol=1e-12)
        assert math.fsum(np.exp(got.log_probabilities)) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("scheme", "k"), SMALL)
@pytest.mark.parametrize("eps", [1e-6, 0.3, 1.0, 4.0, 50.0])
def test_exactly_epsilon_dp(scheme: str, k: int, eps: float) -> None:
    r = sdp.local.Randomizer(scheme, eps, k)
    for x, x_prime in itertools.permutations(range(k), 2):
        report = exact(r, x, x_prime)
        assert report.max_divergence() == pytest.approx(eps, rel=1e-9, abs=1e-15)
        assert report.check(r.guarantee).ok
        assert not report.check(sdp.PureDP(eps * (1 - 1e-6))).ok  # sharp: no smaller ε holds
    assert r.guarantee == sdp.PureDP(eps) == sdp.local.guarantee(eps)


def test_auto_randomizer_is_audited_as_the_chosen_scheme() -> None:
    r = sdp.local.Randomizer("auto", 1.0, 11)  # 11 ≥ 3e + 2 = 10.15: OUE
    assert r.scheme == "oue"
    assert exact(r, 0, 10).max_divergence() == pytest.approx(1.0, rel=1e-12)  # 2^11 outcomes
    with pytest.raises(sdp.InvalidParameter, match="2\\*\\*16"):
        law_of(sdp.local.Randomizer("oue", 1.0, 17), 0)  # 2^17 outcomes: refused
    with pytest.raises(sdp.InvalidParameter, match="x must be < categories"):
        law_of(r, 11)
