"""Closed forms for the worst-case pairs of the basic guarantees and mechanisms.

Scalar kernels (floats in, floats out) used by the guarantee types, the conversions and the
mechanisms. Each function states its source and that it is exact (both directions of error are
bugs) up to floating-point rounding of a few ulps; tests check them against direct enumeration and
quadrature. Conventions (``docs/conventions.md``): natural logs, ε ≥ 0 for profiles, the privacy
loss Z = log(P/Q)(Y) with Y ~ P, δ(ε) = E_P[(1 − e^{ε−Z})_+], D_α the Rényi divergence.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import TYPE_CHECKING

from sharpdp import _math

if TYPE_CHECKING:  # numpy is imported where it is used: the command line starts without it
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "br_delta",
    "br_epsilon",
    "br_renyi",
    "gaussian_delta",
    "gaussian_delta_lower",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_log_delta_lower",
    "laplace_delta",
    "laplace_epsilon",
    "laplace_renyi",
    "rr_delta",
    "rr_epsilon",
    "rr_renyi",
]

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)
_SQRT_PI = math.sqrt(math.pi)


# --- randomized response (pure ε-DP worst case) --------------------------------------------------


def rr_renyi(epsilon: float, alpha: float, categories: int = 2) -> float:
    """D_α between the output laws of k-ary randomized response on two different inputs.

    k-RR reports the true category with probability e^ε/(e^ε + k − 1), each other one with
    1/(e^ε + k − 1). The losses are ε (true value), −ε (the other input's value) and 0 (the k − 2
    remaining categories). For k = 2 this is the tight RDP curve of every ε-DP mechanism
    [Steinke 2024, "Tight RDP & zCDP bounds from pure DP", Thm 4; equal to BS16 Prop 3.3's bound].
    """
    if epsilon == 0.0:
        return 0.0
    if math.isinf(epsilon):
        return math.inf
    if alpha == math.inf:
        return epsilon
    e = math.exp(-epsilon)
    if e == 0.0 or math.isinf((alpha - 1.0) * epsilon):
        # D_α ≤ D_∞ = ε, and here D_α = ε − O(e^{−ε} + log(k)/(α − 1)) rounds to ε
        return epsilon
    norm = 1.0 + (categories - 1) * e
    p = [1.0 / norm, e / norm]
    z = [epsilon, -epsilon]
    if categories > 2:
        p.append((categories - 2) * e / norm)
        z.append(0.0)
    # the weights and the sum carry a few ulps (measured up to 1.6e-15 below the exact value at
    # ε = 0.01): rounded up by 32 ulps, which :func:`rr_renyi_many`'s 2⁻⁴⁰ still covers
    value = _math.up(_math.renyi_of_finite_pair(p, z, alpha), 32)
    return value if value > 0.0 else _underflowed(min(epsilon, 0.5 * alpha * epsilon * epsilon))


def _underflowed(bound: float) -> float:
    """A positive divergence whose float underflowed to 0 (ε ≲ 1e-162: D_α ≈ αε²/2): ``bound``, a
    closed-form upper bound on it (ε-DP is ε²/2-zCDP, Bun–Steinke 2016 Prop 3.3; η-BR η²/8),
    rounded up, and never 0 — summed over 10⁸ items, zeros had certified δ = 0."""
    return max(_math.up(bound), math.ulp(0.0))


def rr_renyi_many(
    epsilons: npt.NDArray[np.float64], alpha: float, categories: int = 2
) -> npt.NDArray[np.float64]:
    """:func:`rr_renyi` of k-ary randomized response at every ε of ``epsilons`` (1-D), for one
    order α: the same formula (:func:`sharpdp._math.renyi_of_finite_pair` on the atoms ε, −ε, 0),
    vectorised, and rounded up by a relative 2⁻⁴⁰ — far more than the few ulps by which the
    vectorised sums may differ from the scalar ones — so each value is an upper bound on it."""
    import numpy as np

    eps = np.asarray(epsilons, dtype=np.float64)
    if alpha == math.inf:  # D_∞ = ε exactly
        return eps.copy()
    lam = alpha - 1.0
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        e = np.exp(-eps)
        saturated = (e == 0.0) | ~np.isfinite(lam * eps)  # D_α rounds to D_∞ = ε (rr_renyi)
        norm = 1.0 + (categories - 1) * e
        p1, p2 = 1.0 / norm, e / norm  # P-masses of the losses ε and −ε (0 has no term)

        def p_phi_minus(
            pi: npt.NDArray[np.float64], zi: npt.NDArray[np.float64]
        ) -> npt.NDArray[np.float64]:
            # P·φ(−Z) = Q − P + P·Z, written with Q = P e^{−Z} where e^{−Z} is large (as the
            # scalar routine does)
            far = np.exp(np.log(pi) - zi) - pi + pi * zi
            return np.where(zi < -1.0, far, pi * _phi(-zi))

        kl_terms = p_phi_minus(p1, eps) + p_phi_minus(p2, -eps)
        if alpha == 1.0:
            value = kl_terms
        else:
            small = lam * eps <= 0.5
            s = p1 * _phi(lam * eps) + p2 * _phi(-lam * eps) + lam * kl_terms
            series = np.log1p(s) / lam
            t1 = np.log(p1) + lam * eps
            t2 = np.log(p2) - lam * eps
            top = np.maximum(t1, t2)
            rest = np.exp(t1 - top) + np.exp(t2 - top)
            if categories > 2:
                t3 = np.log((categories - 2) * p2)
                top3 = np.maximum(top, t3)
                rest = rest * np.exp(top - top3) + np.exp(t3 - top3)
                top = top3
            value = np.where(small, series, (top + np.log(rest)) / lam)
        value = np.where(saturated, eps, value)
        value = np.where(eps == 0.0, 0.0, np.where(np.isinf(eps), np.inf, value))
        out = np.maximum(value, 0.0) * (1.0 + 2.0**-40)
        # a positive D_α that underflowed to 0: αε²/2 (as rr_renyi), and never 0
        bound = np.minimum(eps, 0.5 * alpha * eps * eps) * (1.0 + 2.0**-40)
        out = np.where((out == 0.0) & (eps > 0.0), np.maximum(bound, math.ulp(0.0)), out)
    return np.asarray(out, dtype=np.float64)


def _phi(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """e^x − 1 − x elementwise, accurate for small |x| (a Taylor polynomial to x^20/20!, whose
    remainder is below 1e-25 of the value for |x| < 1/2), as :func:`sharpdp._math.expm1mx`."""
    import numpy as np

    small = np.abs(x) < 0.5
    xs = np.where(small, x, 0.0)
    poly = np.zeros(x.shape)
    for k in range(20, 1, -1):
        poly = poly * xs + 1.0 / math.factorial(k)
    with np.errstate(over="ignore", invalid="ignore"):
        large = np.expm1(x) - x
    return np.where(small, poly * xs * xs, large)


def rr_delta(epsilon0: float, epsilon: float, categories: int = 2) -> float:
    """Exact privacy profile δ(ε), ε ≥ 0, of k-ary randomized response with parameter ε0.

    δ(ε) = (e^{ε0} − e^ε)_+ / (e^{ε0} + k − 1)  [the hockey-stick divergence Σ_y (P(y) − e^ε Q(y))_+ of
    the pair, summed in closed form].
    For k = 2 it is the tight profile of every ε0-DP mechanism (Kairouz–Oh–Viswanath 2015).
    """
    if epsilon >= epsilon0:
        return 0.0
    if math.isinf(epsilon0):
        return 1.0
    value = _math.up(
        -math.expm1(epsilon - epsilon0) / (1.0 + (categories - 1) * math.exp(-epsilon0))
    )
    # ε < ε0: δ > 0, never reported as 0 (ε0 − ε of one subnormal unit underflowed)
    return min(1.0, max(value, 5e-324))


def rr_epsilon(epsilon0: float, delta: float, categories: int = 2) -> float:
    """Inverse of :func:`rr_delta`: the smallest ε ≥ 0 with δ(ε) ≤ delta (exact)."""
    if math.isinf(epsilon0):
        return math.inf if delta < 1.0 else 0.0
    if delta == 0.0:
        return epsilon0
    scale = 1.0 + (categories - 1) * math.exp(-epsilon0)
    x = delta * scale
    if x >= -math.expm1(-epsilon0):
        return 0.0
    # never above ε0, the δ = 0 value, valid at every δ (rounding up ε0 + log1p(−x) when the
    # log1p is 0 put ε(1e-300) 4 ulps above ε(0): not monotone)
    # (x = δ·scale carries ~3 ulps of relative error: log1p(−x) then x/(1 − x) times that)
    return min(epsilon0, max(0.0, _padded_sum(epsilon0, math.log1p(-x), 3.0 * x / (1.0 - x))))


# --- Laplace -------------------------------------------------------------------------------------


def laplace_delta(epsilon0: float, epsilon: float) -> float:
    """Exact profile of the Laplace mechanism with ε0 = Δ/b: δ(ε) = 1 − e^{(ε−ε0)/2} on [0, ε0].

    Derived from the hockey-stick integral of Lap(0, b) against Lap(Δ, b): the loss is
    (|y − Δ| − |y|)/b, and integrating (p(y) − e^ε q(y))_+ over y < (Δ − bε)/2 gives the above.
    """
    if epsilon >= epsilon0:
        return 0.0
    return min(1.0, _math.up(-math.expm1(0.5 * (epsilon - epsilon0))))


def laplace_epsilon(epsilon0: float, delta: float) -> float:
    """Inverse of :func:`laplace_delta`: ε(δ) = max(0, ε0 + 2 log(1 − δ)) (exact)."""
    if delta == 0.0:
        return epsilon0
    # (as RR's)
    return min(epsilon0, max(0.0, _padded_sum(epsilon0, 2.0 * math.log1p(-delta), 0.0)))


def _padded_sum(epsilon0: float, log_term: float, amplified: float) -> float:
    """ε0 + log_term rounded up by its absolute error, for log_term = c·log1p(−x) ≤ 0: the two
    nearly cancel near δ(0), and 4 ulps of the small sum were below the error of log1p's last
    bit (PureDP(2).epsilon(0.7616) was 1.8e-15 against an exact 2.2e-15). ε0 is exact, log1p is
    within an ulp of itself (doubling is exact), the sum within half an ulp of itself, and an
    error in x moves log1p(−x) by ``amplified``·2⁻⁵² (x/(1 − x) times x's relative error).
    The sum is then rounded up (its last bit), not moved by 4 ulps of itself again."""
    total = epsilon0 + log_term
    pad = 2.0**-52 * (abs(log_term) + abs(total) + amplified)
    return math.nextafter(total + pad, math.inf)


def laplace_renyi(epsilon0: float, alpha: float) -> float:
    """Rényi divergence of the Laplace mechanism [Mironov 2017, Prop 6], with ε0 = Δ/b.

    D_α = (α−1)^{-1} log(α/(2α−1)·e^{(α−1)ε0} + (α−1)/(2α−1)·e^{−αε0}). With λ = α − 1 and
    φ(x) = e^x − 1 − x ≥ 0 the argument of the log is 1 + (αφ(λε0) + λφ(−αε0))/(2α−1), a sum of
    non-negative terms, so small ε0 loses no accuracy; the α → 1 limit is KL = φ(−ε0) =
    ε0 + e^{−ε0} − 1. For large λε0 it uses ε0 + log1p(λ·expm1(−(2α−1)ε0)/(2α−1))/λ.
    """
    if epsilon0 == 0.0:
        return 0.0
    if alpha == math.inf:
        return epsilon0
    # Each branch errs by at most 18.2u relative (u = 2⁻⁵³; see _padded for the derivation; at
    # most 5.1u measured over 20,000 random (ε0, α) against 50-digit values): moved up by a
    # relative 2⁻⁴⁶ = 128u, never above D_∞ = ε0
    if alpha == 1.0:
        return laplace_kl(epsilon0)
    lam = alpha - 1.0
    two_a = 2.0 * alpha - 1.0
    if lam * epsilon0 <= 1.0:
        b = (alpha * _math.expm1mx(lam * epsilon0) + lam * _math.expm1mx(-alpha * epsilon0)) / two_a
        return _padded(math.log1p(b) / lam, epsilon0, alpha)
    value = epsilon0 + math.log1p(lam * math.expm1(-two_a * epsilon0) / two_a) / lam
    return _padded(value, epsilon0, alpha)


def laplace_kl(epsilon0: float) -> float:
    """KL of the Laplace pair, ε0 + e^{−ε0} − 1 (the α → 1 limit of :func:`laplace_renyi`),
    rounded up as it is; also its tight zCDP parameter [Harrison–Manurangsi 2025]."""
    return _padded(_math.expm1mx(-epsilon0), epsilon0, 1.0)


def _padded(x: float, epsilon0: float, alpha: float) -> float:
    """A Laplace D_α computed as ``x``, made an upper bound: x moved up by a relative 2⁻⁴⁶ and
    one ulp, never above D_∞ = ε0. Below the normal floats a relative padding means nothing (the
    terms lose whole subnormal units): there αε0²/2 is taken, the Rényi bound of ε0-DP
    [Bun–Steinke 2016, Prop 3.3], exactly and rounded up — the same to first order in ε0.

    Why 2⁻⁴⁶ = 128u suffices (u = 2⁻⁵³; first-order error propagation, ``expm1``/``log1p``
    within 1u as glibc documents, :func:`~sharpdp._math.expm1mx` within 11u):

    * KL = φ(−ε0): ≤ 11u.
    * λε0 ≤ 1: λ = α − 1 and 2α − 1 carry ≤ 0.5u each; φ's arguments λε0 ∈ (0, 1] and −αε0 carry
      ≤ 1u, which φ amplifies by its condition number x·φ′(x)/φ(x) ≤ 2.4 (≤ 2 for x < 0), so
      φ1 = φ(λε0) and φ2 = φ(−αε0) are within 13.4u; αφ1 + λφ2 (non-negative terms) within
      14.4u, b = (…)/(2α − 1) within 15.4u; log1p (condition number b/((1 + b)·log1p b) ≤ 1)
      within 16.4u, and D = log1p(b)/λ within 17.4u.
    * λε0 > 1: z = (2α − 1)ε0 within 1u, expm1(−z) within 2u (condition ≤ 1), t =
      λ·expm1(−z)/(2α − 1) ∈ (−1/2, 0) within 4u, log1p(t) (condition ≤ 1.45 there) within
      6.8u, the term log1p(t)/λ within 7.8u; it is ≥ −0.694ε0 since λε0 > 1, so D = ε0 + term
      ≥ 0.306ε0 and the sum is within 7.8u·2.27 + 0.5u ≤ 18.2u of D.

    Underflow inside a normal result (≥ 1e-290): a subnormal term (e.g. αφ1 at λ = 2⁻⁵², ε0 ≈
    1e-145) errs by ≤ 2.5e-324 absolutely, against b ≥ λ·D ≥ 2⁻⁵²·1e-290: below 1e-18 u.
    """
    if x < _math.SAFE_LOW:
        return min(epsilon0, _math.float_up(Fraction(alpha) * Fraction(epsilon0) ** 2 / 2))
    return min(epsilon0, _math.up(x * (1.0 + 2.0**-46), 1))


# --- Gaussian / GDP ------------------------------------------------------------------------------


def gaussian_log_delta(mu: float, epsilon: float) -> float:
    """log δ(ε) of μ-GDP, i.e. of N(0,1) vs N(μ,1) [Balle–Wang 2018 Thm 8; Dong–Roth–Su Cor 2.13],
    an upper bound.

    δ(ε) = Φ(a) − e^ε Φ(b), a = μ/2 − ε/μ, b = a − μ. In the tail (a ≤ 0) it uses the exact identity
    δ = ½ e^{−a²/2} (erfcx(−a/√2) − erfcx(−b/√2)), which avoids the underflow of the two tiny terms
    (e^{ε − b²/2} = e^{−a²/2}). For small μ the two terms are nearly equal and their difference
    loses about log₂(1/μ) bits, so the rounding error is added back as a bound: each term's error
    (≤ 2⁻⁵⁰ of it; 2⁻⁴⁸ for the erfcx values of the tail) and the error of a and b (4 ulps of
    each plus 4 of ε/μ, whose rounding a inherits) times a bound on the terms' slope in the
    argument. So the value never falls below the exact δ
    (a cancellation had put it 0.14% below at μ = 1e-12); at ordinary μ the margin is ~1e-13 of δ
    or less.
    """
    if mu == 0.0 or epsilon == math.inf:
        return -math.inf
    if mu == math.inf:
        return 0.0
    ratio = epsilon / mu
    a = 0.5 * mu - ratio
    if math.isinf(a):  # ε/μ beyond the float range: δ < Φ(a) is positive but below e^{-1e308}
        return -sys.float_info.max
    b = a - mu
    # a carries the rounding of ε/μ too, which dominates when μ/2 and ε/μ nearly cancel at large
    # μ (|a| ≪ ε/μ): half an ulp of each of ε/μ and a, counted as a whole ulp each
    a_error = math.ulp(a) + math.ulp(ratio)
    argument_error = 4.0 * (a_error + math.ulp(b))
    if a > 0.0:  # then ε < μ²/2 and b < 0 < a
        # δ = (Φ(a) − Φ(b)) − (e^ε − 1)Φ(b), the first part a sum of two positive erf values (no
        # cancellation however small μ is), the second at most a fraction ~μ of it for small μ
        inside = 0.5 * (math.erf(a / _SQRT2) + math.erf(-b / _SQRT2))
        # (e^ε − 1)Φ(b) = (1 − e^{−ε})·e^ε Φ(b) = (1 − e^{−ε})·½e^{−a²/2}·erfcx(−b/√2), since
        # e^ε φ(b) = φ(a): not exp(log(e^ε − 1) + log Φ(b)), whose two terms of size ~ε round
        # by ~u·ε each, which swamped their sum once ε ≫ 1 (δ at μ = 1e9 came out 3e-7 below an
        # exact 0.977: log Φ(b) moves at slope |b| ≈ μ with b's last bit)
        outside = -math.expm1(-epsilon) * 0.5 * math.exp(-0.5 * a * a) * _math.erfcx(-b / _SQRT2)
        # both terms move with a (resp. b) at slope ≤ φ(a) ≤ 1/√(2π) (∂/∂a of φ(a)Φ(b)/φ(b) is
        # ≤ 0.3, ∂/∂b ≤ φ(a)); the outside term's own rounding (erfcx, exp, expm1 and products:
        # 2⁻⁴⁶) and that of a² (u·a² in the exponent) are added to the pad
        own = outside * (2.0**-46 + a * a * 2.0**-52) if outside > 0.0 else 0.0  # (a² may be inf)
        pad = 2.0**-50 * (inside + outside) + own + argument_error / _SQRT_2PI
        # (+ the rounding of the sum and of log itself: 4 ulps of the result)
        return _math.up(math.log(max(inside - outside, 0.0) + pad) + 2.0**-52, 4)
    if a * a == math.inf:  # |a| > 1.3e154: δ ≤ Φ(a) ≤ e^{−a²/2}/2 (a ≤ 0), a²/2 > max float/2
        return -0.5 * sys.float_info.max  # (a²/2 overflowed to a NaN, read as δ = 1, before)
    x1, x2 = -a / _SQRT2, -b / _SQRT2  # 0 ≤ x1 < x2
    e1, e2 = _math.erfcx(x1), _math.erfcx(x2)
    # erfcx decreases and is convex on x ≥ 0, with |erfcx'(x)| ≤ (√(x²+2) − x)²/√π (from
    # erfcx(x) > 2/(√π(x + √(x²+2))), Abramowitz–Stegun 7.1.13): the arguments' error moves each
    # term by at most that slope at x1 (the larger one) times the error (10% margin)
    slope = 1.1 * (math.sqrt(x1 * x1 + 2.0) - x1) ** 2 / math.sqrt(math.pi)
    moved = (argument_error / _SQRT2 + math.ulp(x1) + math.ulp(x2)) * slope
    diff = max(e1 - e2, 0.0) + 2.0**-48 * (e1 + e2) + moved
    # −a²/2 with a off by ≤ a_error/2: off by ≤ |a|·a_error, plus the rounding of a·a
    log_scale = -0.5 * a * a + abs(a) * a_error + math.ulp(a * a)
    log_diff = math.log(max(diff, 5e-324))
    # (+ the rounding of the two logs and of the sum: 4u of the terms' sizes)
    value = log_scale + log_diff - math.log(2.0) + 2.0**-50 * (abs(log_scale) + abs(log_diff) + 1.0)
    if mu < 1e-3:
        value = min(value, _small_mu_tail(mu, x1, log_scale, argument_error))
    return value


def _small_mu_tail(mu: float, x1: float, log_scale: float, argument_error: float) -> float:
    """The tail form's log δ for small μ without the difference of two erfcx values, which then
    agree to ~log₂(1/μ) bits (their rounding made δ up to 10% loose at μ = 1e-12).

    erfcx(x) = (2/√π)∫₀^∞ e^{−t²−2xt} dt is convex on x ≥ 0 (a Laplace transform), so −erfcx′
    decreases there and erfcx(x₁) − erfcx(x₂) ≤ (x₂ − x₁)·(−erfcx′(x₁)), with x₂ − x₁ = μ/√2
    and −erfcx′(x) = 2/√π − 2x·erfcx(x): relative excess O(μ·x₁), and no cancellation between
    values ~μ apart. x₁ is lowered by its error (a smaller x gives a larger slope), the slope
    padded by 2⁻⁴⁷ of its terms; +inf when the slope is lost in that pad (x₁ past ~10⁶).
    """
    x = max(0.0, x1 - (argument_error / _SQRT2 + math.ulp(x1)))
    product = 2.0 * x * _math.erfcx(x)
    slope = 2.0 / _SQRT_PI - product
    pad = 2.0**-47 * (2.0 / _SQRT_PI + product)
    if not slope > 16.0 * pad:
        return math.inf
    log_width = math.log(mu / _SQRT2) + 2.0**-51
    log_slope = math.log(slope + pad)
    terms = abs(log_scale) + abs(log_width) + abs(log_slope) + 1.0
    return log_scale + log_width + log_slope - math.log(2.0) + 2.0**-50 * terms


def gaussian_log_delta_lower(mu: npt.ArrayLike, epsilon: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A lower bound on log δ(ε) of μ-GDP at each (μ, ε) (μ, ε ≥ 0, broadcast together), the
    mirror image of :func:`gaussian_log_delta`: the same two forms, with every rounding error
    subtracted; −inf where no positive lower bound is known.

    For a > 0, δ = (Φ(a) − Φ(b)) − (e^ε − 1)Φ(b): the first part loses 2⁻⁴⁸ of itself, the
    second gains 2⁻⁴⁸ plus 8u times the size of the argument of its ``exp`` (log(e^ε − 1) +
    log Φ(b), each known to a few ulps of itself), and both move with the arguments a, b (4 ulps
    each, plus 4 of ε/μ, whose rounding a inherits) at slope ≤ 1/√(2π); a value below 1e-290
    (a subnormal difference, whose relative error is unbounded) counts as none. In the tail,
    log δ = log ½ − a²/2 + log(erfcx(−a/√2) − erfcx(−b/√2)) with the erfcx values low by 2⁻⁴⁶
    and moved by the arguments' error times the slope bound of Abramowitz–Stegun 7.1.13 (twice
    :func:`gaussian_log_delta`'s margins): computed in logs, it stays a bound far below the
    smallest float (δ = e^{−5000} has log −5000). Never above the exact log δ(ε).
    """
    import numpy as np
    from scipy import special

    m, e = np.broadcast_arrays(
        np.asarray(mu, dtype=np.float64), np.asarray(epsilon, dtype=np.float64)
    )
    u = 2.0**-53
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ratio = e / m
        a = 0.5 * m - ratio
        b = a - m
        a_error = np.spacing(np.abs(a)) + np.spacing(np.abs(ratio))  # (as in the upper bound)
        argument_error = 4.0 * (a_error + np.spacing(np.abs(b)))
        # a > 0
        inside = 0.5 * (special.erf(a / _SQRT2) + special.erf(-b / _SQRT2))
        log_growth = np.where(e > 0.0, e + np.log(-np.expm1(-e)), -np.inf)
        log_phi_b = special.log_ndtr(b)
        exponent = log_growth + log_phi_b
        outside = np.exp(np.minimum(exponent, 709.0))
        outside = outside * (1.0 + 2.0**-48 + 8.0 * u * (np.abs(log_growth) + np.abs(log_phi_b)))
        outside = np.where(e > 0.0, outside, 0.0)
        near = inside * (1.0 - 2.0**-48) - outside - 2.0 * argument_error / _SQRT_2PI
        log_near = np.where(near > 1e-290, np.log(near) * (1.0 + 4.0 * u) - 4.0 * u, -np.inf)
        # a ≤ 0
        x1, x2 = -a / _SQRT2, -b / _SQRT2
        e1, e2 = special.erfcx(x1), special.erfcx(x2)
        slope = 2.2 * (np.sqrt(x1 * x1 + 2.0) - x1) ** 2 / math.sqrt(math.pi)
        moved = (argument_error / _SQRT2 + np.spacing(np.abs(x1)) + np.spacing(np.abs(x2))) * slope
        diff = e1 - e2 - 2.0**-46 * (e1 + e2) - moved
        log_scale = -0.5 * a * a - np.abs(a) * a_error - np.spacing(a * a)
        log_tail = log_scale + np.where(diff > 1e-290, np.log(diff), -np.inf) - math.log(2.0)
        log_tail = log_tail - 8.0 * u * (1.0 + np.abs(log_scale)) - 2.0**-50
        low = np.where(a > 0.0, log_near, log_tail)
        low = np.where(m > 0.0, low, -np.inf)
    return np.asarray(np.where(np.isnan(low), -np.inf, low), dtype=np.float64)


def gaussian_log_slope_lower(mu: npt.ArrayLike, epsilon: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A lower bound on log |dδ_μ/dx| at x = e^ε, i.e. on log Φ(−μ/2 − ε/μ), at each (μ, ε)
    (broadcast together; −inf where μ = 0).

    As a function of x = e^ε, δ_μ = Φ(μ/2 − ε/μ) − x·Φ(−μ/2 − ε/μ) has the derivative
    −Φ(−μ/2 − ε/μ) (the terms in φ cancel: e^ε φ(−μ/2 − ε/μ) = φ(μ/2 − ε/μ)), and it is convex in
    x (every privacy profile is: a supremum over events S of P(S) − x·Q(S)). So the tangent at
    x_b lies below δ_μ: δ_μ(x) ≥ δ_μ(x_b) + Φ(−μ/2 − ε_b/μ)(x_b − x), which
    :func:`sharpdp.conversions.profile_to_gdp` uses between grid points.

    Error: b = −(μ/2 + ε/μ) is off by at most an ulp of each of ε/μ and b (counted twice), and
    log Φ moves with b at slope φ(b)/Φ(b) ≤ |b| + 1 for b ≤ 0 (Mills' ratio, Birnbaum 1942:
    φ(t)/Q(t) < (t + √(t² + 4))/2), counted with 10% margin; ``scipy.special.log_ndtr`` is
    allowed 2⁻⁴⁴ of its value's size. Never above the exact value.
    """
    import numpy as np
    from scipy import special

    m, e = np.broadcast_arrays(
        np.asarray(mu, dtype=np.float64), np.asarray(epsilon, dtype=np.float64)
    )
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ratio = e / m
        b = -(0.5 * m + ratio)
        b_error = 2.0 * (np.spacing(np.abs(ratio)) + np.spacing(np.abs(b)))
        value = special.log_ndtr(b)
        low = value - 2.0**-44 * (1.0 + np.abs(value)) - 1.1 * (np.abs(b) + 1.0) * b_error
        low = np.where(m > 0.0, low, -np.inf)
    return np.asarray(np.where(np.isnan(low), -np.inf, low), dtype=np.float64)


def gaussian_delta_lower(mu: npt.ArrayLike, epsilon: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A lower bound on δ(ε) of μ-GDP at each (μ, ε): the exponential of
    :func:`gaussian_log_delta_lower`, less the rounding of ``exp``; 0 below 1e-290 (where ``exp``'s
    subnormal results lose relative accuracy). Never above the exact δ(ε)."""
    import numpy as np

    log_low = gaussian_log_delta_lower(mu, epsilon)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        low = np.exp(log_low - 4.0 * 2.0**-53 * (1.0 + np.abs(log_low)))
    return np.asarray(np.where(np.isfinite(low) & (low > 1e-290), low, 0.0), dtype=np.float64)


def gaussian_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP (exact; see :func:`gaussian_log_delta`)."""
    return min(1.0, _math.up(_math.exp_up(gaussian_log_delta(mu, epsilon))))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with δ_μ(ε) ≤ delta, by certified bisection on the exact profile.

    The returned ε is one at which the reported δ(ε) (rounded up) ≤ delta was checked, so it errs
    upwards (by ≤ 1e-13 relative). Bracket: BS16 Lemma 3.5 with ρ = μ²/2 gives δ(μ²/2 + μ√(2 log 1/δ)) ≤ δ.
    """
    if mu == 0.0:
        return 0.0
    if delta <= 0.0 or mu == math.inf:
        return math.inf if delta < 1.0 else 0.0
    hi = 0.5 * mu * mu + mu * math.sqrt(2.0 * -math.log(delta))
    log_target = math.log(delta)

    def certified(e: float) -> bool:
        # The reported δ (rounded up) ≤ target, so ε(δ) ≤ e ⇔ delta(e) ≤ δ; for targets near the
        # float underflow, log δ below the target's log by a relative margin of 1e-9.
        return gaussian_delta(mu, e) <= delta or gaussian_log_delta(mu, e) <= log_target - 1e-9

    return _math.smallest_valid(certified, 0.0, hi, what="Gaussian epsilon(delta)")


# --- bounded range -------------------------------------------------------------------------------


def _grr_pair(eta: float, s: float) -> tuple[list[float], list[float]]:
    """P's weights and losses for the two-point pair GRR_t of η-BR, t = η − s (losses t and −s).

    Q(A) = (e^{−t} − e^{−η})/(1 − e^{−η}), P(A) = e^t Q(A) = (1 − e^{−s})/(1 − e^{−η}),
    P(B) = e^{−s}(1 − e^{−t})/(1 − e^{−η}). Parametrised by the distance s from the top so that
    maximisers within an ulp of η (large η) stay resolved.
    """
    t = eta - s
    denom = -math.expm1(-eta)
    p_a = -math.expm1(-s) / denom
    p_b = (math.exp(-s) * -math.expm1(-t) if t > 0.0 else 0.0) / denom
    weights, losses = [], []
    if p_a > 0.0:
        weights.append(p_a)
        losses.append(t)
    if p_b > 0.0:
        weights.append(p_b)
        losses.append(-s)
    return weights, losses


def br_renyi(eta: float, alpha: float) -> float:
    """Exact RDP curve of η-bounded-range mechanisms: sup over t ∈ [0, η] of D_α(GRR_t).

    Any pair whose privacy loss lies in [t − η, t] has E_Q[(P/Q)^α] no larger than the two-point
    pair with losses at the interval's ends and the same mean E_Q[P/Q] = 1 (x ↦ x^α is convex; the
    rounding argument of Steinke's Thm 4, used for bounded range by Rogers–Steinke 2021 and
    Dong–Durfee–Rogers 2020). With u = e^t, c = e^{−η}:

        E_Q[(P/Q)^α] = (u^{α−1}(1 − c^α) − u^α(c − c^α)) / (1 − c),

    whose derivative in u changes sign once, at u* = (α−1)(1 − c^α)/(α(c − c^α)). So the sup is
    attained at t* = clip(log u*, 0, η), in closed form; the divergence is then evaluated stably.
    α = 1 gives the maximal KL divergence, t* = log((e^η − 1)/η).
    """
    if eta == 0.0:
        return 0.0
    if math.isinf(eta):
        return math.inf
    if alpha == math.inf or math.isinf(alpha * eta):
        # D_α ≤ D_∞ = η; when α·η overflows, η is so large that D_α rounds to η anyway.
        return eta
    # s* = η − t*, computed directly (t* can lie within an ulp of η when η is large).
    if alpha == 1.0:
        s = math.log(eta) - _math.log1mexp(eta)  # t* = log((e^η − 1)/η)
    else:
        # log u* = log(α−1) + log(1 − c^α) − log α − log(c − c^α),  c − c^α = c(1 − c^{α−1}).
        s = (
            math.log(alpha)
            - math.log(alpha - 1.0)
            - _math.log1mexp(alpha * eta)
            + _math.log1mexp((alpha - 1.0) * eta)
        )
    s = min(max(s, 0.0), eta)
    weights, losses = _grr_pair(eta, s)
    value = _math.renyi_of_finite_pair(weights, losses, alpha)
    return value if value > 0.0 else _underflowed(min(eta, alpha * eta * eta / 8.0))


def br_delta(eta: float, epsilon: float) -> float:
    """Exact privacy profile of η-BR: δ(ε) = (1 − e^{(ε−η)/2})² / (1 − e^{−η}) for 0 ≤ ε ≤ η.

    The profile of GRR_t is p_t (e^t − e^ε)_+ for ε ≥ 0; maximising over t gives t* = (ε + η)/2
    (the k = 1 case of Dong–Durfee–Rogers 2020 Thm 3). Tight: GRR_{t*} attains it.
    """
    if epsilon >= eta:
        return 0.0
    if math.isinf(eta):
        return 1.0
    # a·(a/b), not a²/b: for tiny η the square a² ≈ (η − ε)²/4 underflows while δ ≈ η/4 does not
    a = -math.expm1(0.5 * (epsilon - eta))
    value = _math.up(a * (a / -math.expm1(-eta)))
    return min(1.0, value if value > 0.0 else 5e-324)  # ε < η: δ(ε) > 0, never reported as 0


def br_epsilon(eta: float, delta: float) -> float:
    """Inverse of :func:`br_delta`: ε(δ) = max(0, η + 2 log(1 − √(δ(1 − e^{−η})))) (exact, then
    rounded up by a few ulps)."""
    if math.isinf(eta):
        return math.inf if delta < 1.0 else 0.0
    if delta <= 0.0:
        return eta
    # log(1 − √(δc)) = log(1 − δc) − log1p(√(δc)), c = 1 − e^{−η}, and 1 − δc = (1 − δ) + δe^{−η}
    # is computed without cancellation when δ is close to 1.
    c = -math.expm1(-eta)
    s = math.sqrt(delta * c)
    if s > 0.5:
        one_minus = (1.0 - delta) + delta * math.exp(-eta)
        if one_minus <= 0.0:
            return 0.0
        return min(eta, max(0.0, _math.up(eta + 2.0 * (math.log(one_minus) - math.log1p(s)))))
    # small s: log1p(−s) is accurate (log(1 − δc) is not), but ε = η + 2 log1p(−s) sits where
    # δ(ε) ∝ (η − ε)² is steep, so the result is certified against the profile itself
    value = max(0.0, _math.up(eta + 2.0 * math.log1p(-s)))
    for i in range(60):  # steps growing geometrically from an ulp
        if value >= eta or br_delta(eta, value) <= delta:
            return min(value, eta)
        value = max(value * (1.0 + 2.0 ** (i - 52)), 5e-324)
    return eta
