"""Exact noisy-max races: the top-k of a_r + N_r with N_r = F⁻¹(U_r), decided on exact uniforms.

Every selection mechanism of sharpdp samples through this module. Each candidate r has an offset
a_r = c·(q_r − max q) (a real number fixed by the float inputs ε, Δ and q) and an independent noise
N_r = F⁻¹(U_r), where U_r is a uniform *real* in (0, 1) and F⁻¹ is one of the increasing quantile
functions

* ``gumbel``:      F⁻¹(u) = −ln(−ln u)          (Gumbel-max: the exponential mechanism, and its
  top-k is k rounds of peeling EM [Durfee–Rogers 2019]);
* ``exponential``: F⁻¹(u) = −ln(1 − u)          (report-noisy-max with exponential noise, which is
  permute-and-flip [Ding et al. 2021]);
* ``laplace``:     F⁻¹(u) = ln(2u) for u ≤ ½, −ln(2 − 2u) above   (report-noisy-max with Laplace).

The output (the indices of the k largest values, in order) is a function of the uniforms, and we
compute *that function exactly* instead of an approximation of it:

1. U_r is generated lazily as a binary expansion from the ``rng``: its first 53 bits are
   ``rng.integers(0, 2**53)`` (exactly uniform by numpy's contract), so U_r lies in
   [k·2⁻⁵³, (k + 1)·2⁻⁵³), whose end points are exact floats. More bits are drawn (64 at a time)
   only for the candidates that need them.
2. Since F⁻¹ is increasing, a_r + N_r lies in [a_r + F⁻¹(U_lo), a_r + F⁻¹(U_hi)]. These end points
   are evaluated in float64 and widened by a rigorous error bound (see ``_TAU``), giving an interval
   [lo_r, hi_r] that contains the true value.
3. If the true top-k were in doubt the intervals would show it: a candidate whose hi is below the
   k-th largest lo cannot be in the top-k; when exactly k candidates remain and their intervals are
   pairwise disjoint, the ordered top-k is determined. Otherwise the candidates still in doubt get
   64 more bits of their uniform and are re-evaluated in decimal arithmetic with enough digits
   (Python's ``Decimal.ln`` is correctly rounded), until the order is determined. This happens
   with probability about n·2⁻⁴⁰ per draw and terminates with probability one (distinct candidates
   tie with probability zero).

So the released indices have *exactly* the law of the ideal mechanism on real numbers; floating
point only decides how quickly we can tell. The one assumption is that the platform's float64
logarithm is accurate to within 2¹⁰ ulps (glibc's and numpy's are within a few ulps).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["Noise", "Offsets", "race"]

Noise = Literal["gumbel", "exponential", "laplace"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Relative error bound of the float stage: each float value v̂ of a true v satisfies
#: |v̂ − v| ≤ _TAU·(1 + |â| + |n̂|). Derivation: a_r = c·(q_r − q*) takes three roundings (2⁻⁵¹ in
#: all); F⁻¹ is at most two logarithms of exact inputs, each assumed within 2¹⁰ ulps (2⁻⁴²)
#: relative, and −ln(−ln u) turns a relative error ρ of −ln u into an absolute error ρ of the
#: result; the final sum takes one rounding. 2⁻⁴⁰ covers the total with room to spare.
_TAU = 2.0**-40
_BITS0 = 53
_BLOCK = 1 << 20
_HUGE = np.finfo(np.float64).max


@dataclass(frozen=True)
class Offsets:
    """The offsets a_r = c·(q_r − q*) of the live candidates, in float and exactly on demand.

    Attributes:
        approx: float64 values of a_r (``-inf`` only if the float product overflowed; the
            candidate is still live and its exact value is used when it matters).
        index: the original index of each live candidate.
        exact: a_r as a Fraction for candidate position i (position in ``approx``).
    """

    approx: FloatArray
    index: IntArray
    exact: Callable[[int], Fraction]


def offsets(q: FloatArray, c_num: Fraction | None) -> Offsets:
    """Offsets for scores q (finite or −inf) and coefficient c = ``c_num`` (None means c = ∞).

    c = ∞ (sensitivity 0) keeps only the maxima, with offset 0: a uniform choice among them.
    """
    live = np.flatnonzero(~np.isneginf(q))
    ql = q[live]
    top = float(np.max(ql))
    if c_num is None:
        keep = ql == top
        live, ql = live[keep], ql[keep]
        return Offsets(np.zeros(ql.size), live.astype(np.int64), lambda i: Fraction(0))
    try:
        c_float = float(c_num)
    except OverflowError:  # c beyond the float range (e.g. ε/Δ with a subnormal Δ)
        c_float = math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        approx = np.asarray(c_float * (ql - top), dtype=np.float64)
    approx[np.isnan(approx)] = 0.0  # c = 0 with an overflowed difference: the offset is 0
    top_exact = Fraction(top)

    def exact(i: int) -> Fraction:
        return c_num * (Fraction(float(ql[i])) - top_exact)

    return Offsets(approx, live.astype(np.int64), exact)


# -- float stage -----------------------------------------------------------------------------------


def _quantile(noise: Noise, u: FloatArray) -> FloatArray:
    """F⁻¹(u) in float64 for exact float u in [0, 1] (−inf at 0 and +inf at 1 where they occur)."""
    with np.errstate(divide="ignore"):
        if noise == "gumbel":
            return np.asarray(-np.log(-np.log(u)), dtype=np.float64)
        if noise == "exponential":
            return np.asarray(-np.log(1.0 - u), dtype=np.float64)  # 1 − u is exact here
        lower = u <= 0.5
        t = np.where(lower, 2.0 * u, 2.0 - 2.0 * u)  # exact: u is a multiple of 2⁻⁵³
        logs = np.log(t)
        return np.asarray(np.where(lower, logs, -logs), dtype=np.float64)


def _intervals(
    noise: Noise, a: FloatArray, words: IntArray
) -> tuple[FloatArray, FloatArray]:
    """Rigorous [lo, hi] for a + F⁻¹(U) with U ∈ [w·2⁻⁵³, (w + 1)·2⁻⁵³)."""
    u_lo = np.asarray(words * 2.0**-_BITS0, dtype=np.float64)  # exact: words < 2⁵³
    u_hi = np.asarray((words + 1) * 2.0**-_BITS0, dtype=np.float64)
    n_lo, n_hi = _quantile(noise, u_lo), _quantile(noise, u_hi)
    a_hi = np.maximum(a, -_HUGE)  # an overflowed offset is still ≥ −inf and ≤ −DBL_MAX
    with np.errstate(invalid="ignore", over="ignore"):
        scale = 1.0 + np.abs(a_hi) + np.maximum(np.abs(n_lo), np.abs(n_hi))
        lo = a + n_lo - _TAU * scale
        hi = a_hi + n_hi + _TAU * scale
    lo[np.isnan(lo)] = -np.inf  # −inf offset plus +inf noise: unknown from below
    hi[np.isnan(hi)] = np.inf
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def _kth_largest(x: FloatArray, k: int) -> float:
    if x.size < k:
        return -math.inf
    if k == 1:
        return float(np.max(x))
    return float(np.partition(x, x.size - k)[x.size - k])


# -- exact stage -----------------------------------------------------------------------------------


@dataclass
class _Candidate:
    position: int  # position in the Offsets arrays
    numerator: int  # U ∈ [numerator·2^-bits, (numerator + 1)·2^-bits)
    bits: int
    lo: Decimal
    hi: Decimal


def _decimal_quantile(noise: Noise, u: Decimal) -> Decimal:
    """F⁻¹(u) in the current decimal context (called inside ``localcontext``)."""
    if u == 1:
        return Decimal("Infinity")
    if noise == "exponential":
        return -(1 - u).ln()
    if u == 0:
        return Decimal("-Infinity")
    if noise == "gumbel":
        return -(-u.ln()).ln()
    return (2 * u).ln() if u <= Decimal("0.5") else -(2 - 2 * u).ln()


def _refine(cand: _Candidate, noise: Noise, off: Offsets, rng: np.random.Generator) -> None:
    """Draw 64 more bits of the candidate's uniform and recompute its interval in decimal."""
    word = int(rng.integers(0, 1 << 32, dtype=np.int64)) << 32
    word |= int(rng.integers(0, 1 << 32, dtype=np.int64))
    cand.numerator = (cand.numerator << 64) | word
    cand.bits += 64
    # With bits + 40 significant digits, 2^bits, the end points m/2^bits (m·5^bits < 10^bits),
    # 1 − u and 2u are exact; only ln, the offset's division and the sums round.
    with localcontext(Context(prec=cand.bits + 40)) as ctx:
        scale = Decimal(2) ** cand.bits
        u_lo = Decimal(cand.numerator) / scale
        u_hi = Decimal(cand.numerator + 1) / scale
        exact = off.exact(cand.position)
        a = Decimal(exact.numerator) / Decimal(exact.denominator)
        n_lo, n_hi = _decimal_quantile(noise, u_lo), _decimal_quantile(noise, u_hi)
        # Each correctly rounded operation errs by ≤ ½ ulp (relative 10^(1−prec)); at most five
        # per end point, each carried with gain ≤ 1 into the absolute error of a + F⁻¹(u)
        # (d ln(x) = dx/x turns a relative error into an absolute one).
        slack = Decimal(10) ** (5 - ctx.prec)
        margin = slack * (1 + sum(abs(v) for v in (a, n_lo, n_hi) if v.is_finite()))
        cand.lo = a + n_lo - margin if n_lo.is_finite() else n_lo
        cand.hi = a + n_hi + margin if n_hi.is_finite() else n_hi


