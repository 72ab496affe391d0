"""The PostgreSQL storage of the ledger: SQL dialect, transactions, per-account locks, opening.

:class:`sharpdp.accounting.ledger.PostgresLedger` (what ``Ledger("postgresql://...")`` returns)
keeps all of the ledger's logic — caching, descriptions, the ``decide``/``check`` protocol — and
delegates to a :class:`PostgresStore` exactly what differs from SQLite: running a statement,
inserting a row, beginning/committing/rolling back a write transaction, mapping driver errors, and
creating/validating the tables. This module imports the driver (``psycopg`` 3, the ``postgres``
extra); the ledger loads it only for ``postgresql://`` URLs. The format is ``docs/ledger.md``,
section "PostgreSQL".

Write transactions: ``BEGIN ISOLATION LEVEL READ COMMITTED`` → ``SELECT
pg_advisory_xact_lock(key(analyst, period))`` → the ledger reads the account's new rows and its
latest budget, decides, inserts → ``COMMIT``. PostgreSQL releases the lock only after the commit is
visible, and under READ COMMITTED every statement after the lock sees every transaction committed
before it, so each decision sees every spend and the budget in force: writers of one account (any
process, any machine) serialise and never overspend together; other accounts do not wait.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg import pq

from sharpdp.accounting._ledger_format import (
    BUDGET_COLUMNS,
    BUDGET_TRIGGER,
    COLUMNS,
    FORMAT_NAME,
    SCHEMA_VERSION,
    isoformat,
    library_version,
    schema_version,
)
from sharpdp.errors import LedgerError

T = TypeVar("T")

__all__ = ["PostgresStore", "redact"]

# The tables of schema version 2 in PostgreSQL's types: the same names, columns and order as the
# SQLite file's. The server enforces the types, so the CHECKs keep only what types cannot say.
SCHEMA = (
    """CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
)""",
    """CREATE TABLE spends (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    analyst         TEXT             NOT NULL CHECK (length(analyst) > 0),
    period          TEXT             NOT NULL CHECK (length(period) > 0),
    item            TEXT             NOT NULL,
    count           BIGINT           NOT NULL CHECK (count >= 1),
    created_at      TEXT             NOT NULL,
    measure         TEXT             NOT NULL CHECK (measure IN ('epsilon', 'rho')),
    at_delta        DOUBLE PRECISION CHECK ((measure = 'epsilon') = (at_delta IS NOT NULL)),
    spent_after     DOUBLE PRECISION NOT NULL,
    budget          TEXT             NOT NULL,
    library_version TEXT             NOT NULL
)""",
    "CREATE INDEX spends_by_account ON spends (analyst, period, id)",
    """CREATE TABLE budgets (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    analyst         TEXT NOT NULL CHECK (length(analyst) > 0),
    period          TEXT NOT NULL CHECK (length(period) > 0),
    budget          TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    reason          TEXT NOT NULL CHECK (length(reason) > 0),
    library_version TEXT NOT NULL
)""",
    "CREATE INDEX budgets_by_account ON budgets (analyst, period, id)",
    # SET search_path FROM CURRENT: the function reads the budgets table beside its spends table.
    f"""CREATE FUNCTION {BUDGET_TRIGGER}() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.budget IS DISTINCT FROM (
        SELECT budget FROM budgets WHERE analyst = NEW.analyst AND period = NEW.period
        ORDER BY id DESC LIMIT 1
    ) THEN
        RAISE EXCEPTION 'sharpdp ledger: a spend must name its account''s recorded budget'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$""",
    f"""CREATE TRIGGER {BUDGET_TRIGGER} BEFORE INSERT ON spends
FOR EACH ROW EXECUTE FUNCTION {BUDGET_TRIGGER}()""",
)

#: The trigger function's body as created (between the ``$$``).
TRIGGER_BODY = next(s for s in SCHEMA if s.startswith("CREATE FUNCTION")).split("$$")[1]

_TEXT, _BIGINT, _DOUBLE = "text", "bigint", "double precision"
#: The columns (name, ``information_schema`` data type) each table must have, in order.
EXPECTED: dict[str, tuple[tuple[str, str], ...]] = {
    "meta": (("key", _TEXT), ("value", _TEXT)),
    "spends": tuple(
        zip(
            COLUMNS,
            (_BIGINT, _TEXT, _TEXT, _TEXT, _BIGINT, _TEXT, _TEXT, _DOUBLE, _DOUBLE, _TEXT, _TEXT),
            strict=True,
        )
    ),
    "budgets": tuple(
        zip(BUDGET_COLUMNS, (_BIGINT, _TEXT, _TEXT, _TEXT, _TEXT, _TEXT, _TEXT), strict=True)
    ),
}


def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory-lock key for ``parts``: blake2b of their JSON, the same in every
    process and on every server. A collision only makes two accounts wait for each other."""
    text = json.dumps([FORMAT_NAME, *parts], ensure_ascii=False).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big", signed=True)


