"""``sharpdp capacity ITEM --budget ...``: how many runs of a mechanism fit a budget, sharp against
classical.

The sharp count is :func:`sharpdp.max_compositions` (the largest k certified by any valid analysis
of the k-fold composition; with ``--non-adaptive``, DDR20's optimal composition of bounded-range
mechanisms joins them). Under a ``zcdp:ρ`` budget it is the largest k with k·ρᵢ ≤ ρ (zCDP adds,
Bun–Steinke 2016 Lemma 2.3), ρᵢ the item's sharpest zCDP bound.

The classical counts read the item as ε-DP (:func:`classical_reading`) and then compose that
reading: *classical* with the optimal composition of ε-DP mechanisms (Kairouz–Oh–Viswanath 2015,
Thm 3.3) — the best a classical analysis can do — and *textbook* with the best of basic composition
(Dwork–Roth 2014, Thm 3.16), advanced composition (Dwork–Rothblum–Vadhan 2010) and ε-DP ⇒
ε²/2-zCDP (Bun–Steinke 2016, Prop 1.4 and Lemma 3.5). Items with no ε-DP reading (Gaussians, zCDP)
are read by their ρ (classical and textbook: zCDP additivity and BS16 Lemma 3.5).

The exponential mechanism's classical reading goes by sensitivity: P ∝ exp(c·q) is 2cΔ-DP
(McSherry–Talwar 2007, Thm 6), so ``exponential:0.025`` (P ∝ exp(0.025·q/2)) reads as 0.025-DP, and
``exponential:0.025,monotonic`` (P ∝ exp(0.025·q), monotone counts of range 1) as 0.05-DP: 359 fit
(1, 10⁻⁶) non-adaptively against 92, resp. 26, classically (Dong–Durfee–Rogers 2020, Thm 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

import sharpdp as sdp
from sharpdp._format import lower, upper
from sharpdp._math import float_up
from sharpdp.cli._common import (
    Digits,
    app,
    console,
    emit_json,
    parse_budget,
    parse_item,
    working,
)

__all__ = ["capacity", "classical_reading", "textbook_count"]

#: The largest count searched (beyond it an item is treated as free).
LIMIT = 2**40

_SELECTION = ("Exponential", "PermuteAndFlip", "ReportNoisyMax", "TopK")


def classical_reading(item: sdp.Guarantee) -> tuple[sdp.Guarantee | None, str]:
    """The item as a classical analysis reads it: a ``PureDP`` or ``ApproxDP``, or ``None`` (then
    it is read by its zCDP ρ), and why.

    Example:
        >>> import sharpdp as sdp
        >>> classical_reading(sdp.Exponential(0.025, monotonic=True))[0]
        PureDP(epsilon=0.05)
    """
    if isinstance(item, sdp.PureDP | sdp.ApproxDP):
        return item, "as given"
    epsilon = item.renyi(math.inf)
    if not math.isfinite(epsilon):
        return None, "no ε-DP bound: read by its zCDP ρ (Bun–Steinke 2016)"
    if type(item).__name__ in _SELECTION:
        if getattr(item, "monotonic", False):
            return sdp.PureDP(2.0 * epsilon), (
                "by sensitivity: P ∝ exp(c·q) is 2cΔ-DP (McSherry–Talwar 2007, Thm 6), "
                "not using that monotone scores have range Δ"
            )
        return sdp.PureDP(epsilon), "by sensitivity: P ∝ exp(c·q) is 2cΔ-DP (McSherry–Talwar 2007)"
    return sdp.PureDP(epsilon), "its ε-DP bound"


def _largest(fits: Callable[[int], bool]) -> int | None:
    """The largest k ≥ 0 with ``fits(k)`` for a monotone predicate (``None``: beyond LIMIT)."""
    if not fits(1):
        return 0
    hi = 1
    while fits(2 * hi):
        hi *= 2
        if hi > LIMIT:
            return None
    lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _zcdp_to_epsilon(rho: float, delta: float) -> float:
    """BS16 Lemma 3.5: ρ-zCDP ⇒ (ρ + 2√(ρ ln(1/δ)), δ)-DP."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) if delta > 0.0 else math.inf


