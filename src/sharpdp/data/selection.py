"""Private selection over public candidate keys: ``top_k`` and ``select_best``.

Scores are per-key bounded counts. Adding one person raises each of at most κ scores by at most
m (``max_rows``) and lowers none: the scores are *monotonic*, so the score range is m, not 2m, and
each exponential-mechanism round with coefficient ε/m is ε-bounded-range (Durfee–Rogers 2019;
Dong–Durfee–Rogers 2020 for range vs sensitivity) however many keys the person touches — the
"unrestricted" setting of Durfee–Rogers 2019 costs nothing extra for one-shot top-k.

* ``top_k``: one-shot Gumbel top-k (:class:`sharpdp.TopK`, ≡ k peeling exponential mechanisms), on
  the bounded row counts (≤ m rows per person per key). With ``by``, one top-k per public by-group;
  a person reaches at most min(κ, #groups) groups, so that many runs are charged.
* ``top_k`` over **unknown keys** (``keys=None``): Durfee–Rogers 2019's LimitDom
  (:class:`sharpdp.LimitDom`, Algorithm 1), see :class:`LimitDomQuery`.
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
from sharpdp.data import _bounding, _engine
from sharpdp.data.counts import fetch_groups
from sharpdp.data.query import Query
from sharpdp.data.release import SelectionRelease

__all__ = ["LimitDomQuery", "SelectBestQuery", "TopKQuery"]


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
            self._rows(*self.by, self.column), (self.column,), tuple((c,) for c in self.candidates)
        )
        if self.by and self.groups is not None:
            table = _bounding.restrict_keys(table, self.by, self.groups)
        cols = (*self.by, self.column)
        plan = _bounding.pair_plan(table, self.privacy_unit, cols, self.source.rows)
        pairs = _bounding.per_person_key(
            table, self.privacy_unit, cols, plan=plan, **self._bounding_kwargs()
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

    def _compute(self) -> dict[tuple[Any, ...], np.ndarray[Any, Any]]:
        return self._scores("count")

    def _finish(
        self, data: dict[tuple[Any, ...], np.ndarray[Any, Any]], rng: np.random.Generator
    ) -> SelectionRelease:
        picks = [(g, self.mechanism.select(s, rng=rng)) for g, s in data.items()]
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

    def _compute(self) -> dict[tuple[Any, ...], np.ndarray[Any, Any]]:
        return self._scores("persons")

    def _finish(
        self, data: dict[tuple[Any, ...], np.ndarray[Any, Any]], rng: np.random.Generator
    ) -> SelectionRelease:
        picks = [(g, (self.mechanism.select(s, rng=rng),)) for g, s in data.items()]
        return SelectionRelease(
            query=self.description, keys=(*self.by, self.column), frame=self._frame(picks), noise={}
        )


@dataclass(frozen=True, kw_only=True)
class LimitDomQuery(Query):
    """Private top-k over unknown keys: LimitDom per by-group. Built by ``Session.top_k(keys=None)``.

    **In the engine** (nothing but k̄ + 1 counts per group comes back): rows with a NULL key or
    by-value are dropped (row-wise); with public ``by_keys`` only their rows are kept; each person
    keeps ≤ m rows per (by-group, key) pair and ≤ κ pairs (the seeded hash,
    :func:`sharpdp.data._bounding.per_person_key`); the bounded counts h are grouped per pair;
    per by-group the keys are ranked ``ORDER BY count DESC, key ASC`` — the fixed,
    data-independent tie-break LimitDom's proof needs (a key a person does not touch can only fall
    in this order when the person is added) — and the first k̄ + 1 rows are fetched: the top-k̄
    counts and h₍ₖ̄₊₁₎ (0 when the group has ≤ k̄ keys).

    **Mechanism** [Durfee–Rogers, NeurIPS 2019, arXiv 1905.04273, Algorithm 1; sampled exactly by
    :class:`sharpdp.LimitDom`, whose module docstring proves the guarantee]: Gumbel(Δ∞/η) noise on
    the k̄ counts and on the threshold h⊥ = h₍ₖ̄₊₁₎ + Δ∞ + (Δ∞/η)·ln(min(κ, k̄)/δ_⊥); keys are
    released in noisy order until ⊥ comes or k are out — **possibly fewer than k, possibly none**.
    Only the keys and their rank (in noisy order) are released, **no counts** (a count released
    next to a selected key would need noise of its own: run ``count_by`` with public keys next).
    Δ∞ = m (a person adds ≤ m to a count); a person moves ≤ min(κ, k̄) counts of a group.

    **Charge**: ``(LimitDom, copies)``, copies = the by-groups one person can reach: min(κ, #public
    by-keys), or κ when the by-groups are not public (the groups present in the data are run; a
    group absent from the data gives the empty output, exactly what LimitDom gives on no keys, so
    the release is the product over all conceivable groups of LimitDom runs, of which a person
    changes ≤ κ). Groups whose output is empty do not appear in the result.

    Attributes:
        column: the key column.
        by: by-columns (empty: one top-k).
        groups: the public by-groups, or ``None`` (by-groups found in the data; see above).
        mechanism: the :class:`sharpdp.LimitDom` run once per by-group.
    """

    column: str
    by: tuple[str, ...] = ()
    groups: tuple[tuple[Any, ...], ...] | None = None
    mechanism: sdp.LimitDom

    def _top_expr(self) -> Any:
        ibis = _engine.ibis()
        cols = (*self.by, self.column)
        table = self._rows(*cols)
        keep = ibis.and_(*[table[c].notnull() for c in cols])
        table = table.filter(keep)
        if self.by and self.groups is not None:
            table = _bounding.restrict_keys(table, self.by, self.groups)
        plan = _bounding.pair_plan(table, self.privacy_unit, cols, self.source.rows)
        pairs = _bounding.per_person_key(
            table, self.privacy_unit, cols, plan=plan, **self._bounding_kwargs()
        )
        grouped = _bounding.group(pairs, cols, False)
        rank = ibis.row_number().over(
            group_by=[grouped[c] for c in self.by] or None,
            order_by=[grouped["count"].desc(), grouped[self.column].asc()],
        )
        ranked = grouped.mutate(_sdp_rank=rank)
        return ranked.filter(ranked["_sdp_rank"] <= self.mechanism.k_bar).select(
            *cols, "count", "_sdp_rank"
        )

    def top_counts(self) -> dict[tuple[Any, ...], tuple[list[Any], np.ndarray[Any, Any], int]]:
        """Per by-group: (top-k̄ keys in order, their counts, h₍ₖ̄₊₁₎) from the engine.

        This reads the data and is **not private**: it is what LimitDom is applied to, exposed for
        tests and audits by the data holder. Groups come sorted by their by-values (the order in
        which noise is drawn, the same on every engine).
        """
        frame = self._execute(self._top_expr())
        frame = frame.sort_values([*self.by, "_sdp_rank"], kind="mergesort")
        k_bar = self.mechanism.k_bar
        out: dict[tuple[Any, ...], tuple[list[Any], np.ndarray[Any, Any], int]] = {}
        parts = frame.groupby(list(self.by), sort=True) if self.by else [((), frame)]
        for g, part in parts:
            key = g if isinstance(g, tuple) else (g,)
            top = part.iloc[:k_bar]
            nxt = int(part["count"].iloc[k_bar]) if len(part) > k_bar else 0
            out[key] = (top[self.column].tolist(), top["count"].to_numpy(np.int64), nxt)
        return out

    def _sample(
        self,
        tops: dict[tuple[Any, ...], tuple[list[Any], np.ndarray[Any, Any], int]],
        rng: np.random.Generator,
    ) -> SelectionRelease:
        rows = []
        for g, (keys, counts, nxt) in tops.items():
            chosen = self.mechanism.select(counts, nxt, rng=rng)
            rows += [(*g, rank, keys[i]) for rank, i in enumerate(chosen, start=1)]
        frame = pd.DataFrame(rows, columns=[*self.by, "rank", self.column])
        return SelectionRelease(
            query=self.description, keys=(*self.by, self.column), frame=frame, noise={}
        )

    def _compute(self) -> dict[tuple[Any, ...], tuple[list[Any], np.ndarray[Any, Any], int]]:
        return self.top_counts()

    def _finish(
        self,
        data: dict[tuple[Any, ...], tuple[list[Any], np.ndarray[Any, Any], int]],
        rng: np.random.Generator,
    ) -> SelectionRelease:
        return self._sample(data, rng)
