"""Statistical audits of what every sharpdp mechanism actually *releases* (issue 5, item 3).

The exact audits (``test_exact_mechanisms.py``) check the output *laws*; these check the *samplers*
(``select``/``release``) as black boxes with :func:`sharpdp.audit.sample`, on worst-case
neighbouring inputs, against the mechanism's own claim ``mechanism.epsilon(δ)``.

Two audits per mechanism:

* **validity** (``test_sampler_never_exceeds_its_claim``): the default audit (threshold sets of
  outcomes, or of quantile bins for real outputs) at confidence 1 − 1e-6. By the audit's guarantee
  (module docstring of ``sharpdp.audit._statistical``) its lower bound exceeds the pair's true
  ε(δ) ≤ claim with probability ≤ 1e-6, so each test fails falsely with probability ≤ 1e-6.
* **power** (``test_sampler_audit_finds_most_of_its_claim``): the audit of one event E* fixed in
  advance (the likelihood-ratio event that attains the pair's ε(δ)), at confidence 1 − 5e-7, must
  find at least ``power``·claim. The false-failure rate of this lower threshold is *computed in
  the test* from binomial tails: with P(E*), P′(E*) from an independent reference (mpmath laws in
  ``audit_reference`` or closed forms), the four counts (E* under x and x′, in the selection and the
  estimation halves) stay on their good side of binomial quantiles at tail 1.25e-7 each, except
  with probability ≤ 5e-7; on that event the audit picks the right order and its bound is at least
  the value computed from the quantiles with independent Clopper–Pearson bounds (scipy's beta
  quantile), which the test checks is ≥ power·claim. Total false-failure rate ≤ 5e-7 + 5e-7 = 1e-6.

Bounded range (``test_bounded_range_*``) is audited the same way with
:func:`sharpdp.audit.sample_bounded_range` for the mechanisms that claim it (the exponential
mechanism, report-noisy-max with Gumbel noise, and top-k, whose claim is the pure-DP route 2kε —
the audit shows that kε would be false).

Seeds are fixed, so in practice these tests never fail falsely; the rates above are what a change
of seed would risk.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mpmath as mp
import numpy as np
import pytest
from audit_reference import em_law, pf_law, rnm_laplace_law, shift_laws, topk_law
from scipy.stats import beta, binom

import sharpdp as sdp
from sharpdp.audit import RangeSampleReport, SampleReport, sample, sample_bounded_range

STRICT = 1 - 1e-6  # validity runs: false-failure rate ≤ 1e-6
POWER_CONFIDENCE = 1 - 5e-7  # power runs: the upper assertion's share of the 1e-6
TAIL_BUDGET = 5e-7  # power runs: the lower assertion's share (binomial tails, union bound)
CP_SLACK = 1e-8  # our brackets of sharpdp's Clopper–Pearson bounds (its own widening is 1e-9)

Sampler = Callable[[Any, int, np.random.Generator], Any]
Event = Callable[[Any], Any] | frozenset[Any]


# -- samplers (what the mechanisms release) --------------------------------------------------------


def selector(m: Any) -> Sampler:
    """The vectorised select path: ``size`` draws of the released index (or top-k tuple rows)."""
    return lambda scores, size, rng: m.select(scores, rng, size=size)


def releaser(m: Any, dtype: type) -> Sampler:
    """The vectorised release path: each entry of the array is one independent release."""
    return lambda value, size, rng: m.release(np.full(size, value, dtype=dtype), rng)


def topk_code(row: tuple[int, ...], n_candidates: int) -> int:
    """The top-k tuple (i_1, …, i_k) as the integer Σ_t i_t·n^(k−t): one-to-one, and increasing
    in the lexicographic order of the tuples."""
    code = 0
    for i in row:
        code = code * n_candidates + i
    return code


def coded_selector(m: Any, n_candidates: int) -> Sampler:
    """The vectorised top-k select path, each released row coded by :func:`topk_code`.

    The audit sees the same outcomes (a one-to-one relabelling, in the same order as the rows,
    so its cells, its threshold sets and its bounds are exactly those of the rows); it only spares
    the audit's row-wise ``np.unique`` on millions of rows (seconds per call).
    """
    k = int(m.k)
    weights = np.array([n_candidates ** (k - 1 - t) for t in range(k)], dtype=np.int64)

    def sample(scores: Any, size: int, rng: np.random.Generator) -> Any:
        return np.asarray(m.select(scores, rng, size=size), dtype=np.int64) @ weights

    return sample


def vectorised(event: Event) -> Event:
    """A set of outcomes as a vectorised event: the same membership per output (so the same
    counts and the same audit), without the audit's per-output Python loop over a collection."""
    if callable(event):
        return event
    members = np.array(sorted(event), dtype=np.int64)
    return lambda outputs: np.isin(np.asarray(outputs, dtype=np.int64), members)


