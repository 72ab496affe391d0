"""Sharp conversions between privacy notions.

Each conversion is a pure function named ``source_to_target`` whose docstring cites its theorem and
says which way it errs. :func:`convert` dispatches through a registry keyed by (source type, target
type), walking the source's MRO (so mechanisms inherit the generic routes of :class:`Guarantee`),
evaluates every default route that applies and returns the sharpest result. ``method=`` forces one
named route; :func:`routes` lists them, and :func:`explain` evaluates them all: each route, its
theorem and value, and the winner (the CLI prints it).

Conversions to (ε, δ)-DP need one of ``delta=`` or ``epsilon=`` and use the guarantee's own
``epsilon``/``delta`` (which are already the minimum over all valid analyses).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar, cast

from sharpdp import _divergences, _format, _math, _tails, _validate
from sharpdp._explain import Explanation, Row
from sharpdp.errors import InvalidParameter, NoExplicitBound, NotImplied, SharpDPError
from sharpdp.guarantees import (
    GDP,
    MCDP,
    RDP,
    ZCDP,
    ApproxDP,
    ApproxZCDP,
    BoundedRange,
    Guarantee,
    PureDP,
)

__all__ = [
    "ApproxRoute",
    "Route",
    "RouteRow",
    "approx_dp_to_approx_zcdp",
    "approx_routes",
    "approx_zcdp_to_zcdp",
    "bounded_range_to_pure_dp",
    "bounded_range_to_rdp",
    "bounded_range_to_zcdp",
    "convert",
    "explain",
    "gdp_to_approx_dp",
    "gdp_to_zcdp",
    "guarantee_to_approx_dp",
    "guarantee_to_pure_dp",
    "guarantee_to_rdp",
    "guarantee_to_zcdp_certified",
    "mcdp_to_zcdp",
    "pure_dp_to_bounded_range",
    "pure_dp_to_gdp",
    "pure_dp_to_zcdp",
    "pure_dp_to_zcdp_bs16",
    "pure_dp_to_zcdp_xi",
    "rdp_to_approx_dp",
    "register",
    "renyi_under_zcdp_line",
    "routes",
    "zcdp_to_approx_dp",
    "zcdp_to_approx_dp_bs16",
    "zcdp_to_mcdp",
    "zcdp_to_rdp",
]

G = TypeVar("G", bound=Guarantee)
T = TypeVar("T", bound=Guarantee)


@dataclass(frozen=True, slots=True)
class Route:
    """One registered conversion: ``function(source) -> target``.

    Attributes:
        name: the route's short name (what ``method=`` takes).
        source: the source type (applies to its subclasses too).
        target: the target type.
        function: the conversion.
        theorem: the result it implements, with its reference.
        default: whether :func:`convert` tries it when no ``method`` is given. Non-default routes
            are classical or differently-shaped bounds kept for comparison.
        tight: the result is attained by some mechanism satisfying the source guarantee, so no
            other route can be sharper; :func:`convert` stops at the first tight route that applies.
        rival: the function also takes ``rival=``, the sharpest result of the routes tried before
            it (or ``None``), and raises :class:`NotImplied` as soon as it knows it cannot be
            sharper (a costly route's early stop; :func:`explain` runs it in full).
    """

    name: str
    source: type[Guarantee]
    target: type[Guarantee]
    function: Callable[..., Guarantee]
    theorem: str
    default: bool = True
    tight: bool = False
    rival: bool = False


_REGISTRY: dict[tuple[type[Guarantee], type[Guarantee]], list[Route]] = {}


def register(
    source: type[G],
    target: type[T],
    *,
    name: str,
    theorem: str,
    default: bool = True,
    tight: bool = False,
    rival: bool = False,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator registering ``function(source) -> target`` as a conversion route (with
    ``rival=True``: ``function(source, rival=None)``, see :class:`Route`)."""

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        _REGISTRY.setdefault((source, target), []).append(
            Route(name, source, target, function, theorem, default, tight, rival)
        )
        return function

    return decorate


def routes(source: Guarantee, target: type[Guarantee]) -> list[Route]:
    """Every registered route that applies to ``source`` (most specific source type first)."""
    found: list[Route] = []
    for klass in type(source).__mro__:
        found.extend(_REGISTRY.get((klass, target), []))
    return found


def _sharpness(g: Guarantee) -> tuple[float, ...]:
    """Ordering key among results of one target type: smaller is sharper."""
    key: dict[type, Callable[[Any], tuple[float, ...]]] = {
        PureDP: lambda x: (x.epsilon_,),
        ZCDP: lambda x: (x.rho, x.xi),
        ApproxZCDP: lambda x: (x.delta_, x.rho, x.xi),
        BoundedRange: lambda x: (x.eta,),
        GDP: lambda x: (x.mu,),
        MCDP: lambda x: (x.tau, x.mu),
    }
    fn = key.get(type(g))
    return fn(g) if fn is not None else (0.0,)


@dataclass(frozen=True)
class RouteRow(Row):
    """A row of :func:`explain`: a route, its value, and the guarantee it returned (if any)."""

    route: Route | ApproxRoute | None = field(default=None, compare=False)
    result: Guarantee | None = field(default=None, compare=False)


#: The value :func:`explain` reports for each target type: (quantity, its value in a result).
_MAIN_VALUE: dict[type[Guarantee], tuple[str, Callable[[Any], float]]] = {
    PureDP: ("epsilon", lambda g: g.epsilon_),
    ApproxDP: ("epsilon", lambda g: g.epsilon_),
    ZCDP: ("rho", lambda g: g.rho),
    ApproxZCDP: ("rho", lambda g: g.rho),
    BoundedRange: ("eta", lambda g: g.eta),
    GDP: ("mu", lambda g: g.mu),
    MCDP: ("tau", lambda g: g.tau),
}


def _remark(g: Guarantee) -> str:
    """The parameters of a result that its main value does not show (bounds: rounded up)."""
    parts = []
    if isinstance(g, ZCDP | ApproxZCDP) and g.xi != 0.0:
        parts.append(f"xi={_format.upper(g.xi)}")
    if isinstance(g, ApproxZCDP):
        parts.append(f"delta={_format.upper(g.delta_)}")
    if isinstance(g, MCDP):
        parts.append(f"mu={_format.upper(g.mu)}")
    return ", ".join(parts)


def explain(
    source: Guarantee,
    target: type[Guarantee],
    delta: float | None = None,
    *,
    alpha: float = 2.0,
) -> Explanation:
    """Every conversion route from ``source`` to ``target``: its theorem, its value, the winner.

    One row per route registered for the source's type and its bases (:func:`routes`), in the
    order :func:`convert` tries them; a route that does not apply shows why. The value is the
    target's main parameter: ε for ``PureDP``, ρ for ``ZCDP``/``ApproxZCDP`` (ξ and δ in the
    note when present), η for ``BoundedRange``, μ for ``GDP``, τ for ``MCDP``, D_α at the order
    ``alpha`` for ``RDP``, and ε at ``delta`` for ``ApproxDP``. The winner (``*`` in
    ``str(...)``) is the smallest value among the routes :func:`convert` tries by default; the
    others are shown, unranked, with the ``method=`` that forces them. Each row's ``result`` is
    the guarantee the route returned.

    Args:
        source: a guarantee or mechanism.
        target: the guarantee type.
        delta: for ``ApproxDP`` targets (required then), the δ at which ε is reported.
        alpha: for ``RDP`` targets, the order at which each curve is reported.

    Returns:
        An :class:`~sharpdp._explain.Explanation` whose rows are :class:`RouteRow`.

    Raises:
        InvalidParameter: bad arguments (``delta`` missing for, or given to a target other than,
            ``ApproxDP``).

    Examples:
        >>> import sharpdp as sdp
        >>> ex = sdp.conversions.explain(sdp.PureDP(1.0), sdp.ZCDP)
        >>> ex.winner.name, round(ex.winner.value, 6)  # ε·tanh(ε/2)
        ('steinke24-thm5', 0.462117)
    """
    if not isinstance(source, Guarantee):
        raise InvalidParameter(f"source must be a sharpdp guarantee or mechanism, got {source!r}")
    if not (isinstance(target, type) and issubclass(target, Guarantee)):
        raise InvalidParameter(f"target must be a guarantee type such as sdp.ZCDP, got {target!r}")
    if target is ApproxDP:
        if delta is None:
            raise InvalidParameter(
                "explaining a conversion to ApproxDP needs delta= (ε is reported at that δ)"
            )
        d = _validate.probability("delta", delta)
        rows = [_approx_row(route, source, d) for route in approx_routes(source)]
        title = f"{source!r} → ApproxDP: epsilon at δ = {d:g}"
        return Explanation("epsilon", d, tuple(rows), title)
    if delta is not None:
        raise InvalidParameter("delta= applies only to ApproxDP targets")
    if target is RDP:
        a = _validate.order("alpha", alpha)
        quantity: str = "renyi"
        value: Callable[[Any], float] = lambda g: g.renyi(a)  # noqa: E731
        title = f"{source!r} → RDP: D_α at α = {a:g}"
    else:
        quantity, value = _MAIN_VALUE.get(target, ("value", lambda g: math.nan))
        title = f"{source!r} → {target.__name__}: {quantity}"
    out = []
    for route in routes(source, target):
        unranked = "" if route.default else f"not tried by default; method={route.name!r}"
        try:
            result = route.function(source)
            v = value(result)
        except SharpDPError as err:
            out.append(RouteRow(route.name, route.theorem, None, str(err), False, route))
            continue
        note = "; ".join(x for x in (_remark(result), unranked) if x)
        out.append(RouteRow(route.name, route.theorem, v, note, route.default, route, result))
    return Explanation(quantity, None, tuple(out), title)


def _approx_row(route: ApproxRoute, source: Guarantee, delta: float) -> RouteRow:
    try:
        result = route.function(source, delta)
    except SharpDPError as err:
        return RouteRow(route.name, route.theorem, None, str(err), False, route)
    return RouteRow(route.name, route.theorem, result.epsilon_, "", True, route, result)


# --- (ε, δ) routes: functions of (source, δ), listed by explain; convert uses the source's own ε(δ)


@dataclass(frozen=True, slots=True)
class ApproxRoute:
    """A conversion to (ε, δ)-DP at a given δ: ``function(source, delta) -> ApproxDP``.

    :func:`convert` with an ``ApproxDP`` target answers with the source's own ``epsilon(delta)``
    (the ``own-profile`` route, already the minimum over its analyses); the others are listed by
    :func:`explain` to show what each classical route would give.
    """

    name: str
    source: type[Guarantee]
    function: Callable[[Any, float], ApproxDP]
    theorem: str


_APPROX_REGISTRY: dict[type[Guarantee], list[ApproxRoute]] = {}


def _register_approx(
    source: type[G], *, name: str, theorem: str
) -> Callable[[Callable[[G, float], ApproxDP]], Callable[[G, float], ApproxDP]]:
    def decorate(function: Callable[[G, float], ApproxDP]) -> Callable[[G, float], ApproxDP]:
        _APPROX_REGISTRY.setdefault(source, []).append(ApproxRoute(name, source, function, theorem))
        return function

    return decorate


def approx_routes(source: Guarantee) -> list[ApproxRoute]:
    """Every (ε, δ) route that applies to ``source`` (most specific source type first)."""
    found: list[ApproxRoute] = []
    for klass in type(source).__mro__:
        found.extend(_APPROX_REGISTRY.get(klass, []))
    return found


def convert(
    source: Guarantee,
    target: type[T],
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    method: str | None = None,
) -> T:
    """The sharpest known guarantee of type ``target`` implied by ``source``.

    Args:
        source: a guarantee or mechanism.
        target: the guarantee type wanted (``PureDP``, ``ApproxDP``, ``ZCDP``, ``RDP``, ``GDP``,
            ``BoundedRange``, ``ApproxZCDP``, ``MCDP``).
        delta: for ``ApproxDP`` targets, the δ at which to report ε.
        epsilon: for ``ApproxDP`` targets, the ε at which to report δ (instead of ``delta``).
        method: the name of one route to use instead of the sharpest (see :func:`routes`).

    Returns:
        An instance of ``target``.

    Raises:
        NotImplied: no guarantee of that type follows (with the reason).
        InvalidParameter: bad arguments (e.g. ``ApproxDP`` without ``delta``/``epsilon``).

    Examples:
        >>> import sharpdp as sdp
        >>> sdp.convert(sdp.PureDP(1.0), sdp.ZCDP).rho  # ε·tanh(ε/2), not ε²/2
        0.462117
    """
    if not isinstance(source, Guarantee):
        raise InvalidParameter(f"source must be a sharpdp guarantee or mechanism, got {source!r}")
    if not (isinstance(target, type) and issubclass(target, Guarantee)):
        raise InvalidParameter(f"target must be a guarantee type such as sdp.ZCDP, got {target!r}")
    if target is ApproxDP:
        return cast(T, _to_approx_dp(source, delta, epsilon))
    if delta is not None or epsilon is not None:
        raise InvalidParameter("delta= and epsilon= apply only to ApproxDP targets")
    if type(source) is target and method is None:
        return source  # the identity conversion loses nothing
    candidates = routes(source, target)
    if method is not None:
        chosen = [r for r in candidates if r.name == method]
        if not chosen:
            names = ", ".join(sorted({r.name for r in candidates})) or "none"
            raise InvalidParameter(
                f"method={method!r} is not a route from {type(source).__name__} to "
                f"{target.__name__}; available: {names}"
            )
        return cast(T, chosen[0].function(source))
    results: list[Guarantee] = []
    reasons: list[str] = []
    errors: list[NotImplied] = []
    for route in candidates:
        if not route.default:
            continue
        try:
            if route.rival:
                best = min(results, key=_sharpness) if results else None
                result = route.function(source, rival=best)
            else:
                result = route.function(source)
        except CannotBeatRival:
            continue
        except NotImplied as err:
            reasons.append(f"{route.name}: {err}")
            errors.append(err)
            continue
        if route.tight:
            return cast(T, result)
        results.append(result)
    if not results:
        why = reasons[0] if reasons else "no conversion route is known"
        # Implied-but-not-explicit is reported as such only when no route says "impossible".
        kind = (
            NoExplicitBound
            if errors and all(isinstance(e, NoExplicitBound) for e in errors)
            else NotImplied
        )
        raise kind(f"{source!r} implies no {target.__name__} guarantee ({why})")
    return cast(T, min(results, key=_sharpness))


def _to_approx_dp(source: Guarantee, delta: float | None, epsilon: float | None) -> ApproxDP:
    if (delta is None) == (epsilon is None):
        raise InvalidParameter("converting to ApproxDP needs exactly one of delta= or epsilon=")
    if delta is not None:
        d = _validate.probability("delta", delta)
        eps = source.epsilon(d)
        if math.isinf(eps):
            raise NotImplied(f"{source!r} certifies no finite epsilon at delta={d!r}")
        return ApproxDP(eps, d)
    e = _validate.nonnegative("epsilon", epsilon)
    d = source.delta(e)
    if d >= 1.0:
        raise NotImplied(f"{source!r} certifies no delta < 1 at epsilon={e!r}")
    return ApproxDP(e, d)


# --- pure DP -------------------------------------------------------------------------------------


@register(
    PureDP,
    ZCDP,
    name="steinke24-thm5",
    theorem="Steinke 2024 Thm 5: ε-DP ⇒ ε·tanh(ε/2)-zCDP (tight)",
    tight=True,
)
def pure_dp_to_zcdp(g: PureDP) -> ZCDP:
    """ε-DP ⇒ ρ-zCDP with ρ = ε·tanh(ε/2) = ε(e^ε − 1)/(e^ε + 1).

    [Steinke 2024, "Tight RDP & zCDP bounds from pure DP", Thm 5.] Tight: randomized response
    attains it. Never larger than BS16's ε²/2.
    """
    rho = _math.up(g.epsilon_ * math.tanh(0.5 * g.epsilon_))
    # ε·tanh(ε/2) ≈ ε²/2 underflows for ε < 1e-162: a positive ρ is never reported as 0
    return ZCDP(5e-324 if rho == 0.0 and g.epsilon_ > 0.0 else rho)


@register(
    PureDP,
    ZCDP,
    name="bs16-prop1.4",
    theorem="Bun–Steinke 2016 Prop 1.4: ε-DP ⇒ ε²/2-zCDP (classical)",
    default=False,
)
def pure_dp_to_zcdp_bs16(g: PureDP) -> ZCDP:
    """ε-DP ⇒ ε²/2-zCDP [Bun–Steinke 2016, Prop 1.4/3.3]. Valid, loose (kept for comparison)."""
    return ZCDP(0.5 * g.epsilon_ * g.epsilon_)


@register(
    PureDP,
    ZCDP,
    name="bs16-lemma3.2",
    theorem="Bun–Steinke 2016 Lemma 3.2: ε-DP ⇔ (ε, 0)-zCDP",
    default=False,
)
def pure_dp_to_zcdp_xi(g: PureDP) -> ZCDP:
    """ε-DP ⇔ (ξ = ε, ρ = 0)-zCDP [Bun–Steinke 2016, Lemma 3.2]. Exact (an equivalence)."""
    return ZCDP(0.0, g.epsilon_)


@register(
    PureDP,
    BoundedRange,
    name="rs21-lemma2",
    theorem="Rogers–Steinke 2021 Lemma 2: ε-DP ⇒ 2ε-BR",
    tight=True,
)
def pure_dp_to_bounded_range(g: PureDP) -> BoundedRange:
    """ε-DP ⇒ 2ε-BR: the loss lies in [−ε, ε] [Rogers–Steinke 2021, Lemma 2]. Tight (RR)."""
    return BoundedRange(2.0 * g.epsilon_)


@register(
    PureDP,
    GDP,
    name="pure-dp-tradeoff",
    theorem="ε-DP ⇒ μ-GDP, μ = 2Φ⁻¹(e^ε/(1+e^ε)) (Dong–Roth–Su 2019 trade-off functions)",
    tight=True,
)
@register(
    Guarantee,
    GDP,
    name="via-pure-dp",
    theorem="max-divergence ε, then ε-DP ⇒ μ-GDP with μ = 2Φ⁻¹(e^ε/(1+e^ε))",
)
def pure_dp_to_gdp(g: Guarantee) -> GDP:
    """ε-DP ⇒ μ-GDP with μ = 2Φ^{-1}(e^ε/(1 + e^ε)) (tight).

    The trade-off curve of ε-DP [Dong–Roth–Su 2019, Prop 2.5 with δ = 0] is piecewise linear
    through (0, 1), (1/(1+e^ε), 1/(1+e^ε)) and (1, 0); the convex G_μ lies below it iff it lies
    below the corner: Φ(Φ^{-1}(e^ε/(1+e^ε)) − μ) ≤ 1/(1+e^ε). Computed as μ·(1 + 4ulp) to err upwards.
    """
    eps = g.renyi(math.inf)
    if math.isinf(eps):
        raise NotImplied(f"{g!r} implies no pure-DP bound, hence no GDP bound by this route")
    if eps == 0.0:
        return GDP(0.0)
    if eps < 1e-8:
        # μ = 2√2·erfinv(tanh(ε/2)) ≤ √(π/2)·ε·(1 + ε²/4): tanh x ≤ x, and erfinv's series
        # (√π/2)(y + πy³/12 + …) is within a factor 1 + y² of its first term for y ≤ 0.1. In
        # rationals, rounded up: e^ε rounds to 1 below ε ≈ 1e-16, and μ came out 0 (no loss).
        c = Fraction(math.sqrt(math.pi / 2.0)) * (1 + Fraction(1, 2**50))
        return GDP(_math.float_up(c * Fraction(eps) * (1 + Fraction(1, 2**52))))
    if eps < 1.0:
        # Φ^{-1}(e^ε/(1+e^ε)) = √2·erfinv(tanh(ε/2)), with no 1 + e^ε to round away ε
        from scipy import special

        mu = 2.0 * math.sqrt(2.0) * float(special.erfinv(math.tanh(0.5 * eps)))
        return GDP(mu * (1.0 + 2.0**-44))
    # Φ^{-1}(e^ε/(1+e^ε)) = −Φ^{-1}(1/(1+e^ε)); the latter is accurate for large ε.
    mu = -2.0 * _math.ndtri(1.0 / (1.0 + math.exp(eps))) if eps < 700 else math.inf
    return GDP(mu * (1.0 + 2.0**-44))  # (the same pad as below 1: μ stays monotone in ε)


#: Most grid points of :func:`profile_to_gdp` (each costs one evaluation of the source's profile).
_GDP_GRID_POINTS = 4096


@register(
    Guarantee,
    GDP,
    name="profile-certificate",
    theorem=(
        "Dong–Roth–Su 2019 Cor 2.13/Prop 2.12: μ-GDP ⇔ (ε, δ_μ(ε))-DP for every ε ≥ 0, checked "
        "on a grid of [0, D∞] between monotone profiles"
    ),
)
def profile_to_gdp(g: Guarantee) -> GDP:
    """The least μ (to a grid's resolution) whose Gaussian profile lies above ``g``'s.

    A mechanism is μ-GDP iff it is (ε, δ_μ(ε))-DP for every ε ≥ 0 [Dong–Roth–Su 2019, Prop 2.12
    with the symmetric G_μ, Cor 2.13]. On a grid 0 = ε_0 < … < ε_N = D∞(g) (the max-divergence,
    beyond which δ_g = 0), with δ̄_i an upper bound of δ_g(ε_i) — the (upper-bound) profile
    ``g.delta`` or, where smaller, its Rényi bound (:func:`_log_profile`) — each interval
    [ε_i, ε_{i+1}] is certified by either of two sufficient conditions:

    1. δ̄_i ≤ δ_μ(ε_{i+1}): both profiles decrease, so δ_g(ε) ≤ δ̄_i ≤ δ_μ(ε_{i+1}) ≤ δ_μ(ε).
    2. The chord beneath the tangent. As functions of x = e^ε, privacy profiles are convex (a
       supremum over events S of P(S) − x·Q(S)): every mechanism meeting g lies below the chord
       through (x_i, δ̄_i) and (x_{i+1}, δ̄_{i+1}), and δ_μ lies above its tangent at x_{i+1},
       whose slope is −Φ(−μ/2 − ε_{i+1}/μ). Both are straight lines, so the chord is below the
       tangent on the interval iff it is at both ends: δ̄_{i+1} ≤ δ_μ(ε_{i+1}) and
       δ̄_i ≤ δ_μ(ε_{i+1}) + Φ(−μ/2 − ε_{i+1}/μ)(e^{ε_{i+1}} − e^{ε_i}).

    Condition 1 leaves a slack of first order in the spacing, condition 2 of second order, so
    a few hundred points reach what thousands did (and each point costs an evaluation of
    ``g.delta``: a composition's takes milliseconds). Every term is checked in logs with δ_μ
    and the slope as rigorous lower bounds (:func:`~sharpdp._divergences.gaussian_log_delta_lower`,
    :func:`~sharpdp._divergences.gaussian_log_slope_lower`) and the gap e^{ε_{i+1}} − e^{ε_i}
    rounded down. The least μ passing on each interval is found by bisection (always ending at
    a μ that passed), the intervals needing more than the grid points' own μ are split
    eightfold until the largest is within 2⁻³⁰ of it or the grid holds :data:`_GDP_GRID_POINTS`
    points, and the check is made once more, at the μ reported, over the whole grid.

    Where ``g`` offers cheap bounds (:meth:`~sharpdp.Guarantee.delta_bounds`: a composition's,
    from a few inversion plans or PLD grids for all points at once), the grid takes them first,
    and ``g.delta`` is asked only at the points of the intervals (and of the points) whose μ is
    within :data:`_SETTLE` of the largest, again until the largest have sharp ends. Every value
    used is a valid upper bound, so the certificate is unchanged, and the μ reported is that of
    an interval with sharp ends (measured: 10 Laplace mechanisms 3.9 → 1.6 s, 3 Laplace and 2
    exponential mechanisms 3.8 → 0.6 s, the same μ to ±5e-6 relative, within the composition's
    own accuracy).

    Valid for every source with a finite max-divergence; it errs upwards by the grid's resolution
    (measured within 1e-10 relative of the least μ for the Laplace mechanism and k-ary
    randomized response, 5e-10 for 20 randomized responses composed) and, where the profile's
    floats bottom out, by the Rényi bound's slack (at most +5e-5 over the least μ for 10⁴
    randomized responses of 0.01, +0.8% for 10⁶ of 0.001). For the Laplace mechanism with
    ε0 = Δ/b = 1, μ = 1.0300640 (the least μ, binding at ε = 0, is 1.030064) where the route
    through ε-DP gives 1.2320. A profile whose δ(0) lies within ~10⁻¹⁴ of 1 cannot be certified
    in floats (the lower bound of δ_μ(0) stays that far below 1): the route raises and others
    answer (ε-DP's μ, up to 1.4× the least one, e.g. 24.75 for the Laplace mechanism with
    ε0 = 80, whose least μ is 17.34).
    """
    import numpy as np

    top = g.renyi(math.inf)
    if math.isinf(top):
        raise NotImplied(f"{g!r} has an unbounded privacy loss: no GDP bound by its profile")
    if top == 0.0:
        return GDP(0.0)
    # ε-DP's μ passes the exact check; past ε = 700, 2√(2(ε + 1)) exceeds it (Φ(−t) ≤ e^{−t²/2})
    ceiling = 2.0 * min(pure_dp_to_gdp(PureDP(top)).mu, 2.0 * math.sqrt(2.0 * (top + 1.0)))
    lower = _divergences.gaussian_log_delta_lower
    slope = _divergences.gaussian_log_slope_lower
    sharp_log_delta, log_profile = _log_profile(g, top)

    def passes(mu: Any, left: Any, right: Any, left_d: Any, right_d: Any) -> Any:
        """Whether μ's Gaussian profile lies above g's on each interval [left, right], given
        upper bounds of log δ_g at both ends: either δ_g(left) ≤ δ_μ(right) (both profiles
        decrease), or g's chord in x = e^ε lies under δ_μ's tangent at ``right`` at both ends
        (both profiles are convex in x: the chord is above δ_g, the tangent below δ_μ)."""
        at_right = lower(mu, right)
        below_right = at_right >= left_d
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = left - right  # < 0
            log_gap = right + np.log(-np.expm1(d))
            log_gap = log_gap - _U4 * 2.0 * (1.0 + np.abs(right) + np.abs(log_gap))
            tangent = np.logaddexp(at_right, slope(mu, right) + log_gap)
            tangent = tangent - _U4 * 2.0 * (1.0 + np.abs(tangent))
        chord_under = (tangent >= left_d) & (at_right >= right_d)
        return below_right | (chord_under & (left < right))

    def needs(left: Any, right: Any, left_d: Any, right_d: Any) -> Any:
        """Per interval [left, right]: the least μ (to 2⁻⁴⁰ of ``ceiling``) that
        :func:`passes` (vectorised bisection; the result is always one that passed)."""
        lo, hi = np.zeros(left.shape), np.full(left.shape, ceiling)
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            ok = passes(mid, left, right, left_d, right_d)
            lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
        return np.where(passes(hi, left, right, left_d, right_d), hi, np.inf)

    def first_pass(points: Any) -> tuple[Any, Any]:
        """Upper bounds of log δ_g at ``points``, and whether each is ``g.delta``'s own."""
        values, is_sharp = log_profile(points)
        return values, np.full(points.shape, is_sharp)

    def settle(eps: Any, deltas: Any, sharp: Any, need: Any, own: Any) -> float:
        """Fill in the intervals' μ (``need``) and the grid points' own μ (``own``) where NaN,
        in place, and return the floor (the largest ``own``) once every point bearing on the
        largest μ of an interval or of a point holds ``g.delta``'s value. A cheap bound is
        valid but may be looser: where it could decide the answer, the sharp value replaces it
        (every point within :data:`_SETTLE` of either largest, then again until both largest
        are sharp: a loose bound is replaced only once it is the largest, so few are). So the
        μ reported is that of an interval with sharp ends: no more than the all-sharp grid would
        give for that interval."""
        while True:
            todo_i = np.flatnonzero(np.isnan(need))
            need[todo_i] = needs(eps[todo_i], eps[todo_i + 1], deltas[todo_i], deltas[todo_i + 1])
            todo_p = np.flatnonzero(np.isnan(own))
            own[todo_p] = needs(eps[todo_p], eps[todo_p], deltas[todo_p], deltas[todo_p])
            close = own >= float(own.max()) * (1.0 - _SETTLE)
            near = need >= float(need.max()) * (1.0 - _SETTLE)
            close[:-1] |= near
            close[1:] |= near
            todo = np.flatnonzero(close & ~sharp)
            if todo.size == 0:
                return float(own.max())
            deltas[todo] = np.minimum(deltas[todo], sharp_log_delta(eps[todo]))
            sharp[todo] = True
            own[todo] = np.nan
            need[todo[todo < need.size]] = np.nan
            need[todo[todo > 0] - 1] = np.nan

    eps = np.linspace(0.0, top, 257)
    deltas, sharp = first_pass(eps)
    need, own = np.full(eps.size - 1, np.nan), np.full(eps.size, np.nan)
    # Refine: μ(ε) at the grid points themselves (no interval slack) estimates the answer from
    # below; the intervals needing more than that estimate are split eightfold, until the
    # certified μ is within 2⁻³⁰ of it or the grid is full.
    floor = settle(eps, deltas, sharp, need, own)
    while float(need.max()) > floor * (1.0 + 2.0**-30):
        order = np.argsort(-need, kind="stable")
        over = order[need[order] > floor][: (_GDP_GRID_POINTS - eps.size) // 7]
        if over.size == 0:
            break
        split = np.zeros(need.size, dtype=bool)
        split[over] = True
        steps = np.arange(1, 8) / 8.0
        inner = (eps[:-1, None] + steps * (eps[1:] - eps[:-1])[:, None])[split]
        inner_d, inner_sharp = first_pass(inner.ravel())
        unknown = np.full(inner.size, np.nan)
        # rebuild the grid: each split interval's left end is followed by its seven inner
        # points (and its μ by the eight pieces', unknown yet)
        keep = np.ones(need.size, dtype=int)
        keep[split] = 8
        at = np.flatnonzero(np.isin(np.repeat(np.arange(need.size), keep), over))
        grid = []
        for values, inside, first in (
            (eps, inner.ravel(), eps[:-1]),
            (deltas, inner_d, deltas[:-1]),
            (sharp, inner_sharp, sharp[:-1]),
            (own, unknown, own[:-1]),
            (np.append(need, np.nan), unknown, np.full(need.size, np.nan)),
        ):
            pieces = np.repeat(values[:-1], keep)
            rows = np.concatenate([first[split, None], inside.reshape(inner.shape)], axis=1)
            pieces[at] = rows.ravel()
            grid.append(np.concatenate([pieces, values[-1:]]))
        eps, deltas, sharp, own, need = grid
        need = need[:-1]
        floor = settle(eps, deltas, sharp, need, own)
    # The certificate itself, at the one μ reported, over the whole grid. The lower bound of
    # δ_μ is not exactly monotone in μ at the level of its rounding (μ ~ 1e-7: the check at
    # each interval's own μ passed, the whole-grid one at their maximum did not), so the μ is
    # raised by a few relative steps of 2⁻³⁰·8ʲ until it passes.
    mu = float(need.max())
    for step in (0.0, *(2.0**-30 * 8.0**j for j in range(8))):
        candidate = min(mu * (1.0 + step), ceiling)
        if math.isfinite(candidate) and np.all(
            passes(candidate, eps[:-1], eps[1:], deltas[:-1], deltas[1:])
        ):
            return GDP(candidate)
    raise NotImplied(f"the grid check of {g!r}'s profile against μ-GDP failed")


#: How close (relative) to the largest μ a grid point's cheap bound must be for
#: :func:`profile_to_gdp` to ask ``g.delta`` there.
_SETTLE = 1e-8
#: Four units in the last place (relative), the rounding allowance of :func:`_log_profile`.
_U4 = 4.0 * 2.0**-52


def _log_profile(
    g: Guarantee, top: float
) -> tuple[Callable[[Any], Any], Callable[[Any], tuple[Any, bool]]]:
    """ε ↦ an upper bound on log δ_g(ε) (vectorised), two ways: sharp, from ``g.delta`` point by
    point, and a first pass, from ``g.delta_bounds`` where ``g`` offers them (else the sharp
    values), with a flag saying which it gave. Each is the least of that and the Rényi bound of
    Canonne–Kamath–Steinke 2020 (Prop 12), log δ ≤ (α−1)(D_α − ε + log(1 − 1/α)) − log α at
    each α of a grid, with D_α = ``g.renyi(α)`` ≤ D∞.

    The profile's floats end near 1e-308 (a composition reports a δ it cannot resolve as the
    smallest one, never 0), while δ_μ at ε near a large D∞ is far smaller: there, the float
    profile alone forced μ up (2.65 for 10,000 randomized responses of ε = 0.01, whose μ is
    about 1; infinite for 10⁶ of ε = 0.001), and the Rényi bound, computed in logs, does not.
    Each value is raised by its rounding: 4 ulps of the sizes of the parts it is computed from.
    """
    import numpy as np

    alphas = 1.0 + np.geomspace(1e-3, 1e6, 96)
    taus = np.array([min(g.renyi(float(a)), top) for a in alphas])
    finite = np.isfinite(taus)
    alphas, taus = alphas[finite], taus[finite]

    def with_renyi(eps: Any, deltas: Any) -> Any:
        with np.errstate(divide="ignore"):
            direct = np.log(np.asarray(deltas, dtype=np.float64)).reshape(eps.shape)
        # (log's rounding, raised; a δ of 0 stays −inf)
        direct = direct + np.where(np.isfinite(direct), _U4 * (np.abs(direct) + 1.0), 0.0)
        if alphas.size == 0:
            return direct
        shrink = np.log1p(-1.0 / alphas)
        # (overflow to +inf is a vacuous bound, as it should be: huge D_α at huge orders)
        with np.errstate(over="ignore", invalid="ignore"):
            gap = taus - eps[..., None] + shrink
            bounds = (alphas - 1.0) * gap - np.log(alphas)
            # each term's rounding: a few ulps of its parts' sizes, (α − 1) times those of the gap
            sizes = (alphas - 1.0) * (np.abs(taus) + np.abs(eps[..., None]) + np.abs(shrink))
            bounds = bounds + _U4 * (sizes + np.abs(bounds) + np.log(alphas) + 1.0)
            bounds = np.where(np.isnan(bounds), np.inf, bounds)  # (inf − inf: no bound)
        return np.minimum(direct, bounds.min(axis=-1))

    def sharp(eps: Any) -> Any:
        eps = np.asarray(eps, dtype=np.float64)
        return with_renyi(eps, [g.delta(float(e)) for e in eps.ravel()])

    def first(eps: Any) -> tuple[Any, bool]:
        eps = np.asarray(eps, dtype=np.float64)
        bounds = g.delta_bounds(eps)
        if bounds is None:
            return sharp(eps), True
        return with_renyi(eps, np.minimum(1.0, np.asarray(bounds, dtype=np.float64))), False

    return sharp, first


# --- generic routes (every guarantee, through its own methods) -----------------------------------


@register(
    Guarantee,
    PureDP,
    name="max-divergence",
    theorem="D_∞ = ε: ε-DP is D_∞ ≤ ε (BS16 Lemma 3.2)",
    tight=True,
)
def guarantee_to_pure_dp(g: Guarantee) -> PureDP:
    """The max-divergence bound D_∞ ≤ ε is exactly ε-DP. Exact given the source's D_∞ bound."""
    eps = g.renyi(math.inf)
    if math.isinf(eps):
        raise NotImplied(
            f"{g!r} implies no finite pure-DP epsilon (its max-divergence is unbounded)"
        )
    return PureDP(eps)


@register(
    Guarantee,
    RDP,
    name="renyi-curve",
    theorem="the source's own Rényi bounds (exact curve where known)",
    tight=True,
)
def guarantee_to_rdp(g: Guarantee) -> RDP:
    """The source's Rényi curve α ↦ g.renyi(α) as an RDP guarantee (no loss)."""
    if math.isinf(g.renyi(1.0)):
        raise NotImplied(
            f"{g!r} implies no Rényi-DP bound at any order (e.g. δ > 0 allows infinite loss)"
        )
    return RDP.from_function(g.renyi)


@register(Guarantee, ZCDP, name="via-pure-dp", theorem="max-divergence ε, then Steinke 2024 Thm 5")
def _guarantee_to_zcdp_via_pure(g: Guarantee) -> ZCDP:
    return pure_dp_to_zcdp(guarantee_to_pure_dp(g))


@register(
    Guarantee,
    BoundedRange,
    name="via-pure-dp",
    theorem="max-divergence ε, then ε-DP ⇒ 2ε-BR (Rogers–Steinke 2021 Lemma 2)",
)
def _guarantee_to_br_via_pure(g: Guarantee) -> BoundedRange:
    return pure_dp_to_bounded_range(guarantee_to_pure_dp(g))


@register(
    Guarantee,
    MCDP,
    name="bounded-loss",
    theorem="E[Z] = KL ≤ D_1, and Hoeffding's lemma on a loss confined to an interval of width w "
    "(τ = w/2; w = 2ε for ε-DP, η for η-BR), as in Dwork–Rothblum 2016 Thm 3.5",
)
def guarantee_to_mcdp(g: Guarantee) -> MCDP:
    """(D_1, w/2)-mCDP for a guarantee whose privacy loss Z is confined to an interval of width w.

    mCDP [Dwork–Rothblum 2016; BS16 Def 4.1] asks E[Z] ≤ μ and Z − E[Z] τ-subgaussian under every
    neighbouring pair. E[Z] is the KL divergence D_1, bounded by the source's own D_1 (ε·tanh(ε/2)
    for ε-DP, attained by randomized response; DR16 Thm 3.5 had ε(e^ε − 1)/2). A variable
    confined to an interval of width w is (w/2)-subgaussian around its mean (Hoeffding's lemma).
    The width is 2ε for ε-DP (Z ∈ [−ε, ε]) and η for η-bounded range (Z ∈ [t − η, t]): the
    narrower of the two applies. Valid, not tight in τ (randomized response is
    √(2ε·tanh(ε/2))-subgaussian). Without a finite D_∞ no width exists: then mCDP follows only
    with BS16 Lemma 4.3's unspecified constant when the source is zCDP
    (:class:`NoExplicitBound`), and not at all otherwise (e.g. δ > 0).
    """
    eps = g.renyi(math.inf)
    if math.isinf(eps):
        try:
            convert(g, ZCDP)
        except NotImplied:
            raise NotImplied(f"{g!r} has an unbounded privacy loss and implies no zCDP") from None
        raise NoExplicitBound(
            f"{g!r} ⇒ mCDP holds only with an unspecified constant (via zCDP and BS16 Lemma 4.3)"
        )
    tau = eps  # half the width 2ε (halved first: 2ε may overflow)
    with contextlib.suppress(NotImplied):
        eta = convert(g, BoundedRange).eta
        if math.isfinite(eta):  # η/2 rounded up (to nearest it fell below at subnormal η)
            tau = min(tau, _math.float_up(Fraction(eta) / 2))
    return MCDP(g.renyi(1.0), tau)


_CERTIFIED_BUDGET = 20000  # Rényi evaluations (about 0.15 s)


class CannotBeatRival(NotImplied):
    """A route with ``rival=`` stopped early: its result could not be sharper than the rival's."""


@register(
    Guarantee,
    ZCDP,
    name="certified-rdp-sup",
    theorem="ρ = sup_α D_α/α bounded on cells of orders (monotonicity of D_α in α)",
    rival=True,
)
def guarantee_to_zcdp_certified(g: Guarantee, rival: Guarantee | None = None) -> ZCDP:
    """ρ-zCDP with ρ a *certified* upper bound on sup_{α>1} D_α/α of the source's Rényi curve.

    For a cell (a, b] of orders, D_α ≤ D_b for α ≤ b (D_α is non-decreasing in α: van Erven–
    Harremoës 2014, Thm 3), so sup_{α∈(a,b]} D_α/α ≤ D_b/a; and (α − 1)D_α = log E_Q[(P/Q)^α]
    is convex in α (a log-moment generating function) for every neighbouring pair, so it lies
    below its chord on the cell — and that chord below the chord through the curve's values,
    which bound it at a and b — which bounds D_α/α to second order (:func:`_cell_bound` takes
    the smaller of the two). Cells
    cover (1, A], and D_∞/A bounds
    (A, ∞). Cells whose bound exceeds the best value seen at a grid point (a lower bound on the
    sup) by more than a relative 1e-7 are split until none is left (or a budget of evaluations is
    spent), so the result is rigorous and, when the budget suffices, within 1e-7 of the true sup.
    It is rounded up by a relative 1e-12 against floating-point
    error in the curve. Needs a finite D_∞.

    With a ``rival`` (a zCDP result of another route), it stops with :class:`CannotBeatRival`
    once its lower bound on the sup, rounded up as the result would be, reaches the rival's ρ:
    the result could then not be sharper. At η ≤ 1e-3 the certified value of η-BR is above
    η²/8, whose gap to the sup is then below the route's own relative 1e-7; calibrating an
    exponential mechanism to ZCDP(1e-12) spent 0.3 s per check proving so.
    """
    beaten = math.inf
    if isinstance(rival, ZCDP):
        # (a rival with ξ > 0 is beaten at an equal ρ: this route's ξ is 0)
        beaten = rival.rho if rival.xi <= 0.0 else math.nextafter(rival.rho, math.inf)
    d_inf = g.renyi(math.inf)
    if math.isinf(d_inf):
        raise NotImplied(f"{g!r}: the certified route needs a finite max-divergence")
    if d_inf == 0.0:
        return ZCDP(0.0)
    top = 1e7
    cache: dict[float, float] = {}

    def renyi(a: float) -> float:
        if a not in cache:
            cache[a] = g.renyi(a)
        return cache[a]

    cells = [(1.0, 1.0 + 1e-12)]
    x = 1e-12
    while x < top:
        cells.append((1.0 + x, 1.0 + 2.0 * x))
        x *= 2.0
    upper = 0.0
    for _ in range(60):
        lower = max(renyi(b) / b for _, b in cells)
        if lower * (1.0 + 1e-12) >= beaten:  # the result, ≥ this, cannot be sharper
            raise CannotBeatRival(f"its ρ would be at least the rival's {beaten!r}")
        ubs = [_cell_bound(a, b, renyi(a), renyi(b)) for a, b in cells]
        upper = max(ubs)
        # Stop when within 1e-7 of the sup, or when the work budget is spent (a flat curve, e.g. a
        # tiny η, would need ever finer cells): the bound is rigorous either way, only less sharp.
        if upper <= lower * (1.0 + 1e-7) or len(cache) > _CERTIFIED_BUDGET:
            break
        threshold = lower * (1.0 + 1e-7)
        refined: list[tuple[float, float]] = []
        for (a, b), ub in zip(cells, ubs, strict=True):
            if ub > threshold and b - a > 1e-15 * b:
                pts = [a + (b - a) * i / 4.0 for i in range(5)]
                refined.extend(itertools.pairwise(pts))
            else:
                refined.append((a, b))
        cells = refined
    tail = d_inf / cells[-1][1]
    return ZCDP(max(upper, tail) * (1.0 + 1e-12))


def _cell_bound(a: float, b: float, d_a: float, d_b: float) -> float:
    """An upper bound on sup_{α∈(a,b]} D_α/α from D_a, D_b (1 ≤ a < b), rounded up.

    First order: D_b/a (monotonicity). Second order: with f(α) = (α − 1)D_α convex,
    f ≤ L(α) = f(a) + s(α − a), s = (f(b) − f(a))/(b − a), on the cell, so D_α/α ≤ L(α)/(α(α−1));
    the maximum of that ratio is at an end or where its derivative vanishes:
    sα² − 2cα + c = 0 with c = sa − f(a).
    """
    first = d_b / a
    if not (math.isfinite(d_a) and math.isfinite(d_b)):
        return first
    f_a, f_b = (a - 1.0) * d_a, (b - 1.0) * d_b
    slope = (f_b - f_a) / (b - a)

    def ratio(alpha: float) -> float:
        if alpha <= 1.0:  # L(1) = f(1) = 0 when a = 1: the ratio tends to s
            return slope if a == 1.0 else math.inf
        return (f_a + slope * (alpha - a)) / (alpha * (alpha - 1.0))

    points = [b, a if a > 1.0 else 1.0]
    c = slope * a - f_a
    if slope != 0.0:
        disc = c * c - slope * c
        if disc >= 0.0:
            r = math.sqrt(disc)
            points += [(c + r) / slope, (c - r) / slope]
    second = max(ratio(x) for x in points if a <= x <= b)
    # the chord, the ratio and the roots are each within a few ulps: pad by a relative 1e-12
    return min(first, second * (1.0 + 1e-12) + 1e-300)


# --- bounded range -------------------------------------------------------------------------------


@register(
    BoundedRange,
    PureDP,
    name="rs21-lemma2",
    theorem="Rogers–Steinke 2021 Lemma 2: η-BR ⇒ η-DP",
    tight=True,
)
def bounded_range_to_pure_dp(g: BoundedRange) -> PureDP:
    """η-BR ⇒ η-DP [Rogers–Steinke 2021, Lemma 2]: the loss interval [t − η, t] contains 0."""
    return PureDP(g.eta)


@register(
    BoundedRange,
    ZCDP,
    name="cr21",
    theorem="Cesar–Rogers 2021 (Rogers–Steinke 2021 Thm 5): η-BR ⇒ η²/8-zCDP",
)
def bounded_range_to_zcdp(g: BoundedRange) -> ZCDP:
    """η-BR ⇒ η²/8-zCDP [Cesar–Rogers 2021; Rogers–Steinke 2021, Thm 5, via Hoeffding's lemma].

    Valid; not tight (the certified route gives ≈ η²/8 − η⁴/576, the maximal KL divergence).
    """
    if math.isinf(g.eta):
        return ZCDP(math.inf)
    # exactly η²/8, rounded up only if it is not a float (η = 1: 0.125, not 0.125 + 4 ulps)
    rho = _math.float_up(Fraction(g.eta) ** 2 / 8)  # a positive ρ never underflows to 0
    return ZCDP(5e-324 if rho == 0.0 and g.eta > 0.0 else rho)


@register(
    BoundedRange,
    RDP,
    name="exact-br-curve",
    theorem="exact RDP of η-BR: sup over GRR_t, closed-form maximiser",
    tight=True,
)
def bounded_range_to_rdp(g: BoundedRange) -> RDP:
    """The exact RDP curve of η-BR (sup over the two-point pairs GRR_t; exact, see _divergences)."""
    eta = g.eta
    return RDP.from_function(lambda a: _divergences.br_renyi(eta, a))


# --- zCDP, mCDP ----------------------------------------------------------------------------------


@_register_approx(
    ZCDP, name="cks20-cor13", theorem="Canonne–Kamath–Steinke 2020 Cor 13 (continuous α)"
)
def zcdp_to_approx_dp(g: ZCDP, delta: float) -> ApproxDP:
    """(ξ, ρ)-zCDP ⇒ (ε, δ)-DP, ε by CKS20 Cor 13 at the continuous optimal α.

    [Canonne–Kamath–Steinke 2020, Prop 12 / Cor 13.] Errs upwards (a bound); never worse than
    BS16 Lemma 3.5. ``g.epsilon(delta)`` additionally takes the min with BS16 Lemma 3.6.
    """
    d = _validate.probability("delta", delta)
    if g.rho == 0.0:
        return ApproxDP(_divergences.rr_epsilon(max(g.xi, 0.0), d), d)
    if d == 0.0:
        raise NotImplied(f"{g!r} with rho > 0 certifies no finite epsilon at delta=0")
    return ApproxDP(_tails.zcdp_cks20_epsilon(g.rho, g.xi, d), d)


@_register_approx(
    ZCDP, name="bs16-lemma3.5", theorem="Bun–Steinke 2016 Lemma 3.5: ξ + ρ + 2√(ρ log 1/δ)"
)
def zcdp_to_approx_dp_bs16(g: ZCDP, delta: float) -> ApproxDP:
    """(ξ, ρ)-zCDP ⇒ (ξ + ρ + 2√(ρ log 1/δ), δ)-DP [Bun–Steinke 2016, Lemma 3.5] (loose)."""
    d = _validate.probability("delta", delta)
    if d == 0.0:
        raise NotImplied("BS16 Lemma 3.5 needs delta > 0")
    return ApproxDP(max(0.0, _tails.bs16_lemma35_epsilon(g.rho, g.xi, d)), d)


@register(
    ZCDP,
    RDP,
    name="bs16-def1.1",
    theorem="Bun–Steinke 2016 Def 1.1: D_α ≤ ξ + ρα (exact)",
    tight=True,
)
def zcdp_to_rdp(g: ZCDP) -> RDP:
    """(ξ, ρ)-zCDP is D_α ≤ ξ + ρα for all α [BS16 Def 1.1]. Exact."""
    return RDP.from_function(g.renyi)


@register(
    ZCDP, MCDP, name="bs16-lemma4.3", theorem="Bun–Steinke 2016 Lemma 4.3 (only O(·) constants)"
)
def zcdp_to_mcdp(g: ZCDP) -> MCDP:
    """(ξ, ρ)-zCDP ⇒ (ξ + ρ, O(√(ξ + 2ρ)))-mCDP [BS16 Lemma 4.3].

    The lemma's constant is not explicit in the statement; sharpdp ships no bound it cannot state
    exactly, so this raises :class:`NoExplicitBound` (a :class:`NotImplied`).
    """
    raise NoExplicitBound(
        f"{g!r} ⇒ mCDP holds only with an unspecified constant (BS16 Lemma 4.3: "
        "(ξ+ρ, O(√(ξ+2ρ)))-mCDP); no explicit bound is shipped"
    )


@register(
    MCDP,
    ZCDP,
    name="bs16-lemma4.2",
    theorem="Bun–Steinke 2016 Lemma 4.2: (μ, τ)-mCDP ⇒ (μ − τ²/2, τ²/2)-zCDP",
)
def mcdp_to_zcdp(g: MCDP) -> ZCDP:
    """(μ, τ)-mCDP ⇒ (μ − τ²/2, τ²/2)-zCDP [BS16 Lemma 4.2]. Tight for the Gaussian mechanism."""
    return g.zcdp


# --- approximate DP and approximate zCDP ---------------------------------------------------------


@register(
    ApproxDP,
    ApproxZCDP,
    name="bs16-prop1.13",
    theorem="Bun–Steinke 2016 Prop 1.13: (ε, δ)-DP ⇒ δ-approximate (ε, 0)-zCDP",
)
def approx_dp_to_approx_zcdp(g: ApproxDP) -> ApproxZCDP:
    """(ε, δ)-DP ⇒ δ-approximate (ξ = ε, ρ = 0)-zCDP [BS16 Prop 1.13]. Loses nothing: the
    resulting profile δ + (1 − δ)·δ_RR(ε) is exactly the tight (ε, δ)-DP profile."""
    return ApproxZCDP(0.0, g.delta_, g.epsilon_)


@register(
    ApproxZCDP,
    ZCDP,
    name="bs16-def1.12",
    theorem="Bun–Steinke 2016 Def 1.12: 0-approximate (ξ, ρ)-zCDP is (ξ, ρ)-zCDP",
    tight=True,
)
def approx_zcdp_to_zcdp(g: ApproxZCDP) -> ZCDP:
    """δ = 0: the guarantee itself, as zCDP (δ > 0 implies no zCDP guarantee: the δ part's
    divergence may be infinite)."""
    if g.delta_ > 0.0:
        raise NotImplied(f"{g!r} has δ > 0: no zCDP guarantee follows (its δ part is unbounded)")
    return ZCDP(g.rho, g.xi)


@register(Guarantee, ApproxZCDP, name="zcdp", theorem="a ZCDP guarantee is 0-approximate zCDP")
def _guarantee_to_approx_zcdp(g: Guarantee) -> ApproxZCDP:
    z = convert(g, ZCDP)
    return ApproxZCDP(z.rho, 0.0, z.xi)


@register(
    ApproxDP, ZCDP, name="impossible", theorem="(ε, δ>0)-DP allows infinite loss with probability δ"
)
def _approx_dp_to_zcdp(g: ApproxDP) -> ZCDP:
    if g.delta_ == 0.0:
        return pure_dp_to_zcdp(PureDP(g.epsilon_))
    raise NotImplied(
        f"{g!r}: approximate DP with delta > 0 permits an event of probability delta with infinite "
        "privacy loss, so no zCDP (or RDP) bound follows; use ApproxZCDP (BS16 Prop 1.13)"
    )


# --- GDP -----------------------------------------------------------------------------------------


@_register_approx(GDP, name="drs19-cor2.13", theorem="Dong–Roth–Su 2019 Cor 2.13 (exact profile)")
def gdp_to_approx_dp(g: GDP, delta: float) -> ApproxDP:
    """μ-GDP ⇒ (ε, δ)-DP with the exact profile [Dong–Roth–Su 2019, Cor 2.13]; ε errs upwards by
    at most 1e-13 relative (certified bisection)."""
    d = _validate.probability("delta", delta)
    return ApproxDP(_divergences.gaussian_epsilon(g.mu, d), d)


@register(
    GDP,
    ZCDP,
    name="gaussian-renyi",
    theorem="μ-GDP ⇒ μ²/2-zCDP (D_α of N(0,1) vs N(μ,1) is αμ²/2)",
    tight=True,
)
def gdp_to_zcdp(g: GDP) -> ZCDP:
    """μ-GDP ⇒ μ²/2-zCDP: the Gaussian pair dominates, with D_α = αμ²/2 [BS16 Lemma 2.4]; tight."""
    if math.isinf(g.mu):
        raise NotImplied(f"{g!r} is vacuous")
    # the least float ≥ μ²/2 (0.5·μ·μ rounds to nearest, and to 0 for μ ≲ 1e-162)
    return ZCDP(_math.float_up(Fraction(g.mu) ** 2 / 2))


@_register_approx(
    RDP, name="cks20-prop12", theorem="Canonne–Kamath–Steinke 2020 Prop 12, optimised over α"
)
def rdp_to_approx_dp(g: RDP, delta: float) -> ApproxDP:
    """RDP curve ⇒ (ε, δ)-DP by CKS20 Prop 12, minimised over the curve's orders (or over
    continuous α for a function curve). Errs upwards (a bound; a finite order grid only loosens it)."""
    d = _validate.probability("delta", delta)
    return ApproxDP(g.epsilon(d), d)


# --- generic (ε, δ) routes -----------------------------------------------------------------------


@_register_approx(
    Guarantee,
    name="own-profile",
    theorem="the source's own ε(δ): its exact profile where known, else its sharpest analysis",
)
def guarantee_to_approx_dp(g: Guarantee, delta: float) -> ApproxDP:
    """(ε, δ)-DP with ε = ``g.epsilon(delta)`` — what :func:`convert` returns for ``ApproxDP``."""
    d = _validate.probability("delta", delta)
    eps = g.epsilon(d)
    if math.isinf(eps):
        raise NotImplied(f"{g!r} certifies no finite epsilon at delta={d!r}")
    return ApproxDP(eps, d)


@_register_approx(
    Guarantee, name="via-zcdp", theorem="sharpest zCDP conversion, then CKS20 Cor 13 (classical)"
)
def _guarantee_to_approx_dp_via_zcdp(g: Guarantee, delta: float) -> ApproxDP:
    return zcdp_to_approx_dp(convert(g, ZCDP), delta)


@_register_approx(
    Guarantee, name="via-rdp", theorem="the source's Rényi curve, then CKS20 Prop 12 over α"
)
def _guarantee_to_approx_dp_via_rdp(g: Guarantee, delta: float) -> ApproxDP:
    return rdp_to_approx_dp(guarantee_to_rdp(g), delta)


#: Rényi evaluations :func:`renyi_under_zcdp_line` may spend before answering "not shown".
_LINE_BUDGET = 4000


def renyi_under_zcdp_line(g: Guarantee, rho: float, xi: float) -> bool:
    """Whether D_α(g) ≤ ξ + ρα at every order α > 1, i.e. g is (ξ, ρ)-zCDP [Bun–Steinke 2016,
    Def 1.1]; ``False`` when it cannot be shown (an unbounded max-divergence D_∞, or the
    evaluation budget spent).

    D_α is non-decreasing in α [van Erven–Harremoës 2014, Thm 3], so on a cell (a, b] of orders
    D_α − ρα ≤ D_b − ρa; and D_α ≤ D_∞ ≤ ξ + ρα for α ≥ A = (D_∞ − ξ)/ρ. Cells covering all of (1, A]
    whose bound exceeds ξ are split in four until every bound is at most ξ (shown), or an order
    with D_b − ρb > ξ is found (refuted). Each D_b is a valid upper bound of the curve, so a
    "shown" is a proof; the comparisons are padded by a relative 1e-12 against its rounding.
    """
    d_inf = g.renyi(math.inf)
    if d_inf <= xi * (1.0 - 1e-12):
        return True
    if math.isinf(d_inf) or rho <= 0.0:
        return False
    # every order up to A is covered by cells (doubling: ~log₂ A of them; a cap at 1e12 left
    # (1e12, A] unchecked, and a curve crossing the line there was accepted)
    top = (d_inf - xi) / rho * (1.0 + 1e-12) + 1.0
    if not math.isfinite(top):
        return False
    limit = xi * (1.0 - 1e-12)
    cells = [(1.0, min(2.0, top))]
    a = 2.0
    while a < top:
        cells.append((a, min(2.0 * a, top)))
        a *= 2.0
    spent = 0
    while cells:
        pending: list[tuple[float, float]] = []
        for a, b in cells:
            d_b = g.renyi(b)
            spent += 1
            if d_b - rho * b * (1.0 - 1e-12) > xi:  # an order where the line is crossed
                return False
            if d_b - rho * a > limit:
                pending.extend(
                    (a + (b - a) * i / 4.0, a + (b - a) * (i + 1) / 4.0) for i in range(4)
                )
        if spent > _LINE_BUDGET or any(b - a <= 1e-12 * b for a, b in pending):
            return False
        cells = pending
    return True
