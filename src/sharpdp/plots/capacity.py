"""How many compositions fit a budget: ε against k under every analysis (the "16×" picture)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

import sharpdp as sdp
from sharpdp import _validate
from sharpdp._explain import Explanation
from sharpdp._format import lower
from sharpdp.accounting.registry import all_analyses
from sharpdp.errors import InvalidParameter
from sharpdp.plots._figure import drawn, legend, new_figure, short_theorem, style

__all__ = ["Capacities", "capacities", "capacity", "default_ks"]


def default_ks(largest: int = 10_000, points: int = 25) -> list[int]:
    """About ``points`` integers from 1 to ``largest``, evenly spaced on a log scale."""
    return sorted({round(k) for k in np.geomspace(1.0, float(largest), points)})


def _budget(budget: sdp.Guarantee) -> tuple[float, float]:
    """(ε, δ) of an ``ApproxDP`` or ``PureDP`` budget."""
    if isinstance(budget, sdp.ApproxDP):
        return budget.epsilon_, budget.delta_
    if isinstance(budget, sdp.PureDP):
        return budget.epsilon_, 0.0
    raise InvalidParameter(
        f"budget must be ApproxDP or PureDP (ε is drawn against k at the budget's δ), "
        f"got {budget!r}"
    )


def _ks(ks: Sequence[int] | None) -> list[int]:
    if ks is None:
        return default_ks()
    out = sorted({_validate.integer("ks", k, minimum=1) for k in ks})
    if not out:
        raise InvalidParameter("ks must not be empty")
    return out


@dataclass(frozen=True)
class Capacities:
    """The ε of k-fold compositions under each analysis, and the largest k each fits in a budget.

    Attributes:
        ks: the numbers of compositions evaluated (increasing).
        values: per analysis (in ``explain`` order), its ε at the budget's δ for each k (``None``
            where it does not apply). Analyses that supersede one another share one series,
            named by their names joined with "/" (e.g. "mgf/mgf-smoothed/pld": whichever answers).
        theorems: per analysis, its theorem.
        fits: per analysis that applies, the largest k it certifies within the budget: an exact
            search between the sampled k around its crossing (0 when even k = 1 does not fit;
            ``None`` when every sampled k fits, so the largest is beyond ``ks[-1]``).
    """

    ks: tuple[int, ...]
    values: dict[str, tuple[float | None, ...]]
    theorems: dict[str, str]
    fits: dict[str, int | None]


def capacities(
    item: sdp.Guarantee,
    budget: sdp.Guarantee,
    ks: Sequence[int] | None = None,
    *,
    adaptive: bool = True,
) -> Capacities:
    """The numbers behind :func:`capacity` (see :class:`Capacities`)."""
    if not isinstance(item, sdp.Guarantee):
        raise InvalidParameter(f"item must be a sharpdp guarantee or mechanism, got {item!r}")
    eps, delta = _budget(budget)
    grid = _ks(ks)
    cache: dict[int, Explanation] = {}

    def explain(k: int) -> Explanation:
        if k not in cache:
            cache[k] = sdp.compose([(item, k)], adaptive).explain(delta=delta)
        return cache[k]

    first = explain(grid[0]).rows
    lone = {a.name for a in all_analyses() if not a.composes}  # (k = 1 only: no curve)
    series = _series([r.name for r in first if r.name not in lone])
    theorems = {r.name: r.theorem for r in first}

    def value(k: int, members: tuple[str, ...]) -> float | None:
        found = {r.name: r.value for r in explain(k).rows}
        return next((found[m] for m in members if found.get(m) is not None), None)

    values = {n: tuple(value(k, members) for k in grid) for n, members in series.items()}
    fits: dict[str, int | None] = {}
    for name, members in series.items():
        if all(v is None for v in values[name]):
            continue

        def ok(k: int, members: tuple[str, ...] = members) -> bool:
            v = value(k, members)
            return v is not None and v <= eps

        fits[name] = _largest(grid, ok)
    merged = {n: " / ".join(theorems[m] for m in members) for n, members in series.items()}
    return Capacities(tuple(grid), values, merged, fits)


def _series(names: list[str]) -> dict[str, tuple[str, ...]]:
    """One curve per analysis, except that analyses which supersede others share one with them
    (e.g. "mgf/mgf-smoothed/pld"): they bracket the same exact composition of the items' dominating pairs,
    and which of them answers depends on k (the inversion declines nearly atomic laws, and once
    it answers the PLD is not run), so apart each curve would have holes. The curve takes the
    first member that answers, in ``explain`` order."""
    linked = {n: {n} for n in names}
    for a in all_analyses():
        for b in a.supersedes:
            if a.name in linked and b in linked:
                union = linked[a.name] | linked[b]
                for m in union:
                    linked[m] = union
    out: dict[str, tuple[str, ...]] = {}
    for name in names:
        members = tuple(m for m in names if m in linked[name])
        out.setdefault("/".join(members), members)
    return out


def _largest(grid: list[int], ok: Callable[[int], bool]) -> int | None:
    """The largest k with ok(k), searched up to the first sampled k that fails (by bisection
    between it and the sampled k before it); ``None`` when every sampled k is ok."""
    below = 0
    for k in grid:
        if not ok(k):
            lo, hi = below, k  # ok(lo) (or lo = 0), not ok(hi)
            if lo == 0 and k > 1:
                if not ok(1):
                    return 0
                lo = 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if ok(mid):
                    lo = mid
                else:
                    hi = mid
            return lo
        below = k
    return None


def capacity(
    item: sdp.Guarantee,
    budget: sdp.Guarantee,
    ks: Sequence[int] | None = None,
    *,
    adaptive: bool = True,
) -> Figure:
    """ε at the budget's δ against the number k of compositions of ``item``, per analysis.

    Log-log axes; one line per analysis of :meth:`sharpdp.Composition.explain` (those that apply),
    labelled with its theorem and the largest k it fits within the budget (an exact search near
    the crossing, see :class:`Capacities`); a horizontal line at the budget's ε. The title
    compares the analysis that fits the most compositions with the one that fits the fewest.

    Args:
        item: the guarantee or mechanism composed k times.
        budget: an ``ApproxDP(ε, δ)`` or ``PureDP(ε)`` budget.
        ks: the k to draw (by default 25 points from 1 to 10,000, log-spaced).
        adaptive: as for :func:`sharpdp.compose`: DDR20's optimal composition of bounded-range
            mechanisms is drawn only with ``adaptive=False``.

    Returns:
        The figure.

    Example:
        >>> import sharpdp as sdp
        >>> fig = sdp.plots.capacity(sdp.Exponential(0.025), sdp.ApproxDP(1.0, 1e-6), [1, 10, 100])
        >>> fig.axes[0].get_xlabel()
        'number of compositions k'
    """
    eps, delta = _budget(budget)
    found = capacities(item, budget, ks, adaptive=adaptive)
    finite = [v for values in found.values.values() for v in values if v is not None]
    if not any(0.0 < v < math.inf for v in finite):  # (matplotlib: "cannot be log-scaled")
        raise InvalidParameter(
            f"capacity: no analysis gives {item!r} a finite positive ε at δ = {delta:g} for any "
            f"k drawn ({found.ks[0]:,} to {found.ks[-1]:,}): nothing to draw on log axes"
        )
    mode = "adaptive" if adaptive else "non-adaptive"
    at = f"δ = {delta:g}" if delta > 0.0 else "δ = 0"
    fig, ax = new_figure(f"{mode.capitalize()} compositions of {item!r} within (ε = {eps:g}, {at})")
    for index, (name, values) in enumerate(found.values.items()):
        if name not in found.fits:
            continue
        fit = found.fits[name]
        fits_text = f"> {found.ks[-1]:,}" if fit is None else f"{fit:,}"
        label = f"{name}: {short_theorem(found.theorems[name])} — k ≤ {fits_text} fit"
        ax.plot(
            found.ks,
            [drawn(v) for v in values],
            **style(index),
            markersize=4,
            linewidth=1.5,
            label=label,
            gid=name,
        )
    ax.axhline(
        eps,
        color="black",
        linestyle="--",
        linewidth=1.0,
        label=f"budget: ε = {eps:g} at {at}",
        gid="budget",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of compositions k")
    ax.set_ylabel(f"ε at {at} (nats)")
    comparison = _comparison(found)
    if comparison:
        ax.set_title(f"{ax.get_title()}\n{comparison}", fontsize="medium")
    legend(ax)
    return fig


def _comparison(found: Capacities) -> str:
    """ "ddr20 fits 359 compositions, 13.8× the 26 of basic", when every count is known."""
    known = {n: f for n, f in found.fits.items() if f is not None}
    if len(known) < 2 or len(known) != len(found.fits):
        return ""
    best = max(known, key=lambda n: known[n])
    worst = min(known, key=lambda n: known[n])
    if known[worst] == 0 or known[best] == known[worst]:
        return ""
    ratio = lower(known[best] / known[worst], 3)
    return f"{best} fits {known[best]:,} compositions, {ratio}× the {known[worst]:,} of {worst}"