# -- independent laws of the events ----------------------------------------------------------------


def mass(law: list[mp.mpf], outcomes: frozenset[int]) -> float:
    return float(mp.fsum(law[i] for i in outcomes))


def topk_mass(law: dict[tuple[int, ...], mp.mpf], outcomes: frozenset[tuple[int, ...]]) -> float:
    return float(mp.fsum(law[t] for t in outcomes))


def grid_at_or_below(cdf: Callable[[mp.mpf], mp.mpf], value: float, t: float, step: float) -> float:
    """P[γ(round(value/γ) + K) ≤ t] for K = round(N/γ), t and value on the grid γℤ.

    The release is ≤ t iff K ≤ (t − value)/γ iff N < t − value + γ/2 (ties have probability 0).
    """
    with mp.workdps(40):
        return float(cdf(mp.mpf(t) - mp.mpf(value) + mp.mpf(step) / 2))


def laplace_cdf(scale: float) -> Callable[[mp.mpf], mp.mpf]:
    b = mp.mpf(scale)
    return lambda z: mp.exp(z / b) / 2 if z < 0 else 1 - mp.exp(-z / b) / 2


def normal_cdf(sigma: float) -> Callable[[mp.mpf], mp.mpf]:
    return lambda z: mp.ncdf(z / mp.mpf(sigma))


def discrete_laplace_at_or_below(scale: float, k: int) -> float:
    """P[Z ≤ k] for P[Z = z] ∝ q^|z|, q = e^{−1/t}: q^{−k}/(1 + q) for k ≤ 0 (geometric sums)."""
    assert k <= 0
    with mp.workdps(40):
        q = mp.exp(-1 / mp.mpf(scale))
        return float(q ** (-k) / (1 + q))


def discrete_gaussian_at_or_below(sigma: float, shift: int, k: int) -> float:
    """P[shift + Z ≤ k] by direct summation (audit_reference.shift_laws, mass outside < 1e-60)."""
    p, _ = shift_laws("gaussian", sigma, shift, shift)
    w = int(mp.ceil(18 * sigma)) + 10
    ys = range(shift - w, shift + w + 1)
    return float(mp.fsum(v for y, v in zip(ys, p, strict=True) if y <= k))


