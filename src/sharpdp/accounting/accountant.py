"""The privacy accountant: an odometer and a filter over a durable ledger.

* **Odometer** — what one analyst has spent in one period: :meth:`Accountant.epsilon` and
  :meth:`Accountant.delta` answer for the adaptive composition of every recorded spend
  (``sharpdp.accounting.composition.compose(history, adaptive=True)``), so they are valid upper bounds and
  sharpen automatically as the composition layer learns better analyses.
* **Filter** — :meth:`Accountant.spend` records a spend only if the composition *including it*
  still fits the budget; otherwise it raises :class:`~sharpdp.BudgetExceeded` and records nothing.
  The check and the record happen in one ledger transaction (see :mod:`sharpdp.accounting.ledger`), so
  processes sharing a ledger never overspend together, and a spend is on disk before ``spend``
  returns (record first, then release the result).

Budgets, and when a spend fits (``H`` is the history plus the new spend):

===================  =======================================================================
``PureDP(ε)``        ``compose(H).epsilon(0) ≤ ε``
``ApproxDP(ε, δ)``   ``compose(H).epsilon(δ) ≤ ε``
``ZCDP(ρ, ξ)``       with (ξᵢ, ρᵢ) = ``convert(itemᵢ, ZCDP)``: Σρᵢ ≤ ρ and Σξᵢ + Σρᵢ ≤ ξ + ρ
                     (exact rational sums; zCDP composes additively, BS16 Lemma 2.3)
===================  =======================================================================

The zCDP rule certifies D_α ≤ Σξᵢ + αΣρᵢ = (Σξᵢ + Σρᵢ) + (α − 1)Σρᵢ ≤ (ξ + ρ) + (α − 1)ρ for all
α > 1, i.e. (ξ, ρ)-zCDP. Any other budget type raises :class:`~sharpdp.InvalidParameter`.

Adaptivity: each spend may depend on the results of earlier ones, so histories are always composed
with ``adaptive=True`` (principle 3).

The budget lives in the ledger (``docs/ledger.md``, table ``budgets``). The first accountant on an
account records its budget; any later one must be opened with the same budget (else
:class:`~sharpdp.LedgerError` names both) or with ``budget=None`` (read the recorded one).
:meth:`Accountant.set_budget` changes it explicitly, with a reason, never below what the history
already spends. Every check reads the budget in force inside the spend's transaction, so a change
made by another process applies to this accountant's next spend.

Speed (``bench/ledger.py``): the ledger groups equal descriptions into (item, count) pairs and
caches each account's grouped history, re-reading only rows newer than the cache — also inside the
spend's transaction, so every check covers every committed row, whoever wrote it. A spend thus
composes one pair per *distinct* description. For histories with many distinct descriptions (≥ 8)
a quick sufficient check runs first: the history's Rényi divergences summed at 40 fixed orders
(kept incrementally, every operation rounded up; RDP composition, Mironov 2017 Prop 1) plus the new
spend, with the δ parts of (ε, δ)-DP items combined as δ_tot = 1 − Π(1 − δᵢ) and the summed curve
converted to ε(δ) by CKS20 Prop 12 at (δ − δ_tot)/(1 − δ_tot) (Bun–Steinke 2016 Def 1.12) — a valid
bound. If it fits, the spend is accepted and
this (possibly slightly looser, still valid) reading is recorded; otherwise the full composition
decides. The filter therefore refuses a spend only on the full analysis' word. Inside a spend the
PLD analysis is certified to a relative 1e-3 (``compose(..., accuracy=1e-3)``), which keeps long
histories fast; its value is still a valid bound.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from types import TracebackType
from typing import ClassVar, Self

from sharpdp import _math, _validate
from sharpdp._format import exact, lower, upper
from sharpdp.accounting._items import normalise
from sharpdp.accounting._serialize import dumps
from sharpdp.accounting.analyses.approx_rdp import split_delta
from sharpdp.accounting.composition import Composition, compose
from sharpdp.accounting.ledger import (
    MAX_COUNT,
    BudgetRecord,
    Entry,
    History,
    Ledger,
    Measure,
    Reading,
    account_name,
    is_postgres_url,
)
from sharpdp.conversions import convert, renyi_under_zcdp_line
from sharpdp.errors import BudgetExceeded, InvalidParameter, LedgerError, NotImplied, SharpDPError
from sharpdp.guarantees import RDP, ZCDP, ApproxDP, Guarantee, PureDP

__all__ = ["Accountant", "Summary", "describe_left", "item_text"]

#: The reason recorded with an account's budget when its first accountant opens it.
OPENED = "opened by the account's first accountant"

#: Memoised evaluations kept per accountant (cleared past this size).
_MEMO_LIMIT = 256


@dataclass(frozen=True, slots=True)
class _Verdict:
    """The budget's reading of a history (plus, possibly, a new spend)."""

    spent: float  # odometer reading in the budget's currency (an upper bound)
    fits: bool  # whether that history fits the budget
    remaining: float  # budget currency still available (a lower bound), ≥ 0
    state: Hashable = None  # rule-specific totals, reused incrementally
    sharp: bool = True  # False: from a quick sufficient check, not the full analysis


def _describe(measure: Measure, at_delta: float | None, value: float) -> str:
    """A spent reading in words, ``ε = v at δ = d`` or ``ρ = v``: ``v`` is an upper bound, printed
    with 6 significant digits rounded up (never below it); ``d`` is the budget's, as given."""
    if measure == "rho":
        return f"ρ = {upper(value)}"
    return f"ε = {upper(value)} at δ = {exact(at_delta if at_delta is not None else 0.0)}"


