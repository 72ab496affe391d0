"""Counts: ``count()`` and ``count_by(columns, keys=...)``.

Released value per key: the bounded row count (each person ≤ ``max_rows`` rows per key, ≤
``max_groups`` keys) plus integer noise. Under add/remove of one person the vector of bounded counts
moves by ≤ m in each of ≤ κ keys: Δ∞ = m, Δ1 = κm, Δ2 = √κ·m (Wilson et al. 2020, PoPETs; the
sensitivities of Tumult's ``MaxGroupsPerID``/``MaxRowsPerGroupPerID``). With public ``keys``
every key is released (zeros included) and a person moves ≤ min(κ, #keys) of them; without,
keys are chosen by thresholding (see :mod:`sharpdp.data._partition`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sharpdp.data import _bounding
from sharpdp.data._noise import IntegerNoise
from sharpdp.data.query import Query
from sharpdp.data.release import AdditiveRelease

__all__ = ["CountQuery", "key_frame"]


def key_frame(columns: tuple[str, ...], keys: tuple[tuple[Any, ...], ...]) -> pd.DataFrame:
    """The public keys as a DataFrame (one column per key column, in the given order)."""
    return pd.DataFrame(list(keys), columns=list(columns))


def fetch_groups(query: Query, keys: tuple[str, ...], pairs: Any, with_total: bool) -> pd.DataFrame:
    """Group the bounded pairs by key in the engine; only the group table comes back."""
    frame: pd.DataFrame = query._execute(_bounding.group(pairs, keys, with_total))
    for col in ("count", "persons", "total"):
        if col in frame.columns:
            frame[col] = frame[col].fillna(0).astype(np.int64)
    return frame


def align(
    frame: pd.DataFrame,
    columns: tuple[str, ...],
    public: tuple[tuple[Any, ...], ...] | None,
    metrics: list[str],
) -> pd.DataFrame:
    """Group table → one row per public key (zeros for absent keys), or per present key, sorted."""
    if not columns:
        if frame.empty:
            return pd.DataFrame({m: [0] for m in metrics})
        return frame[metrics].reset_index(drop=True)
    if public is None:
        return frame.sort_values(list(columns), na_position="last", kind="mergesort")[
            [*columns, *metrics]
        ].reset_index(drop=True)
    wanted = key_frame(columns, public)
    merged = wanted.merge(frame[[*columns, *metrics]], on=list(columns), how="left", sort=False)
    for m in metrics:
        merged[m] = merged[m].fillna(0).astype(np.int64)
    return merged.reset_index(drop=True)


@dataclass(frozen=True, kw_only=True)
class CountQuery(Query):
    """A (grouped) count. Built by ``Session.count`` / ``Session.count_by``.

    Attributes:
        keys: the key columns (empty for ``count()``).
        public: the public keys (tuples), or ``None`` for unknown keys.
        noise: the noise law of each released count.
        tau: the release threshold for unknown keys (``None`` with public keys).
    """

    keys: tuple[str, ...]
    public: tuple[tuple[Any, ...], ...] | None
    noise: IntegerNoise
    tau: int | None = None

    def _compute(self) -> pd.DataFrame:
        table = self._rows(*self.keys)
        if self.public is not None and self.keys:
            table = _bounding.restrict_keys(table, self.keys, self.public)
        plan = _bounding.pair_plan(table, self.privacy_unit, self.keys, self.source.rows)
        pairs = _bounding.per_person_key(
            table, self.privacy_unit, self.keys, plan=plan, **self._bounding_kwargs()
        )
        return align(fetch_groups(self, self.keys, pairs, False), self.keys, self.public, ["count"])

    def bounded(self) -> pd.DataFrame:
        """The bounded counts per key (key columns and ``count``), from the engine.

        This reads the data and is **not private**: it is what the noise is added to (each
        person's contribution capped), exposed for tests, audits and demonstrations by the data
        holder. With unknown keys it lists every key present, not the released ones.
        """
        return self._compute()

    def _finish(self, data: pd.DataFrame, rng: np.random.Generator) -> AdditiveRelease:
        frame = data.copy()
        noisy = self.noise.release(frame["count"].to_numpy(np.int64), rng=rng)
        frame["count"] = noisy
        if self.tau is not None:
            frame = frame[frame["count"] >= self.tau].reset_index(drop=True)
        return AdditiveRelease(
            query=self.description,
            keys=self.keys,
            frame=frame,
            noise={"count": self.noise},
            value="count",
            step=1.0,
        )
