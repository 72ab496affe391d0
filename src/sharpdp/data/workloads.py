"""Workloads: many counting queries over a few columns, answered together.

A counting query asks how many (bounded) rows satisfy a predicate. Two kinds of workload:

* :func:`marginals` — every ``way``-way marginal of some columns: for each set of ``way`` columns,
  the count of each combination of their values (a *cell*);
* :func:`predicates` — named conjunctions of memberships (``{"late_jfk": {"origin": "JFK",
  "hour": [17, 18, 19]}}``: origin is JFK *and* hour is one of 17–19).

A column's **domain** is the public list of its values (or :func:`bins` of a numeric column). It is
part of the question, not of the data: cells of the domain absent from the table are answered
(with a noisy 0), and rows whose value lies outside the domain are not counted. A marginal column
without a declared domain has its domain found privately by the session (partition selection,
spending a share of the query's privacy, see :meth:`sharpdp.data.Session.answer`). Predicates need
no domain: they name their values.

**Sensitivity.** Let each person contribute at most m distinct *rows* of the workload's columns
(``max_rows``; a person's identical rows count once) and let C be the largest number of the
workload's queries one row satisfies (the number of marginals; for predicates, computed exactly
over every combination of the values they mention). Adding or removing a person moves the answer
vector by v with ‖v‖∞ ≤ m, ‖v‖₁ ≤ m·C and ‖v‖₂ ≤ m·√C (each of the m rows adds a 0/1 vector with
at most C ones; the triangle inequality).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from sharpdp import _validate
from sharpdp.errors import InvalidParameter

__all__ = [
    "Bins",
    "Domain",
    "Marginals",
    "Predicates",
    "Workload",
    "bins",
    "is_missing",
    "marginals",
    "predicates",
]

#: The largest product domain a workload may span (cells of the full contingency table).
MAX_DOMAIN = 2**20
#: The largest number of queries in one workload.
MAX_QUERIES = 10**5
#: The most answers one release computes (a marginal workload's cells: 2^22 of them hold ~32 MiB
#: of counts, and their labels some hundreds of MiB).
MAX_ANSWERS = 2**22
#: The most non-zeros of MWEM's query matrix (queries' groups × domain cells): ~400 MiB in CSR.
MAX_MATRIX = 2**25


@dataclass(frozen=True, slots=True)
class Bins:
    """Equal-width bins of a numeric column: [L + i·w, L + (i+1)·w), i < count, w = (U − L)/count.

    Values below L fall in the first bin and values above U in the last (clamped), so every
    non-NULL value has a bin; NaN and NULL rows are not counted. Labels are the bins' left edges.

    Attributes:
        lower: L.
        upper: U > L.
        count: the number of bins (≥ 1).
    """

    lower: float
    upper: float
    count: int

    def __post_init__(self) -> None:
        lo = _validate.real("lower", self.lower)
        hi = _validate.real("upper", self.upper)
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            raise InvalidParameter(f"bins need finite lower < upper, got ({lo!r}, {hi!r})")
        n = _validate.integer("count", self.count, minimum=1)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "count", n)
        # checked here, before any spend: a width of inf (U − L overflows) or edges that round
        # to one float failed the release (NULL or repeated labels) after the budget was spent
        width = (hi - lo) / n
        edges = self.labels
        if not (math.isfinite(width) and width > 0.0) or any(
            b <= a for a, b in itertools.pairwise((*edges, hi))
        ):
            raise InvalidParameter(
                f"bins({lo!r}, {hi!r}, {n}): the {n} bins' edges are not distinct floats "
                "(the width overflows, or is too small for the bounds' magnitude)"
            )

    @property
    def labels(self) -> tuple[float, ...]:
        """The left edge of each bin."""
        w = (self.upper - self.lower) / self.count
        return tuple(self.lower + i * w for i in range(self.count))


Domain: TypeAlias = tuple[Any, ...] | Bins

#: Containers read as several allowed values of a predicate (anything else is one value).
_MANY = (list, tuple, set, frozenset, range, np.ndarray, pd.Series, pd.Index)


def bins(lower: float, upper: float, count: int) -> Bins:
    """Equal-width bins of a numeric column, as a domain (see :class:`Bins`).

    Example:
        >>> bins(0, 100, 4).labels
        (0.0, 25.0, 50.0, 75.0)
    """
    return Bins(lower, upper, count)


def is_missing(v: object) -> bool:
    """Whether a scalar is NULL: ``None``, NaN, ``pd.NA`` or ``pd.NaT`` (a container is not)."""
    try:
        return bool(pd.isna(v))  # type: ignore[call-overload]
    except (TypeError, ValueError):  # an array-like
        return False


def _scalars(name: str, values: Iterable[Any]) -> tuple[Any, ...]:
    """``values`` as a tuple of hashable, non-NULL scalars (numpy scalars as Python ones)."""
    out = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
    for v in out:
        if is_missing(v):
            raise InvalidParameter(f"{name} must not contain NULL/NaN, got {v!r}")
        try:
            hash(v)
        except TypeError:
            raise InvalidParameter(f"{name}: values must be scalars, got {v!r}") from None
    return out


def _domains(value: object, columns: tuple[str, ...]) -> tuple[tuple[str, Domain], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise InvalidParameter(f"domains must map column names to values, got {value!r}")
    out: list[tuple[str, Domain]] = []
    for column, dom in value.items():
        if column not in columns:
            raise InvalidParameter(f"domains: column {column!r} is not in the workload {columns}")
        if isinstance(dom, Bins):
            out.append((column, dom))
            continue
        if isinstance(dom, str | bytes) or not isinstance(
            dom, Sequence | np.ndarray | pd.Index | pd.Series
        ):
            raise InvalidParameter(
                f"domains[{column!r}] must be a list of values or sdp.data.bins(...), got {dom!r}"
            )
        values = _scalars(f"domains[{column!r}]", dom)
        if not values:
            raise InvalidParameter(f"domains[{column!r}] is empty")
        if len(set(values)) != len(values):
            raise InvalidParameter(f"domains[{column!r}] has repeated values")
        out.append((column, values))
    return tuple(out)


def _names(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not value:
        raise InvalidParameter(f"{name} must be a non-empty list of column names, got {value!r}")
    cols = tuple(value)
    for c in cols:
        if not isinstance(c, str):
            raise InvalidParameter(f"{name} must name columns (strings), got {c!r}")
    if len(set(cols)) != len(cols):
        raise InvalidParameter(f"{name} has repeated columns: {list(cols)}")
    return cols


@dataclass(frozen=True, slots=True)
class Workload:
    """Base of the workload specifications (see the module docstring).

    Attributes:
        columns: the columns the workload reads.
        domains: the declared domains, as (column, domain) pairs.
    """

    columns: tuple[str, ...]
    domains: tuple[tuple[str, Domain], ...]

    def domain(self, column: str) -> Domain | None:
        """The declared domain of ``column`` (``None`` if not declared)."""
        return dict(self.domains).get(column)

    @property
    def needs_domains(self) -> tuple[str, ...]:
        """Columns whose domain must be known before answering (found privately if undeclared)."""
        return tuple(c for c in self.columns if self.domain(c) is None)

    def overlap(self, domains: Mapping[str, tuple[Any, ...]]) -> int:
        """C: the largest number of queries one row satisfies."""
        raise NotImplementedError

    def query_count(self, domains: Mapping[str, tuple[Any, ...]]) -> int:
        """k, the number of queries (every domain known)."""
        raise NotImplementedError

    def describe_size(self, domains: Mapping[str, tuple[Any, ...]]) -> str:
        """The number of queries in words ("12 queries", or the marginals when domains are
        still to be found)."""
        raise NotImplementedError

    def evaluate(
        self, cells: pd.DataFrame, domains: Mapping[str, tuple[Any, ...]]
    ) -> tuple[pd.DataFrame, npt.NDArray[np.float64]]:
        """The queries as rows (label and key columns) and their answers on ``cells``.

        Args:
            cells: one row per distinct combination present: the workload's columns (bins as bin
                indices) and ``count``.
            domains: every column's values (bins: their labels).
        """
        raise NotImplementedError

    def matrix(self, domains: Mapping[str, tuple[Any, ...]]) -> tuple[pd.DataFrame, Any]:
        """The queries as rows and their 0/1 matrix over the flattened product domain (CSR)."""
        raise NotImplementedError

    def groups(self, domains: Mapping[str, tuple[Any, ...]]) -> list[npt.NDArray[np.int64]]:
        """The queries (rows of :meth:`matrix`) in groups of *disjoint* queries: a marginal's cells
        form one group (one row is in exactly one cell, so one person moves the group's answers
        by ℓ1 ≤ m and ℓ2 ≤ m); a predicate is a group of its own."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Marginals(Workload):
    """Every ``way``-way marginal of ``columns`` (built by :func:`marginals`).

    Attributes:
        way: the number of columns of each marginal.
    """

    way: int = 1

    @property
    def subsets(self) -> tuple[tuple[str, ...], ...]:
        """The column sets of the marginals, in order."""
        return tuple(itertools.combinations(self.columns, self.way))

    def overlap(self, domains: Mapping[str, tuple[Any, ...]]) -> int:
        return len(self.subsets)

    def query_count(self, domains: Mapping[str, tuple[Any, ...]]) -> int:
        return sum(math.prod(len(domains[c]) for c in s) for s in self.subsets)

    def groups(self, domains: Mapping[str, tuple[Any, ...]]) -> list[npt.NDArray[np.int64]]:
        out, start = [], 0
        for subset in self.subsets:
            size = math.prod(len(domains[c]) for c in subset)
            out.append(np.arange(start, start + size, dtype=np.int64))
            start += size
        return out

    def describe_size(self, domains: Mapping[str, tuple[Any, ...]]) -> str:
        if any(c not in domains for c in self.columns):
            return f"{len(self.subsets)} marginal(s), cells from the domains found"
        k = sum(math.prod(len(domains[c]) for c in s) for s in self.subsets)
        return f"{len(self.subsets)} marginal(s), {k} cells"

    def _rows(self, domains: Mapping[str, tuple[Any, ...]]) -> pd.DataFrame:
        frames = []
        for subset in self.subsets:
            grid = pd.MultiIndex.from_product(
                [range(len(domains[c])) for c in subset], names=list(subset)
            ).to_frame(index=False)
            labelled = pd.DataFrame(
                {c: np.asarray(domains[c], dtype=object)[grid[c].to_numpy()] for c in subset}
            )
            labelled.insert(0, "query", " × ".join(subset))
            frames.append(labelled)
        return pd.concat(frames, ignore_index=True)[["query", *self.columns]]

    def evaluate(
        self, cells: pd.DataFrame, domains: Mapping[str, tuple[Any, ...]]
    ) -> tuple[pd.DataFrame, npt.NDArray[np.float64]]:
        codes = {
            c: pd.Categorical(cells[c], categories=list(domains[c])).codes for c in self.columns
        }
        counts = cells["count"].to_numpy(np.float64)
        answers = []
        for subset in self.subsets:
            # a cell counts in a marginal when its values of *that marginal's* columns are in
            # their domains (NULL or off-domain elsewhere does not matter)
            inside = np.all([codes[c] >= 0 for c in subset], axis=0)
            shape = tuple(len(domains[c]) for c in subset)
            flat = np.ravel_multi_index(tuple(codes[c][inside] for c in subset), shape)
            answers.append(np.bincount(flat, weights=counts[inside], minlength=math.prod(shape)))
        values = np.concatenate(answers) if answers else np.zeros(0)
        return self._rows(domains), values.astype(np.float64)

    def matrix(self, domains: Mapping[str, tuple[Any, ...]]) -> tuple[pd.DataFrame, Any]:
        from scipy import sparse

        sizes = [len(domains[c]) for c in self.columns]
        n = math.prod(sizes)
        full = np.indices(sizes).reshape(len(sizes), n)  # per column, the index of each point
        blocks = []
        for subset in self.subsets:
            pos = [self.columns.index(c) for c in subset]
            shape = tuple(sizes[p] for p in pos)
            row = np.ravel_multi_index(tuple(full[p] for p in pos), shape)
            blocks.append(
                sparse.csr_matrix(
                    (np.ones(n), (row, np.arange(n))), shape=(math.prod(shape), n), dtype=np.float64
                )
            )
        return self._rows(domains), sparse.vstack(blocks, format="csr")


