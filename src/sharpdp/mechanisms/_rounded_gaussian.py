"""Exact sampling of round(Z) for Z ~ N(0, s²): the grid noise of the Gaussian mechanism.

The Gaussian mechanism releases on a grid γℤ (:mod:`sharpdp.mechanisms._grid`): it outputs
γ·(round(x/γ) + K) with K = round(N/γ), N ~ N(0, σ²). Then K = round(Z) with Z = N/γ ~ N(0, s²),
s = σ/γ, and the release is a deterministic function of round(x/γ)·γ + N — post-processing of the
continuous Gaussian mechanism on the rounded query, so the continuous mechanism's exact privacy
profile holds for what is released. (The *discrete* Gaussian would not do: its privacy profile is
not dominated by the continuous one in general.) This module draws K with exactly its law

    P[K = m] = Φ((m + ½)/s) − Φ((m − ½)/s),

using only exact integer samplers and exact comparisons — no Gaussian quantile, no erf.

**Algorithm (rejection on the pair (K, U)).** K = m exactly when Z = m + u with u ∈ [−½, ½), so K
is the first coordinate of a pair (m, u) ∈ ℤ × [−½, ½) with density f(m, u) ∝ exp(−(m + u)²/(2s²)).
Propose m from the discrete Gaussian D_ℤ(t) with the wider variance t = s² + s, pmf
∝ exp(−m²/(2t)) (CKS20's exact sampler, :func:`~sharpdp.mechanisms._samplers.discrete_gaussian`),
and u uniform on [−½, ½). The log-ratio of target to proposal is

    g(m, u) = −(m + u)²/(2s²) + m²/(2t) ≤ 1/(8s) =: c.

*Proof of the bound.* For m = 0, g = −u²/(2s²) ≤ 0. For |m| ≥ 1 the worst u is −sign(m)/2, so
g ≤ h(|m|) with h(x) = −(x − ½)²/(2s²) + x²/(2t); h is concave (1/t < 1/s²) with its maximum at
x* = (s + 1)/2, where h(x*) = −1/8 + (s + 1)²/(8(s² + s)) = 1/(8s).

So the pair is accepted with probability exp(g − c) = P[E > c − g] for E ~ Exp(1); accepted pairs
have density ∝ f, and the accepted m has exactly the law of K. We compare E = −ln V (V uniform) with
c − g(m, u) *exactly*: u and V are exact uniform reals whose binary expansions are drawn lazily
(53 bits, then 64 more at a time), float64 decides the comparison when certified intervals are
disjoint (the same argument as :mod:`sharpdp.mechanisms._race`: libm's log is assumed accurate to
2¹⁰ ulps), and otherwise the comparison is refined with exact rationals for c − g and correctly
rounded ``Decimal.ln`` for E. Refinement happens with probability ≈ 2⁻⁴⁰ per proposal and ends
with probability one.

Acceptance rate: √(2π)·s·e^{−1/(8s)}/Σ_m e^{−m²/(2t)} ≥ 0.62 for s ≥ 1 and → 1 as s grows (the
grid default makes s ≈ 2³⁰). We require s ≥ 1 (grid step at most σ).
"""

from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from sharpdp.errors import InvalidParameter
from sharpdp.mechanisms import _samplers

