"""The ``kov`` analysis: optimal composition of (ε_i, δ_i)-DP items, homogeneous
[Kairouz–Oh–Viswanath 2015, Thm 3.3] or heterogeneous [Murtagh–Vadhan 2016, Thm 1.5], in log space.

**The theorem.** For items (ε_i, δ_i)-DP, i = 1..n, composed adaptively, the least δ certified at
ε is [Murtagh–Vadhan 2016, "The complexity of computing the optimal composition of differential
privacy", arXiv 1507.03113, Thm 1.5; Kairouz–Oh–Viswanath 2015, Thm 3.3 for equal (ε_i, δ_i)]

    δ(ε) = 1 − Π_i (1 − δ_i) · (1 − δ_RR(ε)),

where δ_RR(ε) is the hockey-stick divergence of the product of the εi-randomized-response pairs
(each P = (e^{ε_i}, 1)/(1 + e^{ε_i}), Q reversed). It is attained (by the product of the
four-point pairs of Kairouz–Oh–Viswanath 2015, Thm 2.4), so no valid analysis certifies less for
items known only as (ε_i, δ_i)-DP.

**Grouped items.** With the items grouped by ε (k_j items of ε_j; their δ_i enter only through
the product), an outcome of the randomized responses is the number m_j of "flipped" answers in
each group, with P-probability Π_j C(k_j, m_j) p_j^{k_j − m_j} (1 − p_j)^{m_j},
p_j = e^{ε_j}/(1 + e^{ε_j}), and privacy loss L(m) = Σ_j (k_j − 2m_j) ε_j; then

    δ_RR(ε) = Σ_m P(m) · (1 − e^{ε − L(m)})_+.

One group is an O(k) sum (:class:`_KOV`); a few groups are enumerated over their Π_j (k_j + 1)
outcomes (:class:`_Heterogeneous`; Murtagh–Vadhan show the general problem is #P-complete, so
the enumeration is only run while it is cheap). Beyond that, groups are merged by raising the
smaller ε to the larger one: RR(ε) is a post-processing of RR(ε′) for ε ≤ ε′ (both ε′-DP, and
RR(ε′) dominates every ε′-DP mechanism, Kairouz–Oh–Viswanath 2015, Thm 2.4), so the merged
composition is a valid upper bound — no longer exact, and then other analyses compete with it.

**Rounding** errs upward only: the decision L(m) > ε is padded by the float error of L, the log
weights by the error of ``gammaln`` and of the sums, the sums are ``math.fsum``-ed and the
result is rounded up; 1 − Π(1 − δ_i) is exact for a few δ items, else rounded up.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
    approx_pair,
    exact_mass_at_infinity,
    log_ratio,
    mass_at_infinity_with,
)
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied
from sharpdp.guarantees import ApproxDP, Guarantee

FloatArray = npt.NDArray[np.float64]

U = 2.0**-53

#: Most items of one ε evaluated by the O(k) sum (beyond it, the analysis declines).
_KOV_MAX_K = 10_000_000
#: Most outcomes Π_j (k_j + 1) enumerated for several distinct ε; beyond it, groups are merged.
_MAX_OUTCOMES = 2**21
#: Groups beyond this many are first merged onto a geometric ε grid (cheap; rounding ε up).
_MAX_GROUPS = 48
#: Outcomes kept once groups must be merged anyway: the merged value is a bound, no longer the
#: optimum, and the other analyses (PLD, RDP) usually beat it, so it is kept cheap (each δ(ε) sums
#: this many terms; 2²¹ cost ~0.1 s per evaluation, ~0.3 s per ε query on 10+ distinct items).
_MERGED_OUTCOMES = 2**12


def _log_binomials(k: int, m: FloatArray) -> FloatArray:
    from scipy.special import gammaln

    return np.asarray(gammaln(k + 1.0) - gammaln(m + 1.0) - gammaln(k - m + 1.0))


def _log_weight_pad(groups: tuple[tuple[float, int], ...]) -> float:
    """A bound on the absolute float error of a term's log.

    The term is Σ_j [log C(k_j, m_j) − m_j ε_j] − Σ_j k_j log(1 + e^{−ε_j}) + log(1 − e^{−gap}):
    ``gammaln`` differences err by about one ulp of 3·lgamma(k_j + 1) (measured against mpmath
    for k ≤ 10^7: at most 0.95 such ulps), the products and the sums of 2g + 2 terms by an ulp
    of their magnitude each, log(1 − e^{−gap}) by an ulp of |log| ≤ 745. Allowed: 4(g + 2) ulps
    of the total magnitude, plus 1e-12 for the ``exp``/``log``/``fsum`` of the log-sum-exp."""
    from scipy.special import gammaln

    magnitude = 1000.0
    for e, k in groups:
        magnitude += 3.0 * float(gammaln(k + 1.0)) + 2.0 * k * e + k * math.log1p(math.exp(-e))
    return 1e-12 + 4.0 * (len(groups) + 2) * U * magnitude


def _log_normaliser(groups: tuple[tuple[float, int], ...]) -> float:
    """Σ_j k_j log(1 + e^{−ε_j}): log p_j = −log(1 + e^{−ε_j}), log(1 − p_j) = −ε_j + log p_j."""
    return math.fsum(k * math.log1p(math.exp(-e)) for e, k in groups)


#: Terms more than this far (in log) below a computed term are bounded, not summed.
_WINDOW = 60.0

#: (losses ascending, normalised log P-weights, outcome codes) of randomized-response outcomes.
Atoms = tuple[FloatArray, FloatArray, npt.NDArray[np.int64]]


@dataclass(frozen=True)
class _Optimal(Guarantee):
    """The optimal composition δ(ε) = 1 − keep·(1 − δ_RR(ε)) with keep = Π_i (1 − δ_i)
    [Murtagh–Vadhan 2016, Thm 1.5]; subclasses give the randomized-response outcomes.

    Guarantee: ``delta`` is an upper bound on the exact optimum (above it by the float-error
    pad only, ~1e-11 relative for small compositions); ``epsilon(δ)`` returns an ε at which
    that upper bound was checked to be ≤ δ (bracketed search; raises if none is found).
    """

    #: 1 − Π_i (1 − δ_i), rounded up (exact for a few δ items: see ``mass_at_infinity``).
    inf_mass: float
    #: the same exactly, as a rational, when it has at most 256 factors (else None)
    inf_mass_exact: Fraction | None
    notion: ClassVar[str] = "optimal composition (KOV/MV)"

    # -- the randomized-response part (subclasses) ---------------------------------------------
    def _groups(self) -> tuple[tuple[float, int], ...]:
        """The (ε_j, k_j) of the randomized-response product."""
        raise NotImplementedError

    def _atoms(self, epsilon: float) -> Atoms:
        """The outcomes, at least all those whose computed loss exceeds ``epsilon − slack``."""
        raise NotImplementedError

    def _exact_loss(self, code: int) -> Fraction:
        """The loss Σ_j (k_j − 2m_j) ε_j of the outcome ``code``, exactly (from the floats ε_j)."""
        raise NotImplementedError

    @functools.cached_property
    def _pad(self) -> float:
        return _log_weight_pad(self._groups())

    @functools.cached_property
    def _scale(self) -> float:
        """Σ_j k_j ε_j (as a float, rounded up): the scale of every loss's float error."""
        return _math.up(math.fsum(k * e for e, k in self._groups()), 8)

    def _slack(self, epsilon: float) -> float:
        """A bound on the float error of a computed gap L(m) − ε: a loss is a sum of g rounded
        products (k_j − 2m_j)·ε_j; with the subtraction of ε and the addition of the slack, the
        computed gap errs by < (g + 4)·u·(Σ_j k_j ε_j + ε), plus half a subnormal per operation
        when values underflow (covered by 1e-320, 2000 subnormals)."""
        return 4.0 * (len(self._groups()) + 2) * U * (self._scale + epsilon) + 1e-320

    def _log_delta_rr(self, epsilon: float, atoms: Atoms | None = None) -> float:
        """log of an upper bound on δ_RR(ε) = Σ_m P(m)(1 − e^{ε − L(m)})_+ (−inf if 0)."""
        if not self._groups():
            return -math.inf
        loss, weight, code = self._atoms(epsilon) if atoms is None else atoms
        slack = self._slack(epsilon)
        start = int(np.searchsorted(loss, epsilon - slack, side="right"))
        # computed gap ≥ the exact L(m) − ε (see _slack): a term is kept whenever it may be > 0,
        # and (1 − e^{−gap}) only grows with the gap
        gap = loss[start:] - epsilon + slack
        weight = weight[start:]
        if gap.size == 0:
            return -math.inf
        # outcomes whose loss is within the float error of ε (ε on an atom, typically): decided
        # exactly in rationals, their gap then rounded up from the exact one
        edge = np.nonzero(gap <= 2.0 * slack)[0]
        for i in edge.tolist():
            exact_gap = self._exact_loss(int(code[start + i])) - Fraction(epsilon)
            gap[i] = _math.float_up(exact_gap) if exact_gap > 0 else 0.0
        # Terms are ≤ their weight. A term t* computed first (at the largest weight) bounds the
        # rest: those with weight < t* − W are < e^{−W} of the top term each, and are bounded by
        # their count instead of summed (valid: it only adds).
        j = int(np.argmax(weight))
        floor = -math.inf
        if gap[j] > 0.0:
            floor = float(weight[j] + math.log(-math.expm1(-gap[j]))) - _WINDOW
        near = (weight >= floor) & (gap > 0.0)
        dropped = int(np.count_nonzero(weight < floor))
        if not near.any():
            return -math.inf
        terms = weight[near] + np.log(-np.expm1(-gap[near]))
        top = float(np.max(terms))
        total = math.fsum(np.exp(terms - top))
        if dropped:
            total += dropped * math.exp(floor - top)
        return top + math.log(total) + self._pad

    # -- the guarantee -------------------------------------------------------------------------
    def _max_loss(self) -> Fraction:
        """The largest privacy loss Σ_j k_j ε_j (exactly, from the floats)."""
        return sum((Fraction(e) * k for e, k in self._groups()), Fraction(0))

    def _delta_with(self, epsilon: float, atoms: Atoms | None) -> float:
        a = self.inf_mass
        if epsilon == math.inf:
            return a
        # exp_up: a positive δ that underflows is reported as 5e-324, never 0 (which is pure DP)
        rr = min(1.0, _math.exp_up(self._log_delta_rr(epsilon, atoms)))
        if a == 0.0 or rr == 0.0:
            return a + rr  # one of them, exactly
        # δ = a + (1 − a)·δ_RR is increasing in a and δ_RR: both rounded up, then the sum
        return min(1.0, _math.up(a + (1.0 - a) * rr))

    def _delta(self, epsilon: float) -> float:
        return self._delta_with(epsilon, None)

    def _epsilon(self, delta: float) -> float:
        if self._delta(math.inf) > delta:
            return math.inf
        atoms = self._atoms(0.0) if self._groups() else None  # built once for the search
        if self._delta_with(0.0, atoms) <= delta:
            return 0.0
        top = self._max_loss()
        # above the largest loss by far more than its float error: δ_RR = 0 there, so δ = 1 − keep
        hi = _math.float_up(top) * (1.0 + 1e-12) + 1e-300
        if self.inf_mass_exact is not None:
            # the mass known exactly: δ_RR(ε) ≤ (δ − a)/(1 − a) decided in logs, which near the
            # mass the float sum a + (1 − a)·δ_RR cannot (δ one ulp above a rounded mass read ε
            # as the largest loss, 2 for 200 × (0.01, 1e-6) items where 1.2 holds)
            slack = (Fraction(delta) - self.inf_mass_exact) / (1 - self.inf_mass_exact)
            if slack == 0:  # δ_RR must vanish, and the loss reaches Σ k_j ε_j: exactly that
                return _math.float_up(top)
            log_slack = _log_down(slack)
            return _math.smallest_valid_smooth(
                lambda e: self._log_delta_rr(e, atoms) - log_slack,
                0.0,
                hi,
                rtol=2.0**-50,
                what="optimal composition ε(δ)",
            )
        if delta == self.inf_mass:  # (a bound on the mass): as above, a valid ε
            return _math.float_up(top)
        # (to a few ulps: at the default 1e-12 the "exact" analysis, which runs alone, read five
        # 30-DP items as 150 + 3e-11, above basic composition's 150)
        return _math.smallest_valid_smooth(
            lambda e: log_ratio(self._delta_with(e, atoms), delta),
            0.0,
            hi,
            rtol=2.0**-50,
            what="optimal composition ε(δ)",
        )


