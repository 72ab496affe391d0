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

**Multiplicities** (Gumbel noise only). A candidate may stand for n_r ≥ 1 identical copies (e.g. the
grid cells of one interval of the quantile mechanism): its value is a_r + ln n_r + G_r. Since
P[max of n iid Gumbels ≤ x] = exp(−e^{−x})ⁿ = exp(−e^{−(x − ln n)}), the maximum of n_r iid
Gumbels *is* ln n_r + G_r in law, so the race picks r with probability n_r e^{a_r}/Σ_s n_s e^{a_s}
(the exponential mechanism with weights n_r), and its top-k is peeling over the weighted
candidates. ln n_r is irrational, so it is handled like F⁻¹: a float value inside the certified
interval (its error, < 2⁻⁵³ + 2⁻⁴²·ln n_r, is covered by ``_TAU`` once |ln n_r| joins the scale)
and a correctly rounded ``Decimal.ln`` in the exact stage.

**Offsets with an error bound.** Callers whose offsets are not of the form c·(q_r − max q) with
float q (the quantile and limited-domain mechanisms) give float approximations together with an
absolute error bound ``slack`` and the exact rational offsets; ``slack`` widens every interval.

**Speed (one draw over many candidates).** Most candidates cannot reach the top k, and deciding
that does not need their upper end point: a first pass computes only v_r = a_r + F⁻¹(U_lo) in
float (two logarithms, like numpy's float Gumbel) and keeps a candidate only if v_r is within a
certified margin of the k-th largest v, or its uniform is in the outer 2⁻²⁰ of (0, 1) where F⁻¹
is steep; rigorous intervals are computed for the kept few (see :func:`_filter_margin`).
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

__all__ = ["Noise", "Offsets", "race", "scaled_gaps"]

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
        approx: float64 values of a_r (``-inf`` only where a_r < −DBL_MAX, see
            :func:`scaled_gaps`; the candidate is still live and its exact value is used when it
            matters).
        index: the original index of each live candidate (``None``: position i is index i).
        exact: a_r as a Fraction for candidate position i (position in ``approx``).
        slack: an absolute bound on |approx − a_r| beyond the error model of ``_TAU`` (0 for
            offsets made by :func:`offsets`; callers with other offsets certify their own).
        counts: multiplicities n_r ≥ 1 (int64, one per position; ``None``: all 1). Gumbel only.
    """

    approx: FloatArray
    index: IntArray | None
    exact: Callable[[int], Fraction]
    slack: float = 0.0
    counts: IntArray | None = None

    def original(self, positions: IntArray) -> IntArray:
        """The original indices of candidate positions."""
        if self.index is None:
            return np.asarray(positions, dtype=np.int64)
        return np.asarray(self.index[positions], dtype=np.int64)


def scaled_gaps(q: FloatArray, c: Fraction | None) -> FloatArray:
    """c·(q − max q) in float64 for scores q (finite or −inf, not all −inf) and an exact c ≥ 0
    (``None``: c = ∞, which keeps the maxima at 0 and sends the rest to −inf; c = 0 gives 0).

    With c = c_m·2^m (c_m in [1, 2], rounded once), each value is (q − max q)·c_m·2^m — one
    product by the float c_m·2^m where that is normal, else an exact scaling by 2^m then c_m —
    three roundings in all, and never an overflow that the true value does not have. Where q − max q
    itself overflows (|q| + |max q| beyond the float range, scores of both signs) it is taken as
    ldexp(q, m) − ldexp(max q, m) when m < 0 (a scaled difference, finite), and is −inf when
    m ≥ 0 (then |c·(q − max q)| exceeds the float range). Multiplying the float difference by a
    float c instead made c·(q − max q) = −inf for c < 1 (its factor overflowed) and for c
    beyond the float range (a subnormal Δ): candidates with a moderate offset never won.
    """
    top = float(np.max(q))
    if c is None:
        return np.where(q == top, 0.0, -np.inf)
    if c == 0:
        return np.where(np.isneginf(q), -np.inf, 0.0)
    low = float(np.min(q))
    if math.isinf(low):  # excluded candidates: the least finite score
        low = float(np.min(q[~np.isneginf(q)]))
    m = c.numerator.bit_length() - c.denominator.bit_length()
    ratio = c / Fraction(2) ** m
    if ratio < 1:
        ratio, m = ratio * 2, m - 1
    c_m = float(ratio)  # in [1, 2]: correctly rounded
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.subtract(q, top)  # −inf for excluded scores, and where the difference overflows
        # scores of both signs so far apart that q − max q overflows: taken apart below (c < 1)
        over = np.isneginf(out) & ~np.isneginf(q) if m < 0 and math.isinf(top - low) else None
        if -1022 <= m <= 1023:  # c_m·2^m is c rounded once, a normal float: one product
            np.multiply(out, math.ldexp(c_m, m), out=out)
        else:  # c beyond the normal range: an exact scaling by 2^m, then c_m
            np.ldexp(out, m, out=out)
            np.multiply(out, c_m, out=out)
        if over is not None and over.any():
            out[over] = (np.ldexp(q[over], m) - math.ldexp(top, m)) * c_m
    return out


def offsets(q: FloatArray, c_num: Fraction | None) -> Offsets:
    """Offsets for scores q (finite or −inf) and coefficient c = ``c_num`` (None means c = ∞).

    c = ∞ (sensitivity 0) keeps only the maxima, with offset 0: a uniform choice among them.
    """
    live: IntArray | None
    if np.isneginf(np.min(q)):
        live = np.flatnonzero(~np.isneginf(q)).astype(np.int64)
        ql = q[live]
    else:  # nothing excluded: no copy, positions are indices
        live, ql = None, q
    top = float(np.max(ql))
    if c_num is None:
        keep = np.flatnonzero(ql == top).astype(np.int64)
        chosen = keep if live is None else live[keep]
        return Offsets(np.zeros(chosen.size), chosen, lambda i: Fraction(0))
    approx = scaled_gaps(ql, c_num)
    top_exact = Fraction(top)

    def exact(i: int) -> Fraction:
        return c_num * (Fraction(float(ql[i])) - top_exact)

    return Offsets(approx, live, exact)


# -- float stage -----------------------------------------------------------------------------------

#: Uniforms U ∈ [w·2⁻⁵³, (w + 1)·2⁻⁵³) with 2³³ ≤ w < 2⁵³ − 2³³ (u within 2⁻²⁰ of neither end) are
#: "tame": there, for each noise, F⁻¹ has slope ≤ 2²⁰ (Gumbel: 1/(u·(−ln u)) ≤ 2²⁰/13.8 at the
#: lower end and ≈ 2²⁰ at the upper; exponential: 1/(1 − u) ≤ 2²⁰; Laplace: ≤ 2¹⁹), so
#: F⁻¹(U_hi) − F⁻¹(U_lo) ≤ 2⁻⁵³·2²⁰ = 2⁻³³, and |F⁻¹| ≤ 20·ln 2 < 14.
_TAME_LO = 1 << 33
_TAME_SPAN = (1 << _BITS0) - (1 << 34)
_TAME_WIDTH = 2.0**-33
_TAME_NOISE = 14.0


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


def _quantile_inplace(noise: Noise, u: FloatArray) -> FloatArray:
    """``_quantile(noise, u)`` computed in the buffer ``u`` (same values, operation by operation)."""
    with np.errstate(divide="ignore"):
        if noise == "gumbel":
            np.log(u, out=u)
            np.negative(u, out=u)
            np.log(u, out=u)
            return np.negative(u, out=u)
        if noise == "exponential":
            np.subtract(1.0, u, out=u)
            np.log(u, out=u)
            return np.negative(u, out=u)
    return _quantile(noise, u)


def _intervals(
    noise: Noise,
    a: FloatArray,
    words: IntArray,
    slack: float = 0.0,
    logw: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Rigorous [lo, hi] for a + ln n + F⁻¹(U) with U ∈ [w·2⁻⁵³, (w + 1)·2⁻⁵³).

    ``slack`` bounds the offsets' error beyond the ``_TAU`` model; ``logw`` are float values of
    ln n (their error and the extra rounding of the three-term sum are within ``_TAU``·scale).
    """
    u_lo = np.asarray(words * 2.0**-_BITS0, dtype=np.float64)  # exact: words < 2⁵³
    u_hi = np.asarray((words + 1) * 2.0**-_BITS0, dtype=np.float64)
    n_lo, n_hi = _quantile(noise, u_lo), _quantile(noise, u_hi)
    a_hi = np.maximum(a, -_HUGE)  # an overflowed offset is still ≥ −inf and ≤ −DBL_MAX
    with np.errstate(invalid="ignore", over="ignore"):
        scale = 1.0 + np.abs(a_hi) + np.maximum(np.abs(n_lo), np.abs(n_hi))
        if logw is not None:
            scale = scale + np.abs(logw)
            n_lo = n_lo + logw
            n_hi = n_hi + logw
        lo = a + n_lo - _TAU * scale - slack
        hi = a_hi + n_hi + _TAU * scale + slack
    lo[np.isnan(lo)] = -np.inf  # −inf offset plus +inf noise: unknown from below
    hi[np.isnan(hi)] = np.inf
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def _kth_largest(x: FloatArray, k: int) -> float:
    if x.size < k:
        return -math.inf
    if k == 1:
        return float(np.max(x))
    return float(np.partition(x, x.size - k)[x.size - k])


def _filter_margin(t: float, slack: float) -> float:
    """M such that dropping tame candidates with v = fl(a + F⁻¹(U_lo)) < t − M is safe.

    Here t is either the k-th largest v of tame candidates or a certified lower bound (a lo) of
    k candidates. Claim: a tame candidate i with v_i < t − M has hi_i < lo_j for each of those k
    candidates j, so it cannot be in the top k. Proof: with the interval of :func:`_intervals`,
    s = 1 + |a| + max|n| and the float rounding of v (≤ 2⁻⁵³|v|), a tame candidate has
    hi − v ≤ H(a) and v − lo ≤ H(a), H(a) = 2⁻³³ + 2τ(16 + |a|) + 2⁻⁵²(|a| + 15) + slack
    (2⁻³³ bounds F⁻¹(U_hi) − F⁻¹(U_lo), 14 bounds |F⁻¹|). A candidate j with v_j ≥ t has
    a_j ≥ t − 15, so |a_j| ≤ A = |t| + 45 (offsets are ≤ 0); the same holds for i unless
    a_i < −A, and then hi_i ≤ a_i(1 − 2τ) + 15 + slack < t − 29 + slack, below every lo_j ≥ t − 1
    − slack. Otherwise hi_i < t − M + H(a_i) ≤ t − H(a_j) ≤ lo_j as M ≥ 2H(A) (plus the rounding
    of t − M). Valid for τ ≤ 2⁻³⁰ (the caller checks).
    """
    big_a = abs(t) + 45.0
    h = _TAME_WIDTH + 2.0 * _TAU * (16.0 + big_a) + 2.0**-52 * (big_a + 15.0) + slack
    return 2.0 * h * (1.0 + 2.0**-40) + 2.0**-50 * abs(t)


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
        if off.counts is not None:  # + ln n_r, correctly rounded (n_r < 2⁶³ is exact here)
            a += Decimal(int(off.counts[cand.position])).ln()
        n_lo, n_hi = _decimal_quantile(noise, u_lo), _decimal_quantile(noise, u_hi)
        # Each correctly rounded operation errs by ≤ ½ ulp (relative 10^(1−prec)); at most seven
        # per end point, each carried with gain ≤ 1 into the absolute error of a + F⁻¹(u)
        # (d ln(x) = dx/x turns a relative error into an absolute one). a ≤ |offset| + ln n_r.
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
            chosen = off.original(np.array([c.position for c in ranked], dtype=np.int64))
            return [int(i) for i in chosen]
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


def _log_counts(off: Offsets) -> FloatArray | None:
    if off.counts is None:
        return None
    return np.asarray(np.log(off.counts.astype(np.float64)), dtype=np.float64)


def _block_survivors(
    noise: Noise,
    a: FloatArray,
    words: IntArray,
    k: int,
    pool_threshold: float,
    slack: float,
    buffer: FloatArray,
) -> IntArray:
    """Positions (in the block) that may be in the top k: see :func:`_filter_margin`."""
    v = buffer[: a.size]
    np.multiply(words, 2.0**-_BITS0, out=v)  # exact: words < 2⁵³
    v = _quantile_inplace(noise, v)
    with np.errstate(invalid="ignore"):
        np.add(v, a, out=v)
    wild = np.flatnonzero((words - _TAME_LO).view(np.uint64) >= _TAME_SPAN)
    if wild.size:
        v[wild] = -np.inf  # wild candidates are kept, and play no part in the threshold
    t = max(_kth_largest(v, k), pool_threshold)
    if math.isinf(t):
        return np.arange(a.size, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        keep = np.flatnonzero(v >= t - _filter_margin(t, slack))
    if wild.size:
        keep = np.union1d(keep, wild)
    return keep.astype(np.int64)


def _race_one(off: Offsets, k: int, noise: Noise, rng: np.random.Generator) -> list[int]:
    """One draw, streaming over blocks of candidates (memory O(block))."""
    n = off.approx.size
    logw = _log_counts(off)
    fast = logw is None and _TAU <= 2.0**-30 and n > 4 * k
    buffer = np.empty(min(n, _BLOCK)) if fast else np.empty(0)
    pool_pos = np.empty(0, dtype=np.int64)
    pool_words = np.empty(0, dtype=np.int64)
    pool_lo = np.empty(0)
    pool_hi = np.empty(0)
    for start in range(0, n, _BLOCK):
        a = off.approx[start : start + _BLOCK]
        words = rng.integers(0, 1 << _BITS0, size=a.size, dtype=np.int64)
        if fast:
            sel = _block_survivors(noise, a, words, k, _kth_largest(pool_lo, k), off.slack, buffer)
            a, words, offset = a[sel], words[sel], sel + start
        else:
            offset = np.arange(start, start + a.size, dtype=np.int64)
        w = None if logw is None else logw[offset]
        lo, hi = _intervals(noise, a, words, off.slack, w)
        threshold = max(_kth_largest(lo, k), _kth_largest(pool_lo, k))
        keep = np.flatnonzero(hi >= threshold)
        pool_pos = np.concatenate([pool_pos, offset[keep]])
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
            return [int(i) for i in off.original(pool_pos[order])]
    return _resolve(_candidates(pool_pos, pool_words, pool_lo, pool_hi), k, noise, off, rng)


def _race_rows(off: Offsets, k: int, noise: Noise, rng: np.random.Generator, rows: int) -> IntArray:
    """``rows`` independent draws at once (for small candidate sets)."""
    n = off.approx.size
    out = np.empty((rows, k), dtype=np.int64)
    words = rng.integers(0, 1 << _BITS0, size=(rows, n), dtype=np.int64)
    logw = _log_counts(off)
    w = None if logw is None else np.broadcast_to(logw, (rows, n))
    lo, hi = _intervals(noise, np.broadcast_to(off.approx, (rows, n)), words, off.slack, w)
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
    out[:] = off.original(top.reshape(-1)).reshape(rows, k)
    for row in np.flatnonzero(in_doubt):
        keep = np.flatnonzero(hi[row] >= top_lo[row, -1])
        cands = _candidates(keep, words[row, keep], lo[row, keep], hi[row, keep])
        out[row] = _resolve(cands, k, noise, off, rng)
    return out


def race(
    off: Offsets, k: int, noise: Noise, rng: np.random.Generator, size: int | None
) -> IntArray:
    """The ordered top-k indices of a_r + ln n_r + F⁻¹(U_r), exactly; shape (k,) or (size, k).

    Raises:
        ValueError: multiplicities with a noise other than Gumbel (an internal misuse).
    """
    if off.counts is not None and noise != "gumbel":
        raise ValueError("multiplicities are defined for Gumbel noise only")
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
