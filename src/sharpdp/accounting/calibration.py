"""Calibration: the least-noise mechanism of a family that meets a privacy target.

``calibrate(sdp.Gaussian, target=sdp.ApproxDP(1.0, 1e-6), sensitivity=1.0)`` searches the family's
noise parameter (``scale``/``sigma``, or ``epsilon`` for selection and randomized response) for the
least noise whose *exact* characterisation meets the target, and verifies the returned mechanism by
re-computing the target from it. The search is a certified bisection
(:func:`sharpdp._math.smallest_valid`): the returned parameter is always one at which the target
was checked to hold, within a relative 1e-12 of the least such value. ``GDP`` and ``ZCDP``
targets, whose check is a whole conversion (0.1–0.9 s each for a GDP, or for the certified zCDP
constant of a selection mechanism), are searched on the value of μ (ρ) instead: the noise is
bracketed within a factor 2 by its binary exponent, then Brent's method finds where μ (ρ) crosses
the target (:func:`sharpdp._math.smallest_valid_smooth`), in about a quarter of the bisection's
conversions; the returned parameter is still one at which μ ≤ the target (ρ ≤ the target) was
checked.

Targets: ``PureDP(ε)`` (ε(0) ≤ ε), ``ApproxDP(ε, δ)`` (δ(ε) ≤ δ, by the mechanism's own profile
or by the composition analyses of a lone release, as an accountant with that budget reads it),
``ZCDP(ρ, ξ)`` (the sharpest zCDP conversion of the mechanism has ρ′ ≤ ρ and ξ′ ≤ ξ, or, with
ξ > 0, its Rényi curve lies under ξ + ρα: searched by bisection then) and
``GDP(μ)``. The module sits above composition for that reading (in the accounting layer).
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sharpdp import _math, _validate
from sharpdp.accounting.composition import compose
from sharpdp.conversions import convert, renyi_under_zcdp_line
from sharpdp.errors import InvalidParameter, NotImplied, NumericalError
from sharpdp.guarantees import GDP, ZCDP, ApproxDP, Guarantee, PureDP
from sharpdp.mechanisms.additive import Gaussian, Laplace
from sharpdp.mechanisms.discrete import DiscreteGaussian, DiscreteLaplace
from sharpdp.mechanisms.randomized_response import RandomizedResponse
from sharpdp.mechanisms.selection import Exponential, PermuteAndFlip, ReportNoisyMax, TopK

__all__ = ["calibrate", "classical_gaussian_sigma", "meets"]

M = TypeVar("M", bound=Guarantee)


# -- what "meeting a target" means, per target type ------------------------------------------------


def _meets_pure(m: Guarantee, t: Guarantee) -> bool:
    assert isinstance(t, PureDP)
    return m.epsilon(0.0) <= t.epsilon_ or compose([(m, 1)]).certifies(t.epsilon_, 0.0)


def _meets_approx(m: Guarantee, t: Guarantee) -> bool:
    """δ(ε) ≤ δ by the mechanism's own profile, or by a lone release's composition analyses,
    the reading budgets take: sharper for a mechanism made of rounds (``TopK``'s own profile is
    its Rényi curve converted, 0.309 at ε = 0.5 for k = 3, ε₀ = 1, where its rounds' exact
    composition gives 0.242)."""
    assert isinstance(t, ApproxDP)
    if m.delta(t.epsilon_) <= t.delta_:
        return True
    return compose([(m, 1)]).certifies(t.epsilon_, t.delta_)


def _meets_zcdp(m: Guarantee, t: Guarantee) -> bool:
    """ρ′ ≤ ρ and ξ′ ≤ ξ for the sharpest zCDP conversion (ρ′, ξ′) of ``m``; or, for a target
    with ξ > 0, its Rényi curve under the target's line
    (:func:`~sharpdp.conversions.renyi_under_zcdp_line`): a conversion
    to one (ρ′, ξ′) pair cannot use ξ's slack (Laplace(1.5) is (ρ = 0.1, ξ = 0.131)-zCDP, while
    its conversion has ρ′ = 0.18 at ξ′ = 0)."""
    assert isinstance(t, ZCDP)
    if _zcdp_rho(m, t) <= t.rho:
        return True
    return t.xi > 0.0 and renyi_under_zcdp_line(m, t.rho, t.xi)


def _gdp_mu(m: Guarantee) -> float:
    """The μ of the sharpest GDP conversion of ``m`` (∞ when none is implied)."""
    try:
        g = convert(m, GDP)
    except NotImplied:
        return math.inf
    assert isinstance(g, GDP)
    return g.mu


def _meets_gdp(m: Guarantee, t: Guarantee) -> bool:
    assert isinstance(t, GDP)
    return _gdp_mu(m) <= t.mu


def _zcdp_rho(m: Guarantee, t: Guarantee) -> float:
    """The ρ of the sharpest zCDP conversion of ``m`` (∞ when none is implied, or when its ξ
    exceeds the target's: such a member never meets ``t``)."""
    assert isinstance(t, ZCDP)
    try:
        z = convert(m, ZCDP)
    except NotImplied:
        return math.inf
    assert isinstance(z, ZCDP)
    return z.rho if z.xi <= t.xi else math.inf


#: The targets searched on a value rather than by bisection: the value of a member (μ, ρ), which
#: meets the target exactly when it is at most the target's own (:data:`_LIMITS`).
_LEVELS: dict[type[Guarantee], Callable[[Guarantee, Guarantee], float]] = {
    GDP: lambda m, t: _gdp_mu(m),
    ZCDP: _zcdp_rho,
}
_LIMITS: dict[type[Guarantee], Callable[[Any], float]] = {
    GDP: lambda t: t.mu,
    ZCDP: lambda t: t.rho,
}


_TARGETS: dict[type[Guarantee], Callable[[Guarantee, Guarantee], bool]] = {
    PureDP: _meets_pure,
    ApproxDP: _meets_approx,
    ZCDP: _meets_zcdp,
    GDP: _meets_gdp,
}


def meets(mechanism: Guarantee, target: Guarantee) -> bool:
    """Whether ``mechanism``'s characterisation certifies ``target`` (see the module docstring)."""
    check = _TARGETS.get(type(target))
    if check is None:
        names = ", ".join(t.__name__ for t in _TARGETS)
        raise InvalidParameter(f"target must be one of {names}, got {target!r}")
    return check(mechanism, target)


# -- the families ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Family:
    parameter: str  # the constructor argument searched
    more_noise_is_larger: bool  # True for scale/sigma, False for epsilon
    uses_sensitivity: bool


_FAMILIES: dict[type[Guarantee], _Family] = {
    Laplace: _Family("scale", True, True),
    Gaussian: _Family("sigma", True, True),
    DiscreteLaplace: _Family("scale", True, True),
    DiscreteGaussian: _Family("sigma", True, True),
    Exponential: _Family("epsilon", False, True),
    PermuteAndFlip: _Family("epsilon", False, True),
    ReportNoisyMax: _Family("epsilon", False, True),
    TopK: _Family("epsilon", False, True),
    RandomizedResponse: _Family("epsilon", False, False),
}


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The classical rule σ = Δ·√(2 ln(1.25/δ))/ε [Dwork–Roth 2014, Thm A.1], valid for ε < 1.

    Looser than the exact calibration (Balle–Wang 2018): offered for comparison and for
    reproducing older analyses.
    """
    e = _validate.positive("epsilon", epsilon)
    d = _validate.probability("delta", delta)
    s = _validate.nonnegative("sensitivity", sensitivity)
    if e >= 1.0:
        raise NotImplied(f"the classical Gaussian rule holds only for epsilon < 1, got {e!r}")
    if d == 0.0:
        raise NotImplied("the Gaussian mechanism is not (ε, 0)-DP")
    return _math.up(s * math.sqrt(2.0 * math.log(1.25 / d)) / e)


def calibrate(
    mechanism: type[M],
    target: Guarantee,
    sensitivity: float = 1.0,
    *,
    method: str = "exact",
    **fixed: Any,
) -> M:
    """The least-noise mechanism of the family ``mechanism`` that meets ``target``.

    Args:
        mechanism: the class, e.g. ``sdp.Gaussian``, ``sdp.Laplace``, ``sdp.DiscreteGaussian``,
            ``sdp.Exponential``, ``sdp.TopK`` (pass ``k=``), ``sdp.RandomizedResponse``.
        target: ``PureDP``, ``ApproxDP``, ``ZCDP`` or ``GDP``.
        sensitivity: Δ of the query (ignored by randomized response).
        method: ``"exact"`` (default: the mechanism's exact characterisation), or
            ``"classical"`` for the Gaussian's 1.25/δ rule (:func:`classical_gaussian_sigma`).
        **fixed: other constructor arguments (``k`` for TopK, ``monotonic``, ``noise``,
            ``categories``...).

    Returns:
        The mechanism, verified to meet the target.

    Raises:
        NotImplied: no member of the family meets the target (e.g. a Gaussian and a pure target).
        InvalidParameter: unknown family, target or method.

    Example:
        >>> import sharpdp as sdp
        >>> round(sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(1.0, 1e-6)).sigma, 6)
        4.224679
    """
    family = _FAMILIES.get(mechanism) if isinstance(mechanism, type) else None
    if family is None:
        names = ", ".join(f.__name__ for f in _FAMILIES)
        raise InvalidParameter(f"mechanism must be one of {names}, got {mechanism!r}")
    meets(PureDP(0.0), target)  # validates the target's type
    # The other constructor arguments: each given one must exist, each required one be given.
    parameters = inspect.signature(mechanism).parameters
    accepted = set(parameters) - {family.parameter, "sensitivity"}
    unknown = sorted(set(fixed) - accepted)
    if unknown:
        raise InvalidParameter(
            f"{mechanism.__name__} takes no argument {unknown[0]!r} (calibrate searches "
            f"{family.parameter!r}; it also accepts {sorted(accepted)})"
        )
    missing = [
        name
        for name in sorted(accepted - set(fixed))
        if parameters[name].default is inspect.Parameter.empty
    ]
    if missing:
        raise InvalidParameter(f"calibrating {mechanism.__name__} needs {missing[0]}=")
    if family.uses_sensitivity:
        fixed["sensitivity"] = _validate.nonnegative("sensitivity", sensitivity)

    def build(value: float) -> M:
        return mechanism(**{family.parameter: value}, **fixed)

    # a bad fixed argument (TopK's k = 0...) is the caller's error: the search below reads
    # InvalidParameter as "outside the family's range" and would answer "no member meets it".
    # Such an argument fails at every value of the searched parameter; one valid at some only
    # (a Gaussian's granularity, at most σ) is not refused here
    refusals: list[InvalidParameter] = []
    for probe in (1.0, 2.0**20, 2.0**-20):
        try:
            build(probe)
            break
        except InvalidParameter as err:
            refusals.append(err)
    else:
        raise refusals[0]

    if not isinstance(method, str) or method not in ("exact", "classical"):
        raise InvalidParameter(f"method must be 'exact' or 'classical', got {method!r}")
    if method == "classical":
        if mechanism is not Gaussian or not isinstance(target, ApproxDP):
            raise InvalidParameter("method='classical' is the Gaussian rule for an ApproxDP target")
        result = build(classical_gaussian_sigma(target.epsilon_, target.delta_, sensitivity))
        return _verified(result, target)

    def ok(value: float) -> bool:
        try:
            return meets(build(value), target)
        except InvalidParameter:  # outside the family's parameter range
            return False

    # (a zCDP target with ξ > 0 is met on the Rényi curve, not on one ρ: searched by bisection,
    # for the families whose curve is bounded, the only ones the curve can help: D_∞ < ∞)
    sloped = isinstance(target, ZCDP) and target.xi > 0.0 and _bounded_family(build)
    level = None if sloped else _LEVELS.get(type(target))

    def least_noise_smooth(to_value: Callable[[float], float]) -> float:
        """The least noise n (scale, σ or 1/ε: μ or ρ decreases in it) whose μ (ρ) ≤ the
        target's, by the smooth search on that value (see the module docstring). Each value is
        computed once."""
        assert level is not None
        seen: dict[float, float] = {}

        def mu_at(noise: float) -> float:
            if noise not in seen:
                try:
                    seen[noise] = level(build(to_value(noise)), target)
                except InvalidParameter:  # outside the family's parameter range
                    seen[noise] = math.inf
            return seen[noise]

        mu = _LIMITS[type(target)](target)
        floor = _search_floor(lambda n: mu_at(n) <= mu)  # (GDP(1e154) was given σ = 2^-40)
        lo, hi = _exponent_bracket(lambda n: mu_at(n) <= mu, floor, 1.0)
        if lo == floor and mu_at(lo) <= mu:
            return lo

        def excess(noise: float) -> float:
            # (μ(noise) − μ_t)/μ_t: its sign is exactly that of μ − μ_t (a float difference of
            # values within a factor 2 is exact), so ≤ 0 is the check itself
            got = mu_at(noise)
            return min((got - mu) / mu, 1e3) if mu > 0 else (0.0 if got <= 0 else 1e3)

        return _math.smallest_valid_smooth(excess, lo, hi, rtol=1e-12, what="calibration")

    if family.more_noise_is_larger:
        # the most noise tried: 2^50 times the sensitivity (a sensitivity of 1e10 needs a scale
        # of 1e16 for ε = 1e-6, and 2^50 alone refused it), within the family's own range
        # (the discrete samplers' scales stop at 2^52)
        top = min(sys.float_info.max, 2.0**50 * max(1.0, fixed.get("sensitivity", 1.0)))
        while top > 2.0**50 and not _builds(build, top):
            top = max(2.0**50, top / 2.0)
        if not ok(top):
            raise _no_member(mechanism, build(top), target, top)
        if level is not None:
            value = least_noise_smooth(lambda n: n)
        else:
            floor = _search_floor(ok)
            # bracketed by the binary exponent first: a scale of 1e106 (sensitivity 1e100) lies
            # past the 2^200 that the bisection's own widening reaches
            lo, hi = _exponent_bracket(ok, floor, 1.0, top) if not ok(floor) else (floor, floor)
            value = _math.smallest_valid(
                ok,
                lo,
                hi,
                rtol=1e-12,
                atol=0.0 if floor < 2.0**-40 else 1e-300,
                what="calibration",
            )
        if isinstance(target, ApproxDP):
            # δ(ε) ≤ δ was certified; ε(δ), the reading budgets and compositions take, is found by
            # its own bisection and may land an ulp or so above ε: widen until both agree (δ's
            # rounding allowance is not monotone in the noise at the 1e-11 level: a step that
            # fixed ε(δ) could break δ(ε) ≤ δ, and calibration then raised NumericalError)
            for _ in range(400):
                m = build(value)
                if m.epsilon(target.delta_) <= target.epsilon_ and meets(m, target):
                    break
                value *= 1.0 + 2.0**-44
    else:
        if not ok(0.0):
            raise NotImplied(f"no {mechanism.__name__} meets {target!r}")
        if ok(2.0**40):
            return _verified(build(2.0**40), target)
        # the largest ε that meets the target: the smallest x = 1/ε, then step ε down if 1/x rounds up
        try:
            if level is not None:
                x = least_noise_smooth(lambda y: 1.0 / y)
            else:
                lo, hi = _exponent_bracket(lambda y: ok(1.0 / y), 2.0**-40, 1.0)
                x = _math.smallest_valid(
                    lambda y: ok(1.0 / y), lo, hi, rtol=1e-12, what="calibration"
                )
        except NumericalError:  # no ε > 0 in the float range meets it (a zero-loss target)
            return _verified(build(0.0), target)
        value = 1.0 / x
        for _ in range(64):
            if ok(value):
                break
            value = math.nextafter(value, 0.0)
    return _verified(build(value), target)


def _bounded_family(build: Callable[[float], Guarantee]) -> bool:
    """Whether the family's members have a finite max-divergence (probed at a member)."""
    for probe in (1.0, 2.0**20, 2.0**-20):
        if _builds(build, probe):
            return math.isfinite(build(probe).renyi(math.inf))
    return False


def _builds(build: Callable[[float], Guarantee], value: float) -> bool:
    """Whether the family has a member at ``value`` of its searched parameter."""
    try:
        build(value)
    except InvalidParameter:
        return False
    return True


def _no_member(
    mechanism: type[Guarantee], most: Guarantee, target: Guarantee, top: float
) -> NotImplied:
    """Why no member of the family meets ``target``, ``most`` being the noisiest one tried."""
    name = mechanism.__name__
    level = _LEVELS.get(type(target))
    if level is not None and math.isinf(level(most, target)):
        try:
            convert(most, type(target))
        except NotImplied:
            return NotImplied(
                f"no {name} meets {target!r}: no {type(target).__name__} guarantee of a {name} "
                "is known (calibrate to an ApproxDP target instead)"
            )
    if target.epsilon(0.0) == 0.0 and target.delta(0.0) == 0.0:
        return NotImplied(
            f"no {name} meets {target!r}: it allows no privacy loss at all, which no finite "
            "noise gives (except to a query of sensitivity 0)"
        )
    if math.isfinite(target.epsilon(0.0)) and math.isinf(most.epsilon(0.0)):
        return NotImplied(
            f"no {name} meets {target!r}: its privacy loss is unbounded at any noise, so it is "
            "(ε, 0)-DP for no ε (give a target with δ > 0)"
        )
    return NotImplied(
        f"no {name} with a noise parameter ≤ {top:g} meets {target!r} (its output grid bounds "
        "its privacy loss below: Δ_eff/noise ≥ 2^-50)"
    )


#: The least positive float (subnormal): the bottom of the least-noise search.
_SMALLEST = math.ulp(0.0)


def _search_floor(valid: Callable[[float], bool]) -> float:
    """The lower end of the least-noise search: 2^-40, or below it while it is still valid (a
    target as loose as ε = 1e308 is met by a scale of 1e-308, and 2^-40 would not be the least
    noise), squared down to the least positive float."""
    floor = 2.0**-40
    while floor > _SMALLEST and valid(floor):
        floor = max(floor * floor, _SMALLEST)
    return floor


def _exponent_bracket(
    valid: Callable[[float], bool], lo: float, hi: float, cap: float = sys.float_info.max
) -> tuple[float, float]:
    """A bracket [lo, hi] with hi ≤ 2·lo and ``valid(hi)`` (``valid(lo)`` false unless lo is the
    given one), for a monotone predicate, in O(log log(x*)) evaluations: square hi (up to
    ``cap``) until valid (x = 1/ε may need to reach 2^1000 for tiny targets), then bisect the
    binary exponent.

    Raises:
        NumericalError: no float x is valid.
    """
    while not valid(hi):
        if hi >= cap:
            raise NumericalError("calibration: no parameter in the float range meets the target")
        lo, hi = hi, min(max(2.0, hi * hi), cap)
    while hi > 2.0 * lo:
        mid = math.sqrt(lo) * math.sqrt(hi)  # the geometric mean, without overflow
        if valid(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def _verified(result: M, target: Guarantee) -> M:
    if not meets(result, target):
        raise NumericalError(f"calibration produced {result!r}, which does not meet {target!r}")
    return result