# -- the cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A mechanism, its released sampler, a worst-case neighbouring pair and the event E*.

    ``probabilities()`` gives (P[E*] on x, P[E*] on x′) from an independent reference; E* is
    likelier on x and its log-ratio log((P − δ)/P′) is the pair's ε(δ) (or close to it: ``power``
    leaves room for the gap and for the sampling error).
    """

    claim: sdp.Guarantee
    sampler: Sampler
    x: Any
    x_prime: Any
    n: int
    event: Event
    probabilities: Callable[[], tuple[float, float]]
    power: float
    delta: float = 0.0
    bins: int | None = None
    seed: int = 0


def _em(eps: float, monotonic: bool) -> Case:
    # Ten candidates; one score moves down and nine up (non-monotonic), or nine up (monotonic).
    # The log-ratio of outcome 0 is c(q_0 − q′_0) + log(Z′/Z): 1/2 + log((e^{−1/2} + 9e^{1/2})/10)
    # = 0.9347 (c = ε/2), resp. log((1 + 9e)/10) = 0.9347 (c = ε), of the claim ε = 1.
    m = sdp.Exponential(eps, monotonic=monotonic)
    q = [0.0] * 10
    qp = [0.0] + [1.0] * 9 if monotonic else [-1.0] + [1.0] * 9
    c = eps if monotonic else eps / 2
    e = frozenset({0})
    return Case(
        m, selector(m), q, qp, 1_000_000, e,
        lambda: (mass(em_law(q, c), e), mass(em_law(qp, c), e)), power=0.8,
        seed=11 + monotonic,
    )  # fmt: skip


def _pf(eps: float, monotonic: bool) -> Case:
    # Two candidates make permute-and-flip randomized response: P[0] = 1/2 against e^{−ε}/2, so
    # the pair attains the claim ε exactly. Monotonic: (0, 0) vs (0, Δ); otherwise (0, 0) vs
    # (−Δ, Δ) (c = ε/(2Δ), so candidate 0 is accepted with probability e^{−ε} on x′).
    m = sdp.PermuteAndFlip(eps, monotonic=monotonic)
    q = [0.0, 0.0]
    qp = [0.0, 1.0] if monotonic else [-1.0, 1.0]
    c = eps if monotonic else eps / 2
    e = frozenset({0})
    return Case(
        m, selector(m), q, qp, 200_000, e,
        lambda: (mass(pf_law(q, c), e), mass(pf_law(qp, c), e)), power=0.9, seed=21 + monotonic,
    )  # fmt: skip


def _rnm(noise: str) -> Case:
    # Gumbel noise is the exponential mechanism (here non-monotonic, 10 candidates as in _em);
    # exponential noise is permute-and-flip (monotonic, the tight two-candidate pair); Laplace
    # noise (monotonic, scale Δ/ε): (0,0,0,0) vs (0,1,1,1) has max-divergence 0.947ε (exact
    # audit; 0.59ε with two candidates).
    if noise == "gumbel":
        m = sdp.ReportNoisyMax(1.0, "gumbel")
        q, qp = [0.0] * 10, [-1.0] + [1.0] * 9
        e = frozenset({0})
        return Case(
            m, selector(m), q, qp, 1_000_000, e,
            lambda: (mass(em_law(q, 0.5), e), mass(em_law(qp, 0.5), e)), power=0.8, seed=31,
        )  # fmt: skip
    if noise == "exponential":
        m = sdp.ReportNoisyMax(1.0, "exponential", monotonic=True)
        q, qp = [0.0, 0.0], [0.0, 1.0]
        e = frozenset({0})
        return Case(
            m, selector(m), q, qp, 200_000, e,
            lambda: (mass(pf_law(q, 1.0), e), mass(pf_law(qp, 1.0), e)), power=0.9, seed=32,
        )  # fmt: skip
    m = sdp.ReportNoisyMax(1.0, "laplace", monotonic=True)
    q, qp = [0.0] * 4, [0.0, 1.0, 1.0, 1.0]
    e = frozenset({0})
    return Case(
        m, selector(m), q, qp, 600_000, e,
        lambda: (mass(rnm_laplace_law(q, 1.0), e), mass(rnm_laplace_law(qp, 1.0), e)),
        power=0.8, seed=33,
    )  # fmt: skip


def _topk() -> Case:
    # k = 2 of four candidates, monotonic: (0,0,0,0) vs (0,0,1,1). The ordered pairs of the two
    # unmoved candidates have log-ratio log((2 + 2e)/4) + log((1 + 2e)/3) = 1.383 per round pair,
    # of the claim kε = 2 (more candidates would approach it, with rarer outcomes).
    # Released rows are coded (coded_selector), so the event is the set of the codes of e.
    m = sdp.TopK(2, 1.0, monotonic=True)
    q, qp = [0.0] * 4, [0.0, 0.0, 1.0, 1.0]
    e = frozenset({(0, 1), (1, 0)})
    return Case(
        m, coded_selector(m, 4), q, qp, 600_000, frozenset(topk_code(t, 4) for t in e),
        lambda: (topk_mass(topk_law(q, 1.0, 2), e), topk_mass(topk_law(qp, 1.0, 2), e)),
        power=0.6, seed=41,
    )  # fmt: skip


def _laplace() -> Case:
    # x = 0, x′ = Δ = 1, b = 1 (ε = 1, the grid step γ divides Δ): {y ≤ 0} has probabilities
    # 1 − e^{−γ/2}/2 and e^{−1+γ/2}/2, a log-ratio of ε (up to γ ≈ 1e-9).
    m = sdp.Laplace(1.0)
    step = m.granularity
    assert step is not None
    cdf = laplace_cdf(1.0)
    return Case(
        m, releaser(m, float), 0.0, 1.0, 400_000, lambda y: y <= 0.0,
        lambda: (grid_at_or_below(cdf, 0.0, 0.0, step), grid_at_or_below(cdf, 1.0, 0.0, step)),
        power=0.85, bins=40, seed=51,
    )  # fmt: skip


def _discrete_laplace() -> Case:
    # Scale t = 1, Δ = 1: P[Z ≤ 0] = 1/(1 + q) against P[Z ≤ −1] = q/(1 + q), a ratio of 1/q = e^ε.
    m = sdp.DiscreteLaplace(1)
    return Case(
        m, releaser(m, np.int64), 0, 1, 400_000, lambda y: y <= 0,
        lambda: (discrete_laplace_at_or_below(1, 0), discrete_laplace_at_or_below(1, -1)),
        power=0.85, seed=61,
    )  # fmt: skip


def _discrete_gaussian() -> Case:
    # σ = 2, Δ = 1, δ = 0.01: the likelihood-ratio event {y ≤ −4} attains ε(0.01) = 0.9078
    # (P = 0.0385 against 0.0115; found by scanning thresholds offline).
    m = sdp.DiscreteGaussian(2)
    return Case(
        m, releaser(m, np.int64), 0, 1, 1_000_000, lambda y: y <= -4,
        lambda: (
            discrete_gaussian_at_or_below(2, 0, -4), discrete_gaussian_at_or_below(2, 1, -4)
        ),
        power=0.7, delta=0.01, seed=71,
    )  # fmt: skip


def _gaussian() -> Case:
    # σ = 2, Δ = 1, δ = 0.01: {y ≤ −3.25} (on the grid) is within 1e-4 of the optimal threshold
    # −3.178 for ε(0.01) = 0.9195 (P = 0.0531 against 0.0171). n = 500k (the release costs ~5 µs
    # a draw): the power run's guaranteed floor is 0.715·claim ≥ 0.7 (0.798 at 1M), and the
    # validity run's bound sits ~0.135 below the true ε(0.01) (~0.10 at 1M), so it refutes a
    # release whose ε(0.01) exceeds the claim by ≳ 15% (σ ≲ 1.77; ≳ 11%, σ ≲ 1.82 at 1M).
    m = sdp.Gaussian(2.0)
    step = m.granularity  # type: ignore[attr-defined]
    cdf = normal_cdf(2.0)
    return Case(
        m, releaser(m, float), 0.0, 1.0, 500_000, lambda y: y <= -3.25,
        lambda: (
            grid_at_or_below(cdf, 0.0, -3.25, step), grid_at_or_below(cdf, 1.0, -3.25, step)
        ),
        power=0.7, delta=0.01, bins=40, seed=81,
    )  # fmt: skip


def _randomized_response() -> Case:
    # Binary RR at ε = 1 on true values 0 and 1: P[0] = e/(1 + e) against 1/(1 + e), ratio e^ε.
    m = sdp.RandomizedResponse(1.0)
    e = frozenset({0})
    with mp.workdps(30):
        top, other = float(mp.e / (1 + mp.e)), float(1 / (1 + mp.e))
    return Case(
        m, releaser(m, np.int64), 0, 1, 200_000, e, lambda: (top, other), power=0.9, seed=91,
    )  # fmt: skip


CASES: dict[str, Callable[[], Case]] = {
    "exponential": lambda: _em(1.0, False),
    "exponential-monotonic": lambda: _em(1.0, True),
    "permute-and-flip": lambda: _pf(1.0, False),
    "permute-and-flip-monotonic": lambda: _pf(1.0, True),
    "rnm-gumbel": lambda: _rnm("gumbel"),
    "rnm-exponential": lambda: _rnm("exponential"),
    "rnm-laplace": lambda: _rnm("laplace"),
    "topk": _topk,
    "laplace": _laplace,
    "discrete-laplace": _discrete_laplace,
    "discrete-gaussian": _discrete_gaussian,
}
# Releases a colleague is adding: audited as soon as they exist (never skipped: absent, not listed).
if hasattr(sdp.Gaussian, "release"):
    CASES["gaussian"] = _gaussian
if hasattr(sdp.RandomizedResponse, "release"):
    CASES["randomized-response"] = _randomized_response


# -- independent Clopper–Pearson and binomial quantiles ---------------------------------------------


def cp_lower(k: int, n: int, level: float) -> tuple[float, float]:
    """An interval containing sharpdp's Clopper–Pearson lower bound at count k.

    sharpdp returns q·(1 − 1e-9), q the level-quantile of Beta(k, n − k + 1) from the same scipy
    function (0 for k = 0); the interval [q·(1 − 1e-8), q] contains it.
    """
    if k <= 0:
        return 0.0, 0.0
    q = float(beta.ppf(level, k, n - k + 1))
    return q * (1 - CP_SLACK), q


def cp_upper(k: int, n: int, level: float) -> tuple[float, float]:
    """An interval containing sharpdp's upper bound at count k: 1 − (the lower bound of n − k),
    rounded up one ulp (1 for k = n)."""
    if k >= n:
        return 1.0, 1.0
    q = float(beta.ppf(level, n - k, k + 1))
    return 1.0 - q, min(1.0, 1.0 - q * (1 - CP_SLACK))


def at_least(n: int, p: float, tail: float) -> int:
    """k with P[Bin(n, p) < k] ≤ tail (checked against the computed cdf)."""
    k = int(binom.ppf(tail, n, p))
    while k > 0 and binom.cdf(k - 1, n, p) > tail:
        k -= 1
    return k


def at_most(n: int, p: float, tail: float) -> int:
    """k with P[Bin(n, p) > k] ≤ tail (checked against the computed survival function)."""
    k = int(binom.isf(tail, n, p))
    while k < n and binom.sf(k, n, p) > tail:
        k += 1
    return k


def log_ratio(num: float, den: float) -> float:
    return math.log(num) - math.log(den) if num > 0.0 else -math.inf


def guaranteed_epsilon(case: Case, n_half: int, level: float, tail: float) -> float:
    """The audit's ε lower bound on E* whenever its four counts are within their quantiles.

    Counts: a ~ Bin(n_half, P) (E* on x) and b ~ Bin(n_half, P′) (on x′), in each half.
    On {a ≥ a_lo, b ≤ b_hi} (both halves), the selection prefers the forward order — its bound
    ≥ f_min exceeds the backward one ≤ g_max — and the estimate is ≥ f_min (Clopper–Pearson bounds
    increase with the count). Outside, with probability ≤ 4·tail.
    """
    p, p_prime = case.probabilities()
    a_lo, b_hi = at_least(n_half, p, tail), at_most(n_half, p_prime, tail)
    f_min = log_ratio(
        cp_lower(a_lo, n_half, level)[0] - case.delta, cp_upper(b_hi, n_half, level)[1]
    )
    g_max = log_ratio(
        cp_lower(b_hi, n_half, level)[1] - case.delta, cp_upper(a_lo, n_half, level)[0]
    )
    assert g_max < f_min, "the design does not guarantee the order: raise n"
    return f_min


# -- validity: the default audit never exceeds the claim -------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_sampler_never_exceeds_its_claim(name: str) -> None:
    # False-failure rate ≤ 1e-6 (confidence 1 − 1e-6; see the module docstring).
    case = CASES[name]()
    claimed = case.claim.epsilon(case.delta)
    r = sample(
        case.sampler, case.x, case.x_prime, case.n, confidence=STRICT, delta=case.delta,
        claim=case.claim, bins=case.bins, rng=case.seed,
    )  # fmt: skip
    assert isinstance(r, SampleReport)
    assert r.claimed_epsilon == claimed
    assert r.epsilon_lower <= claimed, str(r)
    assert r.refuted is False


# -- power: the audit of the optimal event finds most of the claim --------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_sampler_audit_finds_most_of_its_claim(name: str) -> None:
    # False-failure rate ≤ 5e-7 (upper assertion) + 5e-7 (lower, computed below) = 1e-6.
    case = CASES[name]()
    claimed = case.claim.epsilon(case.delta)
    n_half = case.n // 2
    level = (1 - POWER_CONFIDENCE) / 2
    floor = guaranteed_epsilon(case, n_half, level, TAIL_BUDGET / 4)
    assert floor >= case.power * claimed, (floor, claimed)  # the design guarantees the threshold
    r = sample(
        case.sampler, case.x, case.x_prime, case.n, confidence=POWER_CONFIDENCE,
        delta=case.delta, claim=case.claim, events=[vectorised(case.event)], rng=case.seed + 1000,
    )  # fmt: skip
    assert isinstance(r, SampleReport)
    assert r.likelier == "x"
    assert r.epsilon_lower <= claimed, str(r)
    assert r.epsilon_lower >= case.power * claimed, str(r)


# -- bounded range ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RangeCase:
    """A bounded-range claim, its sampler, a pair, and events E1 (likelier on x), E2 (on x′)."""

    mechanism: sdp.Guarantee
    claim: sdp.BoundedRange
    sampler: Sampler
    x: Any
    x_prime: Any
    n: int
    high: frozenset[Any]
    low: frozenset[Any]
    probabilities: Callable[[], tuple[tuple[float, float], tuple[float, float]]]
    floor: float  # asserted lower threshold on the spread
    seed: int


def _range_em() -> RangeCase:
    # EM is ε-BR (Rogers–Steinke 2021 Lemma 3): on (0, 0) vs (−1, 1) (c = ε/2) the two outcomes
    # have log-ratios ±ε/2 − const, a spread of exactly ε.
    m = sdp.Exponential(1.0)
    q, qp = [0.0, 0.0], [-1.0, 1.0]

    def probs() -> tuple[tuple[float, float], tuple[float, float]]:
        law, law_p = em_law(q, 0.5), em_law(qp, 0.5)
        return (float(law[0]), float(law_p[0])), (float(law[1]), float(law_p[1]))

    return RangeCase(
        m, m.characterisation(), selector(m), q, qp, 400_000, frozenset({0}), frozenset({1}), probs,
        0.85, 101,
    )  # fmt: skip


def _range_rnm_gumbel() -> RangeCase:
    # Gumbel report-noisy-max is the EM (claim: its characterisation, ε-BR); monotonic, (0,0) vs
    # (0,1): log-ratios log((1 + e)/2) and log((1 + e)/2) − ε, a spread of exactly ε.
    m = sdp.ReportNoisyMax(1.0, "gumbel", monotonic=True)
    q, qp = [0.0, 0.0], [0.0, 1.0]
    claim = m.characterisation()
    assert isinstance(claim, sdp.BoundedRange)

    def probs() -> tuple[tuple[float, float], tuple[float, float]]:
        law, law_p = em_law(q, 1.0), em_law(qp, 1.0)
        return (float(law[0]), float(law_p[0])), (float(law[1]), float(law_p[1]))

    return RangeCase(
        m, claim, selector(m), q, qp, 400_000, frozenset({0}), frozenset({1}), probs, 0.85, 102
    )


def _range_topk() -> RangeCase:
    # Top-2 of four (monotonic, (0,0,0,0) vs (0,0,1,1)): the unmoved pair {(0,1),(1,0)} has
    # log-ratio 1.383 and the moved pair {(2,3),(3,2)} −0.927: a spread of 2.311 > kε = 2, so
    # peeling is *not* kε-BR. sharpdp claims 2kε = 4 (from kε-DP), which the audit must not
    # refute, while it must find more than kε (the floor).
    # Released rows are coded (coded_selector), so the events are sets of codes.
    m = sdp.TopK(2, 1.0, monotonic=True)
    claim = sdp.convert(m, sdp.BoundedRange)
    q, qp = [0.0] * 4, [0.0, 0.0, 1.0, 1.0]
    high, low = frozenset({(0, 1), (1, 0)}), frozenset({(2, 3), (3, 2)})

    def probs() -> tuple[tuple[float, float], tuple[float, float]]:
        law, law_p = topk_law(q, 1.0, 2), topk_law(qp, 1.0, 2)
        return (topk_mass(law, high), topk_mass(law_p, high)), (
            topk_mass(law, low),
            topk_mass(law_p, low),
        )

    return RangeCase(
        m, claim, coded_selector(m, 4), q, qp, 600_000,
        frozenset(topk_code(t, 4) for t in high), frozenset(topk_code(t, 4) for t in low), probs,
        2.0, 103,
    )  # fmt: skip


RANGE_CASES: dict[str, Callable[[], RangeCase]] = {
    "exponential": _range_em,
    "rnm-gumbel": _range_rnm_gumbel,
    "topk": _range_topk,
}


def guaranteed_spread(case: RangeCase, n_half: int, level: float, tail: float) -> float:
    """The audit's spread bound on (E1, E2) when its eight counts are within their quantiles.

    With a_i, b_i the counts of E_i on x and x′: on {a1 ≥ a1_lo, b1 ≤ b1_hi, a2 ≤ a2_hi,
    b2 ≥ b2_lo} in the selection half, E1 is chosen as the high event and E2 as the low one (the
    bounds below separate them), and on the same event in the estimation half the spread is at
    least the returned value. Outside, with probability ≤ 8·tail.
    """
    (p1, p1_prime), (p2, p2_prime) = case.probabilities()
    a1, b1 = at_least(n_half, p1, tail), at_most(n_half, p1_prime, tail)
    a2, b2 = at_most(n_half, p2, tail), at_least(n_half, p2_prime, tail)
    f1_min = log_ratio(cp_lower(a1, n_half, level)[0], cp_upper(b1, n_half, level)[1])
    f2_max = log_ratio(cp_lower(a2, n_half, level)[1], cp_upper(b2, n_half, level)[0])
    g2_min = log_ratio(cp_lower(b2, n_half, level)[0], cp_upper(a2, n_half, level)[1])
    g1_max = log_ratio(cp_lower(b1, n_half, level)[1], cp_upper(a1, n_half, level)[0])
    assert f1_min > f2_max, "the design does not guarantee the high event: raise n"
    assert g2_min > g1_max, "the design does not guarantee the low event: raise n"
    return f1_min + g2_min


@pytest.mark.parametrize("name", list(RANGE_CASES))
def test_bounded_range_claim_is_not_refuted(name: str) -> None:
    # The default audit (threshold sets): false-failure rate ≤ 1e-6 (confidence 1 − 1e-6).
    case = RANGE_CASES[name]()
    r = sample_bounded_range(
        case.sampler, case.x, case.x_prime, case.n, confidence=STRICT, claim=case.claim,
        rng=case.seed,
    )  # fmt: skip
    assert isinstance(r, RangeSampleReport)
    assert r.spread_lower <= case.claim.eta, str(r)
    assert r.refuted is False


@pytest.mark.parametrize("name", list(RANGE_CASES))
def test_bounded_range_audit_finds_the_spread(name: str) -> None:
    # False-failure rate ≤ 5e-7 (upper assertion, confidence 1 − 5e-7) + 5e-7 (lower: eight
    # binomial tails of 6.25e-8, see guaranteed_spread) = 1e-6.
    case = RANGE_CASES[name]()
    n_half = case.n // 2
    level = (1 - POWER_CONFIDENCE) / 4
    assert guaranteed_spread(case, n_half, level, TAIL_BUDGET / 8) >= case.floor
    high, low = vectorised(case.high), vectorised(case.low)
    r = sample_bounded_range(
        case.sampler, case.x, case.x_prime, case.n, confidence=POWER_CONFIDENCE,
        claim=case.claim, events=[high, low], rng=case.seed + 1000,
    )  # fmt: skip
    assert r.event_high is high
    assert r.event_low is low
    assert r.spread_lower <= case.claim.eta, str(r)
    assert r.spread_lower >= case.floor, str(r)
