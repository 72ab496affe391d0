"""The public privacy calculator's API (no token): compose mechanisms, see every analysis.

* ``GET /calculator/items`` — how items are spelled (``gaussian:sigma[,sensitivity]``…), as on
  the command line (:func:`sharpdp.cli._common.parse_item`).
* ``POST /calculator/compose`` — ``{"items": [{"item": "gaussian:5", "count": 100}, …],
  "delta": 1e-6}``: ε at δ by every analysis of :meth:`sharpdp.Composition.explain` and the
  winner, the δ(ε) profile of each analysis on a grid of ε (drawn by the page), and, given a
  ``budget`` and a ``next`` item, how many more of that item fit after the composition.

Every bound comes with its value at full precision and as shown (``shown``: rounded up by
:func:`sharpdp._format.upper`, so the page never prints a number below the certified one).

The endpoints are public, so the work of one request is bounded: at most :data:`MAX_ITEMS`
items, counts up to :data:`MAX_COUNT` (anything larger is refused with 422 before any
computation), a grid of :data:`CURVE_POINTS` ε drawn for at most :data:`CURVE_SECONDS` (the rest
of the curve is then left out and ``truncated`` says so), the "how many more" search stopped at
:data:`MAX_MORE` or after :data:`FIT_SECONDS` (its answer is then a certified "at least"), and
at most :data:`CONCURRENT` computations at once in a worker (others wait up to
:data:`WAIT_SECONDS`, then get 503).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from fastapi import APIRouter
from pydantic import Field

import sharpdp as sdp
from sharpdp._format import upper
from sharpdp.cli._common import item_kinds, parse_budget, parse_item
from sharpdp.errors import InvalidParameter, NotImplied, NumericalError
from sharpdp.service._body import Body
from sharpdp.service.errors import ServiceError

__all__ = [
    "CONCURRENT",
    "CURVE_POINTS",
    "MAX_COUNT",
    "MAX_ITEMS",
    "MAX_MORE",
    "ComposeBody",
    "answer",
    "more_fit",
    "router",
]

#: At most this many items (kinds of mechanism) in one request.
MAX_ITEMS = 8
#: At most this many runs of one item.
MAX_COUNT = 10_000
#: The "how many more fit" search stops here (the answer then reads "at least").
MAX_MORE = 1_000_000
#: Points of the δ(ε) grid.
CURVE_POINTS = 25
#: Seconds spent on the δ(ε) curve at most (checked between points).
CURVE_SECONDS = 3.0
#: Seconds spent on each "how many more fit" search at most (checked between steps).
FIT_SECONDS = 3.0
#: Calculator computations running at once in one worker.
CONCURRENT = 2
#: How long a request waits for a free slot before 503.
WAIT_SECONDS = 10.0
#: Significant digits of the numbers shown.
DIGITS = 6

_slots = threading.BoundedSemaphore(CONCURRENT)


class Busy(ServiceError):
    """Every calculator slot stayed busy."""

    status = 503


class Entry(Body):
    """One item of the composition and how many times it runs."""

    item: str = Field(min_length=1, max_length=64, examples=["gaussian:5"])
    count: int = Field(1, ge=1, le=MAX_COUNT)


class ComposeBody(Body):
    """``POST /calculator/compose``."""

    items: list[Entry] = Field(min_length=1, max_length=MAX_ITEMS)
    delta: float = Field(1e-6, ge=0.0, lt=1.0, description="report ε at this δ")
    adaptive: bool = Field(True, description="false: a batch fixed in advance (allows DDR20)")
    budget: str | None = Field(
        None, max_length=64, description="pure:ε or approx:ε,δ", examples=["approx:1,1e-6"]
    )
    next: str | None = Field(
        None, max_length=64, description="the item to fit in what is left of the budget"
    )


def _item(text: str, where: str) -> sdp.Guarantee:
    try:
        return parse_item(text, where)
    except typer.BadParameter as err:
        raise InvalidParameter(str(err.message)) from None


def _budget(text: str) -> sdp.ApproxDP:
    try:
        g = parse_budget(text, "budget", ("pure", "approx"))  # finite: pure:1e999 is a typo
    except typer.BadParameter as err:
        raise InvalidParameter(str(err.message)) from None
    if isinstance(g, sdp.PureDP):
        return sdp.ApproxDP(g.epsilon_, 0.0)
    assert isinstance(g, sdp.ApproxDP)
    return g


def _number(x: float | None) -> float | str | None:
    """JSON-safe: ±inf as ``"inf"``/``"-inf"`` (NaN is a bug)."""
    if x is None:
        return None
    if math.isnan(x):
        raise NumericalError("a NaN reached the calculator's response (a bug)")
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def _shown(x: float | None) -> str | None:
    return None if x is None else upper(x, DIGITS)


def more_fit(
    items: list[tuple[sdp.Guarantee, int]],
    item: sdp.Guarantee,
    budget: sdp.ApproxDP,
    adaptive: bool = True,
    cap: int = MAX_MORE,
    seconds: float = math.inf,
) -> tuple[int, bool]:
    """How many more runs of ``item`` fit ``budget`` after ``items``: the largest k ≤ ``cap``
    such that some valid analysis certifies the composition of ``items`` and k × ``item``
    (with no ``items``, :func:`sharpdp.max_compositions` up to ``cap``).

    Args:
        seconds: stop the search after this long (checked between steps) with the largest k
            certified so far.

    Returns:
        (k, whether the search stopped early, at ``cap`` or on time: then at least k fit; k
        itself is always certified to fit).
    """
    deadline = time.monotonic() + seconds

    def fits(k: int) -> bool:
        extra = [(item, k)] if k else []
        return sdp.compose([*items, *extra], adaptive).certifies(budget.epsilon_, budget.delta_)

    if not fits(1):  # also when ``items`` alone exceed the budget (adding runs never helps)
        return 0, False
    lo = 1
    while True:
        hi = min(2 * lo, cap)
        if hi == lo or time.monotonic() > deadline:
            return lo, True
        if not fits(hi):
            break
        lo = hi
    while hi - lo > 1:  # fits(lo), not fits(hi)
        if time.monotonic() > deadline:
            return lo, True
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo, False


def _grid(composition: sdp.Composition) -> list[float]:
    """``CURVE_POINTS`` ε from 0 to 1.25·ε(δ = 1e-10) (ε(1e-6), or 8, when that is infinite)."""
    top = composition.epsilon_bound(1e-10)
    if not math.isfinite(top) or top <= 0.0:
        top = composition.epsilon_bound(1e-6)
    if not math.isfinite(top) or top <= 0.0:
        top = 8.0
    return [1.25 * top * i / (CURVE_POINTS - 1) for i in range(CURVE_POINTS)]


def _curve(composition: sdp.Composition) -> dict[str, Any]:
    """δ(ε) on the grid: each analysis (``None`` where it does not apply) and the least; the
    grid is cut short after :data:`CURVE_SECONDS`."""
    deadline = time.monotonic() + CURVE_SECONDS
    grid = _grid(composition)
    explanations = []
    for e in grid:
        explanations.append(composition.explain(epsilon=e))
        if time.monotonic() > deadline:
            break
    truncated = len(explanations) < len(grid)
    grid = grid[: len(explanations)]
    names = [r.name for r in explanations[0].rows]
    lines: dict[str, list[float | str | None]] = {name: [] for name in names}
    sharpest: list[float | str | None] = []
    for ex in explanations:
        for row in ex.rows:
            lines[row.name].append(_number(row.value))
        try:
            sharpest.append(_number(ex.winner.value))
        except NotImplied:
            sharpest.append(None)
    shown = {name: values for name, values in lines.items() if any(v is not None for v in values)}
    return {"epsilons": grid, "sharpest": sharpest, "analyses": shown, "truncated": truncated}


def answer(body: ComposeBody) -> dict[str, Any]:
    """The calculator's answer to ``body`` (see the module docstring)."""
    items = [(_item(e.item, f"items[{i}]"), e.count) for i, e in enumerate(body.items)]
    budget = _budget(body.budget) if body.budget else None
    following = _item(body.next, "next") if body.next else None
    if (budget is None) != (following is None):
        raise InvalidParameter("give both budget and next (the item to fit), or neither")
    composition = sdp.compose(items, adaptive=body.adaptive)
    # a valid bound even where it is not certified to the accuracy (the analyses' rows say so)
    epsilon = composition.epsilon_bound(body.delta)
    explanation = composition.explain(delta=body.delta)
    try:
        winner = explanation.winner
    except NotImplied:
        winner = None
    out: dict[str, Any] = {
        "items": [
            {"item": e.item, "repr": repr(g), "count": n}
            for e, (g, n) in zip(body.items, items, strict=True)
        ],
        "adaptive": body.adaptive,
        "delta": body.delta,
        "epsilon": _number(epsilon),
        "epsilon_shown": _shown(epsilon),
        "winner": None if winner is None else {"name": winner.name, "theorem": winner.theorem},
        "analyses": [
            {
                "name": r.name,
                "theorem": r.theorem,
                "epsilon": _number(r.value),
                "shown": _shown(r.value),
                "note": r.note,
                "winner": r is winner,
            }
            for r in explanation.rows
        ],
        "curve": _curve(composition),
        "fit": None,
    }
    if budget is not None and following is not None:
        more, capped = more_fit(items, following, budget, body.adaptive, seconds=FIT_SECONDS)
        alone, alone_capped = more_fit([], following, budget, body.adaptive, seconds=FIT_SECONDS)
        out["fit"] = {
            "item": body.next,
            "repr": repr(following),
            "budget": repr(budget),
            "more": more,
            "alone": alone,
            "at_least": capped,
            "alone_at_least": alone_capped,
        }
    return out


@contextmanager
def _slot() -> Iterator[None]:
    if not _slots.acquire(timeout=WAIT_SECONDS):
        raise Busy("the calculator is busy: try again in a moment")
    try:
        yield
    finally:
        _slots.release()


router = APIRouter(prefix="/calculator", tags=["calculator"])


@router.get("/items")
def items() -> list[dict[str, str]]:
    """How each item is spelled (``gaussian:sigma[,sensitivity]``), as on the command line."""
    return [{"name": name, "spelling": kind.spelling(name)} for name, kind in item_kinds().items()]


@router.post("/compose")
def compose(body: ComposeBody) -> dict[str, Any]:
    """Compose the items: ε at δ by every analysis and the winner, δ(ε) of each analysis on a
    grid, and (given ``budget`` and ``next``) how many more of ``next`` fit. Public (no token);
    bounded work (422 beyond the caps; 503 when busy)."""
    with _slot():
        return answer(body)
