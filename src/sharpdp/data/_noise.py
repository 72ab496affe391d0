"""Integer noise for released counts and sums: calibration, tails, confidence intervals.

Every released count or (grid-quantised) sum is an integer, so its noise is the discrete Laplace
(two-sided geometric) or the discrete Gaussian of Canonne–Kamath–Steinke 2020 (arXiv 2004.00010),
sampled exactly by :class:`sharpdp.DiscreteLaplace` / :class:`sharpdp.DiscreteGaussian`.

A release of one integer per key, where one person moves at most ``copies`` keys by at most
``sensitivity`` each, is charged as ``copies`` runs of the scalar mechanism (the product of the
per-key pairs dominates the vector pair; composition of ``copies`` mechanisms bounds it). Its pure
ε is copies·Δ/t, the ℓ1 bound; its zCDP ρ is copies·Δ²/(2σ²) = Δ₂²/(2σ²), the ℓ2 bound.

Tail probabilities here are *upper bounds* (they feed δ of partition selection and the width of
confidence intervals, both of which must err against the user): closed forms for the discrete
Laplace, and for the discrete Gaussian positive-term sums for σ ≤ 2^16 or integral bounds of the
decreasing density beyond, each padded upwards.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeAlias

import numpy as np

import sharpdp as sdp
from sharpdp.errors import InvalidParameter, NotImplied

__all__ = [
    "IntegerNoise",
    "NoisePlan",
    "calibrate_integer_noise",
    "expected_abs",
    "half_width",
    "largest_rho",
    "least_integer",
    "magnitude",
    "upper_tail",
]

IntegerNoise: TypeAlias = sdp.DiscreteLaplace | sdp.DiscreteGaussian

_PAD = 1e-9  # relative upward pad on computed tail probabilities (float summation error ≪ this)
_DIRECT_SIGMA = 2.0**16  # sum the discrete Gaussian directly up to this σ
_TAIL_SIGMAS = 40.0  # e^{-800}: beyond 40σ the density is below the smallest normal float


@dataclass(frozen=True, slots=True)
class NoisePlan:
    """The noise of one released statistic: the scalar mechanism and how many keys one person moves.

    Attributes:
        mechanism: a discrete Laplace or Gaussian with the per-key sensitivity.
        copies: the number of keys one person can move (the charge is ``copies`` runs).
        route: how it was calibrated (shown by ``explain()``).
    """

    mechanism: IntegerNoise
    copies: int
    route: str


def _up(x: float) -> float:
    if x <= 0.0 or math.isinf(x):
        return max(x, 0.0)
    return min(1.0, math.nextafter(x * (1.0 + _PAD), math.inf))


# --------------------------------------------------------------------------------------------------
# Tails
# --------------------------------------------------------------------------------------------------


def _dl_tail(scale: Fraction, a: int) -> float:
    """P[Z ≥ a] for the discrete Laplace of scale t: q^a/(1 + q) for a ≥ 1 (q = e^{−1/t})."""
    r = 1.0 / float(scale)
    q = math.exp(-r)
    if a >= 1:
        return _up(math.exp(-a * r - math.log1p(q)))
    # a ≤ 0: 1 − P[Z ≥ 1 − a]; a lower bound of the subtracted tail keeps the result an upper bound
    lower = math.exp((a - 1) * r - math.log1p(q)) * (1.0 - _PAD)
    return _up(1.0 - lower)


def _dg_weights(sigma: float, lo: int, hi: int) -> float:
    """Σ_{z=lo}^{hi} e^{−z²/(2σ²)} (lo ≥ 0), summed in chunks, small terms first."""
    total = 0.0
    chunk = 1 << 20
    two_s2 = 2.0 * sigma * sigma
    starts = list(range(lo, hi + 1, chunk))
    for start in reversed(starts):
        z = np.arange(start, min(hi, start + chunk - 1) + 1, dtype=np.float64)
        total += float(np.sum(np.exp(-(z * z) / two_s2)[::-1]))
    return total


@functools.lru_cache(maxsize=64)
def _dg_theta(sigma: float) -> float:
    """A lower bound on θ = Σ_z e^{−z²/(2σ²)} (terms beyond 40σ dropped; all are ≥ 0)."""
    return 1.0 + 2.0 * _dg_weights(sigma, 1, math.ceil(_TAIL_SIGMAS * sigma) + 2)


def _dg_tail(sigma: float, a: int) -> float:
    """An upper bound on P[Z ≥ a] for the discrete Gaussian with parameter σ, a ≥ 1."""
    if sigma <= _DIRECT_SIGMA:
        top = math.ceil(_TAIL_SIGMAS * sigma) + 2
        if a > top:
            return 5e-324  # below e^{-800}; reported as the smallest positive float
        theta = _dg_theta(sigma)
        num = _dg_weights(sigma, a, top) + 1e-300  # + the (< e^{-800}) remainder beyond top
        return _up(num / theta)
    # f decreasing on [0, ∞): Σ_{z≥a} f(z) ≤ f(a) + ∫_a^∞ f, and θ ≥ 1 + 2∫_1^∞ f.
    s2 = sigma * math.sqrt(2.0)
    half = sigma * math.sqrt(0.5 * math.pi)
    num = math.exp(-(a * a) / (2.0 * sigma * sigma)) + half * math.erfc(a / s2)
    theta = 1.0 + 2.0 * half * math.erfc(1.0 / s2)
    return _up(num / theta)


def upper_tail(noise: IntegerNoise, a: int) -> float:
    """An upper bound on P[Z ≥ a] for the noise Z of ``noise`` (any integer a).

    Mass exactly at ``a`` is included (``≥``, not ``>``).

    Example:
        >>> import sharpdp as sdp
        >>> round(upper_tail(sdp.DiscreteLaplace(1), 1), 6)  # q/(1 + q), q = 1/e
        0.268941
    """
    if isinstance(noise, sdp.DiscreteLaplace):
        return _dl_tail(Fraction(noise.scale), a)
    if a <= 0:  # symmetric: P[Z ≥ a] = 1 − P[Z ≥ 1 − a] ≤ 1 (kept simple: only used for a ≥ 1)
        return 1.0
    return _dg_tail(float(noise.sigma), a)


def half_width(noise: IntegerNoise, level: float) -> int:
    """The least integer w ≥ 0 with P[|Z| ≤ w] ≥ ``level`` (certified by upper tails).

    P[|Z| > w] = 2·P[Z ≥ w + 1] ≤ 2·``upper_tail(noise, w + 1)``, so [y − w, y + w] covers the
    true value with probability ≥ ``level`` (exactly computed tails, rounded outward).

    Example:
        >>> import sharpdp as sdp
        >>> half_width(sdp.DiscreteLaplace(1), 0.5)   # P[|Z| ≤ 0] = (1 − q)/(1 + q) ≈ 0.46
        1
    """
    return _half_width(noise, 1.0 - float(level))


def half_width_missing(noise: IntegerNoise, miss: float) -> int:
    """:func:`half_width` at level 1 − ``miss``, for a miss probability too small to survive
    being subtracted from 1 (a union bound's share of 1 − level near 1: (1 − level)/2 can be
    below half an ulp of 1)."""
    return _half_width(noise, float(miss))


@functools.lru_cache(maxsize=256)
def _half_width(noise: IntegerNoise, miss: float) -> int:
    def valid(w: int) -> bool:
        return 2.0 * upper_tail(noise, w + 1) <= miss

    # start the search below the answer (the continuous quantiles are within a factor 0.8)
    if isinstance(noise, sdp.DiscreteLaplace):
        guess = float(Fraction(noise.scale)) * math.log(1.0 / miss)
    else:
        guess = float(noise.sigma) * math.sqrt(2.0 * math.log(1.0 / miss))
    start = max(0, math.floor(0.5 * guess) - 2)
    return least_integer(valid, 0 if valid(start) else start)


def least_integer(valid: Callable[[int], bool], start: int) -> int:
    """The least integer n ≥ ``start`` with ``valid(n)``, for a predicate monotone in n."""
    if valid(start):
        return start
    lo, step = start, 1  # valid(lo) is false
    while not valid(lo + step):
        lo += step
        step *= 2
    hi = lo + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if valid(mid):
            hi = mid
        else:
            lo = mid
    return hi


def expected_abs(noise: IntegerNoise) -> float:
    """E|Z|: 2q/(1 − q²) for the discrete Laplace; a direct sum for the discrete Gaussian.

    Example:
        >>> import sharpdp as sdp
        >>> round(expected_abs(sdp.DiscreteLaplace(1)), 6)  # 2e^{-1}/(1 − e^{-2})
        0.850918
    """
    if isinstance(noise, sdp.DiscreteLaplace):
        q = math.exp(-1.0 / float(Fraction(noise.scale)))
        return 2.0 * q / -math.expm1(-2.0 / float(Fraction(noise.scale)))
    sigma = float(noise.sigma)
    if sigma > _DIRECT_SIGMA:
        return sigma * math.sqrt(2.0 / math.pi)
    top = math.ceil(_TAIL_SIGMAS * sigma) + 2
    z = np.arange(1, top + 1, dtype=np.float64)
    w = np.exp(-(z * z) / (2.0 * sigma * sigma))
    return float(2.0 * np.sum(z * w) / (1.0 + 2.0 * np.sum(w)))


# --------------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------------


def magnitude(noise: IntegerNoise) -> float:
    """A magnitude |Z| exceeds with probability at most 2e^{−800}: 800·t for the discrete Laplace
    (P[|Z| ≥ a] ≤ 2e^{−a/t}), 40·σ for the discrete Gaussian (sub-Gaussian with variance proxy
    σ², Canonne–Kamath–Steinke 2020, so P[|Z| ≥ a] ≤ 2e^{−a²/(2σ²)})."""
    if isinstance(noise, sdp.DiscreteLaplace):
        return 800.0 * float(noise.scale)
    return _TAIL_SIGMAS * float(noise.sigma)


def _finite(name: str, value: float) -> float:
    if not math.isfinite(value):
        raise InvalidParameter(f"{name} would be infinite (the target is too small)")
    return value


def _pure_laplace(epsilon: float, sensitivity: int, copies: int) -> sdp.DiscreteLaplace:
    """The least discrete-Laplace scale t (a float) with copies·Δ/t ≤ ε, checked in rationals."""
    t = _finite("the noise scale", copies * sensitivity / epsilon)
    while Fraction(copies * sensitivity) / Fraction(t) > Fraction(epsilon):
        t = math.nextafter(t, math.inf)
    return sdp.DiscreteLaplace(t, sensitivity=sensitivity)


def _zcdp_gaussian(rho: float, sensitivity: int, copies: int) -> sdp.DiscreteGaussian:
    """The least σ (a float) with copies·Δ²/(2σ²) ≤ ρ, checked in rationals."""
    # √(c·Δ²/2)/√ρ: 2ρ overflowed at ρ = 1e308, making σ = 0 and the check below divide by it
    sigma = _finite("the noise σ", math.sqrt(copies * sensitivity**2 / 2.0) / math.sqrt(rho))
    if sigma == 0.0:
        raise InvalidParameter(f"the noise σ would be 0 (ρ = {rho!r} is too large)")

    def meets(s: float) -> bool:
        return Fraction(copies * sensitivity**2) / (2 * Fraction(s) ** 2) <= Fraction(rho)

    while not meets(sigma):
        sigma = math.nextafter(sigma, math.inf)
    while meets(below := math.nextafter(sigma, 0.0)) and below > 0.0:  # the least such float
        sigma = below
    return sdp.DiscreteGaussian(sigma, sensitivity=sensitivity)


def _approx_gaussian(
    target: sdp.ApproxDP, sensitivity: int, copies: int
) -> sdp.DiscreteGaussian | None:
    """A discrete Gaussian whose ``copies``-fold use meets (ε, δ); None if none does.

    One copy: the least σ by the exact profile (``sdp.calibrate``). Several: the largest ρ whose
    (ε, δ) conversion (``sdp.ZCDP(ρ).delta``, Canonne–Kamath–Steinke 2020) fits, split over the
    copies (zCDP adds): valid and fast, if slightly more noise than the exact composed profile
    (the accountant still charges the exact composition).
    """
    if target.delta_ == 0.0:
        return None
    if copies == 1:
        try:
            return sdp.calibrate(sdp.DiscreteGaussian, target, sensitivity=sensitivity)
        except NotImplied:
            return None
    rho = largest_rho(target)
    return None if rho <= 0.0 else _zcdp_gaussian(rho, sensitivity, copies)


def largest_rho(target: sdp.ApproxDP) -> float:
    """The largest ρ (to 80 bisection steps) with ``sdp.ZCDP(ρ).delta(ε) ≤ δ``; 0.0 if none.

    ρ-zCDP implies (ε, δ(ε))-DP by its conversion (Canonne–Kamath–Steinke 2020, as
    ``sdp.ZCDP.delta`` computes it). Errs low: only a ρ that was checked to fit is returned.

    Example:
        >>> import sharpdp as sdp
        >>> rho = largest_rho(sdp.ApproxDP(1.0, 1e-6))
        >>> sdp.ZCDP(rho).delta(1.0) <= 1e-6 < sdp.ZCDP(rho * 1.001).delta(1.0)
        True
    """
    eps, delta = target.epsilon_, target.delta_
    if delta <= 0.0:
        return 0.0
    lo, hi = 0.0, max(1.0, eps)
    while sdp.ZCDP(hi).delta(eps) <= delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(80):  # lo always fits
        mid = 0.5 * (lo + hi)
        if sdp.ZCDP(mid).delta(eps) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def calibrate_integer_noise(privacy: sdp.Guarantee, sensitivity: int, copies: int) -> NoisePlan:
    """The least-noise integer mechanism whose ``copies``-fold use meets ``privacy``.

    * ``PureDP(ε)``: discrete Laplace, t = copies·Δ/ε (exact: the pure ε of the discrete Laplace
      is Δ/t, Canonne–Kamath–Steinke 2020);
    * ``ZCDP(ρ)`` (and the ρ of ``ApproxZCDP``): discrete Gaussian, σ² = copies·Δ²/(2ρ) (Canonne–
      Kamath–Steinke 2020: Δ²/(2σ²)-zCDP, additive over coordinates);
    * ``ApproxDP(ε, δ)``: the discrete Laplace above (for one copy, the least scale by its exact
      (ε, δ) profile) and a discrete Gaussian meeting (ε, δ) (one copy: exact profile; several:
      via zCDP, see ``_approx_gaussian``); the one with the smaller E|Z| (computed exactly) wins.

    Args:
        privacy: the target guarantee of the statistic.
        sensitivity: Δ, the most one person moves one key's integer (≥ 1).
        copies: how many keys one person moves (≥ 1).

    Returns:
        The :class:`NoisePlan`.

    Raises:
        InvalidParameter: an unsupported target type (named ``privacy``), or ε = 0 / ρ = 0.

    Example:
        >>> import sharpdp as sdp
        >>> calibrate_integer_noise(sdp.PureDP(0.5), 1, 2).mechanism.scale
        4.0
    """
    try:
        return _calibrate_integer_noise(privacy, sensitivity, copies)
    except InvalidParameter as err:
        if str(err).startswith("privacy"):
            raise
        # a target so loose that the noise is below what the samplers represent
        raise InvalidParameter(
            f"privacy {privacy!r} cannot be met by integer noise: {err}"
        ) from None


def _calibrate_integer_noise(privacy: sdp.Guarantee, sensitivity: int, copies: int) -> NoisePlan:
    if isinstance(privacy, sdp.PureDP):
        if privacy.epsilon_ <= 0.0:
            raise InvalidParameter(f"privacy must have epsilon > 0, got {privacy!r}")
        return NoisePlan(
            _pure_laplace(privacy.epsilon_, sensitivity, copies),
            copies,
            "discrete Laplace: t = copies·Δ/ε (Canonne–Kamath–Steinke 2020: Δ/t-DP per key)",
        )
    if isinstance(privacy, sdp.ZCDP | sdp.ApproxZCDP):
        if privacy.rho <= 0.0:
            raise InvalidParameter(f"privacy must have rho > 0, got {privacy!r}")
        return NoisePlan(
            _zcdp_gaussian(privacy.rho, sensitivity, copies),
            copies,
            "discrete Gaussian: σ² = copies·Δ²/(2ρ) (Canonne–Kamath–Steinke 2020: Δ²/(2σ²)-zCDP "
            "per key, tight)",
        )
    if isinstance(privacy, sdp.ApproxDP):
        if privacy.epsilon_ <= 0.0:
            raise InvalidParameter(f"privacy must have epsilon > 0, got {privacy!r}")
        laplace = _pure_laplace(privacy.epsilon_, sensitivity, copies)
        if copies == 1 and privacy.delta_ > 0.0:
            laplace = min(
                laplace,
                sdp.calibrate(sdp.DiscreteLaplace, privacy, sensitivity=sensitivity),
                key=lambda m: Fraction(m.scale),
            )
        gaussian = _approx_gaussian(privacy, sensitivity, copies)
        if gaussian is not None and expected_abs(gaussian) < expected_abs(laplace):
            return NoisePlan(
                gaussian,
                copies,
                "discrete Gaussian meeting the (ε, δ) target (exact profile for one key, zCDP "
                "with the CKS20 conversion for several; smaller E|Z| than the discrete Laplace)",
            )
        return NoisePlan(
            laplace,
            copies,
            "discrete Laplace: least scale meeting the target (smaller E|Z| than the discrete "
            "Gaussian)",
        )
    raise InvalidParameter(
        f"privacy must be sdp.PureDP, sdp.ApproxDP, sdp.ZCDP or sdp.ApproxZCDP, got {privacy!r}"
    )
