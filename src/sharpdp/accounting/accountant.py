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

Speed (``bench/ledger.py``): the ledger groups equal descriptions into (item, count) pairs and
caches each account's grouped history, re-reading only rows newer than the cache — also inside the
spend's transaction, so every check covers every committed row, whoever wrote it. A spend thus
composes one pair per *distinct* description. For histories with many distinct descriptions (≥ 32)
a quick sufficient check runs first: the history's Rényi divergences summed at 40 fixed orders
(kept incrementally, every operation rounded up; RDP composition, Mironov 2017 Prop 1) plus the new
spend, converted to ε(δ) by CKS20 Prop 12 — a valid bound. If it fits, the spend is accepted and
this (possibly slightly looser, still valid) reading is recorded; otherwise the full composition
decides. The filter therefore refuses a spend only on the full analysis' word. Inside a spend the
PLD analysis is certified to a relative 1e-3 (``compose(..., accuracy=1e-3)``), which keeps long
histories fast; its value is still a valid bound.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import TracebackType
from typing import ClassVar, Self

from sharpdp import _validate
from sharpdp.accounting._serialize import dumps
from sharpdp.accounting.composition import compose
from sharpdp.accounting.ledger import Entry, History, Ledger, Measure, account_name
from sharpdp.conversions import convert
from sharpdp.errors import BudgetExceeded, InvalidParameter, NotImplied
from sharpdp.guarantees import RDP, ZCDP, ApproxDP, Guarantee, PureDP

__all__ = ["Accountant"]

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
_SUMMARY_MIN_ITEMS = 32
#: Relative accuracy certified for the PLD analysis inside a spend (the reported pessimistic value
#: is typically far closer: long histories of one kind read within ~1e-6 of the 1e-4 value, at a
#: third of the cost; the odometer's own readings use compose's default).
_SPEND_ACCURACY = 1e-3
#: Orders of the Rényi summary: α − 1 = 2^(k/2) for k = −14..24 (α ≈ 1.008 … 4097), and α = ∞.
_SUMMARY_ORDERS = (*(1.0 + 2.0 ** (k / 2) for k in range(-14, 25)), math.inf)


def _add_up(total: float, term: float) -> float:
    """total + term rounded up (one ulp above the rounded sum; inf absorbs)."""
    value = total + term
    return value if math.isinf(value) else math.nextafter(value, math.inf)


class _RenyiSummary:
    """Σ countᵢ · D_α(itemᵢ) of one history at the fixed orders :data:`_SUMMARY_ORDERS`.

    Each sum is rounded up (every product and addition moves one ulp towards +∞), so it bounds
    the Rényi divergence of the adaptive composition at that order (RDP composition, Mironov 2017
    Prop 1). ``sharpdp.RDP`` of these points is therefore a valid guarantee of the history, and
    adding a spend costs O(#orders) instead of recomposing every distinct description. Updated
    incrementally: by the accountant's own spends (:meth:`advance`) and, for rows written
    elsewhere, by the difference of the grouped counts.
    """

    __slots__ = ("counts", "last_id", "sums")

    def __init__(self) -> None:
        self.last_id = -1
        self.counts: dict[Guarantee, int] = {}
        self.sums = [0.0] * len(_SUMMARY_ORDERS)

    def _add(self, item: Guarantee, count: int) -> None:
        for j, alpha in enumerate(_SUMMARY_ORDERS):
            r = item.renyi(alpha)
            self.sums[j] = _add_up(self.sums[j], _add_up(0.0, count * r) if r else 0.0)
        self.counts[item] = self.counts.get(item, 0) + count

    def _sync(self, history: History) -> None:
        if history.last_id == self.last_id:
            return
        new = history.counts
        if any(new.get(item, 0) < count for item, count in self.counts.items()):
            self.counts, self.sums = {}, [0.0] * len(_SUMMARY_ORDERS)  # not a prefix: rebuild
        for item, count in new.items():
            extra = count - self.counts.get(item, 0)
            if extra:
                self._add(item, extra)
        self.last_id = history.last_id

    def advance(self, base_id: int, last_id: int, item: Guarantee, count: int) -> None:
        """The history at ``base_id`` plus ``count`` × ``item`` is the history at ``last_id``."""
        if self.last_id == base_id:
            self._add(item, count)
            self.last_id = last_id

    def epsilon(self, history: History, item: Guarantee, count: int, delta: float) -> float:
        """A valid ε(δ) of the history plus ``count`` × ``item`` (min over the orders of CKS20)."""
        self._sync(history)
        points = []
        for alpha, total in zip(_SUMMARY_ORDERS, self.sums, strict=True):
            r = item.renyi(alpha)
            value = _add_up(total, _add_up(0.0, count * r) if r else 0.0)
            if value < math.inf:
                points.append((alpha, value))
        if not points:
            return math.inf
        orders, values = zip(*points, strict=True)
        return RDP(orders, values).epsilon(delta)


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
        spent = compose(merged, adaptive=True, accuracy=_SPEND_ACCURACY).epsilon(self.delta)
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
        return f"ε = {value!r} at δ = {self.delta!r}"


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
            try:
                z = convert(item, ZCDP)
            except NotImplied as err:
                raise type(err)(
                    f"cannot charge {item!r} to the zCDP budget {self.budget!r}: {err}"
                ) from err
            cached = (None if z.rho == math.inf else Fraction(z.rho), Fraction(z.xi))
            if len(self._converted) >= 100_000:
                self._converted.clear()
            self._converted[item] = cached
        return cached

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
        room = min(self.rho - rho, self.total - xi - rho)
        return _Verdict(spent, fits, max(0.0, _float_down(room)), (rho, xi))

    def describe(self, value: float) -> str:
        return f"ρ = {value!r}"


