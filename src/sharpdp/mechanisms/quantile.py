"""Smith's interval exponential mechanism for a quantile, sampled exactly on a grid.

**The mechanism** [Smith 2011, STOC, "Privacy-preserving statistical estimation with optimal
convergence rates", §3 (the exponential-mechanism quantile); as implemented by Gillenwater, Joseph,
Kulesza, ICML 2021, ``dp_multiq/ind_exp.py``]. Data x₁ ≤ … ≤ x_n clamped to [L, U]; with
x₍₀₎ = L and x₍ₙ₊₁₎ = U, the continuous output y ∈ [L, U] has density

    p(y) ∝ exp(c·u(y)),   u(y) = −|rank(y) − q·n|,   rank(y) = #{i : x_i < y},

with respect to Lebesgue measure; equivalently pick the interval I_i = [x₍ᵢ₎, x₍ᵢ₊₁₎] with
probability ∝ |I_i|·exp(−c·|i − qn|), then a uniform point of it. Here c = ε/(2Δ) with the
sensitivity Δ below.

**On a grid.** The engine rounds each (clamped) value to the nearest of the ``cells + 1`` grid points
L + t·γ, γ = (U − L)/cells (a per-row pre-processing, so the neighbouring relation is unchanged),
and hands over the distinct grid positions with their multiplicities. Every interval is then a
whole number of grid cells [t, t + 1)·γ, u is constant on each open cell (no data point inside),
and the cell containing the continuous output y has law

    P[cell t] = exp(c·u_t) / Σ_s exp(c·u_s),   u_t = −|#{i : x_i ≤ t} − qn|:

the continuous mechanism followed by the post-processing y ↦ ⌊(y − L)/γ⌋. We release that cell
(:meth:`Quantile.select_cell`) or its midpoint (:meth:`Quantile.select`, post-processing again).

**Sensitivity (add/remove one person with at most m = ``max_rows`` rows).** Let D′ = D ∪ S,
|S| = s ≤ m. Then rank′(y) = rank(y) + s_<(y) with s_<(y) = #{x ∈ S : x < y} ∈ [0, s], and
q·n′ = q·n + q·s, so rank′ − qn′ = (rank − qn) + e(y) with e(y) = s_<(y) − qs ∈ [−qs, (1 − q)s]. By
the triangle inequality |u′(y) − u(y)| ≤ |e(y)| ≤ m·max(q, 1 − q) =: Δ (for m = 1 this is the
add/remove sensitivity max(q, 1 − q) of ``dp_multiq``; note that qn moves too).

**Guarantee: ε-bounded range** [Durfee–Rogers 2019, Def. 3.1 (range-bounded); Dong–Durfee–Rogers
2020, Def. 3.1]: for every neighbouring pair the privacy loss ln p(y)/p′(y) takes values in an
interval of width ε. Proof: ln p(y)/p′(y) = c·(u(y) − u′(y)) + ln(Z′/Z), where the normaliser term
does not depend on y and u − u′ ∈ [−Δ, Δ], so the loss ranges over an interval of width
2cΔ = ε. This holds for an exponential mechanism over *any* base measure (here Lebesgue measure, or
counting measure on cells) because the base measure is the same for D and D′ [McSherry–Talwar
2007; Rogers–Steinke 2021, Lemma 3], and post-processing (releasing a cell, its midpoint) can only
shrink the loss's range (the loss of a post-processed output is a log-ratio of averages of
e^{loss}). Hence ε-DP, and ≤ ε²/8-zCDP via BR (Cesar–Rogers 2021); the accountant spends
``BoundedRange(ε)``. The parameter is tight: with one added row, D's data can place points so that
u′ − u = +Δ near the target rank and −Δ far from it (a range of exactly 2Δ).

**Exact sampling** (design principle 5). The interval with gap index j (between consecutive distinct
positions) has n_j cells, all with score u_j; the race of :mod:`sharpdp.mechanisms._race` with
multiplicities picks j with probability n_j e^{c u_j}/Σ_s n_s e^{c u_s} exactly (a Gumbel race in
which candidate j's value is c·u_j + ln n_j + G_j, the maximum of n_j i.i.d. Gumbels), and then
an exact uniform integer in [0, n_j) (:func:`~sharpdp.mechanisms._samplers.uniform_int`) picks the
cell. P[cell t] = (n_j e^{c u_j}/Σ_s n_s e^{c u_s})·(1/n_j) = e^{c u_t}/Σ_s n_s e^{c u_s}: the
claimed law. The offsets c·(u_j − max u) enter the race exactly (rationals; qn is the exact
product of the float q and n) with a certified float approximation, so no rounding touches the
released cell.

**Tied data: the grid points** (``support="points"``). Smith's mechanism gives a tie no width: on a
constant column every cell but the two around the value scores alike, and the value's own rank
range is no cell's, so the release falls anywhere in [L, U] whatever ε. With ``support="points"``
the candidates are the ``cells + 1`` grid points themselves, with the score

    u_t = −dist(qn, [L_t, R_t]) = −max(0, L_t − qn, qn − R_t),
    L_t = #{i : x_i < t},   R_t = #{i : x_i ≤ t},

the distance from the target rank to the ranks the point t occupies (t is a q-quantile of the
data exactly when u_t = 0). Between data points L_t = R_t and the score is Smith's; a point that
holds data gets the whole rank range of its ties. The point intervals tile [0, n] (R_t = L_{t+1},
L_0 = 0, R_cells = n), so max_t u_t = 0 on every data set: no tie term in the accuracy.
*Sensitivity:* adding one row x moves qn by q and, if x < t, both ends of [L_t, R_t] by 1 (the
distance moves by ≤ 1 − q); if x > t, neither end (≤ q); if x = t, R_t by 1 (≤ max(q, 1 − q):
the interval only grows to the right). So a person with ≤ m rows moves each u_t by ≤
Δ = m·max(q, 1 − q), as above, and the same proof gives ε-bounded range with c = ε/(2Δ); the
range 2Δ is reached (m rows added on one side of two points whose rank ranges lie on either side
of qn), so ε is tight here too. The same race samples it: the groups are the runs of empty
points between data points (multiplicity the run's length, score −|L − qn|) and each data point
alone. It is the exponential mechanism over the finite output set of grid points
[McSherry–Talwar 2007], with the score derived above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar, overload

import numpy as np
import numpy.typing as npt

from sharpdp import _validate
from sharpdp.conversions import register
from sharpdp.errors import InvalidParameter
from sharpdp.guarantees import ZCDP, BoundedRange
from sharpdp.mechanisms import _race
from sharpdp.mechanisms._samplers import RNGLike, as_generator, uniform_int
from sharpdp.mechanisms.base import Mechanism

__all__ = ["Quantile"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Largest grid (in cells): positions and counts stay exact in int64 and float64.
MAX_CELLS = 2**53
#: Largest grid for which :meth:`Quantile.probabilities` materialises the per-cell law.
CELL_LAW_LIMIT = 2**26
#: What the mechanism draws: Smith's grid cells, or the grid points (tie-aware).
SUPPORTS = ("cells", "points")


def _int_array(name: str, values: object, *, minimum: int) -> IntArray:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(f"{name} must be a 1-D array of integers, got {values!r}") from None
    if arr.ndim != 1:
        raise InvalidParameter(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.floating):
            raise InvalidParameter(f"{name} must contain integers, got dtype {arr.dtype}")
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise InvalidParameter(f"{name} must contain integers, got {values!r}")
        if np.any(np.abs(arr) >= 2.0**53):
            raise InvalidParameter(f"{name} must be below 2**53")
    out = arr.astype(np.int64)
    if out.size and int(out.min()) < minimum:
        raise InvalidParameter(f"{name} must be >= {minimum}, got {int(out.min())}")
    return out


def checked_support(support: object) -> str:
    """``support`` if it is one of :data:`SUPPORTS`, else a clear refusal."""
    if support not in SUPPORTS:
        raise InvalidParameter(
            f"support must be 'cells' (Smith's intervals) or 'points' (grid points, for tied "
            f"data), got {support!r}"
        )
    return str(support)


def _exact_score(lo: int, hi: int, qn: Fraction) -> Fraction:
    """−dist(qn, [lo, hi]) exactly: the score of an outcome whose rank range is [lo, hi]."""
    return -max(Fraction(0), lo - qn, qn - hi)


@dataclass(frozen=True, slots=True, init=False)
class Quantile(Mechanism):
    """The q-quantile by Smith's interval exponential mechanism on a grid (see the module docstring).

    Neighbouring relation: add/remove one person who contributes at most ``max_rows`` rows.
    Output law (``support="cells"``): the grid cell [L + tγ, L + (t + 1)γ) with probability
    ∝ exp(−c·|r_t − qn|), where r_t is the number of data points at grid positions ≤ t,
    c = ε/(2Δ), Δ = m·max(q, 1 − q). With ``support="points"``: the grid point L + tγ,
    t = 0, …, cells, with probability ∝ exp(−c·dist(qn, [#{x < t}, #{x ≤ t}])), which handles
    ties (see the module docstring). Guarantee, either way: ε-bounded range, hence ε-DP and
    ≤ ε²/8-zCDP.

    Args:
        epsilon: ε ≥ 0 (stored as ``epsilon_``).
        q: the quantile, in [0, 1].
        bounds: (L, U), finite, L < U; values are clamped into it.
        cells: number of grid cells (the grid has ``cells + 1`` points L + t·(U − L)/cells);
            1 ≤ cells ≤ 2**53. Finer grids approach the continuous mechanism.
        max_rows: m ≥ 1, the most rows one person contributes.
        support: ``"cells"`` (Smith's mechanism: a cell, released as its midpoint) or
            ``"points"`` (a grid point, released as is; a tie's value can be drawn).

    Examples:
        >>> import sharpdp as sdp
        >>> from sharpdp.mechanisms import Quantile
        >>> m = Quantile(1.0, 0.5, bounds=(0.0, 100.0), cells=1000)
        >>> positions, counts = m.aggregate([12.0, 40.0, 41.5, 77.0, 250.0])
        >>> positions.tolist(), counts.tolist()
        ([120, 400, 415, 770, 1000], [1, 1, 1, 1, 1])
        >>> 0.0 <= m.select(positions, counts, rng=0) <= 100.0
        True
    """

    epsilon_: float
    q: float
    bounds: tuple[float, float]
    cells: int
    max_rows: int
    support: str
    notion: ClassVar[str] = "quantile (interval exponential mechanism)"

    def __init__(
        self,
        epsilon: float,
        q: float,
        bounds: tuple[float, float],
        cells: int = 2**20,
        max_rows: int = 1,
        support: str = "cells",
    ) -> None:
        eps = _validate.nonnegative("epsilon", epsilon)
        qq = _validate.real("q", q)
        if not 0.0 <= qq <= 1.0:
            raise InvalidParameter(f"q must be in [0, 1], got {qq!r}")
        pair = _validate.sequence("bounds", bounds, "a pair (lower, upper)")
        if len(pair) != 2:
            raise InvalidParameter(f"bounds must be a pair (lower, upper), got {bounds!r}")
        lower = _validate.real("bounds[0]", pair[0])
        upper = _validate.real("bounds[1]", pair[1])
        if not lower < upper:
            raise InvalidParameter(f"bounds must satisfy lower < upper, got {bounds!r}")
        if not math.isfinite(upper - lower):
            raise InvalidParameter(f"bounds span must be finite, got {bounds!r}")
        n_cells = _validate.integer("cells", cells, minimum=1)
        if n_cells > MAX_CELLS:
            raise InvalidParameter(f"cells must be <= 2**53, got {n_cells}")
        object.__setattr__(self, "epsilon_", eps)
        object.__setattr__(self, "q", qq)
        object.__setattr__(self, "bounds", (lower, upper))
        object.__setattr__(self, "cells", n_cells)
        object.__setattr__(self, "max_rows", _validate.integer("max_rows", max_rows, minimum=1))
        object.__setattr__(self, "support", checked_support(support))

    def __repr__(self) -> str:
        return (
            f"Quantile(epsilon={self.epsilon_!r}, q={self.q!r}, bounds={self.bounds!r}, "
            f"cells={self.cells!r}, max_rows={self.max_rows!r}, support={self.support!r})"
        )

    # -- parameters --------------------------------------------------------------------------------

    def _sensitivity_exact(self) -> Fraction:
        qf = Fraction(self.q)
        return self.max_rows * max(qf, 1 - qf)

    def _coefficient_exact(self) -> Fraction:
        return Fraction(self.epsilon_) / (2 * self._sensitivity_exact())

    @property
    def sensitivity(self) -> float:
        """Δ = m·max(q, 1 − q): the most any score moves when one person is added or removed."""
        return float(self._sensitivity_exact())

    @property
    def coefficient(self) -> float:
        """c = ε/(2Δ) in P[cell t] ∝ exp(c·u_t)."""
        return float(self._coefficient_exact())

    @property
    def grid(self) -> float:
        """γ = (U − L)/cells, the width of a cell."""
        return (self.bounds[1] - self.bounds[0]) / self.cells

    @property
    def outcomes(self) -> int:
        """The number of possible outputs: ``cells`` cells, or ``cells + 1`` grid points."""
        return self.cells + (self.support == "points")

    def characterisation(self) -> BoundedRange:
        """ε-bounded range (tight for both supports), see the module docstring."""
        return BoundedRange(self.epsilon_)

    # -- data --------------------------------------------------------------------------------------

    def aggregate(self, values: Sequence[float] | FloatArray) -> tuple[IntArray, IntArray]:
        """Clamp raw values to the bounds, round to the nearest grid point, count: (positions, counts).

        What the data layer's engines compute, bit for bit: t = floor((clamp(x, L, U) − L)·cells
        /(U − L) + ½) (the nearest grid point, halves rounded up), the same IEEE-754 operations
        in the same order, grouped; provided for in-memory data, tests and audits. Rounding is
        per-row pre-processing (no privacy effect).
        """
        x = np.asarray(values, dtype=np.float64)
        if x.ndim != 1:
            raise InvalidParameter(f"values must be 1-D, got shape {x.shape}")
        if np.isnan(x).any():
            raise InvalidParameter("values must not contain NaN")
        lower, upper = self.bounds
        if not math.isfinite((upper - lower) * float(self.cells)):
            # (the data layer refuses such bounds too: the grid index overflows on the way)
            raise InvalidParameter(
                f"bounds {self.bounds!r} are too far apart for {self.cells} cells: "
                "(U − L)·cells overflows double precision"
            )
        t = np.floor((np.clip(x, lower, upper) - lower) * float(self.cells) / (upper - lower) + 0.5)
        t = np.clip(t, 0, self.cells).astype(np.int64)
        positions, counts = np.unique(t, return_counts=True)
        return positions.astype(np.int64), counts.astype(np.int64)

    def _validated(self, positions: object, counts: object) -> tuple[IntArray, IntArray]:
        pos = _int_array("positions", positions, minimum=0)
        cnt = _int_array("counts", counts, minimum=1)
        if pos.size != cnt.size:
            raise InvalidParameter(
                f"positions and counts must have the same length, got {pos.size} and {cnt.size}"
            )
        if pos.size and int(pos.max()) > self.cells:
            raise InvalidParameter(f"positions must be <= cells={self.cells}, got {int(pos.max())}")
        if pos.size > 1 and np.any(np.diff(pos) <= 0):
            raise InvalidParameter("positions must be strictly increasing (distinct, sorted)")
        if cnt.size and (int(cnt.max()) >= 2**53 or cnt.sum(dtype=np.float64) >= 2.0**53):
            raise InvalidParameter("counts must total less than 2**53 rows")
        return pos, cnt

    def _candidates(
        self, pos: IntArray, cnt: IntArray
    ) -> tuple[IntArray, IntArray, IntArray, IntArray, Fraction]:
        """The candidate groups, in grid order: (first cell or point, size n_j, L_j, R_j, qn).

        Every member of group j has the score −dist(qn, [L_j, R_j]). Cells: the gaps with at
        least one cell, L_j = R_j = #{x ≤ first cell}. Points: the runs of empty points
        (L_j = R_j = #{x < run}) and each data point alone (L_j = #{x < t}, R_j = #{x ≤ t}).
        """
        below = np.concatenate(([0], np.cumsum(cnt, dtype=np.int64)))  # rows before each datum
        qn = Fraction(self.q) * int(below[-1])
        if self.support == "cells":
            edges = np.concatenate(([0], pos, [self.cells])).astype(np.int64)
            lengths = np.diff(edges)
            live = np.flatnonzero(lengths > 0)
            return edges[live], lengths[live], below[live], below[live], qn
        k = pos.size
        run_starts = np.concatenate(([0], pos + 1)).astype(np.int64)
        run_ends = np.concatenate((pos, [self.cells + 1])).astype(np.int64)  # exclusive
        starts = np.empty(2 * k + 1, dtype=np.int64)
        lengths = np.empty(2 * k + 1, dtype=np.int64)
        lo = np.empty(2 * k + 1, dtype=np.int64)
        hi = np.empty(2 * k + 1, dtype=np.int64)
        starts[0::2], lengths[0::2] = run_starts, run_ends - run_starts
        lo[0::2] = hi[0::2] = below
        starts[1::2], lengths[1::2] = pos, 1
        lo[1::2], hi[1::2] = below[:-1], below[1:]
        live = np.flatnonzero(lengths > 0)
        return starts[live], lengths[live], lo[live], hi[live], qn

    @staticmethod
    def _scores(lo: IntArray, hi: IntArray, qn: Fraction) -> tuple[FloatArray, Fraction]:
        """Float u_j = −dist(qn, [L_j, R_j]) (see :meth:`_offsets`) and the exact max u*.

        u is unimodal in j (L and R non-decreasing): with i the first group with R_i ≥ qn, the
        groups before it have u_j = R_j − qn (non-decreasing in j) and those from it on
        u_j = −max(0, L_j − qn) (non-increasing), so u* is u_{i−1} or u_i.
        """
        k_int = math.floor(qn)
        f = float(qn - k_int)
        above = (lo - k_int).astype(np.float64) - f  # exact integers below 2⁵³, then one rounding
        short = f - (hi - k_int).astype(np.float64)
        u = -np.maximum(np.maximum(above, short), 0.0)
        i = int(np.searchsorted(hi, math.ceil(qn), side="left"))
        near = {min(max(j, 0), hi.size - 1) for j in (i - 1, i)}
        u_star = max(_exact_score(int(lo[j]), int(hi[j]), qn) for j in near)
        return np.asarray(u, dtype=np.float64), u_star

    def _offsets(
        self, lo: IntArray, hi: IntArray, lengths: IntArray, qn: Fraction
    ) -> _race.Offsets:
        """Exact offsets a_j = c·(u_j − u*) with a certified float approximation.

        Float values: with qn = K + f (K = ⌊qn⌋, 0 ≤ f < 1), u_j = −max(0, (L_j − K) − f,
        f − (R_j − K)) where L_j − K and R_j − K are exact integers below 2⁵³ and f̂ = fl(f)
        errs by ≤ 2⁻⁵⁴; each difference adds a relative rounding of 2⁻⁵³ (the maximum is exact),
        and fl(u*), the difference and the product with ĉ = fl(c) add 2⁻⁵³ each. So
        |â_j − a_j| ≤ c·(2⁻⁵² + 2⁻⁵¹·(|u_j| + |u*|))·(1 + 2⁻⁵⁰) + 2⁻⁵²|a_j|; the last term is
        inside the race's τ model, and the rest, with |u| ≤ n, is ``slack`` (rounded up twofold).
        """
        c = self._coefficient_exact()
        u, u_star = self._scores(lo, hi, qn)
        c_float = float(c)
        approx = c_float * (u - float(u_star))
        n = float(hi[-1]) if hi.size else 0.0
        slack = 2.0 * c_float * (2.0**-52 + 2.0**-51 * 2.0 * (n + 1.0)) * (1.0 + 2.0**-40)

        def exact(i: int) -> Fraction:
            return c * (_exact_score(int(lo[i]), int(hi[i]), qn) - u_star)

        return _race.Offsets(
            np.asarray(approx, dtype=np.float64), None, exact, slack, lengths.astype(np.int64)
        )

    # -- the law -----------------------------------------------------------------------------------

    def interval_law(
        self, positions: Sequence[int] | IntArray, counts: Sequence[int] | IntArray
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """The exact law over runs of outcomes: (first outcome, outcomes in the run, probability).

        Cells: one run per interval between consecutive data values (intervals of zero width,
        equal values, are omitted). Points: the runs of empty grid points and each data point
        alone. Every outcome of a run is equally likely. Probabilities are evaluated in float64
        in log space (n_j·e^{c(u_j − max u)}, normalised).
        """
        pos, cnt = self._validated(positions, counts)
        starts, lengths, lo, hi, qn = self._candidates(pos, cnt)
        c = float(self._coefficient_exact())
        u, _ = self._scores(lo, hi, qn)
        logits = np.log(lengths.astype(np.float64)) + c * (u - u.max())
        w = np.exp(logits - logits.max())
        return starts, lengths, np.asarray(w / w.sum(), dtype=np.float64)

    def probabilities(
        self, positions: Sequence[int] | IntArray, counts: Sequence[int] | IntArray
    ) -> FloatArray:
        """The exact law of :meth:`select_cell`: a probability per outcome t = 0, …,
        ``outcomes`` − 1 (cells, or grid points)."""
        if self.cells > CELL_LAW_LIMIT:
            raise InvalidParameter(
                f"the per-cell law is materialised for at most {CELL_LAW_LIMIT} cells, "
                f"got cells={self.cells}; use interval_law"
            )
        _, lengths, probs = self.interval_law(positions, counts)
        return np.asarray(np.repeat(probs / lengths, lengths), dtype=np.float64)

    # -- sampling ----------------------------------------------------------------------------------

    @overload
    def select_cell(
        self,
        positions: Sequence[int] | IntArray,
        counts: Sequence[int] | IntArray,
        rng: RNGLike = None,
    ) -> int: ...
    @overload
    def select_cell(
        self,
        positions: Sequence[int] | IntArray,
        counts: Sequence[int] | IntArray,
        rng: RNGLike = None,
        *,
        size: int,
    ) -> IntArray: ...
    def select_cell(
        self,
        positions: Sequence[int] | IntArray,
        counts: Sequence[int] | IntArray,
        rng: RNGLike = None,
        *,
        size: int | None = None,
    ) -> int | IntArray:
        """Sample the released outcome exactly (law: :meth:`probabilities`): the cell
        t ∈ {0, …, cells − 1}, or with ``support="points"`` the grid point t ∈ {0, …, cells}.

        Args:
            positions: distinct grid positions of the data, strictly increasing, in [0, cells].
            counts: the number of rows at each position (≥ 1).
            rng: a seed or a ``numpy.random.Generator``.
            size: number of independent draws (``None``: one, returned as an int).
        """
        pos, cnt = self._validated(positions, counts)
        m = None if size is None else _validate.integer("size", size, minimum=0)
        gen = as_generator(rng)
        starts, lengths, lo, hi, qn = self._candidates(pos, cnt)
        off = self._offsets(lo, hi, lengths, qn)
        chosen = _race.race(off, 1, "gumbel", gen, m)[..., 0]
        if m is None:
            j = int(chosen)
            return int(starts[j]) + int(uniform_int(int(lengths[j]), rng=gen))
        out = np.empty(m, dtype=np.int64)
        for j in np.unique(chosen):
            where = np.flatnonzero(chosen == j)
            out[where] = starts[j] + uniform_int(int(lengths[j]), size=where.size, rng=gen)
        return out

    @overload
    def select(
        self,
        positions: Sequence[int] | IntArray,
        counts: Sequence[int] | IntArray,
        rng: RNGLike = None,
    ) -> float: ...
    @overload
    def select(
        self,
        positions: Sequence[int] | IntArray,
        counts: Sequence[int] | IntArray,
        rng: RNGLike = None,
        *,
        size: int,
    ) -> FloatArray: ...
    def select(
        self,
        positions: Sequence[int] | IntArray,
        counts: Sequence[int] | IntArray,
        rng: RNGLike = None,
        *,
        size: int | None = None,
    ) -> float | FloatArray:
        """The released quantile: the midpoint L + (t + ½)γ of the cell from :meth:`select_cell`,
        or with ``support="points"`` the grid point L + tγ.

        A deterministic function of the exactly sampled outcome (post-processing), so the float
        arithmetic here has no privacy effect.
        """
        if size is None:
            return float(self.value_of(self.select_cell(positions, counts, rng)))
        return self.value_of(self.select_cell(positions, counts, rng, size=size))

    @overload
    def value_of(self, t: int) -> float: ...
    @overload
    def value_of(self, t: IntArray) -> FloatArray: ...
    def value_of(self, t: int | IntArray) -> float | FloatArray:
        """The value released for outcome ``t``: a cell's midpoint, or a grid point (in [L, U])."""
        lower, upper = self.bounds
        shift = 0.5 if self.support == "cells" else 0.0
        if isinstance(t, int | np.integer):
            return min(upper, lower + (int(t) + shift) * (upper - lower) / self.cells)
        vals = lower + (np.asarray(t) + shift) * ((upper - lower) / self.cells)
        return np.asarray(np.minimum(vals, upper), dtype=np.float64)


@register(
    Quantile,
    BoundedRange,
    name="em-base-measure",
    theorem="exponential mechanism over a base measure, score range 2Δ: ε-BR "
    "(Durfee–Rogers 2019 Def 3.1; Rogers–Steinke 2021 Lemma 3)",
    tight=True,
)
def quantile_to_bounded_range(m: Quantile) -> BoundedRange:
    """Smith's quantile mechanism is ε-BR (tight), see :mod:`sharpdp.mechanisms.quantile`."""
    return BoundedRange(m.epsilon_)


@register(
    Quantile,
    ZCDP,
    name="via-bounded-range",
    theorem="ε-BR, then the certified BR zCDP bound (≤ ε²/8, Cesar–Rogers 2021)",
)
def quantile_to_zcdp(m: Quantile) -> ZCDP:
    """ε-BR ⇒ the certified zCDP constant of bounded range (≤ ε²/8)."""
    from sharpdp.conversions import convert

    return convert(BoundedRange(m.epsilon_), ZCDP)
