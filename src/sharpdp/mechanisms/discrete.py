"""Discrete additive noise mechanisms: discrete Laplace and discrete Gaussian.

Both release ``f(x) + Z`` for an integer-valued query ``f`` with integer noise ``Z`` drawn by the
exact samplers of :mod:`sharpdp.mechanisms._samplers` (Canonne–Kamath–Steinke 2020, arXiv
2004.00010, Algorithms 1–3). Their privacy characterisations below are *exact* (not bounds from the
continuous mechanisms): closed forms for the discrete Laplace, summation with rigorously bounded
tails for the discrete Gaussian, each rounded upwards.

Neighbouring relation: inputs whose query values differ by an integer d with |d| ≤ ``sensitivity``.
Worst case. Both noise laws are log-concave and symmetric on ℤ, so the shifted family
P_d = law of d + Z has a monotone likelihood ratio in the output. By Karlin–Rubin the threshold tests
are most powerful against every d > 0, and their power grows with d, so the trade-off curve of
(P_0, P_d) decreases with d. By Blackwell's theorem the pair for a smaller shift is then a
post-processing of the pair for d = Δ. So every divergence (δ(ε), D_α) is largest at |d| = Δ. The
reflection z ↦ Δ − z maps (P_0, P_Δ) onto (P_Δ, P_0), so both orders of the pair agree.

Array releases. ``release`` adds independent noise to every entry. The characterisation is that
of *one* scalar release. If an input change can move several entries, the release is a
composition: compose k copies (``sharpdp.accounting.composition.compose``), or, for the discrete Gaussian
and an L2 sensitivity Δ₂, use the zCDP bound Δ₂²/(2σ²), which is additive over coordinates
(CKS20).

Parameters are exact rationals: ``scale``/``sigma`` may be ``int``, ``float``, ``Fraction`` or
``Decimal``. A float is used *exactly* as the dyadic rational it denotes (``0.1`` means
3602879701896397/2^55, as in the samplers). The characterisation is computed for that exact value,
so it describes the law that is actually sampled.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, ClassVar, TypeAlias, overload

import numpy as np
from numpy.typing import NDArray

from sharpdp import _math, _tails
from sharpdp.conversions import register
from sharpdp.errors import InvalidParameter, NotImplied, NumericalError
from sharpdp.guarantees import ZCDP
from sharpdp.mechanisms import _samplers
from sharpdp.mechanisms._samplers import RNGLike
from sharpdp.mechanisms.base import Mechanism

__all__ = [
    "DiscreteGaussian",
    "DiscreteLaplace",
    "discrete_gaussian_to_zcdp",
    "discrete_laplace_to_zcdp",
]

IntArray: TypeAlias = NDArray[np.int64]
Exact: TypeAlias = int | float | Fraction
"""A noise parameter as stored: an ``int``, a ``float`` (an exact dyadic) or a ``Fraction``."""

_INT64_MAX = 2**63 - 1
_VALUE_BOUND = 2**62  # released values: |value| < 2^62 and |noise| < 2^62, so the sum fits int64
_MAX_PARAMETER = 2**52  # the samplers' limit on scale and sigma
# The profiles divide by σ² (discrete Gaussian) or t (discrete Laplace) in floating point; below
# this parameter the law is the point mass at 0 to within e^{-2^256} anyway.
_MIN_SIGMA = Fraction(1, 2**256)
_LOG_HALF_PI_SQRT = 0.5 * math.log(0.5 * math.pi)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LN2 = math.log(2.0)

# Relative safety margins that absorb floating-point error. Closed forms are accurate to a few
# ulps (about 1e-15); summations and Euler–Maclaurin sums to about 1e-13.
_CLOSED_FORM_PAD = 2e-14
_SUM_PAD = 1e-12


# --------------------------------------------------------------------------------------------------
# Parameters and small exact helpers
# --------------------------------------------------------------------------------------------------


def _noise_parameter(name: str, value: object, *, numerator_cap: int | None) -> Exact:
    """Validate a positive rational noise parameter; return it as an exact int, float or Fraction.

    The value returned is what the sampler receives, so the characterisation (computed from
    ``Fraction(value)``) describes exactly the realised law.
    """
    if isinstance(value, bool | np.bool_):
        raise InvalidParameter(f"{name} must be a positive rational number, got {value!r}")
    stored: Exact
    if isinstance(value, numbers.Integral):
        stored = int(value)
    elif isinstance(value, float):
        stored = value
    elif isinstance(value, np.floating):
        if not np.isfinite(value):
            raise InvalidParameter(f"{name} must be finite, got {value!r}")
        exact = Fraction(*value.as_integer_ratio())
        stored = float(value) if Fraction(float(value)) == exact else exact
    elif isinstance(value, Fraction):
        stored = int(value) if value.denominator == 1 else value
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidParameter(f"{name} must be finite, got {value!r}")
        exact = Fraction(value)
        stored = int(exact) if exact.denominator == 1 else exact
    else:
        raise InvalidParameter(
            f"{name} must be an int, float, Fraction or Decimal, got {value!r} "
            f"({type(value).__name__})"
        )
    if isinstance(stored, float):
        if math.isnan(stored):
            raise InvalidParameter(f"{name} must not be NaN")
        if math.isinf(stored):
            raise InvalidParameter(f"{name} must be finite, got {stored!r}")
    exact = Fraction(stored)
    if exact <= 0:
        raise InvalidParameter(f"{name} must be > 0, got {value!r}")
    if exact > _MAX_PARAMETER:
        raise InvalidParameter(
            f"{name} must be <= 2**52 (samples must fit in int64), got {value!r}"
        )
    if numerator_cap is not None and exact.numerator > numerator_cap:
        raise InvalidParameter(
            f"{name} = {value!r} has a numerator above 2**62 in lowest terms; use a float or a "
            "Fraction with smaller terms"
        )
    return stored


def _sensitivity(value: object) -> int:
    """An integer sensitivity in [0, 2^63 − 1] (integral floats accepted, booleans rejected)."""
    if isinstance(value, bool | np.bool_):
        raise InvalidParameter(f"sensitivity must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        k = int(value)
    elif isinstance(value, float | np.floating | Fraction | Decimal):
        try:
            exact = Fraction(*value.as_integer_ratio())
        except (ValueError, OverflowError):  # NaN, ±inf
            exact = Fraction(1, 2)
        if exact.denominator != 1:
            raise InvalidParameter(
                f"sensitivity must be an integer (the noise lives on ℤ), got {value!r}"
            )
        k = int(exact)
    else:
        raise InvalidParameter(
            f"sensitivity must be an integer, got {value!r} ({type(value).__name__})"
        )
    if k < 0:
        raise InvalidParameter(f"sensitivity must be >= 0, got {value!r}")
    if k > _INT64_MAX:
        raise InvalidParameter(f"sensitivity must be <= 2**63 - 1, got {value!r}")
    return k


def _pad(x: float, rel: float) -> float:
    """x enlarged by a relative margin (then by one ulp, so the margin itself cannot round away)."""
    if x <= 0.0 or math.isinf(x):
        return x
    return math.nextafter(x + x * rel, math.inf)


def _phi(x: float) -> float:
    """φ(x) = e^x − 1 − x ≥ 0, without cancellation (see :func:`sharpdp._math.expm1mx`)."""
    return _math.expm1mx(x)


def _one_minus_exp(x: float) -> float:
    """E = 1 − e^{−x} for x ≥ 0, accurately."""
    return -math.expm1(-x)


# --------------------------------------------------------------------------------------------------
# Discrete Laplace: closed forms
# --------------------------------------------------------------------------------------------------
#
# Notation: P(z) = C q^{|z|} on ℤ with q = e^{−r}, r = 1/t (t the scale), C = (1 − q)/(1 + q);
# Q(z) = P(z − Δ); ε0 = Δr. The privacy loss L(z) = log P(z)/Q(z) = (|z − Δ| − |z|) r is ε0 for
# z ≤ 0, (Δ − 2z) r for 0 ≤ z ≤ Δ, −ε0 for z ≥ Δ.


def _dl_delta(t: Fraction, sens: int, epsilon: float) -> float:
    """Exact profile δ(ε) of the discrete Laplace pair, rounded up.

    δ(ε) = P(S) − e^ε Q(S) for S = {L > ε} = {z ≤ k}, k the largest integer with (Δ − 2k)r > ε
    (0 ≤ k ≤ Δ − 1 when ε < ε0). With P(z ≤ k) = 1 − q^{k+1}/(1+q) and
    Q(z ≤ k) = q^{Δ−k}/(1+q):

        δ(ε) = [(1 − e^{ε − (Δ−k) r}) + q(1 − q^k)] / (1 + q),

    a sum of two non-negative terms (δ = 0 for ε ≥ ε0). k and the exponent ε − (Δ − k)r are
    computed exactly in rationals, so the result is accurate to a few ulps.
    """
    e = Fraction(epsilon)
    if sens == 0 or e >= sens / t:
        return 0.0
    k = math.ceil((sens - e * t) / 2) - 1  # largest integer < (Δ − εt)/2
    k = max(0, min(k, sens - 1))
    first = -math.expm1(float(e - (sens - k) / t))
    r = float(1 / t)
    q = math.exp(-r)
    second = q * _one_minus_exp(float(k / t))
    return min(1.0, _pad((first + second) / (1.0 + q), _CLOSED_FORM_PAD))


def _dl_epsilon_estimate(t: Fraction, sens: int, delta: float) -> float:
    """Closed-form inverse of :func:`_dl_delta` (an estimate: the caller certifies it).

    δ = max_k δ_k(ε) with δ_k(ε) = [(1+q) − q^{k+1} − e^ε q^{Δ−k}]/(1+q) (the event {z ≤ k}), so
    ε(δ) = max_k ε_k(δ) with ε_k(δ) = (Δ − k) r + log((1+q)(1−δ) − q^{k+1}), a concave function of
    k maximised at k + 1 = log(2/((1+q)(1−δ)))/r.
    """
    r = float(1 / t)
    q = math.exp(-r)
    c = (1.0 + q) * (1.0 - delta)
    if c <= 0.0:
        return 0.0
    k_star = math.log(2.0 / c) / r - 1.0
    base = math.floor(k_star) if math.isfinite(k_star) else sens - 1
    best = -math.inf
    for k in {base, base + 1}:
        kk = max(0, min(int(k), sens - 1))
        arg = c - math.exp(-(kk + 1) * r)
        if arg > 0.0:
            best = max(best, (sens - kk) * r + math.log(arg))
    return max(0.0, best)


def _series_sinhc_diff(x: float, y: float, x2my2: float) -> float:
    """S(x) − S(y) for 0 ≤ y < x ≤ 2, S(u) = sinh(u)/u, as a series of positive terms.

    S(x) − S(y) = Σ_{n≥1} (x^{2n} − y^{2n})/(2n+1)!, with x^{2n} − y^{2n} = (x² − y²)·T_n,
    T_1 = 1, T_{n+1} = x² T_n + y^{2n} (all positive). ``x2my2`` = x² − y² computed without
    cancellation by the caller.
    """
    xx, yy = x * x, y * y
    t_n, y_pow, fact = 1.0, yy, 6.0  # T_1, y^2, 3!
    total = 0.0
    n = 1
    while True:
        term = t_n / fact
        total += term
        if term <= 1e-18 * total:
            break
        t_n = xx * t_n + y_pow
        y_pow *= yy
        n += 1
        fact *= (2 * n) * (2 * n + 1)
    return x2my2 * total


def _scaled_sinhc_diff(x: float, y: float, r: float, alpha: float) -> float:
    """H(x, y) = e^{−x}(S(x) − S(y)) ≥ 0 for x = αr > y = λr ≥ 0 (λ = α − 1, so x − y = r).

    Three cancellation-free forms: a positive series for x ≤ 2; for y < 1 < 2 < x the direct
    difference (S(y)/S(x) ≤ S(1)/S(2) < 0.65); for y ≥ 1, with d = x − y,
    y sinh x − x sinh y = ½[e^y((y − 1)(e^d − 1) + φ(d)) + e^{−y}(y(1 − e^{−d}) + d)] (both parts
    non-negative), divided by xy. Never overflows.
    """
    if x <= 2.0:
        # x² − y² = (x − y)(x + y) = r·r(α + λ) = r²(2α − 1)
        return math.exp(-x) * _series_sinhc_diff(x, y, r * r * (2.0 * alpha - 1.0))
    if y < 1.0:
        s_y = 1.0 if y == 0.0 else math.sinh(y) / y
        return _one_minus_exp(2.0 * x) / (2.0 * x) - math.exp(-x) * s_y
    d = r
    pos = math.exp(-d) * ((y - 1.0) * math.expm1(d) + _phi(d))
    neg = math.exp(-y - x) * (y * _one_minus_exp(d) + d)
    return (pos + neg) / (2.0 * x * y)


def _dl_renyi(t: Fraction, sens: int, alpha: float) -> float:
    """Exact Rényi divergence D_α of the discrete Laplace pair (both orders agree), rounded up.

    Derived by summing geometric series over the three loss regions (z ≤ 0, 0 < z < Δ, z ≥ Δ):
    with λ = α − 1, q = e^{−r}, w = e^{−(2α−1) r},

        M(λ) = E_P[e^{λL}] = [e^{λε0}(1 − qw) + e^{−αε0}(q − w)] / ((1 + q)(1 − w)),

    and D_α = log M/λ. As r → 0 with ε0 fixed this tends to Mironov's continuous Laplace formula;
    for Δ = 1 it is the randomized-response curve. Evaluation without cancellation: for λε0 > 1,
    log M = λε0 + log(E(2α)/E(2α−1) + e^{−r−(2α−1)ε0} E(2λ)/E(2α−1)) − log(1+q), E(c) = 1 − e^{−cr};
    otherwise M − 1 = [E(2α)φ(λε0) + qE(2λ)φ(−αε0) + ε0 g] / ((1+q)E(2α−1)), φ(x) = e^x − 1 − x,
    g = 2e^{−αr}(λ sinh αr − α sinh λr) = 2λαr·e^{−αr}(S(αr) − S(λr)) ≥ 0, S(u) = sinh(u)/u: a sum
    of non-negative terms. The limit α → 1 is the KL divergence

        KL = φ(−ε0)/S(r) + ε0(1 − 1/S(r)),

    and α = ∞ gives ε0 (the mechanism is exactly ε0-DP).
    """
    if sens == 0:
        return 0.0
    eps0_exact = sens / t
    if alpha == math.inf:
        return _math.float_up(eps0_exact)
    e0 = _math.float_up(eps0_exact)  # inf beyond the float range
    if math.isinf(e0):
        return math.inf
    r = float(1 / t)
    if alpha == 1.0:
        # 1/S(r) = r/sinh r = 2r e^{−r}/(1 − e^{−2r});  1 − 1/S = (S − 1)/S
        inv_s = 2.0 * r * math.exp(-r) / _one_minus_exp(2.0 * r) if r > 0.0 else 1.0
        if r < 1.0:
            s_minus_1 = _series_sinhc_diff(r, 0.0, r * r)
            one_minus_inv = s_minus_1 * inv_s
        else:
            one_minus_inv = 1.0 - inv_s
        value = inv_s * _phi(-e0) + e0 * one_minus_inv
        return _pad(value, _CLOSED_FORM_PAD)
    lam = alpha - 1.0
    q = math.exp(-r)
    e_2a1 = _one_minus_exp((2.0 * alpha - 1.0) * r)
    if lam * e0 > 1.0:
        e_2a = _one_minus_exp(2.0 * alpha * r)
        e_2l = _one_minus_exp(2.0 * lam * r)
        inner = e_2a / e_2a1 + math.exp(-r - (2.0 * alpha - 1.0) * e0) * e_2l / e_2a1
        log_m = lam * e0 + math.log(inner) - math.log1p(q)
        return _pad(log_m / lam, _CLOSED_FORM_PAD)
    e_2a = _one_minus_exp(2.0 * alpha * r)
    e_2l = _one_minus_exp(2.0 * lam * r)
    g = 2.0 * lam * alpha * r * _scaled_sinhc_diff(alpha * r, lam * r, r, alpha)
    numerator = e_2a * _phi(lam * e0) + q * e_2l * _phi(-alpha * e0) + e0 * g
    m_minus_1 = numerator / ((1.0 + q) * e_2a1)
    return _pad(math.log1p(m_minus_1) / lam, _CLOSED_FORM_PAD)


# --------------------------------------------------------------------------------------------------
# Discrete Gaussian: normaliser, Rényi divergence, profile
# --------------------------------------------------------------------------------------------------
#
# Notation: g(z) = e^{−z²/(2σ²)}, θ(c) = Σ_{z∈ℤ} g(z + c), P(z) = g(z)/θ(0), Q(z) = P(z − Δ).
# The privacy loss is L(z) = ((z − Δ)² − z²)/(2σ²) = (Δ² − 2zΔ)/(2σ²).

_POISSON_SIGMA = 0.25  # Poisson (Jacobi theta) form for σ ≥ this, direct sums below
_EM_SIGMA = 1024.0  # Euler–Maclaurin tail sums for σ ≥ this, direct summation below
_HE6_TOP_ROOT = 3.3243  # ≥ the largest zero of He_6 (3.32425...)
_HE6_L1 = math.sqrt(720.0) * math.sqrt(2.0 * math.pi)  # ∫|He_6| e^{−v²/2} ≤ (Cauchy–Schwarz)


def _dg_log_theta0_lower(var: float) -> float:
    """A lower bound on log θ(0) = log Σ_z e^{−z²/(2σ²)} (before the final safety margin).

    σ ≥ 1: Poisson summation (Jacobi's identity) θ(0) = σ√(2π)(1 + 2Σ_{k≥1} e^{−2π²σ²k²}) ≥
    σ√(2π)(1 + 2e^{−2π²σ²}). σ < 1: the partial sum over |z| ≤ 60 (all terms are positive).
    """
    if var >= 1.0:
        return (
            0.5 * math.log(var) + _LOG_SQRT_2PI + math.log1p(2.0 * math.exp(-2 * math.pi**2 * var))
        )
    z = np.arange(1, 61, dtype=np.float64)
    return math.log1p(2.0 * float(np.exp(-(z * z) / (2.0 * var)).sum()))


def _dg_theta_log_ratio(var: float, c: float) -> float:
    """An upper bound on log(θ(c)/θ(0)) ≤ 0 for c ∈ [0, ½].

    σ ≥ 0.25, Poisson summation: θ(c)/θ(0) − 1 = −4Σ_k w_k sin²(πkc) / (1 + 2Σ_k w_k),
    w_k = e^{−2π²σ²k²}: the numerator is truncated (dropping negative terms) and the tail of the
    denominator's series is added (bounded by a geometric series), both upwards.
    σ < 0.25, directly: log θ(c) − log θ(0) = −c²/(2σ²) + log1p(4Σ_{z≥1} g(z) sinh²(zc/(2σ²)) /
    (1 + 2Σ_{z≥1} g(z))), every term positive (log-space for large arguments).
    """
    if c == 0.0:
        return 0.0
    if var >= _POISSON_SIGMA**2:
        a = 2.0 * math.pi**2 * var
        kmax = int(math.sqrt(760.0 / a)) + 2
        k = np.arange(1, kmax + 1, dtype=np.float64)
        w = np.exp(-a * k * k)
        num = 4.0 * float((w * np.sin(math.pi * k * c) ** 2).sum())
        # tail Σ_{k>kmax} w_k ≤ w_{kmax+1}/(1 − e^{−a(2kmax+3)})
        tail = math.exp(-a * (kmax + 1) ** 2) / _one_minus_exp(a * (2 * kmax + 3))
        den = 1.0 + 2.0 * (float(w.sum()) + tail)
        return math.log1p(-num / den)
    inv2 = 1.0 / (2.0 * var)
    zmax = int(math.sqrt(800.0 * var)) + 3
    z = np.arange(1, zmax + 1, dtype=np.float64)
    x = z * c * inv2
    # log(g(z) sinh²(x)) = −z²/(2σ²) + 2(x + log(1 − e^{−2x}) − log 2)
    log_sinh = x + np.log(-np.expm1(-2.0 * x)) - _LN2
    log_terms = -(z * z) * inv2 + 2.0 * log_sinh
    top = float(log_terms.max())
    pos = 4.0 * math.exp(top) * float(np.exp(log_terms - top).sum())
    s0 = 2.0 * float(np.exp(-(z * z) * inv2).sum())
    return -(c * c) * inv2 + math.log1p(pos / (1.0 + s0))


def _dg_renyi(s2: Fraction, sens: int, alpha: float) -> float:
    """Exact Rényi divergence of the discrete Gaussian pair (both orders agree), rounded up.

    Completing the square, E_Q[(P/Q)^α] = e^{λ(λ+1)Δ²/(2σ²)} θ(λΔ)/θ(0) with λ = α − 1, so

        D_α = αΔ²/(2σ²) + log(θ(λΔ)/θ(0))/λ ≤ αΔ²/(2σ²),

    since θ(c) ≤ θ(0) (Poisson summation: θ(c) = σ√(2π)Σ_k e^{−2π²σ²k²}cos(2πkc)). This proves the
    ρ = Δ²/(2σ²) zCDP bound of CKS20; equality holds when λΔ is an integer, and as α → 1:
    KL = Δ²/(2σ²) exactly (E_P[Z] = 0). Not pure DP: D_∞ = ∞. θ is 1-periodic and even, so only
    λΔ mod 1, folded into [0, ½], matters; it is computed exactly in rationals.
    """
    if sens == 0:
        return 0.0
    if alpha == math.inf:
        return math.inf
    rho = Fraction(sens * sens) / (2 * s2)
    if alpha == 1.0:
        return _math.float_up(rho)
    lam = alpha - 1.0  # exact for α ∈ [1, 2^53)
    frac = (Fraction(lam) * sens) % 1
    c = float(min(frac, 1 - frac))
    base = _math.float_up(rho * Fraction(alpha))
    if c == 0.0 or math.isinf(base):
        return base
    correction = _dg_theta_log_ratio(float(s2), c) / lam  # ≤ 0
    return min(base, _pad(base + correction, _CLOSED_FORM_PAD))


def _log1mexp_array(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """log(1 − e^{−x}) element-wise for x > 0 (Mächler's switch)."""
    out = np.empty_like(x)
    small = x <= _LN2
    out[small] = np.log(-np.expm1(-x[small]))
    out[~small] = np.log1p(-np.exp(-x[~small]))
    return out


def _log_geometric_tail(a: int, var: float) -> float:
    """log of an upper bound on Σ_{z≥a} g(z), a ≥ 0: g(a)/(1 − e^{−(2a+1)/(2σ²)}) (ratios shrink)."""
    return -(float(a) ** 2) / (2.0 * var) - _math.log1mexp((2.0 * a + 1.0) / (2.0 * var))


def _he_odd(u: float) -> tuple[float, float, float]:
    """Probabilists' Hermite polynomials He_1, He_3, He_5 at u."""
    u2 = u * u
    return u, u * (u2 - 3.0), u * (u2 * (u2 - 10.0) + 15.0)


def _he6_tail(u: float) -> float:
    """An upper bound on e^{u²/2}∫_u^∞ |He_6(v)| e^{−v²/2} dv for u ≥ 0.

    Beyond the largest zero of He_6 it is exactly He_5(u) (d/dv[−He_5 e^{−v²/2}] = He_6 e^{−v²/2}).
    Below, |He_6| ≤ v⁶ + 15v⁴ + 45v² + 15 and J_k = e^{u²/2}∫_u^∞ v^k e^{−v²/2} satisfies
    J_k = u^{k−1} + (k−1)J_{k−2}, J_0 ≤ √(π/2).
    """
    if u >= _HE6_TOP_ROOT:
        return _he_odd(u)[2]
    j0 = _SQRT_HALF_PI
    j2 = u + j0
    j4 = u**3 + 3.0 * j2
    j6 = u**5 + 5.0 * j4
    return j6 + 15.0 * j4 + 45.0 * j2 + 15.0 * j0


def _dg_log_sum_em(var: float, m1: int, m2: int, d0: float) -> float:
    """log of an upper bound on Σ_{z≥m1} [g(z) − e^ε g(z + Δ)] (m2 = m1 + Δ), for large σ.

    Euler–Maclaurin with three Bernoulli terms, applied to F(x) = g(x) − e^ε g(x + Δ):
    Σ_{z≥m} F(z) = ∫_m^∞ F + F(m)/2 − Σ_{j=1}^{3} B_{2j}/(2j)! F^{(2j−1)}(m) + R,
    |R| ≤ (1/30240)∫_m^∞|F^{(6)}| (2ζ(6)/(2π)^6 = 1/30240), with g^{(n)}(x) =
    (−1/σ)^n He_n(x/σ) g(x). The integral is σ√(π/2)[erfc(x1) − e^ε erfc(x2)], x = m/(σ√2), written
    as g(m1)·σ√(π/2)[(erfcx(x1) − erfcx(x2)) + (1 − γ)erfcx(x2)] with γ = e^ε g(m2)/g(m1) = e^{−d0}
    when m1 ≥ 0 (two non-negative parts). The remainder bound and a margin for the rounding of each
    part are added, so the result is an upper bound.
    """
    sigma = math.sqrt(var)
    u1, u2 = m1 / sigma, m2 / sigma
    x1, x2 = u1 / math.sqrt(2.0), u2 / math.sqrt(2.0)
    gamma = math.exp(-d0)
    he1 = _he_odd(u1)  # |u| ≤ (40σ + 2 + 2^63)/σ < 1e17 here: no overflow
    he2 = _he_odd(u2)
    coef = (1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0)
    corr_terms = [
        c * sigma ** (-(2 * j + 1)) * (he1[j] - gamma * he2[j]) for j, c in enumerate(coef)
    ]
    half = 0.5 * _one_minus_exp(d0)
    corr = half + math.fsum(corr_terms)
    corr_err = 1e-14 * (half + sum(abs(x) for x in corr_terms))
    sigma5 = sigma**-5 / 30240.0
    if m1 >= 0:
        # everything in units of g(m1)
        log_g1 = -(float(m1) ** 2) / (2.0 * var)
        e1, e2 = _math.erfcx(x1), _math.erfcx(x2)
        main = _SQRT_HALF_PI * sigma * (max(0.0, e1 - e2) + _one_minus_exp(d0) * e2)
        main_err = 1e-14 * _SQRT_HALF_PI * sigma * (e1 + e2)
        rem = sigma5 * (_he6_tail(u1) + gamma * _he6_tail(u2))
        total = main + corr + rem + main_err + corr_err
        return log_g1 + math.log(total)
    # m1 < 0 < m2: e^ε erfc(x2) = e^{ε − x2²} erfcx(x2) = γ g(m1) erfcx(x2), each factor ≤ 1
    # (ε − m2²/(2σ²) = −d0 − m1²/(2σ²) exactly), so nothing overflows.
    g1 = math.exp(-(float(m1) ** 2) / (2.0 * var))
    weight = gamma * g1
    second = weight * _math.erfcx(x2)
    main = _SQRT_HALF_PI * sigma * (math.erfc(x1) - second)
    main_err = 1e-14 * _SQRT_HALF_PI * sigma * (math.erfc(x1) + second)
    rem = sigma5 * (_HE6_L1 + (weight * _he6_tail(u2) if weight > 0.0 else 0.0))
    total = main + rem + main_err
    if g1 > 0.0:
        total += g1 * (corr + corr_err)
    return math.log(total)


def _dg_log_delta(s2: Fraction, sens: int, epsilon: float) -> float:
    """log of an upper bound on the exact profile δ(ε) of the discrete Gaussian pair.

    δ(ε) = Σ_{z ≤ k}[P(z) − e^ε Q(z)] over S = {L > ε} = {z ≤ k}; by the symmetry of P this is
    Σ_{z ≥ m1} P(z)(1 − e^{ε − ℓ(z)}) with m1 = ⌊εσ²/Δ − Δ/2⌋ + 1 and ℓ(z) = ((z+Δ)² − z²)/(2σ²)
    > ε there — every term non-negative (the form P[Z > εσ²/Δ − Δ/2] − e^ε P[Z > εσ²/Δ + Δ/2] of
    CKS20, their Theorem 7 — theorem number not re-checked against the paper). m1 and
    d0 = ℓ(m1) − ε are exact (rationals). For σ < 1024 the sum is
    taken in log space over a window of about 20σ terms, and the two tails outside it are bounded
    by geometric series (ratio e^{−(2z+1)/(2σ²)}) and *added*; for σ ≥ 1024 Euler–Maclaurin (see
    :func:`_dg_log_sum_em`). The normaliser θ(0) is bounded below, and a relative margin of 1e-12
    absorbs rounding. Result: log δ̂ with δ̂ ≥ δ(ε).
    """
    e = Fraction(epsilon)
    m1 = math.floor(e * s2 / sens - Fraction(sens, 2)) + 1
    var = float(s2)
    sigma = math.sqrt(var)
    log_theta = _dg_log_theta0_lower(var)
    cap = math.ceil(40.0 * sigma) + 2
    if m1 > cap:
        # δ ≤ P[Z ≥ m1] ≤ P[Z ≥ cap] < e^{−740}: report this (tiny, valid) bound
        return _log_geometric_tail(cap, var) - log_theta
    m2 = m1 + sens
    d0 = float(Fraction(m2 * m2 - m1 * m1) / (2 * s2) - e)  # ℓ(m1) − ε > 0
    if sigma >= _EM_SIGMA:
        return _dg_log_sum_em(var, m1, m2, d0) - log_theta + _SUM_PAD
    radius = math.isqrt(math.ceil(100.0 * var)) + 2  # g(radius) < e^{−50}
    lo = max(m1, -radius)
    z0 = max(m1, 0)
    hi = math.isqrt(z0 * z0 + math.ceil(100.0 * var)) + 2
    z = np.arange(lo, hi + 1, dtype=np.int64)
    zf = z.astype(np.float64)
    x = np.maximum(d0 + (zf - m1) * (sens / var), 5e-324)  # ℓ(z) − ε > 0
    logs = [-(zf * zf) / (2.0 * var) + _log1mexp_array(x)]
    tails = [_log_geometric_tail(hi + 1, var)]  # z > hi: (1 − e^{ε−ℓ}) ≤ 1
    if lo > m1:
        tails.append(_log_geometric_tail(1 - lo, var))  # z < lo, by symmetry Σ_{z ≥ 1−lo}
    all_logs = np.concatenate([*logs, np.array(tails)])
    top = float(all_logs.max())
    log_sum = top + math.log(float(np.exp(all_logs - top).sum()))
    return log_sum - log_theta + _SUM_PAD


# --------------------------------------------------------------------------------------------------
# Certified inversion and release helpers
# --------------------------------------------------------------------------------------------------


def _certified_epsilon(
    log_delta: Callable[[float], float], delta: float, lo: float, hi: float, what: str
) -> float:
    """Smallest ε on [lo, ∞) at which the (upper-bound) profile was checked to be ≤ δ.

    Compared in log space (so targets near the float underflow work), against log δ lowered by
    (|log δ| + 1)·2^-50 so that the rounding of log δ (and of the final exp) cannot err in the
    user's favour.
    """
    target = math.log(delta)
    target -= (abs(target) + 1.0) * 2.0**-50

    def valid(e: float) -> bool:
        return log_delta(e) <= target

    return _math.smallest_valid(valid, lo, hi, what=what)


def _integer_values(value: object) -> tuple[bool, int | IntArray]:
    """Validate the query value(s): (is_scalar, int or int64 array), all in (−2^62, 2^62)."""

    def check_scalar(v: object, where: str) -> int:
        if isinstance(v, bool | np.bool_):
            raise InvalidParameter(f"{where} must be an integer, got {v!r} (bool)")
        if isinstance(v, numbers.Integral):
            k = int(v)
        elif isinstance(v, float | np.floating):
            if (
                not np.isfinite(v)
                or not float(v).is_integer()
                or Fraction(float(v)) != Fraction(*v.as_integer_ratio())
            ):
                raise InvalidParameter(f"{where} must be an integer, got {v!r}")
            k = int(v)
        else:
            raise InvalidParameter(
                f"{where} must be an integer or an array of integers, got {v!r} "
                f"({type(v).__name__})"
            )
        if not -_VALUE_BOUND < k < _VALUE_BOUND:
            raise InvalidParameter(
                f"{where} must lie in (-2**62, 2**62) so that value + noise fits in int64, got {k}"
            )
        return k

    if isinstance(value, numbers.Number | np.generic) and not isinstance(value, np.ndarray):
        return True, check_scalar(value, "value")
    array_like = isinstance(value, np.ndarray | Sequence) or hasattr(value, "__array__")
    if isinstance(value, str | bytes) or not array_like:
        raise InvalidParameter(
            f"value must be an integer or an array of integers, got {value!r} "
            f"({type(value).__name__})"
        )
    try:
        arr = np.asarray(value)
    except ValueError as err:  # ragged nested sequences
        raise InvalidParameter(f"value must be a rectangular array of integers: {err}") from None
    kind = arr.dtype.kind
    if kind in "iu":
        if arr.size and (int(arr.max()) >= _VALUE_BOUND or int(arr.min()) <= -_VALUE_BOUND):
            bad = np.flatnonzero((arr >= _VALUE_BOUND) | (arr <= -_VALUE_BOUND))[0]
            idx = np.unravel_index(bad, arr.shape)
            check_scalar(arr[idx], f"value{list(map(int, idx))}")
        return False, arr.astype(np.int64)
    if kind == "f":
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(arr) & (np.abs(arr) < _VALUE_BOUND)
            ok &= np.where(ok, arr, 0.0) == np.floor(np.where(ok, arr, 0.0))
        if not ok.all():
            idx = np.unravel_index(int(np.flatnonzero(~ok)[0]), arr.shape)
            check_scalar(arr[idx], f"value{list(map(int, idx))}")
        return False, arr.astype(np.int64)
    if kind == "O":
        out = np.empty(arr.shape, dtype=np.int64)
        for idx, v in np.ndenumerate(arr):
            out[idx] = check_scalar(v, f"value{list(idx)}")
        return False, out
    raise InvalidParameter(
        f"value must be an integer or an array of integers, got an array of dtype {arr.dtype}"
    )


def _add_noise(
    value: object, draw: Callable[[tuple[int, ...] | None], int | IntArray]
) -> int | IntArray:
    """value + noise, as a Python int (scalar input) or an int64 array of the same shape."""
    scalar, values = _integer_values(value)
    if scalar:
        noise = draw(None)
        assert isinstance(noise, int)
        if abs(noise) >= _VALUE_BOUND:  # probability < e^{-1000} for parameters <= 2^52
            raise NumericalError("a noise sample exceeded 2**62 in magnitude (please report it)")
        assert isinstance(values, int)
        return values + noise
    assert isinstance(values, np.ndarray)
    noise_arr = draw(values.shape)
    assert isinstance(noise_arr, np.ndarray)
    if noise_arr.size and int(np.abs(noise_arr).max()) >= _VALUE_BOUND:
        raise NumericalError("a noise sample exceeded 2**62 in magnitude (please report it)")
    return values + noise_arr


# --------------------------------------------------------------------------------------------------
# The mechanisms
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiscreteLaplace(Mechanism):
    """The discrete Laplace (two-sided geometric) mechanism: releases f(x) + Z, Z ∈ ℤ,

        P[Z = z] = (1 − e^{−1/t})/(1 + e^{−1/t}) · e^{−|z|/t},   t = ``scale``.

    Guarantee (exact, both orders, worst shift |d| = Δ; see the module docstring):

    * pure DP: ε0 = Δ/t exactly (D_∞, attained by every z ≤ 0);
    * profile: δ(ε) = [(1 − e^{ε−(Δ−k)/t}) + e^{−1/t}(1 − e^{−k/t})]/(1 + e^{−1/t}) for ε < ε0,
      k the largest integer < (Δ − εt)/2, and 0 for ε ≥ ε0 (derived by geometric sums);
    * RDP: closed form D_α = log M(α−1)/(α−1),
      M(λ) = [e^{λε0}(1 − e^{−2α/t}) + e^{−αε0}(e^{−1/t} − e^{−(2α−1)/t})]
      / ((1 + e^{−1/t})(1 − e^{−(2α−1)/t})), with the KL limit at α = 1 (see ``_dl_renyi``);
    * ε(δ): closed-form inverse, certified by bisection on the exact profile;
    * zCDP: for Δ = 1 the privacy-loss law is that of ε0-randomized response, so ε0·tanh(ε0/2)
      is tight [Steinke 2024 Thm 5]; for Δ > 1 the certified supremum of D_α/α (the generic route
      ``certified-rdp-sup`` on this exact curve), never worse than ε0·tanh(ε0/2).

    Every value is rounded upwards (relative margin 2e-14 on closed forms).

    Args:
        scale: t > 0, an ``int``, ``float``, ``Fraction`` or ``Decimal``, at most 2^52 (a float is
            the exact dyadic it denotes: ``0.1`` is 3602879701896397/2^55; pass
            ``Fraction(1, 10)`` for one tenth). Its numerator in lowest terms must be ≤ 2^62.
        sensitivity: Δ, an integer ≥ 0 (integral floats accepted): |f(x) − f(x′)| ≤ Δ.

    Examples:
        >>> m = DiscreteLaplace(2, sensitivity=1)
        >>> m.epsilon0
        0.5
        >>> m.release(10, rng=0) - 10 in range(-100, 101)
        True
    """

    scale: Exact
    sensitivity: int = 1
    notion: ClassVar[str] = "discrete Laplace mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "scale", _noise_parameter("scale", self.scale, numerator_cap=2**62)
        )
        if Fraction(self.scale) < _MIN_SIGMA:  # 1/t must stay far inside the float range
            raise InvalidParameter(f"scale must be >= 2**-256, got {self.scale!r}")
        object.__setattr__(self, "sensitivity", _sensitivity(self.sensitivity))

    @property
    def epsilon0(self) -> float:
        """ε0 = Δ/t, the mechanism's exact pure-DP parameter (rounded up)."""
        return _math.float_up(self.sensitivity / Fraction(self.scale))

    def exact_pair(self) -> tuple[Fraction, Fraction] | None:
        """(Δ/t, 0): the discrete Laplace is exactly (Δ/t)-DP (Canonne–Kamath–Steinke 2020)."""
        return Fraction(self.sensitivity) / Fraction(self.scale), Fraction(0)

    @overload
    def release(self, value: int | float | np.integer[Any], rng: RNGLike = None) -> int: ...
    @overload
    def release(self, value: Sequence[Any] | NDArray[Any], rng: RNGLike = None) -> IntArray: ...
    def release(self, value: object, rng: RNGLike = None) -> int | IntArray:
        """Release ``value`` + discrete Laplace noise, sampled exactly (CKS20 Algorithm 2).

        Args:
            value: an integer (Python or numpy; an integral float is accepted) or an array/list of
                integers, each in (−2^62, 2^62). Arrays get independent noise per entry (see the
                module docstring for the privacy of array releases).
            rng: a seed or a ``numpy.random.Generator`` (see ``_samplers.as_generator``).

        Returns:
            A Python ``int`` for a scalar input, else an ``int64`` array of the same shape.

        Raises:
            InvalidParameter: for non-integer, NaN, infinite, boolean or out-of-range values.
        """
        scale = self.scale

        def draw(shape: tuple[int, ...] | None) -> int | IntArray:
            if shape is None:
                return _samplers.discrete_laplace(scale, None, rng)
            return _samplers.discrete_laplace(scale, shape, rng)

        return _add_noise(value, draw)

    def _renyi(self, alpha: float) -> float:
        return _dl_renyi(Fraction(self.scale), self.sensitivity, alpha)

    def _delta(self, epsilon: float) -> float:
        if epsilon == math.inf:
            return 0.0
        return _dl_delta(Fraction(self.scale), self.sensitivity, epsilon)

    def _epsilon(self, delta: float) -> float:
        sens = self.sensitivity
        t = Fraction(self.scale)
        if sens == 0:
            return 0.0
        if delta == 0.0:
            return self.epsilon0
        if _dl_delta(t, sens, 0.0) <= delta:
            return 0.0
        guess = min(_dl_epsilon_estimate(t, sens, delta), self.epsilon0)
        slack = 1e-12 * (1.0 + guess)
        return min(
            self.epsilon0,
            _math.smallest_valid(
                lambda e: _dl_delta(t, sens, e) <= delta,
                max(0.0, guess - slack),
                guess + slack,
                what="discrete Laplace epsilon(delta)",
            ),
        )

    def _group(self, k: int) -> DiscreteLaplace:
        # k records move the query by at most kΔ: the same mechanism with sensitivity kΔ.
        return DiscreteLaplace(self.scale, k * self.sensitivity)


@dataclass(frozen=True, slots=True)
class DiscreteGaussian(Mechanism):
    """The discrete Gaussian mechanism [CKS20]: releases f(x) + Z, Z ∈ ℤ,

        P[Z = z] = e^{−z²/(2σ²)} / Σ_{y∈ℤ} e^{−y²/(2σ²)}.

    Guarantee (exact, both orders, worst shift |d| = Δ; see the module docstring):

    * zCDP: ρ = Δ²/(2σ²), tight (CKS20; here D_α = αρ + log(θ(λΔ)/θ(0))/λ ≤ αρ with
      KL = ρ exactly, see ``_dg_renyi``); not pure DP (D_∞ = ∞);
    * RDP: the exact D_α above (a Poisson-summation series, positive terms);
    * profile: δ(ε) = P[Z > εσ²/Δ − Δ/2] − e^ε P[Z > εσ²/Δ + Δ/2] (derived here; CKS20 state it,
      Thm 7 — number unverified), summed as
      non-negative terms with rigorously bounded tails (Euler–Maclaurin with remainder bound for
      σ ≥ 1024), rounded up by a relative 1e-12;
    * ε(δ): certified bisection on that profile.

    Args:
        sigma: σ > 0, an ``int``, ``float``, ``Fraction`` or ``Decimal``, at most 2^52 (a float is
            the exact dyadic it denotes; the law uses σ² = Fraction(σ)² exactly).
        sensitivity: Δ, an integer ≥ 0 (integral floats accepted): |f(x) − f(x′)| ≤ Δ.

    Examples:
        >>> m = DiscreteGaussian(2, sensitivity=1)
        >>> m.rho
        0.125
        >>> m.renyi(3.0) == 3 * m.rho  # λΔ integer: the zCDP bound is attained
        True
    """

    sigma: Exact
    sensitivity: int = 1
    notion: ClassVar[str] = "discrete Gaussian mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _noise_parameter("sigma", self.sigma, numerator_cap=None))
        if Fraction(self.sigma) < _MIN_SIGMA:  # σ² must stay far inside the float range
            raise InvalidParameter(f"sigma must be >= 2**-256, got {self.sigma!r}")
        object.__setattr__(self, "sensitivity", _sensitivity(self.sensitivity))

    @property
    def sigma_squared(self) -> Fraction:
        """σ², exactly."""
        return Fraction(self.sigma) ** 2

    @property
    def rho(self) -> float:
        """ρ = Δ²/(2σ²), the tight zCDP parameter (rounded up)."""
        return _math.float_up(Fraction(self.sensitivity**2) / (2 * self.sigma_squared))

    def exact_zcdp(self) -> tuple[Fraction, Fraction] | None:
        """(Δ²/(2σ²), 0), exactly (Canonne–Kamath–Steinke 2020)."""
        return Fraction(self.sensitivity**2) / (2 * Fraction(self.sigma_squared)), Fraction(0)

    @overload
    def release(self, value: int | float | np.integer[Any], rng: RNGLike = None) -> int: ...
    @overload
    def release(self, value: Sequence[Any] | NDArray[Any], rng: RNGLike = None) -> IntArray: ...
    def release(self, value: object, rng: RNGLike = None) -> int | IntArray:
        """Release ``value`` + discrete Gaussian noise, sampled exactly (CKS20 Algorithm 3).

        Args:
            value: an integer (Python or numpy; an integral float is accepted) or an array/list of
                integers, each in (−2^62, 2^62). Arrays get independent noise per entry (see the
                module docstring for the privacy of array releases).
            rng: a seed or a ``numpy.random.Generator`` (see ``_samplers.as_generator``).

        Returns:
            A Python ``int`` for a scalar input, else an ``int64`` array of the same shape.

        Raises:
            InvalidParameter: for non-integer, NaN, infinite, boolean or out-of-range values.
        """
        sigma = self.sigma

        def draw(shape: tuple[int, ...] | None) -> int | IntArray:
            if shape is None:
                return _samplers.discrete_gaussian(sigma, None, rng)
            return _samplers.discrete_gaussian(sigma, shape, rng)

        return _add_noise(value, draw)

    def _renyi(self, alpha: float) -> float:
        return _dg_renyi(self.sigma_squared, self.sensitivity, alpha)

    def _log_delta(self, epsilon: float) -> float:
        return _dg_log_delta(self.sigma_squared, self.sensitivity, epsilon)

    def _delta(self, epsilon: float) -> float:
        if self.sensitivity == 0 or epsilon == math.inf:
            return 0.0
        return min(1.0, _math.exp_up(self._log_delta(epsilon)))

    def _epsilon(self, delta: float) -> float:
        if self.sensitivity == 0:
            return 0.0
        if delta == 0.0:
            return math.inf
        hi = _tails.zcdp_epsilon(self.rho, 0.0, delta)  # valid, so δ(hi) ≤ δ up to rounding
        if not math.isfinite(hi) or hi <= 0.0:
            hi = 1.0
        return _certified_epsilon(
            self._log_delta, delta, 0.0, hi, "discrete Gaussian epsilon(delta)"
        )

    def _group(self, k: int) -> DiscreteGaussian:
        # k records move the query by at most kΔ: the same mechanism with sensitivity kΔ.
        return DiscreteGaussian(self.sigma, k * self.sensitivity)


# --------------------------------------------------------------------------------------------------
# Conversion routes
# --------------------------------------------------------------------------------------------------


@register(
    DiscreteGaussian,
    ZCDP,
    name="cks20",
    theorem="Canonne–Kamath–Steinke 2020: discrete Gaussian is Δ²/(2σ²)-zCDP (tight: KL = Δ²/(2σ²))",
    tight=True,
)
def discrete_gaussian_to_zcdp(m: DiscreteGaussian) -> ZCDP:
    """The discrete Gaussian mechanism is ρ = Δ²/(2σ²)-zCDP [Canonne–Kamath–Steinke 2020].

    Proof used here: D_α = αρ + log(θ(λΔ)/θ(0))/λ ≤ αρ since θ(c) ≤ θ(0) (Poisson summation).
    Tight: the KL divergence (the α → 1 limit of D_α/α) equals ρ exactly, so no smaller ρ is valid.
    For vector queries with L2 sensitivity Δ₂ and independent noise per coordinate the same bound
    holds with Δ₂ (the Rényi bounds add over coordinates).
    """
    return ZCDP(m.rho)


@register(
    DiscreteLaplace,
    ZCDP,
    name="steinke24-thm5",
    theorem="Δ = 1: the loss law is ε0-randomized response's, ε0·tanh(ε0/2)-zCDP (tight)",
    tight=True,
)
def discrete_laplace_to_zcdp(m: DiscreteLaplace) -> ZCDP:
    """Discrete Laplace with Δ = 1 is exactly ε0·tanh(ε0/2)-zCDP, ε0 = 1/t (tight).

    With Δ = 1 the privacy loss takes only the values ±ε0 (z ≤ 0 and z ≥ 1), with the same law as
    for binary ε0-randomized response, the worst case of ε0-DP [Steinke 2024, Thm 5]. For Δ > 1
    this raises :class:`NotImplied`, and ``convert`` uses the generic routes (the certified
    supremum of D_α/α of the exact curve, and ε0·tanh(ε0/2) via pure DP).
    """
    if m.sensitivity > 1:
        raise NotImplied("the randomized-response closed form is tight only for sensitivity 1")
    eps0 = m.epsilon0
    # ε0·tanh(ε0/2), rounded up (a bare float product can fall an ulp below the exact value)
    return ZCDP(_pad(eps0 * math.tanh(0.5 * eps0), _CLOSED_FORM_PAD))
