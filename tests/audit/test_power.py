"""The statistical audit detects deliberately broken mechanisms (fast version of
``bench/audit_power.py``, which estimates the detection rates over 100 audits each).

Each case uses 40,000 draws per input (20,000 to choose the event, 20,000 to estimate). Over 100
seeds the lower bound's mean minus the claim is 16.5, 14.6 and 16.1 standard deviations of the
bound (EM, Laplace, PF respectively), with minima 1.58, 1.66 and 1.35 against claims of 1. A
false failure needs a binomial count of the estimation half to deviate from its mean by more than
5 standard deviations (the slack between the true ratio and the claim is a factor ≥ 1.6 in each
case), which by the Chernoff bound has probability < 1e-6.
"""

from __future__ import annotations

import math

import numpy as np

import sharpdp as sdp
from sharpdp.audit import RangeSampleReport, SampleReport, exact, sample

N = 40_000


def test_exponential_mechanism_run_at_twice_epsilon() -> None:
    # EM at 2ε claiming ε (ε = 1): on q = (1, 0, …, 0), q′ = (0, 1, …, 1) with 10 candidates the
    # true max-divergence is 1 + log((1 + 9e)/(e + 9)) = 1.776 > 1.
    broken = sdp.Exponential(2.0)
    q, qp = [1.0] + [0.0] * 9, [0.0] + [1.0] * 9
    truth = exact(broken, q, qp).max_divergence()
    assert math.isclose(truth, 1.0 + math.log((1 + 9 * math.e) / (math.e + 9)), rel_tol=1e-12)
    r = sample(
        lambda x, size, rng: broken.select(x, rng, size=size), q, qp, N, rng=2024,
        claim=sdp.Exponential(1.0),
    )  # fmt: skip
    assert isinstance(r, SampleReport)
    assert r.refuted
    assert 1.0 < r.epsilon_lower <= truth
    assert r.event == (0,)
    assert r.seconds < 60.0


def test_laplace_with_half_the_claimed_scale() -> None:
    broken = sdp.Laplace(0.5)  # claims Laplace(1.0): ε = 1; truly ε = 2
    r = sample(
        lambda x, size, rng: broken.release(np.full(size, x), rng), 0.0, 1.0, N, rng=2024,
        claim=sdp.Laplace(1.0), bins=40,
    )  # fmt: skip
    assert r.refuted
    assert 1.0 < r.epsilon_lower <= 2.0


def test_permute_and_flip_claimed_as_bounded_range() -> None:
    # Report-noisy-max with exponential noise (= permute-and-flip) claimed ε-BR: its spread on
    # (0, 0) vs (0, 1) is ε + ln(2 − e^{−ε}) = 1.490 (Durfee–Rogers 2021,
    # "One-shot DP top-k mechanisms", differentialprivacy.org).
    rnm = sdp.ReportNoisyMax(1.0, noise="exponential", monotonic=True)
    r = sample(
        lambda x, size, rng: rnm.select(x, rng, size=size), [0.0, 0.0], [0.0, 1.0], N, rng=2024,
        claim=sdp.BoundedRange(1.0),
    )  # fmt: skip
    assert isinstance(r, RangeSampleReport)
    assert r.refuted
    assert 1.0 < r.spread_lower <= 1.0 + math.log(2 - math.exp(-1.0))
    assert r.event_high == (0,)
    assert r.event_low == (1,)
    # ... while its true ε-DP claim survives: the pair's max-divergence is exactly ε = 1, and at
    # confidence 1 − 1e-6 the lower bound exceeds it with probability ≤ 1e-6.
    r_dp = sample(
        lambda x, size, rng: rnm.select(x, rng, size=size), [0.0, 0.0], [0.0, 1.0], N,
        rng=2025, claim=rnm, confidence=1 - 1e-6,
    )  # fmt: skip
    assert not r_dp.refuted
