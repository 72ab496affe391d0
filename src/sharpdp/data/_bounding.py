"""Contribution bounding in the engine, as Ibis expressions (nothing is pulled into Python).

Order (ZetaSQL's, the cheap one): keep each person's rows of one key only up to ``max_rows``
(ranked by a seeded hash), aggregate per (person, key), then keep each person's keys only up to
``max_groups`` (ranked by a seeded hash of person ‖ key), then group by key.

A count can cap each person's keys on either of two plans that keep the same pairs: form the
distinct (person, key) pairs and rank each person's pairs, or rank the raw rows with a
``dense_rank`` (every row of a pair shares its rank) and aggregate only the kept rows. The second
skips a pass that groups every row, and wins when few rows repeat a pair; :func:`pair_plan`
chooses by one approximate count of the pairs, on large DuckDB tables only.

Every step is a *per-person* transformation: which rows and keys of a person survive depends only on
that person's own rows and the salt. So adding or removing one person's rows adds or removes only
that person's surviving contributions: at most ``max_groups`` keys, each moved by at most
``max_rows`` rows. The guarantee holds whatever the salt; the salt (fresh per query) only keeps the
choice from being the same systematic subset every time.

**Portable seeded hash.** Rows and keys are ranked by :func:`rank_hash`, an integer hash built
from the four operations every SQL engine computes identically on 64-bit integers (``+``, ``*``,
``%`` with C's sign rule, comparisons), kept below 2⁶³ at every step so that no engine overflows or
wraps. Integer and boolean columns contribute their value reduced mod p, p = 2³¹ − 1 (the fast
path: no text, no digest), dates their day number since 1970 the same way; floating-point
columns two codes from their exact binary exponent and fraction, computed with operations that
are exact in IEEE arithmetic (engines print floats differently). All other columns together
contribute *one* code: the first 7 hex digits (28 bits) of the MD5 digest of salt ‖ text₁ ‖ text₂
…, each column's text prefixed by ``|`` (NULL written ``\\N``; strings and decimals print alike on
DuckDB and Spark, a timestamp enters as its day number and time of day), so one digest per row,
whatever the number of text columns, and the salt reorders every person's keys independently. The
codes are chained with salt-derived multipliers, h ← (h · ((aᵢ·cᵢ + bᵢ) mod p) + eᵢ) mod p. DuckDB
and Spark compute the same h (each decodes the hex digits its own fastest way, checked against the
portable digit-by-digit decoding) and break its (rare) ties by the key columns then the value, both
ascending with NULLs last, so both engines keep identical rows. The hash only chooses *which* of a
person's contributions to keep; privacy never depends on its quality.

**Row-level privacy** (``unit=None``: each row is a person). A person then holds one row and one
key, so every cap holds already and nothing is ranked or dropped: each function returns the rows
themselves in its output's shape, and a grouped count is the engine's plain ``GROUP BY``.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from sharpdp.data import _engine

__all__ = [
    "INLINE_KEYS",
    "RESERVED_PREFIX",
    "UNIT",
    "blank_outside",
    "clamped_grid",
    "grid_position",
    "group",
    "kept_rows",
    "key_table",
    "pair_plan",
    "per_person_key",
    "per_person_total",
    "rank_hash",
    "restrict_keys",
    "typed_literal",
    "valued_rows",
]

#: The prefix of the columns bounding adds in the engine (a session refuses tables that use it).
RESERVED_PREFIX = "_sdp_"
#: The privacy unit's column in bounded relations.
UNIT = RESERVED_PREFIX + "unit"
_NULL = "\\N"


#: The Mersenne prime 2³¹ − 1: codes and hashes live in [0, P), so a product of two is < 2⁶².
P = 2**31 - 1


def _is_integral(value: Any) -> bool:
    dtype = value.type()
    if dtype.is_unsigned_integer() and dtype.nbytes == 8:
        return False  # may exceed int64: hashed as its decimal text instead
    return bool(dtype.is_integer() or dtype.is_boolean())


def _integral_code(value: Any) -> Any:
    """The code in [0, P) of an integer (or boolean) column: its value mod P."""
    # NULL takes code P − 1 (a value ≡ −1 mod P shares it; ties fall to the columns).
    return ((value.cast(_engine.dtype("int64")) % P + P) % P).fill_null(P - 1)


def _is_float(value: Any) -> bool:
    return bool(value.type().is_floating())


def _is_date(value: Any) -> bool:
    return bool(value.type().is_date())


def _date_code(value: Any) -> Any:
    """The code of a date column: its day number since 1970-01-01, as an integer's. Engines print
    dates outside years 1–9999 differently (DuckDB ``0222-09-04 (BC)``, Spark ``-0221-09-04``);
    the day number is the same on both."""
    return _integral_code(value.epoch_days())


#: The time of day at the end of a timestamp's text (``HH:MM:SS`` and any fraction), which both
#: engines print alike whatever the year (no backslashes: Spark SQL literals would need them
#: escaped).
_TIME_OF_DAY = r"([0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]+)?)$"


#: Offsets of the float codes: the kind (NULL, zero, +inf, −inf, positive, negative) times 2¹²
#: plus the binary exponent e ∈ [−1023, 1024] plus 1100, all in [0, 2¹⁵).
_FLOAT_KIND_STEP, _FLOAT_EXPONENT_OFFSET = 4096, 1100


def _float_codes(value: Any) -> tuple[Any, Any]:
    """Two codes in [0, P) of a floating-point column, from its exact binary form (no text).

    For finite x ≠ 0, |x| = m·2ᵉ with m ∈ [1, 2) (normal) or e = −1023 and m = |x|·2¹⁰²³ ∈
    (0, 1) (subnormal); the codes are (kind·2¹² + e + 1100, ⌊(m − 1)·2⁵²⌋ mod P), where
    (m − 1)·2⁵² is an exact integer in (−2⁵², 2⁵²). Engines print floats differently (DuckDB
    ``1e+20``, Spark ``1.0E20``, and Java 17 not always in the fewest digits), so text would
    not be portable; these operations are exact in IEEE double arithmetic on every engine
    (2^e₀ is ``POWER(2.0, e₀)``, exact on DuckDB and on Spark for every e₀ used: the tests check
    all of them against Python's ``frexp``, and an engine that rounded it would only choose other
    rows, never break the bounds): e₀ = ⌊log₂|x|⌋ clamped to [−1022, 1023] (log₂ may round either
    way near a power of two), m₀ = |x| / 2^e₀ (an exact division by a power of two), then one step
    moves m₀ into [1, 2) (or, for a subnormal, from (0, 1) to (0, 2)), whatever e₀ was. Zeros,
    infinities and NULL or NaN are their own kinds and enter the arithmetic as 1.0,
    so no operation overflows or divides by zero on any row.
    """
    ibis = _engine.ibis()
    x = value.cast(_engine.dtype("float64"))
    a = x.abs()
    inf = float("inf")
    # (ibis's isinf() compiles to FALSE on Spark: compare with ±inf instead)
    missing = x.isnull() | x.isnan()  # (a session reads NaN as NULL already)
    safe = ibis.ifelse((a == 0) | (a == inf) | missing, 1.0, a)
    e0 = ibis.greatest(ibis.least(safe.log2().floor().cast(_engine.dtype("int64")), 1023), -1022)
    m0 = safe / (ibis.literal(2.0, type=_engine.dtype("float64")) ** e0)
    m = ibis.cases((m0 >= 2.0, m0 / 2.0), (m0 < 1.0, m0 * 2.0), else_=m0)
    e = e0 + ibis.cases((m0 >= 2.0, 1), (m0 < 1.0, -1), else_=0)
    fraction = ((m - 1.0) * float(2**52)).floor().cast(_engine.dtype("int64"))
    kind = ibis.cases((missing, 0), (a == 0, 1), (x == inf, 2), (x == -inf, 3), (x > 0, 4), else_=5)
    return kind * _FLOAT_KIND_STEP + e + _FLOAT_EXPONENT_OFFSET, (fraction % P + P) % P


def _hex7_portable(digest: Any) -> Any:
    """int(first 7 hex digits, 16) with operations every engine has (seven one-character reads)."""
    code: Any = None
    for i in range(7):
        # Hex digit of ASCII a: '0'..'9' = 48..57, 'a'..'f' = 97..102, so (a − 48) mod 39.
        # (Cast first: engines compute ASCII in 32 bits, and ibis would elide a later cast.)
        digit = (digest.substr(i, 1).ascii_str().cast(_engine.dtype("int64")) - 48) % 39
        code = digit if code is None else code * 16 + digit
    return code


def _hex7_duckdb(digest: Any) -> Any:
    # DuckDB casts '0x'-prefixed text to an integer as hexadecimal.
    return (_engine.ibis().literal("0x") + digest.left(7)).cast(_engine.dtype("int64"))


@functools.cache
def _spark_conv() -> Any:
    """Spark's ``conv(text, from_base, to_base)`` (ibis's ``convert_base`` does not compile there)."""

    def conv(text: str, from_base: int, to_base: int) -> str:  # type: ignore[empty-body]
        ...

    return _engine.ibis().udf.scalar.builtin(conv, name="conv")


def _hex7_spark(digest: Any) -> Any:
    return _spark_conv()(digest.left(7), 16, 10).cast(_engine.dtype("int64"))


#: Engine-specific decoders of the digest's first 7 hex digits (each equal to the portable one,
#: which takes ~2× the engine time and most of the compile time of a bounded query on DuckDB).
_HEX7_DECODERS = {"duckdb": _hex7_duckdb, "pyspark": _hex7_spark}


def _engine_name(table: Any) -> str | None:
    try:
        return str(table.get_backend().name)
    except Exception:  # an unbound expression: the portable decoding
        return None


@functools.cache
def _hex() -> Any:
    """The engines' ``hex(binary)``: upper-case hexadecimal text on DuckDB and on Spark."""

    def hex(value: bytes) -> str:  # type: ignore[empty-body]
        ...

    return _engine.ibis().udf.scalar.builtin(hex, name="hex")


