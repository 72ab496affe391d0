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
#: Per-stage relative error assumed for numpy's (pocketfft) FFT butterflies, in ulps. The
#: componentwise bound used is |fft(x)_ω − DFT(x)_ω| ≤ FFT_ULPS·u·log2(N)·Σ|x| (each output is a
#: sum over a butterfly tree of depth log2 N whose nodes multiply by unit twiddles and add, each
#: with relative error ≲ 5u + twiddle error). Tests check it against exact DFTs.
FFT_ULPS = 10.0
#: Default bound on each truncated tail (probability mass moved to +∞ or to the lowest loss).
DEFAULT_TAIL = 1e-24
#: Relative tolerance of the tilted (aliased) mass outside an FFT window.
_ALIAS_REL = 1e-15
#: Largest FFT size used.
MAX_FFT = 2**24
#: Orders β at which moment generating functions are tracked (log-spaced, both signs, and 0).
_POS = 2.0 ** (np.arange(-12, 25) / 2.0)
#: Largest |loss|/h of a pair that the grid discretises (node indices are int64).
_MAX_NODES = 2.0**60
MGF_ORDERS = np.concatenate([-_POS[::-1], [0.0], _POS])
_ZERO = _POS.size  # index of β = 0


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


def _suffix_log_sum(lv: FloatArray) -> FloatArray:
    """log Σ_{j≥k} e^{lv_j} for every k: a scaled linear cumsum (fast), redone on the tail where
    it underflows (so tiny tails keep their full relative accuracy)."""
    return _suffix_log_tables(lv, None)[0]


def _suffix_log_tables(lv: FloatArray, h: float | None) -> tuple[FloatArray, FloatArray]:
    """log A_k = log Σ_{j≥k} w_j and (if h is given) log δ_k = log Σ_{j>k} w_j (1 − e^{−(j−k)h})
    for w_j = e^{lv_j} on a uniform grid of step h.

    δ_k comes from the recursion δ_k = (1 − e^{−h}) A_{k+1} + e^{−h} δ_{k+1} (since
    1 − e^{−(j−k)h} = (1 − e^{−h}) + e^{−h}(1 − e^{−(j−k−1)h})), a first-order linear filter
    with positive coefficients run over positive inputs: no cancellation, so with the suffix
    sums' (n − 1)u its relative error is at most about 5n·u (each step adds ≤ 3u, the
    coefficients' rounding ≤ u per step of decay). Scaled by the segment's maximum and redone on
    the tail where the values underflow.
    """
    from scipy.signal import lfilter

    n = lv.size
    out_a = np.full(n, -np.inf)
    out_d = np.full(n, -np.inf)
    c = -math.expm1(-h) if h is not None else 0.0
    decay = math.exp(-h) if h is not None else 0.0
    start = 0
    while start < n:
        seg = lv[start:]
        top = float(np.max(seg))
        if top == -math.inf:
            break
        with np.errstate(under="ignore", divide="ignore"):
            w = np.exp(seg - top)
            acc_rev = np.cumsum(w[::-1])
            out_a[start:] = np.log(acc_rev[::-1]) + top
            check = acc_rev[::-1]
            if h is not None and seg.size > 1:
                d_rev = lfilter([0.0, c], [1.0, -decay], acc_rev)
                d = d_rev[::-1]
                out_d[start:] = np.log(d) + top
                check = np.minimum(check[:-1], d[:-1])
        small = np.nonzero(check < 1e-250)[0]
        if small.size == 0 or int(small[0]) == 0:
            break
        start += int(small[0])
    return out_a, out_d


