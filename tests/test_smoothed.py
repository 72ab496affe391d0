"""The smoothed MGF inversion (``mgf-smoothed``) against independent computations.

* The majorant lemma, Gap(v) ≤ M(v), checked in mpmath on a dense grid (Gap from the closed-form
  Gaussian profile, not from sharpdp).
* Compositions of distinct randomized-response, pure- and approximate-DP items (purely atomic
  laws, where the plain inversion declines): the exact δ(ε) by enumerating every outcome of the
  product of the ε0-RR pairs (Kairouz–Oh–Viswanath 2015, Thm 2.5, for the pure/approximate
  items), in mpmath. The bracket contains it, the reported value is valid and within the
  accuracy, and ε(δ) is certified by the exact profile.
* Many distinct Laplace items: ``tests/test_composition_speed_cases.py`` checks the 40- and
  100-item lattice compositions (which this analysis now answers) against its independent
  lattice bracket; here, that the PLD is not composed once this analysis has answered.
"""

from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sharpdp as sdp
from reference import laplace_pair_delta, rr_outcomes
from sharpdp.accounting import pld
from sharpdp.accounting.analyses.smoothed import (
    _PHI0,
    _THETA,
    SmoothedInversion,
    _SmoothedGuarantee,
)
from sharpdp.errors import NotImplied

DPS = 40  # the references' precision, set with mp.workdps (a module-level setting would leak)


def _gaps(mu: mp.mpf, v: mp.mpf) -> tuple[mp.mpf, mp.mpf]:
    """Gap(v) and Gap(−v), Gap(v) = E_W[(1 − e^{v − W})_+] − (1 − e^v)_+ for W ~ N(μ²/2, μ²):
    the μ-GDP profile at v (Balle–Wang 2018, Thm 8, valid for every real v) minus the
    identity's. Both from the same two normal CDFs, A = Φ(μ/2 − v/μ) and B = Φ(−μ/2 − v/μ): at
    −v the profile's are Φ(μ/2 + v/μ) = 1 − B and Φ(−μ/2 + v/μ) = 1 − A (exact but for ~1e-40
    absolute, far below the 1e-35 the Jensen check resolves)."""
    phi = mp.ncdf
    a, b = phi(mu / 2 - v / mu), phi(-mu / 2 - v / mu)
    up, down = mp.exp(v), mp.exp(-v)
    at_v = a - up * b - max(mp.mpf(0), 1 - up)
    at_minus_v = (1 - b) - down * (1 - a) - max(mp.mpf(0), 1 - down)
    return at_v, at_minus_v


@pytest.mark.parametrize("mu", [1e-4, 1e-3, 1e-2, 0.1, 0.5])
def test_the_gap_of_smoothing_is_below_its_gaussian_majorant(mu: float) -> None:
    with mp.workdps(DPS):
        m = mp.mpf(mu)
        tau2 = m**2 / (1 - mp.mpf(_THETA))
        amp = (mp.mpf(_PHI0) + m / 2) * mp.exp(
            max(1 / mp.mpf(_THETA) - 1, 1 - mp.mpf(_THETA)) * m**2 / 8
        )
        worst = mp.mpf(0)
        # v = ±x·μ for x on the 0.01-grid of [0, 12] and x = μ/2 (the grid is symmetric: each
        # pair of CDFs serves v and −v)
        for x in np.concatenate([np.linspace(0.0, 12.0, 1201), [mu / 2]]):
            v = mp.mpf(x) * m
            bound = m * amp * mp.exp(-(v**2) / (2 * tau2))  # even in v
            for sign, gap in zip((1, -1), _gaps(m, v), strict=True):
                assert gap >= -(mp.mpf(10) ** -35)  # Jensen: smoothing never lowers the profile
                assert gap <= bound, (mu, sign * x)
                worst = max(worst, gap / bound)
        assert worst > 0.3  # the majorant is not loose by orders of magnitude (it is ~2× in area)


