"""What every figure shares: a fresh Agg-backed figure, legend labels of theorems, saving.

Figures are :class:`matplotlib.figure.Figure` objects made directly (never through ``pyplot``), so
drawing one changes no global state of the user's matplotlib (backend, rcParams, current figure):
Jupyter displays a returned figure, and :func:`save` writes it with the Agg (PNG) or SVG renderer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sharpdp.errors import InvalidParameter

__all__ = [
    "FORMATS",
    "describe",
    "drawn",
    "legend",
    "new_figure",
    "save",
    "short_theorem",
    "style",
]

#: The file formats :func:`save` writes, by suffix.
FORMATS = ("png", "svg", "pdf")

#: Width and height of a figure, in inches (at 100 dpi on screen, 150 dpi in PNG files).
SIZE = (8.0, 5.0)


def new_figure(title: str, size: tuple[float, float] = SIZE) -> tuple[Figure, Axes]:
    """A figure with one axes, its title set, laid out so that nothing is clipped."""
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, fontsize="medium")
    ax.grid(True, which="major", alpha=0.3)
    return fig, ax


def short_theorem(theorem: str, width: int = 64) -> str:
    """The citation part of an analysis' theorem (before its first ": ", without parentheses).

    Example:
        >>> short_theorem("Dwork–Roth 2014 Thm 3.16: (Σε_i, Σδ_i)")
        'Dwork–Roth 2014 Thm 3.16'
    """
    head = theorem.split(": ", 1)[0]
    text = " ".join(re.sub(r"\([^()]*\)", "", head).split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


#: Line styles and markers cycled with the colours, so that analyses drawn on top of each other
#: (equal values) stay distinguishable.
_DASHES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">")


def style(index: int) -> dict[str, Any]:
    """The colour, line style and marker of the ``index``-th analysis (the same in every figure:
    analyses are numbered in the order :meth:`sharpdp.Composition.explain` lists them)."""
    return {
        "color": f"C{index % 10}",
        "linestyle": _DASHES[index % len(_DASHES)],
        "marker": _MARKERS[index % len(_MARKERS)],
    }


def drawn(value: float | None) -> float:
    """A value as drawn: ``None`` (no bound) and infinities are not drawn (NaN leaves a gap)."""
    return math.nan if value is None or math.isinf(value) else float(value)


def save(figure: Figure, path: str | Path, *, dpi: float = 150.0) -> Path:
    """Write ``figure`` to ``path`` as PNG, SVG or PDF (chosen by the suffix); returns the path.

    The files carry no creation date and SVG ids are not random, so the same figure gives the
    same bytes.

    Raises:
        InvalidParameter: a suffix other than ``.png``, ``.svg`` or ``.pdf``, or a folder that
            does not exist.
    """
    target = Path(path)
    fmt = target.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise InvalidParameter(
            f"path must end in {', '.join('.' + f for f in FORMATS)}, got {str(path)!r}"
        )
    if not target.parent.is_dir():
        raise InvalidParameter(
            f"path: no folder {str(target.parent)!r} to write {target.name!r} in"
        )
    metadata: dict[str, str | None] = {"Software": None} if fmt == "png" else {"Date": None}
    if fmt == "pdf":
        metadata["CreationDate"] = None
    # a fixed salt for the SVG's element ids (random by default), restored after the call
    with rc_context({"svg.hashsalt": "sharpdp"}):
        figure.savefig(target, format=fmt, dpi=dpi, metadata=metadata)
    return target


def legend(ax: Axes) -> None:
    """The legend of ``ax``, in small type where it hides the fewest points."""
    ax.legend(fontsize="small", loc="best", framealpha=0.9)


def describe(items: Iterable[tuple[object, int]], width: int = 90) -> str:
    """``100 × Gaussian(sigma=5.0) + Laplace(scale=2.0, …)``, cut to ``width`` characters."""
    text = " + ".join(f"{n} × {g!r}" if n != 1 else repr(g) for g, n in items) or "nothing"
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
