"""``sharpdp plot``: figures written as PNG, SVG or PDF (needs the ``plot`` extra: matplotlib).

Examples::

    sharpdp plot capacity exponential:0.025 --budget approx:1,1e-6 -o capacity.png
    sharpdp plot capacity exponential:0.025 --budget approx:1,1e-6 --non-adaptive -o ddr20.svg
    sharpdp plot profile plan.toml -o profile.svg
    sharpdp plot renyi br:1 zcdp:0.125 -o renyi.png
    sharpdp plot budget ledger.sqlite -o spending.png

Items and plans are written as for ``compose`` and ``capacity`` (one parser): an item is
``name:param[,param][,flag]`` (``gaussian:5``, ``gaussian:5,2`` with sensitivity 2,
``exponential:0.025,monotonic``, ``discrete-laplace:2``, ``topk:10,0.01,monotonic``, ``pure:1``,
``approx:1,1e-6``, ``zcdp:0.1``, ``br:1``, ``gdp:0.5``...). A plan is a TOML or JSON file of items,
each with its parameters by name and a ``count`` (default 1), and optionally ``adaptive = false``
at the top::

    [[item]]
    mechanism = "gaussian"
    sigma = 5
    count = 100

    [[item]]
    mechanism = "exponential"
    epsilon = 0.1
    monotonic = true
    count = 10
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import sharpdp as sdp
from sharpdp.cli._common import app, console, err_console, parse_budget, parse_item
from sharpdp.cli.compose import load_plan

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["parse_plan", "plot_app"]

plot_app = typer.Typer(
    help="Draw privacy profiles, capacities, Rényi curves and budgets (PNG, SVG or PDF).",
    no_args_is_help=True,
)
app.add_typer(plot_app, name="plot")


#: The file formats written, by suffix.
_SUFFIXES = (".png", ".svg", ".pdf")

_OUTPUT_HELP = "the file to write: .png, .svg or .pdf"


def parse_plan(path: Path) -> tuple[list[tuple[sdp.Guarantee, int]], bool]:
    """The items of a TOML or JSON plan, with their counts, and whether it is adaptive (the
    ``compose`` command's reader: the same plans draw as compose)."""
    items, adaptive = load_plan(str(path))
    return items, True if adaptive is None else adaptive


def _output(path: Path) -> Path:
    if path.suffix.lower() not in _SUFFIXES:
        raise typer.BadParameter(f"--output: {str(path)!r} must end in .png, .svg or .pdf")
    return path


def _numbers(text: str, option: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(f"{option}: {text!r} is not comma-separated numbers") from None
    if not values or any(math.isnan(v) for v in values):
        raise typer.BadParameter(f"{option}: {text!r} is not comma-separated numbers")
    return values


@contextmanager
def _reported() -> Iterator[None]:
    """A missing ``plot`` extra as one line on standard error (exit 2, as the script without
    the ``cli`` extra and ``serve`` without the ``service`` one); the library's errors go to the
    command line's handler, as every command's do (exit 2 for invalid input, 1 for a refusal)."""
    try:
        yield
    except ImportError as err:
        if not _missing_matplotlib(err):
            raise
        err_console.print(
            "[red]error:[/red] plots need matplotlib: pip install 'sharpdp\\[plot]' (in a "
            "clone: '.\\[plot]')",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(2) from None


def _missing_matplotlib(err: BaseException | None) -> bool:
    while err is not None:
        if isinstance(err, ModuleNotFoundError) and (err.name or "").startswith("matplotlib"):
            return True
        err = err.__cause__
    return False


def _write(figure: Figure, output: Path) -> None:
    from sharpdp.plots import save

    save(figure, output)
    console.print(f"wrote {output}", highlight=False, soft_wrap=True, markup=False)


Output = Annotated[Path, typer.Option("--output", "-o", help=_OUTPUT_HELP)]


@plot_app.command("capacity")
def capacity(
    item: Annotated[str, typer.Argument(help="the item composed k times, e.g. exponential:0.025")],
    output: Output,
    budget: Annotated[str, typer.Option(help="the budget: approx:ε,δ or pure:ε")] = "approx:1,1e-6",
    max_k: Annotated[int, typer.Option(help="the largest k drawn (from 1, log-spaced)")] = 10_000,
    adaptive: Annotated[
        bool,
        typer.Option(
            "--adaptive/--non-adaptive",
            help="--non-adaptive: a batch fixed in advance (enables DDR20's optimal composition)",
        ),
    ] = True,
) -> None:
    """ε against the number of compositions under every analysis, and how many fit the budget.

    Example: sharpdp plot capacity exponential:0.025 --budget approx:1,1e-6 -o capacity.png
    """
    target = _output(output)
    if max_k < 1:
        raise typer.BadParameter(f"--max-k: must be at least 1, got {max_k}")
    with _reported():
        g = parse_item(item, "ITEM")
        b = parse_budget(budget, "--budget")
        from sharpdp.plots.capacity import capacity as draw
        from sharpdp.plots.capacity import default_ks

        _write(draw(g, b, default_ks(max_k), adaptive=adaptive), target)


@plot_app.command("profile")
def profile(
    plan: Annotated[
        Path, typer.Argument(help=r"a TOML or JSON plan of \[\[item]] tables (as compose reads)")
    ],
    output: Output,
    epsilons: Annotated[
        str | None, typer.Option(help="the ε drawn, comma-separated (default: automatic)")
    ] = None,
) -> None:
    """The privacy profile δ(ε) of a plan under every analysis, the sharpest marked.

    Example: sharpdp plot profile plan.toml -o profile.svg
    """
    target = _output(output)
    grid = None if epsilons is None else _numbers(epsilons, "--epsilons")
    with _reported():
        items, adaptive = parse_plan(plan)
        from sharpdp.plots.profile import profile as draw

        _write(draw(sdp.compose(items, adaptive), grid), target)


@plot_app.command("renyi")
def renyi(
    items: Annotated[list[str], typer.Argument(help="one or more items, e.g. br:1 zcdp:0.125")],
    output: Output,
    zcdp: Annotated[bool, typer.Option(help="also draw each item's zCDP line ρα")] = False,
    max_alpha: Annotated[float, typer.Option(help="the largest order α drawn")] = 1000.0,
) -> None:
    """Rényi-DP curves ε(α) of items (e.g. bounded range's exact curve against η²α/8).

    Example: sharpdp plot renyi br:1 zcdp:0.125 -o renyi.png
    """
    target = _output(output)
    if not (math.isfinite(max_alpha) and max_alpha > 1.0):
        raise typer.BadParameter(f"--max-alpha: must be a finite order above 1, got {max_alpha}")
    with _reported():
        gs = [parse_item(text, "ITEM") for text in items]
        import numpy as np

        from sharpdp.plots.renyi import renyi as draw

        alphas = np.geomspace(1.0, max_alpha, 121).tolist()
        _write(draw(*gs, alphas=alphas, labels=items, zcdp=zcdp), target)


@plot_app.command("budget")
def budget(
    ledger: Annotated[Path, typer.Argument(help="a ledger file", exists=True, dir_okay=False)],
    output: Output,
    analyst: Annotated[str | None, typer.Option(help="only this analyst")] = None,
    period: Annotated[str | None, typer.Option(help="only this period")] = None,
) -> None:
    """Each analyst's privacy spent over time, against the budget, from a ledger.

    Example: sharpdp plot budget ledger.sqlite -o spending.png
    """
    target = _output(output)
    with _reported():
        from sharpdp.plots.budget import budget as draw

        _write(draw(ledger, analyst=analyst, period=period), target)
