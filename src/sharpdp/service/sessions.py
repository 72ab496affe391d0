"""Served data sets and the sessions over them: one :class:`sharpdp.data.Session` per
(data set, analyst, period), reused across requests.

Each data set is loaded once per worker into an embedded in-memory DuckDB database. DuckDB
connections are not safe to share between threads, so each session gets its own cursor on that
database (a connection of its own to the same data), and its queries run one at a time under the
session's lock; different analysts' queries run in parallel. All sessions of a worker share one
:class:`~sharpdp.accounting.ledger.Ledger`: the spend of every query is checked and recorded in
one ledger transaction (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: under the account's advisory
lock), across threads, worker processes and — with PostgreSQL — servers alike.

An account (analyst, period) is opened in the ledger with the analyst's budget policy the first
time it is used; from then on its budget lives in the ledger (an admin's change is recorded
there with its reason).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import sharpdp as sdp
from sharpdp.accounting.ledger import Ledger
from sharpdp.data import _engine
from sharpdp.service import spelling
from sharpdp.service.auth import Analyst
from sharpdp.service.config import PERIODS, DatasetConfig, ServiceConfig
from sharpdp.service.errors import NotFound

__all__ = ["Datasets", "Slot", "period_label"]

#: The reason recorded in the ledger when the service opens an account.
OPENED = "opened by sharpdp serve with the analyst's budget policy"
#: Sessions kept per worker (least recently used dropped first).
_MAX_SESSIONS = 1024


def period_label(period: str, now: datetime | None = None) -> str:
    """The ledger period label of ``period`` now (UTC): ``month`` → ``2026-11``; ``all`` → ``all``."""
    fmt = PERIODS[period]
    if fmt is None:
        return "all"
    return (now or datetime.now(UTC)).strftime(fmt)


@dataclass
class Slot:
    """One analyst's session on one data set for one period, and the lock its queries take."""

    session: sdp.data.Session
    lock: threading.Lock
    period: str


@dataclass(frozen=True)
class _Loaded:
    config: DatasetConfig
    backend: Any  # the Ibis DuckDB backend holding the table
    table: str


def _load(config: DatasetConfig, index: int) -> _Loaded:
    ibis = _engine.ibis()
    with _engine.quiet():
        backend = ibis.duckdb.connect()
        name = f"sharpdp_served_{index}"
        if config.source.startswith("example:"):
            from sharpdp.data import datasets

            frame = getattr(datasets, config.source.removeprefix("example:"))()
            backend.create_table(name, frame)
        else:
            lower = config.source.lower()
            if lower.endswith(".parquet") or lower.endswith(".pq"):
                backend.create_table(name, backend.read_parquet(config.source))
            else:  # loaded now, every value parsed, with the declared types if any
                schema = None if config.schema is None else dict(config.schema)
                try:
                    _engine.read_csv(backend, config.source, name, schema, temp=False)
                except sdp.InvalidParameter as err:  # named by its data set, in TOML's words
                    message = str(err).replace(
                        "schema={column: type}", 'schema = { column = "type" }'
                    )
                    raise sdp.InvalidParameter(f"[datasets.{config.name}]: {message}") from err
        columns = backend.table(name).columns
    if config.privacy_unit not in columns:
        raise sdp.InvalidParameter(
            f"[datasets.{config.name}]: privacy_unit {config.privacy_unit!r} is not a column "
            f"(columns: {sorted(columns)})"
        )
    return _Loaded(config, backend, name)


def load_all(config: ServiceConfig) -> dict[str, _Loaded]:
    """Every served data set, loaded (``Datasets`` takes them; loading first lets a service
    refuse a file it cannot serve before it creates its ledger and state files).

    Raises:
        InvalidParameter: a data set cannot be loaded or lacks its privacy unit.
    """
    return {d.name: _load(d, i) for i, d in enumerate(config.datasets)}


class Datasets:
    """The served data sets of one worker, the sessions over them, and the shared ledger.

    Args:
        config: the service configuration.
        ledger: the ledger shared by every session of this worker.

    Raises:
        InvalidParameter: a data set cannot be loaded or lacks its privacy unit.
    """

    def __init__(
        self, config: ServiceConfig, ledger: Ledger, loaded: dict[str, _Loaded] | None = None
    ) -> None:
        self._ledger = ledger
        self._loaded = load_all(config) if loaded is None else loaded
        self._slots: OrderedDict[tuple[str, str, str], Slot] = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict[tuple[str, str, str], threading.Lock] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """The served data sets' names."""
        return tuple(self._loaded)

    def describe(self) -> list[dict[str, Any]]:
        """Each data set's name, engine, privacy unit and columns with their types (public)."""
        out = []
        for name, loaded in self._loaded.items():
            with _engine.quiet():
                schema = loaded.backend.table(loaded.table).schema()
            out.append(
                {
                    "name": name,
                    "engine": loaded.config.engine,
                    "privacy_unit": loaded.config.privacy_unit,
                    "max_rows": loaded.config.max_rows,
                    "max_groups": loaded.config.max_groups,
                    "columns": {str(c): str(t) for c, t in schema.items()},
                }
            )
        return out

    def open_account(self, analyst: Analyst) -> str:
        """Open the analyst's account of the current period (with its budget policy) if it has
        none; return the period label."""
        period = period_label(analyst.period)
        if self._ledger.budget(analyst.name, period) is None:
            self._ledger.open_account(
                analyst.name, period, spelling.budget(analyst.budget), reason=OPENED
            )
        return period

    def accountant(self, analyst: Analyst) -> sdp.Accountant:
        """An accountant of the analyst's current account (opened if new)."""
        period = self.open_account(analyst)
        return sdp.Accountant(None, self._ledger, analyst.name, period=period)

    def slot(self, dataset: str, analyst: Analyst) -> Slot:
        """The analyst's session on ``dataset`` for the current period (made on first use).

        Raises:
            NotFound: no such data set.
        """
        loaded = self._loaded.get(dataset)
        if loaded is None:
            raise NotFound(f"no data set {dataset!r} (served: {', '.join(sorted(self._loaded))})")
        period = period_label(analyst.period)
        key = (dataset, analyst.name, period)
        with self._lock:
            slot = self._slots.get(key)
            if slot is not None:
                self._slots.move_to_end(key)
                return slot
            making = self._making.setdefault(key, threading.Lock())
        try:
            with making:  # one thread makes the session; the others wait for it
                with self._lock:
                    slot = self._slots.get(key)
                if slot is None:
                    slot = Slot(self._session(loaded, analyst, period), threading.Lock(), period)
                    with self._lock:
                        self._slots[key] = slot
                        while len(self._slots) > _MAX_SESSIONS:
                            self._slots.popitem(last=False)
        finally:
            with self._lock:
                self._making.pop(key, None)
        return slot

    def _session(self, loaded: _Loaded, analyst: Analyst, period: str) -> sdp.data.Session:
        self.open_account(analyst)
        cfg = loaded.config
        with _engine.quiet():
            backend = _engine.ibis().duckdb.from_connection(loaded.backend.con.cursor())
            table = backend.table(loaded.table)
        return sdp.data.Session(
            table,
            privacy_unit=cfg.privacy_unit,
            budget=None,
            ledger=cast(Any, self._ledger),  # Session passes a Ledger through to its Accountant
            analyst=analyst.name,
            null_units=cfg.null_units,
            seed=None,
            period=period,
            max_rows=cfg.max_rows,
            max_groups=cfg.max_groups,
        )