@functools.cache
def _duckdb_timezone() -> Any:
    """DuckDB's ``timezone(zone, timestamptz)``: the wall time in ``zone``, without a zone."""

    def timezone(zone: str, value: datetime.datetime) -> datetime.datetime:  # type: ignore[empty-body]
        ...

    return _engine.ibis().udf.scalar.builtin(timezone, name="timezone")


def _text(value: Any, engine: str | None) -> Any:
    """The text a column enters the digest with, alike on DuckDB and Spark.

    Strings and decimals print alike; a timestamp is written as its day number and its time of
    day (its date part prints differently outside years 1–9999). Binary values are written in hex
    (``hex``: DuckDB's text form escapes bytes, Spark's decodes them as UTF-8). A time-zoned
    timestamp is written as its UTC wall time on DuckDB (which otherwise prints it in the
    process's time zone with an offset); Spark's instants, which Ibis sees without a time zone,
    print in the Spark session's time zone, so the engines agree when that zone is UTC.
    """
    dtype = value.type()
    string = _engine.dtype("string")
    if dtype.is_binary() and engine in ("duckdb", "pyspark"):
        return _hex()(value)
    if dtype.is_timestamp():
        if dtype.timezone is not None and engine == "duckdb":
            value = _duckdb_timezone()("UTC", value)
        # the day number and the time of day: the engines print the date part differently
        # outside years 1–9999 (see _date_code)
        day = value.date().epoch_days().cast(string)
        return day + " " + value.cast(string).re_extract(_TIME_OF_DAY, 1)
    return value.cast(string)