@dataclass(frozen=True, slots=True)
class Predicates(Workload):
    """Named conjunctions of memberships (built by :func:`predicates`).

    Attributes:
        queries: (name, ((column, allowed values), ...)) for each query.
    """

    queries: tuple[tuple[str, tuple[tuple[str, tuple[Any, ...]], ...]], ...] = ()

    @property
    def needs_domains(self) -> tuple[str, ...]:
        return ()

    def _values(self, domains: Mapping[str, tuple[Any, ...]]) -> dict[str, tuple[Any, ...]]:
        """Per column: its domain, or the values the predicates mention (the rest are alike)."""
        out: dict[str, tuple[Any, ...]] = {}
        for c in self.columns:
            if c in domains:
                out[c] = tuple(domains[c])
            else:
                seen: dict[Any, None] = {}
                for _, conds in self.queries:
                    for col, allowed in conds:
                        if col == c:
                            seen.update(dict.fromkeys(allowed))
                out[c] = tuple(seen)
        return out

    def _masks(
        self, values: Mapping[str, tuple[Any, ...]], other: bool
    ) -> list[list[npt.NDArray[np.bool_]]]:
        """For each query, per column, which of the column's values (then "other") satisfy it."""
        out = []
        for _, conds in self.queries:
            allowed = dict(conds)
            masks = []
            for c in self.columns:
                vals = values[c]
                if c in allowed:
                    ok = set(allowed[c])
                    m = np.array([v in ok for v in vals] + ([False] if other else []), dtype=bool)
                else:
                    m = np.ones(len(vals) + (1 if other else 0), dtype=bool)
                masks.append(m)
            out.append(masks)
        return out

    def overlap(self, domains: Mapping[str, tuple[Any, ...]]) -> int:
        """C, exactly: the most queries satisfied by one combination of the mentioned values (or
        any other value, per column), enumerated when there are ≤ 2²⁰ combinations; else k."""
        values = self._values(domains)
        other = [c not in domains for c in self.columns]
        sizes = [len(values[c]) + int(o) for c, o in zip(self.columns, other, strict=True)]
        if math.prod(sizes) > MAX_DOMAIN:
            return len(self.queries)
        count = np.zeros(sizes, dtype=np.int64)
        for masks in self._masks_with(values, other):
            grid = masks[0]
            for m in masks[1:]:
                grid = np.multiply.outer(grid, m)
            count += grid
        return int(count.max()) if count.size else 0

    def _masks_with(
        self, values: Mapping[str, tuple[Any, ...]], other: Sequence[bool]
    ) -> list[list[npt.NDArray[np.bool_]]]:
        out = []
        for masks in self._masks(values, True):
            out.append([m if o else m[:-1] for m, o in zip(masks, other, strict=True)])
        return out

    def _rows(self) -> pd.DataFrame:
        return pd.DataFrame({"query": [name for name, _ in self.queries]})

    def query_count(self, domains: Mapping[str, tuple[Any, ...]]) -> int:
        return len(self.queries)

    def groups(self, domains: Mapping[str, tuple[Any, ...]]) -> list[npt.NDArray[np.int64]]:
        return [np.array([i], dtype=np.int64) for i in range(len(self.queries))]

    def describe_size(self, domains: Mapping[str, tuple[Any, ...]]) -> str:
        return f"{len(self.queries)} predicate(s)"

    def evaluate(
        self, cells: pd.DataFrame, domains: Mapping[str, tuple[Any, ...]]
    ) -> tuple[pd.DataFrame, npt.NDArray[np.float64]]:
        counts = cells["count"].to_numpy(np.float64)
        answers = np.empty(len(self.queries))
        for i, (_, conds) in enumerate(self.queries):
            keep = np.ones(len(cells), dtype=bool)
            for col, allowed in conds:
                keep &= cells[col].isin(list(allowed)).to_numpy()
            answers[i] = counts[keep].sum()
        return self._rows(), answers

    def matrix(self, domains: Mapping[str, tuple[Any, ...]]) -> tuple[pd.DataFrame, Any]:
        from scipy import sparse

        values = {c: tuple(domains[c]) for c in self.columns}
        rows, cols = [], []
        for i, masks in enumerate(self._masks(values, False)):
            grid = masks[0]
            for m in masks[1:]:
                grid = np.multiply.outer(grid, m)
            idx = np.flatnonzero(grid)
            rows.append(np.full(idx.size, i))
            cols.append(idx)
        n = math.prod(len(values[c]) for c in self.columns)
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        mat = sparse.csr_matrix(
            (np.ones(r.size), (r, c)), shape=(len(self.queries), n), dtype=np.float64
        )
        return self._rows(), mat