__all__ = ["rounded_gaussian"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Absolute error bound of the float stage relative to the size of the terms (see _decide).
_TAU = 2.0**-40
_BITS0 = 53


def rounded_gaussian(
    s: Fraction, size: int, rng: np.random.Generator, *, initial_bits: int = _BITS0
) -> IntArray:
    """``size`` independent draws of round(Z), Z ~ N(0, s²), exactly (see the module docstring).

    Args:
        s: the standard deviation in grid units, a rational ≥ 1.
        size: the number of draws.
        rng: the source of random bits.
        initial_bits: bits of each uniform drawn before the float stage (≤ 53; smaller values
            only make exact refinement more frequent — used to test that path).

    Raises:
        InvalidParameter: if s < 1.
    """
    if s < 1:
        raise InvalidParameter(f"the grid step must not exceed sigma (sigma/step = {float(s)!r})")
    if not 1 <= initial_bits <= _BITS0:
        raise InvalidParameter(f"initial_bits must be in [1, {_BITS0}], got {initial_bits!r}")
    t = s * s + s
    c = 1 / (8 * s)
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        want = size - filled
        batch = want + want // 2 + 16  # acceptance ≥ 0.62; leftovers loop
        m = np.asarray(_samplers.discrete_gaussian(sigma_squared=t, size=batch, rng=rng))
        ku = rng.integers(0, 1 << initial_bits, size=batch, dtype=np.int64)
        kv = rng.integers(0, 1 << initial_bits, size=batch, dtype=np.int64)
        accept = _decide(m, ku, kv, initial_bits, s, t, c)
        for i in np.flatnonzero(accept < 0):  # undecided by floats: exact refinement
            accept[i] = _refine(int(m[i]), int(ku[i]), int(kv[i]), initial_bits, s, t, c, rng)
        kept = m[accept == 1][:want]
        out[filled : filled + kept.size] = kept
        filled += kept.size
    return out


def _decide(
    m: IntArray, ku: IntArray, kv: IntArray, bits: int, s: Fraction, t: Fraction, c: Fraction
) -> npt.NDArray[np.int8]:
    """1 (accept), 0 (reject) or −1 (undecided) for each proposal, from float64 intervals.

    u ∈ [−½ + ku·2^-b, −½ + (ku+1)·2^-b) and V ∈ [kv·2^-b, (kv+1)·2^-b) with b = ``bits``.
    Error bound: the end points of u and V are exact floats; m + u, its square, the divisions and
    the sum take a handful of roundings (relative 2⁻⁵³ each, t as a float one more), so each term
    of c − g is within 2⁻⁴⁸ of its size; −ln V is within 2⁻⁴² relative (libm assumption).
    Widening by 2⁻⁴⁰·(1 + terms) covers both with room to spare.
    """
    step = math.ldexp(1.0, -bits)
    mf = m.astype(np.float64)
    z_lo = mf + (ku.astype(np.float64) * step - 0.5)
    z_hi = mf + ((ku + 1).astype(np.float64) * step - 0.5)
    sq_lo = np.where((z_lo <= 0) & (z_hi >= 0), 0.0, np.minimum(z_lo * z_lo, z_hi * z_hi))
    sq_hi = np.maximum(z_lo * z_lo, z_hi * z_hi)
    two_s2 = 2.0 * float(s) * float(s)
    base = mf * mf / (2.0 * float(t))
    cf = float(c)
    slack = _TAU * (1.0 + cf + sq_hi / two_s2 + base)
    gap_lo = cf + sq_lo / two_s2 - base - slack  # c − g over the u interval
    gap_hi = cf + sq_hi / two_s2 - base + slack
    v_lo = kv.astype(np.float64) * step
    v_hi = (kv + 1).astype(np.float64) * step
    with np.errstate(divide="ignore"):
        e_lo = -np.log(v_hi) * (1.0 - _TAU)  # E = −ln V over the V interval
        e_hi = -np.log(v_lo) * (1.0 + _TAU)  # +inf when kv = 0
    out = np.full(m.shape, -1, dtype=np.int8)
    out[e_lo > gap_hi] = 1
    out[e_hi < gap_lo] = 0
    return out


def _refine(
    m: int,
    ku: int,
    kv: int,
    bits: int,
    s: Fraction,
    t: Fraction,
    c: Fraction,
    rng: np.random.Generator,
) -> int:
    """Decide E > c − g(m, u) exactly, drawing 64 more bits of u and V until it is settled."""
    base = c - Fraction(m * m) / (2 * t)
    two_s2 = 2 * s * s
    while True:
        ku = (ku << 64) | _word(rng)
        kv = (kv << 64) | _word(rng)
        bits += 64
        z_lo = m + Fraction(ku, 1 << bits) - Fraction(1, 2)
        z_hi = m + Fraction(ku + 1, 1 << bits) - Fraction(1, 2)
        sq_lo = Fraction(0) if z_lo <= 0 <= z_hi else min(z_lo * z_lo, z_hi * z_hi)
        sq_hi = max(z_lo * z_lo, z_hi * z_hi)
        gap_lo, gap_hi = base + sq_lo / two_s2, base + sq_hi / two_s2
        e_lo, e_hi = _exp_interval(kv, bits)
        if e_lo > gap_hi:
            return 1
        if e_hi < gap_lo:
            return 0


def _exp_interval(kv: int, bits: int) -> tuple[Fraction, Fraction | float]:
    """Rational bounds on −ln V for V ∈ [kv·2^-b, (kv+1)·2^-b), via correctly rounded Decimal.ln.

    With b + 40 digits the end points kv/2^b are exact decimals (kv·5^b < 10^b); ln rounds once
    (½ ulp, relative 10^(1−prec)), so a margin of 10^(3−prec)·(1 + |ln V|) is safe.
    """
    with localcontext(Context(prec=bits + 40)) as ctx:
        scale = Decimal(2) ** bits
        margin = Decimal(10) ** (3 - ctx.prec)
        ln_hi = (Decimal(kv + 1) / scale).ln()
        lo = Fraction(-ln_hi - margin * (1 - ln_hi))
        if kv == 0:
            return lo, math.inf
        ln_lo = (Decimal(kv) / scale).ln()
        return lo, Fraction(-ln_lo + margin * (1 - ln_lo))


def _word(rng: np.random.Generator) -> int:
    """64 uniform bits as a non-negative Python int."""
    return int(rng.integers(0, 1 << 32, dtype=np.int64)) << 32 | int(
        rng.integers(0, 1 << 32, dtype=np.int64)
    )