def _rr_items(eps0: list[float], delta0: list[float]) -> list[tuple[mp.mpf, mp.mpf]]:
    return [(mp.mpf(e), mp.mpf(d)) for e, d in zip(eps0, delta0, strict=True)]


@functools.lru_cache(maxsize=4)
def _rr_law(eps0: tuple[mp.mpf, ...], prec: int) -> list[tuple[mp.mpf, mp.mpf]]:
    """(loss, P-mass) of every outcome of the product of the binary ε0_i-randomized-response
    pairs (2^n outcomes, not merged), at ``prec`` bits: each half of the items' outcomes
    enumerated by ``rr_outcomes``, then paired (the halves are independent: the losses add, the
    masses multiply). ``rr_outcomes``' list over all the items, in its order, to a few ulps, with
    2^n products instead of n·2^n exponentials; and computed once for the several δ(ε) a test
    asks of one composition."""
    with mp.workprec(prec):
        half = len(eps0) // 2
        left, right = list(rr_outcomes(eps0[:half])), list(rr_outcomes(eps0[half:]))
        return [(a + b, p * q) for a, p in left for b, q in right]


def _exact_delta(items: list[tuple[mp.mpf, mp.mpf]], epsilon: float) -> mp.mpf:
    """δ(ε) of the product of the (ε0, δ0) pairs: with probability 1 − Π(1 − δ0) an infinite loss,
    else the ε0-RR pairs, whose loss is Σ ±ε0_i with P-masses e^{ε0}/(1 + e^{ε0}) at +ε0."""
    with mp.workdps(DPS):
        finite = mp.fprod(1 - d for _, d in items)
        eps = mp.mpf(epsilon)
        law = _rr_law(tuple(e for e, _ in items), mp.mp.prec)
        total = mp.fsum(mass * (1 - mp.exp(eps - loss)) for loss, mass in law if loss > eps)
        return (1 - finite) + finite * total


def _guarantees(eps0: list[float], delta0: list[float]) -> list[sdp.Guarantee]:
    out: list[sdp.Guarantee] = []
    for i, (e, d) in enumerate(zip(eps0, delta0, strict=True)):
        if d > 0.0:
            out.append(sdp.ApproxDP(e, d))
        elif i % 2:
            out.append(sdp.PureDP(e))
        else:
            out.append(sdp.RandomizedResponse(e, categories=2))
    return out


EPS0 = [
    0.0713,
    0.1291,
    0.0457,
    0.2023,
    0.0861,
    0.1537,
    0.0329,
    0.1777,
    0.0611,
    0.1129,
    0.0937,
    0.2411,
]
DELTA0 = [0.0] * 10 + [1e-9, 3e-9]


@pytest.mark.parametrize("epsilon", [0.6, 0.9, 1.3])
def test_an_atomic_mix_is_bracketed_around_the_enumerated_profile(epsilon: float) -> None:
    exact = _exact_delta(_rr_items(EPS0, DELTA0), epsilon)
    pairs = pld.composition._normalise_items(_guarantees(EPS0, DELTA0))
    for mu in (2e-3, 5e-4):
        lo, hi = SmoothedInversion(pairs, mu).delta_bracket(epsilon)
        assert lo <= exact <= hi, (mu, lo, float(exact), hi)
    g = _SmoothedGuarantee(pairs)
    try:
        value = g.delta(epsilon)
    except NotImplied:  # allowed (an atom right at ε); not on these arguments
        pytest.fail("declined")
    assert exact * (1 - 1e-12) <= value <= exact * (1 + 1e-4)