def marginals(columns: Sequence[str], way: int = 2, *, domains: object = None) -> Marginals:
    """Every ``way``-way marginal of ``columns``: C(len(columns), way) marginals.

    Args:
        columns: the columns (at least ``way``).
        way: the number of columns per marginal (1 ≤ way ≤ len(columns)).
        domains: ``{column: [values...] | sdp.data.bins(lo, hi, n)}``; a column left out has its
            domain found privately when the workload is answered.

    Returns:
        The :class:`Marginals` workload.

    Example:
        >>> w = marginals(["a", "b", "c"], way=2, domains={"a": [0, 1], "b": [0, 1], "c": [0, 1]})
        >>> w.subsets
        (('a', 'b'), ('a', 'c'), ('b', 'c'))
    """
    cols = _names("columns", columns)
    w = _validate.integer("way", way, minimum=1)
    if w > len(cols):
        raise InvalidParameter(f"way={w} exceeds the number of columns ({len(cols)})")
    return Marginals(cols, _domains(domains, cols), w)


def predicates(queries: Mapping[str, Mapping[str, Any]], *, domains: object = None) -> Predicates:
    """Named counting queries, each a conjunction of column memberships.

    Args:
        queries: ``{name: {column: value or [values...]}}``; a row satisfies the query when each
            named column's value is (one of) the given value(s). A numeric column with a
            :func:`bins` domain is matched by bin label (left edge).
        domains: optional ``{column: [values...] | bins(...)}``; rows outside a declared domain
            are not counted.

    Returns:
        The :class:`Predicates` workload.

    Example:
        >>> w = predicates({"jfk_aa": {"origin": "JFK", "carrier": ["AA", "B6"]}})
        >>> w.columns
        ('carrier', 'origin')
    """
    if not isinstance(queries, Mapping) or not queries:
        raise InvalidParameter(f"queries must be a non-empty mapping of names, got {queries!r}")
    if len(queries) > MAX_QUERIES:
        raise InvalidParameter(f"at most {MAX_QUERIES} queries per workload, got {len(queries)}")
    parsed = []
    columns: set[str] = set()
    for name, conds in queries.items():
        if not isinstance(name, str):
            raise InvalidParameter(f"query names must be strings, got {name!r}")
        if not isinstance(conds, Mapping) or not conds:
            raise InvalidParameter(f"query {name!r} must map columns to values, got {conds!r}")
        parts = []
        for col, allowed in conds.items():
            if not isinstance(col, str):
                raise InvalidParameter(f"query {name!r}: column names must be strings")
            vals = _scalars(
                f"query {name!r}: values of {col!r}",
                allowed if isinstance(allowed, _MANY) else (allowed,),
            )
            if not vals:
                raise InvalidParameter(f"query {name!r}: no values allowed for {col!r}")
            parts.append((col, vals))
            columns.add(col)
        parsed.append((name, tuple(sorted(parts, key=lambda p: p[0]))))
    cols = tuple(sorted(columns))
    return Predicates(cols, _domains(domains, cols), tuple(parsed))