def _text_digest(table: Any, columns: Sequence[str], salt: str) -> Any:
    """MD5 hex digest of salt ‖ '|' text₁ ‖ '|' text₂ … over the (non-numeric) ``columns``."""
    engine = _engine_name(table)
    text: Any = _engine.ibis().literal(salt)
    for c in columns:
        text = text + "|" + _text(table[c], engine).fill_null(_NULL)
    return text.hexdigest("md5")


def _multipliers(salt: str, n: int) -> list[tuple[int, int, int]]:
    """(aᵢ, bᵢ, eᵢ) for n columns, derived from the salt: aᵢ ∈ [1, P), bᵢ, eᵢ ∈ [0, P)."""
    out = []
    for i in range(n):
        raw = hashlib.sha256(f"{salt}:{i}".encode()).digest()
        a, b, e = (int.from_bytes(raw[8 * j : 8 * j + 8], "big") for j in range(3))
        out.append((1 + a % (P - 1), b % P, e % P))
    return out


def rank_hash(table: Any, columns: Sequence[str], salt: str) -> tuple[Any, Any]:
    """The portable seeded hash of ``columns`` (module docstring), as ``(table', h)``.

    Codes cᵢ: for the integer, floating-point and date columns in order, an integer's value mod
    P, a float's two codes (:func:`_float_codes`) or a date's day number mod P, then (if any
    other column) one code, the first 7 hex digits of MD5(salt ‖ '|' text … of the other
    columns). h₀ = 1,
    hᵢ = (hᵢ₋₁ · ((aᵢ·cᵢ + bᵢ) mod P) + eᵢ) mod P; every intermediate is < 2⁶² (codes and h are
    < P < 2³¹), so int64 arithmetic is exact on every engine.

    Returns:
        ``table'``: ``table`` plus the MD5 digest ``_sdp_md5`` of its non-integer ``columns``
        (computed in a projection of its own, so the engine hashes each row once; drop the
        ``_sdp_md5*`` columns when done), and ``h``, an int64 expression over ``table'`` in [0, P).
        Integer columns need no projection, so their hash stays inside the expression that uses it.
    """
    numeric = [
        c for c in columns if _is_integral(table[c]) or _is_float(table[c]) or _is_date(table[c])
    ]
    textual = [c for c in columns if c not in numeric]
    t = table.mutate(_sdp_md5=_text_digest(table, textual, salt)) if textual else table
    codes: list[Any] = []
    for c in numeric:
        if _is_float(t[c]):
            codes.extend(_float_codes(t[c]))
        else:
            codes.append(_date_code(t[c]) if _is_date(t[c]) else _integral_code(t[c]))
    if textual:
        decode = _HEX7_DECODERS.get(_engine_name(table) or "", _hex7_portable)
        codes.append(decode(t["_sdp_md5"]))
    h: Any = None
    for code, (a, b, e) in zip(codes, _multipliers(salt, len(codes)), strict=True):
        factor = (code * a + b) % P
        h = (factor + e) % P if h is None else (h * factor + e) % P
    return t, h


