"""What every command shares: the typer app, the console, and the spelling of guarantees.

A guarantee is written ``name:param[,param]``: ``pure:0.1``, ``approx:1,1e-6``, ``zcdp:0.01``,
``approxzcdp:0.01,1e-7``.
"""

from __future__ import annotations

import math

import typer
from rich.console import Console

import sharpdp as sdp

__all__ = ["GUARANTEES", "app", "console", "parse_guarantee"]

app = typer.Typer(
    help="Differential privacy with every number a valid bound, and the sharpest known.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
console = Console()

#: Guarantees by the name used on the command line: (constructor, parameter names).
GUARANTEES: dict[str, tuple[type[sdp.Guarantee], tuple[str, ...]]] = {
    "pure": (sdp.PureDP, ("epsilon",)),
    "approx": (sdp.ApproxDP, ("epsilon", "delta")),
    "zcdp": (sdp.ZCDP, ("rho",)),
    "approxzcdp": (sdp.ApproxZCDP, ("rho", "delta")),
}


def parse_guarantee(text: str, option: str) -> sdp.Guarantee:
    """``approx:1,1e-6`` → ``sdp.ApproxDP(1.0, 1e-6)`` (``typer.BadParameter`` naming ``option``)."""
    name, _, params = text.partition(":")
    if name not in GUARANTEES:
        raise typer.BadParameter(
            f"{option}: unknown guarantee {name!r} in {text!r}; write one of "
            + ", ".join(f"{n}:{','.join(p)}" for n, (_, p) in GUARANTEES.items())
        )
    factory, names = GUARANTEES[name]
    try:
        values = [float(v) for v in params.split(",")] if params else []
    except ValueError:
        raise typer.BadParameter(
            f"{option}: {text!r} has a parameter that is not a number"
        ) from None
    if len(values) != len(names) or any(math.isnan(v) for v in values):
        raise typer.BadParameter(
            f"{option}: {name} takes {', '.join(names)}, e.g. {name}:"
            + ",".join("1" if n != "delta" else "1e-6" for n in names)
        )
    return factory(*values)