def _up(x: float, ulps: int = 4) -> float:
    """``x`` moved up by a few ulps: float formulas err against the user."""
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def textbook_count(reading: sdp.Guarantee | None, rho: float, budget: sdp.ApproxDP) -> int | None:
    """The largest k the textbook analyses fit in ``budget``: basic, advanced and ε²/2-zCDP
    composition of the reading (or zCDP additivity of ``rho`` when there is no reading).

    Sums are exact (fractions of the floats); the closed forms are rounded up. ``None`` when more
    than ``LIMIT`` fit (the item is free).

    Example:
        >>> import sharpdp as sdp
        >>> textbook_count(sdp.PureDP(0.125), 0.0, sdp.ApproxDP(1.0, 0.0))  # basic: 8 · 0.125
        8
    """
    epsilon, delta = budget.epsilon_, budget.delta_
    if reading is None:
        return _largest(lambda k: _up(_zcdp_to_epsilon(k * rho, delta)) <= epsilon)
    e0 = reading.epsilon_  # type: ignore[attr-defined]
    d0 = reading.delta_ if isinstance(reading, sdp.ApproxDP) else 0.0

    def fits(k: int) -> bool:
        if k * Fraction(d0) > Fraction(delta):
            return False
        if k * Fraction(e0) <= Fraction(epsilon):  # basic
            return True
        slack = float(Fraction(delta) - k * Fraction(d0))
        if slack <= 0.0:
            return False
        growth = math.expm1(e0) if e0 < 709.0 else math.inf  # (e^710 overflows a float)
        routes = [math.sqrt(2.0 * k * math.log(1.0 / slack)) * e0 + k * e0 * growth]
        if d0 == 0.0:
            routes.append(_zcdp_to_epsilon(k * e0 * e0 / 2.0, delta))
        return _up(min(routes)) <= epsilon

    return _largest(fits)


def _zcdp_count(rho_i: Fraction, xi_i: Fraction, budget: sdp.ZCDP) -> int | None:
    """The largest k with k·ρᵢ ≤ ρ and k·(ξᵢ + ρᵢ) ≤ ξ + ρ (exact; ``None``: unbounded)."""
    rho, xi = Fraction(budget.rho), Fraction(budget.xi)
    bounds = []
    if rho_i > 0:
        bounds.append(math.floor(rho / rho_i))
    if xi_i + rho_i > 0:
        bounds.append(math.floor((xi + rho) / (xi_i + rho_i)))
    return min(bounds) if bounds else None


def _item_rho(item: sdp.Guarantee) -> tuple[Fraction, Fraction] | None:
    """(ρ, ξ) of one run as the accountant's zCDP rule reads it: exact where known; ``None`` for
    an item with no zCDP guarantee (δ > 0, which ρ cannot pay)."""
    exact = item.exact_zcdp()
    if exact is not None:
        return exact
    try:
        z = sdp.convert(item, sdp.ZCDP)
    except sdp.NotImplied:
        return None
    return Fraction(z.rho), Fraction(z.xi)


#: How a count of 0 under a zCDP budget is explained for an item with δ > 0.
_NO_RHO = "no zCDP guarantee: its δ > 0 cannot be paid in ρ"


def _approx_zcdp_count(g: sdp.ApproxZCDP, budget: sdp.ApproxDP) -> int | None:
    """The largest k whose k runs of (ξ, ρ, δᵢ)-approximate zCDP fit ``budget`` classically: the
    three add (Bun–Steinke 2016, Def 1.12 and Lemma 2.3) and (kξ, kρ) converts by BS16 Lemma
    3.5 at the δ left, δ − kδᵢ (the sums exact, the closed form rounded up)."""
    epsilon, delta = budget.epsilon_, Fraction(budget.delta_)

    def fits(k: int) -> bool:
        left = delta - k * Fraction(g.delta_)
        if left <= 0:
            return False
        eps = _zcdp_to_epsilon(float_up(k * Fraction(g.rho)), float(left))
        return _up(float_up(k * Fraction(g.xi)) + eps) <= epsilon

    return _largest(fits)


