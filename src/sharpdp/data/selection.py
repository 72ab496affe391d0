"""Private selection over public candidate keys: ``top_k`` and ``select_best``.

Scores are per-key bounded counts. Adding one person raises each of at most κ scores by at most
m (``max_rows``) and lowers none: the scores are *monotonic*, so the score range is m, not 2m, and
each exponential-mechanism round with coefficient ε/m is ε-bounded-range (Durfee–Rogers 2019;
Dong–Durfee–Rogers 2020 for range vs sensitivity) however many keys the person touches — the
"unrestricted" setting of Durfee–Rogers 2019 costs nothing extra for one-shot top-k.

* ``top_k``: one-shot Gumbel top-k (:class:`sharpdp.TopK`, ≡ k peeling exponential mechanisms), on
  the bounded row counts (≤ m rows per person per key). With ``by``, one top-k per public by-group;
  a person reaches at most min(κ, #groups) groups, so that many runs are charged.
* ``select_best``: one exponential mechanism (:class:`sharpdp.Exponential`) on approval counts —
  each person approves at most κ keys, a key's score is the number of persons approving it
  (score range 1, monotonic): the approval-voting example of McSherry–Talwar 2007.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import sharpdp as sdp
from sharpdp.data import _bounding
from sharpdp.data.counts import fetch_groups
from sharpdp.data.query import Query
from sharpdp.data.release import SelectionRelease

__all__ = ["SelectBestQuery", "TopKQuery"]


@dataclass(frozen=True, kw_only=True)
class _PublicSelection(Query):
    """Shared fields: the candidate column, its public candidates and optional public by-groups.

    Attributes:
        column: the column whose values are candidates.
        candidates: the public candidate values, in order.
        by: by-columns (empty: one selection).
        groups: the public by-groups (tuples), or ``None`` without ``by``.
    """

    column: str
    candidates: tuple[Any, ...]
    by: tuple[str, ...] = ()
    groups: tuple[tuple[Any, ...], ...] | None = None

    def _scores(self, metric: str) -> dict[tuple[Any, ...], np.ndarray[Any, Any]]:
        """Per by-group, the score of each candidate (0 when absent), from the engine."""
        table = _bounding.restrict_keys(
            self.source.table, (self.column,), tuple((c,) for c in self.candidates)
        )
        if self.by and self.groups is not None:
            table = _bounding.restrict_keys(table, self.by, self.groups)
        cols = (*self.by, self.column)
        pairs = _bounding.per_person_key(
            table,
            self.privacy_unit,
            cols,
            max_rows=self.bounding.max_rows,
            max_groups=self.bounding.max_groups,
            salt=self.bounding.salt,
        )
        frame = fetch_groups(self, cols, pairs, False)
        index = {c: i for i, c in enumerate(self.candidates)}
        groups = self.groups if self.groups is not None else ((),)
        out = {g: np.zeros(len(self.candidates), dtype=np.float64) for g in groups}
        for values in frame.to_dict("records"):
            g = tuple(values[c] for c in self.by)
            i = index.get(values[self.column])
            if g in out and i is not None:
                out[g][i] = float(values[metric])
        return out

    def _frame(self, picks: Sequence[tuple[tuple[Any, ...], Sequence[int]]]) -> pd.DataFrame:
        rows = [
            (*g, rank, self.candidates[i])
            for g, chosen in picks
            for rank, i in enumerate(chosen, start=1)
        ]
        return pd.DataFrame(rows, columns=[*self.by, "rank", self.column])


@dataclass(frozen=True, kw_only=True)
class TopKQuery(_PublicSelection):
    """Private top-k of bounded counts over public candidates. Built by ``Session.top_k``.

    Attributes:
        mechanism: the :class:`sharpdp.TopK` run once per by-group.
    """

    mechanism: sdp.TopK

    def _release(self, rng: np.random.Generator) -> SelectionRelease:
        scores = self._scores("count")
        picks = [(g, self.mechanism.select(s, rng=rng)) for g, s in scores.items()]
        return SelectionRelease(
            query=self.description, keys=(*self.by, self.column), frame=self._frame(picks), noise={}
        )


@dataclass(frozen=True, kw_only=True)
class SelectBestQuery(_PublicSelection):
    """The exponential mechanism on approval counts. Built by ``Session.select_best``.

    Attributes:
        mechanism: the :class:`sharpdp.Exponential` (score range 1, monotonic).
    """

    mechanism: sdp.Exponential

    def _release(self, rng: np.random.Generator) -> SelectionRelease:
        scores = self._scores("persons")
        picks = [(g, (self.mechanism.select(s, rng=rng),)) for g, s in scores.items()]
        return SelectionRelease(
            query=self.description, keys=(*self.by, self.column), frame=self._frame(picks), noise={}
        )