def _digest_columns(table: Any) -> list[str]:
    return [c for c in table.columns if c.startswith("_sdp_md5")]


def typed_literal(column: Any, v: Any) -> Any:
    """``v`` as a value to compare ``column`` with: a literal of the column's own type for
    integer, decimal, date and timestamp columns (an integer beyond int64, a uint64 column's, has no
    literal type of its own; Ibis wrote a decimal key as DECIMAL(18, 3), rounding 1.1234 to
    1.123, and a timestamp key in microseconds, dropping a nanosecond column's last digits)."""
    ibis = _engine.ibis()
    dtype = column.type()
    if dtype.is_timestamp() and (dtype.scale or 6) > 6 and hasattr(v, "nanosecond"):
        # Ibis turns timestamp literals into datetime (microseconds): write the text instead
        return ibis.literal(v.isoformat(sep=" ")).cast(dtype)
    if dtype.is_date() and hasattr(v, "date"):
        # (a date key is a midnight pandas.Timestamp: compared as a timestamp, every row's date
        # was cast to a timestamp, whose range is narrower: one far date failed the query)
        return ibis.literal(v.date(), type=dtype)
    typed = dtype.is_integer() or dtype.is_decimal() or dtype.is_timestamp()
    return ibis.literal(v, type=dtype) if typed else v


#: Most public keys written into the query itself (an IN list, or for several columns one
#: conjunction per key); more are joined as a table (a long list is slow to compile, and a deep
#: OR of conjunctions exceeds Python's recursion limit from ~1,000 keys).
INLINE_KEYS = 256