@dataclass(frozen=True)
class _Count:
    """One count and how it was reached."""

    count: int | None
    how: str
    spent: float | None = None  # ε at the budget's δ, or ρ, of the sharp count


def _sharp(g: sdp.Guarantee, total: sdp.Guarantee, adaptive: bool) -> _Count:
    if isinstance(total, sdp.ZCDP):
        read = _item_rho(g)
        if read is None:
            return _Count(0, _NO_RHO)
        rho_i, xi_i = read
        count = _zcdp_count(rho_i, xi_i, total)
        if count is None:
            raise sdp.InvalidParameter(f"ITEM: {g!r} costs nothing: any number of runs fits")
        spent = float_up(count * rho_i)
        return _Count(count, "zcdp: Bun–Steinke 2016 Lemma 2.3 (zCDP adds)", spent)
    approx = _as_approx(total)
    count = sdp.max_compositions(g, approx, adaptive=adaptive)
    if count == 0:
        return _Count(0, "not even one run fits")
    composed = sdp.compose([(g, count)], adaptive=adaptive)
    winner = composed.explain(delta=approx.delta_).winner
    return _Count(count, f"{winner.name}: {winner.theorem}", composed.epsilon(approx.delta_))


def _as_approx(total: sdp.Guarantee) -> sdp.ApproxDP:
    if isinstance(total, sdp.ApproxDP):
        return total
    assert isinstance(total, sdp.PureDP)
    return sdp.ApproxDP(total.epsilon_, 0.0)


def _classical(
    g: sdp.Guarantee, reading: sdp.Guarantee | None, total: sdp.Guarantee
) -> tuple[_Count, _Count]:
    """The classical count (the reading, composed optimally) and the textbook count."""
    count: int | None
    if isinstance(total, sdp.ZCDP):
        read = _item_rho(g) if reading is None else None
        if reading is None and read is None:
            how, count = _NO_RHO, 0
        elif read is not None:
            how = "zCDP additivity (Bun–Steinke 2016 Lemma 2.3)"
            count = _zcdp_count(read[0], read[1], total)
        elif isinstance(reading, sdp.PureDP):
            e0 = Fraction(reading.epsilon_)
            how = "ε-DP ⇒ ε²/2-zCDP (Bun–Steinke 2016 Prop 1.4), added up"
            count = _zcdp_count(e0 * e0 / 2, Fraction(0), total)
        else:
            how, count = "(ε, δ > 0)-DP implies no zCDP bound", 0
        return _Count(count, how), _Count(count, how)
    approx = _as_approx(total)
    if reading is None:
        read = _item_rho(g)
        if read is None and isinstance(g, sdp.ApproxZCDP):
            how = "approximate zCDP additivity (Bun–Steinke 2016 Def 1.12) + Lemma 3.5"
            count = _approx_zcdp_count(g, approx)
        elif read is None:  # pragma: no cover - every item without an ε-DP reading has ρ
            how, count = "no classical reading", 0
        else:
            how = "zCDP additivity + Bun–Steinke 2016 Lemma 3.5"
            count = textbook_count(None, float_up(read[0]), approx)
        return _Count(count, how), _Count(count, how)
    # the reading's float ε is rounded up (0.1 is above 1/10): with the item's exact rational ε,
    # basic composition's count ⌊ε/ε0⌋ is one the classical analyses also reach
    exact = g.exact_pair()
    basic = (
        math.floor(Fraction(approx.epsilon_) / exact[0])
        if exact is not None and exact[0] > 0 and exact[1] == 0
        else 0
    )

    def at_least_basic(count: int | None) -> int | None:
        return None if count is None else max(count, basic)

    optimal = _Count(
        at_least_basic(sdp.max_compositions(reading, approx, adaptive=True)),
        "optimal composition of ε-DP (Kairouz–Oh–Viswanath 2015 Thm 3.3)",
    )
    textbook = _Count(
        at_least_basic(textbook_count(reading, 0.0, approx)),
        "basic (Dwork–Roth Thm 3.16; Σε ≤ ε exactly, in the floats given), advanced (DRV10) "
        "or ε²/2-zCDP (BS16) composition",
    )
    return optimal, textbook


