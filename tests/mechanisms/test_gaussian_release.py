"""Gaussian.release on a power-of-two grid: the exact law of the released noise and the accounting.

The released noise in grid units must be K = round(N/γ) for continuous N ~ N(0, σ²), whose law is
computed here from the normal CDF: P[K = k] = Φ((k + ½)γ/σ) − Φ((k − ½)γ/σ). Goodness of fit by a
chi-square test with a fixed seed, false-failure rate ≤ 1e-6 per test.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import sharpdp as sdp
from goodness_of_fit import assert_chi_square
from sharpdp.mechanisms._rounded_gaussian import rounded_gaussian

FALSE_FAILURE = 1e-6


def assert_rounded_normal(units: np.ndarray, s: float) -> None:
    """Chi-square test of integer draws against round(N(0, s²)), bins merged to ≥ 20 expected."""
    lo, hi = int(units.min()), int(units.max())
    ks = np.arange(lo, hi + 1)
    probs = stats.norm.cdf((ks + 0.5) / s) - stats.norm.cdf((ks - 0.5) / s)
    probs[0] += stats.norm.cdf((lo - 0.5) / s)  # left tail into the first bin
    probs[-1] += stats.norm.sf((hi + 0.5) / s)  # right tail into the last
    assert_chi_square(units, probs, lo, FALSE_FAILURE)


@pytest.mark.parametrize(("sigma", "step"), [(1.0, 1.0), (1.5, 0.5), (0.3, 2.0**-4)])
def test_released_noise_is_the_rounded_gaussian(sigma: float, step: float) -> None:
    m = sdp.Gaussian(sigma, granularity=step)
    out = m.release(np.zeros(300_000), rng=7)
    units = np.rint(out / step).astype(np.int64)
    assert np.array_equal(units * step, out)  # on the grid
    assert_rounded_normal(units, sigma / step)


@pytest.mark.parametrize(("s", "bits"), [(Fraction(1), 2), (Fraction(5, 2), 3)])
def test_exact_refinement_path_has_the_same_law(s: Fraction, bits: int) -> None:
    # With only a few initial bits most proposals are undecided by the float stage and go
    # through the rational/Decimal refinement: the law must be unchanged.
    units = rounded_gaussian(s, 12_000, np.random.default_rng(3), initial_bits=bits)
    assert_rounded_normal(units, float(s))


@pytest.mark.parametrize("s", [Fraction(1), Fraction(3, 2), Fraction(7), Fraction(2**20)])
def test_the_rejection_bound_of_the_proof(s: Fraction) -> None:
    # g(m, u) = −(m + u)²/(2s²) + m²/(2(s² + s)) ≤ 1/(8s) on ℤ × [−½, ½], with equality
    # approached at |m| = (s + 1)/2, u = −sign(m)/2: checked exactly on a rational grid.
    t = s * s + s
    bound = 1 / (8 * s)
    centre = int((s + 1) / 2)
    ms = {0, 1, 2, centre - 1, centre, centre + 1, centre + 2, 3 * centre + 5}
    worst = Fraction(-(10**9))
    for m in ms:
        for sign in (1, -1):
            for j in range(-8, 9):
                u = Fraction(j, 16)
                g = -((sign * m + u) ** 2) / (2 * s * s) + Fraction(m * m) / (2 * t)
                assert g <= bound
                worst = max(worst, g)
    if ((s + 1) / 2).denominator == 1:  # the maximiser (s + 1)/2 is an integer: attained
        assert worst == bound
    else:
        assert worst < bound


def test_release_shapes_and_rounding_of_the_input() -> None:
    m = sdp.Gaussian(1.0, granularity=1.0)
    x = m.release(3.4, rng=1)
    assert isinstance(x, float)
    assert x == round(x)
    arr = m.release([[1.0, 2.0], [3.0, 4.0]], rng=2)
    assert arr.shape == (2, 2)
    assert arr.dtype == np.float64
    assert m.release(3.4, rng=1) == m.release(3.0, rng=1)  # rounded before the noise is added
    assert m.release(np.zeros((0, 3)), rng=0).shape == (0, 3)


def test_default_grid_keeps_the_accounting_exact_for_dyadic_sensitivity() -> None:
    m = sdp.Gaussian(2.0, sensitivity=1.0)
    step = m.granularity
    assert step is not None
    assert math.frexp(step)[0] == 0.5
    assert step <= 2.0**-30
    assert m.effective_sensitivity == 1.0
    assert m.mu == 0.5
    assert m.rho == 0.125


@pytest.mark.parametrize("sensitivity", [0.1, 1 / 3, 7.3])
def test_accounting_uses_the_rounded_query_sensitivity(sensitivity: float) -> None:
    m = sdp.Gaussian(3.0, sensitivity=sensitivity)
    step = Fraction(m.granularity)  # type: ignore[arg-type]
    eff = Fraction(m.effective_sensitivity)
    assert Fraction(sensitivity) <= eff < Fraction(sensitivity) + step
    assert (eff / step).denominator == 1
    assert Fraction(m.mu) >= eff / Fraction(3.0)  # rounded up, never down
    assert Fraction(m.rho) >= Fraction(m.mu) ** 2 / 2
    # brute force with a coarse grid: neighbouring values round at most ⌈Δ/γ⌉ steps apart
    g = 2.0**-4
    coarse = sdp.Gaussian(1.0, sensitivity=sensitivity, granularity=g)
    worst = max(
        abs(round((x + sensitivity) / g) - round(x / g)) for x in np.linspace(-3, 3, 20_001)
    )
    assert worst * g <= coarse.effective_sensitivity


def test_group_privacy_keeps_the_grid() -> None:
    m = sdp.Gaussian(1.0, sensitivity=0.1, granularity=2.0**-10)
    g = m.group(3)
    assert isinstance(g, sdp.Gaussian)
    assert g.granularity == m.granularity
    assert g.effective_sensitivity == 3 * m.effective_sensitivity


@pytest.mark.parametrize("value", [math.nan, math.inf, "a", [1.0, math.nan], True, 2.0**80])
def test_bad_values_raise(value: object) -> None:
    with pytest.raises(sdp.InvalidParameter):
        sdp.Gaussian(1.0).release(value, rng=0)


@pytest.mark.parametrize("granularity", [0.3, -1.0, 0.0, math.nan, 2.0**-60, 2.0])
def test_bad_granularity_raises(granularity: float) -> None:
    with pytest.raises(sdp.InvalidParameter):
        sdp.Gaussian(1.0, granularity=granularity)


def test_rounded_gaussian_rejects_a_step_above_sigma() -> None:
    with pytest.raises(sdp.InvalidParameter):
        rounded_gaussian(Fraction(1, 2), 3, np.random.default_rng(0))