def key_table(table: Any, columns: Sequence[str], keys: Sequence[tuple[Any, ...]]) -> Any:
    """The keys as an in-memory table typed like ``columns`` of ``table``."""
    ibis = _engine.ibis()
    schema = {c: table[c].type() for c in columns}
    data: dict[str, list[Any]] = {c: [] for c in columns}
    for key in keys:
        for c, v in zip(columns, key, strict=True):
            # (a date key is a midnight pandas.Timestamp: a date column takes its date)
            data[c].append(v.date() if schema[c].is_date() and hasattr(v, "date") else v)
    with _engine.quiet():
        return ibis.memtable(data, schema=schema)


def restrict_keys(table: Any, columns: Sequence[str], keys: Sequence[tuple[Any, ...]]) -> Any:
    """Rows whose key (over ``columns``) is one of the public ``keys`` (a row-wise filter)."""
    ibis = _engine.ibis()
    if len(keys) > INLINE_KEYS:
        return table.semi_join(key_table(table, columns, keys), list(columns))

    def value(column: str, v: Any) -> Any:
        return typed_literal(table[column], v)

    if len(columns) == 1:
        return table.filter(table[columns[0]].isin([value(columns[0], k[0]) for k in keys]))
    clauses = [
        ibis.and_(*[table[c] == value(c, v) for c, v in zip(columns, key, strict=True)])
        for key in keys
    ]
    return table.filter(ibis.or_(*clauses))


def blank_outside(table: Any, column: str, values: Sequence[Any]) -> Any:
    """``table`` with ``column`` set to NULL where its value is not one of ``values`` (a row-wise
    map: no row is dropped, so the row still counts where ``column`` does not matter)."""
    ibis = _engine.ibis()
    col = table[column]
    null = ibis.null(col.type())
    if len(values) > INLINE_KEYS:  # a long IN-list is slow to compile: a left join marks the rows
        hits = key_table(table, (column,), [(v,) for v in values]).mutate(_sdp_hit=1)
        joined = table.left_join(hits, column)
        kept = joined["_sdp_hit"].notnull().ifelse(joined[column], null)
        return joined.select(*[c for c in table.columns if c != column], **{column: kept})[
            list(table.columns)
        ]
    inside = col.isin([typed_literal(col, v) for v in values])
    return table.mutate(**{column: inside.ifelse(col, null)})


def valued_rows(
    table: Any,
    column: str,
    keys: Sequence[str],
    public: Sequence[tuple[Any, ...]] | None,
) -> Any:
    """Rows whose ``column`` is not NULL (a session reads NaN as NULL), of the public ``keys``
    if any (row-wise)."""
    table = table.filter(table[column].notnull())
    if public is not None and keys:
        table = restrict_keys(table, keys, public)
    return table


def clamped_grid(value: Any, lower: float, upper: float, step: float) -> Any:
    """round(clamp(value, lower, upper)/step) as an int64: floor(x/step + ½), portable."""
    clamped = value.cast(_engine.dtype("float64")).clip(lower=lower, upper=upper)
    return (clamped / step + 0.5).floor().cast(_engine.dtype("int64"))


def grid_position(value: Any, lower: float, upper: float, cells: int) -> Any:
    """The grid index floor((clamp(value, L, U) − L)·cells/(U − L) + ½) ∈ [0, cells], an int64.

    The nearest of the ``cells + 1`` grid points L + t·(U − L)/cells (halves round up). The same
    IEEE-754 double operations in the same order on every engine (subtract, multiply, divide, add
    ½, floor), so DuckDB, Spark and numpy agree bit for bit; with integer L and cells = U − L an
    integer value maps to itself minus L exactly.
    """
    ibis = _engine.ibis()

    clamped = value.cast(_engine.dtype("float64")).clip(lower=lower, upper=upper)
    t = (
        ((clamped - lower) * float(cells) / (upper - lower) + 0.5)
        .floor()
        .cast(_engine.dtype("int64"))
    )
    return ibis.least(ibis.greatest(t, 0), cells)