def test_epsilon_of_an_atomic_mix_is_certified_by_the_enumerated_profile() -> None:
    items = _rr_items(EPS0, DELTA0)
    pairs = pld.composition._normalise_items(_guarantees(EPS0, DELTA0))
    eps = _SmoothedGuarantee(pairs).epsilon(1e-6)
    assert _exact_delta(items, eps) <= 1e-6  # valid
    assert _exact_delta(items, eps / (1 + 1e-4)) > 1e-6  # within the accuracy


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(0.01, 0.4), min_size=2, max_size=9),
    st.floats(0.05, 1.0),
    st.sampled_from([1e-4, 1e-5]),
)
def test_smoothed_values_are_never_below_the_exact_one(
    eps0: list[float], where: float, accuracy: float
) -> None:
    delta0 = [0.0] * len(eps0)
    items = _rr_items(eps0, delta0)
    pairs = pld.composition._normalise_items(_guarantees(eps0, delta0))
    g = _SmoothedGuarantee(pairs).with_accuracy(accuracy)
    epsilon = where * sum(eps0)
    exact = _exact_delta(items, epsilon)
    try:
        value = g.delta(epsilon)
    except NotImplied:  # few atoms: one may sit right at ε (then another analysis answers)
        return
    assert value >= exact * (1 - 1e-12)
    assert value <= exact * (1 + accuracy) + 1e-300


def test_many_distinct_laplace_items_skip_the_pld() -> None:
    c = sdp.compose([sdp.Laplace(scale=10.0 + i) for i in range(100)])
    eps = c.epsilon(1e-6)
    assert math.isfinite(eps)
    assert c.delta(eps) <= 1e-6
    prepared = c._cache["pld"]
    assert not isinstance(prepared, str)
    assert "_result" not in vars(prepared)  # superseded: never composed
    explained = c.explain(delta=1e-6)
    rows = {r.name: r for r in explained.rows}
    assert explained.winner.name == "mgf-smoothed"
    assert rows["mgf-smoothed"].value == eps
    assert rows["pld"].value is None
    assert rows["pld"].note.startswith("not run: mgf-smoothed answered")
    assert "_result" not in vars(prepared)  # explain did not compose it either


def _exact_delta_with_laplace(
    items: list[tuple[mp.mpf, mp.mpf]], eps0: float, epsilon: float
) -> mp.mpf:
    """δ(ε) of the ε0_i-RR pairs composed with one Laplace pair of ε0: conditioning on the RR
    outcome, δ(ε) = Σ_s P(s)·δ_Lap(ε − l(s)) (the composition theorem of privacy loss
    distributions), with the Laplace profile in closed form: 1 − e^t for t ≤ −ε0,
    1 − e^{(t − ε0)/2} on [−ε0, ε0], 0 beyond."""
    with mp.workdps(DPS):
        eps = mp.mpf(epsilon)
        outcomes = _rr_law(tuple(e for e, _ in items), mp.mp.prec)
        return mp.fsum(mass * laplace_pair_delta(eps - loss, eps0) for loss, mass in outcomes)


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.floats(0.01, 0.3), min_size=8, max_size=10, unique=True),
    st.floats(0.05, 0.5),
    st.floats(1e-9, 1e-3),
)
def test_compositions_of_many_items_with_a_laplace_keep_the_accuracy_promise(
    eps0: list[float], laplace: float, delta: float
) -> None:
    # Through sdp.compose, where mgf declines (too atomic) and mgf-smoothed answers (RDP may
    # still be smaller), so the PLD is skipped: ε(δ) is valid and within the default accuracy
    # of the exact one (from the closed form above), and δ at a point inside the profile lies
    # in [exact, exact·(1 + 1e-4)].
    items = _rr_items(eps0, [0.0] * len(eps0))
    c = sdp.compose([*_guarantees(eps0, [0.0] * len(eps0)), sdp.Laplace(1.0, laplace)])
    eps = c.epsilon(delta)
    assert _exact_delta_with_laplace(items, laplace, eps) <= delta * (1 + 1e-12)
    assert _exact_delta_with_laplace(items, laplace, eps / (1 + 1e-4)) > delta
    at = 0.5 * eps
    exact = _exact_delta_with_laplace(items, laplace, at)
    value = c.delta(at)
    assert exact * (1 - 1e-12) <= value <= exact * (1 + 1e-4)


