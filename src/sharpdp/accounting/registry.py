"""The registry of composition analyses: each analysis module registers itself with
:func:`analysis`; :mod:`sharpdp.accounting.composition` evaluates every registered one."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sharpdp.accounting._items import Items
from sharpdp.guarantees import Guarantee

__all__ = ["Analysis", "Refinable", "all_analyses", "analysis", "convert_all", "convert_cached"]


@dataclass(frozen=True)
class Analysis:
    """One composition theorem: when it applies, and ε(δ) / δ(ε) under it.

    ``prepare(items, adaptive)`` returns a guarantee-like object answering ``epsilon``/``delta``
    for the composition, or raises :class:`NotImplied` when the theorem does not apply.
    ``exact_for(items)`` is true when the analysis is provably the exact optimum for those items
    (no valid bound can be smaller), so ε/δ queries need no other analysis. ``dominated_by``
    names an analysis that is provably never worse whenever it applies; ε/δ queries then skip
    this one (``explain`` still lists every analysis). ``costly`` marks a refinable analysis
    (its result implements :class:`Refinable`): queries run it last and tell it the best value
    so far, so it can stop refining once it provably cannot win. ``supersedes`` names costly
    analyses that bound the same quantity (the exact composition of the same dominating pairs)
    from above while this one brackets it at least as narrowly (within the composition's
    accuracy): once this analysis answers a query, they are skipped — by queries and by
    ``explain``, which says so — since they could only improve on it by less than the accuracy
    promised (exact ≤ value ≤ exact·(1 + accuracy) holds either way). They are skipped too when
    a costly analysis shows that this exact composition cannot beat the best value so far.
    ``composes`` is false for an analysis that applies to a lone release only (no composition
    theorem: capacity plots and counts leave it out).
    """

    name: str
    theorem: str
    prepare: Callable[[Items, bool], Guarantee]
    exact_for: Callable[[Items], bool] | None = None
    dominated_by: str | None = None
    costly: bool = False
    supersedes: tuple[str, ...] = ()
    composes: bool = True


class Refinable(Protocol):
    """The result of a ``costly`` analysis: ε(δ) or δ(ε), or ``inf`` once it provably loses."""

    def value_unless_beaten(self, quantity: str, at: float, rival: float) -> float:
        """The value of ``quantity`` at ``at``, or ``inf`` if it cannot be below ``rival``.

        Raises :class:`~sharpdp.AccuracyNotReached` (carrying the valid value and a certified
        lower end) when it cannot bracket the exact value within the composition's accuracy."""
        ...


_ANALYSES: list[Analysis] = []


Prepare = Callable[[Items, bool], Guarantee]


def analysis(
    name: str,
    theorem: str,
    *,
    exact_for: Callable[[Items], bool] | None = None,
    dominated_by: str | None = None,
    costly: bool = False,
    supersedes: tuple[str, ...] = (),
    composes: bool = True,
) -> Callable[[Prepare], Prepare]:
    """Register a composition analysis (decorator); see :class:`Analysis` for the options."""

    def deco(fn: Prepare) -> Prepare:
        _ANALYSES.append(
            Analysis(name, theorem, fn, exact_for, dominated_by, costly, supersedes, composes)
        )
        return fn

    return deco


@functools.lru_cache(maxsize=4096)
def convert_cached(g: Guarantee, target: type[Guarantee]) -> Guarantee:
    """``sharpdp.convert`` memoised (items recur across the compositions of an accountant)."""
    from sharpdp.conversions import convert

    return convert(g, target)


def convert_all(items: Items, target: type[Guarantee]) -> list[tuple[Guarantee, int]]:
    """Every item converted to ``target`` (raises :class:`~sharpdp.NotImplied` if one cannot be)."""
    return [(convert_cached(g, target), c) for g, c in items]  # type: ignore[arg-type]


def all_analyses() -> list[Analysis]:
    """Every registered analysis, in registration order (the order ``explain`` lists them)."""
    return _ANALYSES