def kept_rows(
    table: Any,
    unit: str | None,
    keys: Sequence[str],
    *,
    max_rows: int,
    max_groups: int | None,
    salt: str,
    value: Any,
) -> Any:
    """The rows kept by contribution bounding, one per kept row: ``UNIT``, the keys, ``_sdp_v``.

    The same rule as :func:`per_person_key` without aggregating: each person's rows of one key
    ranked by the hash of unit ‖ key ‖ value (then value), the first ``max_rows`` kept; each
    person's keys ranked by the hash of unit ‖ key (then key), the first ``max_groups`` kept
    (a ``dense_rank``, so all rows of one (person, key) pair share the pair's rank). A per-person
    transformation, so the relation "add/remove one person" is preserved.

    Args:
        table: the Ibis table.
        unit: the privacy-unit column (``None``: each row is a person, every row kept).
        keys: the key columns (empty: one group).
        max_rows: rows per (person, key) kept.
        max_groups: keys per person kept (``None``: no cap).
        salt: the query's salt.
        value: an integer-valued Ibis expression over ``table`` (e.g. :func:`grid_position`).
    """
    ibis = _engine.ibis()

    if unit is None:
        return table.select(*keys, _sdp_v=value)
    cols: dict[str, Any] = {UNIT: table[unit]}
    for k in keys:
        cols[k] = table[k]
    cols["_sdp_v"] = value
    part = [UNIT, *keys]
    rows, h = rank_hash(table.select(**cols), [*part, "_sdp_v"], salt)
    rank = ibis.row_number().over(group_by=part, order_by=[h, rows["_sdp_v"]])
    kept = rows.mutate(_sdp_r=rank).filter(ibis._["_sdp_r"] < max_rows)
    kept = kept.drop("_sdp_r", *_digest_columns(kept))
    if max_groups is None or not keys:
        return kept
    kept, h = rank_hash(kept, part, salt)
    krank = ibis.dense_rank().over(group_by=[kept[UNIT]], order_by=[h, *[kept[k] for k in keys]])
    kept = kept.mutate(_sdp_g=krank).filter(ibis._["_sdp_g"] < max_groups)
    return kept.drop("_sdp_g", *_digest_columns(kept))


def per_person_key(
    table: Any,
    unit: str | None,
    keys: Sequence[str],
    *,
    max_rows: int,
    max_groups: int | None,
    salt: str,
    value: Any = None,
    plan: str = "pairs",
) -> Any:
    """One row per (person, key) kept: ``rows`` (≤ max_rows) and, with ``value``, ``total``.

    Args:
        table: the Ibis table.
        unit: the privacy-unit column (``None``: each row is a person and its own pair).
        keys: the key columns (empty: one group).
        max_rows: rows per (person, key) kept.
        max_groups: keys per person kept (``None``: no cap, for one group).
        salt: the query's salt.
        value: an integer-valued Ibis expression over ``table`` (e.g. :func:`clamped_grid`); its
            kept rows are summed into ``total``.
        plan: how a count (no ``value``) caps each person's keys: ``"pairs"`` forms the distinct
            (person, key) pairs, then ranks each person's pairs; ``"rows"`` ranks the raw rows
            (all rows of a pair share its rank), then aggregates the kept rows. Both keep the
            same pairs (:func:`pair_plan` picks the cheaper).

    Returns:
        A table with columns ``UNIT`` (not with ``unit=None``), the key columns, ``rows`` and
        (with ``value``) ``total``.
    """
    ibis = _engine.ibis()

    if unit is None:
        one = ibis.literal(1, _engine.dtype("int64"))
        if value is None:
            return table.select(*keys, rows=one)
        return table.select(*keys, rows=one, total=value.cast(_engine.dtype("int64")))

    cols: dict[str, Any] = {UNIT: table[unit]}
    for k in keys:
        cols[k] = table[k]
    part = [UNIT, *keys]
    if value is None and plan == "rows" and max_groups is not None and keys:
        # Each person's keys ranked on the raw rows: a dense_rank gives all rows of one pair the
        # pair's rank, so the kept pairs are those of the "pairs" plan below.
        rows, h = rank_hash(table.select(**cols), part, salt)
        krank = ibis.dense_rank().over(
            group_by=[rows[UNIT]], order_by=[h, *[rows[k] for k in keys]]
        )
        kept = rows.mutate(_sdp_g=krank).filter(ibis._["_sdp_g"] < max_groups)
        return _count_pairs(kept.drop("_sdp_g", *_digest_columns(kept)), part, max_rows)
    if value is None:
        pairs = _count_pairs(table.select(**cols), part, max_rows)
    else:
        cols["_sdp_v"] = value
        rows, h = rank_hash(table.select(**cols), [*part, "_sdp_v"], salt)
        rank = ibis.row_number().over(group_by=part, order_by=[h, rows["_sdp_v"]])
        kept = rows.mutate(_sdp_r=rank).filter(ibis._["_sdp_r"] < max_rows)
        pairs = kept.group_by(part).aggregate(
            rows=ibis._.count(), total=ibis._["_sdp_v"].sum().cast(_engine.dtype("int64"))
        )
    if max_groups is None or not keys:
        return pairs
    pairs, h = rank_hash(pairs, part, salt)
    krank = ibis.row_number().over(group_by=[pairs[UNIT]], order_by=[h, *[pairs[k] for k in keys]])
    pairs = pairs.mutate(_sdp_g=krank).filter(ibis._["_sdp_g"] < max_groups)
    return pairs.drop("_sdp_g", *_digest_columns(pairs))