@dataclass(frozen=True)
class _KOV(_Optimal):
    """k items of the same ε0 (any δ_i): δ_RR = (1+e^ε0)^{−k} Σ_i C(k,i) (e^{(k−i)ε0} −
    e^{ε} e^{iε0})_+ [Kairouz–Oh–Viswanath 2015, Thm 3.3, in Murtagh–Vadhan 2016 Thm 1.5's form],
    an O(k) sum in log space (rounded up, see the module docstring). ``exact`` is False when the
    items' groups were merged into this one (ε raised: a valid bound)."""

    epsilon0: float
    k: int
    exact: bool = True

    def _groups(self) -> tuple[tuple[float, int], ...]:
        return ((self.epsilon0, self.k),) if self.epsilon0 > 0.0 else ()

    def _outcomes(self, epsilon: float) -> Atoms:
        # outcomes i = 0..i_max with (k − 2i)ε0 > ε − slack, as losses ascending (i descending)
        k, e0 = self.k, self.epsilon0
        reach = Fraction(epsilon - self._slack(epsilon)) if epsilon > 0.0 else Fraction(0)
        i_max = min(k, math.ceil((k * Fraction(e0) - reach) / (2 * Fraction(e0))))
        i = np.arange(max(i_max, 0), -1, -1, dtype=np.float64)
        loss = (k - 2.0 * i) * e0
        weight = _log_binomials(k, i) - i * e0 - _log_normaliser(((e0, k),))
        return loss, weight, i.astype(np.int64)

    def _exact_loss(self, code: int) -> Fraction:
        return (self.k - 2 * code) * Fraction(self.epsilon0)

    @functools.cached_property
    def _all(self) -> Atoms:
        return self._outcomes(0.0)

    def _atoms(self, epsilon: float) -> Atoms:
        # kept for reuse while small (every δ query then skips lgamma); else the tail only
        return self._all if self.k <= _MAX_OUTCOMES else self._outcomes(epsilon)


