"""Divergences of a pair of exact laws (P, Q), in log space, one order at a time.

Notation (``docs/conventions.md``): Z(y) = log P(y)/Q(y) on the common support; ``p_only`` is
P's mass where Q has none (there Z = +∞), ``q_only`` Q's mass where P has none. For one order
(P‖Q):

* δ(ε) = Σ_{Z>ε} P(y)(1 − e^{ε−Z(y)}) + p_only, each term as exp(log P + log(1 − e^{−(Z−ε)}))
  (no cancellation);
* D_α(P‖Q) = log E_P[e^{λZ}]/λ, λ = α − 1, infinite when p_only > 0. Since E_P[e^{−Z}] = 1 − q_only,

      E_P[e^{λZ}] − 1 = Σ P·(φ(λZ) + λ·φ(−Z)) + λ·q_only,   φ(x) = e^x − 1 − x ≥ 0,

  a sum of non-negative terms (the identity of :func:`sharpdp._math.renyi_of_finite_pair`, extended
  to a Q with mass outside P's support and vectorised), so nearby laws lose no accuracy beyond the
  rounding of Z itself (≈ 1e-16 absolute, from the log-probabilities); D_1 = KL =
  Σ P·φ(−Z) + q_only. When λ·max|Z| > ½ the direct log-sum-exp is used (no cancellation there);
* D_∞(P‖Q) = max Z, and the loss range [min Z, max Z].

:class:`FinitePair` evaluates these exactly (up to float rounding). :class:`ShiftPair`, for two
shifts of one integer noise, evaluates them on a finite window and adds rigorous upper bounds for
the two infinite tails, so its δ and D_α are upper bounds that exceed the truth by at most the
(negligible, ≤ 1e-60 relative) tail mass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from sharpdp import _math
from sharpdp.audit._laws import MAX_OUTCOMES, FiniteLaw, IntegerNoise, Law, ShiftLaw
from sharpdp.errors import InvalidParameter, NumericalError

__all__ = ["FinitePair", "Pair", "ShiftPair", "make_pair"]

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]

_GRID_POINTS = 96  # at most this many loss values are offered as ε test points


class Pair(Protocol):
    """What the reports need from a pair of laws (one order at a time: ``forward`` is P‖Q)."""

    @property
    def size(self) -> int:
        """Number of outcomes enumerated."""
        ...

    def loss_range(self) -> tuple[float, float]:
        """(inf Z over Q's support, sup Z over P's support); ±inf when the supports differ."""
        ...

    def delta_one(self, epsilon: float, forward: bool) -> float:
        """Hockey-stick divergence δ(ε) of one order."""
        ...

    def renyi_one(self, alpha: float, forward: bool) -> float:
        """Rényi divergence of one order (α = 1: KL; α = ∞: max-divergence)."""
        ...

    def loss_values(self) -> FloatArray:
        """Some of the finite loss values |Z| (breakpoints of δ(ε)), at most ``_GRID_POINTS``."""
        ...


# -- kernels ----------------------------------------------------------------------------------------

_INV_FACTORIALS = [1.0 / math.factorial(k) for k in range(21)]


def _phi_small(x: FloatArray) -> FloatArray:
    """φ(x) = e^x − 1 − x for |x| ≤ ½ by its Taylor series to x^20 (error < 1e-22 relative)."""
    s = np.full_like(x, _INV_FACTORIALS[20])
    for k in range(19, 1, -1):
        s = s * x + _INV_FACTORIALS[k]
    return np.asarray(s * x * x)


def _p_phi_neg(lp: FloatArray, lq: FloatArray, z: FloatArray) -> FloatArray:
    """P·φ(−Z) = Q − P + P·Z, elementwise, without cancellation or overflow."""
    small = np.abs(z) < 0.5
    p = np.exp(lp)
    out = np.empty_like(z)
    out[small] = p[small] * _phi_small(-z[small])
    big = ~small
    out[big] = np.exp(lq[big]) - p[big] + p[big] * z[big]
    return np.maximum(out, 0.0)


def _log1mexp(x: FloatArray) -> FloatArray:
    """log(1 − e^{−x}) for x > 0 (Mächler's switch at ln 2)."""
    out = np.empty_like(x)
    small = x <= math.log(2.0)
    out[small] = np.log(-np.expm1(-x[small]))
    out[~small] = np.log1p(-np.exp(-x[~small]))
    return out


def _delta_sum(lp: FloatArray, z: FloatArray, epsilon: float) -> float:
    """Σ_{Z>ε} P(1 − e^{ε−Z})."""
    above = z > epsilon
    if not above.any():
        return 0.0
    return float(np.sum(np.exp(lp[above] + _log1mexp(z[above] - epsilon))))


def _s_small(lp: FloatArray, lq: FloatArray, z: FloatArray, lam: float) -> float:
    """Σ P·(φ(λZ) + λφ(−Z)), for λ·max|Z| ≤ ½ (non-negative terms)."""
    return float(np.sum(np.exp(lp) * _phi_small(lam * z))) + lam * float(
        np.sum(_p_phi_neg(lp, lq, z))
    )


def _log_pe(lp: FloatArray, z: FloatArray, lam: float) -> float:
    """log Σ P·e^{λZ} (log-sum-exp; +inf when λZ exceeds the float range)."""
    with np.errstate(over="ignore", invalid="ignore"):
        terms = lp + lam * z
    terms = np.where(np.isnan(terms), -np.inf, terms)  # P = 0 (lp = −inf) against λZ = +inf
    top = float(np.max(terms))
    if math.isinf(top):
        return top
    with np.errstate(over="ignore"):  # terms far below the top: e^{−inf} = 0
        return top + math.log(float(np.sum(np.exp(terms - top))))


def _renyi_finite(
    lp: FloatArray, lq: FloatArray, z: FloatArray, alpha: float, q_only: float
) -> float:
    """D_α(P‖Q), 1 ≤ α < ∞, of an exact finite pair with P ≪ Q (identity in the module doc)."""
    if alpha == 1.0:
        return float(np.sum(_p_phi_neg(lp, lq, z))) + q_only
    lam = alpha - 1.0
    if lam * float(np.max(np.abs(z))) <= 0.5:
        return math.log1p(_s_small(lp, lq, z, lam) + lam * q_only) / lam
    return _log_pe(lp, z, lam) / lam


def _grid(values: FloatArray) -> FloatArray:
    v = np.unique(np.abs(values[np.isfinite(values)]))
    if v.size > _GRID_POINTS:
        idx = np.linspace(0, v.size - 1, _GRID_POINTS).round().astype(np.intp)
        v = v[idx]
    return np.asarray(v)


# -- finite pairs ---------------------------------------------------------------------------------


class FinitePair:
    """Two laws on one finite outcome set (aligned log-probability vectors)."""

    __slots__ = ("_lp", "_lq", "_p_only", "_q_only", "_z", "size")

    def __init__(self, log_p: FloatArray, log_q: FloatArray) -> None:
        fp, fq = np.isfinite(log_p), np.isfinite(log_q)
        common = fp & fq
        self._lp = log_p[common]
        self._lq = log_q[common]
        self._z = self._lp - self._lq
        self._p_only = float(np.sum(np.exp(log_p[fp & ~fq])))
        self._q_only = float(np.sum(np.exp(log_q[fq & ~fp])))
        self.size = int(log_p.size)

    def _order(self, forward: bool) -> tuple[FloatArray, FloatArray, FloatArray, float, float]:
        if forward:
            return self._lp, self._lq, self._z, self._p_only, self._q_only
        return self._lq, self._lp, -self._z, self._q_only, self._p_only

    def loss_range(self) -> tuple[float, float]:
        hi = math.inf if self._p_only > 0 else float(np.max(self._z, initial=-math.inf))
        lo = -math.inf if self._q_only > 0 else float(np.min(self._z, initial=math.inf))
        return lo, hi

    def delta_one(self, epsilon: float, forward: bool) -> float:
        lp, _, z, p_only, _ = self._order(forward)
        if epsilon == math.inf:
            return p_only
        return _delta_sum(lp, z, epsilon) + p_only

    def renyi_one(self, alpha: float, forward: bool) -> float:
        lp, lq, z, p_only, q_only = self._order(forward)
        if p_only > 0.0:
            return math.inf
        if alpha == math.inf:
            return max(0.0, float(np.max(z)))
        return max(0.0, _renyi_finite(lp, lq, z, alpha, q_only))

    def loss_values(self) -> FloatArray:
        return _grid(self._z)


def _align(p: FiniteLaw, q: FiniteLaw) -> tuple[FloatArray, FloatArray]:
    if p.outcomes is None or q.outcomes is None:
        if p.log_probabilities.size != q.log_probabilities.size:
            raise InvalidParameter(
                "the two laws have different numbers of outcomes "
                f"({p.log_probabilities.size} and {q.log_probabilities.size}) and no labels"
            )
        return p.log_probabilities, q.log_probabilities
    index: dict[object, int] = {}
    for label in p.outcomes + q.outcomes:
        index.setdefault(label, len(index))
    lp = np.full(len(index), -np.inf)
    lq = np.full(len(index), -np.inf)
    lp[[index[o] for o in p.outcomes]] = p.log_probabilities
    lq[[index[o] for o in q.outcomes]] = q.log_probabilities
    return lp, lq


# -- shifted integer noise ------------------------------------------------------------------------


def _log_geometric_tail(log_s: Callable[[IntArray], FloatArray], edge: int, step: int) -> float:
    """log of an upper bound on Σ_{j≥1} s(edge + j·step), for s log-concave and decreasing there.

    Log-concavity makes the ratios s(y + step)/s(y) non-increasing along the tail, so the terms are
    at most s₁rᵏ, with s₁ the first term and r the first ratio: the sum is ≤ s₁/(1 − r), which is
    exact for a geometric sequence (the discrete Laplace's tails).
    """
    l1, l2 = (float(v) for v in log_s(np.array([edge + step, edge + 2 * step], dtype=np.int64)))
    if l1 == -math.inf:
        return -math.inf
    if not l2 < l1:
        raise NumericalError(
            f"tail bound: the summed sequence does not decrease beyond {edge} (please report it)"
        )
    return l1 - math.log(-math.expm1(l2 - l1))


def _phi(x: float) -> float:
    """φ(x) = e^x − 1 − x for a scalar (inf at ±inf)."""
    return math.inf if math.isinf(x) else _math.expm1mx(x)


def _mass_phi(log_mass: float, x: float) -> float:
    """e^{log_mass}·φ(x) without overflow: past x = 700, the upper bound e^{log_mass + x} ≥ it."""
    if log_mass == -math.inf:
        return 0.0
    if x > 700.0:
        return _exp(log_mass + x)
    return _exp(log_mass) * _phi(x)


def _exp(log_x: float) -> float:
    return math.exp(log_x) if log_x < 709.0 else math.inf


class _Tail:
    """One infinite tail of a shift pair: its P-mass (log) and the range of Z over it."""

    __slots__ = ("edge", "log_mass", "step", "z_hi", "z_lo")

    def __init__(self, edge: int, step: int, log_mass: float, z_edge: float, limit: float) -> None:
        self.edge, self.step, self.log_mass = edge, step, log_mass
        # Z is monotone: on the tail it lies between its value at the window's edge and its limit.
        self.z_lo, self.z_hi = min(z_edge, limit), max(z_edge, limit)


class ShiftPair:
    """P = law of a + Z, Q = law of b + Z, for symmetric log-concave integer noise Z.

    The privacy loss Z(y) = log p(y − a) − log p(y − b) is monotone in y (shifts of a log-concave
    law have monotone likelihood ratios), so over each infinite tail beyond the enumerated window it
    lies between its value at the window's edge and its limit at ±∞ (``noise.ratio_limit``).
    Each tail's contribution to a sum Σ P·g(Z) is bounded by the smaller of

    * A: (Σ_tail P)·sup_tail g(Z), where g is convex so the sup is at an end of Z's range (exact
      for the discrete Laplace, whose Z is constant on both tails);
    * B: sums of sequences that are log-concave beyond the window (P, Q, P·e^{λZ}, P·|Z|; true for
      both supported families, their log-pmfs being linear, resp. quadratic, there), each bounded
      by :func:`_log_geometric_tail`, with φ(λz) + λφ(−z) ≤ e^{λz} + λe^{−z} and
      φ(−z) ≤ e^{−z} + |z| (finite even when Z is unbounded, as for the discrete Gaussian).

    Hence δ(ε) and D_α are upper bounds; the window makes the excess negligible (it is zero up to
    rounding for the discrete Laplace, below 1e-60 relative for the discrete Gaussian).
    """

    __slots__ = ("_a", "_b", "_hi", "_lo", "_noise")

    def __init__(self, noise: IntegerNoise, a: int, b: int) -> None:
        self._noise, self._a, self._b = noise, a, b
        w = noise.width
        self._lo, self._hi = min(a, b) - w, max(a, b) + w
        self._check_size(self._lo, self._hi)

    @property
    def size(self) -> int:
        return self._hi - self._lo + 1

    def _check_size(self, lo: int, hi: int) -> None:
        if hi - lo + 1 > MAX_OUTCOMES:
            raise InvalidParameter(
                f"the exact audit of {self._noise!r} at shifts {self._a}, {self._b} needs a window "
                f"of {hi - lo + 1} integers; at most {MAX_OUTCOMES} are enumerated"
            )

    def _centres(self, forward: bool) -> tuple[int, int]:
        return (self._a, self._b) if forward else (self._b, self._a)

    def _window(self, lo: int, hi: int, forward: bool) -> tuple[FloatArray, FloatArray, FloatArray]:
        a, b = self._centres(forward)
        y = np.arange(lo, hi + 1, dtype=np.int64)
        n = self._noise
        return n.log_pmf(y - a), n.log_pmf(y - b), n.log_ratio(y, a, b)

    def _tails(self, lo: int, hi: int, forward: bool, z: FloatArray) -> tuple[_Tail, _Tail]:
        a, b = self._centres(forward)
        right = self._noise.ratio_limit(a - b)  # lim_{y→+∞} Z; the limit at −∞ is −right

        def log_p(y: IntArray) -> FloatArray:
            return self._noise.log_pmf(y - a)

        return (
            _Tail(hi, 1, _log_geometric_tail(log_p, hi, 1), float(z[-1]), right),
            _Tail(lo, -1, _log_geometric_tail(log_p, lo, -1), float(z[0]), -right),
        )

    def _log_tail_sum(
        self, tail: _Tail, forward: bool, log_term: Callable[[IntArray, int, int], FloatArray]
    ) -> float:
        a, b = self._centres(forward)
        return _log_geometric_tail(lambda y: log_term(y, a, b), tail.edge, tail.step)

    def _log_q(self, y: IntArray, a: int, b: int) -> FloatArray:
        return self._noise.log_pmf(y - b)

    def _log_p_abs_z(self, y: IntArray, a: int, b: int) -> FloatArray:
        with np.errstate(divide="ignore"):
            return np.asarray(
                self._noise.log_pmf(y - a) + np.log(np.abs(self._noise.log_ratio(y, a, b)))
            )

    def loss_range(self) -> tuple[float, float]:
        _, _, z = self._window(self._lo, self._hi, True)
        right = self._noise.ratio_limit(self._a - self._b)
        return min(float(np.min(z)), -right, right), max(float(np.max(z)), -right, right)

    def delta_one(self, epsilon: float, forward: bool) -> float:
        if epsilon == math.inf:
            return 0.0  # Z is finite everywhere
        lp, _, z = self._window(self._lo, self._hi, forward)
        value = _delta_sum(lp, z, epsilon)
        # Σ_tail P(1 − e^{ε−Z})_+ ≤ (Σ_tail P)(1 − e^{ε − sup_tail Z})_+ (exact for constant Z).
        for tail in self._tails(self._lo, self._hi, forward, z):
            if tail.z_hi > epsilon:
                factor = 1.0 if math.isinf(tail.z_hi) else -math.expm1(epsilon - tail.z_hi)
                value += _exp(tail.log_mass) * factor
        return value

    def renyi_one(self, alpha: float, forward: bool) -> float:
        if alpha == math.inf:
            lo, hi = self.loss_range()
            return max(0.0, hi if forward else -lo)
        if alpha == 1.0:
            lp, lq, z = self._window(self._lo, self._hi, forward)
            kl = float(np.sum(_p_phi_neg(lp, lq, z)))
            for tail in self._tails(self._lo, self._hi, forward, z):
                bound_a = max(
                    _mass_phi(tail.log_mass, -tail.z_lo), _mass_phi(tail.log_mass, -tail.z_hi)
                )
                bound_b = _exp(self._log_tail_sum(tail, forward, self._log_q)) + _exp(
                    self._log_tail_sum(tail, forward, self._log_p_abs_z)
                )
                kl += min(bound_a, bound_b)
            return max(0.0, kl)
        lam = alpha - 1.0
        a, b = self._centres(forward)
        # P·e^{λZ} = P^α Q^{1−α} peaks near m = a + λ(a − b) for the discrete Gaussian: cover it.
        m = a + lam * (a - b)
        w = self._noise.width
        lo = min(self._lo, math.floor(m) - w)
        hi = max(self._hi, math.ceil(m) + w)
        self._check_size(lo, hi)
        lp, lq, z = self._window(lo, hi, forward)
        tails = self._tails(lo, hi, forward, z)

        def log_pe(y: IntArray, a: int, b: int) -> FloatArray:
            return np.asarray(self._noise.log_pmf(y - a) + lam * self._noise.log_ratio(y, a, b))

        def g(zz: float) -> float:  # φ(λz) + λφ(−z), convex, 0 at 0
            return _phi(lam * zz) + lam * _phi(-zz)

        if lam * float(np.max(np.abs(z))) <= 0.5:
            s = _s_small(lp, lq, z, lam)
            for tail in tails:
                bound_a = _exp(tail.log_mass) * max(g(tail.z_lo), g(tail.z_hi))
                bound_b = _exp(self._log_tail_sum(tail, forward, log_pe)) + lam * _exp(
                    self._log_tail_sum(tail, forward, self._log_q)
                )
                s += min(bound_a, bound_b)
            return max(0.0, math.log1p(s) / lam)
        h = _log_pe(lp, z, lam)
        for tail in tails:
            log_a = tail.log_mass + lam * tail.z_hi
            log_b = self._log_tail_sum(tail, forward, log_pe)
            h = _math.log_add_exp(h, min(log_a, log_b))
        return max(0.0, h / lam)

    def loss_values(self) -> FloatArray:
        _, _, z = self._window(self._lo, self._hi, True)
        return _grid(z)


def make_pair(p: Law, q: Law) -> Pair:
    """The pair object for two laws (both finite, or two shifts of the same noise)."""
    if isinstance(p, FiniteLaw) and isinstance(q, FiniteLaw):
        lp, lq = _align(p, q)
        return FinitePair(lp, lq)
    if isinstance(p, ShiftLaw) and isinstance(q, ShiftLaw):
        if p.noise != q.noise:
            raise InvalidParameter(
                f"the two laws shift different noises ({p.noise!r} and {q.noise!r})"
            )
        return ShiftPair(p.noise, p.shift, q.shift)
    raise InvalidParameter(f"cannot compare a {type(p).__name__} with a {type(q).__name__}")
