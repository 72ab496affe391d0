"""Tables in, Ibis tables out: where a session's data lives and which engine runs its queries.

A CSV or Parquet path, or a pandas/Polars/Arrow frame, is registered with an embedded in-memory
DuckDB database: one per process, with a connection of its own per session, holding the session's
data as temporary views and tables that live and go with that connection. (Opening a DuckDB
database costs ~10 ms, as much as a whole bounded query on a small table; a connection to an open
one ~0.5 ms.) An Ibis table keeps its own backend (DuckDB, PySpark, ...). Nothing here pulls rows
into Python.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import importlib
import itertools
import os
import secrets
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sharpdp.errors import InvalidParameter

__all__ = [
    "Source",
    "canonical_values",
    "check_columns",
    "execute",
    "ibis",
    "open_table",
    "parse_schema",
    "quiet",
    "read_csv",
]

_COUNTER = itertools.count()


@dataclass(frozen=True, slots=True)
class Source:
    """An Ibis table and the backend that executes it.

    Attributes:
        table: the Ibis table expression, its values as stored (see :meth:`columns`).
        backend: the Ibis backend (``backend.execute(expr)`` runs an expression).
        engine: the backend's name (``"duckdb"``, ``"pyspark"``, ...).
        rows: the table's row count when known (a session counts them when it opens).
    """

    table: Any
    backend: Any
    engine: str
    rows: int | None = None

    def columns(self, names: Sequence[str]) -> Any:
        """The table narrowed to ``names`` (repeats dropped), their values canonical
        (:func:`canonical_values`): what a query reads.

        Narrowing first canonicalises only the columns a query reads: over every column of a
        wide table, the expressions cost Ibis more time to build and compile than the query
        takes (opening a session and a count on 10⁵ rows of 200 float columns took 115 ms, 51 ms
        narrowed). A query that reads a column it did not name fails when it is built instead of
        reading raw values.
        """
        if not names:  # (a row-level count reads no column: one constant, as Ibis needs one)
            return self.table.select(_sdp_row=ibis().literal(1, type="int8"))
        return canonical_values(self.table.select(*dict.fromkeys(names)))


def canonical_values(table: Any) -> Any:
    """``table`` with −0.0 read as 0.0 and NaN as NULL in its floating-point columns, and the
    time 24:00:00 as NULL in its time columns.

    Engines group −0.0 with 0.0 but print them apart, and which one a group shows is whichever
    row the engine keeps: as a key, or in the text the bounding hashes, the sign of a zero made a
    result depend on other people's rows and on row order. NaN and NULL are two groups that
    every output shows alike (NaN in pandas, null in JSON), in an order the engine picks: a
    seeded release was not reproducible. (|x| at 0, not x + 0.0, which optimisers may fold, nor
    a float literal, which Spark reads as a decimal and widens float32 to double.)"""
    schema = table.schema()
    floats = [c for c, t in schema.items() if t.is_floating()]
    times = [c for c, t in schema.items() if t.is_time()]
    if not floats and not times:
        return table
    api = ibis()

    def canonical(x: Any) -> Any:
        return api.cases((x.isnan(), api.null(x.type())), (x == 0, x.abs()), else_=x)

    def time_of_day(t: Any) -> Any:
        # DuckDB's TIME holds 24:00:00, which no Python time can: a key table holding it failed
        # to come back to Python, before the spend, only when someone held that value
        return api.ifelse(t.hour() >= 24, api.null(t.type()), t)

    return table.mutate(
        **{c: canonical(table[c]) for c in floats}, **{c: time_of_day(table[c]) for c in times}
    )


def ibis() -> Any:
    """The ``ibis`` module (imported on first use; untyped, so handled as ``Any``)."""
    return importlib.import_module("ibis")


def dtype(name: str) -> Any:
    """The Ibis data type ``name`` (``"int64"``, ``"float64"``, ``"string"``...) as an object.

    Casts take these rather than type strings: Ibis parses a type string with a grammar it builds
    on first use, which cost ~100 ms of a process's first query (a third of it on the flights).
    """
    return getattr(importlib.import_module("ibis.expr.datatypes"), name)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence the engines' own deprecation chatter (ibis 12 calls APIs DuckDB 2 and pandas 3
    deprecate); sharpdp's warnings are not affected outside this block."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        yield


def _nullable_dtype(arrow_type: Any) -> Any:
    """pandas' nullable dtype for an Arrow integer or boolean type (others: ``None``, default)."""
    import pandas as pd

    pa: Any = importlib.import_module("pyarrow")
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    if pa.types.is_uint64(arrow_type):  # the one integer type Int64 cannot hold
        return pd.UInt64Dtype()
    if pa.types.is_integer(arrow_type):
        return pd.Int64Dtype()
    return None


