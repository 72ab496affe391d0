"""Chi-square goodness of fit of integer draws against an exact law (shared by the release tests)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import stats


def assert_chi_square(
    units: npt.NDArray[np.int64],
    probability: npt.NDArray[np.float64],
    lo: int,
    false_failure: float,
) -> None:
    """Assert draws ``units`` fit the law whose mass on lo, lo+1, … is ``probability``.

    The first and last entries of ``probability`` must already include the tails beyond them.
    Neighbouring bins are merged until each expects at least 20 draws; the test fails with
    probability about ``false_failure`` when the law is right.
    """
    n = units.size
    counts = np.bincount(units - lo, minlength=probability.size)
    obs, exp, acc_o, acc_e = [], [], 0, 0.0
    for c, p in zip(counts, probability, strict=True):
        acc_o += int(c)
        acc_e += float(p) * n
        if acc_e >= 20:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o, acc_e = 0, 0.0
    obs[-1] += acc_o
    exp[-1] += acc_e
    o, e = np.array(obs, float), np.array(exp)
    stat = float(((o - e) ** 2 / e).sum())
    critical = stats.chi2.isf(false_failure, len(e) - 1)
    assert stat < critical, f"chi2 = {stat:.1f} >= {critical:.1f} (dof {len(e) - 1})"