@app.command()
def capacity(
    item: Annotated[
        str,
        typer.Argument(help="the mechanism, e.g. exponential:0.025, gaussian:5, pure:0.1"),
    ],
    budget: Annotated[str, typer.Option(help="the budget: approx:ε,δ, pure:ε or zcdp:ρ")],
    non_adaptive: Annotated[
        bool,
        typer.Option(
            "--non-adaptive",
            help="the runs are a batch fixed in advance (allows DDR20's optimal composition)",
        ),
    ] = False,
    digits: Digits = 6,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (full precision)")] = False,
) -> None:
    """How many runs of a mechanism fit a budget: sharp, against the classical analyses.

    Example: sharpdp capacity exponential:0.025,monotonic --budget approx:1,1e-6 --non-adaptive
    (359 fit; 26 by the classical 0.05-DP reading)
    """
    g = parse_item(item, "ITEM")
    total = parse_budget(budget, "--budget", ("approx", "pure", "zcdp"))
    adaptive = not non_adaptive
    reading, why = classical_reading(g)
    with working(f"counting {g!r}"):
        sharp = _sharp(g, total, adaptive)
        classical, textbook = _classical(g, reading, total)
    if as_json:
        name, _, theorem = sharp.how.partition(": ")
        emit_json(
            {
                "item": repr(g),
                "budget": repr(total),
                "adaptive": adaptive,
                "count": sharp.count,
                "analysis": {
                    "name": name if sharp.count else None,
                    "theorem": theorem if sharp.count else None,
                    "rho" if isinstance(total, sdp.ZCDP) else "epsilon": sharp.spent,
                },
                "classical": {
                    "reading": None if reading is None else repr(reading),
                    "why": why,
                    "count": classical.count,
                    "analysis": classical.how,
                    "textbook_count": textbook.count,
                    "textbook_analysis": textbook.how,
                },
            }
        )
        return
    how = "adaptively" if adaptive else "non-adaptively (a batch fixed in advance)"
    console.print(f"How many {escape(repr(g))} fit {escape(repr(total))}, {how}:", highlight=False)
    table = Table("analysis", "runs", "how")
    table.columns[1].justify = "right"
    if sharp.spent is not None:
        at = (
            f"ρ = {upper(sharp.spent, digits)}"
            if isinstance(total, sdp.ZCDP)
            else (f"ε = {upper(sharp.spent, digits)} at δ = {_as_approx(total).delta_!r}")
        )
        detail = f"{at}, by {sharp.how}"
    else:
        detail = sharp.how
    table.add_row("[bold]sharp[/bold]", f"[bold]{_shown(sharp.count)}[/bold]", escape(detail))
    if reading is None:
        label = f"{escape(why)}; {escape(classical.how)}"
        table.add_row("classical", _shown(classical.count), label)
    else:
        label = f"read as {escape(repr(reading))}, {escape(why)}; {escape(classical.how)}"
        table.add_row("classical", _shown(classical.count), label)
        table.add_row(
            "textbook", _shown(textbook.count), f"the same reading; {escape(textbook.how)}"
        )
    console.print(table)
    if classical.count and sharp.count and sharp.count > classical.count:
        gain = lower(sharp.count / classical.count, 3)
        console.print(f"{gain}× the runs the classical analysis allows", highlight=False)


def _shown(count: int | None) -> str:
    return "> 2⁴⁰" if count is None else f"{count:,}"
