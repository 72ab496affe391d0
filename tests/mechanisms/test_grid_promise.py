"""The default release grid's promise, against exact rational arithmetic: Δ_eff/Δ − 1 ≤ 2⁻³⁰ holds
whenever the noise scale s ≤ 2^(⌊log₂ Δ⌋ + 20), and beyond it only Δ_eff − Δ < γ < 2⁻⁴⁹·s
(:mod:`sharpdp.mechanisms._grid`)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sharpdp as sdp
from sharpdp.mechanisms import _grid

PROMISE = Fraction(1, 2**30)


def floor_log2(x: Fraction) -> int:
    """⌊log₂ x⌋ of a positive rational, by exact comparisons."""
    n = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** n > x:
        n -= 1
    while Fraction(2) ** (n + 1) <= x:
        n += 1
    return n


def in_range(scale: float, sensitivity: float) -> bool:
    """s ≤ 2^(⌊log₂ Δ⌋ + 20): where the relative promise is guaranteed."""
    return Fraction(scale) <= Fraction(2) ** (floor_log2(Fraction(sensitivity)) + 20)


def overshoot(m: sdp.Gaussian | sdp.Laplace) -> Fraction:
    """Δ_eff/Δ − 1, with Δ_eff = γ⌈Δ/γ⌉ recomputed exactly (and checked against the mechanism)."""
    step = Fraction(m.granularity)  # type: ignore[arg-type]
    delta = Fraction(m.sensitivity)
    eff = math.ceil(delta / step) * step
    assert Fraction(m.effective_sensitivity) == eff  # a whole number of steps: exact in floats
    return eff / delta - 1


def test_the_issue_cases_are_beyond_the_range_and_say_so() -> None:
    g = sdp.Gaussian(1e12, sensitivity=0.3)
    assert not in_range(1e12, 0.3)
    assert g.granularity == 2.0**-10  # 2^(⌈log₂ 1e12⌉ − 50) = 2^(40 − 50)
    assert g.effective_sensitivity == 308 / 1024 == 0.30078125
    assert overshoot(g) > PROMISE
    assert Fraction(g.effective_sensitivity) - Fraction(0.3) < Fraction(1e12) / 2**49
    big = sdp.Gaussian(1e16)
    assert big.granularity == 16.0  # 2^(⌈log₂ 1e16⌉ − 50) = 2^(54 − 50)
    assert big.effective_sensitivity == 16.0


# Δ = ¼(1 + 2⁻³¹): ⌊log₂ Δ⌋ = −2, so the range ends at s = 2¹⁸. At s = 2¹⁸, γ = 2⁻³² and
# Δ/γ = 2³⁰ + ½, overshoot ½γ/Δ ≈ 2⁻³¹; just above, γ = 2⁻³¹ and Δ/γ = 2²⁹ + ¼, overshoot
# ¾γ/Δ ≈ 1.5·2⁻³⁰.
EDGE_DELTA = 0.25 + 2.0**-33
EDGE_SCALE = 2.0**18


@pytest.mark.parametrize("family", [sdp.Gaussian, sdp.Laplace])
def test_both_sides_of_the_boundary(family: type[sdp.Gaussian] | type[sdp.Laplace]) -> None:
    inside = family(EDGE_SCALE, sensitivity=EDGE_DELTA)
    assert in_range(EDGE_SCALE, EDGE_DELTA)
    assert inside.granularity == 2.0**-32
    assert overshoot(inside) <= PROMISE
    just_above = math.nextafter(EDGE_SCALE, math.inf)
    outside = family(just_above, sensitivity=EDGE_DELTA)
    assert not in_range(just_above, EDGE_DELTA)
    assert outside.granularity == 2.0**-31
    assert overshoot(outside) > PROMISE
    assert overshoot(outside) == Fraction(3, 4) * Fraction(2.0**-31) / Fraction(EDGE_DELTA)


def test_power_of_two_boundaries_are_exact() -> None:
    # math.log2 rounds 2²⁰(1 + 2⁻⁵²) to 20; the grid must still keep s/γ ≤ 2⁵⁰, so that the
    # automatic step is one the constructor accepts when passed explicitly
    s = 2.0**20 * (1 + 2.0**-52)
    g = sdp.Gaussian(s)
    assert Fraction(s) / Fraction(g.granularity) <= 2**50  # type: ignore[arg-type]
    assert sdp.Gaussian(s, granularity=g.granularity) == g
    below = math.nextafter(16.0, 0.0)  # ⌊log₂⌋ = 3, though math.log2 rounds it to 4.0
    assert sdp.Laplace(1e3, sensitivity=below).granularity == 2.0**-27


magnitudes = st.floats(-70.0, 70.0).map(lambda x: 2.0**x)


@given(
    scale=magnitudes, sensitivity=magnitudes, family=st.sampled_from([sdp.Gaussian, sdp.Laplace])
)
def test_the_promise_holds_exactly_in_the_stated_range(
    scale: float, sensitivity: float, family: type[sdp.Gaussian] | type[sdp.Laplace]
) -> None:
    m = family(scale, sensitivity=sensitivity)
    step = Fraction(m.granularity)  # type: ignore[arg-type]
    s = Fraction(scale)
    assert math.frexp(m.granularity)[0] == 0.5  # type: ignore[arg-type]  # a power of two
    assert 2**30 <= s / step <= 2**50  # resolved to 30 bits; within the samplers' range
    assert 0 <= overshoot(m) * Fraction(sensitivity) < step  # Δ ≤ Δ_eff < Δ + γ
    if in_range(scale, sensitivity):
        assert overshoot(m) <= PROMISE
    else:
        assert step < s / 2**49
        assert step > PROMISE * Fraction(sensitivity)


def test_rounding_to_the_grid_moves_halves_up() -> None:
    """Halves round up (numpy's rint sends them to the even neighbour): 0.5 and 1.5, one apart,
    round one apart (1, 2), not two (0, 2), which would double the Laplace's ε for Δ = γ."""
    units, _ = _grid.to_grid([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, -3.0], 1.0)
    assert units.tolist() == [1, 2, 3, 0, -1, 0, -3]


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-(2.0**40), 2.0**40, allow_nan=False).map(lambda v: math.floor(v * 2) / 2),
    st.integers(-(2**20), 2**20),
    st.integers(-40, 10),
)
def test_rounding_commutes_with_whole_steps(y: float, shift: int, exponent: int) -> None:
    """round((y + k)γ / γ) = round(yγ/γ) + k for every integer k, halves included: the rounded
    query moves by exactly k steps when the query moves by kγ, so Δ_eff = γ⌈Δ/γ⌉ holds."""
    gamma = 2.0**exponent
    (a, b), _ = _grid.to_grid([y * gamma, (y + shift) * gamma], gamma)
    assert b - a == shift
