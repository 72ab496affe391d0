"""Releasing real values on a power-of-two grid with exact integer noise (design principle 5).

A continuous mechanism cannot be run on a computer as written (Mironov 2012: floating-point noise
leaks the input through its low bits). The Laplace and Gaussian mechanisms therefore release on a
grid γℤ with γ a power of two:

1. the query value is rounded to the nearest multiple of γ, halves up (exact: dividing by a power
   of two only shifts the exponent, and ``rint`` is exact; its ties, which go to the even
   neighbour, are moved up). Rounding halves up is monotone and commutes with integer shifts, so
   if |x − x′| ≤ Δ then |round(x/γ) − round(x′/γ)| ≤ ⌈Δ/γ⌉ (ties to even would allow Δ/γ + 1
   when Δ/γ is odd, e.g. 0.5 and 1.5 rounding to 0 and 2). So the rounded query has
   sensitivity Δ_eff = γ⌈Δ/γ⌉ (= Δ when γ divides Δ, e.g. Δ = 1), and the privacy accounting
   uses Δ_eff;
2. integer noise is added in grid units, drawn by the exact samplers of
   :mod:`sharpdp.mechanisms._samplers`, and the result is multiplied back by γ.

**The automatic grid.** With s the noise scale (σ, or the Laplace scale b) and Δ > 0,

    γ = 2^max(⌊log₂ min(s, Δ)⌋ − 30, ⌈log₂ s⌉ − 50, −1074):

the largest power of two ≤ 2⁻³⁰·min(s, Δ), but never finer than s·2⁻⁵⁰ (at most 2⁵⁰ grid steps
per unit of noise scale: the exact samplers draw int64 noise, and allow at most 2⁵²) nor than the
smallest subnormal. The noise is resolved to at least 30 bits (s/γ ≥ 2³⁰) unless s is within
2³⁰ of the smallest subnormal (``Laplace(5e-324)`` has γ = s: the grid can be no finer).
The value released must lie within 2⁶² grid steps of 0: |x| < 2³² at the default grid of
s ≥ Δ = 1 (γ = 2⁻³⁰); a coarser ``granularity=`` releases larger values.

**Where Δ_eff/Δ − 1 ≤ 2⁻³⁰ holds.** Always Δ ≤ Δ_eff < Δ + γ. If s ≤ 2^(⌊log₂ Δ⌋ + 20) — that is,
s/Δ ≤ 2²⁰ when Δ is a power of two; s/Δ ≤ 2¹⁹ suffices for every Δ — then ⌈log₂ s⌉ − 50 ≤
⌊log₂ Δ⌋ − 30, the first term wins and γ ≤ 2⁻³⁰·Δ (or γ = 2⁻¹⁰⁷⁴, which divides every float):
so Δ_eff/Δ − 1 ≤ 2⁻³⁰. Beyond that range the second term wins: γ = 2^(⌈log₂ s⌉ − 50) > 2⁻³⁰·Δ,
and what holds is 0 ≤ Δ_eff − Δ < γ < 2⁻⁴⁹·s (Δ_eff = Δ when γ divides Δ). The accounting stays
exact for what is released, with the larger Δ_eff: the privacy parameter Δ_eff/s is then below
Δ/s + 2⁻⁴⁹ < 2⁻¹⁹ + 2⁻⁴⁹. For example ``Gaussian(1e12, sensitivity=0.3)`` has γ = 2⁻¹⁰ and
Δ_eff = 308·2⁻¹⁰ = 0.30078125, and ``Gaussian(1e16)`` has γ = Δ_eff = 16. Keeping the relative
promise at every ratio would need s/γ ≥ 2³⁰·s/Δ grid steps per unit of scale, beyond the int64
samplers once s/Δ > 2²²; a coarser grid is the price of exact sampling there. A finer grid can be
passed explicitly (``granularity``) within the 2⁵⁰ limit.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from sharpdp import _validate
from sharpdp.errors import InvalidParameter
from sharpdp.mechanisms import _samplers

__all__ = [
    "auto_granularity",
    "check_granularity",
    "effective_sensitivity",
    "from_grid",
    "rounded_laplace",
    "to_grid",
]

_RESOLUTION_BITS = 30
_MAX_SCALE_BITS = 50  # noise scale in grid units stays below 2**51 (the samplers allow 2**52)
_MAX_UNITS = 2.0**62  # |value/γ| must fit in int64 with room for the noise
_MIN_EXPONENT = -1074  # 2**-1074 = 5e-324, the smallest positive float


def _floor_log2(x: float) -> int:
    """⌊log₂ x⌋ for a positive float, exactly (``math.log2`` rounds near powers of two)."""
    _, exponent = math.frexp(x)  # x = mantissa·2^exponent, mantissa ∈ [½, 1)
    return exponent - 1


def _ceil_log2(x: float) -> int:
    """⌈log₂ x⌉ for a positive float, exactly."""
    mantissa, exponent = math.frexp(x)
    return exponent - 1 if mantissa == 0.5 else exponent


def auto_granularity(noise_scale: float, sensitivity: float) -> float:
    """The default grid step γ = 2^max(⌊log₂ min(s, Δ)⌋ − 30, ⌈log₂ s⌉ − 50, −1074), s the noise
    scale (Δ = 0 ignored). Δ_eff/Δ − 1 ≤ 2⁻³⁰ holds when s ≤ 2^(⌊log₂ Δ⌋ + 20); beyond, only
    Δ_eff − Δ < γ < 2⁻⁴⁹·s (see the module docstring)."""
    base = min(noise_scale, sensitivity) if sensitivity > 0 else noise_scale
    exponent = _floor_log2(base) - _RESOLUTION_BITS
    exponent = max(exponent, _ceil_log2(noise_scale) - _MAX_SCALE_BITS)
    return math.ldexp(1.0, max(exponent, _MIN_EXPONENT))  # never below the smallest subnormal


def check_granularity(name: str, value: object, noise_scale: float) -> float:
    """Validate a user-given grid step: a positive power of two, fine enough for the noise."""
    g = _validate.positive(name, value)
    mantissa, _ = math.frexp(g)
    if mantissa != 0.5:
        raise InvalidParameter(f"{name} must be a power of two (e.g. 2**-20), got {g!r}")
    if noise_scale / g > 2.0**_MAX_SCALE_BITS:
        raise InvalidParameter(
            f"{name}={g!r} is too fine for a noise scale of {noise_scale!r} "
            f"(at most 2**{_MAX_SCALE_BITS} grid steps per unit of scale)"
        )
    return g


def effective_sensitivity(sensitivity: float, granularity: float) -> float:
    """Δ_eff = γ⌈Δ/γ⌉, the sensitivity of the query rounded to the grid γℤ (rounded up to a float)."""
    exact = math.ceil(Fraction(sensitivity) / Fraction(granularity)) * Fraction(granularity)
    try:
        value = float(exact)
    except OverflowError:
        raise InvalidParameter(
            f"sensitivity {sensitivity!r} rounded up to the grid step {granularity!r} exceeds the "
            "float range"
        ) from None
    return math.nextafter(value, math.inf) if Fraction(value) < exact else value


def to_grid(value: object, granularity: float) -> tuple[npt.NDArray[np.int64], bool]:
    """round(value/γ) as int64, and whether the input was a scalar.

    Raises:
        InvalidParameter: for non-numeric, NaN or infinite values, or values too large for the grid.
    """
    try:
        x = np.asarray(value, dtype=np.float64)
    except OverflowError:  # a Fraction or int beyond the float range
        raise InvalidParameter(
            f"value must be finite, got {value!r} (beyond the float range)"
        ) from None
    except (TypeError, ValueError):
        raise InvalidParameter(
            f"value must be a number or an array of numbers, got {value!r}"
        ) from None
    if np.asarray(value).dtype == np.bool_:
        raise InvalidParameter(f"value must be numeric, got booleans {value!r}")
    if not np.all(np.isfinite(x)):
        raise InvalidParameter(f"value must be finite, got {value!r}")
    with np.errstate(over="ignore", invalid="ignore"):  # beyond the float range: rejected below
        y = x / granularity  # exact: division by a power of two
        units = np.rint(y)
        # halves up, not to even: rint's ties go to the even neighbour, so two values Δ apart
        # (Δ/γ odd) at ties would round Δ/γ + 1 apart; y − rint(y) is exact
        units = units + ((y - units) == 0.5)
    if units.size and float(np.max(np.abs(units))) >= _MAX_UNITS:
        raise InvalidParameter(
            f"value {value!r} is too large for the grid step {granularity!r} (|value/step| must be "
            "below 2**62); pass a coarser granularity"
        )
    return units.astype(np.int64), x.ndim == 0


def from_grid(units: npt.NDArray[np.int64], granularity: float, scalar: bool) -> Any:
    """units·γ as float64 (exactly when |units| < 2⁵³; otherwise rounded: post-processing).

    Raises:
        InvalidParameter: if a released value overflows the float range.
    """
    with np.errstate(over="ignore"):
        out = units.astype(np.float64) * granularity
    if not np.all(np.isfinite(out)):
        # a function of the released value only (post-processing), but useless to the caller
        raise InvalidParameter(
            "the released value lies beyond the float range; the noise scale is too large "
            "(this draw counts as a use of the mechanism)"
        )
    return float(out) if scalar else out


def rounded_laplace(t: Fraction, size: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """round(L) for L ~ Laplace(t) (density e^{−|y|/t}/(2t)), exactly, as int64.

    The law of K = round(L) is P[K = 0] = 1 − e^{−1/(2t)} and, for m ≥ 1,
    P[K = ±m] = sinh(1/(2t))·e^{−m/t} = ½·e^{−1/(2t)}·(1 − e^{−1/t})·e^{−(m−1)/t}. So K = 0 unless
    an exact Bernoulli(e^{−1/(2t)}) succeeds, in which case K = ±(1 + G) with a fair sign and G
    one-sided geometric with ratio e^{−1/t} (:func:`~sharpdp.mechanisms._samplers.geometric`).
    Since K is a function of the continuous Laplace noise, releasing γ(round(x/γ) + K) is
    post-processing of the continuous Laplace mechanism applied to the rounded query.
    """
    nonzero = _samplers.bernoulli_exp(1 / (2 * t), size=size, rng=rng).astype(bool)
    sign = 2 * _samplers.uniform_int(2, size=size, rng=rng) - 1
    magnitude = 1 + _samplers.geometric(t, size=size, rng=rng)
    return np.where(nonzero, sign * magnitude, 0).astype(np.int64)
