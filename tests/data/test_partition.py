"""Noise tails, intervals and the δ of partition selection, against brute-force mpmath sums.

The references enumerate the noise laws term by term at 50 digits (no closed forms shared with the
code under test), including the atom exactly at the threshold (the bug class of OpenDP #2922).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from fractions import Fraction

import mpmath
import numpy as np
import pandas as pd
import pytest

import sharpdp as sdp
from sharpdp.data import _noise, _partition
from stable_ids import stable_id


@pytest.fixture(autouse=True)
def _digits() -> Iterator[None]:
    """50 digits for this file's tests (set inside each test, not at import: a module-level
    setting leaked into every test file collected after this one, on every worker)."""
    with mpmath.workdps(50):
        yield


def _pmf(noise: object, z: int) -> mpmath.mpf:
    """Unnormalised P[Z = z]."""
    if isinstance(noise, sdp.DiscreteLaplace):
        return mpmath.exp(
            -abs(z)
            / mpmath.mpf(Fraction(noise.scale).numerator)
            * Fraction(noise.scale).denominator
        )
    assert isinstance(noise, sdp.DiscreteGaussian)
    s = mpmath.mpf(Fraction(noise.sigma).numerator) / Fraction(noise.sigma).denominator
    return mpmath.exp(-(mpmath.mpf(z) ** 2) / (2 * s * s))


def _span(noise: object) -> int:
    if isinstance(noise, sdp.DiscreteLaplace):
        return int(120 * float(noise.scale)) + 10
    return int(16 * float(noise.sigma)) + 10  # e^{-128}: far below the tolerances here


def tail(noise: object, a: int) -> mpmath.mpf:
    """P[Z ≥ a] by enumeration over |z| ≤ span (the rest is < e^{-100} relative)."""
    n = _span(noise)
    total = mpmath.fsum(_pmf(noise, z) for z in range(-n, n + 1))
    return mpmath.fsum(_pmf(noise, z) for z in range(a, n + 1)) / total


NOISES = [
    sdp.DiscreteLaplace(1),
    sdp.DiscreteLaplace(2.5),
    sdp.DiscreteLaplace(Fraction(1, 3)),
    sdp.DiscreteGaussian(0.7),
    sdp.DiscreteGaussian(3),
    sdp.DiscreteGaussian(12.5),
]


@pytest.mark.parametrize("noise", NOISES, ids=stable_id)
@pytest.mark.parametrize("a", [1, 2, 5, 9])
def test_upper_tail_is_tight_upper_bound(noise: sdp.Guarantee, a: int) -> None:
    exact = tail(noise, a)
    got = _noise.upper_tail(noise, a)  # type: ignore[arg-type]
    if exact < mpmath.mpf("1e-300"):
        assert got > 0.0
        return
    assert got >= exact
    assert got <= exact * (1 + mpmath.mpf("1e-8"))


@pytest.mark.parametrize("noise", NOISES, ids=stable_id)
@pytest.mark.parametrize(("max_rows", "copies"), [(1, 1), (2, 3), (1, 5)])
@pytest.mark.parametrize("delta", [1e-2, 1e-6])
def test_threshold_delta_counts_the_atom_at_tau(
    noise: sdp.Guarantee, max_rows: int, copies: int, delta: float
) -> None:
    tau, d_new = _partition.threshold(noise, max_rows, copies, delta)  # type: ignore[arg-type]

    def exact(t: int) -> mpmath.mpf:  # 1 − (1 − P[Z ≥ t − m])^κ, by enumeration
        return 1 - (1 - tail(noise, t - max_rows)) ** copies

    true = exact(tau)
    assert d_new >= true  # never under-reported
    assert d_new <= true * (1 + mpmath.mpf("1e-8")) + mpmath.mpf("1e-300")
    assert d_new <= delta
    assert exact(tau - 1) > delta  # τ is the least threshold that fits
    # the atom at τ − m is counted: P[Z > τ − m] (the #2922 reading) is strictly smaller
    strict = 1 - (1 - tail(noise, tau - max_rows + 1)) ** copies
    assert strict < true


def test_threshold_rule_releases_keys_exactly_at_tau() -> None:
    # zero noise (discrete Laplace of scale 2^-40: P[Z ≠ 0] < e^{-2^39}); keys with bounded counts
    # 3 (a), 2 (b), 1 (c); τ = 2 must release a and b (the count at τ), not c.
    df = pd.DataFrame({"u": ["x", "y", "z", "x", "y", "w"], "k": ["a", "a", "a", "b", "b", "c"]})
    s = sdp.data.Session(df, "u", sdp.ApproxDP(100.0, 0.5), seed=0)
    q = s.count_by("k", keys=None, privacy=sdp.ApproxDP(1.0, 1e-3), max_groups=2)
    zero = dataclasses.replace(q, noise=sdp.DiscreteLaplace(2.0**-40), tau=2)
    out = zero._release(np.random.default_rng(0)).to_pandas()
    assert dict(zip(out["k"], out["count"], strict=True)) == {"a": 3, "b": 2}


@pytest.mark.parametrize("noise", NOISES, ids=stable_id)
@pytest.mark.parametrize("level", [0.5, 0.9, 0.99])
def test_half_width_is_least_exact(noise: sdp.Guarantee, level: float) -> None:
    w = _noise.half_width(noise, level)  # type: ignore[arg-type]

    def cover(v: int) -> mpmath.mpf:  # P[|Z| ≤ v] = 1 − 2 P[Z ≥ v + 1]
        return 1 - 2 * tail(noise, v + 1)

    assert cover(w) >= level
    if w > 0:
        assert cover(w - 1) < level * (1 + 1e-9)


@pytest.mark.parametrize("noise", NOISES, ids=stable_id)
def test_expected_abs(noise: sdp.Guarantee) -> None:
    n = _span(noise)
    total = mpmath.fsum(_pmf(noise, z) for z in range(-n, n + 1))
    exact = 2 * mpmath.fsum(z * _pmf(noise, z) for z in range(1, n + 1)) / total
    assert _noise.expected_abs(noise) == pytest.approx(float(exact), rel=1e-9)  # type: ignore[arg-type]


def test_approx_target_picks_smaller_expected_error() -> None:
    target = sdp.ApproxDP(1.0, 1e-6)
    few = _noise.calibrate_integer_noise(target, 1, 1).mechanism
    many = _noise.calibrate_integer_noise(target, 1, 50).mechanism
    assert isinstance(few, sdp.DiscreteLaplace)  # one key: Laplace (E|Z| ≈ 0.85 vs ≈ 3)
    assert isinstance(many, sdp.DiscreteGaussian)  # 50 keys: Gaussian (√50 vs 50 scaling)
    assert sdp.compose([(many, 50)]).delta(1.0) <= 1e-6
    # the Laplace alternative for 50 keys has scale 50: E|Z| = 2q/(1 − q²), q = e^{-1/50}
    q = math.exp(-1 / 50)
    assert _noise.expected_abs(many) < 2 * q / (1 - q * q)


def test_pure_and_zcdp_calibration_exact() -> None:
    lap = _noise.calibrate_integer_noise(sdp.PureDP(0.3), 2, 3).mechanism
    assert isinstance(lap, sdp.DiscreteLaplace)
    assert Fraction(3 * 2) / Fraction(lap.scale) <= Fraction(0.3)
    gau = _noise.calibrate_integer_noise(sdp.ZCDP(0.02), 2, 3).mechanism
    assert isinstance(gau, sdp.DiscreteGaussian)
    assert Fraction(3 * 4) / (2 * Fraction(gau.sigma) ** 2) <= Fraction(0.02)


def test_a_target_with_delta_zero_is_its_pure_form_for_unknown_keys() -> None:
    """``ApproxDP(ε, 0)`` was refused over unknown keys ("need delta > 0") while ``PureDP(ε)``
    borrows the selection's δ from the budget: the two are one guarantee, and price alike (the
    workloads' private domain discovery too)."""
    frame = pd.DataFrame({"pid": [i % 40 for i in range(200)], "k": list("abcd") * 50})
    s = sdp.data.Session(frame, "pid", sdp.ApproxDP(10.0, 1e-4))
    pairs = [(sdp.ApproxDP(1.0, 0.0), sdp.PureDP(1.0)), (sdp.ApproxZCDP(0.5, 0.0), sdp.ZCDP(0.5))]
    for zero, pure in pairs:
        got = s.count_by("k", keys=None, privacy=zero).explain()
        want = s.count_by("k", keys=None, privacy=pure).explain()
        assert got.charge == want.charge
    w = sdp.data.marginals(["k"], way=1)
    assert (
        s.workload(w, privacy=sdp.ApproxDP(1.0, 0.0)).explain().charge
        == s.workload(w, privacy=sdp.PureDP(1.0)).explain().charge
    )
    assert s.accountant.spent() == 0.0
