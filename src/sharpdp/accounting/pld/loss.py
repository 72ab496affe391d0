"""Privacy loss distributions (PLDs): dominating pairs, discretisation, FFT composition, δ(ε), ε(δ).

Every mechanism or guarantee with a known *dominating pair* (P, Q) is described by the law of its
privacy loss L = log(P/Q)(Y), Y ~ P, including a mass at +∞. Composition multiplies pairs, i.e.
convolves loss laws (the +∞ masses compose as 1 − Π(1 − p_i)); the composed mechanism is then
(ε, δ(ε))-DP with δ(ε) = E[(1 − e^{ε − L})_+] + P[L = ∞] [Zhu–Dong–Wang 2022 (arXiv 2106.08567),
Thm 10, valid for adaptive composition; Koskela–Jälkö–Honkela 2020; Gopi–Lee–Wutschitz 2021].

Pipeline and why each step errs against the user:

1. :func:`dominating_pairs` maps an item to symmetric pairs through a registry keyed by type
   (:func:`register_pair`). Symmetric pairs dominate both orders of every neighbouring pair.
2. :func:`discretise` puts a pair on the grid i·h: pessimistically by *connect the dots*
   [Doroshenko–Ghazi–Kamath–Kumar–Manurangsi 2022, arXiv 2207.04380] (the profile is the chord
   interpolation in e^ε of the exact one, hence above it), or optimistically (a profile below the
   exact one at every ε; see :mod:`sharpdp.accounting.pld.grid`). Per-component order is preserved by
   composition (order lemma in :mod:`sharpdp.accounting.pld.grid`), so the two composed results bracket the
   exact value: δ_opt(ε) ≤ δ(ε) ≤ δ_pess(ε).
3. Composition (:meth:`DiscretePLD.compose`, :meth:`DiscretePLD.self_compose`) uses numpy's FFT on
   *exponentially tilted* masses m_j e^{λ l_j}, so that the float error, which is absolute and
   uniform per bin, is *relative* to the tail mass that δ(ε) depends on. Every result carries a
   rigorous per-bin bound ``error`` of its float error (componentwise FFT error analysis, see
   :data:`FFT_ULPS`); reported values add it (pessimistic) or subtract it (optimistic). Tails of
   composed laws are truncated where Chernoff bounds (from the moment generating function, tracked
   exactly) certify them below ``tail``: pessimistically the upper tail goes to +∞ and the lower
   tail to the lowest kept loss; optimistically both are dropped.
4. δ(ε) and ε(δ) are computed exactly on the discrete law (closed form between grid points) in
   log space, then rounded against the user.

:func:`compose_pld` wraps it all with automatic accuracy: it refines h until the optimistic and
pessimistic ε (or δ) agree to a relative ``target_relative_error``; the reported value is the
pessimistic one, so it is always a valid bound, certified to be within the target of the exact
value when :meth:`PLDResult.epsilon_bracket` is that narrow. Identical pairs are grouped and
self-composed by one FFT power; a group whose atoms sit on a lattice incommensurate with the grid
is composed on its own aligned grid (where its discretisation is exact) and regridded once.

Accuracy, measured (see ``bench/pld_scratch.py``): connect the dots errs by O(h²) per unit of loss
density and, since it keeps the P- and Q-mass of every cell, its error does not accumulate to
first order over k compositions; the optimistic construction is of the same order except for
*isolated atoms off the grid* (randomized response or pure DP with many different ε in one
composition), where the best grid-kinked lower bound is O(h) per atom. There the bracket shrinks
like h, refinement may stop at :data:`MAX_BINS` and the bracket says how sharp the (still valid)
pessimistic value is.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from sharpdp import _math, _validate
from sharpdp.accounting.pld.grid import optimistic_masses, pessimistic_masses
from sharpdp.accounting.pld.pairs import (
    DominatingPair,
    FinitePair,
    GaussianPair,
    LaplacePair,
    approx_dp_pair,
    discrete_gaussian_pair,
    discrete_laplace_pair,
    randomized_response_pair,
)
from sharpdp.errors import InvalidParameter, NotImplied, NumericalError

#: Largest finite |loss| of a pair the PLD discretises (its MGF tables need β·loss in range).
MAX_LOSS = 1e6

__all__ = [
    "FFT_ULPS",
    "MAX_LOSS",
    "DiscretePLD",
    "DominatingPair",
    "FinitePair",
    "GaussianPair",
    "LaplacePair",
    "PLDResult",
    "approx_dp_pair",
    "clear_cache",
    "compose_pld",
    "discrete_gaussian_pair",
    "discrete_laplace_pair",
    "discretise",
    "dominating_pairs",
    "randomized_response_pair",
    "register_pair",
    "supports",
]

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
#: Automatic refinement stops when the next grid would hold more bins than this.
MAX_BINS = 2**22
#: Automatic refinement steps after the first evaluation.
MAX_REFINEMENTS = 6
#: Orders β at which moment generating functions are tracked (log-spaced, both signs, and 0).
_POS = 2.0 ** (np.arange(-12, 25) / 2.0)
#: Largest |loss|/h of a pair that the grid discretises (node indices are int64).
_MAX_NODES = 2.0**60
MGF_ORDERS = np.concatenate([-_POS[::-1], [0.0], _POS])
_ZERO = _POS.size  # index of β = 0


# =================================================================================================
# registry of dominating pairs

Decomposition = tuple[tuple[DominatingPair, int], ...]
_REGISTRY: dict[type, Callable[[Any], Decomposition | DominatingPair]] = {}
_LAZY: dict[tuple[str, str], Callable[[Any], Decomposition | DominatingPair]] = {}


def register_pair(
    kind: type,
) -> Callable[
    [Callable[[T], Decomposition | DominatingPair]], Callable[[T], Decomposition | DominatingPair]
]:
    """Decorator registering ``function(item) -> DominatingPair`` (or ``((pair, count), ...)``).

    The function must return a pair dominating the item's mechanism *in both orders* of every
    neighbouring pair (a symmetric pair does), or several pairs whose composition does (e.g. the
    k rounds of one-shot top-k). Lookup walks the item type's MRO.
    """

    def decorate(
        function: Callable[[T], Decomposition | DominatingPair],
    ) -> Callable[[T], Decomposition | DominatingPair]:
        _REGISTRY[kind] = function
        return function

    return decorate


def _lookup(item: object) -> Callable[[Any], Decomposition | DominatingPair] | None:
    for klass in type(item).__mro__:
        fn = _REGISTRY.get(klass)
        if fn is not None:
            return fn
        fn = _LAZY.get((klass.__module__, klass.__qualname__))
        if fn is not None:
            return fn
    return None


def supports(item: object) -> bool:
    """Whether a dominating pair is registered for ``item``'s type."""
    return _lookup(item) is not None


