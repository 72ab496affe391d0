"""Atomic groups summed exactly around the FFT composition of the rest.

A group of a finite pair (randomized response, pure or approximate DP) whose atoms are off the grid
can only be rounded down by the optimistic discretisation: an error of order h per group, which
makes certified brackets (above all for δ(ε), whose accuracy is relative to δ) need very fine
grids. When the atomic groups' composed law has few atoms, it is kept exact instead: with R the
rest of the composition (discretised and composed by FFT, pessimistically and optimistically) and
the atoms (l_a, p_a) plus a mass p∞ at +∞ of the atomic groups,

    δ(ε) = p∞ + Σ_a p_a · δ_R(ε − l_a)

(condition on the atomic groups' outcome; δ_R includes R's own mass at +∞). Each δ_R is bracketed
at every real argument (:meth:`DiscretePLD.deltas`), the masses are bracketed in closed form, so
the sum is bracketed too; ε(δ) is the root of this non-increasing function, found by bisection and
checked by evaluation. [The decomposition is the composition theorem of privacy loss distributions,
Zhu–Dong–Wang 2022 (arXiv 2106.08567), Thm 10, applied to the atomic part.]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sharpdp.accounting.pld.discrete import DiscretePLD, _dot
from sharpdp.accounting.pld.pairs import DominatingPair, FinitePair
from sharpdp.errors import NumericalError

FloatArray = npt.NDArray[np.float64]
U = 2.0**-53

#: Most atoms of the composed atomic groups summed exactly (each ε or δ evaluation is a vectorised
#: pass over them).
MAX_OUTER_ATOMS = 16384


def _atomic(pair: DominatingPair) -> bool:
    return isinstance(pair, FinitePair) and pair.tail_low == 0.0 and pair.tail_high == 0.0


def _group_size(pair: FinitePair, count: int) -> int:
    """How many atoms the count-fold law of ``pair`` has (multisets of its atoms)."""
    m = int(np.count_nonzero(pair._arrays[1] > 0.0))
    return math.comb(count + m - 1, m - 1) if m > 0 else 1


def split(
    items: tuple[tuple[DominatingPair, int], ...],
) -> tuple[tuple[tuple[FinitePair, int], ...], tuple[tuple[DominatingPair, int], ...]]:
    """(atomic groups summed exactly, the rest): every atomic group, when their composed law has
    at most :data:`MAX_OUTER_ATOMS` atoms; else nothing (an atomic group left on the grid keeps
    the optimistic side's O(h) error, so summing only some of them outside costs time for little
    gain — measured: slower on 100-item mixes). The rest may be empty: a composition of atomic
    groups alone is then summed exactly."""
    outer: list[tuple[FinitePair, int]] = []
    rest: list[tuple[DominatingPair, int]] = []
    size = 1
    for pair, count in items:
        if isinstance(pair, FinitePair) and _atomic(pair):
            size *= _group_size(pair, count)
            if size > MAX_OUTER_ATOMS:
                return (), items
            outer.append((pair, count))
        else:
            rest.append((pair, count))
    return tuple(outer), tuple(rest)


@dataclass(frozen=True)
class OuterAtoms:
    """The composed law of the atomic groups: atoms (``losses``, with P-masses between
    ``mass_lo`` and ``mass_hi``), the mass at +∞ between ``inf_lo`` and ``inf_hi``, and
    ``margin``: how far the float losses may be from the exact ones."""

    losses: FloatArray
    mass_lo: FloatArray
    mass_hi: FloatArray
    inf_lo: float
    inf_hi: float
    margin: float

    @property
    def max_loss(self) -> float:
        return float(np.max(np.abs(self.losses))) + self.margin if self.losses.size else 0.0


def outer_atoms(groups: tuple[tuple[FinitePair, int], ...]) -> OuterAtoms:
    """The atoms of the composed atomic groups, with error bounds.

    The c-fold law of a pair with atoms (l_i, m_i) puts mass c!/Π n_i! · Π m_i^{n_i} at Σ n_i l_i
    for every multiset (n_i) of size c; groups compose by adding losses and multiplying masses.
    Log-masses are computed with ``lgamma`` (a few ulps of its value each) and the masses' own
    relative errors (``rel_err`` per atom, c-fold); the bound is carried as a relative interval.
    """
    from scipy.special import gammaln

    losses = np.zeros(1)
    log_mass = np.zeros(1)
    log_err = np.zeros(1)
    log_finite = 0.0  # log Π (1 − p∞_i)^{c_i}
    margin = 0.0
    for pair, count in groups:
        ls = np.array([x for x, m in zip(pair.losses, pair.masses, strict=True) if m > 0.0])
        ms = np.array([m for m in pair.masses if m > 0.0])
        g_loss, lg_counts, log_m, abs_log_m = _group_law(ls, np.log(ms), count)
        lg = gammaln(count + 1.0) - lg_counts + log_m
        # lgamma errs by a few ulps of its value, log(m) by an ulp, the sums by n ulps; the
        # masses by rel_err each (c of them)
        g_err = 64 * U * (8.0 + gammaln(count + 1.0) + lg_counts + abs_log_m) + count * math.log1p(
            pair.rel_err
        )
        losses = (losses[:, None] + g_loss[None, :]).reshape(-1)
        log_mass = (log_mass[:, None] + lg[None, :]).reshape(-1)
        log_err = (log_err[:, None] + g_err[None, :]).reshape(-1)
        log_finite += count * math.log1p(-pair.inf_mass) if pair.inf_mass < 1.0 else -math.inf
        margin += 8 * U * count * float(np.max(np.abs(ls)) if ls.size else 0.0)
    margin += 8 * U * ((float(np.max(np.abs(losses))) if losses.size else 0.0) + 1.0)
    with np.errstate(under="ignore"):
        mass_hi = np.exp(log_mass + log_err) * (1.0 + 4 * U)
        mass_lo = np.exp(log_mass - log_err) * (1.0 - 4 * U)
    inf_hi = min(1.0, -math.expm1(log_finite) * (1.0 + 1e-12) + (1e-300 if log_finite < 0 else 0.0))
    inf_lo = max(0.0, -math.expm1(log_finite) * (1.0 - 1e-12))
    return OuterAtoms(losses, mass_lo, mass_hi, inf_lo, inf_hi, margin)


def _group_law(
    losses: FloatArray, log_masses: FloatArray, count: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Over every multiset (n_1, …, n_m) of the m atoms with Σ nᵢ = ``count``: Σ nᵢ lᵢ,
    Σ lgamma(nᵢ + 1), Σ nᵢ log mᵢ and Σ nᵢ |log mᵢ| (one entry per multiset; none when
    m = 0 < count, a pair without finite atoms).

    The multisets are built atom by atom (each takes j = 0..what is left; the last takes the
    rest), carrying only these four sums, and a multiset leaves the working set once it is
    complete: the work is O(m + number of multisets) rows of numpy, never an m-column matrix (a
    discrete Laplace pair of sensitivity Δ has 2Δ + 1 atoms).
    """
    from scipy.special import gammaln

    m = losses.size
    if m == 0:
        empty = np.zeros(0 if count else 1)
        return empty, empty.copy(), empty.copy(), empty.copy()
    if count == 1:  # each atom alone: lgamma(2) = lgamma(1) = 0
        return losses.copy(), np.zeros(m), log_masses.copy(), np.abs(log_masses)
    used = np.zeros(1, dtype=np.int64)
    sums = np.zeros((4, 1))
    done: list[FloatArray] = []
    for i in range(m - 1):
        left = count - used
        rep = np.repeat(np.arange(used.size), left + 1)
        j = np.arange(rep.size) - np.repeat(np.cumsum(left + 1) - (left + 1), left + 1)
        jf = j.astype(np.float64)
        grown = sums[:, rep] + np.stack(
            [
                jf * losses[i],
                gammaln(jf + 1.0),
                jf * log_masses[i],
                jf * abs(log_masses[i]),
            ]
        )
        used = used[rep] + j
        full = used == count
        done.append(grown[:, full])
        sums, used = grown[:, ~full], used[~full]
    jf = (count - used).astype(np.float64)
    last = sums + np.stack(
        [jf * losses[-1], gammaln(jf + 1.0), jf * log_masses[-1], jf * abs(log_masses[-1])]
    )
    out = np.concatenate([*done, last], axis=1)
    return out[0], out[1], out[2], out[3]


