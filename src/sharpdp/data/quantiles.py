"""Quantiles: Smith's interval exponential mechanism on the engine's grid-cell histogram.

**Mechanism** [Smith 2011, STOC, §3: the exponential mechanism with a continuous output
(McSherry–Talwar 2007) over the interval [L, U]], sampled exactly by :class:`sharpdp.Quantile`
(see :mod:`sharpdp.mechanisms.quantile` for the law, the sensitivity and the proof that it is
ε-bounded-range). The engine does all the work on the rows (nothing else leaves it):

1. rows whose value is NULL or NaN are dropped (a row-wise filter: neighbours stay neighbours);
   with ``by``, only rows of the public by-keys are kept;
2. each value is clamped to the bounds [L, U] and rounded to the nearest of the ``cells + 1``
   grid points L + t·(U − L)/cells (:func:`sharpdp.data._bounding.grid_position`);
3. each person keeps at most ``max_rows`` rows per by-group, and at most ``max_groups`` by-groups,
   both chosen by the portable seeded hash (:func:`sharpdp.data._bounding.kept_rows`);
4. ``GROUP BY`` (by-key, grid index) → (grid index, rows): only this table comes back.

Steps 1–3 are per-person transformations, so the release on the bounded data is private for the
raw data with the same neighbouring relation (add/remove one person). Per by-group the score
u_t = −|r_t − qn| (r_t the kept rows at grid points ≤ t, n the group's kept rows) moves by at
most Δ = m·max(q, 1 − q) when a person with ≤ m rows there is added: one quantile is η-BR with
coefficient c = η/(2Δ). A person reaches at most min(κ, #by-keys) groups, so that many runs are
charged (the accountant composes them sharply; the per-run η is calibrated on that composition).

With ``support="points"`` the same histogram feeds the exponential mechanism over the grid
points (tie-aware; same sensitivity and η, see :mod:`sharpdp.mechanisms.quantile`).

**Released value**: the midpoint L + (t + ½)·(U − L)/cells of the sampled cell t (with
``support="points"``, the sampled grid point L + t·(U − L)/cells). There is no
confidence interval for the *value*: the values near the q-quantile are the data's own order
statistics, which are private, so any value interval computed from them would need a budget of
its own. What *is* data-independent is the accuracy in *rank*, :class:`QuantileRelease`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import sharpdp as sdp
from sharpdp.data import _bounding, _engine
from sharpdp.data.query import Query
from sharpdp.data.release import QuantileRelease

__all__ = ["QuantileQuery"]


@dataclass(frozen=True, kw_only=True)
class QuantileQuery(Query):
    """A private q-quantile (per public by-key with ``by``). Built by ``Session.quantile``.

    Attributes:
        column: the numeric column.
        keys: the by-columns (empty for one quantile).
        public: the public by-keys (tuples), or ``None`` without ``by``.
        mechanism: the :class:`sharpdp.Quantile` run once per by-group.
    """

    column: str
    keys: tuple[str, ...]
    public: tuple[tuple[Any, ...], ...] | None
    mechanism: sdp.Quantile

    def _histogram_expr(self) -> Any:
        """The engine's (by-key, grid index) → rows table, as an Ibis expression."""
        ibis = _engine.ibis()
        table = _bounding.valued_rows(
            self._rows(*self.keys, self.column), self.column, self.keys, self.public
        )
        lower, upper = self.mechanism.bounds
        position = _bounding.grid_position(table[self.column], lower, upper, self.mechanism.cells)
        kept = _bounding.kept_rows(
            table, self.privacy_unit, self.keys, value=position, **self._bounding_kwargs()
        )
        return kept.group_by([*self.keys, "_sdp_v"]).aggregate(rows=ibis._.count())

    def histograms(
        self,
    ) -> dict[tuple[Any, ...], tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """Per by-group, (grid positions, rows) of the bounded data, from the engine.

        This reads the data and is **not private**: it is what the mechanism is applied to, exposed
        for tests and audits by the data holder. Groups are the public by-keys (empty arrays for a
        key with no rows), or ``()`` without ``by``.
        """
        frame = self._execute(self._histogram_expr())
        groups = self.public if self.public is not None else ((),)
        out: dict[tuple[Any, ...], tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = {}
        for g in groups:
            mask = np.ones(len(frame), dtype=bool)
            for c, v in zip(self.keys, g, strict=True):
                mask &= (frame[c] == v).to_numpy()
            part = frame[mask].sort_values("_sdp_v")
            out[g] = (
                part["_sdp_v"].to_numpy(np.int64),
                part["rows"].to_numpy(np.int64),
            )
        return out

    def _sample(
        self,
        histograms: dict[tuple[Any, ...], tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]],
        rng: np.random.Generator,
    ) -> QuantileRelease:
        """Sample one outcome per group (in the order of the groups), release its value (a
        cell's midpoint, or a grid point)."""
        rows = []
        for g, (positions, counts) in histograms.items():
            t = self.mechanism.select_cell(positions, counts, rng)
            rows.append((*g, self.mechanism.value_of(t)))
        frame = pd.DataFrame(rows, columns=[*self.keys, "quantile"])
        return QuantileRelease(
            query=self.description,
            keys=self.keys,
            frame=frame,
            noise={},
            coefficient=self.mechanism.coefficient,
            cells=self.mechanism.cells,
            support=self.mechanism.support,
        )

    def _compute(self) -> dict[tuple[Any, ...], tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        return self.histograms()

    def _finish(
        self,
        data: dict[tuple[Any, ...], tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]],
        rng: np.random.Generator,
    ) -> QuantileRelease:
        return self._sample(data, rng)