def _order_if_determined(cands: list[_Candidate], k: int) -> list[_Candidate] | None:
    ranked = sorted(cands, key=lambda c: c.lo, reverse=True)
    if len(ranked) == k and all(ranked[j].lo > ranked[j + 1].hi for j in range(k - 1)):
        return ranked
    return None


def _resolve(
    cands: list[_Candidate], k: int, noise: Noise, off: Offsets, rng: np.random.Generator
) -> list[int]:
    """Refine the candidates in doubt until the ordered top-k is certain."""
    while True:
        los = sorted((c.lo for c in cands), reverse=True)
        threshold = los[k - 1]
        cands = [c for c in cands if c.hi >= threshold]
        ranked = _order_if_determined(cands, k)
        if ranked is not None:
            return [int(off.index[c.position]) for c in ranked]
        for c in cands:
            overlaps = any(o is not c and o.lo <= c.hi and c.lo <= o.hi for o in cands)
            if overlaps:
                _refine(c, noise, off, rng)


def _candidates(
    positions: IntArray, words: IntArray, lo: FloatArray, hi: FloatArray
) -> list[_Candidate]:
    return [
        _Candidate(int(p), int(w), _BITS0, Decimal(float(a)), Decimal(float(b)))
        for p, w, a, b in zip(positions, words, lo, hi, strict=True)
    ]