def describe_left(measure: Measure, value: float) -> str:
    """What is left, ``ε = v`` or ``ρ = v``: a lower bound, printed rounded down."""
    return f"{'ρ' if measure == 'rho' else 'ε'} = {lower(value)}"


def item_text(item: Guarantee, count: int = 1, limit: int = 4) -> str:
    """An item to spend in words: its repr, or a composition's first ``limit`` entries
    (``compose(Gaussian(sigma=3.0), 4 × PureDP(epsilon=0.3), … 12 more)``)."""
    if not isinstance(item, Composition):
        text = repr(item)
    else:
        entries = [repr(g) if k == 1 else f"{k} × {g!r}" for g, k in item.items[:limit]]
        more = len(item.items) - limit
        text = f"compose({', '.join(entries)}{f', … {more} more' if more > 0 else ''})"
    return text if count == 1 else f"{count} × {text}"


def _float_up(q: Fraction) -> float:
    """The least float ≥ q."""
    try:
        f = float(q)
    except OverflowError:
        return math.inf
    return math.nextafter(f, math.inf) if Fraction(f) < q else f


def _float_down(q: Fraction) -> float:
    """The greatest float ≤ q."""
    try:
        f = float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf
    return math.nextafter(f, -math.inf) if Fraction(f) > q else f


def _merged(
    counts: Mapping[Guarantee, int], item: Guarantee | None, count: int
) -> list[tuple[Guarantee, int]]:
    """The history's (item, count) pairs with ``count`` more of ``item`` (merged if present)."""
    if item is None:
        return list(counts.items())
    merged = dict(counts)
    merged[item] = merged.get(item, 0) + count
    return list(merged.items())


#: Histories with at least this many distinct descriptions get the quick Rényi-summary pre-check.
_SUMMARY_MIN_ITEMS = 8
#: Relative accuracy certified for the PLD analysis inside a spend (the reported pessimistic value
#: is typically far closer: long histories of one kind read within ~1e-6 of the 1e-4 value, at a
#: third of the cost; the odometer's own readings use compose's default).
_SPEND_ACCURACY = 1e-3
#: Orders of the Rényi summary: α − 1 = 2^(k/2) for k = −14..24 (α ≈ 1.008 … 4097), and α = ∞.
_SUMMARY_ORDERS = (*(1.0 + 2.0 ** (k / 2) for k in range(-14, 25)), math.inf)


#: How many (history, δ) readings :func:`_spent_epsilon` keeps per process, and the most distinct
#: descriptions a kept history has (a longer one grows with every spend and never recurs).
_SPENT_CACHE_SIZE, _SPENT_CACHE_MAX_ITEMS = 512, 32


def _spent_epsilon(
    items: tuple[tuple[Guarantee, int], ...], delta: float, budget: float = math.inf
) -> float:
    """ε at ``delta`` of the adaptive composition of ``items`` (``epsilon_bound``, certified at the
    spend accuracy): an upper bound, and a pure function of frozen, validated descriptions, so
    short histories are kept process-wide. Sessions that charge alike (a service's analysts, one
    query run again, each new session's first charge on an empty history) then price it once:
    on an empty history a bounded count's charge took 13–20 ms of a 130 ms query.

    When that reading exceeds the ``budget``'s ε but an analysis certifies δ(``budget``) ≤
    ``delta``, the history is (``budget``, ``delta``)-DP all the same, and ``budget`` is the
    reading: a bound of ε(δ) read by inversion can land a few ulps above the ε at which δ was
    certified (a calibrated mechanism was refused by its own target; ``max_compositions``,
    which reads δ(ε), allowed one spend more than the accountant)."""
    if len(items) <= _SPENT_CACHE_MAX_ITEMS:
        return _spent_epsilon_kept(items, delta, budget)
    return _spent_epsilon_kept.__wrapped__(items, delta, budget)


@functools.lru_cache(maxsize=_SPENT_CACHE_SIZE)
def _spent_epsilon_kept(
    items: tuple[tuple[Guarantee, int], ...], delta: float, budget: float
) -> float:
    composition = compose(list(items), adaptive=True, accuracy=_SPEND_ACCURACY)
    return _epsilon_within(composition, delta, budget)


def _epsilon_within(composition: Composition, delta: float, budget: float) -> float:
    """``composition.epsilon_bound(delta)``, or ``budget`` where that reads above it while an
    analysis certifies δ(``budget``) ≤ ``delta`` (see :func:`_spent_epsilon`)."""
    spent = composition.epsilon_bound(delta)
    if budget < spent < math.inf and composition.certifies(budget, delta):
        return budget
    return spent


def _names_missing_file(ledger: str | os.PathLike[str] | None) -> bool:
    """Whether ``ledger`` names a ledger file that does not exist (not ``None``, ``":memory:"``
    or a PostgreSQL URL, which are no files)."""
    if ledger is None:
        return False
    text = os.fspath(ledger)
    if text == ":memory:" or is_postgres_url(text):
        return False
    return not os.path.lexists(text)


def _add_up(total: float, term: float) -> float:
    """total + term rounded up (one ulp above the rounded sum; inf absorbs)."""
    value = total + term
    return value if math.isinf(value) else math.nextafter(value, math.inf)