#: Budget type → the rule that reads histories against it (exact type lookup, no isinstance ladder).
_RULES: dict[type[Guarantee], type[_Rule]] = {
    PureDP: _EpsilonRule,
    ApproxDP: _EpsilonRule,
    ZCDP: _ZCDPRule,
}


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

    Args:
        budget: ``sdp.PureDP(ε)``, ``sdp.ApproxDP(ε, δ)`` or ``sdp.ZCDP(ρ)`` (see the module
            docstring for when a spend fits each).
        ledger: ``None`` for an in-memory ledger, a file path (created if missing) or a
            :class:`~sharpdp.accounting.ledger.Ledger` (shared; not closed by the accountant).
        analyst: the analyst whose spending this is (a non-empty string).
        period: the budget period label (default ``"all"``: a single all-time period). Use e.g.
            ``f"{date:%Y-%m}"`` for monthly budgets: each (analyst, period) is a separate account.
        timeout: seconds to wait for another process's ledger lock (when opening a path).

    Raises:
        InvalidParameter: a budget of another type (named), or bad analyst/period/ledger.
        LedgerError: the ledger file is corrupted, of a newer format, or cannot be opened.
    """

    __slots__ = ("_analyst", "_budget", "_ledger", "_memo", "_owns_ledger", "_period", "_rule")

    def __init__(
        self,
        budget: Guarantee,
        ledger: Ledger | str | os.PathLike[str] | None = None,
        analyst: str = "default",
        *,
        period: str = "all",
        timeout: float = 30.0,
    ) -> None:
        rule = _RULES.get(type(budget))
        if rule is None:
            kinds = ", ".join(t.__name__ for t in _RULES)
            raise InvalidParameter(
                f"budget must be one of {kinds}, got {budget!r} ({type(budget).__name__})"
            )
        self._budget = budget
        self._rule = rule(budget)
        self._analyst = account_name("analyst", analyst)
        self._period = account_name("period", period)
        self._memo: dict[tuple[int, Guarantee | None, int], _Verdict] = {}
        if isinstance(ledger, Ledger):
            self._ledger, self._owns_ledger = ledger, False
        elif ledger is None or isinstance(ledger, str | os.PathLike):
            self._ledger, self._owns_ledger = Ledger(ledger, timeout=timeout), True
        else:
            raise InvalidParameter(
                f"ledger must be None, a file path or a sharpdp.accounting.ledger.Ledger, got {ledger!r}"
            )

    # -- properties -------------------------------------------------------------------------------
    @property
    def budget(self) -> Guarantee:
        """The budget this accountant enforces."""
        return self._budget

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
        return self._rule.measure

    # -- the filter -------------------------------------------------------------------------------
    def spend(self, item: Guarantee, count: int = 1) -> Entry:
        """Record ``count`` runs of ``item`` if the history including them fits the budget.

        The check reads every spend committed to the ledger for this account (by any process) and
        records the new one in the same transaction, durably, before returning. Release a result
        only after ``spend`` has returned.

        Args:
            item: a sharpdp guarantee or mechanism (its description is recorded).
            count: how many runs (an integer ≥ 1).

        Returns:
            The recorded :class:`~sharpdp.accounting.ledger.Entry` (with the post-spend odometer reading).

        Raises:
            BudgetExceeded: the spend would not fit; nothing was recorded.
            InvalidParameter: ``item`` is not a guarantee or cannot be described (e.g.
                ``RDP.from_function``), or ``count`` is not an integer ≥ 1; nothing was recorded.
            NotImplied: under a ZCDP budget, ``item`` implies no zCDP bound; nothing was recorded.
            LedgerError: the ledger could not be read or written; nothing was recorded.
        """
        k = self._check_item(item, count)
        # Warm the memo outside the lock; inside, it is reused if no one else wrote meanwhile.
        self._evaluate(self._history(), item, k)
        verdicts: list[_Verdict] = []
        refused: list[tuple[History, _Verdict]] = []

        def decide(history: History) -> float:
            verdict = self._evaluate(history, item, k)
            if not verdict.fits:
                refused.append((history, verdict))
                raise BudgetExceeded("refused")  # explained below, once the lock is released
            verdicts.append(verdict)
            return verdict.spent

        try:
            entry = self._ledger.append(
                self._analyst,
                self._period,
                item,
                k,
                budget=self._budget,
                measure=self._rule.measure,
                at_delta=self._rule.at_delta,
                decide=decide,
            )
        except BudgetExceeded:
            if not refused:
                raise
            history, verdict = refused[-1]
            raise BudgetExceeded(self._refusal(item, k, history, verdict)) from None
        if verdicts:
            verdict = verdicts[-1]
            if verdict.sharp:  # the odometer of the new history, already computed
                self._remember((entry.id, None, 0), verdict)
            self._rule.remember(entry.id, item, k, verdict)
        return entry

    def would_fit(self, item: Guarantee, count: int = 1) -> bool:
        """Whether :meth:`spend` would accept ``count`` runs of ``item`` now (a dry run).

        Nothing is recorded. Another process may spend in between, so only :meth:`spend`'s own
        check is binding.
        """
        k = self._check_item(item, count)
        return self._evaluate(self._history(), item, k).fits

    # -- the odometer -----------------------------------------------------------------------------
    def composition(self) -> Guarantee:
        """The adaptive composition of the whole history (answers epsilon/delta/renyi)."""
        return compose(list(self._history().counts.items()), adaptive=True)

    def epsilon(self, delta: float) -> float:
        """ε spent so far at ``delta``: ``composition().epsilon(delta)`` (an upper bound)."""
        return self.composition().epsilon(delta)

    def delta(self, epsilon: float) -> float:
        """δ spent so far at ``epsilon``: ``composition().delta(epsilon)`` (an upper bound)."""
        return self.composition().delta(epsilon)

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
        min(ρ − Σρᵢ, ξ + ρ − Σξᵢ − Σρᵢ), rounded down.
        """
        return self._evaluate(self._history(), None, 0).remaining

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
        return (
            f"Accountant(budget={self._budget!r}, ledger={self._ledger!r}, "
            f"analyst={self._analyst!r}, period={self._period!r})"
        )

    # -- internals --------------------------------------------------------------------------------
    def _check_item(self, item: Guarantee, count: int) -> int:
        if not isinstance(item, Guarantee):
            raise InvalidParameter(
                f"item must be a sharpdp guarantee or mechanism, got {item!r} "
                f"({type(item).__name__})"
            )
        k = _validate.integer("count", count, minimum=1)
        dumps(item)  # raises InvalidParameter if the item cannot be recorded faithfully
        self._rule.prepare(item)
        return k

    def _history(self) -> History:
        return self._ledger.history(self._analyst, self._period)

    def _evaluate(self, history: History, item: Guarantee | None, count: int) -> _Verdict:
        key = (history.last_id, item, count)
        verdict = self._memo.get(key)
        if verdict is None:
            verdict = self._rule.evaluate(history, item, count)
            self._remember(key, verdict)
        return verdict

    def _remember(self, key: tuple[int, Guarantee | None, int], verdict: _Verdict) -> None:
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = verdict

    def _refusal(self, item: Guarantee, count: int, history: History, verdict: _Verdict) -> str:
        now = self._evaluate(history, None, 0)
        return (
            f"spending {item!r} x{count} would bring analyst {self._analyst!r} (period "
            f"{self._period!r}) to {self._rule.describe(verdict.spent)}, over the budget "
            f"{self._budget!r}; nothing was recorded (spent so far: "
            f"{self._rule.describe(now.spent)}, remaining: {now.remaining!r})"
        )