# -- drivers ---------------------------------------------------------------------------------------


def _race_one(off: Offsets, k: int, noise: Noise, rng: np.random.Generator) -> list[int]:
    """One draw, streaming over blocks of candidates (memory O(block))."""
    n = off.approx.size
    pool_pos = np.empty(0, dtype=np.int64)
    pool_words = np.empty(0, dtype=np.int64)
    pool_lo = np.empty(0)
    pool_hi = np.empty(0)
    for start in range(0, n, _BLOCK):
        a = off.approx[start : start + _BLOCK]
        words = rng.integers(0, 1 << _BITS0, size=a.size, dtype=np.int64)
        lo, hi = _intervals(noise, a, words)
        threshold = max(_kth_largest(lo, k), _kth_largest(pool_lo, k))
        keep = np.flatnonzero(hi >= threshold)
        pool_pos = np.concatenate([pool_pos, keep + start])
        pool_words = np.concatenate([pool_words, words[keep]])
        pool_lo = np.concatenate([pool_lo, lo[keep]])
        pool_hi = np.concatenate([pool_hi, hi[keep]])
        threshold = _kth_largest(pool_lo, k)
        keep = np.flatnonzero(pool_hi >= threshold)
        pool_pos, pool_words = pool_pos[keep], pool_words[keep]
        pool_lo, pool_hi = pool_lo[keep], pool_hi[keep]
    if pool_pos.size == k:
        order = np.argsort(-pool_lo, kind="stable")
        if np.all(pool_lo[order[:-1]] > pool_hi[order[1:]]):
            return [int(off.index[p]) for p in pool_pos[order]]
    return _resolve(_candidates(pool_pos, pool_words, pool_lo, pool_hi), k, noise, off, rng)


def _race_rows(
    off: Offsets, k: int, noise: Noise, rng: np.random.Generator, rows: int
) -> IntArray:
    """``rows`` independent draws at once (for small candidate sets)."""
    n = off.approx.size
    out = np.empty((rows, k), dtype=np.int64)
    words = rng.integers(0, 1 << _BITS0, size=(rows, n), dtype=np.int64)
    lo, hi = _intervals(noise, np.broadcast_to(off.approx, (rows, n)), words)
    if k == 1:
        top = np.argmax(lo, axis=1)[:, None]
    else:
        part = np.argpartition(-lo, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(lo, part, axis=1), axis=1, kind="stable")
        top = np.take_along_axis(part, order, axis=1)
    top_lo = np.take_along_axis(lo, top, axis=1)
    top_hi = np.take_along_axis(hi, top, axis=1)
    in_doubt = (hi >= top_lo[:, -1:]).sum(axis=1) != k
    if k > 1:
        in_doubt |= np.any(top_lo[:, :-1] <= top_hi[:, 1:], axis=1)
    out[:] = off.index[top]
    for row in np.flatnonzero(in_doubt):
        keep = np.flatnonzero(hi[row] >= top_lo[row, -1])
        cands = _candidates(keep, words[row, keep], lo[row, keep], hi[row, keep])
        out[row] = _resolve(cands, k, noise, off, rng)
    return out


def race(
    off: Offsets, k: int, noise: Noise, rng: np.random.Generator, size: int | None
) -> IntArray:
    """The ordered top-k indices of a_r + F⁻¹(U_r), exactly; shape (k,) or (size, k)."""
    if size is None:
        return np.asarray(_race_one(off, k, noise, rng), dtype=np.int64)
    n = max(1, off.approx.size)
    out = np.empty((size, k), dtype=np.int64)
    if n > 1 << 16:
        for i in range(size):
            out[i] = _race_one(off, k, noise, rng)
        return out
    chunk = max(1, (1 << 21) // n)
    for start in range(0, size, chunk):
        rows = min(chunk, size - start)
        out[start : start + rows] = _race_rows(off, k, noise, rng, rows)
    return out