class _RenyiSummary:
    """Σ countᵢ · D_α(partᵢ) of one history at the fixed orders :data:`_SUMMARY_ORDERS`, and its δ.

    Each item is split as the ``approx_rdp`` analysis does (an (ε, δ)-DP item into its ε-DP
    conditional part and δ; mechanisms into their declared privacy items): the conditional parts'
    Rényi divergences add [RDP composition, Mironov 2017 Prop 1] and the δ parts combine as
    δ_tot = 1 − Π(1 − δᵢ) [Bun–Steinke 2016, Def 1.12]. Every sum is rounded up (each product and
    addition moves one ulp towards +∞) and Σ log(1 − δᵢ) down, so the summary is a valid
    approximate-RDP guarantee of the history, and adding a spend costs O(#orders) instead of
    recomposing every distinct description. Updated incrementally: by the accountant's own spends
    (:meth:`advance`) and, for rows written elsewhere, by the difference of the grouped counts.
    """

    __slots__ = ("_lock", "counts", "last_id", "log_keep", "sums")

    def __init__(self) -> None:
        # threads sharing an accountant update it from would_fit, decide and remember at once:
        # unlocked, one thread's new sums overwrote another's while the counts kept both (the
        # summary undercounted, and the quick check accepted spends past the budget)
        self._lock = threading.RLock()
        self.last_id = -1
        self.counts: dict[Guarantee, int] = {}
        self.sums = [0.0] * len(_SUMMARY_ORDERS)
        self.log_keep = 0.0  # Σ count·log(1 − δᵢ) over the δ parts

    @staticmethod
    def _parts(item: Guarantee, count: int) -> tuple[list[tuple[Guarantee, int]], float]:
        """The item's conditional Rényi parts and ``count``·Σ log(1 − δ) of its δ parts."""
        parts, log_keep = [], 0.0
        for g, c in normalise([(item, count)]):
            inner, delta = split_delta(g)
            parts.append((inner, c))
            if delta > 0.0:
                log_keep += c * math.log1p(-delta)
        return parts, log_keep

    def _terms(self, item: Guarantee, count: int) -> tuple[list[float], float]:
        parts, log_keep = self._parts(item, count)
        terms = []
        for alpha in _SUMMARY_ORDERS:
            total = 0.0
            for g, c in parts:
                r = g.renyi(alpha)
                total = _add_up(total, _add_up(0.0, c * r) if r else 0.0)
            terms.append(total)
        return terms, log_keep

    def _add(self, item: Guarantee, count: int) -> None:
        terms, log_keep = self._terms(item, count)
        self.sums = [_add_up(s, t) for s, t in zip(self.sums, terms, strict=True)]
        self.log_keep += log_keep
        self.counts[item] = self.counts.get(item, 0) + count

    def _sync(self, history: History) -> None:
        with self._lock:
            self._sync_locked(history)

    def _sync_locked(self, history: History) -> None:
        if history.last_id == self.last_id:
            return
        new = history.counts
        if any(new.get(item, 0) < count for item, count in self.counts.items()):
            # not a prefix: rebuild
            self.counts, self.sums, self.log_keep = {}, [0.0] * len(_SUMMARY_ORDERS), 0.0
        for item, count in new.items():
            extra = count - self.counts.get(item, 0)
            if extra:
                self._add(item, extra)
        self.last_id = history.last_id

    def advance(self, base_id: int, last_id: int, item: Guarantee, count: int) -> None:
        """The history at ``base_id`` plus ``count`` × ``item`` is the history at ``last_id``."""
        with self._lock:
            if self.last_id == base_id:
                self._add(item, count)
                self.last_id = last_id

    def epsilon(self, history: History, item: Guarantee, count: int, delta: float) -> float:
        """A valid ε(δ) of the history plus ``count`` × ``item``: δ_tot + (1 − δ_tot)·CKS20 of
        the summed curve (min over the orders), as the ``approx_rdp`` analysis converts."""
        terms, log_keep = self._terms(item, count)
        with self._lock:  # the sums and log_keep of one history, read together
            self._sync_locked(history)
            sums, log_keep_now = list(self.sums), self.log_keep
        points = []
        for alpha, summed, term in zip(_SUMMARY_ORDERS, sums, terms, strict=True):
            value = _add_up(summed, term)
            if value < math.inf:
                points.append((alpha, value))
        if not points:
            return math.inf
        orders, values = zip(*points, strict=True)
        total = log_keep_now + log_keep
        if total == 0.0:  # no δ part: plain RDP (pure-DP budgets included)
            return RDP(orders, values).epsilon(delta)
        # δ_tot = −expm1(Σ log(1 − δᵢ)): the sum moved down (a larger δ_tot), the result rounded up
        keep = total * (1.0 + 2.0**-48) - 1e-300
        delta_total = min(1.0, _math.up(-math.expm1(keep)))
        if delta < delta_total or delta_total >= 1.0:
            return math.inf
        # the curve must certify (δ − δ_tot)/(1 − δ_tot), rounded down (exactly)
        exact = (Fraction(delta) - Fraction(delta_total)) / (1 - Fraction(delta_total))
        target = float(exact)
        if Fraction(target) > exact:
            target = math.nextafter(target, 0.0)
        return RDP(orders, values).epsilon(target)


class _Rule:
    """How a budget type reads a history. Subclasses register in :data:`_RULES`."""

    measure: ClassVar[Measure]

    def __init__(self, budget: Guarantee) -> None:
        self.budget = budget

    @property
    def at_delta(self) -> float | None:
        return None

    def prepare(self, item: Guarantee) -> None:
        """Work that can be done before the ledger lock is taken (may raise)."""

    def evaluate(self, history: History, item: Guarantee | None, count: int) -> _Verdict:
        raise NotImplementedError

    def remember(self, last_id: int, item: Guarantee, count: int, verdict: _Verdict) -> None:
        """Update incremental totals after ``count`` × ``item`` was recorded as row ``last_id``."""

    def describe(self, value: float) -> str:
        raise NotImplementedError


