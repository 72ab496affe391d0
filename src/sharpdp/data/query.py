"""Queries: immutable plans, priced before they run.

A :class:`Query` is built by a :class:`~sharpdp.data.Session` method (``count_by``, ``sum``,
``top_k``...). Building validates every parameter, calibrates the noise and fixes the salt of its
contribution bounding, and touches neither the data nor the budget. Then:

* :meth:`Query.explain` prices it — mechanisms, noise, sensitivities or range, the item the
  accountant will be charged and what the budget reads afterwards — still touching neither;
* :meth:`Query.run` checks the budget (``BudgetExceeded`` ⇒ nothing spent, nothing computed),
  runs the bounded aggregation in the engine, spends the charge durably through the session's
  accountant, and only then adds exact noise.

Subclassing contract (one small module per query kind): a subclass is a frozen dataclass that
fills the base fields (``statistics`` lists each noisy statistic with its mechanism and how many
keys one person moves) and implements ``_compute() -> data`` (the engine's part, before the spend)
and ``_finish(data, rng) -> Release`` (the noise or selection, after it). The charge, ``explain``
and ``run`` are inherited.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

import sharpdp as sdp
from sharpdp._format import exact, html_table, lower, upper
from sharpdp.data._noise import expected_abs
from sharpdp.errors import NotImplied
from sharpdp.mechanisms._samplers import RNGLike, as_generator

if TYPE_CHECKING:
    from sharpdp.data._engine import Source
    from sharpdp.data.release import Release

__all__ = ["Bounding", "Explanation", "Query", "Statistic"]


@dataclass(frozen=True, slots=True)
class Bounding:
    """Declared contribution bounds of a query.

    Attributes:
        max_rows: rows of one person kept per key (``max_rows`` per person when there is no key);
            ``None`` when every row counts (a sum clamped per person).
        max_groups: keys one person contributes to (``None`` when there is one group).
        salt: the query's salt for the seeded hash that ranks rows and keys.
        clamp: ``(lower, upper)`` clamping bounds of summed values, or ``None``.
        step: the grid step summed values are rounded to (``None`` without values).
        clamp_per: ``"row"`` (each row's value is clamped) or ``"person"`` (each person's total
            per key is clamped).
        key: what one key is called in words (``"key"``; ``"distinct row"`` for workloads).
    """

    max_rows: int | None
    max_groups: int | None
    salt: str
    clamp: tuple[float, float] | None = None
    step: float | None = None
    clamp_per: str = "row"
    key: str = "key"

    def __str__(self) -> str:
        return self.describe(row_level=False)

    def describe(self, row_level: bool) -> str:
        """The bounds in words; with ``row_level`` (each row is a person) there is nothing to
        keep or drop, only values to clamp."""
        if row_level:
            parts = ["each row is one person: one row and one key each, nothing dropped"]
            if self.clamp is not None:
                lo, hi = self.clamp
                parts.append(f"values clamped per row to [{exact(lo)}, {exact(hi)}]")
            if self.step is not None and self.step != 1.0:
                parts.append(f"rounded to multiples of {exact(self.step)}")
            return "; ".join(parts)
        parts = []
        if self.key != "key":
            parts.append(f"≤ {self.max_groups} {self.key}(s) per person")
        else:
            if self.max_rows is not None:
                parts.append(f"≤ {self.max_rows} row(s) per person per key")
            if self.max_groups is not None:
                parts.append(f"≤ {self.max_groups} key(s) per person")
        if self.clamp is not None:
            lo, hi = self.clamp
            if self.clamp_per == "person":
                parts.append(
                    f"every row counts; each person's total per key clamped to "
                    f"[{exact(lo)}, {exact(hi)}]"
                )
            else:
                parts.append(f"values clamped per row to [{exact(lo)}, {exact(hi)}]")
        if self.step is not None and self.step != 1.0:
            parts.append(f"rounded to multiples of {exact(self.step)}")
        return "; ".join(parts) + f" (kept by a seeded hash of unit ‖ key, salt {self.salt})"


@dataclass(frozen=True, slots=True)
class Statistic:
    """One noisy statistic (or selection) of a query, as charged.

    Attributes:
        name: what it releases (``"count"``, ``"sum"``, ``"top-10"``, ``"new keys"``...).
        mechanism: the mechanism (or guarantee) of one run.
        copies: runs charged: the number of keys (or by-groups) one person can move.
        sensitivity: per-key sensitivity Δ∞ (additive noise) or score range (selection), in the
            mechanism's units; ``None`` for a pure guarantee (the δ of new keys).
        route: how the mechanism was chosen or calibrated, with its reference.
        selection: whether ``sensitivity`` is a score range (selection) rather than a shift.
        unit: the value of one integer step of the statistic (a sum's grid step; 1 otherwise).
        detail: replaces the sensitivity text of :meth:`describe` when the score is not a plain
            count (e.g. a quantile's rank score).
    """

    name: str
    mechanism: sdp.Guarantee
    copies: int
    sensitivity: float | None
    route: str
    selection: bool = False
    unit: float = 1.0
    detail: str | None = None

    @property
    def l1(self) -> float | None:
        """ℓ1 sensitivity of the whole release (copies·Δ∞)."""
        return None if self.sensitivity is None else self.copies * self.sensitivity

    @property
    def l2(self) -> float | None:
        """ℓ2 sensitivity of the whole release (√copies·Δ∞)."""
        return None if self.sensitivity is None else math.sqrt(self.copies) * self.sensitivity

    def describe(self) -> str:
        """One line: mechanism, noise, sensitivities and route.

        The mechanism's parameters are shown exactly (its ``repr``); the numbers repeated in
        words are bounds: the noise scale rounded down (there is at least that much noise), the
        expected error E|Z| and the sensitivities rounded up.
        """
        return f"{self.name}: {self._summary()}\n      ({self.route})"

    def _summary(self) -> str:
        """:meth:`describe` without the name and the route."""
        m = self.mechanism
        noise = ""
        if isinstance(m, sdp.DiscreteLaplace | sdp.DiscreteGaussian):
            if isinstance(m, sdp.DiscreteLaplace):
                noise = f"discrete Laplace, scale {_down(Fraction(m.scale))}"
            else:
                noise = f"discrete Gaussian, σ {_down(Fraction(m.sigma))}"
            e_abs = expected_abs(m)
            noise += f", E|Z| = {upper(e_abs, 4)}"
            if self.unit != 1.0:
                product = _float_up(Fraction(e_abs) * Fraction(self.unit))
                noise += f" steps of {exact(self.unit)} (E|Z|·step = {upper(product, 4)})"
        if self.detail is not None:
            sens = self.detail
        elif self.sensitivity is None:
            sens = ""
        elif self.selection:
            sens = f"score range {upper(self.sensitivity)} (monotonic)"
        else:
            l1 = _float_up(self.copies * Fraction(self.sensitivity))
            l2 = _sqrt_up(self.copies * Fraction(self.sensitivity) ** 2)
            sens = f"sensitivity ℓ1 {upper(l1)}, ℓ2 {upper(l2)}, ℓ∞ {upper(self.sensitivity)}"
        bits = [f"{m!r} × {self.copies}"]
        bits += [b for b in (noise, sens) if b]
        return "; ".join(bits)


@dataclass(frozen=True, slots=True)
class Explanation:
    """What a query will cost and do, computed without touching the data or the budget.

    Attributes:
        query: the query, in words.
        engine: the engine that will run it.
        privacy_unit: the column protected (``None``: each row is a person).
        bounding: the declared contribution bounds.
        statistics: each noisy statistic or selection.
        charge: the item given to ``Accountant.spend`` and its count.
        cost: the charge alone, in the budget's currency (ε at the budget's δ, or ρ).
        route: the composition analysis that priced the charge (winner), if several items.
        spent_before: the account's odometer now.
        spent_after: the odometer if the query ran now (an upper bound).
        remaining_after: the budget left afterwards (≥ 0; 0 when it would not fit).
        fits: whether ``run`` would be accepted now (``Accountant.would_fit``).
        budget: the budget.
        notes: further facts (partition-selection threshold, privacy split...).
    """

    query: str
    engine: str
    privacy_unit: str | None
    bounding: Bounding
    statistics: tuple[Statistic, ...]
    charge: tuple[sdp.Guarantee, int]
    cost: float
    route: str
    spent_before: float
    spent_after: float
    remaining_after: float
    fits: bool
    budget: sdp.Guarantee
    notes: tuple[str, ...] = ()

    @property
    def measure(self) -> str:
        """What :attr:`cost` and the odometers measure: ``"rho"`` under a zCDP budget, else
        ``"epsilon"`` (at the budget's δ)."""
        return "rho" if isinstance(self.budget, sdp.ZCDP) else "epsilon"

    def _parts(self) -> list[tuple[str, str]]:
        """(label, text) of each line after the first of ``str()``; notes have no label."""
        currency = "ρ" if self.measure == "rho" else "ε"
        at = f" at δ = {exact(self.budget.delta_)}" if isinstance(self.budget, sdp.ApproxDP) else ""
        item, count = self.charge
        parts = [("bounding", self.bounding.describe(self.privacy_unit is None))]
        parts += [(s.name, f"{s._summary()} ({s.route})") for s in self.statistics]
        parts += [("", n) for n in self.notes]
        parts.append(("charge", repr(item) + (f" × {count}" if count != 1 else "")))
        parts.append(("cost", f"{currency} = {upper(self.cost)}{at} ({self.route})"))
        verdict = "fits" if self.fits else "does NOT fit (run() would raise BudgetExceeded)"
        parts.append(
            (
                "budget",
                f"{self.budget!r}: spent {upper(self.spent_before)} → "
                f"{upper(self.spent_after)}, remaining {lower(self.remaining_after)}; {verdict}",
            )
        )
        return parts

    def _head(self) -> str:
        unit = "each row" if self.privacy_unit is None else repr(self.privacy_unit)
        return f"{self.query}  [engine: {self.engine}; privacy unit: {unit}]"

    def __str__(self) -> str:
        lines = [self._head(), f"  bounding: {self.bounding.describe(self.privacy_unit is None)}"]
        lines += [f"  {s.describe()}" for s in self.statistics]
        lines += [f"  {n}" for n in self.notes]
        for label, text in self._parts()[-3:]:  # charge, cost, budget
            lines.append(f"  {label} {text}" if label == "budget" else f"  {label}: {text}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter: the lines of ``str()`` as a two-column table (bounds rounded as there)."""
        return html_table(self._parts(), caption=self._head())


def _budget_reading(budget: sdp.Guarantee, items: list[tuple[sdp.Guarantee, int]]) -> float:
    """Read a list of (item, count) in the budget's currency (an upper bound)."""
    if not items:
        return 0.0
    if isinstance(budget, sdp.ZCDP):
        total = Fraction(0)
        for item, count in items:
            z = sdp.convert(item, sdp.ZCDP)
            assert isinstance(z, sdp.ZCDP)
            total += count * Fraction(z.rho)
        return _float_up(total)
    delta = budget.delta_ if isinstance(budget, sdp.ApproxDP) else 0.0
    return sdp.compose(items, adaptive=True).epsilon_bound(delta)


def _float_up(q: Fraction) -> float:
    f = float(q)
    return math.nextafter(f, math.inf) if Fraction(f) < q else f


def _float_down(q: Fraction) -> float:
    f = float(q)
    return math.nextafter(f, -math.inf) if Fraction(f) > q else f


def _down(q: Fraction) -> str:
    """The rational ``q`` printed rounded down (a float ≤ q, then :func:`lower`)."""
    return lower(_float_down(q))


def _sqrt_up(q: Fraction) -> float:
    """A float ≥ √q (q ≥ 0)."""
    f = math.sqrt(float(q))
    while Fraction(f) ** 2 < q:
        f = math.nextafter(f, math.inf)
    return f


@dataclass(frozen=True, kw_only=True)
class Query(ABC):
    """Base of every query plan (see the module docstring for the subclassing contract).

    Attributes:
        description: the query in words.
        source: the engine and table (not compared).
        accountant: the session's accountant (not compared).
        privacy_unit: the protected column (``None``: each row is a person).
        bounding: the contribution bounds.
        statistics: the noisy statistics and selections, in charge order.
        notes: extra lines for ``explain()``.
    """

    description: str
    source: Source = field(repr=False, compare=False)
    accountant: sdp.Accountant = field(repr=False, compare=False)
    privacy_unit: str | None
    bounding: Bounding
    statistics: tuple[Statistic, ...]
    notes: tuple[str, ...] = ()

    #: Whether the release carries its pricing (``explanation``, for ``Release.explain()``).
    _priced_release: ClassVar[bool] = False

    @property
    def charge(self) -> tuple[sdp.Guarantee, int]:
        """The (item, count) given to ``Accountant.spend``.

        One statistic: its mechanism, ``copies`` times. Several: their adaptive composition
        (``sdp.compose``), except under a zCDP budget, where the exact sum of their zCDP ρ
        (``sdp.ZCDP(Σρ)``, rounded up; zCDP adds, Bun–Steinke 2016 Lemma 2.3) is charged.
        """
        items = [(s.mechanism, s.copies) for s in self.statistics]
        if len(items) == 1:
            return items[0]
        if isinstance(self.accountant.budget, sdp.ZCDP):
            return sdp.ZCDP(_budget_reading(self.accountant.budget, items)), 1
        return sdp.compose(items, adaptive=True), 1

    def explain(self) -> Explanation:
        """Price the query: nothing is spent and the data is not read."""
        acc = self.accountant
        budget = acc.budget
        item, count = self.charge
        items = [(s.mechanism, s.copies) for s in self.statistics]
        route = "exact characterisation of the mechanism"
        try:
            cost = _budget_reading(budget, [(item, count)])
            if len(items) > 1 and not isinstance(budget, sdp.ZCDP):
                delta = budget.delta_ if isinstance(budget, sdp.ApproxDP) else 0.0
                winner = sdp.compose(items, adaptive=True).explain(delta=delta).winner
                route = f"{winner.name}: {winner.theorem}"
            before = acc.spent()
            after = acc.projected(item, count)  # what the spend will record, by its own analysis
            fits = acc.would_fit(item, count)
        except NotImplied as err:  # e.g. δ > 0 under a zCDP budget
            cost, before, after, fits = math.inf, acc.spent(), math.inf, False
            route = str(err)
        total = (
            budget.rho
            if isinstance(budget, sdp.ZCDP)
            else budget.epsilon(budget.delta_ if isinstance(budget, sdp.ApproxDP) else 0.0)
        )
        # a lower bound: the exact difference of the floats, rounded down
        if not fits:
            remaining = 0.0
        elif math.isinf(total) or math.isinf(after):
            remaining = total - after if math.isinf(total) and math.isfinite(after) else 0.0
        else:
            remaining = max(0.0, _float_down(Fraction(total) - Fraction(after)))
        return Explanation(
            query=self.description,
            engine=self.source.engine,
            privacy_unit=self.privacy_unit,
            bounding=self.bounding,
            statistics=self.statistics,
            charge=(item, count),
            cost=cost,
            route=route,
            spent_before=before,
            spent_after=after,
            remaining_after=remaining,
            fits=fits,
            budget=budget,
            notes=self.notes,
        )

    def run(self, rng: RNGLike = None) -> Release:
        """Check the budget, compute in the engine, spend the charge durably, then release.

        Args:
            rng: a seed or a ``numpy.random.Generator`` for the noise (``None``: fresh entropy).

        Returns:
            The :class:`~sharpdp.data.release.Release`; its ``spend`` is the ledger entry of the
            spend (``spend.id`` names the ledger row).

        Raises:
            BudgetExceeded: the charge does not fit; nothing was spent or released (and, unless
                another process spent in between, nothing was computed).

        The engine's aggregation (:meth:`_compute`) runs after a dry run of the budget check and
        before the spend, so an engine failure (a bad value, a lost executor, a vanished file)
        raises with nothing spent. Queries whose engine work depends on their own noise (a
        workload or MWEM finding undeclared domains) read the engine in :meth:`_finish`, after
        the spend: if it fails then, the spend stays recorded — a failure never refunds budget
        (it errs against the analyst, never against privacy).
        """
        generator = as_generator(rng)
        item, count = self.charge
        # priced before the spend: the release's explain() then shows the spend it was charged
        # (read after, it would price a second, hypothetical run)
        priced = self.explain() if self._priced_release else None
        entry = None
        if not self.accountant.would_fit(item, count):
            # refused with its reason, before any engine work (recorded only if the budget grew
            # in between: then the run goes on, its spend already made)
            entry = self.accountant.spend(item, count)
        data = self._compute()
        if entry is None:
            entry = self.accountant.spend(item, count)  # the binding check
        changes: dict[str, Any] = {"spend": entry}
        if priced is not None:  # (a field of the releases whose queries set _priced_release)
            changes["explanation"] = priced
        return dataclasses.replace(self._typed(self._finish(data, generator)), **changes)

    @abstractmethod
    def _compute(self) -> Any:
        """The bounded aggregation, from the engine, before the spend (nothing is released from
        it but through :meth:`_finish`)."""

    @abstractmethod
    def _finish(self, data: Any, rng: np.random.Generator) -> Release:
        """The release from :meth:`_compute`'s data: noise or selection (after the spend)."""

    def _release(self, rng: np.random.Generator) -> Release:
        """Compute and release, without spending (for a query already paid for by another)."""
        return self._typed(self._finish(self._compute(), rng))

    def _typed(self, release: Release) -> Release:
        """``release`` with its key columns in the dtypes of the table's schema (public keys and
        keys found in the data alike: ``Int64``, ``boolean``, ``datetime64[ms]`` for dates...)."""
        from sharpdp.data._engine import conform_keys

        frame = getattr(release, "frame", None)
        keys = getattr(release, "keys", ())
        if frame is None or not keys or not release.typed_keys:
            return release
        typed = conform_keys(frame, self.source.table.schema(), keys)
        return release if typed is frame else dataclasses.replace(release, frame=typed)

    def _rows(self, *columns: str) -> Any:
        """The table narrowed to the privacy unit and ``columns``, values canonical
        (:meth:`sharpdp.data._engine.Source.columns`): what the query reads."""
        unit = () if self.privacy_unit is None else (self.privacy_unit,)
        return self.source.columns((*unit, *columns))

    def _bounding_kwargs(self) -> dict[str, Any]:
        """The caps and salt of :attr:`bounding`, as keyword arguments of the ``_bounding`` rules."""
        b = self.bounding
        return {"max_rows": b.max_rows, "max_groups": b.max_groups, "salt": b.salt}

    def _execute(self, expr: Any) -> Any:
        """Run an Ibis expression on the query's engine; return a pandas DataFrame."""
        from sharpdp.data._engine import execute

        return execute(self.source.backend, expr)