@dataclass(frozen=True)
class _Heterogeneous(_Optimal):
    """Items of several distinct ε_j (k_j of each), by enumerating the Π_j (k_j + 1) outcomes
    of the randomized-response product [Murtagh–Vadhan 2016, Thm 1.5] (rounded up, see the
    module docstring). ``exact`` is False when groups were merged (ε raised: a valid bound)."""

    groups: tuple[tuple[float, int], ...]
    exact: bool = True

    def _groups(self) -> tuple[tuple[float, int], ...]:
        return self.groups

    @functools.cached_property
    def _table(self) -> Atoms:
        """The outcomes whose loss can be positive (only δ(ε ≥ 0) is asked; the others are
        pruned as they are built), losses ascending."""
        slack = self._slack(0.0)
        rest = math.fsum(k * e for e, k in self.groups) * (1.0 + 1e-9)
        loss = np.zeros(1)
        weight = np.zeros(1)
        code = np.zeros(1, dtype=np.int64)  # m in mixed radix (k_j + 1), in ``_order``
        for e, k in self._order:
            m = np.arange(k + 1, dtype=np.float64)
            loss = (loss[:, None] + ((k - 2.0 * m) * e)[None, :]).ravel()
            weight = (weight[:, None] + (_log_binomials(k, m) - m * e)[None, :]).ravel()
            code = (code[:, None] * (k + 1) + np.arange(k + 1, dtype=np.int64)[None, :]).ravel()
            rest = max(0.0, rest - k * e * (1.0 - 1e-9))  # ≥ what the remaining groups can add
            keep = loss + rest + slack > 0.0
            loss, weight, code = loss[keep], weight[keep], code[keep]
        idx = np.argsort(loss, kind="stable")
        return loss[idx], weight[idx] - _log_normaliser(self.groups), code[idx]

    @functools.cached_property
    def _order(self) -> tuple[tuple[float, int], ...]:
        # widest groups first: the partial sums then show early which outcomes stay below 0
        return tuple(sorted(self.groups, key=lambda g: -g[0] * g[1]))

    def _atoms(self, epsilon: float) -> Atoms:
        return self._table

    def _exact_loss(self, code: int) -> Fraction:
        total = Fraction(0)
        for e, k in reversed(self._order):
            code, m = divmod(code, k + 1)
            total += (k - 2 * m) * Fraction(e)
        return total