class WithAtoms:
    """The composition of a discretised law R (one side: pessimistic or optimistic) with exact
    atoms: δ(ε) = p∞ + Σ_a p_a δ_R(ε − l_a) bounded on that side (see the module docstring).
    Offers what the PLD's refinement asks of a :class:`DiscretePLD`: ``delta``, ``epsilon`` and
    ``data`` (R's bins, for the grid-size limit)."""

    def __init__(self, rest: DiscretePLD, atoms: OuterAtoms) -> None:
        self.rest = rest
        self.atoms = atoms
        self.pessimistic = rest.pessimistic
        self.data = rest.data
        #: the other side's composition on the same grid (the optimistic search starts from
        #: the pessimistic root)
        self.sibling: WithAtoms | None = None
        self._roots: dict[float, float] = {}

    def delta(self, epsilon: float) -> float:
        """δ(ε) bounded on this side, ε ≥ 0 (``inf``: the mass at +∞)."""
        a = self.atoms
        if epsilon == math.inf:
            inf_r = self.rest.inf_mass
            if self.pessimistic:
                return min(1.0, (a.inf_hi + float(a.mass_hi.sum()) * inf_r) * (1.0 + 8 * U))
            return max(0.0, (a.inf_lo + float(a.mass_lo.sum()) * inf_r) * (1.0 - 8 * U))
        n = a.losses.size
        if self.pessimistic:
            # the exact losses may exceed the float ones by the margin: evaluate lower
            dr = self.rest.deltas(epsilon - a.losses - a.margin)
            total = a.inf_hi + _dot(a.mass_hi, dr) * (1.0 + 2 * (n + 4) * U)
            return min(1.0, math.nextafter(total, math.inf) if total > 0.0 else 0.0)
        dr = self.rest.deltas(epsilon - a.losses + a.margin)
        total = a.inf_lo + _dot(a.mass_lo, dr) * (1.0 - 2 * (n + 4) * U)
        return max(0.0, min(1.0, total * (1.0 - 4 * U)))

    def deltas(self, ts: FloatArray) -> FloatArray:
        """:meth:`delta` at every ε ≥ 0 of ``ts`` (point by point: each is a sum over the atoms,
        itself vectorised)."""
        flat = np.asarray(ts, dtype=np.float64).ravel()
        return np.array([self.delta(float(t)) for t in flat], dtype=np.float64)

    def epsilon(self, delta: float) -> float:
        """ε(δ) on this side. Pessimistic: the least ε found with δ(ε) ≤ δ (checked), by
        bisection to a relative 1e-13. Optimistic: the largest ε found with δ(ε) > δ (checked:
        every smaller ε is excluded too, δ of the exact law being non-increasing), searched
        down from the pessimistic root of the same grid (``sibling``): below it the optimistic
        bound is sharp, while far below the tilt's design point its error allowance may swamp
        it (then 0, always a valid lower end)."""
        if delta not in self._roots:
            self._roots[delta] = self._root(delta)
        return self._roots[delta]

    def _root(self, delta: float) -> float:
        if not self.pessimistic:
            return self._optimistic_epsilon(delta)
        if self.delta(0.0) <= delta:
            return 0.0
        hi = self.atoms.max_loss + self._rest_top() + 1.0
        if self.delta(hi) > delta:
            return math.inf  # beyond every finite loss only the mass at +∞ is left
        return self._bisect(0.0, hi, delta)[1]

    def _bisect(self, lo: float, hi: float, delta: float) -> tuple[float, float]:
        """(lo, hi) with δ(lo) > delta ≥ δ(hi), narrowed to a relative 1e-13: regula falsi on
        log δ (Illinois variant: the end that stays has its value halved in the interpolation),
        every other step a bisection, so the bracket at least halves every two steps. Which end
        a point replaces is decided by comparing δ with ``delta`` itself."""
        f_lo = self._log_excess(lo, delta)
        f_hi = self._log_excess(hi, delta)
        side = 0
        for i in range(400):
            if hi - lo <= 1e-13 * hi + 1e-300:
                return lo, hi
            mid = 0.5 * (lo + hi)
            if i % 2 == 0 and math.isfinite(f_lo) and math.isfinite(f_hi) and f_lo > f_hi:
                x = lo + (hi - lo) * f_lo / (f_lo - f_hi)
                if lo < x < hi:
                    mid = x
            f_mid = self._log_excess(mid, delta)
            if f_mid > 0.0:
                lo, f_lo = mid, f_mid
                if side == 1:
                    f_hi *= 0.5
                side = 1
            else:
                hi, f_hi = mid, f_mid
                if side == -1:
                    f_lo *= 0.5
                side = -1
        raise NumericalError(
            f"the search for ε(δ = {delta!r}) did not converge"
        )  # pragma: no cover

    def _log_excess(self, epsilon: float, delta: float) -> float:
        """log δ(ε) − log ``delta`` for the interpolation, with its sign from the comparison of
        δ(ε) with ``delta`` itself: > 0 iff δ(ε) > ``delta`` (−inf where δ(ε) = 0)."""
        value = self.delta(epsilon)
        if value <= delta:
            return -math.inf if value <= 0.0 else min(math.log(value) - math.log(delta), 0.0)
        if delta <= 0.0:
            return math.inf
        return max(math.log(value) - math.log(delta), 1e-300)

    def _optimistic_epsilon(self, delta: float) -> float:
        top = self.atoms.max_loss + self._rest_top() + 1.0
        if self.delta(top) > delta:
            return top
        start = self.sibling.epsilon(delta) if self.sibling is not None else top
        if not math.isfinite(start):
            start = top
        h = self.rest.value_discretization
        above = start if self.delta(start) <= delta else top
        for k in range(44, -1, -1):  # steps below the start, growing from ~1e-13 to its size
            x = max(0.0, start - (start + h) * 2.0**-k)
            if self.delta(x) > delta:
                return self._bisect(x, above, delta)[0]
            above = x
            if x == 0.0:
                break
        return 0.0

    def _rest_top(self) -> float:
        r = self.rest
        return abs((r.offset + r.data.size) * r.value_discretization + r.phase) + r.loss_margin