def _through_arrow(backend: Any, expr: Any) -> Any:
    table = backend.to_pyarrow(expr)
    return table.to_pandas(types_mapper=_nullable_dtype, date_as_object=False)


def _through_spark(backend: Any, expr: Any) -> Any:
    """Spark's result as Arrow (Spark 4's ``toArrow``): exact integers, NULLs kept as such
    (Ibis's ``execute`` went through pandas floats: one NULL in a column rounded every integer
    of it beyond 2^53), timestamps in microseconds (nanoseconds overflowed before 1677).

    In-memory tables (long key lists) are registered first, as ``execute`` does. Spark's
    ``TimestampType`` is an instant, but Ibis types it without a time zone (as its keys must
    be); Arrow returns it with the session's zone, so it is turned back into that zone's wall
    time, the value Ibis's literals compare with. (Left zoned, a merge with the naive keys failed
    only when the engine returned rows: a free test of whether a key occurs.)
    """
    table = expr.as_table()
    backend._run_pre_execute_hooks(table)
    arrow = backend.raw_sql(backend.compile(table)).toArrow()
    pa: Any = importlib.import_module("pyarrow")
    pc: Any = importlib.import_module("pyarrow.compute")
    schema = table.schema()
    for i, field in enumerate(arrow.schema):
        dtype = schema[field.name]
        zoned = pa.types.is_timestamp(field.type) and field.type.tz is not None
        if zoned and dtype.is_timestamp() and dtype.timezone is None:
            arrow = arrow.set_column(i, field.name, pc.local_timestamp(arrow.column(i)))
    return arrow.to_pandas(types_mapper=_nullable_dtype, date_as_object=False)


#: How each engine's results become pandas, by backend name: the engines sharpdp runs on (a
#: session on another Ibis backend is refused when it opens). Both go through Arrow. Integer and
#: boolean columns always get pandas' nullable dtypes (``Int64``, ``UInt64`` for uint64 only,
#: ``boolean``), chosen from the result's schema and never from its values: a column that holds
#: a NULL would otherwise come back as objects or float64 (which also changes every integer beyond
#: 2^53) and one without as int64, so a released key column's type would tell whether a NULL key
#: existed in the data, released or not. Dates stay ``datetime64``, matched with the keys'
#: ``pandas.Timestamp``.
_FETCH = {"duckdb": _through_arrow, "pyspark": _through_spark}


def execute(backend: Any, expr: Any) -> Any:
    """Run an Ibis expression on ``backend``; return a pandas DataFrame (integer and boolean
    columns in pandas' nullable dtypes, whatever the values)."""
    fetch = _FETCH[str(getattr(backend, "name", ""))]
    with quiet():
        return fetch(backend, expr)


def _key_dtype(dtype: Any) -> Any:
    """The pandas dtype a released key column of Ibis type ``dtype`` takes (``None``: as is):
    the dtypes :func:`execute` gives the engine's own results, so that public keys (built from
    the analyst's values) and keys found in the data come back alike."""
    if dtype.is_boolean():
        return "boolean"
    if dtype.is_integer():
        return "UInt64" if dtype.is_unsigned_integer() and dtype.nbytes == 8 else "Int64"
    if dtype.is_floating():  # (NaN marks a missing key, as the engine returns them)
        return f"float{8 * dtype.nbytes}"
    if dtype.is_date():
        return "datetime64[ms]"
    if dtype.is_timestamp():
        unit = {0: "s", 3: "ms", 9: "ns"}.get(dtype.scale, "us")
        return f"datetime64[{unit}, {dtype.timezone}]" if dtype.timezone else f"datetime64[{unit}]"
    return None


def conform_keys(frame: Any, schema: Any, columns: Sequence[str]) -> Any:
    """``frame`` with its key ``columns`` in the dtypes of their Ibis types (:func:`_key_dtype`),
    whatever path built them. Cosmetic, and run after a spend: a column that does not convert
    is left as it is rather than fail."""
    out = frame
    for c in columns:
        if c not in frame.columns or c not in schema:
            continue
        target = _key_dtype(schema[c])
        if target is None or str(frame[c].dtype) == target:
            continue
        try:
            converted = frame[c].astype(target)
        except (TypeError, ValueError, OverflowError):
            continue
        if out is frame:
            out = frame.copy()
        out[c] = converted
    return out