def _count_pairs(rows: Any, part: list[str], max_rows: int) -> Any:
    """One row per distinct (person, key) of ``rows``, with ``rows`` = min(its rows, max_rows)."""
    ibis = _engine.ibis()

    if max_rows == 1:  # every kept pair counts one row: distinct pairs, no count to carry
        return rows.distinct().mutate(rows=ibis.literal(1, _engine.dtype("int64")))
    pairs = rows.group_by(part).aggregate(_sdp_n=ibis._.count())
    return pairs.select(
        *part, rows=ibis.least(pairs["_sdp_n"], ibis.literal(max_rows, _engine.dtype("int64")))
    )


#: The engines on which the "rows" plan of :func:`per_person_key` is considered.
_ROWS_PLAN_ENGINES = frozenset({"duckdb"})
#: Below this many rows the pairs plan is always used: the estimate's pass (about 7 ms per 10⁶
#: rows on DuckDB) would cost about what the other plan can save.
ROWS_PLAN_MIN_ROWS = 10**6
#: The rows plan is chosen when the table has fewer rows per distinct (person, key) pair than
#: this. Measured on DuckDB 2.0 at 10⁷ rows (2 cores): rows plan 0.84 s against 1.32 s for the
#: pairs plan at 1.05 rows per pair, about equal at 2.1 (0.82 s, 0.80 s), 0.78 s against 0.17 s
#: at 8.4; the margin covers the estimate's ~2% error.
ROWS_PLAN_MAX_REPEAT = 1.5


def pair_plan(table: Any, unit: str | None, keys: Sequence[str], rows: int | None) -> str:
    """The cheaper plan of :func:`per_person_key` for a count over ``table``: "pairs" or "rows".

    "rows" only on the engines of ``_ROWS_PLAN_ENGINES``, for tables of at least
    ``ROWS_PLAN_MIN_ROWS`` rows (``rows``: the source's count, ``None`` when unknown), keys
    without floating-point columns (whose −0.0 and 0.0 group together but print apart), and
    fewer than ``ROWS_PLAN_MAX_REPEAT`` rows per distinct pair by one approximate count in the
    engine. The plans keep the same pairs, so the choice changes only the time.
    """
    ibis = _engine.ibis()

    if (
        unit is None
        or not keys
        or rows is None
        or rows < ROWS_PLAN_MIN_ROWS
        or _engine_name(table) not in _ROWS_PLAN_ENGINES
        or any(table[k].type().is_floating() for k in keys)
    ):
        return "pairs"
    pair = ibis.struct({UNIT: table[unit], **{f"k{i}": table[k] for i, k in enumerate(keys)}})
    stats = table.aggregate(n=table.count(), pairs=pair.approx_nunique())
    try:
        counts = _engine.execute(table.get_backend(), stats)
    except Exception:  # a key type the engine cannot count in a struct: the plan that always runs
        return "pairs"
    n, pairs = int(counts["n"].iloc[0]), int(counts["pairs"].iloc[0])
    return "rows" if pairs > 0 and n < ROWS_PLAN_MAX_REPEAT * pairs else "pairs"


