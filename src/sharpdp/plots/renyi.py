"""Rényi-DP curves ε(α) of guarantees and mechanisms (e.g. bounded range's exact curve vs η²α/8)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

import sharpdp as sdp
from sharpdp import _validate
from sharpdp._format import upper
from sharpdp.errors import InvalidParameter, NotImplied
from sharpdp.plots._figure import drawn, legend, new_figure

__all__ = ["default_alphas", "renyi"]


def default_alphas() -> np.ndarray:
    """121 orders from 1 (KL) to 1000, evenly spaced on a log scale."""
    return np.geomspace(1.0, 1000.0, 121)


def renyi(
    *guarantees: sdp.Guarantee,
    alphas: Sequence[float] | None = None,
    labels: Sequence[str] | None = None,
    zcdp: bool = False,
) -> Figure:
    """ε(α) = ``g.renyi(α)`` against the order α for each guarantee, on log-log axes.

    Each curve is the library's Rényi bound (exact where the guarantee's curve is known, e.g.
    bounded range's sup over the two-point pairs GRR_t). With ``zcdp=True`` each guarantee that
    implies zCDP also gets its sharpest zCDP line ξ + ρα (dashed; ``sdp.convert(g, sdp.ZCDP)``).

    Args:
        guarantees: one or more guarantees or mechanisms.
        alphas: the orders α ≥ 1 (default: 121 log-spaced orders from 1 to 1000; α = 1 is KL).
        labels: one legend label per guarantee (default: its ``repr``).
        zcdp: also draw each guarantee's zCDP line.

    Returns:
        The figure.

    Example — bounded range's exact curve against the classical η²α/8 (Cesar–Rogers 2021)::

        >>> import sharpdp as sdp
        >>> fig = sdp.plots.renyi(
        ...     sdp.BoundedRange(1.0), sdp.ZCDP(1 / 8), labels=["1-BR (exact)", "η²α/8"]
        ... )
        >>> fig.axes[0].get_xlabel()
        'Rényi order α'
    """
    if not guarantees:
        raise InvalidParameter("renyi needs at least one guarantee")
    for g in guarantees:
        if not isinstance(g, sdp.Guarantee):
            raise InvalidParameter(f"guarantees must be sharpdp guarantees, got {g!r}")
    names = [repr(g) for g in guarantees] if labels is None else [str(x) for x in labels]
    if len(names) != len(guarantees):
        raise InvalidParameter(
            f"labels must give one label per guarantee ({len(guarantees)}), got {len(names)}"
        )
    grid = default_alphas() if alphas is None else _validate.sequence("alphas", alphas, "orders")
    orders = sorted({_validate.order("alphas", a) for a in grid})
    if not orders or orders[-1] == float("inf"):
        raise InvalidParameter("alphas must be finite orders α ≥ 1, and at least one")
    curves = [[g.renyi(a) for a in orders] for g in guarantees]
    for name, curve in zip(names, curves, strict=True):
        # (matplotlib's "cannot be log-scaled" ValueError, or a legend entry without a line)
        if not any(0.0 < v < math.inf for v in curve):
            why = (
                "has no finite Rényi bound at these orders (a δ > 0 implies none; noise far "
                "below the sensitivity puts D_α past the floats)"
                if all(v == math.inf for v in curve)
                else "has no positive finite Rényi bound at these orders to draw on log axes"
            )
            raise InvalidParameter(f"renyi: {name} {why}")
    fig, ax = new_figure("Rényi-DP curves ε(α)")
    for index, (g, name, curve) in enumerate(zip(guarantees, names, curves, strict=True)):
        color = f"C{index % 10}"
        ax.plot(
            orders,
            [drawn(v) for v in curve],
            color=color,
            linewidth=1.8,
            label=name,
            gid=f"renyi-{index}",
        )
        if zcdp:
            try:
                z = sdp.convert(g, sdp.ZCDP)
            except NotImplied:
                continue
            shape = (
                f"ξ + ρα, ρ = {upper(z.rho, 4)}, ξ = {upper(z.xi, 4)}"
                if z.xi
                else (f"ρα, ρ = {upper(z.rho, 4)}")
            )
            ax.plot(
                orders,
                [drawn(z.renyi(a)) for a in orders],
                color=color,
                linestyle="--",
                linewidth=1.2,
                label=f"{name} as zCDP: {shape}",
                gid=f"zcdp-{index}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Rényi order α")
    ax.set_ylabel("ε(α): Rényi divergence bound (nats)")
    legend(ax)
    return fig
