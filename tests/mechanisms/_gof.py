"""Chi-square goodness of fit shared by the new mechanism tests (false failure ≤ 1e-6 per call)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import stats

FALSE_FAILURE = 1e-6


def assert_law(samples: Sequence[object], law: dict[object, float]) -> None:
    """Pearson's chi-square of hashable ``samples`` against ``law``; bins of expected count < 20
    are merged; the critical value is ``chi2.isf(1e-6, dof)``, so a correct sampler fails with
    probability ≤ 1e-6 (seeds are fixed, so each test is deterministic)."""
    n = len(samples)
    counts = Counter(samples)
    assert set(counts) <= {o for o, p in law.items() if p > 0}, "an impossible outcome was drawn"
    observed, expected = [], []
    rest_o, rest_e = 0, 0.0
    for outcome, p in law.items():
        if p * n >= 20:
            observed.append(counts.get(outcome, 0))
            expected.append(p * n)
        else:
            rest_o += counts.get(outcome, 0)
            rest_e += p * n
    if rest_e > 0:
        observed.append(rest_o)
        expected.append(rest_e)
    o, e = np.array(observed, dtype=float), np.array(expected)
    stat = float(((o - e) ** 2 / e).sum())
    dof = len(e) - 1
    assert dof >= 1
    critical = stats.chi2.isf(FALSE_FAILURE, dof)
    assert stat < critical, f"chi2 = {stat:.1f} >= {critical:.1f} (dof {dof})"
