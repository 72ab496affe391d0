"""The privacy profile δ(ε) of a composition under every analysis, the sharpest marked."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import sharpdp as sdp
from sharpdp import _validate
from sharpdp._format import upper
from sharpdp.errors import InvalidParameter
from sharpdp.plots._figure import (
    describe,
    drawn,
    legend,
    new_figure,
    short_theorem,
    style,
)

__all__ = ["default_epsilons", "profile"]

#: δ down to which :func:`default_epsilons` spans ε.
_SMALLEST_DELTA = 1e-10
#: Points of the default ε grid.
_POINTS = 41


def default_epsilons(guarantee: sdp.Guarantee) -> np.ndarray:
    """41 equally spaced ε from 0 to 1.25·ε(δ = 1e-10) (to ε(1e-6) or 10 when that is infinite)."""
    bound = guarantee.epsilon_bound if isinstance(guarantee, sdp.Composition) else guarantee.epsilon
    top = bound(_SMALLEST_DELTA)
    if not math.isfinite(top) or top <= 0.0:
        top = bound(1e-6)
    if not math.isfinite(top) or top <= 0.0:
        top = 8.0
    return np.linspace(0.0, 1.25 * top, _POINTS)


def _grid(guarantee: sdp.Guarantee, epsilons: Sequence[float] | None) -> list[float]:
    if epsilons is None:
        return [float(e) for e in default_epsilons(guarantee)]
    grid = [_validate.nonnegative("epsilons", e) for e in epsilons]
    if not grid:
        raise InvalidParameter("epsilons must not be empty")
    return sorted(set(grid))


def profile(
    composition: sdp.Guarantee,
    epsilons: Sequence[float] | None = None,
    *,
    floor: float = 1e-12,
) -> Figure:
    """δ(ε) against ε: one line per analysis of a composition, and the sharpest value thick.

    For a :class:`sharpdp.Composition` each line is one analysis of
    :meth:`~sharpdp.Composition.explain` (its value at each ε; analyses that do not apply are not
    drawn, nor are gaps where one declines), labelled with its theorem; the legend says on which ε
    of the grid each analysis is the sharpest. The thick grey line is the winner's value at each ε:
    the least δ over the analyses, each a valid bound (``composition.delta(ε)`` answers the same,
    up to the accuracy of refinable analyses such as the PLD). Any other guarantee or mechanism
    is drawn as its own δ(ε).

    Args:
        composition: a composition (``sdp.compose(...)``), or any guarantee or mechanism.
        epsilons: the ε (nats) at which to evaluate; by default 41 points from 0 to a quarter past
            ε(δ = 1e-10).
        floor: the bottom of the logarithmic δ axis.

    Returns:
        The figure (Jupyter displays it; :func:`sharpdp.plots.save` writes it).

    Example:
        >>> import sharpdp as sdp
        >>> fig = sdp.plots.profile(sdp.compose([(sdp.Gaussian(5.0), 100)]), [0.5, 1.0, 2.0])
        >>> fig.axes[0].get_ylabel()
        'δ(ε) (probability)'
    """
    if not isinstance(composition, sdp.Guarantee):
        raise InvalidParameter(
            f"composition must be a sharpdp composition or guarantee, got {composition!r}"
        )
    low = _validate.positive("floor", floor)
    if not low < 1.0:
        raise InvalidParameter(f"floor must be in (0, 1), got {floor!r}")
    grid = _grid(composition, epsilons)
    if isinstance(composition, sdp.Composition):
        mode = "adaptive" if composition.adaptive else "non-adaptive"
        title = f"Privacy profile ({mode} composition)\n{describe(composition.items)}"
    else:
        title = f"Privacy profile of {composition!r}"
    fig, ax = new_figure(title)
    if isinstance(composition, sdp.Composition):
        sharpest = _analyses(ax, composition, grid)
        label = "sharpest: the least δ over the analyses"
    else:
        sharpest = [composition.delta(e) for e in grid]
        label = f"δ(ε) of {composition!r}"
    ax.plot(
        grid,
        sharpest,
        color="0.25",
        linewidth=5.0,
        alpha=0.35,
        zorder=1,
        label=label,
        gid="sharpest",
    )
    ax.set_yscale("log")
    ax.set_ylim(low, 1.5)
    ax.set_xlim(grid[0], grid[-1] if grid[-1] > grid[0] else grid[0] + 1.0)
    ax.set_xlabel("ε (nats)")
    ax.set_ylabel("δ(ε) (probability)")
    legend(ax)
    return fig


def _analyses(ax: Axes, composition: sdp.Composition, grid: list[float]) -> list[float]:
    """One line per analysis that applies somewhere on ``grid``; returns the winners' values."""
    explanations = [composition.explain(epsilon=e) for e in grid]
    names = [r.name for r in explanations[0].rows]
    theorems = {r.name: r.theorem for r in explanations[0].rows}
    wins: dict[str, list[int]] = {name: [] for name in names}
    sharpest = []
    for i, ex in enumerate(explanations):
        if any(r.value is not None and r.ranked for r in ex.rows):
            wins[ex.winner.name].append(i)
            sharpest.append(drawn(ex.winner.value))
        else:
            sharpest.append(math.nan)
    for index, name in enumerate(names):
        values = [drawn(next(r.value for r in ex.rows if r.name == name)) for ex in explanations]
        if all(math.isnan(v) for v in values):
            continue
        label = f"{name}: {short_theorem(theorems[name])}"
        if wins[name]:
            label += f" (sharpest at {_where(wins[name], grid)})"
        ax.plot(
            grid,
            values,
            **style(index),
            markersize=4,
            markevery=max(1, len(grid) // 10),
            linewidth=1.5,
            label=label,
            gid=name,
        )
    return sharpest


def _where(indices: list[int], grid: list[float]) -> str:
    """The ε of the grid at ``indices``, as a range when they are consecutive."""
    lo, hi = grid[indices[0]], grid[indices[-1]]
    if len(indices) == 1:
        return f"ε = {upper(lo, 3)}"
    if indices[-1] - indices[0] == len(indices) - 1:
        return f"ε ∈ [{upper(lo, 3)}, {upper(hi, 3)}]"
    return f"{len(indices)} of {len(grid)} ε"
