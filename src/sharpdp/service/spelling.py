"""Budgets and privacy targets spelled as on the command line (``approx:1,1e-6``, ``pure:0.1``,
``zcdp:0.1``), parsed by :mod:`sharpdp.cli._common` and reported as :class:`~sharpdp.InvalidParameter`
(the service answers those with a 422 naming the field)."""

from __future__ import annotations

from collections.abc import Callable

import typer

import sharpdp as sdp
from sharpdp.cli._common import parse_budget, parse_guarantee

__all__ = ["budget", "target"]

#: Budgets the accountant enforces.
BUDGETS = ("pure", "approx", "zcdp")
#: Privacy targets of one query.
TARGETS = ("pure", "approx", "zcdp", "approxzcdp")


def _parse(
    text: object, where: str, kinds: tuple[str, ...], parser: Callable[..., sdp.Guarantee]
) -> sdp.Guarantee:
    if not isinstance(text, str):
        raise sdp.InvalidParameter(f"{where} must be a string like 'pure:0.1', got {text!r}")
    try:
        return parser(text, where, kinds)
    except typer.BadParameter as err:
        raise sdp.InvalidParameter(str(err.message)) from None


def budget(text: object, where: str = "budget") -> sdp.Guarantee:
    """``approx:1,1e-6`` → ``sdp.ApproxDP(1.0, 1e-6)``; ``pure:ε`` and ``zcdp:ρ`` too. Finite only:
    ``pure:inf`` (or a typo such as ``pure:1e999``) would be a budget without limit."""
    return _parse(text, where, BUDGETS, parse_budget)


def target(text: object, where: str = "privacy") -> sdp.Guarantee:
    """A query's privacy target: ``pure:ε``, ``approx:ε,δ``, ``zcdp:ρ`` or ``approxzcdp:ρ,δ``."""
    return _parse(text, where, TARGETS, parse_guarantee)
