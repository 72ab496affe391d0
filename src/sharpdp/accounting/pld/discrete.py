"""Discretised privacy loss distributions: the value type :class:`DiscretePLD`, its construction
from a dominating pair on a grid (:func:`discretise`), and its FFT composition with rigorous float
error bounds (convolution, self-composition by FFT powers, tail truncation, regridding).
See :mod:`sharpdp.accounting.pld` for why each step errs against the user.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from sharpdp import _math, _validate
from sharpdp.accounting.pld.grid import optimistic_masses, pessimistic_masses
from sharpdp.accounting.pld.pairs import (
    DominatingPair,
)
from sharpdp.errors import InvalidParameter, NumericalError

#: Largest finite |loss| of a pair the PLD discretises (its MGF tables need β·loss in range).
MAX_LOSS = 1e6


FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")

U = 2.0**-53
#: Per-stage relative error assumed for numpy's (pocketfft) FFT butterflies, in ulps. The bound
#: used is normwise, ‖fft(x) − DFT(x)‖₂ ≤ FFT_ULPS·u·log2(N)·‖DFT(x)‖₂, the form of the classical
#: FFT error analysis (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Thm 24.2:
#: log2(N)·η with η ≈ 5u + the twiddle error per butterfly stage), for forward and inverse real
#: transforms. Tests check it (and the componentwise |fft(x)_ω − DFT(x)_ω| ≤ FFT_ULPS·u·log2(N)·Σ|x|)
#: against exact DFTs.
FFT_ULPS = 10.0
#: Default bound on each truncated tail (probability mass moved to +∞ or to the lowest loss).
DEFAULT_TAIL = 1e-24
#: Relative tolerance of the tilted (aliased) mass outside an FFT window.
_ALIAS_REL = 1e-15
#: Largest FFT size used.
MAX_FFT = 2**24
#: Discretised laws of at least this many bins get a blocked MGF bound (:meth:`_MGF._of_blocks`).
_MGF_BLOCKED = 1024
#: Orders β at which moment generating functions are tracked (log-spaced, both signs, and 0).
_POS = 2.0 ** (np.arange(-12, 25) / 2.0)
#: Largest |loss|/h of a pair that the grid discretises (node indices are int64).
_MAX_NODES = 2.0**60
MGF_ORDERS = np.concatenate([-_POS[::-1], [0.0], _POS])
_ZERO = _POS.size  # index of β = 0


def _dot(x: FloatArray, y: FloatArray) -> float:
    """Σ x_i y_i of two 1-D float arrays, by :func:`numpy.einsum` rather than :func:`numpy.dot`.

    ``np.dot`` goes to the BLAS, which splits long vectors across threads: on a machine whose
    cores are busy those threads wait for each other, and a few dot products of 2^18 bins took
    ~1 s of a δ(ε) query (measured). ``einsum`` runs in the calling thread. Either way the
    computed sum of n products errs by at most γ_n = n·u/(1 − n·u) relative to the sum of
    their magnitudes (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1,
    for any order of summation), which the callers' bounds already allow for.
    """
    return float(np.einsum("i,i->", x, y))


# =================================================================================================
# moment generating functions of the ideal (exact-arithmetic) measures


class _MGF:
    """Upper bounds on log Σ_j m_j e^{β l_j} (finite part of an ideal measure) at MGF_ORDERS.

    Leaves are computed from the masses; composition adds; truncation to a lowest loss L adds
    log(e^{M} + τ e^{βL}). Values are padded by a relative 1e-12 for the float evaluation.
    """

    __slots__ = ("values",)

    def __init__(self, values: FloatArray) -> None:
        self.values = values

    @classmethod
    def of_masses(cls, masses: FloatArray, losses: FloatArray) -> _MGF:
        keep = masses > 0.0
        if not keep.any():
            return cls(np.full(MGF_ORDERS.size, -np.inf))
        if masses.size >= _MGF_BLOCKED:
            return cls._of_blocks(masses, losses)
        lm = np.log(masses[keep])
        ll = losses[keep]
        out = np.empty(MGF_ORDERS.size)
        step = max(1, 2**16 // ll.size)
        for start in range(0, MGF_ORDERS.size, step):
            b = MGF_ORDERS[start : start + step, None]
            z = lm[None, :] + b * ll[None, :]
            top = z.max(axis=1, keepdims=True)
            out[start : start + step] = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
        return cls(out + 1e-12 * (1.0 + np.abs(out)))

    @classmethod
    def _of_blocks(cls, masses: FloatArray, losses: FloatArray) -> _MGF:
        """An upper bound from blocks of 8 bins: Σ_block m_j e^{βl_j} ≤ (Σ_block m_j)·e^{βl*}
        with l* the block's largest (β ≥ 0) or smallest (β < 0) loss — within e^{|β|·7h} of the
        exact value, 8× fewer exponentials. (Block sums of ≤ 8 non-negative terms err by < 8u.)"""
        b = 8
        n = masses.size
        pad = -n % b
        m = np.concatenate([masses, np.zeros(pad)]).reshape(-1, b)
        ls = np.concatenate([losses, np.full(pad, losses[-1])]).reshape(-1, b)
        sums = m.sum(axis=1) * (1.0 + 16 * U)
        keep = sums > 0.0
        lm = np.log(sums[keep])
        hi = ls.max(axis=1)[keep]
        lo = ls.min(axis=1)[keep]
        beta = MGF_ORDERS[:, None]
        z = lm[None, :] + np.where(beta >= 0.0, beta * hi[None, :], beta * lo[None, :])
        top = z.max(axis=1, keepdims=True)
        out = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
        return cls(out + 1e-12 * (1.0 + np.abs(out)))

    # log-MGF values beyond the float range become ±inf (M = ∞ or 0), their correct rounding
    @staticmethod
    def _up(v: FloatArray) -> _MGF:
        return _MGF(np.where(np.isfinite(v), v + 1e-12 * np.abs(v), v))

    def plus(self, other: _MGF, times: int = 1) -> _MGF:
        with np.errstate(over="ignore", invalid="ignore"):
            return self._up(self.values + times * other.values)

    def times(self, k: int) -> _MGF:
        with np.errstate(over="ignore", invalid="ignore"):
            return self._up(k * self.values)

    def add_atom(self, log_mass: float, loss: float) -> _MGF:
        v = np.logaddexp(self.values, log_mass + MGF_ORDERS * loss)
        return _MGF(v + 1e-12 * np.abs(v) + 1e-300)

    def upper_cut(self, log_tail: float) -> float:
        """A loss u with mass above u ≤ e^{log_tail}: min over β > 0 of (M(β) − log_tail)/β."""
        v = self.values[_ZERO + 1 :]
        return float(np.min((v - log_tail) / _POS))

    def lower_cut(self, log_tail: float) -> float:
        """A loss l with mass below l ≤ e^{log_tail}: max over β > 0 of (log_tail − M(−β))/β."""
        v = self.values[:_ZERO][::-1]
        return float(np.max((log_tail - v) / _POS))

    def log_above(self, u: float) -> float:
        """Chernoff bound on log(mass above u)."""
        v = self.values[_ZERO + 1 :]
        return float(min(self.values[_ZERO], float(np.min(v - _POS * u))))

    def log_below(self, low: float) -> float:
        """Chernoff bound on log(mass below low)."""
        v = self.values[:_ZERO][::-1]
        return float(min(self.values[_ZERO], float(np.min(v + _POS * low))))

    @property
    def log_total(self) -> float:
        return float(self.values[_ZERO])


# =================================================================================================
# the discretised PLD value type


#: Longest segment of :func:`_suffix_log_tables` (one numpy pass each; a short Python loop).
_SEGMENT = 1 << 16
#: A segment's scale e^T sits at most this many nats above its smallest suffix sum (times
#: 1 − e^{−h}), so every table entry is ≥ e^{−576}·e^T ≈ 1e-250·e^T: far from underflow.
_SEGMENT_RANGE = 575.0


def _suffix_log_sum(lv: FloatArray) -> FloatArray:
    """log Σ_{j≥k} e^{lv_j} for every k, each with full relative accuracy however small (see
    :func:`_suffix_log_tables`)."""
    return _suffix_log_tables(lv, None)[0]


def _suffix_log_tables(lv: FloatArray, h: float | None) -> tuple[FloatArray, FloatArray, float]:
    """log A_k = log Σ_{j≥k} w_j and (if h is given) log δ_k = log Σ_{j>k} w_j (1 − e^{−(j−k)h})
    for w_j = e^{lv_j} on a uniform grid of step h; plus a bound, in units of u, on the relative
    error of every A_k and δ_k (besides the errors of the exps and logs of the weights and of the
    results, which grow with their magnitudes and are the caller's to add).

    δ_k = (1 − e^{−h}) Σ_{j>k} e^{−(j−k−1)h} A_j (since 1 − e^{−(j−k)h} = (1 − e^{−h}) Σ_{0≤i<j−k}
    e^{−ih}): a sum of positive terms, evaluated by :func:`_decay_sums` (no cancellation).

    One pass from the right, in segments [s, e) of at most :data:`_SEGMENT` bins, each summed in
    linear scale relative to an integer e^T chosen so that everything in it is representable:
    e^T ≥ every weight of the segment and A_e, and e^T ≤ (1 − e^{−h})·A_{e−1}·e^{576}, so every
    A_k and δ_k (k < e − 1) of the segment is ≥ e^{−576}·e^T (δ_k ≥ (1 − e^{−h}) A_{k+1}). The
    segment ends (going left) where a weight would break the second condition; the next one
    starts there with its own scale. The carries A_e and δ_{e−1} change scale by e^{T' − T} with
    an exact integer exponent; a carry that underflows there is below 1e-308·e^{T'}, a relative
    1e-58 of the entries it joins, which the bound's slack covers. So the work is O(n): a break
    raises log A by ≥ 575 + log(1 − e^{−h}) nats, so there are at most n/:data:`_SEGMENT`
    segments plus one per that many nats of the weights' log range (restarting a full pass at
    every underflow, as before, cost O(n) per 575 nats: 3.6 s on 2.9M bins spanning 17,600).

    Error (first order in u; every term is non-negative, so relative errors add along each
    term's path): A's cumulative sums cost one rounding per bin plus 3 per segment (the carry's
    exp, product and addition); δ adds :func:`_decay_sums_error` of its segment, or along the
    carried δ_{e−1}: e^{−ih}'s argument and exp (≤ min(ih, 745) + 1), three products and sums.
    """
    n = lv.size
    out_a = np.full(n, -np.inf)
    out_d = np.full(n, -np.inf)
    finite = np.flatnonzero(lv > -np.inf)
    if finite.size == 0:
        return out_a, out_d, 0.0
    end = int(finite[-1]) + 1  # bins above the last weight have A = δ = 0
    with_delta = h is not None
    step = float(h) if h is not None else 0.0
    log_c = math.log(-math.expm1(-step)) if with_delta else 0.0
    c = -math.expm1(-step) if with_delta else 0.0
    decay_one = math.exp(-step)
    scale = 0.0  # the carries' scale T (an integer)
    carry_a = 0.0  # A_end · e^{−T}
    carry_d = 0.0  # δ_{end−1} · e^{−T}
    err_a = 0.0
    err_d = 0.0
    e = end
    while e > 0:
        log_carry_a = math.log(carry_a) + scale if carry_a > 0.0 else -math.inf
        floor = float(np.logaddexp(lv[e - 1], log_carry_a))  # log A_{e−1}
        limit = floor + log_c + _SEGMENT_RANGE
        s = _segment_start(lv, e, limit)
        seg = lv[s:e]
        top = max(float(np.max(seg)), log_carry_a)
        new_scale = float(math.ceil(top))
        with np.errstate(under="ignore"):
            shift = math.exp(scale - new_scale) if carry_a > 0.0 or carry_d > 0.0 else 0.0
            a_in = carry_a * shift
            d_in = carry_d * shift
            w = np.exp(seg[::-1] - new_scale)  # bins e−1, e−2, …, s
            w[0] += a_in
            acc = np.cumsum(w)  # acc[i] = A_{e−1−i} · e^{−T'}
        m = seg.size
        err_a += m + 3.0
        with np.errstate(divide="ignore"):
            out_a[s:e] = (np.log(acc) + new_scale)[::-1]
        if with_delta:
            if m > 1:
                with np.errstate(under="ignore", divide="ignore"):
                    i = np.arange(1, m, dtype=np.float64)
                    y = _decay_sums(acc, step)[1:] + d_in * np.exp(-i * step)
                    out_d[s : e - 1] = (np.log(y) + new_scale)[::-1]
                delta_s = float(y[-1])
            else:
                delta_s = d_in
            err_d = max(err_a + _decay_sums_error(m, step), err_d + min(m * step, 745.0) + 7.0)
            if s > 0:  # δ_{s−1} = (1 − e^{−h})A_s + e^{−h}δ_s, exact in this scale
                carry_d = c * float(acc[-1]) + decay_one * delta_s
                out_d[s - 1] = math.log(carry_d) + new_scale
                err_d += 3.0
        carry_a = float(acc[-1])
        scale = new_scale
        e = s
    return out_a, out_d, max(err_a, err_d) + 8.0


def _segment_start(lv: FloatArray, e: int, limit: float) -> int:
    """The least s ≥ e − :data:`_SEGMENT` with every lv[s:e] ≤ limit (s ≤ e − 1 always), found
    by windows growing 4× from the right, so a short segment costs a short scan."""
    lower = max(0, e - _SEGMENT)
    hi = e - 1  # bin e − 1 always belongs (its weight is ≤ A_{e−1})
    width = 256
    while hi > lower:
        lo = max(lower, hi - width)
        bad = np.flatnonzero(lv[lo:hi] > limit)
        if bad.size:
            return lo + int(bad[-1]) + 1
        hi = lo
        width *= 4
    return lower


def _decay_block(h: float, n: int) -> int:
    """The block length of :func:`_decay_sums`: e^{B·h} stays below e^16, and B ≤ 2048 (short
    tables of e^{±jh}; the loop over blocks is cheap at that length)."""
    return max(1, min(n, 2048, int(16.0 / h)))


def _decay_sums(x: FloatArray, h: float) -> FloatArray:
    """y_n = (1 − e^{−h}) Σ_{m<n} e^{−(n−1−m)h} x_m for x ≥ 0 (the first-order filter
    y_n = (1 − e^{−h}) x_{n−1} + e^{−h} y_{n−1}, y_0 = 0), in numpy.

    Within blocks of B ≤ 2048 points (e^{Bh} ≤ e^16) it is e^{−(i−1)h} times a cumulative sum of
    e^{jh} x_j; the blocks are chained by the same recursion on their first points. Every term is
    non-negative, so the relative error is at most (B + (2Bh + 8)(n/B + 1) + n/B)·u: the
    cumulative sums' (B − 1)u, the exponentials' arguments (≤ 2Bh·u) and a few roundings per
    term and per block (:func:`_decay_sums_error`).
    """
    n = x.size
    c = -math.expm1(-h)
    b = _decay_block(h, n)
    nb = -(-n // b)
    padded = np.zeros(nb * b)
    padded[:n] = x
    blocks = padded.reshape(nb, b)
    j = np.arange(b, dtype=np.float64)
    up = np.exp(j * h)
    down = np.exp(-j * h)
    with np.errstate(under="ignore"):
        sums = np.cumsum(blocks * up, axis=1)  # Σ_{j≤i} e^{jh} x_j
        local = np.zeros((nb, b))
        local[:, 1:] = c * down[:-1] * sums[:, :-1]  # c Σ_{j<i} e^{−(i−1−j)h} x_j
        ends = c * math.exp(-(b - 1) * h) * sums[:, -1]  # into the next block's first point
    starts = np.zeros(nb)
    decay = math.exp(-b * h)
    acc = 0.0
    for i in range(1, nb):  # about n/2048 + n·h/16 blocks: a short loop
        acc = decay * acc + float(ends[i - 1])
        starts[i] = acc
    with np.errstate(under="ignore"):
        out = starts[:, None] * down[None, :] + local
    return np.asarray(out.reshape(-1)[:n], dtype=np.float64)


def _decay_sums_error(n: int, h: float) -> float:
    """The relative error bound of :func:`_decay_sums` on n points, in units of u."""
    b = _decay_block(h, n)
    blocks = n // b + 1
    return b + (2.0 * b * h + 8.0) * blocks + blocks


@dataclass(frozen=True, slots=True, eq=False)
class DiscretePLD:
    """A discretised privacy loss law on the grid l_j = (offset + j)·h + phase, plus a mass at +∞.

    Masses are stored *tilted*: the mass of bin j is ``data[j]·exp(log_scale − tilt·l_j)``. The
    *ideal* measure I is the exact-arithmetic result of the discretisation and compositions that
    produced it, supported on the stored bins; the float error data − I is split as a + e + r:
    ``|a_j| ≤ error`` on every bin (a per-bin part, from regridding), e of tilted total mass
    Σ|e_j| ≤ ``error_l1`` (errors proportional to the masses themselves: rounding of the inputs,
    propagated through compositions, and wrapped-around tails) and r of Euclidean norm
    ‖r‖₂ ≤ ``error_l2`` (the rounding of the FFTs, bounded normwise as FFT error analysis does).
    δ(ε) is a sum of the tilted masses weighted by g_j = e^{log_scale − λl_j}(1 − e^{ε − l_j})_+,
    so the L1 part moves it by at most ``error_l1``·max g ≤ ``error_l1``·e^{log_scale − λε}c(λ),
    c(λ) = λ^λ/(1 + λ)^{1+λ}, and the L2 part by ``error_l2``·‖g‖₂ (Cauchy–Schwarz; see
    :meth:`_extra_delta`), whatever their support; a per-bin bound on a window of n bins could cost
    up to n times more, which made finer grids (larger windows) *less* sharp.
    The ideal measure is pessimistic (its profile lies above the exact one at every ε) or
    optimistic (below), as ``pessimistic`` says; :meth:`delta` and :meth:`epsilon` fold the float
    error in the same direction. ``loss_margin`` bounds how far the exact pair's losses can exceed
    the float ones (parameters are rounded to floats): δ is evaluated at ε − margin (pessimistic).

    Build with :func:`discretise`; combine with :meth:`compose` and :meth:`self_compose`.

    Attributes:
        value_discretization: the grid spacing h.
        offset: the index of the first bin; ``phase``: the grid offset φ (a pair's heaviest atom
            lies on a node).
        data: tilted masses, normalised to sum 1; ``log_scale`` and ``tilt`` untilt them.
        error: the per-bin float-error bound on ``data`` (the part a above).
        error_l1: the bound on the tilted total mass of the error part e above.
        error_l2: the bound on the Euclidean norm of the error part r above.
        inf_mass: the mass at +∞ (an upper bound if pessimistic, a lower bound if optimistic).
        pessimistic: which side of the exact law this is.
        loss_margin: the bound on how far the float losses may lag the exact ones.
        mgf: upper bounds of the ideal finite part's log-MGF at :data:`MGF_ORDERS` (Chernoff
            bounds for tail truncation and FFT windows).
        finite_low: a lower bound on the ideal finite mass (for optimistic +∞ masses).
    """

    value_discretization: float
    offset: int
    phase: float
    data: FloatArray
    log_scale: float
    tilt: float
    error: float
    inf_mass: float
    pessimistic: bool
    loss_margin: float
    mgf: _MGF = field(repr=False)
    finite_low: float = 0.0
    error_l1: float = 0.0
    error_l2: float = 0.0
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        kind = "pessimistic" if self.pessimistic else "optimistic"
        return (
            f"DiscretePLD({kind}, h={self.value_discretization!r}, bins={self.data.size}, "
            f"losses=[{self.losses[0]:.6g}, {self.losses[-1]:.6g}], inf_mass={self.inf_mass:.3g})"
        )

    # -- inspection ------------------------------------------------------------------------------
    @property
    def losses(self) -> FloatArray:
        """The loss value of every bin."""
        return np.asarray(
            (self.offset + np.arange(self.data.size)) * self.value_discretization + self.phase
        )

    @property
    def masses(self) -> FloatArray:
        """The (computed, untilted) mass of every bin; may underflow to 0 far from the tilt."""
        with np.errstate(divide="ignore", under="ignore", over="ignore"):
            return np.asarray(np.exp(np.log(self.data) + self.log_scale - self.tilt * self.losses))

    # -- profile ---------------------------------------------------------------------------------
    def _tables(
        self, low: float | None = None
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, float]:
        """Per bin k (bins with l_k > ``low``, by default −h − margin: what δ(ε ≥ 0) needs):
        l_k, log A_k = log Σ_{j≥k} w_j,
        log δ_k = log Σ_{j>k} w_j (1 − e^{l_k − l_j}) and log G_k = log Σ_{j≥k} w_j e^{l_k − l_j},
        with w the error-adjusted weights; plus the relative error bound of δ_k (and of A, G).

        δ_k is computed by a recursion of positive terms (:func:`_suffix_log_tables`), so its
        relative error is O(n·u) with no 1/h cancellation factor.
        """
        h = self.value_discretization
        if low is None:
            low = -h - self.loss_margin
        named = self._cache.get(("tables-at", low))
        if named is not None:
            return named  # type: ignore[no-any-return]
        l_all = self.losses
        first = int(np.searchsorted(l_all, low, side="right"))
        first = max(0, first - 1)
        key = f"tables{first}"
        cached = self._cache.get(key)
        if cached is not None:
            self._cache[("tables-at", low)] = cached
            return cached  # type: ignore[no-any-return]
        ls = l_all[first:]
        d = self.data[first:]
        adjusted = d + self.error if self.pessimistic else np.maximum(d - self.error, 0.0)
        with np.errstate(divide="ignore"):
            lw = np.log(adjusted) + self.log_scale - self.tilt * ls
        n = ls.size
        if n == 0:
            empty = np.empty(0)
            out = (empty, empty, empty, empty, 0.0)
            self._cache[key] = out
            self._cache[("tables-at", low)] = out
            return out
        log_a, log_d, sums_error = _suffix_log_tables(lw, h)
        log_d[-1] = -np.inf  # nothing lies above the last bin
        log_g = ls + _suffix_log_sum(lw - ls)  # only a start point for ε(δ), certified after
        # relative error of A_k, δ_k: the sums (their bound, from _suffix_log_tables) and the logs
        # and exps of the weights and of the tables (≤ 4u per unit of their magnitudes)
        finite = lw[np.isfinite(lw)]
        mags = float(np.max(np.abs(finite))) if finite.size else 0.0
        mags += abs(self.log_scale) + float(np.max(np.abs(self.tilt * ls)))
        margin = (sums_error + 64.0 + 8.0 * mags) * U
        out = (ls, log_a, log_d, log_g, margin)
        self._cache[key] = out
        self._cache[("tables-at", low)] = out
        return out

    def deltas(self, ts: FloatArray) -> FloatArray:
        """δ at every real t of ``ts`` (any sign; as :meth:`delta`, rounded the same way): the
        profile of this law at losses below 0 too, valid at every t (mass truncated below the
        window only makes it looser there: moved up, pessimistic, or dropped, optimistic). For
        compositions summed over the atoms of another law (:mod:`sharpdp.accounting.pld.outer`)."""
        t = np.asarray(ts, dtype=np.float64)
        m = self.loss_margin
        at = t - m if self.pessimistic else t + m
        ls, log_a, log_d, _, margin = self._tables(-math.inf)  # every bin: t may be anywhere
        out = np.zeros(t.size)
        if ls.size:
            k = np.searchsorted(ls, at, side="right")
            live = k < ls.size
            kk = np.minimum(k, ls.size - 1)
            x = ls[kk] - at
            with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
                # (beyond the last bin x < 0 gives NaN here, masked out below)
                log_v = np.logaddexp(np.log(-np.expm1(-x)) + log_a[kk], -x + log_d[kk])
                out = np.where(live, np.where(log_v > 700.0, np.inf, np.exp(log_v)), 0.0)
        extra = self._extra_deltas(at)
        if self.pessimistic:
            value = (out * (1.0 + margin) + self.inf_mass + extra) * (1.0 + 4 * U)
            value = np.where(value > 0.0, np.nextafter(value, np.inf), 0.0)
            return np.asarray(np.minimum(1.0, value), dtype=np.float64)
        value = (out * (1.0 - margin) + self.inf_mass) * (1.0 - 4 * U) - extra
        # an infinite extra against an overflowed δ is inf − inf: no lower bound there but 0
        value = np.where(np.isnan(value), 0.0, value)
        return np.asarray(np.clip(value * (1.0 - 4 * U), 0.0, 1.0), dtype=np.float64)

    def _has_extra(self) -> bool:
        return (self.error_l1 > 0.0 or self.error_l2 > 0.0) and self.data.size > 0

    def _delta_finite(self, eps: float) -> float:
        """Σ_j w_j (1 − e^{eps − l_j})_+ (before the margin), for real eps."""
        ls, log_a, log_d, _, _ = self._tables()
        if ls.size == 0:
            return 0.0
        k = int(np.searchsorted(ls, eps, side="right"))
        if k >= ls.size:
            return 0.0
        x = ls[k] - eps  # in (0, h] (or larger below the first bin: the formula still holds)
        log_v = float(np.logaddexp(math.log(-math.expm1(-x)) + log_a[k], -x + log_d[k]))
        return math.inf if log_v > 700.0 else math.exp(log_v)

    def delta(self, epsilon: float) -> float:
        """δ(ε): an upper bound on the exact composed profile (pessimistic), or a lower bound
        (optimistic), including the float error of every step.

        Args:
            epsilon: ε ≥ 0 (``inf`` gives the mass at +∞).
        """
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        if e == math.inf:
            return self.inf_mass
        _, _, _, _, margin = self._tables()
        if self.pessimistic:
            at = e - self.loss_margin
            value = self._delta_finite(at) * (1.0 + margin) + self.inf_mass
            value = (value + self._extra_delta(at)) * (1.0 + 4 * U)
            return min(1.0, math.nextafter(value, math.inf) if value > 0 else 0.0)
        at = e + self.loss_margin
        value = self._delta_finite(at) * (1.0 - margin) + self.inf_mass
        value = value * (1.0 - 4 * U) - self._extra_delta(at)
        return max(0.0, min(1.0, value * (1.0 - 4 * U)))

    def _extra_delta(self, epsilon: float) -> float:
        """The most the error parts e and r can move δ at ``epsilon`` (the point δ_finite is
        evaluated at), rounded up: with w = e^{log_scale − λε},
        ``error_l1``·w·c(λ) + ``error_l2``·w·√(I(λ)/h + c(λ)²), where c(λ) = sup_{x≥0}
        e^{−λx}(1 − e^{−x}) = λ^λ/(1 + λ)^{1+λ} and I(λ) = ∫_0^∞ e^{−2λx}(1 − e^{−x})² dx =
        1/(2λ(2λ + 1)(λ + 1)): ‖g‖₂² is a sum of the unimodal e^{−2λx}(1 − e^{−x})² over points
        h apart, at most its integral over h plus its maximum. (λ = 0: c = 1, ‖g‖₂ ≤ √n.) Zero at
        ε beyond the last stored loss, where no weight remains."""
        return float(self._extra_deltas(np.array([epsilon]))[0])

    def _extra_deltas(self, eps: FloatArray) -> FloatArray:
        """:meth:`_extra_delta` at every point of ``eps``."""
        if not self._has_extra():
            return np.zeros(eps.size)
        h = self.value_discretization
        last = (self.offset + self.data.size - 1) * h + self.phase
        lam = self.tilt
        if lam > 0.0:
            log_c = lam * math.log(lam / (1.0 + lam)) - math.log1p(lam)
            integral = 1.0 / (2.0 * lam * (2.0 * lam + 1.0) * (lam + 1.0))
            norm2 = math.sqrt(integral / h * (1.0 + 1e-9) + math.exp(2.0 * log_c))
        else:
            log_c = 0.0
            norm2 = math.sqrt(self.data.size)
        factor = self.error_l1 * math.exp(log_c) + self.error_l2 * norm2
        log_w = self.log_scale - lam * eps
        # the exponent errs by a few ulps of its terms, the factor by a few ulps
        log_w = log_w + 16 * U * (4.0 + abs(self.log_scale) + np.abs(lam * eps) + abs(log_c))
        arg = log_w + math.log(factor)
        with np.errstate(over="ignore"):
            value = np.where(arg > 700.0, np.inf, np.exp(np.minimum(arg, 700.0)) * (1.0 + 16 * U))
        beyond = eps >= last + 4 * U * (abs(last) + h)
        return np.asarray(np.where(beyond, 0.0, value), dtype=np.float64)

    def epsilon(self, delta: float) -> float:
        """ε(δ): the smallest ε ≥ 0 with δ(ε) ≤ δ for this discrete law (pessimistic: an upper
        bound on the exact ε(δ); optimistic: a lower bound). Exact between grid points (there
        δ(ε) = (1 − e^{−x})A_k + e^{−x}δ_k with x = l_k − ε), then rounded against the user and
        checked with :meth:`delta` (pessimistic: δ(ε) ≤ δ; optimistic: δ(ε) > δ, so every smaller
        ε is excluded too). The error parts e and r move δ by the decreasing
        :meth:`_extra_delta`: it is taken at a point on the safe side of the root (the root without
        it for the pessimistic side, 0 and then the previous root for the optimistic side)."""
        d = _validate.real("delta", delta)
        if not 0.0 <= d <= 1.0:
            raise InvalidParameter(f"delta must be in [0, 1], got {d!r}")
        if d < self.inf_mass:
            return math.inf
        ls, _, _, _, margin = self._tables()
        if not self.pessimistic:
            # (δ(0) ≤ d is no short cut here: the error part's allowance, sized for the tilt's
            # ε, may swamp δ(0); the root is found and checked instead)
            return self._optimistic_epsilon(d, margin) if ls.size else 0.0
        if self.delta(0.0) <= d or ls.size == 0:
            return 0.0
        # the finite part may use (d − p∞)/(1 + 4u) − l1(ε), and δ_finite carries (1 + margin)
        budget = (d / (1.0 + 8 * U) - self.inf_mass) / (1.0 + margin)
        eps, k = self._root(budget)
        if eps > -math.inf and (self.error_l1 > 0.0 or self.error_l2 > 0.0):
            extra = self._extra_delta(max(eps, 0.0) - self.loss_margin) / (1.0 + margin)
            eps, k = self._root(budget - extra)
        if eps == -math.inf:  # nothing left for the finite part at any grid point
            return self._beyond_top(d)
        # Certify: the reported ε must satisfy δ(ε) <= d as evaluated by :meth:`delta` (the same
        # rounding); if the closed form fell short, use the grid points above (δ is decreasing).
        candidates = [eps] + [float(v) for v in ls[k : k + 4]]
        for c in candidates:
            e = self._shift(c)
            if self.delta(e) <= d:
                return e
        for c in ls[k + 4 :]:  # pragma: no cover - defensive: rounding larger than a few bins
            e = self._shift(float(c))
            if self.delta(e) <= d:
                return e
        return self._beyond_top(d)

    def _root(self, target: float) -> tuple[float, int]:
        """(ε, k): the float root of Σ_j w_j (1 − e^{ε − l_j})_+ = target on the tables (ε in
        (l_{k−1}, l_k]); ε = −inf when target ≤ 0, the top loss when target is 0 exactly."""
        ls, log_a, log_d, log_g, _ = self._tables()
        if target < 0.0 or not ls.size:
            return -math.inf, ls.size
        if target == 0.0:
            # δ_finite(ε) = 0 iff ε >= the largest loss carrying weight
            live = np.nonzero(np.isfinite(log_a))[0]
            k = int(live[-1]) if live.size else 0
            return float(ls[k]), k
        log_t = math.log(target)
        # δ_k decreasing in k: first k with δ_k <= target
        k = int(np.searchsorted(-log_d, -log_t, side="left"))
        if k >= ls.size:  # pragma: no cover - δ at the last bin is 0
            k = ls.size - 1
        if log_a[k] <= log_t:
            x = self.value_discretization
        else:
            # log(A_k − T) = log A_k + log(1 − T/A_k)
            log_am = log_a[k] + math.log(-math.expm1(log_t - log_a[k]))
            x = max(log_g[k] - log_am, 0.0)
            if k > 0:
                x = min(x, self.value_discretization)
        return float(ls[k]) - x, k

    def _beyond_top(self, d: float) -> float:
        """Pessimistic ε where only the mass at +∞ and the error part remain: the top loss
        carrying weight, else where l1(ε) ≤ d − p∞ (the error part decays like e^{−λε}), else
        the last stored loss (beyond which the error part is 0); inf if none is certified."""
        ls, log_a, _, _, _ = self._tables()
        live = np.nonzero(np.isfinite(log_a))[0]
        candidates = [self._shift(float(ls[live[-1]]) if live.size else 0.0)]
        room = d / (1.0 + 8 * U) - self.inf_mass
        extra = self._extra_delta(candidates[0] - self.loss_margin)
        if room > 0.0 and self.tilt > 0.0 and extra > 0.0:
            need = candidates[0] + math.log(extra / room) / self.tilt
            candidates += [self._shift(need), self._shift(need + self.value_discretization)]
        last = (self.offset + self.data.size - 1) * self.value_discretization + self.phase
        candidates.append(self._shift(last + 8 * U * (abs(last) + self.value_discretization)))
        for e in sorted(candidates):
            if self.delta(e) <= d:
                return e
        return math.inf

    def _optimistic_epsilon(self, d: float, margin: float) -> float:
        """The optimistic ε(δ): the root of the lower profile, first without the error part's
        allowance, then with it taken at that root (one fixed-point step from above), moved
        down until :meth:`delta` exceeds d there. δ of the exact law is non-increasing and
        :meth:`delta` is below it, so every smaller ε is then excluded too: a valid lower end."""
        ls = self._tables()[0]
        h = self.value_discretization
        # δ_opt(ε) ≤ d iff δ_finite ≤ ((d/(1 − 4u) + l1(ε))/(1 − 4u) − p∞)/(1 − margin); the
        # threshold is rounded up (a larger target only lowers the root)
        allowance = d / (1.0 - 4 * U) / (1.0 - 4 * U)
        scale = (1.0 + 8 * U) / (1.0 - margin)
        eps, k = self._root((allowance - self.inf_mass) * scale)
        if eps > -math.inf and (self.error_l1 > 0.0 or self.error_l2 > 0.0):
            extra = self._extra_delta(self._shift(eps) + self.loss_margin) / (1.0 - 4 * U)
            eps, k = self._root((allowance + extra - self.inf_mass) * scale)
        if eps == -math.inf:  # pragma: no cover - the target is positive here
            return 0.0
        steps = [eps - t * (abs(eps) + h) for t in (0.0, 1e-12, 1e-10, 1e-8, 1e-6)]
        candidates = [*steps, *(float(v) for v in ls[max(k - 4, 0) : k][::-1])]
        for c in candidates:
            e = self._shift(c)
            if e == 0.0 or self.delta(e) > d:
                return e
        return 0.0

    def _shift(self, eps_f: float) -> float:
        """Apply the loss margin (true losses may exceed the float ones by ``loss_margin``) and a
        relative 1e-12 rounding, upwards (pessimistic) or downwards (optimistic)."""
        if self.pessimistic:
            e = max(0.0, eps_f + self.loss_margin)
            return e + 1e-12 * (abs(e) + self.value_discretization)
        e = eps_f - self.loss_margin
        e = e - 1e-12 * (abs(e) + self.value_discretization)
        return max(0.0, e)

    # -- composition -----------------------------------------------------------------------------
    def _check_compatible(self, other: DiscretePLD) -> None:
        if not isinstance(other, DiscretePLD):
            raise InvalidParameter(f"can only compose with a DiscretePLD, got {other!r}")
        if other.value_discretization != self.value_discretization:
            raise InvalidParameter(
                "value_discretization differs: "
                f"{self.value_discretization!r} vs {other.value_discretization!r}"
            )
        if other.tilt != self.tilt:
            raise InvalidParameter(f"tilt differs: {self.tilt!r} vs {other.tilt!r}")
        if other.pessimistic != self.pessimistic:
            raise InvalidParameter("cannot compose a pessimistic with an optimistic PLD")

    def compose(self, other: DiscretePLD, *, tail: float = DEFAULT_TAIL) -> DiscretePLD:
        """The PLD of the composition (convolution of the finite parts; +∞ masses combined)."""
        self._check_compatible(other)
        return _truncate(_convolve(self, other), tail)

    def self_compose(self, count: int, *, tail: float = DEFAULT_TAIL) -> DiscretePLD:
        """The PLD of ``count`` compositions of this one: one FFT, a power, one inverse FFT."""
        k = _validate.integer("count", count, minimum=1)
        if k == 1:
            return self
        return _power(self, k, tail)


def _from_masses(
    masses: FloatArray,
    offset: int,
    phase: float,
    h: float,
    inf: float,
    tilt: float,
    pessimistic: bool,
    margin: float,
    mgf: _MGF | None = None,
) -> DiscretePLD:
    losses = np.asarray((offset + np.arange(masses.size)) * h + phase, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lw = np.log(masses) + tilt * losses
    top = float(np.max(lw))
    if top == -math.inf:
        data = np.zeros(masses.size)
        data[0] = 0.0
        log_scale = 0.0
        err_l1 = 0.0
    else:
        with np.errstate(under="ignore"):
            w = np.exp(lw - top)
        s = float(w.sum())
        data = w / s
        log_scale = top + math.log(s)
        # Relative error per bin of data_j·e^{log_scale} against m_j e^{λ l_j}: the exponents
        # log m_j + λl_j − top err by ulps of their terms, exp/division/log(s) by a few ulps (the
        # rounding of s cancels between data and log_scale): an L1 bound Σ_j data_j·rel_j.
        live = data > 0.0
        rel = np.abs(lw[live]) + np.abs(tilt * losses[live]) + 2.0 * np.abs(lw[live] - top)
        err_l1 = _dot(data[live], rel + abs(log_scale) + 16.0) * U * 2.0
    if mgf is None:
        mgf = _MGF.of_masses(masses, losses)
    low = float(masses.sum()) * (1.0 - 4 * (masses.size + 4) * U)
    return DiscretePLD(
        h,
        offset,
        phase,
        data,
        log_scale,
        tilt,
        0.0,
        inf,
        pessimistic,
        margin,
        mgf,
        finite_low=low,
        error_l1=err_l1,
    )


def discretise(
    pair: DominatingPair,
    value_discretization: float,
    *,
    pessimistic: bool = True,
    tilt: float = 0.0,
    tail: float = 1e-30,
) -> DiscretePLD:
    """Discretise a dominating pair on the grid i·h (connect the dots, or the optimistic dual).

    Args:
        pair: the dominating pair.
        value_discretization: the grid spacing h > 0.
        pessimistic: the upper (True) or lower (False) discretisation.
        tilt: λ ≥ 0, the exponential tilt used by later FFT compositions.
        tail: losses beyond the window holding all but ``tail`` of the mass on each side are
            handled exactly by the discretisation (moved to the window's end or to +∞).
    """
    h = _validate.positive("value_discretization", value_discretization)
    lam = _validate.nonnegative("tilt", tilt)
    phase = pair.phase(h)
    lo, hi = pair.grid_range(h, tail, phase)
    if hi - lo > MAX_FFT:
        raise NumericalError(
            f"value_discretization={h!r} needs {hi - lo} grid cells for {pair!r} "
            f"(limit {MAX_FFT}): use a coarser grid"
        )
    contents = pair.contents(h, lo, hi, phase)
    if pessimistic:
        masses, inf = pessimistic_masses(contents)
    else:
        masses, inf = optimistic_masses(contents)
    margin = 8.0 * U * (pair.loss_bound() + h)
    return _from_masses(masses, lo, phase, h, inf, lam, pessimistic, margin)


def discretise_top(
    pair: DominatingPair,
    value_discretization: float,
    floor: float,
    *,
    pessimistic: bool = True,
) -> DiscretePLD:
    """Discretise the finite part of a pair's loss law restricted to L ≥ t_lo, on the nodes from
    t_lo (the last node at or below ``floor``) to the top of the pair's grid.

    The result is the law of a *sub*-probability measure μ = P[L ∈ ·, t_lo ≤ L < ∞], discretised
    like :func:`discretise` (connect the dots from upper bounds of its contents, or the optimistic
    dual from lower bounds): μ has no mass below t_lo and none at +∞, so the low tail and
    P[L = ∞] are both zero here, and δ̃ ≥ δ_μ (or ≤) at every t by the same argument. It serves
    δ(ε) of a composition near its largest loss (:meth:`PLDResult.delta_bracket`): there only
    losses near each pair's top contribute, so a grid fine on that window alone resolves what a
    grid over the whole range cannot.
    """
    h = _validate.positive("value_discretization", value_discretization)
    phase = pair.phase(h)
    lo, hi = pair.grid_range(h, 1e-30, phase)
    lo = max(lo, math.floor((floor - phase) / h))
    while lo > -_MAX_NODES and lo * h + phase > floor:  # the float node must lie at or below
        lo -= 1
    if hi - lo > MAX_FFT:
        raise NumericalError(f"a window of {hi - lo} grid cells exceeds the limit {MAX_FFT}")
    hi = max(hi, lo + 1)
    contents = pair.contents(h, lo, hi, phase)
    contents.p_low = contents.p_low_err = contents.u_low = contents.u_low_err = 0.0
    contents.p_inf = 0.0
    if pessimistic:
        masses, inf = pessimistic_masses(contents)
    else:
        masses, inf = optimistic_masses(contents)
    margin = 8.0 * U * (pair.loss_bound() + h)
    return _from_masses(masses, lo, phase, h, inf, 0.0, pessimistic, margin)


# -------------------------------------------------------------------------------------------------
# FFT machinery


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _combine_inf(a: DiscretePLD, b: DiscretePLD) -> float:
    """Mass at +∞ of the composition: A(∞)·B(total) + A(finite)·B(∞)."""
    if a.pessimistic:
        fa = math.exp(a.mgf.log_total)
        fb = math.exp(b.mgf.log_total)
        value = a.inf_mass * (fb + b.inf_mass) + fa * b.inf_mass
        return min(1.0, value * (1.0 + 8 * U))
    fa = a.finite_low
    fb = b.finite_low
    value = a.inf_mass * (fb + b.inf_mass) + fa * b.inf_mass
    return max(0.0, value * (1.0 - 8 * U))


def _convolve(a: DiscretePLD, b: DiscretePLD) -> DiscretePLD:
    x, y = a.data, b.data
    nx, ny = x.size, y.size
    sx, sy = float(x.sum()), float(y.sum())
    # x̃*ỹ − x*y = (x̃ − x)*ỹ + x*(ỹ − y) with x, y the ideals (‖x‖₁ ≤ sx_ideal): each error part
    # convolved with a measure keeps its kind — per-bin (bounded by the part times the measure's
    # mass), L1 (‖e*μ‖₁ ≤ ‖e‖₁‖μ‖₁, also for tilted masses) and L2 (Young: ‖r*μ‖₂ ≤ ‖r‖₂‖μ‖₁)
    sx_ideal = sx + nx * a.error + a.error_l1 + math.sqrt(nx) * a.error_l2
    err = a.error * sy + b.error * sx_ideal
    err_l1 = a.error_l1 * sy + b.error_l1 * sx_ideal
    err_l2 = a.error_l2 * sy + b.error_l2 * sx_ideal
    if nx * ny <= 200_000 or min(nx, ny) <= 16:
        z = np.convolve(x, y)
        # each output is a sum of <= min(nx, ny) non-negative products: relative rounding
        err_l1 += (min(nx, ny) + 4) * U * sx * sy * 2.0
    else:
        n = nx + ny - 1
        big = _next_pow2(n)
        if big > MAX_FFT:
            raise NumericalError(f"FFT of size {big} exceeds the limit {MAX_FFT}: grid too fine")
        z = np.fft.irfft(np.fft.rfft(x, big) * np.fft.rfft(y, big), big)[:n]
        err_l2 += _fft_convolution_l2(x, y, sx, sy, big)
    z = np.maximum(z, 0.0)
    s = float(z.sum())
    if s <= 0.0:
        s = 1.0
    inf = _combine_inf(a, b)
    h = a.value_discretization
    phase = a.phase + b.phase
    offset = a.offset + b.offset
    if phase >= h:
        phase -= h
        offset += 1
    return DiscretePLD(
        h,
        offset,
        phase,
        z / s,
        a.log_scale + b.log_scale + math.log(s),
        a.tilt,
        err / s * (1.0 + 4 * U),
        inf,
        a.pessimistic,
        a.loss_margin + b.loss_margin + 4 * U * (abs(a.phase) + abs(b.phase) + h),
        a.mgf.plus(b.mgf),
        finite_low=a.finite_low * b.finite_low * (1.0 - 8 * U),
        error_l1=err_l1 / s * (1.0 + 4 * U),
        error_l2=err_l2 / s * (1.0 + 4 * U),
    )


def _fft_gamma(big: int) -> float:
    """The normwise relative error of numpy's FFT of size ``big`` (see :data:`FFT_ULPS`)."""
    return FFT_ULPS * U * math.log2(big)


def _fft_convolution_l2(x: FloatArray, y: FloatArray, sx: float, sy: float, big: int) -> float:
    """A bound on ‖irfft(rfft(x)·rfft(y)) − x⊛y‖₂ for x, y ≥ 0 (sums sx, sy) zero-padded to
    ``big``. With γ the FFTs' normwise relative error (‖fl(Fv) − Fv‖₂ ≤ γ‖Fv‖₂, Fv of norm
    √N‖v‖₂ by Parseval; Higham, *Accuracy and Stability of Numerical Algorithms*, Thm 24.2):
    the spectra err by γ√N‖x‖₂ and γ√N‖y‖₂, their product (|Fx| ≤ sx, |Fy| ≤ sy) by
    √N(γ(‖x‖₂sy + sx‖y‖₂) + 2u·sx‖y‖₂), which the inverse maps to 1/√N of it, plus its own
    γ‖x⊛y‖₂ ≤ γ·sx‖y‖₂; second-order terms are covered by the factor (1 + 3γ√N)."""
    g = _fft_gamma(big)
    nx2 = math.sqrt(_dot(x, x))
    ny2 = math.sqrt(_dot(y, y))
    return (2.0 * g + 2.0 * U) * (nx2 * sy + sx * ny2) * (1.0 + 3.0 * g * math.sqrt(big))


def _truncate(
    p: DiscretePLD, tail: float, final: bool = False, floor: float = -math.inf
) -> DiscretePLD:
    """Cut bins whose (ideal, untilted) tails are certified below ``tail`` by Chernoff bounds.

    Everything below loss ``floor`` (−h with ``final``: no further composition) is moved up to
    the first kept bin (pessimistic) or dropped (optimistic). That is harmless when every loss
    below ``floor`` stays below 0 whatever is composed with it later: δ(ε) for ε ≥ 0 only
    counts losses above ε.
    """
    h = p.value_discretization
    if p.mgf.log_total == -math.inf:
        return p
    log_tail = math.log(tail)
    low = max(p.mgf.lower_cut(log_tail), -h if final else floor)
    up = p.mgf.upper_cut(log_tail)
    n = p.data.size
    j0 = max(0, math.ceil((low - p.phase) / h) - p.offset)
    j1 = min(n - 1, math.floor((up - p.phase) / h) - p.offset)
    # also drop exact zeros at the ends of the (computed) array when the ideal is certified zero
    if j0 == 0 and j1 == n - 1:
        return p
    if j1 < j0:
        j0 = j1 = max(0, min(n - 1, j0))
    data = p.data[j0 : j1 + 1].copy()
    inf = p.inf_mass
    mgf = p.mgf
    err = p.error
    err_l1 = p.error_l1
    low_mass = p.finite_low
    lo_loss = (p.offset + j0) * h + p.phase
    hi_loss = (p.offset + j1) * h + p.phase
    if j0 > 0:
        log_tau = p.mgf.log_below(lo_loss)
        if p.pessimistic:
            add = math.exp(log_tau + p.tilt * lo_loss - p.log_scale)
            data[0] += add
            err_l1 += 4 * U * add
            mgf = mgf.add_atom(log_tau, lo_loss)
        else:
            low_mass -= math.exp(log_tau) * (1.0 + 4 * U)
    if j1 < n - 1:
        above = math.exp(p.mgf.log_above(hi_loss)) * (1.0 + 4 * U)
        if p.pessimistic:
            inf = min(1.0, (inf + above) * (1.0 + 4 * U))
        else:
            low_mass -= above
    s = float(data.sum())
    if s <= 0.0:
        s = 1.0
    return DiscretePLD(
        h,
        p.offset + j0,
        p.phase,
        data / s,
        p.log_scale + math.log(s),
        p.tilt,
        err / s * (1.0 + 4 * U),
        inf,
        p.pessimistic,
        p.loss_margin,
        mgf,
        finite_low=max(low_mass, 0.0),
        error_l1=err_l1 / s * (1.0 + 4 * U),
        error_l2=p.error_l2 / s * (1.0 + 4 * U),
    )


def _power(
    p: DiscretePLD, k: int, tail: float, final: bool = False, floor: float = -math.inf
) -> DiscretePLD:
    """k-fold self-composition by one FFT of the tilted masses raised to the k-th power.

    The window of the result holds all but ``tail`` of the ideal untilted mass on each side and
    all but a relative _ALIAS_REL of the tilted mass (Chernoff bounds over MGF_ORDERS), so the
    circular convolution's wrap-around is bounded and added to the error.
    """
    h = p.value_discretization
    lam = p.tilt
    n = p.data.size
    mk = p.mgf.times(k)
    log_tail = math.log(tail)
    if mk.log_total == -math.inf:
        return p
    # untilted cuts (nothing below ``floor`` is needed, see _truncate; a final result: −h)
    lo = max(mk.lower_cut(log_tail), -h if final else floor)
    hi = mk.upper_cut(log_tail)
    # tilted cuts: tilted mass (normalised by e^{k·log_scale}) above u is at most
    # exp(k(M(β) − s) + (λ − β)u) for β > λ; below l: exp(k(M(β) − s) + (λ − β)l) for β < λ.
    s = p.log_scale
    with np.errstate(over="ignore", invalid="ignore"):  # beyond the float range: ±inf, no cut
        vals = k * (p.mgf.values - s)
        log_rel = math.log(_ALIAS_REL)
        above = lam < MGF_ORDERS
        below = lam > MGF_ORDERS
        if above.any():
            hi = max(hi, float(np.min((vals[above] - log_rel) / (MGF_ORDERS[above] - lam))))
        if below.any():
            lo = min(lo, float(np.max((log_rel - vals[below]) / (lam - MGF_ORDERS[below]))))
    # index space of the k-fold law: loss = j·h + k·phase
    big_phase = k * p.phase
    support_lo = k * p.offset
    support_hi = k * (p.offset + n - 1)
    # a cut beyond the support (or infinite: no finite Chernoff bound) is the support's end
    hi = min(hi, (support_hi + 1) * h + big_phase)
    lo = max(lo, (support_lo - 1) * h + big_phase)
    j_lo = max(support_lo, math.floor((lo - big_phase) / h))
    j_hi = min(support_hi, math.ceil((hi - big_phase) / h))
    if j_hi < j_lo:
        j_lo = j_hi = max(support_lo, min(support_hi, j_lo))
    width = j_hi - j_lo + 1
    full = support_hi - support_lo + 1
    big = _next_pow2(max(width, n))
    if big > MAX_FFT:
        raise NumericalError(f"FFT of size {big} exceeds the limit {MAX_FFT}: grid too fine")
    aliased = big < full
    # tilted mass of the ideal k-fold law outside [j_lo, j_hi] (relative to e^{k s})
    alias = 0.0
    if aliased:
        u_loss = j_hi * h + big_phase
        l_loss = j_lo * h + big_phase
        terms = []
        with np.errstate(over="ignore"):  # a Chernoff exponent below −1e308: the term is 0
            if j_hi < support_hi and above.any():
                terms.append(float(np.min(vals[above] + (lam - MGF_ORDERS[above]) * u_loss)))
            if j_lo > support_lo and below.any():
                terms.append(float(np.min(vals[below] + (lam - MGF_ORDERS[below]) * l_loss)))
        alias = sum(_math.exp_up(t) for t in terms)
    x = p.data
    z = np.fft.rfft(x, big)
    r = np.abs(z)
    theta = np.angle(z)
    with np.errstate(divide="ignore", under="ignore"):
        log_r = np.log(r)
        rk = np.exp(k * log_r)
    # cos/sin reduce their argument exactly (no mod 2π, which would reduce by the float 2π)
    angle = k * theta
    w = np.empty(r.size, dtype=np.complex128)
    np.multiply(rk, np.cos(angle), out=w.real)
    np.multiply(rk, np.sin(angle), out=w.imag)
    y = np.fft.irfft(w, big)
    # Error, split as in DiscretePLD. (1) The ideal input error x̃ − x = a + e + r, through the
    # telescoping sum x̃^{*k} − x^{*k} = Σ_j x̃^{*j} * (x̃ − x) * x^{*(k−1−j)}: its per-bin and L1
    # parts give an L1 part of norm ≤ k·(n·error + error_l1)·(sx + E)^{k−1} (E bounds ‖x̃ − x‖₁;
    # wrapping around the window keeps L1 norms) and its L2 part an L2 part of norm
    # ≤ k·error_l2·(sx + E)^{k−1}·√(wraps) (Young's inequality; a circular wrap adds up to
    # `wraps` copies). (2) The ideal's tilted mass outside the window, wrapped into it (alias):
    # L1. (3) The FFTs and the power of the computed x̃, normwise (see _fft_convolution_l2): the
    # spectrum errs by ‖ΔX‖₂ ≤ γ√N‖x̃‖₂, the k-th power by k·max(|X̃| + ‖ΔX‖₂)^{k−1}·‖ΔX‖₂
    # plus its rounding (relative k·u(|log r| + 8) + 6u per frequency), the inverse maps all
    # that to 1/√N of it and adds γ‖ỹ‖₂/(1 − γ): an L2 part.
    sx = float(x.sum())
    g = _fft_gamma(big)
    e_ideal = n * p.error + p.error_l1 + math.sqrt(n) * p.error_l2
    grow_ideal = math.exp((k - 1) * math.log(sx + e_ideal)) * (1.0 + 8 * k * U)
    err_l1 = k * (n * p.error + p.error_l1) * grow_ideal + alias
    wraps = math.ceil(full / big)
    nx2 = math.sqrt(_dot(x, x))
    e_spec = g * math.sqrt(big) * nx2
    with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
        grow = math.exp((k - 1) * math.log(float(r.max()) + e_spec))
        rounding = rk * (k * U * (np.abs(np.where(r > 0, log_r, 0.0)) + 8.0) + 6 * U)
    weights = np.full(r.size, 2.0)
    weights[0] = 1.0
    if big % 2 == 0:
        weights[-1] = 1.0
    rounding_l2 = math.sqrt(_dot(weights, rounding * rounding))
    y_l2 = math.sqrt(_dot(y, y))
    err_l2 = k * p.error_l2 * grow_ideal * math.sqrt(wraps)
    err_l2 += (k * grow * e_spec + rounding_l2) / math.sqrt(big) + g * y_l2 / (1.0 - g)
    err_l2 *= 1.0 + 8 * U
    err = 0.0
    if not (math.isfinite(err_l1) and math.isfinite(err_l2)):
        raise NumericalError("FFT error bound overflowed in self_compose (a bug)")
    idx = (np.arange(j_lo, j_hi + 1) - k * p.offset) % big
    data = np.maximum(y[idx], 0.0)
    total = float(data.sum())
    if total <= 0.0:
        total = 1.0
    # mass at +∞ of the k-fold law: T^k − F^k with T = F + A(∞)
    f = math.exp(p.mgf.log_total) if p.pessimistic else p.finite_low
    t_all = f + p.inf_mass
    if t_all <= 0.0 or p.inf_mass <= 0.0:
        inf = 0.0
    else:
        # T^k (1 − (F/T)^k), in logs (T may exceed 1 slightly: pessimistic masses)
        frac = -math.expm1(-k * math.log1p(p.inf_mass / f)) if f > 0.0 else 1.0
        log_inf = k * math.log(t_all) + math.log(frac)
        inf = 1.0 if log_inf >= 0.0 else math.exp(log_inf)
    inf = min(1.0, inf * (1.0 + 8 * k * U)) if p.pessimistic else max(0.0, inf * (1.0 - 8 * k * U))
    log_scale = k * s + math.log(total)
    err = err / total * (1.0 + 4 * U)
    err_l1 = err_l1 / total * (1.0 + 4 * U)
    err_l2 = err_l2 / total * (1.0 + 4 * U)
    lo_loss = j_lo * h + big_phase
    hi_loss = j_hi * h + big_phase
    if p.pessimistic:
        if j_lo > support_lo:
            log_tau = mk.log_below(lo_loss)
            add = math.exp(log_tau + lam * lo_loss - log_scale)
            data[0] += add
            err_l1 += 4 * U * add
            mk = mk.add_atom(log_tau, lo_loss)
        if j_hi < support_hi:
            inf = min(1.0, (inf + math.exp(mk.log_above(hi_loss))) * (1.0 + 4 * U))
    low_mass = p.finite_low**k * (1.0 - 8 * k * U)
    if not p.pessimistic:
        if j_lo > support_lo:
            low_mass -= math.exp(mk.log_below(lo_loss)) * (1.0 + 4 * U)
        if j_hi < support_hi:
            low_mass -= math.exp(mk.log_above(hi_loss)) * (1.0 + 4 * U)
    q = math.floor(big_phase / h)
    phase = big_phase - q * h
    margin = k * p.loss_margin + 4 * U * (abs(big_phase) + h)
    return DiscretePLD(
        h,
        j_lo + q,
        phase,
        data,
        log_scale,
        lam,
        err,
        inf,
        p.pessimistic,
        margin,
        mk,
        finite_low=max(low_mass, 0.0),
        error_l1=err_l1,
        error_l2=err_l2,
    )


def _regrid(p: DiscretePLD, h: float) -> DiscretePLD:
    """Re-discretise ``p`` onto the grid i·h + φ (φ aligns ``p``'s heaviest bin with a node).

    Pessimistic: connect the dots applied to every bin (each bin is an atom; its P- and Q-mass are
    split between the two enclosing nodes), done on the tilted masses (re-tilted by e^{λ(t − l)})
    so that the float error stays a tilted bound of the same kind; the MGF grows by at most
    e^{|β|h}.
    Optimistic: the optimistic construction of :mod:`sharpdp.accounting.pld.grid` applied to lower bounds of
    the ideal masses. Both preserve the order of profiles, so brackets stay valid.
    """
    lam = p.tilt
    ls = p.losses
    with np.errstate(divide="ignore"):
        log_mass = np.log(p.data) - lam * ls
    heavy = float(ls[int(np.argmax(log_mass))])
    phase = heavy - math.floor(heavy / h) * h
    margin = p.loss_margin + 8.0 * U * (float(np.max(np.abs(ls))) + h)
    if p.pessimistic:
        c = np.floor((ls - phase) / h).astype(np.int64)
        c = np.where(c * h + phase > ls, c - 1, c)
        c = np.where((c + 1) * h + phase <= ls, c + 1, c)
        x = ls - (c * h + phase)
        on = x == 0.0
        f_up = np.where(on, 0.0, -np.expm1(-x) / -math.expm1(-h))
        f_dn = np.where(on, 1.0, np.expm1(h - x) / math.expm1(h))
        up_val = p.data * f_up * np.exp(lam * (h - x))
        dn_val = p.data * f_dn * np.exp(-lam * x)
        base = int(c.min())
        n_new = int(c.max()) - base + 2
        j = c - base
        out = np.bincount(j, weights=dn_val, minlength=n_new)
        out += np.bincount(j + 1, weights=up_val, minlength=n_new)
        fan_in = int(np.max(np.bincount(j, minlength=n_new) + np.bincount(j + 1, minlength=n_new)))
        total = float(out.sum())
        # the per-bin part is split (factors ≤ 1, re-tilted by ≤ e^{λh}) onto ≤ fan_in new bins;
        # the L1 part keeps its norm up to e^{λh} (the two shares of a bin sum to it, f_up + f_dn
        # = 1); the splits and sums err relatively by a few ulps per term (an L1 part)
        grow = math.exp(lam * h)
        err = p.error * grow * fan_in
        err_l1 = p.error_l1 * grow + (fan_in + 16.0 + 2.0 * lam * h) * 2.0 * U * total
        # an L2 part: each bin's error goes to 2 new bins (factors ≤ e^{λh}), each new bin takes
        # from ≤ fan_in old ones: by Cauchy–Schwarz its norm grows by ≤ e^{λh}·√(2·fan_in)
        err_l2 = p.error_l2 * grow * math.sqrt(2.0 * fan_in)
        mgf = _MGF(p.mgf.values + np.abs(MGF_ORDERS) * h + 1e-12 * np.abs(p.mgf.values))
        return DiscretePLD(
            h,
            base,
            phase,
            out / total,
            p.log_scale + math.log(total),
            lam,
            err / total * (1.0 + 4 * U),
            p.inf_mass,
            True,
            margin,
            mgf,
            finite_low=p.finite_low,
            error_l1=err_l1 / total * (1.0 + 4 * U),
            error_l2=err_l2 / total * (1.0 + 4 * U),
        )
    from sharpdp.accounting.pld.pairs import GridContents, _add_atoms

    with np.errstate(divide="ignore", under="ignore"):
        # per bin, |data − ideal| ≤ error + error_l1 + error_l2 (a part's entry is at most its
        # L1 or L2 norm): lower bounds of the ideal masses
        lower = np.maximum(p.data - (p.error + p.error_l1 + p.error_l2), 0.0)
        low = np.exp(np.log(lower) + p.log_scale - lam * ls)
    lo = math.floor((float(ls[0]) - phase) / h)
    hi = max(math.ceil((float(ls[-1]) - phase) / h), lo + 1)
    acc = GridContents.empty(h, lo, hi, phase, p.inf_mass)
    _add_atoms(acc, ls, low * (1.0 - 16 * U), 16 * U)
    masses, inf = optimistic_masses(acc)
    return _from_masses(masses, lo, phase, h, inf, lam, False, margin)


def _commensurate(a: float, h: float) -> bool:
    r = a / h
    return abs(r - round(r)) <= 1e-9 * max(1.0, r)


#: Self-composed groups kept for reuse by later compositions, least recently used out first, up to
#: this many bins in all: 16 MB of masses, plus the δ tables of those that were final results (an
#: accountant recomposes its whole history at every spend, and most of its groups are the same at
#: the same grid; grids come from a fixed ladder, see :func:`_ladder`). See :func:`clear_cache`.
