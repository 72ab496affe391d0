"""Statistical checks of the samplers, the estimates and the intervals (fixed seeds).

Each test is deterministic (fixed seed); the false-failure rate stated for each is the probability
that a *correct* implementation fails it under a fresh seed, i.e. how unlucky the pinned seed would
have to be.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import sharpdp as sdp
from sharpdp.audit import FiniteLaw, law_of

SCHEMES = ["rr", "oue", "hadamard"]


def _labels(scheme: str, k: int, reports: sdp.local.Reports) -> list[object]:
    if scheme == "oue":
        bits = np.unpackbits(reports.data, axis=1, count=k)
        return [tuple(row) for row in bits.tolist()]
    return [int(y) for y in reports.data]


@pytest.mark.parametrize(("scheme", "k", "eps"), [
    ("rr", 4, 1.0), ("oue", 3, 0.8), ("hadamard", 5, 1.2), ("hadamard", 3, 3.0),
])
def test_sampler_matches_the_exact_law(scheme: str, k: int, eps: float) -> None:
    """Pearson χ² of 40,000 reports of value x = 1 against the audited law.

    Rejects at χ²'s upper 10⁻⁶ quantile: false-failure rate 10⁻⁶ per case.
    """
    n = 40_000
    r = sdp.local.randomize(np.ones(n, dtype=np.int64), eps, k, scheme=scheme, rng=2024)
    flaw = law_of(sdp.local.Randomizer(scheme, eps, k), 1)
    assert isinstance(flaw, FiniteLaw)
    labels = flaw.labels()
    index = {o: i for i, o in enumerate(labels)}
    observed = np.bincount([index[o] for o in _labels(scheme, k, r)], minlength=len(labels))
    expected = n * np.exp(flaw.log_probabilities)
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    assert chi2 < stats.chi2.isf(1e-6, df=len(labels) - 1), chi2


@pytest.mark.parametrize("scheme", SCHEMES)
def test_large_n_estimate_within_five_sd(scheme: str) -> None:
    """n = 200,000, k = 6: every |f̂_j − f_j| ≤ 5·sd_j with the exact variance at the truth.

    f̂_j is a sum of 200,000 independent bounded terms (normal to within ~10⁻³ by Berry–Esseen);
    P(|Z| > 5) = 5.7·10⁻⁷, so the false-failure rate is below 6 × 5.7·10⁻⁷ ≈ 3.5·10⁻⁶ per scheme.
    """
    k, n, eps = 6, 200_000, 1.0
    truth = np.array([0.4, 0.25, 0.15, 0.1, 0.1, 0.0])
    values = np.repeat(np.arange(k), (truth * n).astype(int))
    est = sdp.local.estimate(
        sdp.local.randomize(values, eps, k, scheme=scheme, rng=7), epsilon=eps, categories=k
    )
    sd = np.sqrt(est.variance_at(truth))
    z = (est.frequencies - truth) / sd
    assert np.all(np.abs(z) < 5.0), z
    # the plug-in variance is close to the exact one at this n (clipped estimates, |Δf| < 0.02)
    assert np.allclose(est.variance, est.variance_at(truth), rtol=0.05)
    # counting query: same 5-sd rule with the exact query variance (false failures < 6·10⁻⁷)
    q = est.query([0, 2, 5])
    q_sd = math.sqrt(est.query_variance_at([0, 2, 5], truth))
    assert abs(q.frequency - 0.55) < 5 * q_sd
    assert q.count == pytest.approx(n * q.frequency)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_interval_coverage(scheme: str) -> None:
    """R = 400 independent data sets of n = 1,000 users (k = 4, ε = 1), 90% intervals.

    For each category, the number of covered repetitions is Binomial(400, c) with c the true
    coverage. Normal intervals (c ≈ 0.90): require ≥ 0.90 − 5·√(0.09/400) = 0.825 (false
    failures ≈ 3·10⁻⁷ per category if c = 0.90; the approximation is good here, each f̂ summing
    1,000 bounded terms). Bernstein intervals (c ≥ 0.90 for every n): same rule, and they must
    be wider than the normal ones. Counting query {0, 1}: the same rules.
    """
    k, n, reps, eps, level = 4, 1_000, 400, 1.0, 0.9
    truth = np.array([0.5, 0.3, 0.2, 0.0])
    values = np.tile(np.repeat(np.arange(k), (truth * n).astype(int)), reps)
    every = sdp.local.randomize(values, eps, k, scheme=scheme, rng=11)
    covered = {"normal": np.zeros(k), "bernstein": np.zeros(k)}
    query_covered = {"normal": 0, "bernstein": 0}
    for r in range(reps):
        part = sdp.local.Reports(scheme, eps, k, every.data[r * n : (r + 1) * n], n)
        est = sdp.local.estimate(part, epsilon=eps, categories=k)
        widths = {}
        for method in covered:
            lo, hi = est.interval(level, method=method)
            covered[method] += (lo <= truth) & (truth <= hi)
            widths[method] = hi - lo
            qlo, qhi = est.query([0, 1]).interval(level, method=method)
            query_covered[method] += qlo <= 0.8 <= qhi
        # Bernstein is never narrower, except where clipping to [0, 1] cuts both
        assert np.all(widths["bernstein"] >= widths["normal"] - 1e-12)
    floor = level - 5 * math.sqrt(level * (1 - level) / reps)
    for method in covered:
        assert np.all(covered[method] / reps >= floor), (method, covered[method] / reps)
        assert query_covered[method] / reps >= floor, (method, query_covered[method])
    assert np.all(covered["bernstein"] >= covered["normal"])


def test_combine_and_batches() -> None:
    a = sdp.local.randomize([0, 1], 1.0, 3, scheme="hadamard", rng=1)
    b = sdp.local.randomize([2], 1.0, 3, scheme="hadamard", rng=2)
    both = sdp.local.combine([a, b])
    assert both.n == 3
    assert np.array_equal(both.data, np.concatenate([a.data, b.data]))
    assert both.bits_per_report == 2  # K = 4
    with pytest.raises(sdp.InvalidParameter, match="cannot combine"):
        sdp.local.combine([a, sdp.local.randomize([0], 2.0, 3, scheme="hadamard", rng=3)])