def dominating_pairs(item: object) -> Decomposition:
    """The dominating pair(s) of ``item``, as ``((pair, count), ...)``.

    Raises:
        NotImplied: no pair is registered for the item's type (the message names the item).
    """
    fn = _lookup(item)
    if fn is None:
        raise NotImplied(
            f"no privacy loss distribution is known for {item!r} ({type(item).__name__}); "
            "supported: "
            + ", ".join(sorted({k.__name__ for k in _REGISTRY} | {q for _, q in _LAZY}))
        )
    out = fn(item)
    if isinstance(out, DominatingPair):
        return ((out, 1),)
    return tuple(out)


def _register_builtin() -> None:
    from sharpdp.guarantees import GDP, ApproxDP, BoundedRange, PureDP
    from sharpdp.mechanisms.additive import Gaussian, Laplace
    from sharpdp.mechanisms.randomized_response import RandomizedResponse
    from sharpdp.mechanisms.selection import (
        Exponential,
        PermuteAndFlip,
        ReportNoisyMax,
        TopK,
    )

    def gaussian(mu: float) -> DominatingPair:
        if mu == 0.0:
            return FinitePair((0.0,), (1.0,), name="perfect privacy")
        if math.isinf(mu):
            return FinitePair((), (), 1.0, name="no privacy")
        if mu < 1e-10:
            # below the resolution of any grid (and μ²/2 may underflow): μ-GDP is (ε, δ)-DP at
            # ε = 40μ with δ ≤ Φ(−40 + μ/2) < 1e-340 < 5e-324 [DRS Cor 2.13], so the KOV pair of
            # (40μ, 5e-324)-DP dominates it.
            return approx_dp_pair(40.0 * mu, 5e-324)
        return GaussianPair(mu)

    @register_pair(GDP)
    def _gdp(g: GDP) -> DominatingPair:
        """μ-GDP: the pair (N(0,1), N(μ,1)) [Dong–Roth–Su 2019, Def 2.6]; symmetric."""
        return gaussian(g.mu)

    @register_pair(Gaussian)
    def _gauss(m: Gaussian) -> DominatingPair:
        """The Gaussian mechanism is exactly (Δ/σ)-GDP [Dong–Roth–Su 2019, Thm 2.7]."""
        return gaussian(m.mu)

    @register_pair(Laplace)
    def _laplace(m: Laplace) -> DominatingPair:
        """(Lap(0, b), Lap(Δ, b)) [Koskela et al. 2020]; symmetric (y ↦ Δ − y)."""
        e0 = m.epsilon0
        if e0 == 0.0:
            return FinitePair((0.0,), (1.0,), name="perfect privacy")
        return LaplacePair(e0)

    @register_pair(RandomizedResponse)
    def _rr(m: RandomizedResponse) -> DominatingPair:
        """The k-RR pair itself (two different true values); symmetric."""
        return randomized_response_pair(m.epsilon_, m.categories)

    @register_pair(PureDP)
    def _pure(g: PureDP) -> DominatingPair:
        """ε-RR dominates every ε-DP mechanism [Kairouz–Oh–Viswanath 2015, Thm 2.4]."""
        return randomized_response_pair(g.epsilon_, 2)

    @register_pair(ApproxDP)
    def _approx(g: ApproxDP) -> DominatingPair:
        """The four-point KOV pair dominates every (ε, δ)-DP mechanism [KOV15, Thm 2.4]."""
        return approx_dp_pair(g.epsilon_, g.delta_)

    @register_pair(BoundedRange)
    def _br(g: BoundedRange) -> DominatingPair:
        """η-BR ⇒ η-DP (valid, not tight: the BR profile is smaller than η-RR's)."""
        return randomized_response_pair(g.eta, 2)

    def _selection(m: Any) -> DominatingPair:
        """A selection mechanism known to be ε-DP with ε = m.epsilon(0): the ε-RR pair."""
        return randomized_response_pair(m.epsilon(0.0), 2)

    for kind in (Exponential, PermuteAndFlip, ReportNoisyMax):
        register_pair(kind)(_selection)

    @register_pair(TopK)
    def _topk(m: TopK) -> Decomposition:
        """One-shot top-k ≡ k adaptive ε-BR (hence ε-DP) rounds: k copies of the ε-RR pair."""
        return ((randomized_response_pair(m.epsilon_, 2), m.k),)

    # The discrete mechanisms (sharpdp.mechanisms.discrete) are registered by name, lazily: the
    # pairs only read the documented attributes scale/sigma and sensitivity.
    def _dlap(m: Any) -> DominatingPair:
        """Discrete Laplace P(z) ∝ exp(−|z|/scale), integer sensitivity: (Z, Z + Δ)."""
        return discrete_laplace_pair(float(m.scale), int(m.sensitivity))

    def _dgauss(m: Any) -> DominatingPair:
        """Discrete Gaussian P(z) ∝ exp(−z²/(2σ²)), integer sensitivity: (Z, Z + Δ)."""
        return discrete_gaussian_pair(float(m.sigma), int(m.sensitivity))

    _LAZY[("sharpdp.mechanisms.discrete", "DiscreteLaplace")] = _dlap
    _LAZY[("sharpdp.mechanisms.discrete", "DiscreteGaussian")] = _dgauss