class _EpsilonRule(_Rule):
    """``PureDP(ε)`` and ``ApproxDP(ε, δ)`` budgets: ε of the composition at the budget's δ."""

    measure: ClassVar[Measure] = "epsilon"

    def __init__(self, budget: Guarantee) -> None:
        super().__init__(budget)
        if isinstance(budget, ApproxDP):
            self.epsilon, self.delta = budget.epsilon_, budget.delta_
        elif isinstance(budget, PureDP):
            self.epsilon, self.delta = budget.epsilon_, 0.0
        else:  # pragma: no cover - the registry only maps these two types here
            raise InvalidParameter(f"budget {budget!r} is not an ε budget")
        self._summary: _RenyiSummary | None = None

    @property
    def at_delta(self) -> float | None:
        return self.delta

    def evaluate(self, history: History, item: Guarantee | None, count: int) -> _Verdict:
        if item is not None and len(history.counts) >= _SUMMARY_MIN_ITEMS:
            # Many distinct descriptions: first try the quick, valid Rényi-summary bound; the
            # full analysis (at least as sharp up to its α search) runs only when it refuses.
            if self._summary is None:
                self._summary = _RenyiSummary()
            quick = self._summary.epsilon(history, item, count, self.delta)
            if quick <= self.epsilon:
                return self._verdict(quick, state=history.last_id, sharp=False)
        merged = _merged(history.counts, item, count)
        spent = _spent_epsilon(tuple(merged), self.delta, self.epsilon)
        return self._verdict(spent, state=history.last_id)

    def _verdict(self, spent: float, *, state: int, sharp: bool = True) -> _Verdict:
        if self.epsilon == math.inf:
            remaining = math.inf
        elif spent == math.inf:
            remaining = 0.0
        else:
            remaining = max(0.0, _float_down(Fraction(self.epsilon) - Fraction(spent)))
        return _Verdict(spent, spent <= self.epsilon, remaining, state, sharp)

    def remember(self, last_id: int, item: Guarantee, count: int, verdict: _Verdict) -> None:
        if self._summary is not None and isinstance(verdict.state, int):
            self._summary.advance(verdict.state, last_id, item, count)

    def describe(self, value: float) -> str:
        return _describe("epsilon", self.delta, value)


class _ZCDPRule(_Rule):
    """``ZCDP(ρ, ξ)`` budgets: exact sums of the items' zCDP parameters."""

    measure: ClassVar[Measure] = "rho"

    def __init__(self, budget: Guarantee) -> None:
        super().__init__(budget)
        if not isinstance(budget, ZCDP):  # pragma: no cover - registry maps ZCDP only
            raise InvalidParameter(f"budget {budget!r} is not a zCDP budget")
        self.rho = Fraction(budget.rho) if budget.rho < math.inf else None
        self.total = None if self.rho is None else Fraction(budget.xi) + self.rho
        self._converted: dict[Guarantee, tuple[Fraction | None, Fraction]] = {}
        self._base: dict[int, tuple[Fraction | None, Fraction]] = {}

    def prepare(self, item: Guarantee) -> None:
        self._zcdp(item)

    def _zcdp(self, item: Guarantee) -> tuple[Fraction | None, Fraction]:
        """(ρ, ξ) of the item's sharpest zCDP guarantee, as exact rationals (ρ = None: infinite)."""
        cached = self._converted.get(item)
        if cached is None:
            exact = item.exact_zcdp()  # summed before any rounding where it is known
            if exact is not None:
                cached = exact
            else:
                try:
                    z = convert(item, ZCDP)
                    cached = (None if z.rho == math.inf else Fraction(z.rho), Fraction(z.xi))
                except NotImplied as err:
                    cached = self._zcdp_of_parts(item, err)
            if len(self._converted) >= 100_000:
                self._converted.clear()
            self._converted[item] = cached
        return cached

    def _zcdp_of_parts(self, item: Guarantee, err: NotImplied) -> tuple[Fraction | None, Fraction]:
        """A composition no conversion reads as a whole: the sum of its parts' (ρ, ξ) (zCDP
        adds, Bun–Steinke 2016 Lemma 2.3; ``compose([ZCDP(0.01)] * 3)`` was refused)."""
        parts = normalise([(item, 1)])
        if len(parts) == 1 and parts[0] == (item, 1):  # not a composition: nothing to split
            raise type(err)(
                f"cannot charge {item!r} to the zCDP budget {self.budget!r}: {err}"
            ) from err
        rho: Fraction | None = Fraction(0)
        xi = Fraction(0)
        for part, count in parts:
            r, x = self._zcdp(part)
            rho = None if rho is None or r is None else rho + count * r
            xi += count * x
        return rho, xi

    def _sums(self, history: History) -> tuple[Fraction | None, Fraction]:
        base = self._base.get(history.last_id)
        if base is None:
            rho: Fraction | None = Fraction(0)
            xi = Fraction(0)
            for item, count in history.counts.items():
                r, x = self._zcdp(item)
                rho = None if r is None or rho is None else rho + count * r
                xi += count * x
            base = (rho, xi)
            self._base.clear()  # only the latest snapshot is worth keeping
            self._base[history.last_id] = base
        return base

    def remember(self, last_id: int, item: Guarantee, count: int, verdict: _Verdict) -> None:
        if isinstance(verdict.state, tuple):  # the totals of the history ending at row last_id
            self._base.clear()
            self._base[last_id] = verdict.state

    def evaluate(self, history: History, item: Guarantee | None, count: int) -> _Verdict:
        rho, xi = self._sums(history)
        if item is not None:
            r, x = self._zcdp(item)
            rho = None if r is None or rho is None else rho + count * r
            xi += count * x
        if rho is None:
            return _Verdict(math.inf, self.rho is None, math.inf if self.rho is None else 0.0)
        spent = _float_up(rho)
        if self.rho is None or self.total is None:
            return _Verdict(spent, True, math.inf, (rho, xi))
        fits = rho <= self.rho and xi + rho <= self.total
        if not fits and self.total > self.rho and self._under_line(history, item, count):
            # (ξ, ρ)-zCDP by the history's summed Rényi curve, though not by its summed (ρᵢ, ξᵢ):
            # ρ at the budget's ξ is then at most the budget's, read as all of it
            return _Verdict(float(self.rho), True, 0.0, (rho, xi))
        room = min(self.rho - rho, self.total - xi - rho)
        return _Verdict(spent, fits, max(0.0, _float_down(room)), (rho, xi))

    def _under_line(self, history: History, item: Guarantee | None, count: int) -> bool:
        """Whether the history (with ``count`` × ``item``) lies under the budget's line
        ξ + ρα: RDP adds [Mironov 2017, Prop 1], so Σ cᵢ D_α(itemᵢ) ≤ ξ + ρα at every α makes
        it (ξ, ρ)-zCDP [Bun–Steinke 2016, Def 1.1]. A budget with ξ > 0 has slack that summed
        (ρᵢ, ξᵢ) pairs cannot use: Laplace(0.95) fits ZCDP(0.1, 0.5) (calibrate gives it) while
        its ρᵢ is 0.55."""
        from sharpdp.accounting.analyses.rdp import RDPSum

        merged = normalise([*history.counts.items(), *([(item, count)] if item else [])])
        budget = self.budget
        assert isinstance(budget, ZCDP)
        return renyi_under_zcdp_line(RDPSum(tuple(merged)), budget.rho, budget.xi)

    def describe(self, value: float) -> str:
        return _describe("rho", None, value)


