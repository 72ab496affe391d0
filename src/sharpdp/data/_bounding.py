"""Contribution bounding in the engine, as Ibis expressions (nothing is pulled into Python).

Order (ZetaSQL's, the cheap one): keep each person's rows of one key only up to ``max_rows``
(ranked by a seeded hash), aggregate per (person, key), then keep each person's keys only up to
``max_groups`` (ranked by a seeded hash of person ‖ key), then group by key.

Every step is a *per-person* transformation: which rows and keys of a person survive depends only on
that person's own rows and the salt. So adding or removing one person's rows adds or removes only
that person's surviving contributions: at most ``max_groups`` keys, each moved by at most
``max_rows`` rows. The guarantee holds whatever the salt; the salt (fresh per query) only keeps the
choice from being the same systematic subset every time.

**Portable seeded hash.** Rows and keys are ranked by the hexadecimal MD5 digest of
``unit ‖ key ‖ [value] ‖ salt`` (``|``-separated strings, NULL written ``\\N``), compared as strings;
DuckDB and Spark compute the same digest and order hex strings the same way, so both engines keep
identical rows (engines' own ``hash()`` functions differ). Ties (equal digests) only arise between
rows with equal (unit, key, value), which are interchangeable. Key and unit columns should be
strings, integers or dates, whose text forms agree across engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sharpdp.data import _engine

__all__ = [
    "UNIT",
    "clamped_grid",
    "digest",
    "grid_position",
    "group",
    "kept_rows",
    "per_person_key",
    "restrict_keys",
    "valued_rows",
]

#: The privacy unit's column in bounded relations (a name no user column is expected to take).
UNIT = "_sdp_unit"
_SEP = "|"
_NULL = "\\N"


def _text(value: Any) -> Any:
    return value.cast("string").fill_null(_NULL)


def digest(parts: Sequence[Any], salt: str) -> Any:
    """MD5 hex digest of the parts (cast to strings, NULL as ``\\N``) and the salt, ``|``-joined."""
    text: Any = None
    for p in parts:
        piece = _text(p)
        text = piece if text is None else text + _SEP + piece
    text = text + _SEP + salt
    return text.hexdigest("md5")


def restrict_keys(table: Any, columns: Sequence[str], keys: Sequence[tuple[Any, ...]]) -> Any:
    """Rows whose key (over ``columns``) is one of the public ``keys`` (a row-wise filter)."""
    ibis = _engine.ibis()

    if len(columns) == 1:
        return table.filter(table[columns[0]].isin([k[0] for k in keys]))
    clauses = [
        ibis.and_(*[table[c] == v for c, v in zip(columns, key, strict=True)]) for key in keys
    ]
    return table.filter(ibis.or_(*clauses))


def valued_rows(
    table: Any,
    column: str,
    keys: Sequence[str],
    public: Sequence[tuple[Any, ...]] | None,
) -> Any:
    """Rows whose ``column`` is neither NULL nor NaN, of the public ``keys`` if any (row-wise)."""
    col = table[column]
    keep = col.notnull()
    if col.type().is_floating():
        keep = keep & ~col.isnan()  # NaN is not NULL in DuckDB or Spark; both are skipped
    table = table.filter(keep)
    if public is not None and keys:
        table = restrict_keys(table, keys, public)
    return table


def clamped_grid(value: Any, lower: float, upper: float, step: float) -> Any:
    """round(clamp(value, lower, upper)/step) as an int64: floor(x/step + ½), portable."""
    clamped = value.cast("float64").clip(lower=lower, upper=upper)
    return (clamped / step + 0.5).floor().cast("int64")


def grid_position(value: Any, lower: float, upper: float, cells: int) -> Any:
    """The grid index floor((clamp(value, L, U) − L)·cells/(U − L) + ½) ∈ [0, cells], an int64.

    The nearest of the ``cells + 1`` grid points L + t·(U − L)/cells (halves round up). The same
    IEEE-754 double operations in the same order on every engine (subtract, multiply, divide, add
    ½, floor), so DuckDB, Spark and numpy agree bit for bit; with integer L and cells = U − L an
    integer value maps to itself minus L exactly.
    """
    ibis = _engine.ibis()

    clamped = value.cast("float64").clip(lower=lower, upper=upper)
    t = ((clamped - lower) * float(cells) / (upper - lower) + 0.5).floor().cast("int64")
    return ibis.least(ibis.greatest(t, 0), cells)


def kept_rows(
    table: Any,
    unit: str,
    keys: Sequence[str],
    *,
    max_rows: int,
    max_groups: int | None,
    salt: str,
    value: Any,
) -> Any:
    """The rows kept by contribution bounding, one per kept row: ``UNIT``, the keys, ``_sdp_v``.

    The same rule as :func:`per_person_key` without aggregating: each person's rows of one key
    ranked by the digest of unit ‖ key ‖ value (then value), the first ``max_rows`` kept; each
    person's keys ranked by the digest of unit ‖ key (then key), the first ``max_groups`` kept
    (a ``dense_rank``, so all rows of one (person, key) pair share the pair's rank). A per-person
    transformation, so the relation "add/remove one person" is preserved.

    Args:
        table: the Ibis table.
        unit: the privacy-unit column.
        keys: the key columns (empty: one group).
        max_rows: rows per (person, key) kept.
        max_groups: keys per person kept (``None``: no cap).
        salt: the query's salt.
        value: an integer-valued Ibis expression over ``table`` (e.g. :func:`grid_position`).
    """
    ibis = _engine.ibis()

    cols: dict[str, Any] = {UNIT: table[unit]}
    for k in keys:
        cols[k] = table[k]
    cols["_sdp_v"] = value
    rows = table.select(**cols)
    part = [UNIT, *keys]
    rank = ibis.row_number().over(
        group_by=part,
        order_by=[digest([rows[c] for c in part] + [rows["_sdp_v"]], salt), rows["_sdp_v"]],
    )
    kept = rows.mutate(_sdp_r=rank).filter(ibis._["_sdp_r"] < max_rows).drop("_sdp_r")
    if max_groups is None or not keys:
        return kept
    krank = ibis.dense_rank().over(
        group_by=[kept[UNIT]],
        order_by=[digest([kept[c] for c in part], salt), *[kept[k] for k in keys]],
    )
    return kept.mutate(_sdp_g=krank).filter(ibis._["_sdp_g"] < max_groups).drop("_sdp_g")


def per_person_key(
    table: Any,
    unit: str,
    keys: Sequence[str],
    *,
    max_rows: int,
    max_groups: int | None,
    salt: str,
    value: Any = None,
) -> Any:
    """One row per (person, key) kept: ``rows`` (≤ max_rows) and, with ``value``, ``total``.

    Args:
        table: the Ibis table.
        unit: the privacy-unit column.
        keys: the key columns (empty: one group).
        max_rows: rows per (person, key) kept.
        max_groups: keys per person kept (``None``: no cap, for one group).
        salt: the query's salt.
        value: an integer-valued Ibis expression over ``table`` (e.g. :func:`clamped_grid`); its
            kept rows are summed into ``total``.

    Returns:
        A table with columns ``UNIT``, the key columns, ``rows`` and (with ``value``) ``total``.
    """
    ibis = _engine.ibis()

    cols: dict[str, Any] = {UNIT: table[unit]}
    for k in keys:
        cols[k] = table[k]
    part = [UNIT, *keys]
    if value is None:
        pairs = table.select(**cols).group_by(part).aggregate(n=ibis._.count())
        pairs = pairs.select(*part, rows=ibis.least(pairs.n, ibis.literal(max_rows, "int64")))
    else:
        cols["_sdp_v"] = value
        rows = table.select(**cols)
        rank = ibis.row_number().over(
            group_by=part,
            order_by=[digest([rows[c] for c in part] + [rows["_sdp_v"]], salt), rows["_sdp_v"]],
        )
        kept = rows.mutate(_sdp_r=rank).filter(ibis._["_sdp_r"] < max_rows)
        pairs = kept.group_by(part).aggregate(
            rows=ibis._.count(), total=ibis._["_sdp_v"].sum().cast("int64")
        )
    if max_groups is None or not keys:
        return pairs
    krank = ibis.row_number().over(
        group_by=[pairs[UNIT]],
        order_by=[digest([pairs[c] for c in part], salt), *[pairs[k] for k in keys]],
    )
    return pairs.mutate(_sdp_g=krank).filter(ibis._["_sdp_g"] < max_groups).drop("_sdp_g")


def group(pairs: Any, keys: Sequence[str], with_total: bool) -> Any:
    """Group bounded (person, key) rows by key: ``count`` (rows), ``persons``, and ``total``."""
    ibis = _engine.ibis()

    metrics: dict[str, Any] = {
        "count": pairs.rows.sum().cast("int64"),
        "persons": ibis._.count(),
    }
    if with_total:
        metrics["total"] = pairs.total.sum().cast("int64")
    if keys:
        return pairs.group_by(list(keys)).aggregate(**metrics)
    return pairs.aggregate(**metrics)