@dataclass(frozen=True, slots=True, eq=False)
class DiscretePLD:
    """A discretised privacy loss law on the grid l_j = (offset + j)·h + phase, plus a mass at +∞.

    Masses are stored *tilted*: the mass of bin j is ``data[j]·exp(log_scale − tilt·l_j)``, and
    ``|data[j] − ideal[j]| ≤ error`` for every j, where *ideal* is the exact-arithmetic result of
    the discretisation and compositions that produced it; outside the stored bins the ideal is 0.
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
        error: the per-bin float-error bound on ``data``.
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
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

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
    def _tables(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, float]:
        """Per bin k (bins with l_k > −h − margin): l_k, log A_k = log Σ_{j≥k} w_j,
        log δ_k = log Σ_{j>k} w_j (1 − e^{l_k − l_j}) and log G_k = log Σ_{j≥k} w_j e^{l_k − l_j},
        with w the error-adjusted weights; plus the relative error bound of δ_k (and of A, G).

        δ_k is computed by a recursion of positive terms (:func:`_suffix_log_tables`), so its
        relative error is O(n·u) with no 1/h cancellation factor.
        """
        cached = self._cache.get("tables")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        h = self.value_discretization
        l_all = self.losses
        first = int(np.searchsorted(l_all, -h - self.loss_margin, side="right"))
        first = max(0, first - 1)
        ls = l_all[first:]
        d = self.data[first:]
        adjusted = d + self.error if self.pessimistic else np.maximum(d - self.error, 0.0)
        with np.errstate(divide="ignore"):
            lw = np.log(adjusted) + self.log_scale - self.tilt * ls
        n = ls.size
        if n == 0:
            empty = np.empty(0)
            out = (empty, empty, empty, empty, 0.0)
            self._cache["tables"] = out
            return out
        log_a, log_d = _suffix_log_tables(lw, h)
        log_d[-1] = -np.inf  # nothing lies above the last bin
        log_g = ls + _suffix_log_sum(lw - ls)  # only a start point for ε(δ), certified after
        # relative error of A_k, δ_k: the sums (≤ 5n·u, see _suffix_log_tables) and the logs and
        # exps of the weights and of the tables (≤ 4u per unit of their magnitudes)
        finite = lw[np.isfinite(lw)]
        mags = float(np.max(np.abs(finite))) if finite.size else 0.0
        mags += abs(self.log_scale) + float(np.max(np.abs(self.tilt * ls)))
        margin = (6.0 * n + 64.0 + 8.0 * mags) * U
        out = (ls, log_a, log_d, log_g, margin)
        self._cache["tables"] = out
        return out

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
            value = self._delta_finite(e - self.loss_margin) * (1.0 + margin) + self.inf_mass
            return min(1.0, math.nextafter(value, math.inf) if value > 0 else 0.0)
        value = self._delta_finite(e + self.loss_margin) * (1.0 - margin) + self.inf_mass
        return max(0.0, min(1.0, value * (1.0 - 4 * U)))

    def epsilon(self, delta: float) -> float:
        """ε(δ): the smallest ε ≥ 0 with δ(ε) ≤ δ for this discrete law (pessimistic: an upper
        bound on the exact ε(δ); optimistic: a lower bound). Exact between grid points (there
        δ(ε) = (1 − e^{−x})A_k + e^{−x}δ_k with x = l_k − ε), then rounded against the user."""
        d = _validate.real("delta", delta)
        if not 0.0 <= d <= 1.0:
            raise InvalidParameter(f"delta must be in [0, 1], got {d!r}")
        if self.delta(0.0) <= d:
            return 0.0
        if d < self.inf_mass:
            return math.inf
        ls, log_a, log_d, log_g, margin = self._tables()
        if ls.size == 0:
            return 0.0
        sign = 1.0 if self.pessimistic else -1.0
        target = (d - self.inf_mass) / (1.0 + sign * margin)
        if target < 0.0:
            return math.inf
        if target == 0.0:
            # δ_finite(ε) = 0 iff ε >= the largest loss carrying weight
            live = np.nonzero(np.isfinite(log_a))[0]
            top = float(ls[live[-1]]) if live.size else 0.0
            e = self._shift(top)
            return e if not self.pessimistic or self.delta(e) <= d else math.inf
        with np.errstate(divide="ignore"):
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
        eps = float(ls[k]) - x
        if not self.pessimistic:
            return self._shift(eps)
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
        raise NumericalError(f"could not certify epsilon(delta={d!r}) on the PLD grid")

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
        err = 0.0
    else:
        w = np.exp(lw - top)
        s = float(w.sum())
        data = w / s
        log_scale = top + math.log(s)
        # exp/log/normalisation: a few ulps relative per bin, below 8u·data ≤ 8u (uniform bound)
        err = 16 * U
    if mgf is None:
        mgf = _MGF.of_masses(masses, losses)
    low = float(masses.sum()) * (1.0 - 4 * (masses.size + 4) * U)
    return DiscretePLD(
        h, offset, phase, data, log_scale, tilt, err, inf, pessimistic, margin, mgf, finite_low=low
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
    sx_ideal = sx + nx * a.error
    sy_ideal = sy + ny * b.error
    if nx * ny <= 200_000 or min(nx, ny) <= 16:
        z = np.convolve(x, y)
        # each output is a sum of <= min(nx, ny) non-negative products
        rnd = (min(nx, ny) + 4) * U * sx * sy * 2.0
    else:
        n = nx + ny - 1
        big = _next_pow2(n)
        if big > MAX_FFT:
            raise NumericalError(f"FFT of size {big} exceeds the limit {MAX_FFT}: grid too fine")
        z = np.fft.irfft(np.fft.rfft(x, big) * np.fft.rfft(y, big), big)[:n]
        rnd = (3.0 * FFT_ULPS * math.log2(big) + 6.0) * U * sx * sy
    err = a.error * sy_ideal + b.error * sx_ideal + a.error * b.error * min(nx, ny) + rnd
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
    )


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
    low_mass = p.finite_low
    lo_loss = (p.offset + j0) * h + p.phase
    hi_loss = (p.offset + j1) * h + p.phase
    if j0 > 0:
        log_tau = p.mgf.log_below(lo_loss)
        if p.pessimistic:
            add = math.exp(log_tau + p.tilt * lo_loss - p.log_scale)
            data[0] += add
            err += 4 * U * add
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
    # error: input (float data and the FFT), power, inverse FFT, aliasing
    sx = float(x.sum())
    log2n = math.log2(big)
    e_in = FFT_ULPS * U * log2n * sx + n * p.error
    with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
        grow = np.exp((k - 1) * np.log(r + e_in))
        e_pow = k * grow * e_in + rk * (k * U * (np.abs(np.where(r > 0, log_r, 0.0)) + 8.0) + 6 * U)
    e_pow = np.where(np.isfinite(e_pow), e_pow, np.inf)
    weights = np.full(r.size, 2.0)
    weights[0] = 1.0
    if big % 2 == 0:
        weights[-1] = 1.0
    err = (
        float((weights * e_pow).sum()) + FFT_ULPS * U * log2n * float((weights * rk).sum())
    ) / big
    err = err * (1.0 + 8 * U) + alias
    if not math.isfinite(err):
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
    lo_loss = j_lo * h + big_phase
    hi_loss = j_hi * h + big_phase
    if p.pessimistic:
        if j_lo > support_lo:
            log_tau = mk.log_below(lo_loss)
            add = math.exp(log_tau + lam * lo_loss - log_scale)
            data[0] += add
            err += 4 * U * add
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
    )


def _regrid(p: DiscretePLD, h: float) -> DiscretePLD:
    """Re-discretise ``p`` onto the grid i·h + φ (φ aligns ``p``'s heaviest bin with a node).

    Pessimistic: connect the dots applied to every bin (each bin is an atom; its P- and Q-mass are
    split between the two enclosing nodes), done on the tilted masses (re-tilted by e^{λ(t − l)})
    so that the float error stays a uniform tilted bound; the MGF grows by at most e^{|β|h}.
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
        err = p.error * math.exp(lam * h) * fan_in + 16 * U * float(out.max())
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
        )
    from sharpdp.accounting.pld.pairs import GridContents, _add_atoms

    with np.errstate(divide="ignore", under="ignore"):
        low = np.exp(np.log(np.maximum(p.data - p.error, 0.0)) + p.log_scale - lam * ls)
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