#: Budget type → the rule that reads histories against it (exact type lookup, no isinstance ladder).
_RULES: dict[type[Guarantee], type[_Rule]] = {
    PureDP: _EpsilonRule,
    ApproxDP: _EpsilonRule,
    ZCDP: _ZCDPRule,
}


def _make_rule(budget: object) -> _Rule:
    """The rule enforcing ``budget`` (InvalidParameter naming it if it is of another type)."""
    rule = _RULES.get(type(budget)) if isinstance(budget, Guarantee) else None
    if rule is None or not isinstance(budget, Guarantee):
        kinds = ", ".join(t.__name__ for t in _RULES)
        raise InvalidParameter(
            f"budget must be one of {kinds}, got {budget!r} ({type(budget).__name__})"
        )
    return rule(budget)


@dataclass(frozen=True, slots=True)
class Summary:
    """One reading of an account: what is spent, of which budget (see :meth:`Accountant.summary`).

    Attributes:
        analyst: the account's analyst.
        period: the account's period label.
        budget: the budget in force (recorded in the ledger).
        measure: the budget's currency: ``"epsilon"`` (ε at δ = ``at_delta``) or ``"rho"``.
        at_delta: the δ of ε readings (``None`` for ρ).
        spent: the odometer in that currency (an upper bound).
        remaining: what is left (a lower bound, ≥ 0; 0 when over the budget).
        over_budget: whether the history exceeds the budget. sharpdp never records such a spend
            or such a budget; only a ledger written before the budget lived in it (schema
            version 1) or edited by another tool can read so.
        spends: the number of recorded spends (rows) of the account.
        budget_since: when the budget in force was recorded (UTC).
        budget_reason: why it was recorded.
    """

    analyst: str
    period: str
    budget: Guarantee
    measure: Measure
    at_delta: float | None
    spent: float
    remaining: float
    over_budget: bool
    spends: int
    budget_since: datetime
    budget_reason: str

    @property
    def reading(self) -> str:
        """What is spent in words, ``ε = v at δ = d`` or ``ρ = v`` (``v`` rounded up)."""
        return _describe(self.measure, self.at_delta, self.spent)

    def __str__(self) -> str:
        head = f"analyst {self.analyst!r}, period {self.period!r}: spent {self.reading}"
        if self.over_budget:
            head += f", OVER the budget {self.budget!r}"
        else:
            head += f" of the budget {self.budget!r}, remaining {lower(self.remaining)}"
        return (
            f"{head}; {self.spends} spend(s); budget recorded "
            f"{self.budget_since.isoformat(timespec='seconds')} ({self.budget_reason})"
        )