#: Rows are limited to ±2³¹ grid steps before a person's total is formed, so that a total of up to
#: 2³² rows stays inside int64 on every engine (only a person's total is clamped to the bounds).
ROW_LIMIT = 2**31


def per_person_total(
    table: Any,
    unit: str | None,
    keys: Sequence[str],
    value: Any,
    *,
    grid: tuple[float, int, int],
    max_groups: int | None,
    salt: str,
) -> Any:
    """One row per (person, key) kept, each person's total clamped: ``rows`` and ``total``.

    Every row of the person and key counts (no ``max_rows``): each row's value is rounded to the
    grid, t = Σ ⌊x/step + ½⌋ over the person's rows of the key (each limited to ±2³¹ steps, an
    integer sum, so DuckDB and Spark agree exactly), and ``total`` = min(max(t, L_g), U_g) with
    L_g = ⌊L/step + ½⌋, U_g = ⌊U/step + ½⌋. A person's total per key thus lies in [L_g, U_g]
    whatever their number of rows; keys per person are capped as in :func:`per_person_key`.
    Under add/remove of one person, each of at most ``max_groups`` keys moves by at most
    max(|L_g|, |U_g|) grid steps.

    Args:
        table: the Ibis table (rows with a NULL value already removed).
        unit: the privacy-unit column (``None``: each row is a person, its value clamped).
        keys: the key columns (empty: one group).
        value: the numeric value column (an Ibis expression over ``table``).
        grid: (step, L_g, U_g), the grid step and the bounds in grid steps.
        max_groups: keys per person kept (``None``: no cap, for one group).
        salt: the query's salt.
    """
    ibis = _engine.ibis()

    step, lo_g, hi_g = grid
    limit = ROW_LIMIT * step
    on_grid = clamped_grid(value, -limit, limit, step)
    if unit is None:
        total = ibis.least(ibis.greatest(on_grid, lo_g), hi_g).cast(_engine.dtype("int64"))
        return table.select(*keys, rows=ibis.literal(1, _engine.dtype("int64")), total=total)
    cols: dict[str, Any] = {UNIT: table[unit]}
    for k in keys:
        cols[k] = table[k]
    cols["_sdp_v"] = on_grid
    part = [UNIT, *keys]
    sums = (
        table.select(**cols)
        .group_by(part)
        .aggregate(rows=ibis._.count(), _sdp_t=ibis._["_sdp_v"].sum())
    )
    total = ibis.least(ibis.greatest(sums["_sdp_t"], lo_g), hi_g).cast(_engine.dtype("int64"))
    pairs = sums.select(*part, "rows", total=total)
    if max_groups is None or not keys:
        return pairs
    pairs, h = rank_hash(pairs, part, salt)
    krank = ibis.row_number().over(group_by=[pairs[UNIT]], order_by=[h, *[pairs[k] for k in keys]])
    pairs = pairs.mutate(_sdp_g=krank).filter(ibis._["_sdp_g"] < max_groups)
    return pairs.drop("_sdp_g", *_digest_columns(pairs))


def group(pairs: Any, keys: Sequence[str], with_total: bool) -> Any:
    """Group bounded (person, key) rows by key: ``count`` (rows), ``persons``, and ``total``."""
    ibis = _engine.ibis()

    metrics: dict[str, Any] = {
        "count": pairs.rows.sum().cast(_engine.dtype("int64")),
        "persons": ibis._.count(),
    }
    if with_total:
        metrics["total"] = pairs.total.sum().cast(_engine.dtype("int64"))
    if keys:
        return pairs.group_by(list(keys)).aggregate(**metrics)
    return pairs.aggregate(**metrics)