_register_builtin()


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
_GROUP_CACHE_BINS = 2**21
_group_cache: OrderedDict[tuple[object, ...], DiscretePLD] = OrderedDict()
_group_cache_lock = threading.Lock()
_group_cache_size = [0]


def clear_cache() -> None:
    """Forget the self-composed groups kept for reuse (to free their memory, or to time a
    composition from scratch). Results never depend on the cache."""
    with _group_cache_lock:
        _group_cache.clear()
        _group_cache_size[0] = 0


def _group_pld(
    pair: DominatingPair,
    count: int,
    h: float,
    tilt: float,
    pessimistic: bool,
    tail: float,
    floor: float,
) -> DiscretePLD:
    """The PLD of ``count`` copies of ``pair`` on the grid of spacing h, without what lies below
    loss ``floor`` (moved up or dropped, see :func:`_truncate`). Groups of count ≥ 2 are cached
    (read-only) in :data:`_group_cache`.

    A pair whose atoms lie on a lattice incommensurate with h is first self-composed on its own
    aligned grid (spacing a/⌈a/h⌉, where the discretisation of its atoms is exact), then regridded
    once: one discretisation error for the whole group instead of one per copy.
    """
    if count < 2:
        q = discretise(pair, h, pessimistic=pessimistic, tilt=tilt)
        return _truncate(q, tail, floor=floor) if floor > -math.inf else q
    key = (pair, count, h, tilt, pessimistic, tail, floor)
    with _group_cache_lock:
        hit = _group_cache.get(key)
        if hit is not None:
            _group_cache.move_to_end(key)
            return hit
    a = pair.lattice()
    if a is not None and a >= 2.0 * h and not _commensurate(a, h):
        h_g = a / math.ceil(a / h * (1.0 - 1e-12))
        q = discretise(pair, h_g, pessimistic=pessimistic, tilt=tilt)
        q = _truncate(_regrid(_power(q, count, tail, floor=floor), h), tail, floor=floor)
    else:
        q = discretise(pair, h, pessimistic=pessimistic, tilt=tilt)
        q = _power(q, count, tail, floor=floor)
    q.data.setflags(write=False)
    with _group_cache_lock:
        if key not in _group_cache and q.data.size <= _GROUP_CACHE_BINS // 4:
            _group_cache[key] = q
            _group_cache_size[0] += q.data.size
            while _group_cache_size[0] > _GROUP_CACHE_BINS:
                _, old = _group_cache.popitem(last=False)
                _group_cache_size[0] -= old.data.size
    return q


