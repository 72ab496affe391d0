"""``sharpdp budget LEDGER``: what a ledger records, per analyst and period.

For each account (analyst, period): the budget in force (when and why it was recorded), what is
spent and what is left (:meth:`sharpdp.Accountant.summary`), and each spend — the item, how many
runs, when, its own cost with the analysis (theorem) that certifies it, and the odometer right
after it as recorded. The ledger is only read: a missing file is an error, never a new ledger.

Spent amounts and costs are upper bounds, rounded up; what remains is a lower bound, rounded down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import sharpdp as sdp
from sharpdp._format import lower, upper
from sharpdp.cli._common import Digits, app, console, emit_json, working

if TYPE_CHECKING:  # the accounting layer loads when the command runs, not with the command line
    from sharpdp.accounting.ledger import Entry, Ledger

__all__ = ["Cost", "budget", "spend_cost"]


@dataclass(frozen=True)
class Cost:
    """What one spend costs on its own, and the analysis that certifies it.

    Attributes:
        value: ε at the account's δ (measure ``"epsilon"``) or ρ (measure ``"rho"``), an upper
            bound for the spend's ``count`` runs composed adaptively.
        analysis: the winning analysis or conversion route.
        theorem: its theorem.
    """

    value: float
    analysis: str
    theorem: str


def _up(q: Fraction) -> float:
    """The least float ≥ q."""
    x = float(q)
    return math.nextafter(x, math.inf) if Fraction(x) < q else x


def spend_cost(item: sdp.Guarantee, count: int, measure: str, at_delta: float | None) -> Cost:
    """The cost of ``count`` runs of ``item`` in the account's currency, with its theorem.

    Example:
        >>> import sharpdp as sdp
        >>> c = spend_cost(sdp.Gaussian(1.0), 2, "rho", None)  # 2 · 1/2 (BS16 Prop 1.6)
        >>> c.value, c.analysis
        (1.0, 'bs16-prop1.6')
        >>> spend_cost(sdp.ZCDP(0.05), 3, "rho", None).value  # a zCDP spend: its own ρ, added
        0.15000000000000002
    """
    if measure == "rho":
        if isinstance(item, sdp.ZCDP):  # no conversion: a ρ-zCDP spend costs its ρ per run
            return Cost(
                _up(count * Fraction(item.rho)), "zcdp", "Bun–Steinke 2016 Lemma 2.3 (zCDP adds)"
            )
        explanation = sdp.conversions.explain(item, sdp.ZCDP)
        row = explanation.winner
        z = sdp.convert(item, sdp.ZCDP)
        return Cost(_up(count * Fraction(z.rho)), row.name, row.theorem)
    delta = 0.0 if at_delta is None else at_delta
    composition = sdp.compose([(item, count)], adaptive=True)
    # a spend's cost is shown, not promised sharp: the valid bound where the sharpest analysis
    # cannot certify its accuracy (a count over 10⁶ groups made every later reading fail)
    value = composition.epsilon_bound(delta)
    winner = composition.explain(delta=delta).winner
    return Cost(value, winner.name, winner.theorem)


def _reading(measure: str, at_delta: float | None, value: float, digits: int, up: bool) -> str:
    shown = upper(value, digits) if up else lower(value, digits)
    if measure == "rho":
        return f"ρ = {shown}"
    return f"ε = {shown} at δ = {at_delta!r}"


def _account(
    ledger: Ledger, analyst: str, period: str, with_spends: bool, costs: dict[Any, Cost]
) -> dict[str, Any]:
    """One account's budget, summary and spends (JSON-ready, full precision)."""
    record = ledger.budget(analyst, period)
    out: dict[str, Any] = {"analyst": analyst, "period": period}
    measure, at_delta = "epsilon", None
    if record is None:
        out.update(budget=None, spent=None, remaining=None, over_budget=None)
    else:
        with sdp.Accountant(None, ledger, analyst, period=period) as account:
            s = account.summary()
        measure, at_delta = s.measure, s.at_delta
        out.update(
            budget=repr(s.budget),
            budget_since=s.budget_since.isoformat(timespec="seconds"),
            budget_reason=s.budget_reason,
            measure=s.measure,
            at_delta=s.at_delta,
            spent=s.spent,
            remaining=s.remaining,
            over_budget=s.over_budget,
            spend_count=s.spends,
        )
    out["budget_history"] = [
        {
            "budget": repr(b.budget),
            "time": b.timestamp.isoformat(timespec="seconds"),
            "reason": b.reason,
        }
        for b in ledger.budgets(analyst, period)
    ]
    if with_spends:
        out["spends"] = [
            _spend(e, measure, at_delta, costs) for e in ledger.entries(analyst, period)
        ]
    return out


