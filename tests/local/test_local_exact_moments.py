"""Unbiasedness and exact (co)variances of the local estimators, by exhaustive enumeration.

For a fixed data set v_1..v_n (small n and k), every joint outcome of the n reports is enumerated
with its exact probability (mpmath, from the independent laws of ``local_reference``), each is fed
to ``sdp.local.estimate``, and E[f̂], Cov[f̂] and Var[Σ_S f̂] are summed exactly. They must equal
the true frequencies and the library's closed forms (``variance_at``, ``covariance_at``,
``query_variance_at``). Only the estimator is sharpdp's here; the probabilities and the moments are
computed independently.
"""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np
import pytest
from local_reference import DPS, encode, law, outcomes

import sharpdp as sdp

CASES = [
    # (scheme, epsilon, k, true values)
    ("rr", 0.7, 2, (0, 1, 1)),
    ("rr", 1.3, 3, (2, 2, 0)),
    ("rr", 2.0, 5, (4, 1, 1)),
    ("oue", 0.7, 2, (1, 1)),
    ("oue", 1.1, 3, (0, 2, 2)),
    ("oue", 2.5, 4, (3, 0)),
    ("oue", 0.4, 5, (1, 1)),
    ("hadamard", 0.9, 2, (0, 1, 1)),
    ("hadamard", 1.5, 3, (2, 0, 2)),  # K = 4: rows 1 ⊕ 2 = 3, so Cov(f̂_0, f̂_1) ∝ f_2 > 0
    ("hadamard", 0.6, 4, (2, 3, 3)),
    ("hadamard", 2.2, 5, (0, 2, 4)),  # K = 8
]


def _enumerate(
    scheme: str, eps: float, k: int, values: tuple[int, ...]
) -> tuple[mp.mpf, mp.matrix, mp.matrix]:
    laws = [law(scheme, eps, k, x) for x in values]
    space = outcomes(scheme, k)
    n = len(values)
    with mp.workdps(DPS):
        mean = mp.matrix(k, 1)
        second = mp.matrix(k, k)
        total = mp.mpf(0)
        for combo in itertools.product(space, repeat=n):
            p = mp.fprod(laws[i][o] for i, o in enumerate(combo))
            reports = sdp.local.Reports(scheme, eps, k, encode(scheme, k, list(combo)), n)
            f = sdp.local.estimate(reports, epsilon=eps, categories=k).frequencies
            fm = [mp.mpf(float(x)) for x in f]
            total += p
            for j in range(k):
                mean[j] += p * fm[j]
                for m in range(k):
                    second[j, m] += p * fm[j] * fm[m]
        cov = second - mean * mean.T
    return total, mean, cov


@pytest.mark.parametrize(("scheme", "eps", "k", "values"), CASES)
def test_unbiased_and_exact_covariance(
    scheme: str, eps: float, k: int, values: tuple[int, ...]
) -> None:
    total, mean, cov = _enumerate(scheme, eps, k, values)
    n = len(values)
    truth = np.bincount(values, minlength=k) / n
    assert abs(total - 1) < 1e-30
    for j in range(k):  # E f̂_j = f_j exactly (up to the floats of each f̂)
        assert float(mean[j]) == pytest.approx(truth[j], abs=1e-12)
    est = sdp.local.estimate(
        sdp.local.randomize(list(values), eps, k, scheme=scheme, rng=0), epsilon=eps, categories=k
    )
    want = est.covariance_at(truth)
    got = np.array([[float(cov[j, m]) for m in range(k)] for j in range(k)])
    scale = float(np.max(np.abs(got)))
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12 * scale), (got, want)
    assert np.allclose(np.diag(got), est.variance_at(truth), rtol=1e-9)
    # counting queries: Var Σ_S f̂_j = 1ᵀ_S Cov 1_S, against the closed form
    for size in range(1, k + 1):
        for subset in itertools.combinations(range(k), size):
            enumerated = float(sum(cov[j, m] for j in subset for m in subset))
            closed = est.query_variance_at(list(subset), truth)
            assert closed == pytest.approx(enumerated, rel=1e-9, abs=1e-12 * scale), subset


def test_hadamard_covariance_is_present() -> None:
    """The XOR structure matters: with value 2 present (row 3 = 1 ⊕ 2), f̂_0 and f̂_1 covary."""
    _, _, cov = _enumerate("hadamard", 1.5, 3, (2, 0, 2))
    assert float(cov[0, 1]) > 0.01