def _group_plds(
    items: Sequence[tuple[DominatingPair, int]],
    h: float,
    tilt: float,
    pessimistic: bool,
    tail: float,
) -> list[tuple[DiscretePLD, int]]:
    """Every group's PLD on the grid h, ready for :func:`_compose_groups`.

    Only δ(ε) for ε ≥ 0 is asked of the composition, so losses that stay below 0 whatever the
    other groups add are not needed (:func:`_truncate`): the widest group is computed last and
    cut at −c, with c ≥ 2h + the largest finite loss the other groups hold (rounded up to h·2^j,
    so that the cut repeats across compositions and the group cache finds it). That shrinks its
    FFT window by about half. The cut is checked against the float margins of the losses.
    """
    if len(items) == 1:
        pair, count = items[0]
        return [(_group_pld(pair, count, h, tilt, pessimistic, tail, -h), 1)]

    def width(i: int) -> float:
        pair, count = items[i]
        with np.errstate(all="ignore"):
            w = count * abs(pair.mean()) + 8.0 * math.sqrt(count * max(pair.variance(), 0.0))
        return w if math.isfinite(w) else math.inf

    order = sorted(range(len(items)), key=width)
    out: dict[int, DiscretePLD] = {}
    reach = 0.0
    margins = 0.0
    for i in order[:-1]:
        pair, count = items[i]
        q = _group_pld(pair, count, h, tilt, pessimistic, tail, -math.inf)
        out[i] = q
        reach += max(0.0, (q.offset + q.data.size - 1) * h + q.phase)
        margins += q.loss_margin
    last = order[-1]
    pair, count = items[last]
    cut = _math.up(2.0 * h + reach, 4)
    cut = h * 2.0 ** math.ceil(math.log2(cut / h)) if math.isfinite(cut) else math.inf
    q = _group_pld(pair, count, h, tilt, pessimistic, tail, -cut)
    if margins + q.loss_margin > h:  # the float margins would eat the 2h of slack: no cut
        q = _group_pld(pair, count, h, tilt, pessimistic, tail, -math.inf)
    out[last] = q
    return [(out[i], 1) for i in range(len(items))]


def _compose_groups(parts: Sequence[tuple[DiscretePLD, int]], tail: float) -> DiscretePLD:
    """Self-compose every group by an FFT power, then convolve the groups smallest first; the
    last step is truncated as final (nothing below loss 0 is kept)."""
    single = len(parts) == 1
    heap: list[tuple[int, int, DiscretePLD]] = []
    for i, (pld, count) in enumerate(parts):
        q = _power(pld, count, tail, final=single) if count > 1 else pld
        if single and count == 1:
            q = _truncate(q, tail, final=True)
        heap.append((q.data.size, i, q))
    heapq.heapify(heap)
    tick = len(heap)
    while len(heap) > 1:
        _, _, a = heapq.heappop(heap)
        _, _, b = heapq.heappop(heap)
        c = _truncate(_convolve(a, b), tail, final=len(heap) == 0)
        heapq.heappush(heap, (c.data.size, tick, c))
        tick += 1
    return heap[0][2]


# =================================================================================================
# automatic accuracy


def _merge_gaussians(
    items: tuple[tuple[DominatingPair, int], ...], up: bool
) -> tuple[tuple[DominatingPair, int], ...]:
    """The items with every μ-GDP pair (and its count) replaced by one pair of
    μ = √(Σ c_i μ_i²): Gaussian pairs compose exactly [Dong–Roth–Su 2019, Cor 3.3], so this is
    the same composition with one FFT group instead of many. μ is rounded up (``up``, for the
    pessimistic side: a larger μ dominates) or down (optimistic), from the exact rational sum."""
    gauss = [(pair.gdp_mu(), count) for pair, count in items if pair.gdp_mu() is not None]
    if len(gauss) < 2:  # one group is composed by an FFT power already
        return items
    total = sum((Fraction(mu) ** 2 * c for mu, c in gauss if mu is not None), Fraction(0))
    mu = math.sqrt(float(total))
    if up:
        while Fraction(mu) ** 2 < total:
            mu = math.nextafter(mu, math.inf)
    else:
        while mu > 0.0 and Fraction(mu) ** 2 > total:
            mu = math.nextafter(mu, 0.0)
    others = tuple((pair, count) for pair, count in items if pair.gdp_mu() is None)
    return ((GaussianPair(mu), 1), *others)


def _ladder(h: float) -> float:
    """h rounded down onto the ladder 2^(j/8): automatic grids then repeat across compositions of
    similar items, so their groups are found in the cache (at most 9% more bins)."""
    return float(2.0 ** (math.floor(8.0 * math.log2(h)) / 8.0))