#: The key of the lock under which a database's ledger tables are created (one creator wins).
CREATE_KEY = lock_key("create the ledger tables")


def redact(url: str) -> str:
    """The URL without its password (for messages and ``repr``): libpq takes one in the user
    part (``user:pw@host``) or as a ``password=`` parameter of the query string; both are
    replaced by ``***``, the rest kept as written. A URL that does not parse is named by its
    scheme alone."""
    try:
        parts = urlsplit(url)
        secret = parts.password
    except ValueError:  # e.g. an unbalanced "[" in the host: say nothing of the rest
        return url.partition(":")[0] + "://…"
    if secret is not None:
        host = parts.netloc.rpartition("@")[2]
        url = urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    return _QUERY_PASSWORD.sub(r"\1***", url)


_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def dialect(sql: str) -> str:
    """The ledger's shared SQL (``?`` placeholders) in psycopg's ``%s`` style (its statements
    contain no other ``?`` and no ``%``)."""
    return sql.replace("?", "%s")


class PostgresStore:
    """One connection to a ledger database and the storage operations the ledger needs.

    Not thread-safe by itself: the ledger's lock serialises every use, as for SQLite.

    Args:
        url: the libpq URL (with its password, if any).
        name: how messages name the ledger (the URL without its password).
        timeout: seconds to wait for an account's lock (``lock_timeout``) and to connect.
    """

    __slots__ = ("_conn", "_in_transaction", "_timeout", "_url", "name")

    def __init__(self, url: str, name: str, timeout: float) -> None:
        self.name = name
        self._url, self._timeout = url, timeout
        self._in_transaction = False
        self._conn = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection, set up (lock wait, durable commits)."""
        try:
            # autocommit: no implicit transactions (BEGIN / COMMIT are issued explicitly, as for
            # SQLite); a read outside a write transaction is one statement.
            conn = psycopg.connect(
                self._url,
                autocommit=True,
                connect_timeout=max(1, math.ceil(min(self._timeout, 3600.0))),
            )
        except psycopg.Error as err:
            raise LedgerError(f"cannot connect to ledger {self.name!r}: {err}") from err
        try:
            with self.errors("open"):
                # lock_timeout = 0 would mean "wait forever": the least wait is 1 ms.
                wait_ms = max(1, math.ceil(min(self._timeout, 86_400.0) * 1000.0))
                conn.execute(f"SET lock_timeout = {wait_ms}")
                # Durable: COMMIT returns once the commit record is flushed to the server's WAL.
                conn.execute("SET synchronous_commit = on")
        except BaseException:
            conn.close()
            raise
        return conn

    def _outside_transaction(self, statement: Callable[[], T]) -> T:
        """Run ``statement`` (no transaction open); if the connection turns out lost (a server
        restart, a failover, an idle-session timeout, a terminated backend), connect again and
        run it once more. Nothing can be half-done: no transaction was open. Inside a
        transaction a lost connection stays an error (its lock and writes are gone with it)."""
        if self._conn.closed:
            self._conn = self._connect()
        try:
            return statement()
        except psycopg.OperationalError:
            if not self._conn.closed:
                raise
        self._conn = self._connect()
        return statement()

    def close(self) -> None:
        self._conn.close()

    # -- the ledger's storage hooks ---------------------------------------------------------------
    def fetch(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            return self._conn.execute(dialect(sql), tuple(args)).fetchall()

        return run() if self._in_transaction else self._outside_transaction(run)

    def insert(self, sql: str, args: Sequence[object]) -> int:
        row = self._conn.execute(dialect(sql) + " RETURNING id", tuple(args)).fetchone()
        if row is None:  # pragma: no cover - INSERT ... RETURNING returns the row
            raise LedgerError(f"ledger {self.name!r}: PostgreSQL returned no id for the insert")
        return int(row[0])

    def begin(self, key: int) -> None:
        """``BEGIN`` (READ COMMITTED: each statement after the lock sees every earlier commit),
        then take the transaction-level advisory lock ``key`` (waits up to ``timeout``). A
        connection found lost at ``BEGIN`` is opened again first."""
        self._outside_transaction(
            lambda: self._conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        )
        self._in_transaction = True
        try:
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
        except BaseException:
            self.rollback()
            raise

    def begin_account(self, analyst: str, period: str) -> None:
        """Begin a write transaction holding the account's lock."""
        self.begin(lock_key(analyst, period))

    def commit(self) -> None:
        try:
            self._conn.execute("COMMIT")
        finally:
            # committed, or failed: the server has ended the transaction either way (a failed
            # COMMIT rolls back) or the connection is gone with it
            self._in_transaction = False

    def rollback(self) -> None:
        """Roll back the open transaction, if any (never raises)."""
        self._in_transaction = False
        if self._conn.closed or self._conn.info.transaction_status == pq.TransactionStatus.IDLE:
            return
        with contextlib.suppress(psycopg.Error):
            self._conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def errors(self, action: str, what: str = "") -> Iterator[None]:
        """Turn driver failures into :class:`LedgerError` naming the ledger."""
        where = what or f"PostgresLedger({self.name!r})"
        try:
            yield
        except pg_errors.LockNotAvailable as err:
            raise LedgerError(
                f"cannot {action} {where}: {err} (another process holds the account's lock; "
                "raise timeout=)"
            ) from err
        except psycopg.Error as err:
            raise LedgerError(f"cannot {action} {where}: {err}") from err

    # -- opening ----------------------------------------------------------------------------------
    def tables(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """The ledger's tables in the current schema: name → ((column, type), ...)."""
        rows = self.fetch(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name IN ('meta', 'spends', 'budgets') "
            "ORDER BY table_name, ordinal_position"
        )
        tables: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in rows:
            tables.setdefault(str(table), []).append((str(column), str(kind)))
        return {table: tuple(columns) for table, columns in tables.items()}

    def create(self) -> None:
        """Create the tables and ``meta`` in one transaction under the creation lock; if another
        process created them meanwhile, write nothing (that ledger is then checked)."""
        self.begin(CREATE_KEY)
        try:
            if self.tables():
                self.rollback()
                return
            for statement in SCHEMA:
                self._conn.execute(statement)
            with self._conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO meta (key, value) VALUES (%s, %s)",
                    [
                        ("format", FORMAT_NAME),
                        ("schema_version", str(SCHEMA_VERSION)),
                        ("created_at", isoformat(datetime.now(UTC))),
                        ("created_by", f"sharpdp {library_version()}"),
                    ],
                )
            self.commit()
        except BaseException:
            self.rollback()
            raise

    def check(self) -> None:
        """Check format, schema version, tables, columns and trigger (read-only)."""
        where = f"ledger {self.name!r}"
        tables = self.tables()
        if "meta" not in tables:
            raise LedgerError(f"{where} has ledger tables but is not a sharpdp ledger (no meta)")
        meta = {str(k): v for k, v in self.fetch("SELECT key, value FROM meta")}
        # PostgreSQL ledgers began at version 2
        schema_version(meta, where, (SCHEMA_VERSION,))
        for table, wanted in EXPECTED.items():
            columns = tables.get(table)
            if columns is None:
                raise LedgerError(f"{where} has no {table} table")
            if columns != wanted:
                raise LedgerError(f"{where}: the {table} table has columns {columns}, not {wanted}")
        triggers = self.fetch(
            "SELECT t.tgenabled, p.prosrc, t.tgtype FROM pg_trigger t "
            "JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = to_regclass('spends') "
            "AND t.tgname = ? AND NOT t.tgisinternal AND p.proname = ?",
            (BUDGET_TRIGGER, BUDGET_TRIGGER),
        )
        if not triggers or triggers[0][0] == "D":
            raise LedgerError(f"{where} has no enabled {BUDGET_TRIGGER} trigger")
        # the function body as created (PostgreSQL keeps it verbatim), run BEFORE INSERT for
        # each row (tgtype bits: ROW 1, BEFORE 2, INSERT 4); else someone else rewrote it
        if triggers[0][1] != TRIGGER_BODY or int(triggers[0][2]) != 0b111:
            raise LedgerError(
                f"{where}: its {BUDGET_TRIGGER} trigger is not the one sharpdp creates (edited by "
                "another tool: it may no longer refuse a spend checked against another budget)"
            )
