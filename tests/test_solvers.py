"""The one-dimensional solvers of ``sharpdp._math`` (Brent's root finder and bounded minimiser),
checked against closed forms."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharpdp import _math
from sharpdp.errors import NumericalError


@pytest.mark.parametrize(
    ("g", "lo", "hi", "root"),
    [
        (lambda x: x * x - 2.0, 0.0, 2.0, math.sqrt(2.0)),
        (lambda x: math.cos(x) - x, 0.0, 1.0, 0.7390851332151607),  # the Dottie number
        (lambda x: math.exp(x) - 1e10, 0.0, 100.0, 10.0 * math.log(10.0)),
        (lambda x: (x - 1.0) ** 9, -1.0, 3.0, 1.0),  # a flat, high-order root
        (lambda x: 1.0 if x > 0.3 else -1.0, 0.0, 1.0, 0.3),  # a jump: bisection must take over
        (lambda x: math.log(x) - math.log(3e-200), 1e-200, 1e-199, 3e-200),  # tiny scale
    ],
)
def test_brent_root_finds_known_roots(g, lo: float, hi: float, root: float) -> None:  # type: ignore[no-untyped-def]
    x = _math.brent_root(g, lo, hi, g(lo), g(hi), rtol=1e-14)
    assert abs(x - root) <= 1e-13 * abs(root) or g(x) == 0.0


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.floats(-50.0, 50.0),
    st.floats(0.01, 100.0),
    st.sampled_from([1, 3, 5]),
)
def test_brent_root_on_odd_powers(shift: float, width: float, power: int) -> None:
    """g(x) = (x − r)^p, bracket [r − w, r + 2w]: the root r is found to ~rtol·|r|."""
    r = shift
    x = _math.brent_root(
        lambda x: (x - r) ** power,
        r - width,
        r + 2 * width,
        (-width) ** power,
        (2 * width) ** power,
        xtol=1e-12,  # a root at or near 0 is found to an absolute tolerance
    )
    assert abs(x - r) <= (1e-5 if power > 1 else 1e-12) * max(1.0, abs(r))


def test_brent_root_refuses_a_bracket_without_sign_change() -> None:
    with pytest.raises(NumericalError, match="no sign change"):
        _math.brent_root(lambda x: x * x + 1.0, -1.0, 1.0, 2.0, 2.0)


def test_smallest_valid_smooth_returns_a_checked_point() -> None:
    """log δ(ε) − log δ for δ(ε) = e^{−ε}: the root is ε = −log δ; the answer satisfies g ≤ 0."""
    target = 1e-6

    def g(eps: float) -> float:
        return -eps - math.log(target)

    x = _math.smallest_valid_smooth(g, 0.0, 100.0, rtol=1e-12)
    assert g(x) <= 0.0
    assert x == pytest.approx(-math.log(target), rel=1e-11)


@pytest.mark.parametrize(
    ("f", "lo", "hi", "argmin"),
    [
        (lambda x: (x - math.pi) ** 2, 0.0, 10.0, math.pi),
        (lambda x: math.cosh(x - 1.5) + 0.25 * x, -5.0, 5.0, 1.5 - math.asinh(0.25)),
        (lambda x: x, 2.0, 3.0, 2.0),  # minimum at the boundary
        (lambda x: abs(x - 0.123456789), 0.0, 1.0, 0.123456789),  # a kink
    ],
)
def test_minimize_scalar_finds_known_minima(f, lo: float, hi: float, argmin: float) -> None:  # type: ignore[no-untyped-def]
    x, fx = _math.minimize_scalar(f, lo, hi)
    assert fx == f(x)  # the value is evaluated at the returned point
    assert abs(x - argmin) <= 1e-6 * max(1.0, abs(argmin))
    assert fx <= f(argmin) + 1e-12