def _spend(
    entry: Entry, measure: str, at_delta: float | None, costs: dict[Any, Cost]
) -> dict[str, Any]:
    # the spend's own cost, in the currency of the budget in force (cached: ledgers repeat items)
    key = (entry.item, entry.count, measure, at_delta)
    if key not in costs:
        costs[key] = spend_cost(entry.item, entry.count, measure, at_delta)
    cost = costs[key]
    return {
        "id": entry.id,
        "time": entry.timestamp.isoformat(timespec="seconds"),
        "item": repr(entry.item),
        "count": entry.count,
        "cost": cost.value,
        "analysis": cost.analysis,
        "theorem": cost.theorem,
        "measure": entry.measure,
        "at_delta": entry.at_delta,
        "spent_after": entry.spent_after,
        "checked_against": repr(entry.budget),
        "library_version": entry.library_version,
    }


@app.command()
def budget(
    ledger: Annotated[
        Path,
        typer.Argument(
            help="the ledger file (read only)", exists=True, dir_okay=False, readable=True
        ),
    ],
    analyst: Annotated[str | None, typer.Option(help="only this analyst's accounts")] = None,
    period: Annotated[str | None, typer.Option(help="only this period")] = None,
    spends: Annotated[
        bool, typer.Option("--spends/--no-spends", help="list each spend (or only the totals)")
    ] = True,
    digits: Digits = 6,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (full precision)")] = False,
) -> None:
    """What a ledger records: per analyst and period, the budget, spent, left, and each spend.

    Example: sharpdp budget budget.sqlite --analyst ana
    """
    from sharpdp.accounting.ledger import Ledger

    with Ledger(ledger, create=False) as book:
        accounts = [
            (a, p)
            for a, p in book.accounts()
            if (analyst is None or a == analyst) and (period is None or p == period)
        ]
        if not accounts and (analyst is not None or period is not None):
            who = " and ".join(
                f"{name} {value!r}"
                for name, value in (("analyst", analyst), ("period", period))
                if value is not None
            )
            recorded = book.accounts()
            known = ", ".join(sorted({f"{a!r} (period {p!r})" for a, p in recorded})) or "none"
            raise sdp.InvalidParameter(f"{ledger}: no account of {who} (accounts: {known})")
        costs: dict[Any, Cost] = {}
        rows = []
        with working("reading the ledger", total=len(accounts)) as advance:
            for a, p in accounts:
                rows.append(_account(book, a, p, spends, costs))
                advance(1)
    if as_json:
        emit_json({"ledger": str(ledger.resolve()), "accounts": rows})
        return
    if not rows:
        console.print(f"{escape(str(ledger))}: no accounts yet", highlight=False)
        return
    used: dict[str, str] = {}
    for row in rows:
        _print_account(row, digits, used)
    if used:
        console.print("[bold]Analyses[/bold]")
        for name, theorem in used.items():
            console.print(f"  {escape(name)}: {escape(theorem)}", highlight=False)


def _print_account(row: dict[str, Any], digits: int, used: dict[str, str]) -> None:
    head = f"[bold]{escape(row['analyst'])}[/bold], period {escape(row['period'])}: "
    if row["budget"] is None:
        console.print(head + "no budget recorded", highlight=False)
    else:
        measure, at = row["measure"], row["at_delta"]
        state = "[red]OVER the budget[/red]" if row["over_budget"] else "within the budget"
        console.print(
            head
            + f"budget {escape(row['budget'])} (since {row['budget_since']}, "
            + f"{escape(row['budget_reason'])})\n"
            + f"  spent {_reading(measure, at, row['spent'], digits, True)}, remaining "
            + f"{lower(row['remaining'], digits)} — {state}; {row['spend_count']} spend(s)",
            highlight=False,
        )
    if len(row["budget_history"]) > 1:
        for b in row["budget_history"][:-1]:
            console.print(
                f"  [dim]earlier budget {escape(b['budget'])} from {b['time']} ({escape(b['reason'])})[/dim]",
                highlight=False,
            )
    if not row.get("spends"):
        return
    measure, at = row.get("measure", "epsilon"), row.get("at_delta")
    symbol = "ρ" if measure == "rho" else "ε"
    table = Table("#", "time (UTC)", "item", "runs", f"cost {symbol}", "by", f"{symbol} after")
    for column in table.columns:
        column.overflow = "fold"
    for index in (0, 3, 4, 6):
        table.columns[index].justify = "right"
    for s in row["spends"]:
        used.setdefault(s["analysis"], s["theorem"])
        after = upper(s["spent_after"], digits)
        if (s["measure"], s["at_delta"]) != (measure, at):  # recorded under another budget
            after = _reading(s["measure"], s["at_delta"], s["spent_after"], digits, True)
        table.add_row(
            str(s["id"]),
            s["time"].replace("T", " ").replace("+00:00", ""),
            escape(s["item"]),
            f"{s['count']:,}",
            upper(s["cost"], digits),
            s["analysis"],
            after,
        )
    console.print(table)
