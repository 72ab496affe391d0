"""The service's own SQLite file: analysts, token hashes and stored releases.

One connection per process, used under a lock (threads of a worker take turns; writes are short).
Worker processes share the file: every write is one ``BEGIN IMMEDIATE`` transaction, committed
durably (WAL, ``synchronous=FULL``) before the call returns. The ledger is a separate file; a
release row names the ledger row of its spend, written first.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

from sharpdp.errors import LedgerError

__all__ = ["Database"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS analysts (
    name        TEXT PRIMARY KEY NOT NULL CHECK (length(name) > 0),
    budget      TEXT NOT NULL,
    period      TEXT NOT NULL,
    created_at  TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS tokens (
    id          TEXT PRIMARY KEY NOT NULL,
    analyst     TEXT NOT NULL REFERENCES analysts (name),
    salt        BLOB NOT NULL,
    hash        BLOB NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    revoked_at  TEXT
)""",
    """CREATE TABLE IF NOT EXISTS releases (
    id          TEXT PRIMARY KEY NOT NULL,
    analyst     TEXT NOT NULL,
    period      TEXT NOT NULL,
    dataset     TEXT NOT NULL,
    spend_id    INTEGER NOT NULL,
    request     TEXT NOT NULL,
    result      TEXT NOT NULL,
    created_at  TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS releases_by_analyst ON releases (analyst, created_at)",
    "CREATE INDEX IF NOT EXISTS releases_by_spend ON releases (spend_id)",
)


class Database:
    """The service's state file (created with its tables if missing).

    Args:
        path: the SQLite file.
        timeout: seconds to wait for another process's write lock.

    Raises:
        LedgerError: the file cannot be opened or initialised.
    """

    def __init__(self, path: str | os.PathLike[str], timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode = WAL").fetchall()
            self._conn.execute("PRAGMA synchronous = FULL")
            with self.write() as conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
        except sqlite3.Error as err:
            raise LedgerError(f"cannot open the service state {self.path!r}: {err}") from err

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One durable write transaction (rolled back if the block raises)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                yield self._conn
                self._conn.execute("COMMIT")
            except sqlite3.Error as err:
                self._rollback()
                raise LedgerError(f"cannot write the service state {self.path!r}: {err}") from err
            except BaseException:
                self._rollback()
                raise

    def read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query."""
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.Error as err:
                raise LedgerError(f"cannot read the service state {self.path!r}: {err}") from err

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
