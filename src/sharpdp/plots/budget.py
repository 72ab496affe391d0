"""Budget consumption per analyst over time, read from a ledger."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

import sharpdp as sdp
from sharpdp.errors import InvalidParameter
from sharpdp.plots._figure import SIZE, legend

__all__ = ["Account", "budget", "consumption"]

#: The y-axis label of each odometer measure.
_MEASURES = {"epsilon": "ε spent (nats)", "rho": "ρ spent (zCDP)"}


@dataclass(frozen=True)
class Account:
    """What :func:`budget` draws for one account (analyst, period) and odometer measure.

    Attributes:
        analyst: the analyst.
        period: the period label.
        measure: ``"epsilon"`` (ε at δ = ``at_delta``) or ``"rho"`` (zCDP ρ).
        at_delta: the δ of ε readings (``None`` for ρ).
        times: when the budget was first recorded, then the time of each spend.
        spent: 0, then each spend's ``spent_after`` (the odometer after it).
        budget_times: when each budget in force was recorded, then the last spend.
        budgets: the budget at each of ``budget_times``, in the measure.
    """

    analyst: str
    period: str
    measure: str
    at_delta: float | None
    times: tuple[datetime, ...]
    spent: tuple[float, ...]
    budget_times: tuple[datetime, ...]
    budgets: tuple[float, ...]


def consumption(
    ledger: sdp.Ledger, analyst: str | None = None, period: str | None = None
) -> list[Account]:
    """Every account's odometer and budget over time, as :func:`budget` draws them."""
    out = []
    entries = ledger.entries(analyst, period)
    for a, p, measure in sorted({(e.analyst, e.period, e.measure) for e in entries}):
        mine = [e for e in entries if (e.analyst, e.period, e.measure) == (a, p, measure)]
        at, last = mine[-1].at_delta, mine[-1].timestamp
        records = [r for r in ledger.budgets(a, p) if r.timestamp <= last]
        times = [e.timestamp for e in mine]
        spent = [e.spent_after for e in mine]
        if records and records[0].timestamp < times[0]:
            times, spent = [records[0].timestamp, *times], [0.0, *spent]
        b_times = [r.timestamp for r in records] or [times[0]]
        levels = [_level(r.budget, measure, at) for r in records] or [
            _level(mine[0].budget, measure, at)
        ]
        out.append(
            Account(
                a,
                p,
                measure,
                at,
                tuple(times),
                tuple(spent),
                (*b_times, last),
                (*levels, levels[-1]),
            )
        )
    return out


def _level(budget: sdp.Guarantee, measure: str, at_delta: float | None) -> float:
    """The budget in the odometer's measure: ε at the reading's δ, or ρ."""
    try:
        if measure == "epsilon" and at_delta is not None:
            return budget.epsilon(at_delta)
        rho = getattr(budget, "rho", None)
        return float(rho) if rho is not None else math.nan
    except sdp.SharpDPError:
        return math.nan


def budget(
    ledger: sdp.Ledger | str | os.PathLike[str],
    *,
    analyst: str | None = None,
    period: str | None = None,
) -> Figure:
    """Each analyst's privacy spent over time (steps at each recorded spend), against the budget.

    One panel per measure the ledger's odometers use (ε at the budget's δ, or zCDP ρ); in each,
    one colour per account (analyst, period): a solid step line of the odometer reading after
    each spend (``Entry.spent_after``, from 0 when the budget was recorded) and a dashed line at
    its budget.

    Args:
        ledger: a :class:`sharpdp.Ledger`, or the path of a ledger file (opened read-only in
            effect: never created, closed again).
        analyst: only this analyst's accounts.
        period: only this period's accounts.

    Returns:
        The figure.

    Raises:
        InvalidParameter: no spend is recorded (for that analyst or period).
    """
    if isinstance(ledger, sdp.Ledger):
        return _draw(ledger, analyst, period)
    if not isinstance(ledger, str | os.PathLike):
        raise InvalidParameter(f"ledger must be a sharpdp.Ledger or a path, got {ledger!r}")
    opened = sdp.Ledger(ledger, create=False)
    try:
        return _draw(opened, analyst, period)
    finally:
        opened.close()


def _draw(ledger: sdp.Ledger, analyst: str | None, period: str | None) -> Figure:
    series = consumption(ledger, analyst, period)
    if not series:
        which = "".join(
            f" {name} {value!r}"
            for name, value in (("of analyst", analyst), ("in period", period))
            if value is not None
        )
        raise InvalidParameter(f"the ledger {ledger.path or ':memory:'} records no spend{which}")
    measures = [m for m in _MEASURES if any(acc.measure == m for acc in series)]
    height = SIZE[1] if len(measures) == 1 else 0.75 * SIZE[1] * len(measures)
    fig = Figure(figsize=(SIZE[0], height), layout="constrained")
    grid = fig.subplots(len(measures), 1, sharex=True, squeeze=False)
    axes: list[Axes] = [grid[i, 0] for i in range(len(measures))]
    source = os.path.basename(ledger.path) if ledger.path else "in-memory ledger"
    fig.suptitle(f"Privacy budget spent per analyst over time ({source})", fontsize="medium")
    periods = {acc.period for acc in series}
    for ax, measure in zip(axes, measures, strict=True):
        deltas = set()
        for index, acc in enumerate(series):
            if acc.measure != measure:
                continue
            name = acc.analyst if len(periods) == 1 else f"{acc.analyst} ({acc.period})"
            color = f"C{index % 10}"
            key = f"{acc.analyst}:{acc.period}:{acc.measure}"
            ax.step(
                cast(Any, acc.times),
                acc.spent,
                where="post",
                color=color,
                marker="o",
                markersize=3,
                label=name,
                gid=f"spent:{key}",
            )
            ax.step(
                cast(Any, acc.budget_times),
                acc.budgets,
                where="post",
                color=color,
                linestyle="--",
                linewidth=1.0,
                label=f"{name}: budget",
                gid=f"budget:{key}",
            )
            deltas.add(acc.at_delta)
        label = _MEASURES[measure]
        if measure == "epsilon":
            label += f" at δ = {deltas.pop():g}" if len(deltas) == 1 else " at the budget's δ"
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0.0)
        ax.grid(True, alpha=0.3)
        legend(ax)
    locator = AutoDateLocator()  # type: ignore[no-untyped-call]
    axes[-1].xaxis.set_major_locator(locator)
    axes[-1].xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    axes[-1].set_xlabel("time of the spend (UTC)")
    return fig
