"""Figures of privacy profiles, capacities, Rényi curves, budgets and releases (``plot`` extra).

Each function returns a :class:`matplotlib.figure.Figure` (Jupyter displays it); :func:`save`
writes one as PNG, SVG or PDF. Figures are built directly, never through ``pyplot``, so they leave
the user's matplotlib state (backend, rcParams, open figures) alone and need no display.

* :func:`profile` — δ(ε) of a composition under every analysis, the sharpest marked;
* :func:`capacity` — ε against the number of compositions under every analysis, with the budget
  and how many compositions each analysis fits in it;
* :func:`renyi` — Rényi-DP curves ε(α) (e.g. bounded range's exact curve against η²α/8);
* :func:`budget` — each analyst's spending over time, from a ledger;
* :func:`release` — a release's values with their confidence intervals, per key.

Requires matplotlib (``pip install 'sharpdp[plot]'``); ``import sharpdp`` does not load it.
"""

from __future__ import annotations

try:
    import matplotlib as _matplotlib  # noqa: F401  (a clear message when the extra is missing)
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "sharpdp.plots needs matplotlib: pip install 'sharpdp[plot]' (in a clone: '.[plot]')"
    ) from err

from sharpdp.plots._figure import save
from sharpdp.plots.budget import budget
from sharpdp.plots.capacity import capacity
from sharpdp.plots.profile import profile
from sharpdp.plots.release import release
from sharpdp.plots.renyi import renyi

__all__ = ["budget", "capacity", "profile", "release", "renyi", "save"]