_EMBEDDED: tuple[int, Any] | None = None
_EMBEDDED_LOCK = threading.Lock()


def embedded() -> Any:
    """A new Ibis DuckDB backend: a fresh connection to the process's in-memory database.

    Its temporary views and tables are visible to it alone and freed when it is closed or
    collected; the database (opened on first use, again in a forked child) is shared, with its
    memory limit and threads.
    """
    global _EMBEDDED
    with _EMBEDDED_LOCK:
        if _EMBEDDED is None or _EMBEDDED[0] != os.getpid():
            _EMBEDDED = (os.getpid(), importlib.import_module("duckdb").connect(":memory:"))
        database = _EMBEDDED[1]
        connection = database.cursor()
    with quiet():
        return ibis().duckdb.from_connection(connection)


def _is_ibis_table(obj: object) -> bool:
    return isinstance(obj, importlib.import_module("ibis.expr.types").Table)


def open_table(
    table: object, engine: Any = None, schema: Mapping[str, Any] | None = None
) -> Source:
    """Register ``table`` with an engine and return it as an Ibis table.

    Args:
        table: a ``.csv``/``.parquet`` path, a pandas/Polars DataFrame, a PyArrow table, or an Ibis
            table (which keeps its backend).
        engine: an Ibis backend to register non-Ibis tables with (default: :func:`embedded`).
        schema: a CSV's declared column types (see :func:`read_csv`); other tables carry theirs.

    Returns:
        The :class:`Source`.

    Raises:
        InvalidParameter: ``table`` is of another type, or a path with another suffix or missing;
            a ``schema`` for a table that is not a CSV, or a bad one; a CSV value that does not
            parse as its column's inferred type.
    """
    with quiet():
        return _open(table, engine, schema)


def _no_schema(schema: Mapping[str, Any] | None, what: str) -> None:
    if schema is not None:
        raise InvalidParameter(
            f"schema= declares the column types of a CSV file; {what} carries its own types "
            "(cast its columns before opening the session)"
        )


