"""Calibrating selections to a query's privacy target: bounded-range rounds and LimitDom.

Both new selections of the data layer are charged as bounded-range (BR) rounds [Durfee–Rogers
2019, Def 3.1; Dong–Durfee–Rogers 2020]:

* a quantile (Smith 2011's interval exponential mechanism, :class:`sharpdp.Quantile`) is one η-BR
  round per by-group a person can touch;
* LimitDom (Durfee–Rogers 2019, Algorithm 1; :class:`sharpdp.LimitDom`) is dominated by k adaptive
  η-BR rounds and one ``ApproxDP(0, δ_L)`` (its :meth:`~sharpdp.LimitDom.privacy_items`), once per
  by-group a person can touch.

:func:`br_epsilon` returns the largest η whose ``rounds`` adaptive η-BR rounds meet a target;
:func:`limitdom` the LimitDom whose charge meets it. Every returned parameter is one at which the
target was *checked* (by the guarantee calculus, or by ``sdp.compose(...).delta_bound``, a
certified upper bound on δ, and ``certifies``), never one taken from an approximate formula: the
searches only affect sharpness, never validity. Both are pure functions of frozen, validated
arguments, so a process keeps their results: a query of the same shape (another session's, a
service's analysts', one run again) is calibrated once.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from fractions import Fraction

import sharpdp as sdp
from sharpdp import _math
from sharpdp.errors import InvalidParameter, NumericalError

__all__ = ["br_epsilon", "limitdom", "max_round_epsilon"]

#: Relative accuracy of the ε searches (the returned η is within it of the largest valid one).
_RTOL = 1e-3
#: g below −_FLOOR (δ = 0 where the rounds are pure DP: g = −∞) is read as −_FLOOR by the search.
_FLOOR = 700.0
#: Relative accuracy of the quick zCDP-line estimates (they only place the certified search).
_ESTIMATE_RTOL = 1e-5
#: Calibrations kept per process (each a pure function of its frozen arguments).
_CACHE_SIZE = 256
#: δ fractions tried for LimitDom's ⊥ part (the rest is left to the BR rounds' composition).
_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def _down_pure(epsilon: float, rounds: int) -> float:
    """The largest float η with rounds·η ≤ ε exactly."""
    eta = epsilon / rounds
    while Fraction(eta) * rounds > Fraction(epsilon):
        eta = math.nextafter(eta, 0.0)
    return eta


def _zcdp_epsilon(rho: float, rounds: int) -> tuple[float, str]:
    """The largest η (to a relative 1e-9 above 0.1) with rounds·ρ_BR(η) ≤ ρ."""
    # η²/8 ≥ ρ_BR(η) [Cesar–Rogers 2021]: η0 = √(8ρ/rounds), moved down until exact
    eta = math.sqrt(8.0 * rho / rounds)
    while Fraction(eta) ** 2 * rounds > 8 * Fraction(rho):
        eta = math.nextafter(eta, 0.0)
    route = "η²/8-zCDP per round (Cesar–Rogers 2021), zCDP adds (Bun–Steinke 2016 Lemma 2.3)"
    if eta <= 0.1:  # the tight BR constant is within a relative η²/96 < 1.1e-4 of η²/8 here
        return eta, route

    def ok(x: float) -> bool:
        z = sdp.convert(sdp.BoundedRange(x), sdp.ZCDP)
        assert isinstance(z, sdp.ZCDP)
        return Fraction(z.rho) * rounds <= Fraction(rho)

    lo, hi = eta, 2.0 * eta
    if ok(hi):
        return eta, route  # not expected (ρ_BR ≥ η²/(8·4) would be violated); keep the safe one
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo, (
        "the tight zCDP constant of η-BR (Cesar–Rogers 2021, certified by sdp.convert) per "
        "round, zCDP adds (Bun–Steinke 2016 Lemma 2.3)"
    )


def _largest(
    delta_of: Callable[[float], float], delta: float, lo: float, cap: float, first: float = 1.25
) -> float:
    """The largest η ∈ [lo, cap] with ``delta_of(η) ≤ delta``, to a relative ``_RTOL``.

    ``delta_of(η)`` is a certified upper bound on δ at the target ε of the composition built
    with η (non-decreasing in η); ``delta_of(lo) ≤ delta`` must hold (it is evaluated first, and
    a failure raises). The returned η is one at which ``delta_of`` was evaluated and certified
    ``≤ delta``: the search affects sharpness only. The first upper probe is ``first``·lo (close
    to 1 when lo comes from a good estimate).

    The search reads the values, not only the verdicts, through g(η) = log δ(η) − log δ_target.
    Upwards, each probe is the secant root of the last two points aimed a tolerance past it (at
    most doubling), until one fails; then Brent's method on the bracket (interpolation where it
    makes progress, bisection where it does not). A bisection on the verdicts took ~13
    compositions of ~20 ms each per calibration; this takes 5–11 (a top-k of 10 over unknown
    keys at (1, 1e-6): 8 instead of 13, ~300 → ~150 ms).
    """
    log_target = math.log(delta)

    def gap(x: float) -> float:
        # the sign is decided on δ itself (the logarithms' rounding could turn a δ one ulp above
        # the target into a gap ≤ 0)
        value = delta_of(x)
        if value > delta:
            return max(math.log(value) - log_target, math.ulp(0.0))
        return -math.inf if value <= 0.0 else min(math.log(value) - log_target, 0.0)

    g_lo = gap(lo)
    if g_lo > 0.0:
        raise NumericalError(f"calibration: the start η = {lo!r} is not certified (a bug)")
    hi = min(cap, first * lo)
    while (g_hi := gap(hi)) <= 0.0:  # bracket upwards
        if hi >= cap:
            return cap
        aim = 2.0 * hi
        if math.isfinite(g_lo) and g_hi > g_lo:  # the secant root, a tolerance past it
            aim = min(aim, (hi - g_hi * (hi - lo) / (g_hi - g_lo)) * (1.0 + _RTOL))
        lo, g_lo = hi, g_hi
        hi = min(cap, max(aim, lo * (1.0 + 2.0 * _RTOL)))
    if g_lo == 0.0:
        return lo
    # Brent's method on the bracket (interpolation where it makes progress, bisection where it
    # does not: g is flat where the rounds are pure DP and has kinks where the winning analysis
    # changes); the answer is the largest point evaluated below the target
    below = [lo]

    def signed(x: float) -> float:
        g = gap(x)
        if g <= 0.0:
            below.append(x)
        return max(g, -_FLOOR)

    # (sharpdp's own Brent: scipy.optimize would add ~0.5–1 s to the import of sharpdp.data.
    # Should it not converge, the points certified so far still give a valid answer, only a less
    # sharp one.)
    with contextlib.suppress(NumericalError):
        _math.brent_root(
            signed,
            lo,
            hi,
            signed(lo),
            signed(hi),
            rtol=2.0**-51,
            xtol=0.25 * _RTOL * lo,  # (a final bracket of width ≤ ½·_RTOL·lo)
            maxiter=200,
            what="calibration",
        )
    return max(below)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def br_epsilon(target: sdp.Guarantee, rounds: int) -> tuple[float, str]:
    """The largest η such that ``rounds`` adaptive η-BR mechanisms meet ``target``; and the route.

    * ``PureDP(ε)``: η = ε/rounds (BR(η) is exactly η-DP; ε adds), rounded down exactly.
    * ``ZCDP(ρ)`` (and ``ApproxZCDP(ρ, δ)``, whose δ a BR round does not need): rounds·ρ_BR(η) ≤ ρ
      with the tight BR zCDP constant ρ_BR(η) ≤ η²/8 [Cesar–Rogers 2021].
    * ``ApproxDP(ε, δ)``: one round, ``sdp.calibrate(sdp.Exponential, target)`` (the exact BR
      profile); several, a search on ``sdp.compose([(BoundedRange(η), rounds)]).delta_bound(ε) ≤ δ``
      (every analysis valid for adaptive composition: PLD, RDP, KOV...), to a relative 1e-3.

    Raises:
        InvalidParameter: the target admits no positive η.
    """
    if isinstance(target, sdp.PureDP):
        if target.epsilon_ <= 0.0:
            raise InvalidParameter(f"privacy: a selection needs epsilon > 0, got {target!r}")
        return _down_pure(target.epsilon_, rounds), "η-BR is η-DP; basic composition (exact)"
    if isinstance(target, sdp.ZCDP | sdp.ApproxZCDP):
        if target.rho <= 0.0:
            raise InvalidParameter(f"privacy: a selection needs rho > 0, got {target!r}")
        return _zcdp_epsilon(target.rho, rounds)
    assert isinstance(target, sdp.ApproxDP)
    if target.epsilon_ <= 0.0:
        raise InvalidParameter(f"privacy: a selection needs epsilon > 0, got {target!r}")
    if rounds == 1:
        m = sdp.calibrate(sdp.Exponential, target)
        return m.epsilon_, "the exact (ε, δ) profile of η-BR (Dong–Durfee–Rogers 2020)"
    eps, delta = target.epsilon_, target.delta_

    @functools.cache  # (the search re-reads its start)
    def delta_of(x: float) -> float:
        return sdp.compose([(sdp.BoundedRange(x), rounds)]).delta_bound(eps)

    lo = _down_pure(eps, rounds)  # basic composition certifies it
    # a quick estimate on the zCDP line (η²/8 per round, CKS20 conversion) narrows the bracket
    guess = _zcdp_line_epsilon(eps, delta, rounds, 0.0, 1e6)
    first = 1.25
    if guess > lo and delta_of(guess) <= delta:
        lo, first = guess, 1.02
    eta = _largest(delta_of, delta, lo, 1e6, first)
    return eta, f"{rounds} adaptive η-BR rounds, sdp.compose (sharpest valid analysis)"


def _zcdp_line_epsilon(eps: float, delta: float, rounds: int, delta_l: float, cap: float) -> float:
    """An estimate (not a certificate): the largest η ≤ cap with ``ApproxZCDP(rounds·η²/8,
    delta_l)`` at (eps, delta), by bisection; 0 when none."""

    def fits(x: float) -> bool:
        return sdp.ApproxZCDP(rounds * x * x / 8.0, delta_l).epsilon(delta) <= eps

    if fits(cap):
        return cap
    lo, hi = 0.0, cap
    for _ in range(200):  # (the estimate needs a relative _ESTIMATE_RTOL, not the last bit)
        if lo > 0.0 and hi - lo <= _ESTIMATE_RTOL * lo:
            break
        mid = 0.5 * (lo + hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def max_round_epsilon(k: int) -> float:
    """The largest per-round ε used by LimitDom with k rounds: 30/k.

    Beyond it tanh(kε/2) rounds to 1 in float and the threshold of :class:`sharpdp.LimitDom`
    becomes infinite; the threshold's ε-dependent part has saturated long before (it tends to
    Δ∞·k), so a larger ε would buy only less Gumbel noise on the order. Capping spends less than
    the target allows (errs against the user, never against privacy).
    """
    return 30.0 / k


@functools.lru_cache(maxsize=_CACHE_SIZE)
def limitdom(
    target: sdp.Guarantee,
    *,
    k: int,
    k_bar: int,
    copies: int,
    sensitivity: float,
    max_keys: int,
) -> tuple[sdp.LimitDom, str]:
    """The LimitDom whose charge (``copies`` runs) meets ``target``, with the least threshold.

    The charge of ``copies`` runs is ``[(BoundedRange(η), k·copies), (ApproxDP(0, δ_L), copies)]``.

    * ``ApproxZCDP(ρ, δ)``: the rounds are δ-approximately zCDP [Bun–Steinke 2016, Def 1.12] with
      ρ = k·copies·ρ_BR(η) (:func:`br_epsilon`) and δ_L = δ/copies (1 − (1 − δ_L)^copies ≤ δ).
    * ``ApproxDP(ε, δ)``: the rounds need some δ too — at δ = 0 their ε is the pure k·copies·η,
      which the sharp analyses beat by a factor ~√(k·copies) once they may use a δ. So δ is split:
      a fraction f to the ⊥ parts (δ_L = f·δ/copies) and the rest left to the composition. For
      each f in a grid, a quick pre-search (on the δ-approximate zCDP line, ρ = η²/8 per round,
      converted by ``sdp.ApproxZCDP``) estimates η; the f whose LimitDom threshold h⊥ − h₍ₖ̄₊₁₎
      (what decides how many keys come out) is least wins; then η is searched on the exact
      composition, ``sdp.compose(charge).delta_bound(ε) ≤ δ``, to a relative 1e-3.

    η is capped at :func:`max_round_epsilon`. The returned mechanism's charge is verified with
    ``sdp.compose([(mechanism, copies)]).certifies(ε, δ)``.

    Raises:
        InvalidParameter: a target without δ > 0.
        NumericalError: the verification fails (a bug).
    """
    rounds = k * copies
    cap = max_round_epsilon(k)

    def build(eta: float, delta_l: float) -> sdp.LimitDom:
        return sdp.LimitDom(
            k=k,
            k_bar=k_bar,
            epsilon=eta,
            delta=delta_l,
            sensitivity=sensitivity,
            max_keys=max_keys,
        )

    if isinstance(target, sdp.ApproxZCDP):
        eta, route = _zcdp_epsilon(target.rho, rounds)
        delta_l = target.delta_ / copies
        while Fraction(delta_l) * copies > Fraction(target.delta_):
            delta_l = math.nextafter(delta_l, 0.0)
        mech = build(min(eta, cap), delta_l)
        return mech, f"δ-approximate zCDP: {route}; δ_L = δ/{copies} per run"
    if not isinstance(target, sdp.ApproxDP) or target.delta_ <= 0.0:
        raise InvalidParameter(
            f"privacy: top-k over unknown keys (LimitDom) needs sdp.ApproxDP or sdp.ApproxZCDP "
            f"with delta > 0, got {target!r}"
        )
    eps, delta = target.epsilon_, target.delta_
    if eps <= 0.0:
        raise InvalidParameter(f"privacy: LimitDom needs epsilon > 0, got {target!r}")

    def quick(f: float) -> tuple[float, float]:
        """(threshold offset, η) of the pre-search for the ⊥ fraction f."""
        eta = _zcdp_line_epsilon(eps, delta, rounds, f * delta, cap)
        if eta <= 0.0:
            return math.inf, 0.0
        return build(eta, f * delta / copies).threshold_offset, eta

    estimates = {f: quick(f) for f in _FRACTIONS}
    best = min(_FRACTIONS, key=lambda f: estimates[f][0])
    guess = estimates[best][1]
    delta_l = best * delta / copies

    @functools.cache  # (the search re-reads its start)
    def delta_of(x: float) -> float:
        items: list[tuple[sdp.Guarantee, int]] = [
            (sdp.BoundedRange(x), rounds),
            (sdp.ApproxDP(0.0, delta_l), copies),
        ]
        return sdp.compose(items).delta_bound(eps)

    lo = min(cap, guess) if guess > 0.0 else _down_pure(eps, rounds)
    first = 1.02
    tries = 0
    while not delta_of(lo) <= delta:
        lo *= 0.8
        first = 1.25
        tries += 1
        if tries > 200:
            raise NumericalError(f"LimitDom: no per-round ε certified within {target!r}")
    eta = _largest(delta_of, delta, lo, cap, first)
    mech = build(eta, delta_l)
    if not sdp.compose([(mech, copies)]).certifies(eps, delta):
        raise NumericalError(
            f"LimitDom calibration produced {mech!r}, which does not meet {target!r}"
        )
    route = (
        f"δ split: {best:g}·δ to the ⊥ part(s), the rest to the composition of the "
        f"{rounds} BR rounds; η searched on sdp.compose (sharpest valid adaptive analysis)"
    )
    return mech, route