def _laplace_cf_mp(eps0: float, a: float, omega: float) -> mp.mpc:
    """E[e^{(a + iω)L}]/E[e^{aL}] of the Laplace pair's loss under P, in mpmath: atoms
    (1/2)e^{sε0} and (1/2)e^{−ε0}e^{−sε0}, density (1/4)e^{(l − ε0)/2} on (−ε0, ε0)."""
    e0 = mp.mpf(eps0)

    def mgf(s: mp.mpc) -> mp.mpc:
        c = s + mp.mpf(1) / 2
        dens = mp.exp(-e0 / 2) / 4 * (mp.exp(c * e0) - mp.exp(-c * e0)) / c
        return mp.exp(s * e0) / 2 + mp.exp(-e0) * mp.exp(-s * e0) / 2 + dens

    return mgf(mp.mpc(a, omega)) / mgf(mp.mpf(a))


@pytest.mark.parametrize("a", [0.5, 7.0, 40.0])
def test_vectorised_characteristic_functions_are_within_their_error_bounds(a: float) -> None:
    from sharpdp.accounting.pld.pairs import (
        finite_tilted_cfs,
        laplace_tilted_cfs,
        randomized_response_pair,
    )

    with mp.workdps(DPS):
        omega = np.array([0.0, 0.3, 7.0, 123.4, 2.5e3, 4.1e4])
        eps0 = np.array([0.004, 0.09, 0.7, 2.3])
        re, im, err = laplace_tilted_cfs(eps0, a, omega)
        for i, e0 in enumerate(eps0):
            for j, w in enumerate(omega):
                exact = _laplace_cf_mp(float(e0), a, float(w))
                assert abs(mp.mpc(re[i, j], im[i, j]) - exact) <= err[i, j], (e0, w)
        pairs = [randomized_response_pair(float(e), 2) for e in eps0]
        re, im, err = finite_tilted_cfs(pairs, a, omega)
        for i, p in enumerate(pairs):
            weights = [
                mp.mpf(m) * mp.exp(a * mp.mpf(x)) for x, m in zip(p.losses, p.masses, strict=True)
            ]
            for j, w in enumerate(omega):
                exact = mp.fsum(
                    wt * mp.expj(mp.mpf(w) * mp.mpf(x))
                    for wt, x in zip(weights, p.losses, strict=True)
                ) / mp.fsum(weights)
                assert abs(mp.mpc(re[i, j], im[i, j]) - exact) <= err[i, j], (p, w)


def test_threaded_characteristic_functions_agree_with_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # large evaluations are split by nodes across threads; the sums over pairs may then be taken
    # in another order, which the rounding term of the error bound covers (mgf._finish)
    from sharpdp.accounting.analyses import mgf

    items = [(sdp.RandomizedResponse(0.01 + 0.003 * i, categories=2), 5) for i in range(60)]
    items += [(sdp.Laplace(1.0, 0.05 + 0.01 * i), 2) for i in range(20)]
    pairs = pld.composition._normalise_items(items)
    om = np.linspace(0.0, 900.0, 8001)
    monkeypatch.setattr(mgf, "_WORKERS", 2)
    assert om.size * len(pairs) >= mgf._PARALLEL_WORK  # the threaded path is taken
    split = mgf._log_cf_terms(pairs, 1.3, om)
    monkeypatch.setattr(mgf, "_WORKERS", 1)
    one = mgf._log_cf_terms(pairs, 1.3, om)
    allowed = 8.0 * mgf.U * (len(pairs) + 4.0) * (1.0 + one[3])
    assert np.all(np.abs(split[0] - one[0]) <= allowed)
    for a, b in zip(split[1:], one[1:], strict=True):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