def parse_schema(schema: Mapping[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    """``schema`` (column → type name or Ibis type) as Ibis data types, checked against the
    CSV's ``columns``; nested types are refused (they have no text form to parse)."""
    if not isinstance(schema, Mapping) or not schema:
        raise InvalidParameter(
            f"schema must be a non-empty mapping of column names to types, got {schema!r}"
        )
    out = {}
    for column, spec in schema.items():
        if column not in columns:
            raise InvalidParameter(
                f"schema: no column {column!r} in the CSV (columns: {sorted(columns)})"
            )
        try:
            dtype = ibis().dtype(spec)
        except Exception as err:
            raise InvalidParameter(
                f"schema: {spec!r} (column {column!r}) is not a type; use e.g. 'string', "
                "'int64', 'float64', 'boolean', 'date', 'timestamp' or 'decimal(12, 2)'"
            ) from err
        if not _declarable(dtype):
            raise InvalidParameter(
                f"schema: column {column!r} cannot be declared {dtype}: declare an integer, "
                "float, decimal (precision ≤ 38), string, boolean, date, time or timestamp type"
            )
        out[column] = dtype
    return out


def _declarable(dtype: Any) -> bool:
    """The types a CSV column may be declared: those every engine parses from text (no
    extension to load, no nested value to spell)."""
    if dtype.is_decimal():
        return dtype.precision is None or 1 <= dtype.precision <= 38
    return bool(
        dtype.is_integer()
        or dtype.is_floating()
        or dtype.is_string()
        or dtype.is_boolean()
        or dtype.is_date()
        or dtype.is_time()
        or dtype.is_timestamp()
    )


#: An integer's text: engines differ on others ("2.5" rounds to 3 on DuckDB, NULL on Spark;
#: "1e3" is 1000 on DuckDB), so a declared integer column takes only this form, else NULL.
_INTEGER_TEXT = r"^\s*[+-]?[0-9]+\s*$"


def _converted(text: Any, dtype: Any) -> Any:
    """A text column converted to ``dtype`` by the same rule on every engine: TRY_CAST (NULL
    where it fails), integers from an integer's text only."""
    if dtype.is_integer():
        return text.re_search(_INTEGER_TEXT).ifelse(text.try_cast(dtype), ibis().null(dtype))
    return text.try_cast(dtype)


def read_csv(
    backend: Any, path: str, name: str, schema: Mapping[str, Any] | None, temp: bool = True
) -> Any:
    """A CSV file as a table of ``backend``, every value parsed now.

    Without ``schema`` the engine infers each column's type from the values (DuckDB from a sample
    of rows), so the types depend on the data: the README asks the data holder to check them.
    With ``schema`` every column is read as text and each declared column is converted to its
    type by a *safe* cast (``TRY_CAST``): a value that does not parse becomes NULL. That is a
    row-wise map (neighbouring files stay neighbouring), so no type, and hence no query's
    result, failure or shape, depends on the values. Undeclared columns stay text.

    On DuckDB the file is loaded into a temporary table when the session opens: a value that does
    not parse as an inferred type then fails there, for the data holder, and never later in an
    analyst's query (DuckDB parses a CSV's columns only when a query reads them, so a value
    beyond its type-inference sample failed exactly the queries that read its column: a free bit
    about the data). Later queries read the loaded table instead of parsing the file again. The
    text is loaded first and converted from the table: DuckDB 2.0 turns a ``TRY_CAST`` of a CSV
    column into the reader's strict cast (its ``type_pushdown`` optimiser), which fails on such
    a value. ``temp``: load into a temporary table (seen by ``backend``'s connection alone).
    """
    duck = str(backend.name) == "duckdb"
    options = {} if schema is None else {"all_varchar": True} if duck else {"inferSchema": False}
    try:
        raw = backend.read_csv(path, table_name=name + "_file", **options)
        _check_split(path, raw.columns)
        _check_distinct_names(backend, path)
        types = {} if schema is None else parse_schema(schema, raw.columns)
        if not duck:  # e.g. Spark, which infers types over the whole file, parsing permissively
            return raw.mutate(**{c: _converted(raw[c], d) for c, d in types.items()})
        loaded = backend.create_table(name + "_text" if types else name, raw, temp=temp)
        if not types:
            return loaded
        converted = loaded.mutate(**{c: _converted(loaded[c], d) for c, d in types.items()})
        typed = backend.create_table(name, converted, temp=temp)
        backend.drop_table(name + "_text", force=True)
        return typed
    except InvalidParameter:
        raise
    except Exception as err:
        if not _words(err):
            raise
        text = str(err)
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        # the error, where, and why (DuckDB's "Original Line" is empty when the line is long)
        why = " ".join([ln for ln in lines if ln != "Original Line:"][:4])
        # DuckDB's "Possible Solution: ..." names reader options a session does not take
        why = why.split(" Possible Solution:")[0].rstrip().rstrip(".")
        hint = (
            "; declare the columns' types with schema={column: type}, which reads a value that "
            "does not parse as NULL"
            if schema is None and "could not convert" in text.lower()
            else "; save it as UTF-8 text (or as Parquet) and open that"
            if "not utf-8" in text.lower()
            else ""
        )
        raise InvalidParameter(f"table: cannot read {path!r}: {why}{hint}") from err
    finally:
        if duck:
            backend.drop_view(name + "_file", force=True)


def _check_split(path: str, columns: Sequence[str]) -> None:
    """Refuse a CSV the engine read as one column whose name holds a usual delimiter: its
    dialect could not be detected (a malformed row near the top, or an odd delimiter), and the
    errors that would follow (no column 'x') would not say so."""
    if len(columns) == 1 and any(d in columns[0] for d in ",;\t|"):
        raise InvalidParameter(
            f"table: {path!r} was read as one column named {columns[0]!r}: its delimiter could "
            "not be detected (a row near the top with a different number of fields?)"
        )


def _check_distinct_names(backend: Any, path: str) -> None:
    """Refuse a CSV whose header repeats a name (ASCII letters in any case, as the engines match
    them) or leaves one blank: the engines rename the repeats (DuckDB ``a``, ``a_1``, ``A_2``;
    Spark ``a0``, ``A1``) and name the blanks (``column1``, ``_c1``), so an analyst asking for
    ``a`` would silently get one of them. The header is parsed in the dialect DuckDB detected
    (Spark reads commas), from a gzip-compressed file too; a file whose header cannot be read
    so (no header row, an unreadable file) is left to the engine."""
    header = _csv_header(backend, path)
    if header is None:
        return
    # compared as DuckDB reads them: a byte-order mark and surrounding spaces dropped ('a, a'
    # and '\ufeffa,a' are two columns 'a' to it, renamed silently)
    header = [
        name.lstrip("\ufeff").strip() if i == 0 else name.strip() for i, name in enumerate(header)
    ]
    seen: dict[str, str] = {}
    for position, name in enumerate(header):
        if not name:
            raise InvalidParameter(
                f"table: the header of {path!r} leaves column {position + 1} without a name "
                "(the engine would name it itself): give each column a name"
            )
        key = name.translate(_ASCII_LOWER)
        if key in seen:
            raise InvalidParameter(
                f"table: the header of {path!r} names two columns {seen[key]!r} and {name!r} "
                "(the engines match names regardless of case, and would rename one): give "
                "each column a distinct name"
            )
        seen[key] = name


#: ASCII upper case → lower case (the engines' case-insensitive matching of names).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _csv_header(backend: Any, path: str) -> list[str] | None:
    """The first record of the CSV at ``path`` in the engine's dialect (the sessions read it as the
    header, as Ibis asks the engines to), or ``None`` when it cannot be read so."""
    delimiter, quote = ",", '"'
    if str(backend.name) == "duckdb":
        try:
            row = backend.con.execute(
                "SELECT Delimiter, Quote FROM sniff_csv(?)", [path]
            ).fetchone()
        except Exception:  # (a glob, a URL...: the engine reads it, unchecked)
            return None
        if row is None:
            return None
        delimiter = str(row[0])
        quote = str(row[1]) if len(str(row[1])) == 1 else '"'
    if not os.path.isfile(path) or len(delimiter) != 1:
        return None
    opener: Any = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as file:
            return next(csv.reader(file, delimiter=delimiter, quotechar=quote), None)
    except (OSError, csv.Error, EOFError):
        return None


def _check_frame_names(frame: Any) -> None:
    """Refuse a frame whose column names are not distinct text regardless of ASCII case (the
    engines match names so, and DuckDB's refusal suggested converting a column's type)."""
    names = frame.column_names if hasattr(frame, "column_names") else list(frame.columns)
    seen: dict[str, object] = {}
    for name in map(str, names):
        key = name.translate(_ASCII_LOWER)
        first = seen.get(key)
        if first == name:
            raise InvalidParameter(f"table: the column name {name!r} appears twice: rename one")
        if first is not None:
            raise InvalidParameter(
                f"table: the columns {first!r} and {name!r} have the same name to the engines, "
                "which match names regardless of case: rename one"
            )
        seen[key] = name


def _words(err: Exception) -> set[str]:
    """Stems that mark an engine's error as one about reading a file's contents."""
    text = str(err).lower()
    return {stem for stem in ("conver", "csv", "sniff", "pars") if stem in text}


def _supported(backend: Any) -> Any:
    """``backend`` if sharpdp runs on it, else a clear refusal: the bounding hash and the result
    fetch are written and tested for DuckDB and PySpark only (SQLite, for one, has no MD5, so
    every query would fail in the engine)."""
    name = str(getattr(backend, "name", type(backend).__name__))
    if name not in _FETCH:
        raise InvalidParameter(
            f"engine: sharpdp runs on DuckDB (the default) and PySpark, got the Ibis backend "
            f"{name!r}: load the data into one of them (e.g. pass the table as a pandas, Polars "
            "or Arrow frame, or a CSV/Parquet path)"
        )
    return backend


def _open(table: object, engine: Any, schema: Mapping[str, Any] | None) -> Source:
    if engine is not None:
        _supported(engine)
    if _is_ibis_table(table):
        _no_schema(schema, "an Ibis table")
        t: Any = table
        try:
            backend = t.get_backend()
        except Exception:  # an unbound memtable: run it on embedded DuckDB
            backend = engine if engine is not None else embedded()
            t = _store(backend, _new_name(), t.execute())
        return Source(t, _supported(backend), str(backend.name))
    backend = engine if engine is not None else embedded()
    name = _new_name()
    if isinstance(table, str | os.PathLike):
        path = os.fspath(table)
        if not os.path.exists(path):
            raise InvalidParameter(f"table: no file at {path!r}")
        lower = path.lower()
        if os.path.getsize(path) == 0:
            raise InvalidParameter(
                f"table: the file {path!r} is empty (0 bytes: no header, no rows)"
            )
        if lower.endswith(".csv") or lower.endswith(".csv.gz"):
            t = read_csv(backend, path, name, schema)
        elif lower.endswith(".parquet") or lower.endswith(".pq"):
            _no_schema(schema, "a Parquet file")
            t = _read_parquet(backend, path, name)
        else:
            raise InvalidParameter(f"table: path must end in .csv or .parquet, got {path!r}")
        return Source(t, backend, str(backend.name))
    _no_schema(schema, f"a {type(table).__name__}")
    module = type(table).__module__.split(".")[0]
    if module in ("pandas", "polars", "pyarrow"):
        _check_frame_names(table)
        try:
            try:
                t = _store(backend, name, table)
            except Exception as err:
                if "null" not in str(err).lower():
                    raise
                # a column with no value at all has no type (pandas None, pa.null()), which
                # DuckDB cannot store: make it a text column of NULLs (what it holds), then retry
                t = _store(backend, name, _typed_nulls(table))
        except Exception as err:  # a column type the engine cannot hold (periods, float16...)
            first = (str(err).strip().splitlines() or [""])[0][:200]
            raise InvalidParameter(
                f"table: the engine cannot load this {type(table).__name__} "
                f"({type(err).__name__}: {first}); convert the offending column (e.g. periods "
                "to timestamps, float16 to float32, objects of mixed types to text) first"
            ) from err
        return Source(t, backend, str(backend.name))
    raise InvalidParameter(
        "table must be a CSV/Parquet path, a pandas/Polars DataFrame, a PyArrow table or an Ibis "
        f"table, got {type(table).__name__}"
    )


def _new_name() -> str:
    """A name for a table sharpdp loads, unique in this process and, with a random part, in an
    engine that several processes share (a Spark session's temporary views)."""
    return f"sharpdp_{next(_COUNTER)}_{secrets.token_hex(6)}"


def _store(backend: Any, name: str, data: Any) -> Any:
    """``data`` (a pandas/Polars/Arrow frame) as a table of ``backend`` that lives as long as the
    connection and is never written to disk: a temporary table on DuckDB, a temporary view on
    Spark. (Ibis's PySpark backend has no temporary tables: its ``create_table`` saved the
    private rows as a permanent table in the Spark warehouse, which the next process's table of
    the same name then collided with.)"""
    if str(backend.name) == "pyspark":
        return backend.create_view(name, ibis().memtable(data), overwrite=True)
    return backend.create_table(name, data, temp=True)


def _read_parquet(backend: Any, path: str, name: str) -> Any:
    """A Parquet file as a table of ``backend``; a file that is not Parquet (truncated, or
    another format under the name) is bad input, said as such."""
    try:
        return backend.read_parquet(path, table_name=name)
    except Exception as err:
        if isinstance(err, InvalidParameter | MemoryError):
            raise
        lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
        why = lines[0][:300] if lines else type(err).__name__
        raise InvalidParameter(f"table: cannot read {path!r} as Parquet: {why}") from err


def _typed_nulls(frame: Any) -> Any:
    """``frame`` as a PyArrow table whose null-typed columns (no value at all) are text."""
    pa: Any = importlib.import_module("pyarrow")  # untyped: reached through importlib as ibis is

    module = type(frame).__module__.split(".")[0]
    if module == "pandas":
        arrow = pa.Table.from_pandas(frame, preserve_index=False)
    elif module == "polars":
        arrow = frame.to_arrow()
    else:
        arrow = frame
    fields = [
        pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f for f in arrow.schema
    ]
    return arrow.cast(pa.schema(fields))


def check_scalar_columns(table: Any, parameter: str, columns: tuple[str, ...]) -> None:
    """Raise :class:`InvalidParameter` if a column is nested (struct, array, map): such keys
    have no order and, for maps and arrays, no portable hash, so results over them could fail
    for some data and not for other; refused by the column's type, never by its values."""
    schema = table.schema()
    for c in columns:
        dtype = schema[c]
        if dtype.is_nested():
            raise InvalidParameter(
                f"{parameter}: column {c!r} is of the nested type {dtype}; key and privacy-unit "
                "columns must hold numbers, text, booleans, dates or times (unpack it first)"
            )


def check_columns(table: Any, parameter: str, columns: tuple[str, ...]) -> None:
    """Raise :class:`InvalidParameter` naming ``parameter`` if a column is not in ``table``."""
    names = set(table.columns)
    for c in columns:
        if not isinstance(c, str):
            raise InvalidParameter(f"{parameter} must name columns (strings), got {c!r}")
        if c not in names:
            raise InvalidParameter(
                f"{parameter}: no column {c!r} in the table (columns: {sorted(names)})"
            )