class Accountant:
    """Odometer and filter of one analyst's privacy spending in one period, over a durable ledger.

    Example:
        >>> import sharpdp as sdp
        >>> from sharpdp.accounting.accountant import Accountant
        >>> acc = Accountant(budget=sdp.PureDP(1.0), analyst="ana")
        >>> entry = acc.spend(sdp.PureDP(0.25), count=2)
        >>> acc.epsilon(0.0), acc.remaining()
        (0.5, 0.5)
        >>> acc.would_fit(sdp.PureDP(0.75))
        False

    The budget belongs to the ledger account, not to the accountant: the first accountant on an
    (analyst, period) records ``budget``; later ones must pass the same budget, or ``None`` to use
    the recorded one. :meth:`set_budget` changes it explicitly (recorded with time and reason).

    Args:
        budget: ``sdp.PureDP(ε)``, ``sdp.ApproxDP(ε, δ)`` or ``sdp.ZCDP(ρ)`` (see the module
            docstring for when a spend fits each), or ``None`` to enforce the budget already
            recorded for the account.
        ledger: ``None`` for an in-memory ledger, a file path (created if missing, unless
            ``budget`` is ``None``), a ``postgresql://`` URL (a
            :class:`~sharpdp.accounting.ledger.PostgresLedger`; its tables are created likewise)
            or a :class:`~sharpdp.accounting.ledger.Ledger` (shared; not closed by the
            accountant).
        analyst: the analyst whose spending this is (a non-empty string).
        period: the budget period label (default ``"all"``: a single all-time period). Use e.g.
            ``f"{date:%Y-%m}"`` for monthly budgets: each (analyst, period) is a separate account.
        timeout: seconds to wait for another process's ledger lock (when opening a path).

    Raises:
        InvalidParameter: a budget of another type (named), ``budget=None`` for an account with
            no recorded budget, or bad analyst/period/ledger.
        LedgerError: the account's recorded budget is not ``budget`` (both are named); or the
            ledger file is corrupted, of a newer format, or cannot be opened.
    """

    __slots__ = ("_analyst", "_current", "_ledger", "_memo", "_owns_ledger", "_period")

    def __init__(
        self,
        budget: Guarantee | None = None,
        ledger: Ledger | str | os.PathLike[str] | None = None,
        analyst: str = "default",
        *,
        period: str = "all",
        timeout: float = 30.0,
    ) -> None:
        if budget is not None:
            _make_rule(budget)  # validate the type before any file is opened or written
        self._analyst = account_name("analyst", analyst)
        self._period = account_name("period", period)
        self._memo: dict[tuple[int, int, Guarantee | None, int], _Verdict] = {}
        if isinstance(ledger, Ledger):
            self._ledger, self._owns_ledger = ledger, False
        elif ledger is None or isinstance(ledger, str | os.PathLike):
            # Without a budget only an existing account can be opened: never create a file then.
            if budget is None and ledger is not None and _names_missing_file(ledger):
                raise LedgerError(
                    f"ledger {os.path.abspath(os.fspath(ledger))!r} does not exist: without a "
                    "budget an Accountant only opens an existing ledger (pass budget= to create "
                    "one)"
                )
            opened = Ledger(ledger, timeout=timeout, create=budget is not None)
            self._ledger, self._owns_ledger = opened, True
        else:
            raise InvalidParameter(
                f"ledger must be None, a file path or a sharpdp.accounting.ledger.Ledger, got {ledger!r}"
            )
        try:
            record = self._open(budget)
            self._current: tuple[BudgetRecord, _Rule] = (record, self._recorded_rule(record))
        except BaseException:
            self.close()
            raise

    # -- properties -------------------------------------------------------------------------------
    @property
    def budget(self) -> Guarantee:
        """The budget this accountant enforces: the account's budget recorded in the ledger
        (re-read, so a :meth:`set_budget` by another process shows)."""
        return self._rule(self._history()).budget

    @property
    def analyst(self) -> str:
        """The analyst of the account."""
        return self._analyst

    @property
    def period(self) -> str:
        """The period label of the account."""
        return self._period

    @property
    def ledger(self) -> Ledger:
        """The underlying ledger."""
        return self._ledger

    @property
    def measure(self) -> Measure:
        """The budget's currency: ``"epsilon"`` (PureDP/ApproxDP budgets) or ``"rho"`` (ZCDP)."""
        return self._rule(self._history()).measure

    # -- the budget -------------------------------------------------------------------------------
    def set_budget(self, budget: Guarantee, *, reason: str) -> BudgetRecord:
        """Change the account's budget, recording the new one in the ledger with time and reason.

        The history is read against the new budget inside the recording transaction: a budget
        the history already exceeds is refused (a budget is never set below what is spent).
        Every accountant on the account enforces the new budget from its next check on.

        Args:
            budget: the new budget (``PureDP``, ``ApproxDP`` or ``ZCDP``; the type may change).
            reason: why it changes (a non-empty string, stored with the record).

        Returns:
            The new :class:`~sharpdp.accounting.ledger.BudgetRecord`.

        Raises:
            BudgetExceeded: the history already spends more than ``budget``; nothing was recorded.
            InvalidParameter: a budget of another type, or an empty reason; nothing was recorded.
            NotImplied: a ZCDP budget, and a recorded item implies no zCDP bound; nothing was
                recorded.
            LedgerError: the ledger could not be read or written; nothing was recorded.
        """
        rule = _make_rule(budget)
        refused: list[tuple[History, _Verdict]] = []

        def check(history: History) -> None:
            verdict = rule.evaluate(history, None, 0)
            if not verdict.fits:
                refused.append((history, verdict))
                raise BudgetExceeded("refused")  # explained below, once the lock is released

        try:
            record = self._ledger.set_budget(
                self._analyst, self._period, budget, reason=reason, check=check
            )
        except BudgetExceeded:
            if not refused:
                raise
            history, verdict = refused[-1]
            current = history.budget.budget if history.budget is not None else None
            raise BudgetExceeded(
                f"cannot set the budget of analyst {self._analyst!r} (period {self._period!r}) "
                f"to {budget!r}: its history already reads {rule.describe(verdict.spent)}, more "
                f"than that budget allows (a budget is never set below what is spent); the "
                f"budget stays {current!r} and nothing was recorded"
            ) from None
        self._current = (record, rule)
        return record

    def budgets(self) -> tuple[BudgetRecord, ...]:
        """Every budget recorded for the account, in order: the first, then each change (the last
        one is in force), each with its time and reason."""
        return self._ledger.budgets(self._analyst, self._period)

    # -- the filter -------------------------------------------------------------------------------
    def spend(self, item: Guarantee, count: int = 1) -> Entry:
        """Record ``count`` runs of ``item`` if the history including them fits the budget.

        The check reads every spend committed to the ledger for this account (by any process) and
        the budget in force, and records the new spend in the same transaction, durably, before
        returning. Release a result only after ``spend`` has returned.

        Args:
            item: a sharpdp guarantee or mechanism (its description is recorded).
            count: how many runs (an integer ≥ 1).

        Returns:
            The recorded :class:`~sharpdp.accounting.ledger.Entry` (with the post-spend odometer
            reading and the budget it was checked against).

        Raises:
            BudgetExceeded: the spend would not fit; nothing was recorded.
            InvalidParameter: ``item`` is not a guarantee or cannot be described (e.g.
                ``RDP.from_function``), or ``count`` is not an integer ≥ 1; nothing was recorded.
            NotImplied: under a ZCDP budget, ``item`` implies no zCDP bound; nothing was recorded.
            LedgerError: the ledger could not be read or written; nothing was recorded.
        """
        k, history = self._check_item(item, count)
        # Warm the memo outside the lock; inside, it is reused if no one else wrote meanwhile.
        self._evaluate(history, item, k)
        accepted: list[tuple[_Rule, _Verdict, int]] = []
        refused: list[tuple[History, _Rule, _Verdict]] = []

        def decide(history: History) -> Reading:
            record, rule = self._state(history)  # the budget in force now, whoever recorded it
            verdict = self._evaluate(history, item, k)
            if not verdict.fits:
                refused.append((history, rule, verdict))
                raise BudgetExceeded("refused")  # explained below, once the lock is released
            accepted.append((rule, verdict, record.id))
            return Reading(verdict.spent, rule.measure, rule.at_delta)

        try:
            entry = self._ledger.append(self._analyst, self._period, item, k, decide=decide)
        except BudgetExceeded:
            if not refused:
                raise
            raise BudgetExceeded(self._refusal(item, k, *refused[-1])) from None
        if accepted:
            rule, verdict, budget_id = accepted[-1]
            if verdict.sharp:  # the odometer of the new history, already computed
                self._remember((entry.id, budget_id, None, 0), verdict)
            rule.remember(entry.id, item, k, verdict)
        return entry

    def would_fit(self, item: Guarantee, count: int = 1) -> bool:
        """Whether :meth:`spend` would accept ``count`` runs of ``item`` now (a dry run).

        Nothing is recorded. Another process may spend (or change the budget) in between, so
        only :meth:`spend`'s own check is binding.
        """
        k, history = self._check_item(item, count)
        return self._evaluate(history, item, k).fits

    def projected(self, item: Guarantee, count: int = 1) -> float:
        """The odometer reading (:meth:`spent`'s currency) that :meth:`spend` of ``count`` runs of
        ``item`` would leave now, by the analysis :meth:`spend` itself runs: an upper bound of
        :meth:`spent` after that spend, equal to it unless the history holds many different
        items, where the spend may be accepted on a quicker valid bound (the Rényi summary) and
        :meth:`spent` then reads the sharper full analysis. Nothing is recorded; whether it fits
        is :meth:`would_fit`.
        """
        k, history = self._check_item(item, count)
        return self._evaluate(history, item, k).spent

    # -- the odometer -----------------------------------------------------------------------------
    def composition(self) -> Composition:
        """The adaptive composition of the whole history (answers epsilon/delta/renyi)."""
        return compose(list(self._history().counts.items()), adaptive=True)

    def epsilon(self, delta: float) -> float:
        """ε spent so far at ``delta``: ``composition().epsilon_bound(delta)`` (an upper bound),
        or the budget's ε where that reads above it but δ(budget ε) ≤ ``delta`` is certified
        (as :meth:`spent` reads it: ε(δ) read by inversion can land ulps above the ε at which
        δ was certified, and an accepted history then read over its budget)."""
        budget = self.budget
        cap = budget.epsilon_ if isinstance(budget, ApproxDP | PureDP) else math.inf
        return _epsilon_within(self.composition(), delta, cap)

    def delta(self, epsilon: float) -> float:
        """δ spent so far at ``epsilon``: ``composition().delta_bound(epsilon)`` (an upper
        bound)."""
        return self.composition().delta_bound(epsilon)

    def spent(self) -> float:
        """The odometer in the budget's currency (an upper bound).

        ε at the budget's δ for ``ApproxDP`` budgets (δ = 0 for ``PureDP``), Σρᵢ for ``ZCDP``
        budgets.
        """
        return self._evaluate(self._history(), None, 0).spent

    def remaining(self) -> float:
        """What is left of the budget, in its currency (a lower bound, ≥ 0).

        For ``PureDP(ε)``/``ApproxDP(ε, δ)`` budgets: ε − ``spent()``, the ε still available at the
        budget's δ, rounded down. Under ``ApproxDP`` budgets ε composes sub-additively, so more than
        this may still fit — :meth:`would_fit` gives the definite answer for a given spend. For
        ``ZCDP(ρ, ξ)`` budgets: the largest ρ′ such that one more ρ′-zCDP spend fits,
        min(ρ − Σρᵢ, ξ + ρ − Σξᵢ − Σρᵢ), rounded down. 0 when the history is over the budget
        (:meth:`summary` says so). With ξ > 0 a history past Σρᵢ ≤ ρ may still fit by its summed
        Rényi curve (under ξ + ρα): it reads as spent ρ, remaining 0, and more spends can still
        fit by that curve — :meth:`would_fit` says which.
        """
        return self._evaluate(self._history(), None, 0).remaining

    def summary(self) -> Summary:
        """Spent and budget in one reading (``str()`` of it is a one-line statement)."""
        history = self._history()
        record, rule = self._state(history)
        verdict = self._evaluate(history, None, 0)
        return Summary(
            self._analyst,
            self._period,
            rule.budget,
            rule.measure,
            rule.at_delta,
            verdict.spent,
            verdict.remaining,
            not verdict.fits,
            history.entries,
            record.timestamp,
            record.reason,
        )

    def history(self) -> tuple[Entry, ...]:
        """Every recorded spend of this account, in commit order."""
        return self._ledger.entries(self._analyst, self._period)

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the ledger if this accountant opened it."""
        if self._owns_ledger:
            self._ledger.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        try:
            s = self.summary()
            reading = f"budget={s.budget!r}, spent={s.spent!r}" + (
                ", over_budget=True" if s.over_budget else ""
            )
        except SharpDPError:  # e.g. a closed ledger: show the last budget seen
            reading = f"budget={self._current[0].budget!r}, spent=<unreadable>"
        return (
            f"Accountant({reading}, ledger={self._ledger!r}, analyst={self._analyst!r}, "
            f"period={self._period!r})"
        )

    # -- internals --------------------------------------------------------------------------------
    def _open(self, budget: Guarantee | None) -> BudgetRecord:
        """The account's budget record: recorded now if the account has none (``budget`` given),
        else checked against ``budget``."""
        where = f"analyst {self._analyst!r} (period {self._period!r}) in {self._ledger!r}"
        if budget is None:
            record = self._ledger.budget(self._analyst, self._period)
            if record is None:
                raise InvalidParameter(
                    f"budget: no budget is recorded for {where}; pass budget= to open the "
                    "account with one"
                )
            return record
        record = self._ledger.open_account(self._analyst, self._period, budget, reason=OPENED)
        if type(record.budget) is not type(budget) or record.budget != budget:
            raise LedgerError(
                f"{where} has the budget {record.budget!r} (recorded "
                f"{record.timestamp.isoformat(timespec='seconds')}: {record.reason}), not "
                f"{budget!r}: the budget lives in the ledger. Open the account with that budget "
                "or budget=None, or change it explicitly with "
                "Accountant.set_budget(new_budget, reason=...)"
            )
        return record

    def _recorded_rule(self, record: BudgetRecord) -> _Rule:
        try:
            return _make_rule(record.budget)
        except InvalidParameter as err:
            raise LedgerError(
                f"{self._ledger!r}: the recorded budget of analyst {self._analyst!r} (period "
                f"{self._period!r}) cannot be enforced: {err}"
            ) from err

    def _rule(self, history: History) -> _Rule:
        """The rule of the budget in force in ``history``."""
        return self._state(history)[1]

    def _state(self, history: History) -> tuple[BudgetRecord, _Rule]:
        """The budget in force in ``history`` and its rule (rebuilt when the budget changed)."""
        record = history.budget
        if record is None:
            raise LedgerError(
                f"{self._ledger!r}: analyst {self._analyst!r} (period {self._period!r}) has no "
                "recorded budget any more (was the ledger edited?)"
            )
        current = self._current
        if record.id != current[0].id:
            current = (record, self._recorded_rule(record))
            self._current = current  # one assignment: threads see one pair or the other
        return current

    def _check_item(self, item: Guarantee, count: int) -> tuple[int, History]:
        if not isinstance(item, Guarantee):
            raise InvalidParameter(
                f"item must be a sharpdp guarantee or mechanism, got {item!r} "
                f"({type(item).__name__})"
            )
        k = _validate.integer("count", count, minimum=1, maximum=MAX_COUNT)
        dumps(item)  # raises InvalidParameter if the item cannot be recorded faithfully
        history = self._history()
        self._rule(history).prepare(item)
        return k, history

    def _history(self) -> History:
        return self._ledger.history(self._analyst, self._period)

    def _evaluate(self, history: History, item: Guarantee | None, count: int) -> _Verdict:
        record, rule = self._state(history)
        key = (history.last_id, record.id, item, count)
        verdict = self._memo.get(key)
        if verdict is None:
            verdict = rule.evaluate(history, item, count)
            self._remember(key, verdict)
        return verdict

    def _remember(self, key: tuple[int, int, Guarantee | None, int], verdict: _Verdict) -> None:
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = verdict

    def _refusal(
        self, item: Guarantee, count: int, history: History, rule: _Rule, verdict: _Verdict
    ) -> str:
        now = self._evaluate(history, None, 0)
        never = (
            " (no amount of this budget's currency pays for it: e.g. Gaussian noise has no finite "
            "pure ε, and δ > 0 cannot be paid in pure ε or in ρ)"
            if math.isinf(verdict.spent)
            else ""
        )
        return (
            f"spending {item_text(item, count)} would bring analyst {self._analyst!r} (period "
            f"{self._period!r}) to {rule.describe(verdict.spent)}, over the budget "
            f"{rule.budget!r}{never}; nothing was recorded (spent so far "
            f"{rule.describe(now.spent)}, remaining {describe_left(rule.measure, now.remaining)})"
        )
