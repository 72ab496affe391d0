"""``sharpdp convert``: every route from one guarantee to a notion, its theorem and value, and
which one wins (``sharpdp convert pure 1.0 --to zcdp``; ``--to approx --delta 1e-6`` for ε(δ)).

Every value printed is rounded up (they are all upper bounds); ``--json`` carries full precision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import sharpdp as sdp
from sharpdp import conversions
from sharpdp._format import upper
from sharpdp.cli._common import NUMBER, Digits, app, console, emit_json, parse_item, parse_number

__all__ = ["SOURCES", "TARGETS", "convert"]

#: Source guarantees by name: (constructor, parameter names).
SOURCES: dict[str, tuple[Callable[..., sdp.Guarantee], tuple[str, ...]]] = {
    "pure": (sdp.PureDP, ("epsilon",)),
    "approx": (sdp.ApproxDP, ("epsilon", "delta")),
    "zcdp": (sdp.ZCDP, ("rho",)),
    "br": (sdp.BoundedRange, ("eta",)),
    "gdp": (sdp.GDP, ("mu",)),
    "mcdp": (sdp.MCDP, ("mu", "tau")),
    "laplace": (lambda scale: sdp.Laplace(scale), ("scale",)),
    "gaussian": (lambda sigma: sdp.Gaussian(sigma), ("sigma",)),
    "rr": (lambda epsilon: sdp.RandomizedResponse(epsilon), ("epsilon",)),
}

#: The RDP orders shown for ``--to rdp``.
RDP_ORDERS = (1.5, 2.0, 8.0, 32.0)


def _fields(g: sdp.Guarantee, orders: tuple[float, ...] = ()) -> list[tuple[str, float]]:
    """The parameters of a converted guarantee, by symbol (every one an upper bound); an RDP
    curve at ``orders`` (default: :data:`RDP_ORDERS`)."""
    if isinstance(g, sdp.PureDP):
        return [("ε", g.epsilon_)]
    if isinstance(g, sdp.ApproxDP):  # (δ is the one asked for, shown in the title)
        return [("ε", g.epsilon_)]
    if isinstance(g, sdp.ZCDP):
        return [("ρ", g.rho)] + ([("ξ", g.xi)] if g.xi else [])
    if isinstance(g, sdp.BoundedRange):
        return [("η", g.eta)]
    if isinstance(g, sdp.GDP):
        return [("μ", g.mu)]
    if isinstance(g, sdp.MCDP):
        return [("μ", g.mu), ("τ", g.tau)]
    return [(f"ε(α={a:g})", g.renyi(a)) for a in orders or RDP_ORDERS]


#: Target notions by name.
TARGETS: dict[str, type[sdp.Guarantee]] = {
    "pure": sdp.PureDP,
    "zcdp": sdp.ZCDP,
    "br": sdp.BoundedRange,
    "gdp": sdp.GDP,
    "mcdp": sdp.MCDP,
    "rdp": sdp.RDP,
    "approx": sdp.ApproxDP,
}


def _source(kind: str, values: list[str]) -> sdp.Guarantee:
    # unknown options reach the values (a value may start with "-": `convert pure -1`)
    for v in values:
        if v.startswith("-") and not NUMBER.fullmatch(v.partition(",")[0]):
            hint = " (sharpdp's own options, as --debug, go before the command)" * (
                v in ("--debug", "--version")
            )
            raise typer.BadParameter(f"no such option: {v}{hint}")
    if ":" in kind and not values:  # the item spelling: `convert pure:1`
        return parse_item(kind, "SOURCE")
    if kind not in SOURCES:
        raise typer.BadParameter(f"unknown guarantee {kind!r}; choose from {', '.join(SOURCES)}")
    factory, names = SOURCES[kind]
    # `approx 1,1e-6` as the item spelling writes it (`approx:1,1e-6`), as well as `approx 1 1e-6`
    values = [v.strip() for text in values for v in text.split(",") if v.strip()]
    if len(values) != len(names):
        raise typer.BadParameter(
            f"{kind} takes {len(names)} value(s): {', '.join(names)}, got {len(values)}"
        )
    numbers = [parse_number(v, n, False, kind) for n, v in zip(names, values, strict=True)]
    return factory(*numbers)


@app.command(context_settings={"ignore_unknown_options": True})  # `convert pure -1`: a value
def convert(
    source: Annotated[
        str, typer.Argument(help=f"source guarantee: {', '.join(SOURCES)} (or e.g. pure:1)")
    ],
    values: Annotated[
        list[str] | None, typer.Argument(help="its parameters, e.g. `pure 1.0`", show_default=False)
    ] = None,
    to: Annotated[str, typer.Option("--to", help=f"target: {', '.join(TARGETS)}")] = "zcdp",
    delta: Annotated[
        float | None, typer.Option(help="δ for --to approx  [default: 1e-6]", show_default=False)
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option(
            help="for --to rdp: the Rényi order to show (and rank routes at); default: "
            + ", ".join(f"{a:g}" for a in RDP_ORDERS)
            + " (ranked at 2)",
            show_default=False,
        ),
    ] = None,
    digits: Digits = 6,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (full precision)")] = False,
) -> None:
    """Convert a guarantee to another notion, listing every route and its theorem.

    Example: sharpdp convert pure 1.0 --to zcdp   (ρ = ε·tanh(ε/2) = 0.462118, not ε²/2)
    """
    g = _source(source, values or [])
    if to not in TARGETS:
        raise typer.BadParameter(f"--to: unknown target {to!r}; choose from {', '.join(TARGETS)}")
    target = TARGETS[to]
    if delta is not None and target is not sdp.ApproxDP:
        raise typer.BadParameter(f"--delta is only used with --to approx, not --to {to}")
    if alpha is not None and target is not sdp.RDP:
        raise typer.BadParameter(f"--alpha is only used with --to rdp, not --to {to}")
    options: dict[str, Any] = (
        {"delta": 1e-6 if delta is None else delta} if target is sdp.ApproxDP else {}
    )
    best = sdp.convert(g, target, **options)  # raises NotImplied (with the reason) if none applies
    orders: tuple[float, ...] = ()
    if target is sdp.RDP:
        options["alpha"] = 2.0 if alpha is None else alpha
        orders = () if alpha is None else (alpha,)
    explanation = conversions.explain(g, target, **options)
    winner = explanation.winner
    fields = _fields(best, orders)
    shown = (
        "RDP: " + ", ".join(f"{k} = {v!r}" for k, v in fields) if target is sdp.RDP else repr(best)
    )
    if as_json:
        emit_json(
            {
                "source": repr(g),
                "target": target.__name__,
                "at": delta if target is sdp.ApproxDP else None,
                "result": shown,
                "fields": dict(fields),
                "winner": winner.name,
                "routes": [
                    {
                        "name": row.name,
                        "theorem": row.theorem,
                        "value": row.value,
                        "note": row.note,
                        "ranked": row.ranked,
                        "winner": row is winner,
                    }
                    for row in explanation.rows
                ],
            }
        )
        return

    def show(result: sdp.Guarantee) -> str:
        return ", ".join(f"{s} = {upper(v, digits)}" for s, v in _fields(result, orders))

    title = f"{g!r} → {target.__name__}" + (f" at δ = {delta!r}" if target is sdp.ApproxDP else "")
    table = Table(title=escape(title))
    for column in ("route", "theorem", "result", ""):
        table.add_column(column)
    for row in explanation.rows:
        result = getattr(row, "result", None)
        if result is None:
            table.add_row(row.name, row.theorem, f"[dim]{escape(row.note)}[/dim]", "")
        else:
            mark = "[bold green]sharpest[/]" if row is winner else f"[dim]{escape(row.note)}[/dim]"
            table.add_row(row.name, escape(row.theorem), show(result), mark)
    console.print(table)
    at = f" at δ = {delta!r}" if target is sdp.ApproxDP else ""
    console.print(
        f"{escape(repr(g))} ⇒ {show(best)}{at} (sharpest: {winner.name}; rounded up)",
        highlight=False,
    )
