"""Laplace.release on a power-of-two grid: the exact law of the released noise and the accounting.

The released noise in grid units must be K = round(L/γ) for continuous L ~ Laplace(b), whose law is
computed here from the Laplace CDF: P[K = k] = F((k + ½)γ) − F((k − ½)γ). Goodness of fit by a
chi-square test with a fixed seed, false-failure rate ≤ 1e-6.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import sharpdp as sdp
from goodness_of_fit import assert_chi_square

FALSE_FAILURE = 1e-6


def laplace_cdf(x: float, b: float) -> float:
    return 0.5 * math.exp(x / b) if x < 0 else 1.0 - 0.5 * math.exp(-x / b)


@pytest.mark.parametrize(("scale", "step"), [(1.0, 0.25), (3.0, 1.0), (0.5, 2.0**-3)])
def test_released_noise_is_the_rounded_laplace(scale: float, step: float) -> None:
    m = sdp.Laplace(scale, granularity=step)
    n = 300_000
    out = m.release(np.zeros(n), rng=11)
    units = np.rint(out / step).astype(np.int64)
    assert np.array_equal(units * step, out)  # on the grid
    lo, hi = int(units.min()), int(units.max())
    ks = np.arange(lo, hi + 1)
    probs = np.array(
        [laplace_cdf((k + 0.5) * step, scale) - laplace_cdf((k - 0.5) * step, scale) for k in ks]
    )
    probs[0] += laplace_cdf((lo - 0.5) * step, scale)  # left tail into the first bin
    probs[-1] += 1.0 - laplace_cdf((hi + 0.5) * step, scale)  # right tail into the last
    assert_chi_square(units, probs, lo, FALSE_FAILURE)


def test_release_shapes_and_rounding_of_the_input() -> None:
    m = sdp.Laplace(1.0, granularity=1.0)
    x = m.release(3.4, rng=1)
    assert isinstance(x, float)
    assert x == round(x)
    arr = m.release([[1.0, 2.0], [3.0, 4.0]], rng=2)
    assert arr.shape == (2, 2)
    assert arr.dtype == np.float64
    # the same seed releases the same values; the value is rounded before the noise is added
    assert m.release(3.4, rng=1) == m.release(3.0, rng=1)


def test_default_grid_is_fine_and_keeps_the_accounting_exact_for_dyadic_sensitivity() -> None:
    m = sdp.Laplace(2.0, sensitivity=1.0)
    step = m.granularity
    assert step is not None
    assert math.frexp(step)[0] == 0.5
    assert step <= 2.0**-30
    assert m.effective_sensitivity == 1.0
    assert m.epsilon0 == 0.5


@pytest.mark.parametrize("sensitivity", [0.1, 1 / 3, 7.3])
def test_effective_sensitivity_is_the_rounded_query_sensitivity(sensitivity: float) -> None:
    m = sdp.Laplace(1.0, sensitivity=sensitivity)
    step = Fraction(m.granularity)  # type: ignore[arg-type]
    eff = Fraction(m.effective_sensitivity)
    assert eff >= Fraction(sensitivity)
    assert eff - Fraction(sensitivity) < step
    assert (eff / step).denominator == 1  # a whole number of grid steps
    # brute force: neighbouring values x, x + Δ round at most ⌈Δ/γ⌉ steps apart
    coarse = sdp.Laplace(1.0, sensitivity=sensitivity, granularity=2.0**-4)
    g = 2.0**-4
    worst = max(
        abs(round((x + sensitivity) / g) - round(x / g)) for x in np.linspace(-3, 3, 20_001)
    )
    assert worst * g <= coarse.effective_sensitivity


def test_group_privacy_keeps_the_grid() -> None:
    m = sdp.Laplace(1.0, sensitivity=0.1, granularity=2.0**-10)
    g = m.group(3)
    assert isinstance(g, sdp.Laplace)
    assert g.granularity == m.granularity
    assert g.effective_sensitivity == 3 * m.effective_sensitivity


@pytest.mark.parametrize("value", [math.nan, math.inf, "a", [1.0, math.nan], True, 2.0**80])
def test_bad_values_raise(value: object) -> None:
    with pytest.raises(sdp.InvalidParameter):
        sdp.Laplace(1.0).release(value, rng=0)


@pytest.mark.parametrize("granularity", [0.3, -1.0, 0.0, math.nan, 2.0**-60])
def test_bad_granularity_raises(granularity: float) -> None:
    with pytest.raises(sdp.InvalidParameter):
        sdp.Laplace(1.0, granularity=granularity)