def _merge(groups: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """Groups (ε ascending) merged by raising ε until Π(k_j + 1) ≤ :data:`_MERGED_OUTCOMES` (a
    dominating composition: see the module docstring). Greedy: merge the neighbours whose merge
    raises Σ k_j ε_j² (the loss variance, to first order) the least."""
    if len(groups) > _MAX_GROUPS:
        # round every ε up onto a geometric grid fine enough to leave ≤ _MAX_GROUPS values
        lo, hi = groups[0][0], groups[-1][0]
        ratio = (hi / lo) ** (1.0 / (_MAX_GROUPS - 1)) if hi > lo else 2.0
        grid: dict[float, int] = {}
        for e, k in groups:
            j = max(0, math.ceil(math.log(e / lo) / math.log(ratio)) - 1)
            while lo * ratio**j < e:  # never below the item's own ε
                j += 1
            level = lo * ratio**j
            grid[level] = grid.get(level, 0) + k
        groups = sorted(grid.items())
    while len(groups) > 1 and math.fsum(math.log(k + 1.0) for _, k in groups) > math.log(
        _MERGED_OUTCOMES
    ):
        costs = [
            groups[i][1] * (groups[i + 1][0] ** 2 - groups[i][0] ** 2)
            for i in range(len(groups) - 1)
        ]
        i = costs.index(min(costs))
        groups[i : i + 2] = [(groups[i + 1][0], groups[i][1] + groups[i + 1][1])]
    return groups


_Spec = tuple[float, Fraction | None, tuple[tuple[float, int], ...], bool]


def _log_down(x: Fraction) -> float:
    """log x of a positive rational, rounded down: of x rounded down to a float (``float`` of a
    Fraction is correctly rounded) when that is normal, ``log`` within an ulp, moved down by 4;
    below the normal floats, from the logs of its numerator and denominator (each within an
    ulp), moved down by 4 ulps of their sizes."""
    f = float(x)
    if f >= sys.float_info.min:
        if Fraction(f) > x:
            f = math.nextafter(f, 0.0)
        value = math.log(f)
        for _ in range(4):
            value = math.nextafter(value, -math.inf)
        return value
    n, d = math.log(x.numerator), math.log(x.denominator)
    return (n - d) - 4.0 * U * (abs(n) + abs(d)) - 1e-300


@functools.lru_cache(maxsize=1024)
def _spec(items: Items) -> _Spec | str:
    """(1 − Π(1 − δ_i) rounded up, and exactly while it has ≤ 256 factors, the (ε_j, k_j) groups,
    whether they are the items' own) for ``items``, or why the analysis does not apply. Cached:
    ``exact_for`` asks for it on every query (the guarantees themselves, with their outcome
    tables, live in each composition's cache)."""
    try:
        pairs = [(approx_pair(g), c) for g, c in items]
    except NotImplied as err:
        return str(err)
    counts: dict[float, int] = {}
    for (e, _), c in pairs:
        if e > 0.0:  # ε = 0: no randomized-response part, only δ
            counts[e] = counts.get(e, 0) + c
    if not math.isfinite(2.0 * math.fsum(e * k for e, k in counts.items())):
        return "Σ k_i·ε_i is beyond the float range"
    if any(e < sys.float_info.min for e in counts):
        # subnormal ε carry a few bits: the sums of binomial terms lost whole units of the
        # result (16 × PureDP(5e-324): δ(5e-324) read 4.9e-324, exactly 5.8e-324)
        return "an item's ε is subnormal (below 2.2e-308): the closed forms lose their precision"
    deltas = [(d, c) for (_, d), c in pairs]
    inf_mass_exact = exact_mass_at_infinity(deltas)
    inf_mass = mass_at_infinity_with(inf_mass_exact, deltas)
    groups = sorted(counts.items())
    exact = True
    if len(groups) > 1 and (
        len(groups) > _MAX_GROUPS
        or math.fsum(math.log(k + 1.0) for _, k in groups) > math.log(_MAX_OUTCOMES)
    ):
        groups, exact = _merge(groups), False
    if len(groups) == 1 and groups[0][1] > _KOV_MAX_K:
        return (
            f"KOV is evaluated for at most {_KOV_MAX_K} items of one ε (O(k) work); "
            f"got {groups[0][1]}"
        )
    return inf_mass, inf_mass_exact, tuple(groups), exact


def _exact_optimum(items: Items) -> bool:
    # The MV16 optimum is exact over all (ε_i, δ_i)-DP mechanisms, so it is exact for items
    # known only as PureDP/ApproxDP guarantees, and binary randomized response attains it —
    # as long as the groups were not merged.
    from sharpdp.guarantees import PureDP
    from sharpdp.mechanisms.randomized_response import RandomizedResponse

    def worst(g: Guarantee) -> bool:
        if isinstance(g, RandomizedResponse):
            return g.categories == 2
        return type(g) in (PureDP, ApproxDP)

    if not (items and all(worst(g) for g, _ in items)):
        return False
    spec = _spec(items)
    return not isinstance(spec, str) and spec[3]


@analysis(
    "kov",
    "Kairouz–Oh–Viswanath 2015 Thm 3.3 / Murtagh–Vadhan 2016 Thm 1.5: optimal composition of "
    "(ε_i, δ_i)-DP items",
    exact_for=_exact_optimum,
)
def _kov(items: Items, adaptive: bool) -> Guarantee:
    spec = _spec(items)
    if isinstance(spec, str):
        raise NotImplied(spec)
    inf_mass, inf_mass_exact, groups, exact = spec
    if len(groups) == 1:
        ((e0, k),) = groups
        return _KOV(inf_mass, inf_mass_exact, e0, k, exact)
    return _Heterogeneous(inf_mass, inf_mass_exact, groups, exact)