def _normalise_items(items: Iterable[object]) -> tuple[tuple[DominatingPair, int], ...]:
    counts: dict[DominatingPair, int] = {}
    for entry in items:
        if isinstance(entry, tuple):
            if len(entry) != 2:
                raise InvalidParameter(f"items must be items or (item, count) pairs, got {entry!r}")
            item, count = entry
            c = _validate.integer("count", count, minimum=0)
        else:
            item, c = entry, 1
        for pair, mult in dominating_pairs(item):
            if c * mult > 0 and not _is_identity(pair):
                counts[pair] = counts.get(pair, 0) + c * mult
    return tuple(counts.items())


def _is_identity(pair: DominatingPair) -> bool:
    """The pair of a perfectly private mechanism (all mass at loss 0): neutral in compositions."""
    return (
        isinstance(pair, FinitePair)
        and pair.losses == (0.0,)
        and pair.masses == (1.0,)
        and pair.inf_mass_ == 0.0
    )


def _log_c(lam: FloatArray) -> FloatArray:
    """log max_{x≥0} (1 − e^{−x}) e^{−λx} = λ log(λ/(1+λ)) − log(1+λ)."""
    return np.asarray(lam * np.log(lam / (1.0 + lam)) - np.log1p(lam))


@dataclass(frozen=True, slots=True, eq=False)
class PLDResult:
    """The PLD accountant's answer for a composition, with automatic accuracy.

    ``epsilon(delta)`` / ``delta(epsilon)`` return the pessimistic (valid upper bound) value at a
    grid fine enough that the optimistic value is within ``target_relative_error`` of it (then the
    reported value is certified to be within that relative error of the exact one); the brackets
    ``epsilon_bracket(delta)`` / ``delta_bracket(epsilon)`` return (optimistic, pessimistic).

    Each query chooses the FFT tilt λ minimising the Chernoff bound at its target (so the float
    error is relative where it matters), starts from a grid spacing predicted from the loss
    spread, and refines h (assuming the gap shrinks like h^p, p estimated from the last two steps)
    until the gap is within target, or :data:`MAX_REFINEMENTS` steps, or the next grid would exceed
    :data:`MAX_BINS` bins, or refining stops helping (the gap of a δ query cannot go below the
    truncated tail masses, ~1e3·tail). Composed laws are cached per (h, λ).

    Attributes:
        items: the distinct dominating pairs and their counts.
        value_discretization: the grid spacing h, or None to choose it automatically.
        target_relative_error: the relative width of the bracket aimed at.
        tail: the mass bound of each truncated tail.
    """

    items: tuple[tuple[DominatingPair, int], ...]
    value_discretization: float | None = None
    target_relative_error: float = 1e-4
    tail: float = DEFAULT_TAIL
    _cache: dict[tuple[float, float], tuple[DiscretePLD, DiscretePLD]] = field(
        default_factory=dict, repr=False
    )
    _sides: dict[bool, tuple[tuple[DominatingPair, int], ...]] = field(
        default_factory=dict, repr=False
    )

    def _side_items(self, pessimistic: bool) -> tuple[tuple[DominatingPair, int], ...]:
        """The items as discretised on one side: Gaussian pairs merged (:func:`_merge_gaussians`)."""
        if pessimistic not in self._sides:
            self._sides[pessimistic] = _merge_gaussians(self.items, up=pessimistic)
        return self._sides[pessimistic]

    @property
    def group_count(self) -> int:
        """How many FFT groups the composition has (distinct pairs, Gaussian pairs merged)."""
        return len(self._side_items(True))

    # -- summary statistics of the exact pairs ---------------------------------------------------
    @property
    def inf_mass(self) -> float:
        """P[L = ∞] of the composition: 1 − Π(1 − p_i)^{k_i} (computed with log1p)."""
        s = 0.0
        for pair, count in self.items:
            p = pair.inf_mass
            if p >= 1.0:
                return 1.0
            s += count * math.log1p(-p)
        return -math.expm1(s)

    def _log_mgf(self, beta: FloatArray) -> FloatArray:
        total = np.zeros(beta.size)
        with np.errstate(over="ignore", invalid="ignore"):  # an MGF beyond the float range: +inf
            for pair, count in self.items:
                total = total + count * pair.log_mgf(beta)
        return np.where(np.isnan(total), np.inf, total)

    def _chernoff_epsilon(self, delta: float) -> tuple[float, float]:
        """(ε, λ): the Chernoff/CKS-type upper bound min_λ (log M(λ) + log c(λ) − log(δ − p∞))/λ,
        and the tilt (capped by :meth:`_max_tilt`)."""
        budget = delta - self.inf_mass
        if budget <= 0.0:
            return math.inf, 1.0
        vals = (self._log_mgf(_POS) + _log_c(_POS) - math.log(budget)) / _POS
        i = int(np.argmin(vals))
        return max(float(vals[i]), 0.0), min(float(_POS[i]), self._max_tilt())

    def clt_epsilon(self, delta: float) -> float:
        """A central-limit *estimate* (not a bound) of the composed ε(δ): the μ-GDP value with
        μ² the total variance of the finite loss (inf with mass at +∞). For planning work only."""
        from scipy.special import ndtri

        if any(pair.inf_mass > 0.0 for pair, _ in self.items):
            return math.inf
        with np.errstate(all="ignore"):  # an MGF beyond the float range: no estimate
            _, var = self._spread()
        if self.inf_mass > 0.0 or not var > 0.0 or not math.isfinite(var) or not delta > 0.0:
            return math.inf
        # μ-GDP has δ(ε) ≈ Φ(μ/2 − ε/μ) away from ε = 0: ε ≈ μ²/2 + μ·Φ⁻¹(1 − δ)
        return var / 2.0 + math.sqrt(var) * float(ndtri(-delta + 1.0)) if delta < 0.5 else 0.0

    def _chernoff_log_delta(self, epsilon: float) -> FloatArray:
        """log M(λ) + log c(λ) − λε at the tilts _POS (+inf where ε or the MGF overflows)."""
        with np.errstate(over="ignore", invalid="ignore"):  # inf − inf: no bound at that tilt
            vals = self._log_mgf(_POS) + _log_c(_POS) - _POS * epsilon
        return np.where(np.isnan(vals), np.inf, vals)

    def _chernoff_tilt(self, epsilon: float) -> float:
        vals = self._chernoff_log_delta(epsilon)
        return min(float(_POS[int(np.argmin(vals))]), self._max_tilt())

    def _width(self) -> float:
        """The width of the composed loss range holding all but 1e-30 of the mass on each side
        (Chernoff bounds from the exact log-MGFs)."""
        total_pos = self._log_mgf(_POS)
        total_neg = self._log_mgf(-_POS)
        hi = float(np.min((total_pos + 69.0) / _POS))
        lo = float(np.max((-69.0 - total_neg) / _POS))
        return max(hi - lo, 1e-12)

    def _max_tilt(self) -> float:
        """A tilt λ whose weights e^{λl} span at most e^{400} over the composed loss range, so
        tilted masses stay well inside the float range."""
        return max(min(400.0 / self._width(), float(_POS[-1])), float(_POS[0]))

    def _spread(self) -> tuple[float, float]:
        """(total count, total variance of the finite loss) of the composition."""
        k = sum(c for _, c in self.items)
        var = sum(c * pair.variance() for pair, c in self.items)
        return float(k), float(var)

    def _align(self, h: float) -> float:
        """Shrink h so that the lattice of the most numerous atomic pair lies on the grid."""
        best: tuple[int, float] | None = None
        for pair, count in self.items:
            a = pair.lattice()
            # a lattice finer than the grid needs no alignment (and must not shrink h)
            if a is not None and a >= h and (best is None or count > best[0]):
                best = (count, a)
        if best is None:
            return h
        a = best[1]
        steps = a / h * (1.0 - 1e-12)
        if not math.isfinite(steps):  # a lattice beyond the float range: nothing to align
            return h
        return a / math.ceil(steps)

    def _initial_h(self, eps_hat: float, delta: float) -> float:
        k, var = self._spread()
        s = math.sqrt(var / k) if k > 0 and var > 0 else max(eps_hat, 1e-3)
        z = math.sqrt(2.0 * max(math.log(1.0 / max(delta, 1e-300)), 1.0))
        scale = max(eps_hat, math.sqrt(var), 1e-3)
        h = s * math.sqrt(8.0 * self.target_relative_error * scale) / z
        h = min(h, s / 4.0, scale / 16.0)
        # never start with more than 2^18 bins over the composed range
        width = self._width()
        if not math.isfinite(width):
            raise NumericalError("the composed privacy loss spans more than the float range")
        return self._align(_ladder(max(h, width / 2**18, 1e-9)))

    # -- evaluation --------------------------------------------------------------------------------
    def plds(
        self, value_discretization: float, tilt: float = 0.0
    ) -> tuple[DiscretePLD, DiscretePLD]:
        """The (pessimistic, optimistic) composed PLDs at grid spacing h and the given tilt."""
        h = _validate.positive("value_discretization", value_discretization)
        if any(not pair.loss_bound() / h < _MAX_NODES for pair, _ in self._side_items(True)):
            # grid indices (loss/h) must fit in int64, and phases/alignments in floats
            raise NumericalError(
                f"a privacy loss beyond {_MAX_NODES:g} grid steps of {h!r} is not discretised"
            )
        key = (h, float(tilt))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        out = []
        for pess in (True, False):
            parts = _group_plds(self._side_items(pess), h, tilt, pess, self.tail)
            out.append(_compose_groups(parts, self.tail))
        result = (out[0], out[1])
        self._cache[key] = result
        return result

    def _optimistic_pld(self, h: float, tilt: float, coarsen: float) -> DiscretePLD:
        """The optimistic composed PLD alone (half the work of :meth:`plds`), of the items with
        their pairs replaced by dominated ones (``DominatingPair.weaker``, relative step ``coarsen``):
        fewer distinct groups, and still a lower bound of the exact composition."""
        if coarsen == 0.0:
            hit = self._cache.get((h, float(tilt)))
            if hit is not None:
                return hit[1]
        merged: dict[DominatingPair, int] = {}
        for pair, count in self._side_items(False):
            weaker = pair.weaker(coarsen)
            merged[weaker] = merged.get(weaker, 0) + count
        parts = _group_plds(tuple(merged.items()), h, tilt, False, self.tail)
        return _compose_groups(parts, self.tail)

    def lower_epsilon(self, delta: float, coarsen: float = 0.1) -> float:
        """A quick lower bound on the exact ε(δ) of the composed pairs: one optimistic pass at the
        initial grid for ``target_relative_error`` (no refinement, no pessimistic side), with
        every pair of an ordered family (Gaussian μ, Laplace ε0, binary randomized response ε)
        first lowered onto a geometric grid of relative step ``coarsen`` — a dominated pair, so
        the bound stays valid while equal pairs merge into few groups. It decides cheaply that
        this analysis cannot beat another one."""
        d = _validate.real("delta", delta)
        if not 0.0 <= d <= 1.0:
            raise InvalidParameter(f"delta must be in [0, 1], got {d!r}")
        if not self.items or d >= 1.0:
            return 0.0
        if d < self.inf_mass:
            return math.inf
        eps_hat, lam = self._chernoff_epsilon(d)
        if eps_hat == 0.0 or math.isinf(eps_hat):
            return 0.0
        h = self.value_discretization or self._initial_h(eps_hat, d)
        return float(self._optimistic_pld(h, lam, coarsen).epsilon(d))

    def lower_delta(self, epsilon: float, coarsen: float = 0.1) -> float:
        """A quick lower bound on the exact δ(ε) (see :meth:`lower_epsilon`)."""
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        if not self.items:
            return 0.0
        p_inf = self.inf_mass
        if e == math.inf or p_inf >= 1.0:
            return p_inf
        lam = self._chernoff_tilt(e)
        log_d = float(np.min(self._chernoff_log_delta(e)))
        if log_d < -700.0:
            return p_inf
        d_hat = min(0.5, max(math.exp(min(max(log_d, -700.0), 0.0)), 1e-300))
        h = self.value_discretization or self._initial_h(max(e, 1e-3), d_hat)
        return float(self._optimistic_pld(h, lam, coarsen).delta(e))

    def _refine(
        self,
        measure: Callable[[DiscretePLD, DiscretePLD], tuple[float, float]],
        h: float,
        tilt: float,
        floor: float,
    ) -> tuple[float, float]:
        """Evaluate (optimistic, pessimistic) values at grid spacings h, h′, … until their gap is
        at most target·value + floor, the predicted grid exceeds :data:`MAX_BINS`, or after
        :data:`MAX_REFINEMENTS` steps. The next h assumes the gap shrinks like h^p, with p
        estimated from the last two steps (p ∈ [1/2, 2], 2 at first)."""
        lo, hi = 0.0, math.inf
        history: list[tuple[float, float]] = []
        for _ in range(MAX_REFINEMENTS + 1):
            try:
                pess, opt = self.plds(h, tilt)
            except NumericalError:
                if self.value_discretization is not None or not history:
                    raise
                break
            lo, hi = measure(pess, opt)
            width = hi - lo
            if (
                self.value_discretization is not None
                or hi == 0.0
                or math.isinf(hi)
                or width <= self.target_relative_error * hi + floor
            ):
                break
            history.append((h, width))
            p = 2.0
            if len(history) >= 2:
                (h1, w1), (h2, w2) = history[-2], history[-1]
                if w2 >= w1:
                    break  # refining does not help (e.g. the gap is the truncated tail mass)
                p = min(2.0, max(0.5, math.log(w1 / w2) / math.log(h1 / h2)))
            factor = (0.8 * self.target_relative_error * hi / width) ** (1.0 / p)
            h_next = self._align(_ladder(h * min(0.7, max(0.05, factor))))
            if max(pess.data.size, opt.data.size) * h / h_next > MAX_BINS:
                break
            h = h_next
        return lo, hi

    def epsilon_bracket(self, delta: float) -> tuple[float, float]:
        """(ε_optimistic, ε_pessimistic) at δ: the exact ε(δ) of the composition lies between."""
        d = _validate.real("delta", delta)
        if not 0.0 <= d <= 1.0:
            raise InvalidParameter(f"delta must be in [0, 1], got {d!r}")
        if not self.items or d >= 1.0:
            return 0.0, 0.0
        if d < self.inf_mass:
            return math.inf, math.inf
        eps_hat, lam = self._chernoff_epsilon(d)
        if eps_hat == 0.0:
            return 0.0, 0.0
        if math.isinf(eps_hat):
            # δ = P[L = ∞] exactly: ε is the largest finite loss of the composition
            eps_hat = max(pair.loss_bound() * c for pair, c in self.items) or 1.0
        h = self.value_discretization or self._initial_h(eps_hat, d)
        lo, hi = self._refine(lambda p, o: (o.epsilon(d), p.epsilon(d)), h, lam, 1e-12)
        return float(lo), float(hi)

    def epsilon(self, delta: float) -> float:
        """Smallest ε with (ε, δ)-DP certified by the PLD (pessimistic; a valid upper bound)."""
        return self.epsilon_bracket(delta)[1]

    def delta_bracket(self, epsilon: float) -> tuple[float, float]:
        """(δ_optimistic, δ_pessimistic) at ε: the exact δ(ε) of the composition lies between."""
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        p_inf = self.inf_mass
        if not self.items:
            return 0.0, 0.0
        if e == math.inf or p_inf >= 1.0:
            return p_inf, p_inf
        lam = self._chernoff_tilt(e)
        log_d = float(np.min(self._chernoff_log_delta(e)))
        if log_d < -700.0:
            # δ(ε) − p∞ ≤ c(λ)e^{−λε}E_P[e^{λL}] (CKS20-type, with c(λ) = max_x (1 − e^{−x})e^{−λx})
            # is already below e^{−700}: report it (padded against rounding) rather than
            # discretise losses this far out in the tail.
            return p_inf, min(1.0, _math.up(p_inf + _math.exp_up(log_d + 1e-9 * -log_d)))
        d_hat = min(0.5, max(math.exp(min(max(log_d, -700.0), 0.0)), 1e-300))  # log_d may be inf
        h = self.value_discretization or self._initial_h(max(e, 1e-3), d_hat)
        # the truncated tails (each ≤ tail, moved to +∞) put a floor under the gap
        lo, hi = self._refine(lambda p, o: (o.delta(e), p.delta(e)), h, lam, 1e3 * self.tail)
        return float(lo), float(hi)

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ε by the PLD (pessimistic; a valid upper bound)."""
        return self.delta_bracket(epsilon)[1]


def compose_pld(
    items: Iterable[object],
    *,
    value_discretization: float | None = None,
    target_relative_error: float = 1e-4,
    tail: float = DEFAULT_TAIL,
) -> PLDResult:
    """The PLD accountant: the tight (ε, δ) of the composition of ``items``.

    Args:
        items: mechanisms or guarantees with a registered dominating pair, or ``(item, count)``
            pairs (count ≥ 0). Identical pairs are grouped and self-composed by one FFT power.
        value_discretization: the grid spacing h; by default chosen (and refined) automatically
            so that the optimistic/pessimistic bracket is within ``target_relative_error``.
        target_relative_error: the relative accuracy aimed at (default 1e-4).
        tail: bound on each truncated tail mass (handled pessimistically).

    Returns:
        A :class:`PLDResult` answering ``epsilon(delta)``, ``delta(epsilon)`` and the brackets.

    Raises:
        NotImplied: an item has no registered dominating pair (the message names it).
        InvalidParameter: a count is negative or not an integer, or a parameter is out of range.

    Examples:
        >>> import sharpdp as sdp
        >>> from sharpdp.accounting.pld.loss import compose_pld
        >>> r = compose_pld([(sdp.Laplace(scale=10.0), 100)])
        >>> lo, hi = r.epsilon_bracket(1e-6)
        >>> hi - lo <= 1e-4 * hi
        True
    """
    t = _validate.positive("target_relative_error", target_relative_error)
    tl = _validate.positive("tail", tail)
    if not tl < 1e-6:
        raise InvalidParameter(f"tail must be < 1e-6, got {tl!r}")
    h = None
    if value_discretization is not None:
        h = _validate.positive("value_discretization", value_discretization)
    pairs = _normalise_items(items)
    for pair, _ in pairs:
        if not pair.loss_bound() <= MAX_LOSS:
            raise NotImplied(
                f"{pair!r} has finite losses up to {pair.loss_bound()!r}; the PLD grid handles "
                f"|loss| ≤ {MAX_LOSS:g} (such a pair is not private in any useful sense)"
            )
    return PLDResult(pairs, h, t, tl)
