"""``sharpdp compose PLAN``: the privacy of a plan of mechanisms, by every valid analysis.

A plan is a TOML or JSON file listing mechanisms (or guarantees) and how many times each runs::

    # plan.toml
    adaptive = true            # optional (default true); false: a batch fixed in advance
    [[item]]
    mechanism = "gaussian"
    sigma = 5
    count = 100
    [[item]]
    mechanism = "exponential"
    epsilon = 0.1
    monotonic = true
    count = 20

or ``{"adaptive": true, "item": [{"mechanism": "gaussian", "sigma": 5, "count": 100}, ...]}``
(a bare JSON list of items works too). Keys are the constructors' parameter names (``sigma``,
``scale``, ``epsilon``, ``delta``, ``rho``, ``eta``, ``mu``, ``k``, ``sensitivity``,
``monotonic``…); ``count`` defaults to 1. ``PLAN`` may be ``-`` (standard input).

The command prints ε at ``--delta`` (or δ at ``--epsilon``), rounded up, and the table of every
analysis tried with its theorem (:meth:`sharpdp.Composition.explain`).
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import sharpdp as sdp
from sharpdp._format import upper
from sharpdp._validate import json_unique
from sharpdp.cli._common import Digits, app, console, emit_json, item_from_mapping, working
from sharpdp.errors import InvalidParameter

__all__ = ["compose", "load_plan"]

#: The keys a plan may have at its top level.
PLAN_KEYS = ("item", "items", "adaptive", "name", "description")


def _parse_text(text: str, source: str) -> Any:
    """JSON or TOML (by the file's extension; ``-`` and others: JSON, then TOML)."""
    suffix = Path(source).suffix.lower()
    order: tuple[str, ...]
    if suffix == ".json":
        order = ("json",)
    elif suffix == ".toml":
        order = ("toml",)
    else:
        order = ("json", "toml")
    problems = []
    for kind in order:
        try:
            return json_unique(text) if kind == "json" else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
            problems.append(f"not {kind.upper()} ({err})")
        except InvalidParameter as err:  # a repeated key: one of the values would be dropped
            raise typer.BadParameter(f"PLAN: {source}: {err}") from None
    raise typer.BadParameter(f"PLAN: {source} is " + "; ".join(problems))


def load_plan(source: str) -> tuple[list[tuple[sdp.Guarantee, int]], bool | None]:
    """Read a plan: its ``(item, count)`` pairs and its declared ``adaptive`` (``None`` if absent).

    Args:
        source: a file path, or ``-`` for standard input.

    Raises:
        typer.BadParameter: an unreadable or malformed plan (the message names the item and key).
    """
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise typer.BadParameter(f"PLAN: cannot read {source}: {err}") from None
    data = _parse_text(text, source)
    adaptive: bool | None = None
    if isinstance(data, dict):
        unknown = sorted(set(data) - set(PLAN_KEYS))
        if unknown:
            raise typer.BadParameter(
                f"PLAN: {source} has an unknown key {unknown[0]!r} (a plan has "
                f"{', '.join(PLAN_KEYS)}; write items as [[item]] tables)"
            )
        declared = data.get("adaptive")
        if declared is not None and not isinstance(declared, bool):
            raise typer.BadParameter(f"PLAN: adaptive must be true or false, got {declared!r}")
        adaptive = declared
        if "item" in data and "items" in data:  # one list would be composed, the other dropped
            raise typer.BadParameter(
                f"PLAN: {source} has both 'item' and 'items'; list every item under one of them"
            )
        entries = data.get("item", data.get("items"))
    else:
        entries = data
    if not isinstance(entries, list) or not entries:
        raise typer.BadParameter(
            f'PLAN: {source} lists no items; write [[item]] tables (mechanism = "gaussian", '
            "sigma = 5, count = 100)"
        )
    items = []
    for i, entry in enumerate(entries, start=1):
        where = f"{source}, item {i}"
        if not isinstance(entry, dict):
            raise typer.BadParameter(f"{where}: an item is a table, got {entry!r}")
        items.append(item_from_mapping(entry, where))
    return items, adaptive


@app.command()
def compose(
    plan: Annotated[
        str,
        typer.Argument(help="a TOML or JSON plan of mechanisms and counts ('-': standard input)"),
    ],
    delta: Annotated[
        float | None, typer.Option(help="report ε at this δ (the default, at δ = 1e-6)")
    ] = None,
    epsilon: Annotated[float | None, typer.Option(help="report δ at this ε instead")] = None,
    non_adaptive: Annotated[
        bool,
        typer.Option(
            "--non-adaptive",
            help="the plan is a batch fixed in advance (allows DDR20's optimal composition)",
        ),
    ] = False,
    digits: Digits = 6,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (full precision)")] = False,
) -> None:
    r"""The privacy of a plan of mechanisms: ε(δ) or δ(ε), and every analysis with its theorem.

    A plan lists \[\[item]] tables, e.g. mechanism = "gaussian", sigma = 5, count = 100 (TOML), or
    the same as JSON: {"item": [{"mechanism": "gaussian", "sigma": 5, "count": 100}]}.

    Example: sharpdp compose plan.toml --delta 1e-6
    """
    if delta is not None and epsilon is not None:
        raise typer.BadParameter("give --delta or --epsilon, not both")
    items, declared = load_plan(plan)
    adaptive = False if non_adaptive else (True if declared is None else declared)
    composition = sdp.compose(items, adaptive=adaptive)
    with working(f"composing {sum(n for _, n in items):,} mechanisms"):
        if epsilon is None:
            at = 1e-6 if delta is None else delta
            value = composition.epsilon(at)
            explanation = composition.explain(delta=at)
        else:
            at = epsilon
            value = composition.delta(at)
            explanation = composition.explain(epsilon=at)
    quantity, given = ("epsilon", "delta") if epsilon is None else ("delta", "epsilon")
    winner = explanation.winner
    if as_json:
        emit_json(
            {
                "plan": plan,
                "adaptive": adaptive,
                "items": [{"item": repr(g), "count": n} for g, n in items],
                given: at,
                quantity: value,
                "winner": {"name": winner.name, "theorem": winner.theorem},
                "analyses": [
                    {
                        "name": row.name,
                        "theorem": row.theorem,
                        "value": row.value,
                        "note": row.note,
                        "winner": row is winner,
                    }
                    for row in explanation.rows
                ],
            }
        )
        return
    how = "adaptively" if adaptive else "non-adaptively (a batch fixed in advance)"
    console.print(f"[bold]{escape(plan)}[/bold]: {len(items)} item(s), composed {how}")
    for g, n in items:
        console.print(f"  {n:>8,} × {escape(repr(g))}", highlight=False)
    symbol, other = ("ε", "δ") if quantity == "epsilon" else ("δ", "ε")
    table = Table(title=f"{symbol} at {other} = {at!r}, by analysis (rounded up)")
    for column in ("analysis", symbol, "theorem (or why it does not apply)"):
        table.add_column(column)
    for row in explanation.rows:
        if row.value is None:
            # (the library's advice names its keyword; here the same choice is a flag)
            note = row.note.replace("pass adaptive=False", "pass --non-adaptive")
            table.add_row(row.name, "n/a", f"[dim]{escape(note)}[/dim]")
            continue
        name = f"[bold green]{row.name} *[/]" if row is winner else row.name
        note = f" [dim]({escape(row.note)})[/dim]" if row.note else ""
        table.add_row(name, upper(row.value, digits), escape(row.theorem) + note)
    console.print(table)
    applied = sum(row.value is not None for row in explanation.rows)
    console.print(
        f"[bold]{symbol} = {upper(value, digits)}[/bold] at {other} = {at!r}, by {winner.name} "
        f"(* the sharpest of the {applied} analyses that apply)",
        highlight=False,
    )
