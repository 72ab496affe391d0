"""``sharpdp convert``: every route from one guarantee to a notion, its theorem and value, and
which one wins (``sharpdp convert pure 1.0 --to zcdp``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer
from rich.table import Table

import sharpdp as sdp
from sharpdp import conversions
from sharpdp.cli._common import app, console
from sharpdp.errors import SharpDPError

#: Source guarantees by name: (constructor, parameter names).
SOURCES: dict[str, tuple[Callable[..., sdp.Guarantee], tuple[str, ...]]] = {
    "pure": (sdp.PureDP, ("epsilon",)),
    "approx": (sdp.ApproxDP, ("epsilon", "delta")),
    "zcdp": (sdp.ZCDP, ("rho",)),
    "br": (sdp.BoundedRange, ("eta",)),
    "gdp": (sdp.GDP, ("mu",)),
    "mcdp": (sdp.MCDP, ("mu", "tau")),
    "laplace": (sdp.Laplace, ("scale",)),
    "gaussian": (sdp.Gaussian, ("sigma",)),
    "rr": (sdp.RandomizedResponse, ("epsilon",)),
}

#: Target notions by name, and how to print a guarantee of that notion.
TARGETS: dict[str, tuple[type[sdp.Guarantee], Callable[[sdp.Guarantee], str]]] = {
    "pure": (sdp.PureDP, lambda g: f"ε = {g.epsilon_:.6g}"),  # type: ignore[attr-defined]
    "zcdp": (sdp.ZCDP, lambda g: _zcdp_text(g)),
    "br": (sdp.BoundedRange, lambda g: f"η = {g.eta:.6g}"),  # type: ignore[attr-defined]
    "gdp": (sdp.GDP, lambda g: f"μ = {g.mu:.6g}"),  # type: ignore[attr-defined]
    "mcdp": (sdp.MCDP, lambda g: f"μ = {g.mu:.6g}, τ = {g.tau:.6g}"),  # type: ignore[attr-defined]
    "rdp": (
        sdp.RDP,
        lambda g: "ε(α): " + ", ".join(f"α={a:g}: {g.renyi(a):.4g}" for a in (1.5, 2, 8, 32)),
    ),
}


def _zcdp_text(g: sdp.Guarantee) -> str:
    assert isinstance(g, sdp.ZCDP)
    return f"ρ = {g.rho:.6g}" + (f", ξ = {g.xi:.6g}" if g.xi else "")


def _build(kind: str, values: list[float]) -> sdp.Guarantee:
    if kind not in SOURCES:
        raise typer.BadParameter(f"unknown guarantee {kind!r}; choose from {', '.join(SOURCES)}")
    factory, names = SOURCES[kind]
    if len(values) != len(names):
        raise typer.BadParameter(f"{kind} takes {len(names)} value(s): {', '.join(names)}")
    return factory(*values)


@app.command()
def convert(
    source: Annotated[str, typer.Argument(help=f"source guarantee: {', '.join(SOURCES)}")],
    values: Annotated[list[float], typer.Argument(help="its parameters, e.g. `pure 1.0`")],
    to: Annotated[
        str, typer.Option("--to", help=f"target: {', '.join(TARGETS)} or approx")
    ] = "zcdp",
    delta: Annotated[float, typer.Option(help="δ for --to approx")] = 1e-6,
) -> None:
    """Convert a guarantee to another notion, listing every route and its theorem."""
    try:
        g = _build(source, values)
        if to == "approx":
            approx = sdp.convert(g, sdp.ApproxDP, delta=delta)
            console.print(
                f"{g!r} ⇒ (ε = {approx.epsilon_:.6g}, δ = {delta:g})-DP"
                "  [min over all valid analyses]"
            )
            return
        if to not in TARGETS:
            raise typer.BadParameter(
                f"unknown target {to!r}; choose from {', '.join(TARGETS)} or approx"
            )
        target, show = TARGETS[to]
        sdp.convert(g, target)  # raises NotImplied (with the reason) when no route applies
        explanation = conversions.explain(g, target)
        winner = explanation.winner
        table = Table(title=f"{g!r} → {target.__name__}")
        for column in ("route", "theorem", "result", ""):
            table.add_column(column)
        for row in explanation.rows:
            result = getattr(row, "result", None)
            if result is None:
                table.add_row(row.name, row.theorem, f"[dim]{row.note}[/dim]", "")
            else:
                mark = "[bold green]sharpest[/]" if row is winner else f"[dim]{row.note}[/dim]"
                table.add_row(row.name, row.theorem, show(result), mark)
        console.print(table)
    except SharpDPError as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(1) from None
