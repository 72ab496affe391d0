"""From Rényi/zCDP bounds to (ε, δ): the conversion kernels, each a valid upper bound.

Any order α gives a valid bound, so optimising over α only sharpens the result; every bound is
evaluated exactly at the α that is returned (no root-finder error can make it invalid).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable

from sharpdp import _divergences, _math
from sharpdp.errors import NumericalError

__all__ = [
    "bs16_lemma35_epsilon",
    "bs16_lemma36_delta",
    "cks20_delta",
    "cks20_epsilon",
    "kl_tv_delta",
    "rdp_curve_delta",
    "rdp_curve_epsilon",
    "zcdp_cks20_delta",
    "zcdp_cks20_epsilon",
    "zcdp_delta",
    "zcdp_epsilon",
]


def cks20_log_delta(alpha: float, tau: float, epsilon: float) -> float:
    """log δ from one RDP point (α, τ) [Canonne–Kamath–Steinke 2020, Prop 12 (in v4)].

    δ = e^{(α−1)(τ−ε)} (1 − 1/α)^{α−1} / α. Valid for every α > 1; errs upwards (it is a bound).
    """
    if math.isinf(tau):
        return 0.0
    value = (alpha - 1.0) * (tau - epsilon + math.log1p(-1.0 / alpha)) - math.log(alpha)
    if value == -math.inf and not math.isinf(epsilon):
        # a finite exponent past the floats (α = 1e300, ε = 1e10): δ is positive, however
        # small; −inf would read as δ = 0, the lowest finite log as 5e-324
        return -sys.float_info.max
    return value


def cks20_delta(alpha: float, tau: float, epsilon: float) -> float:
    """δ from one RDP point (α, τ), capped at 1 (CKS20 Prop 12)."""
    log_delta = cks20_log_delta(alpha, tau, epsilon)
    if math.isfinite(log_delta):
        # its terms' rounding (and an ulp of a τ computed as ξ + ρα) is absolute in the log:
        # a relative 2⁻⁵⁰ of their sizes (4 ulps of δ covered only ~1e-15 of it)
        lam = alpha - 1.0
        size = lam * (abs(tau) + abs(epsilon) + abs(math.log1p(-1.0 / alpha))) + math.log(alpha)
        log_delta += (size + 1.0) * 2.0**-50
    return min(1.0, _math.up(_math.exp_up(log_delta)))


def cks20_epsilon(alpha: float, tau: float, delta: float) -> float:
    """ε from one RDP point (α, τ) [CKS20 Prop 12]: τ + (log(1/δ) + (α−1)log(1−1/α) − log α)/(α−1).

    Clipped at 0 (a negative value means (0, δ)-DP holds).
    """
    if math.isinf(tau) or delta <= 0.0:
        return math.inf
    lam = alpha - 1.0
    value = tau + (-math.log(delta) + lam * math.log1p(-1.0 / alpha) - math.log(alpha)) / lam
    return max(0.0, _math.up(value))


def kl_tv_delta(kl: float) -> float:
    """δ(ε) ≤ δ(0) = TV(P, Q) ≤ min(√(KL/2), √(1 − e^{−KL})) for every ε ≥ 0, KL = D(P‖Q).

    The first is Pinsker's inequality (with Kullback's and Csiszár's constant; Tsybakov 2009,
    "Introduction to Nonparametric Estimation", Lemma 2.5), sharper for KL < 1.59; the second
    the Bretagnolle–Huber inequality (Tsybakov 2009, Lemma 2.6), sharper above (and below 1
    for every KL). Rounded up (``expm1`` and ``sqrt`` err by an ulp between them).
    """
    if math.isinf(kl):
        return 1.0
    bound = math.sqrt(-math.expm1(-kl))
    if kl >= 2.0 * sys.float_info.min:  # (below, kl/2 may lose its last bit)
        bound = min(bound, math.sqrt(kl / 2.0))
    return min(1.0, _math.up(bound, 2))


# --- zCDP ----------------------------------------------------------------------------------------


def zcdp_cks20_delta(rho: float, xi: float, epsilon: float) -> float:
    """δ(ε) for (ξ, ρ)-zCDP by CKS20 Prop 12 at the optimal continuous α [CKS20 Cor 13].

    Minimises f(α) = (α−1)(ξ + ρα − ε + log(1 − 1/α)) − log α; f is convex with
    f'(α) = ξ + (2α−1)ρ − ε + log(1 − 1/α), increasing from −∞ (α → 1) to +∞.
    """

    def fprime(a: float) -> float:
        return xi + (2.0 * a - 1.0) * rho - epsilon + math.log1p(-1.0 / a)

    hi = 2.0
    while fprime(hi) < 0.0 and hi < 1e300:
        hi *= 2.0
    if fprime(hi) < 0.0:  # any α is valid; the search only sharpens
        return cks20_delta(hi, xi + rho * hi, epsilon)
    lo = 1.0 + 1e-15
    alpha = (
        _math.root_of_increasing(fprime, lo, hi, what="zCDP delta order") if fprime(lo) < 0 else hi
    )
    return cks20_delta(alpha, xi + rho * alpha, epsilon)


def zcdp_cks20_epsilon(rho: float, xi: float, delta: float) -> float:
    """ε(δ) for (ξ, ρ)-zCDP by CKS20 Prop 12 at the optimal continuous α [CKS20 Cor 13].

    The optimum of ε(α) = ξ + ρα + (log(1/δ) + (α−1)log(1−1/α) − log α)/(α−1) solves
    ρ(α−1)² = log(1/δ) − log α (unique: left side increasing from 0, right side decreasing).
    Solved and evaluated in λ = α − 1 (log α = log1p λ, log(1 − 1/α) = log λ − log1p λ), which
    keeps full accuracy when the optimum is very close to α = 1 (δ close to 1, large ρ).
    """
    log_inv = -math.log(delta)

    def g(lam: float) -> float:
        return rho * lam * lam - log_inv + math.log1p(lam)

    hi = math.sqrt(log_inv) / math.sqrt(rho) + 1.0  # (log_inv/ρ overflows for subnormal ρ)
    lam = _math.root_of_increasing(g, 0.0, hi, what="zCDP epsilon order")
    if lam <= 0.0:
        lam = math.nextafter(0.0, 1.0) if log_inv > 0 else 1e-300
    lp = math.log1p(lam)
    # log(1 − 1/α) = −log1p(1/λ), not log λ − log1p λ: two terms of size log λ whose rounding
    # (~1e-14 at λ = 1e7…1e51, tiny ρ) swamped a result of 1e-15…1e-49 (ε came out below the
    # Gaussian's own, even 0 for ρ = 1e-100, δ = 1e-300)
    # (for λ < 1 log λ − log1p λ has no cancellation, and 1/λ may overflow: kept there)
    log_shrink = -math.log1p(1.0 / lam) if lam >= 1.0 else math.log(lam) - lp
    value = xi + rho * (1.0 + lam) + log_inv / lam + log_shrink - lp / lam
    if math.isnan(value):
        raise NumericalError(f"zCDP epsilon: NaN at rho={rho!r}, xi={xi!r}, delta={delta!r}")
    return max(0.0, _math.up(value))


def bs16_lemma35_epsilon(rho: float, xi: float, delta: float) -> float:
    """ε = ξ + ρ + 2√(ρ log(1/δ)) [Bun–Steinke 2016, Lemma 3.5 (Prop 1.3)]. The classical bound."""
    return _math.up(xi + rho + 2.0 * math.sqrt(rho * -math.log(delta)))


def bs16_lemma36_delta(rho: float, xi: float, epsilon: float) -> float:
    """δ for (ξ, ρ)-zCDP at ε > ξ + ρ [Bun–Steinke 2016, Lemma 3.6, the last (smallest) option].

    δ = e^{−(ε−ξ−ρ)²/4ρ} · 2 / (1 + a + √((1 + a)² + 4/(πρ))),  a = (ε − ξ − ρ)/(2ρ).
    Returns 1 when ε ≤ ξ + ρ (the lemma does not apply). Evaluated in log space; a value below the
    smallest float is reported as 5e-324 (rounded up).
    """
    s = epsilon - xi - rho
    if s <= 0.0:
        return 1.0
    t = s / (2.0 * math.sqrt(rho))  # the exponent is −t²
    if t > 1e150:  # e^{−t²} underflows, and the factor 2/denominator is ≤ 1
        return 5e-324
    log_a = math.log(s) - math.log(2.0 * rho)
    log_v = math.log(2.0) - 0.5 * (math.log(math.pi) + math.log(rho))  # v = √(4/(πρ)); (πρ keeps
    # few bits for a subnormal ρ, log ρ all of them)
    if max(log_a, log_v) < 700.0:  # (the direct forms, as accurate as before)
        a = s / (2.0 * rho)
        log_denom = math.log(1.0 + a + math.hypot(1.0 + a, math.sqrt(4.0 / (math.pi * rho))))
    else:
        # a or v past the floats (subnormal ρ): the denominator is ≥ max(2a, v); a lower bound
        # (δ errs upwards by < 1 + √2), moved down against the rounding of the logs. (It used to
        # be taken as infinite, δ as 5e-324: ZCDP(1e-310) gave ε(1e-300) = 9e-301, where the
        # Gaussian of that ρ needs 3.6e-154.)
        log_denom = max(math.log(2.0) + log_a, log_v) * (1.0 - 2.0**-40)
    # the exponent's rounding is absolute: a relative 2⁻⁵⁰ of its terms' sizes (δ at ρ = 1e-200
    # read 3e-14 below the lemma's value with only 4 ulps)
    pad = (t * t + abs(log_denom) + 1.0) * 2.0**-50
    return min(1.0, _math.up(_math.exp_up(-t * t + math.log(2.0) - log_denom + pad)))


def zcdp_delta(rho: float, xi: float, epsilon: float) -> float:
    """Smallest certified δ(ε) for (ξ, ρ)-zCDP: the minimum of every valid analysis.

    ρ = 0 is pure ξ-DP (BS16 Lemma 3.2) whose tight profile is randomized response's. Otherwise the
    minimum of CKS20 Cor 13, BS16 Lemma 3.6 (which implies Lemma 3.5) and the Pinsker and
    Bretagnolle–Huber bounds on the total variation with KL ≤ ξ + ρ.
    """
    if rho == 0.0:
        return _divergences.rr_delta(max(xi, 0.0), epsilon)
    if xi + rho <= 0.0:  # KL ≤ ξ + ρ = 0: the two output laws are equal
        return 0.0
    if math.isinf(rho):
        return 0.0 if math.isinf(epsilon) else 1.0
    if math.isinf(epsilon):
        return 0.0
    if epsilon - xi - rho > 2.0 * math.sqrt(745.0 * rho):
        # BS16 Lemma 3.5's tail e^{−(ε−ξ−ρ)²/4ρ} is below the smallest float: report it rounded up.
        return 5e-324
    return min(
        zcdp_cks20_delta(rho, xi, epsilon),
        bs16_lemma36_delta(rho, xi, epsilon),
        kl_tv_delta(max(xi + rho, 0.0)),
    )


def zcdp_epsilon(rho: float, xi: float, delta: float) -> float:
    """Smallest certified ε(δ) for (ξ, ρ)-zCDP (the inverse of :func:`zcdp_delta`'s analyses)."""
    if rho == 0.0:
        return _divergences.rr_epsilon(max(xi, 0.0), delta)
    if xi + rho <= 0.0:  # KL ≤ ξ + ρ = 0: the two output laws are equal
        return 0.0
    if delta <= 0.0 or math.isinf(rho):
        return math.inf
    if delta >= kl_tv_delta(max(xi + rho, 0.0)):
        return 0.0
    best = min(zcdp_cks20_epsilon(rho, xi, delta), bs16_lemma35_epsilon(rho, xi, delta))
    # BS16 Lemma 3.6 may beat CKS20 in some regimes: invert it on [ξ + ρ, best] by certified
    # bisection.
    lo = xi + rho
    if bs16_lemma36_delta(rho, xi, best) <= delta and best > lo:
        e36 = _math.smallest_valid(lambda e: bs16_lemma36_delta(rho, xi, e) <= delta, lo, best)
        best = min(best, e36)
    return max(0.0, best)


# --- arbitrary RDP curves ------------------------------------------------------------------------


def rdp_curve_delta(points: Iterable[tuple[float, float]], epsilon: float) -> float:
    """min over RDP points (α, τ) of the CKS20 Prop 12 δ (α = ∞ points: RR profile of τ-DP)."""
    best = 1.0
    for alpha, tau in points:
        if alpha == math.inf:
            d = _divergences.rr_delta(tau, epsilon)
        elif alpha == 1.0:
            d = kl_tv_delta(tau)
        else:
            d = cks20_delta(alpha, tau, epsilon)
        best = min(best, d)
    return best


def rdp_curve_epsilon(points: Iterable[tuple[float, float]], delta: float) -> float:
    """min over RDP points (α, τ) of the CKS20 Prop 12 ε (α = ∞ points: RR profile of τ-DP)."""
    best = math.inf
    for alpha, tau in points:
        if alpha == math.inf:
            e = _divergences.rr_epsilon(tau, delta)
        elif alpha == 1.0:
            e = 0.0 if delta >= kl_tv_delta(tau) else math.inf
        else:
            e = cks20_epsilon(alpha, tau, delta)
        best = min(best, e)
    return best


def optimise_over_orders(
    bound: Callable[[float], float], lo: float = 1.0 + 1e-6, hi: float = 1e6
) -> float:
    """min over α ∈ [lo, hi] of ``bound(α)`` (each value a valid bound), searched on log(α − 1)."""

    def on_log_scale(u: float) -> float:
        return bound(1.0 + math.exp(u))

    _, value = _math.minimize_scalar(on_log_scale, math.log(lo - 1.0), math.log(hi - 1.0))
    return value
