"""Bad input is rejected with sdp.InvalidParameter naming the parameter; results are never NaN.

Domains (from the public API): ε ≥ 0 (inf allowed for guarantees' ε, queries' ε, BR's η, GDP's μ
and zCDP's ρ: "no guarantee"),
δ ∈ [0, 1) for guarantee parameters and δ ∈ [0, 1] for the ``epsilon(delta)`` query, α ∈ [1, ∞],
ρ ≥ 0 finite, ξ ≥ −ρ finite, scale/σ > 0 finite, sensitivity ≥ 0 finite, k ≥ 1 integer,
categories ≥ 2 integer. Booleans, strings and None are never numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

import sharpdp as sdp
from sharpdp import conversions as conv
from stable_ids import stable_id

NAN = math.nan
INF = math.inf
NOT_NUMBERS: list[object] = ["1", None, True, False, 1j, [1.0]]

# (label, constructor of one argument, parameter name, invalid values)
CASES: list[tuple[str, Callable[[object], object], str, list[object]]] = [
    ("PureDP.epsilon", lambda v: sdp.PureDP(v), "epsilon", [NAN, -1.0, -INF, -1e-300]),
    ("ApproxDP.epsilon", lambda v: sdp.ApproxDP(v, 1e-6), "epsilon", [NAN, -0.5, -INF]),
    ("ApproxDP.delta", lambda v: sdp.ApproxDP(1.0, v), "delta", [NAN, -0.1, 1.0, 1.5, INF]),
    ("ZCDP.rho", lambda v: sdp.ZCDP(v), "rho", [NAN, -0.1, -INF]),
    ("ZCDP.xi", lambda v: sdp.ZCDP(0.1, v), "xi", [NAN, INF, -INF, -0.2]),
    ("ApproxZCDP.rho", lambda v: sdp.ApproxZCDP(v, 1e-6), "rho", [NAN, -1.0, -INF]),
    ("ApproxZCDP.delta", lambda v: sdp.ApproxZCDP(0.1, v), "delta", [NAN, -1e-9, 1.0, INF]),
    ("ApproxZCDP.xi", lambda v: sdp.ApproxZCDP(0.1, 1e-6, v), "xi", [NAN, INF, -0.5]),
    ("MCDP.mu", lambda v: sdp.MCDP(v, 1.0), "mu", [NAN, -1.0, INF]),
    ("MCDP.tau", lambda v: sdp.MCDP(1.0, v), "tau", [NAN, -1.0, INF]),
    ("BoundedRange.eta", lambda v: sdp.BoundedRange(v), "eta", [NAN, -1.0, -INF]),
    ("GDP.mu", lambda v: sdp.GDP(v), "mu", [NAN, -1.0, -INF]),
    ("Laplace.scale", lambda v: sdp.Laplace(v), "scale", [NAN, 0.0, -0.0, -1.0, INF]),
    ("Laplace.sensitivity", lambda v: sdp.Laplace(1.0, v), "sensitivity", [NAN, -1.0, INF]),
    ("Gaussian.sigma", lambda v: sdp.Gaussian(v), "sigma", [NAN, 0.0, -1.0, INF]),
    ("Gaussian.sensitivity", lambda v: sdp.Gaussian(1.0, v), "sensitivity", [NAN, -1.0, INF]),
    ("RR.epsilon", lambda v: sdp.RandomizedResponse(v), "epsilon", [NAN, -1.0, INF]),
    (
        "RR.categories",
        lambda v: sdp.RandomizedResponse(1.0, v),
        "categories",
        [1, 0, -3, 2.5, NAN, 2.0],
    ),
    (
        "RR.probabilities",
        lambda v: sdp.RandomizedResponse(1.0, 3).probabilities(v),
        "value",
        [-1, 3, 1.5, NAN],
    ),
    ("group.k", lambda v: sdp.PureDP(1.0).group(v), "k", [0, -1, 1.5, 2.0, NAN, INF]),
    ("epsilon.delta", lambda v: sdp.Gaussian(1.0).epsilon(v), "delta", [NAN, -0.1, 1.5, INF, -INF]),
    ("delta.epsilon", lambda v: sdp.Gaussian(1.0).delta(v), "epsilon", [NAN, -1.0, -INF, -1e-300]),
    (
        "renyi.alpha",
        lambda v: sdp.Gaussian(1.0).renyi(v),
        "alpha",
        [NAN, 0.5, 0.0, -1.0, -INF, 0.999999],
    ),
    (
        "convert.delta",
        lambda v: sdp.convert(sdp.Gaussian(1.0), sdp.ApproxDP, delta=v),
        "delta",
        [NAN, -0.1, 1.0, 2.0, INF],
    ),
    (
        "convert.epsilon",
        lambda v: sdp.convert(sdp.Gaussian(1.0), sdp.ApproxDP, epsilon=v),
        "epsilon",
        [NAN, -1.0, -INF],
    ),
    (
        "zcdp_to_approx_dp.delta",
        lambda v: conv.zcdp_to_approx_dp(sdp.ZCDP(0.1), v),
        "delta",
        [NAN, -0.1, 1.0],
    ),
    (
        "gdp_to_approx_dp.delta",
        lambda v: conv.gdp_to_approx_dp(sdp.GDP(1.0), v),
        "delta",
        [NAN, 1.0, -1.0],
    ),
    ("RDP.orders", lambda v: sdp.RDP([v, 2.0], [0.1, 0.2]), "orders", [NAN, 0.5, -1.0, 0.0]),
    ("RDP.epsilons", lambda v: sdp.RDP([1.5, 2.0], [v, 0.2]), "epsilons", [NAN, -0.1]),
]

BAD = [
    pytest.param(make, name, value, id=f"{label}={value!r}")
    for label, make, name, values in CASES
    for value in [*values, *NOT_NUMBERS]
    # the guarantee's inf is allowed for ε/η/μ/epsilon-query; 2.0 for k is a float, still invalid
]


@pytest.mark.parametrize(("make", "name", "value"), BAD)
def test_invalid_parameter_names_the_parameter(
    make: Callable[[object], object], name: str, value: object
) -> None:
    with pytest.raises(sdp.InvalidParameter, match=re.escape(name)):
        make(value)


def test_invalid_parameter_is_a_value_error_and_sharpdp_error() -> None:
    with pytest.raises(ValueError, match="epsilon"):
        sdp.PureDP(-1.0)
    with pytest.raises(sdp.SharpDPError):
        sdp.PureDP(-1.0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sdp.RDP([1.5, 2.0], [0.1]),
        lambda: sdp.RDP([], []),
        lambda: sdp.RDP("abc", [0.1]),
    ],
    ids=["length-mismatch", "empty", "string"],
)
def test_rdp_shape_errors(make: Callable[[], object]) -> None:
    with pytest.raises(sdp.InvalidParameter, match="orders"):
        make()


def test_rdp_function_must_be_callable_and_return_valid_numbers() -> None:
    with pytest.raises(sdp.InvalidParameter, match="function"):
        sdp.RDP.from_function(3.0)  # type: ignore[arg-type]
    for bad in [NAN, -1.0, "x", None, True]:
        g = sdp.RDP.from_function(lambda a, bad=bad: bad)  # type: ignore[misc, return-value]
        with pytest.raises(sdp.InvalidParameter, match="function"):
            g.renyi(2.0)


def test_vacuous_but_valid_values_are_accepted() -> None:
    # ε = inf is "no guarantee", not an error; −0.0 is 0.0; δ = 1 is a valid query.
    assert sdp.PureDP(INF).epsilon_ == INF
    assert sdp.BoundedRange(INF).eta == INF
    assert sdp.GDP(INF).mu == INF
    assert sdp.ApproxDP(INF, 0.0).epsilon_ == INF
    assert sdp.ZCDP(INF).rho == INF
    assert math.copysign(1.0, sdp.PureDP(-0.0).epsilon_) == 1.0
    assert math.copysign(1.0, sdp.ZCDP(-0.0).rho) == 1.0
    g = sdp.Gaussian(1.0)
    assert g.delta(-0.0) == g.delta(0.0)
    assert g.epsilon(-0.0) == g.epsilon(0.0)
    assert g.epsilon(1.0) == 0.0
    assert g.delta(INF) == 0.0
    assert g.renyi(INF) == INF
    assert sdp.PureDP(1.0).group(np.int64(3)) == sdp.PureDP(3.0)


@pytest.mark.parametrize(
    "value", [np.float64(0.5), np.float32(0.5), np.int64(1), Fraction(1, 2), 1], ids=stable_id
)
def test_numeric_types_are_accepted_and_normalised(value: object) -> None:
    g = sdp.PureDP(value)  # type: ignore[arg-type]
    assert type(g.epsilon_) is float
    assert g.epsilon_ == float(value)  # type: ignore[arg-type]
    assert type(sdp.ZCDP(value).rho) is float  # type: ignore[arg-type]
    assert type(sdp.Gaussian(value).sigma) is float  # type: ignore[arg-type]
    assert type(sdp.Gaussian(1.0).delta(value)) is float  # type: ignore[arg-type]


def test_guarantees_are_frozen() -> None:
    for g in [sdp.PureDP(1.0), sdp.ZCDP(0.1), sdp.Gaussian(1.0), sdp.BoundedRange(1.0)]:
        with pytest.raises((AttributeError, TypeError)):
            g.rho = 5.0  # type: ignore[union-attr]
        with pytest.raises((AttributeError, TypeError)):
            object.__getattribute__(g, "__dict__")  # slotted: no instance dict


# ----------------------------------------------------------------------------------------------
# Never NaN, never out of range, never an exception other than the library's own
# ----------------------------------------------------------------------------------------------

TABLE = [
    sdp.PureDP(0.0),
    sdp.PureDP(1e-300),
    sdp.PureDP(1.0),
    sdp.PureDP(700.0),
    sdp.PureDP(INF),
    sdp.ApproxDP(1.0, 0.0),
    sdp.ApproxDP(1.0, 1e-300),
    sdp.ApproxDP(INF, 0.5),
    sdp.ZCDP(0.0),
    sdp.ZCDP(1e-300),
    sdp.ZCDP(0.1),
    sdp.ZCDP(1e6),
    sdp.ZCDP(0.5, -0.5),
    sdp.ZCDP(INF),
    sdp.ZCDP(0.0, 2.0),
    sdp.ApproxZCDP(0.1, 1e-300),
    sdp.ApproxZCDP(0.1, 0.5, 0.3),
    sdp.MCDP(0.0, 1.0),
    sdp.MCDP(1.0, 1e-300),
    sdp.BoundedRange(0.0),
    sdp.BoundedRange(1e-300),
    sdp.BoundedRange(1.0),
    sdp.BoundedRange(INF),
    sdp.GDP(0.0),
    sdp.GDP(1e-300),
    sdp.GDP(1.0),
    sdp.GDP(1e3),
    sdp.GDP(INF),
    sdp.Laplace(1.0, 0.0),
    sdp.Laplace(1e-300),
    sdp.Laplace(1e300),
    sdp.Gaussian(1.0, 0.0),
    sdp.Gaussian(1e-300),
    sdp.Gaussian(1e300),
    sdp.RandomizedResponse(0.0, 7),
    sdp.RandomizedResponse(700.0, 2),
    sdp.RDP([1.0, 2.0, INF], [0.05, 0.1, 1.0]),
    sdp.RDP([2.0], [INF]),
    sdp.RDP.from_function(lambda a: 0.1 * a if a < INF else INF),
]
EPS_EDGE = [0.0, -0.0, 5e-324, 1e-300, 1e-8, 1.0, 700.0, 1e300, INF]
DELTA_EDGE = [0.0, 5e-324, 1e-300, 1e-8, 0.5, 1.0 - 2.0**-53, 1.0]
ALPHA_EDGE = [1.0, 1.0 + 2.0**-52, 1.0 + 1e-8, 2.0, 1e8, 1e300, INF]


@pytest.mark.parametrize("g", TABLE, ids=stable_id)
def test_never_nan_and_in_range(g: sdp.Guarantee) -> None:
    for e in EPS_EDGE:
        d = g.delta(e)
        assert not math.isnan(d), f"delta({e!r}) is NaN"
        assert 0.0 <= d <= 1.0
    for d in DELTA_EDGE:
        e = g.epsilon(d)
        assert not math.isnan(e), f"epsilon({d!r}) is NaN"
        assert e >= 0.0
    for a in ALPHA_EDGE:
        r = g.renyi(a)
        assert not math.isnan(r), f"renyi({a!r}) is NaN"
        assert r >= 0.0


@pytest.mark.parametrize("value", [Fraction(10**400, 3), 10**400, [1.0, -(10**400)]])
def test_a_value_beyond_the_float_range_is_refused_by_name(value: object) -> None:
    """A Fraction or an int too large for a float (found by the fuzz test: OverflowError)."""
    with pytest.raises(sdp.InvalidParameter, match="finite"):
        sdp.Laplace(1.0, sensitivity=1e128).release(value, rng=0)
    with pytest.raises(sdp.InvalidParameter, match="finite"):
        sdp.Gaussian(1.0).release(value, rng=0)
