"""The durable privacy ledger: an append-only SQLite table of spends, per analyst and period.

Each row records *what was run* (the JSON description of the guarantee or mechanism, see
:mod:`sharpdp.accounting._serialize`), how many times, when, by which library version, and the odometer's
reading right after the spend. Descriptions rather than bare ε values let a later, sharper analysis
re-account the whole history. The file format (schema version 1) is documented in
``docs/ledger.md``.

Guarantees (principle 6, "budget is durable"):

* :meth:`Ledger.append` runs ``BEGIN IMMEDIATE`` → read every row of the account not yet seen
  (also those written by other processes) → ask the caller's ``decide`` callback for the
  post-spend reading (it raises to refuse) → ``INSERT`` → ``COMMIT``, all in one transaction.
  ``BEGIN IMMEDIATE`` takes SQLite's write lock, so concurrent spenders on one file (threads or
  processes) serialise and each decision sees every committed spend: they can never overspend
  together.
* The database runs in WAL mode with ``synchronous=FULL``: a commit is on disk before
  :meth:`~Ledger.append` returns. A crash at any point leaves either the whole row or nothing.
* A refused or failed append rolls back and writes nothing.
* Opening validates the file read-only first (SQLite header, format name, schema version, columns,
  ``PRAGMA quick_check``, every row's types and descriptions); a file that fails raises
  :class:`~sharpdp.errors.LedgerError` and is left byte-for-byte untouched. A new ledger is built in
  a temporary file and hard-linked into place, so a ledger file is never seen half-initialised and
  two processes creating the same ledger at once agree on one file.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Literal, Self

from sharpdp import _validate
from sharpdp._version import __version__
from sharpdp.accounting._serialize import (
    dumps,
    from_description,
    known_types,
    loads,
    register_type,
    to_description,
)
from sharpdp.errors import InvalidParameter, LedgerError, NumericalError
from sharpdp.guarantees import Guarantee

__all__ = [
    "FORMAT_NAME",
    "SCHEMA_VERSION",
    "Entry",
    "History",
    "Ledger",
    "dumps",
    "from_description",
    "known_types",
    "loads",
    "register_type",
    "to_description",
]

#: The value of ``meta.format`` in every sharpdp ledger.
FORMAT_NAME = "sharpdp-ledger"
#: The ledger schema version this library reads and writes.
SCHEMA_VERSION = 1

Measure = Literal["epsilon", "rho"]

_SQLITE_MAGIC = b"SQLite format 3\x00"

_COLUMNS = (
    "id",
    "analyst",
    "period",
    "item",
    "count",
    "created_at",
    "measure",
    "at_delta",
    "spent_after",
    "budget",
    "library_version",
)

_SCHEMA_V1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
CREATE TABLE spends (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    analyst         TEXT    NOT NULL CHECK (typeof(analyst) = 'text' AND length(analyst) > 0),
    period          TEXT    NOT NULL CHECK (typeof(period) = 'text' AND length(period) > 0),
    item            TEXT    NOT NULL CHECK (typeof(item) = 'text'),
    count           INTEGER NOT NULL CHECK (typeof(count) = 'integer' AND count >= 1),
    created_at      TEXT    NOT NULL CHECK (typeof(created_at) = 'text'),
    measure         TEXT    NOT NULL CHECK (measure IN ('epsilon', 'rho')),
    at_delta        REAL    CHECK ((measure = 'epsilon') = (at_delta IS NOT NULL)),
    spent_after     REAL    NOT NULL,
    budget          TEXT    NOT NULL CHECK (typeof(budget) = 'text'),
    library_version TEXT    NOT NULL CHECK (typeof(library_version) = 'text')
);
CREATE INDEX spends_by_account ON spends (analyst, period, id);
"""

# Rows a version-1 reader cannot interpret (the CHECK constraints keep our own writes out of here;
# this catches files edited by other tools).
_BAD_ROWS = """
SELECT id FROM spends WHERE
    typeof(analyst) != 'text' OR length(analyst) = 0
    OR typeof(period) != 'text' OR length(period) = 0
    OR typeof(item) != 'text'
    OR typeof(count) != 'integer' OR count < 1
    OR typeof(created_at) != 'text' OR datetime(created_at) IS NULL
    OR typeof(measure) != 'text' OR measure NOT IN ('epsilon', 'rho')
    OR (measure = 'epsilon' AND typeof(at_delta) NOT IN ('real', 'integer'))
    OR (measure = 'rho' AND at_delta IS NOT NULL)
    OR typeof(spent_after) NOT IN ('real', 'integer')
    OR typeof(budget) != 'text'
    OR typeof(library_version) != 'text'
LIMIT 1
"""

#: Decoded descriptions kept per ledger (distinct texts; cleared past this size).
_DECODE_CACHE_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class Entry:
    """One recorded spend (a row of the ledger).

    Attributes:
        id: the row id (increasing in commit order, never reused).
        analyst: the account's analyst.
        period: the account's period label.
        item: the guarantee or mechanism spent (decoded from its description).
        count: how many times it was run (≥ 1).
        timestamp: the commit time (UTC).
        measure: ``"epsilon"`` (ε at δ = ``at_delta``) or ``"rho"`` (zCDP ρ) — the currency of the
            budget in force when the spend was recorded.
        at_delta: the δ of the ε reading (``None`` for ρ readings).
        spent_after: the odometer reading of the account just after this spend, in ``measure``
            (an upper bound, from the analysis available at the time; re-accounting the history
            with a later library can only sharpen it).
        budget: the budget the spend was checked against.
        library_version: the sharpdp version that wrote the row.
    """

    id: int
    analyst: str
    period: str
    item: Guarantee
    count: int
    timestamp: datetime
    measure: Measure
    at_delta: float | None
    spent_after: float
    budget: Guarantee
    library_version: str


@dataclass(frozen=True, slots=True)
class History:
    """The spends of one account, with equal descriptions grouped (a snapshot).

    Attributes:
        analyst: the analyst.
        period: the period label.
        last_id: the largest row id of the account (0 when it is empty); the account's rows are
            append-only, so ``last_id`` identifies the snapshot.
        entries: the number of rows.
        counts: a read-only mapping item → total count, one key per distinct description, in
            order of first use.
    """

    analyst: str
    period: str
    last_id: int
    entries: int
    counts: Mapping[Guarantee, int]

    @property
    def items(self) -> tuple[tuple[Guarantee, int], ...]:
        """``(item, total count)`` pairs; ``compose(items)`` is the composition of the history."""
        return tuple(self.counts.items())


class _Account:
    """Cached, grouped history of one (analyst, period), built from rows with id ≤ last_id.

    Snapshots share the counts dictionary until the next change, which copies it first
    (copy-on-write), so a published snapshot never changes and costs no per-item allocation.
    """

    __slots__ = ("_published", "counts", "entries", "last_id")

    def __init__(self) -> None:
        self.last_id = 0
        self.entries = 0
        self.counts: dict[Guarantee, int] = {}
        self._published: Mapping[Guarantee, int] | None = None

    def add(self, row_id: int, item: Guarantee, count: int) -> None:
        if self._published is not None:
            self.counts = self.counts.copy()
            self._published = None
        self.counts[item] = self.counts.get(item, 0) + count
        self.entries += 1
        self.last_id = max(self.last_id, row_id)

    def snapshot(self, analyst: str, period: str) -> History:
        if self._published is None:
            self._published = MappingProxyType(self.counts)
        return History(analyst, period, self.last_id, self.entries, self._published)


def account_name(name: str, value: object) -> str:
    """Validate an analyst or period label: a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidParameter(f"{name} must be a non-empty string, got {value!r}")
    return value


class Ledger:
    """A durable SQLite ledger of privacy spends, shared safely by threads and processes.

    Args:
        path: the ledger file, or ``None`` (or ``":memory:"``) for an in-memory ledger that uses
            the same code path and lives as long as this object.
        create: create the file when it does not exist (``False``: raise :class:`LedgerError`
            instead, so that a mistyped path never starts a fresh budget).
        timeout: seconds to wait for another writer's lock before raising :class:`LedgerError`.

    Raises:
        LedgerError: the file is not a sharpdp ledger, is corrupted, has an unknown (newer) schema
            version, or cannot be opened; the file is left untouched.
    """

    __slots__ = ("_accounts", "_conn", "_decoded", "_lock", "_path")

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        timeout: float = 30.0,
    ) -> None:
        seconds = _validate.nonnegative("timeout", timeout)
        if not isinstance(create, bool):
            raise InvalidParameter(f"create must be a bool, got {create!r}")
        self._lock = threading.RLock()
        self._accounts: dict[tuple[str, str], _Account] = {}
        self._decoded: dict[str, Guarantee] = {}
        if path is None or (isinstance(path, str) and path == ":memory:"):
            self._path: str | None = None
            self._conn = _connect(":memory:", seconds, uri=False)
            try:
                _initialise(self._conn)
            except sqlite3.Error as err:
                self._conn.close()
                raise LedgerError(f"cannot initialise an in-memory ledger: {err}") from err
        else:
            if not isinstance(path, str | os.PathLike):
                raise InvalidParameter(f"path must be a file path or None, got {path!r}")
            self._path = os.path.abspath(os.fspath(path))
            if not os.path.lexists(self._path):
                if not create:
                    raise LedgerError(f"ledger {self._path!r} does not exist (create=False)")
                _create_file(self._path)
            self._conn = _open_file(self._path, seconds)
        try:
            self._validate_rows()
            self._conn.execute("PRAGMA synchronous = FULL")
        except BaseException:
            self._conn.close()
            raise

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def path(self) -> str | None:
        """The absolute path of the ledger file (``None`` for an in-memory ledger)."""
        return self._path

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self._path!r})" if self._path is not None else "Ledger(None)"

    # -- reading ----------------------------------------------------------------------------------
    def history(self, analyst: str, period: str) -> History:
        """The grouped history of one account, including rows other processes have committed.

        Only rows not read before are fetched (the grouped history is cached per account).
        """
        a, p = account_name("analyst", analyst), account_name("period", period)
        with self._lock, self._errors("read"):
            return self._refresh(a, p).snapshot(a, p)

    def entries(self, analyst: str | None = None, period: str | None = None) -> tuple[Entry, ...]:
        """Every recorded spend, in commit order, optionally of one analyst and/or one period."""
        clauses, args = [], []
        if analyst is not None:
            clauses.append("analyst = ?")
            args.append(account_name("analyst", analyst))
        if period is not None:
            clauses.append("period = ?")
            args.append(account_name("period", period))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT {', '.join(_COLUMNS)} FROM spends{where} ORDER BY id"
        with self._lock, self._errors("read"):
            return tuple(self._entry(row) for row in self._conn.execute(sql, args).fetchall())

    def accounts(self) -> tuple[tuple[str, str], ...]:
        """The (analyst, period) pairs that have at least one spend, sorted."""
        with self._lock, self._errors("read"):
            rows = self._conn.execute(
                "SELECT DISTINCT analyst, period FROM spends ORDER BY analyst, period"
            ).fetchall()
        return tuple((str(a), str(p)) for a, p in rows)

    # -- writing ----------------------------------------------------------------------------------
    def append(
        self,
        analyst: str,
        period: str,
        item: Guarantee,
        count: int,
        *,
        budget: Guarantee,
        measure: Measure,
        at_delta: float | None,
        decide: Callable[[History], float],
    ) -> Entry:
        """Atomically check and record one spend.

        In one ``BEGIN IMMEDIATE`` transaction: refresh the account's history (every committed row,
        whoever wrote it), call ``decide(history)`` — which returns the odometer reading after the
        spend, or raises to refuse it — then insert the row and commit durably. If anything raises
        (the refusal, a bad description, an I/O error) the transaction rolls back and nothing is
        written. The item is validated and described *before* the lock is taken.

        Args:
            analyst: the account's analyst.
            period: the account's period label.
            item: the guarantee or mechanism spent.
            count: how many times (≥ 1).
            budget: the budget the spend is checked against (recorded with the row).
            measure: the currency of ``decide``'s reading: ``"epsilon"`` or ``"rho"``.
            at_delta: the δ of an ε reading (``None`` for ρ).
            decide: ``History → reading``; raises (e.g. :class:`~sharpdp.BudgetExceeded`) to refuse.

        Returns:
            The recorded :class:`Entry`.
        """
        a, p = account_name("analyst", analyst), account_name("period", period)
        k = _validate.integer("count", count, minimum=1)
        item_text, budget_text = dumps(item), dumps(budget)
        if measure not in ("epsilon", "rho"):
            raise InvalidParameter(f"measure must be 'epsilon' or 'rho', got {measure!r}")
        if (measure == "epsilon") != (at_delta is not None):
            raise InvalidParameter(
                f"at_delta must be given exactly for epsilon readings, got {at_delta!r}"
            )
        if at_delta is not None:
            at_delta = _validate.real("at_delta", at_delta)
        version = _library_version()
        with self._lock:
            with self._errors("begin a spend on"):
                self._conn.execute("BEGIN IMMEDIATE")
            try:
                with self._errors("record a spend in"):
                    account = self._refresh(a, p)
                reading = decide(account.snapshot(a, p))
                if not isinstance(reading, float | int) or math.isnan(reading):
                    raise NumericalError(
                        f"the odometer reading {reading!r} is not a number (a bug)"
                    )
                stamp = datetime.now(UTC)
                with self._errors("record a spend in"):
                    cursor = self._conn.execute(
                        "INSERT INTO spends (analyst, period, item, count, created_at, measure, "
                        "at_delta, spent_after, budget, library_version) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            a,
                            p,
                            item_text,
                            k,
                            stamp.isoformat(timespec="microseconds"),
                            measure,
                            at_delta,
                            float(reading),
                            budget_text,
                            version,
                        ),
                    )
                    row_id = cursor.lastrowid
                    if row_id is None:
                        raise LedgerError(f"{self!r}: SQLite reported no row id for the spend")
                    self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise
            account.add(row_id, item, k)
        return Entry(
            row_id, a, p, item, k, stamp, measure, at_delta, float(reading) + 0.0, budget, version
        )

    # -- internals --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn SQLite failures into LedgerError naming the ledger."""
        try:
            yield
        except sqlite3.ProgrammingError as err:
            raise LedgerError(f"cannot {action} {self!r}: {err}") from err
        except sqlite3.OperationalError as err:
            hint = (
                " (another process holds the write lock; raise timeout=)"
                if "locked" in str(err)
                else ""
            )
            raise LedgerError(f"cannot {action} {self!r}: {err}{hint}") from err
        except sqlite3.Error as err:
            raise LedgerError(f"cannot {action} {self!r}: {err}") from err

    def _decode(self, text: str, what: str, row_id: int) -> Guarantee:
        item = self._decoded.get(text)
        if item is None:
            try:
                item = loads(text)
            except InvalidParameter as err:
                raise LedgerError(
                    f"ledger {self._path!r}: row {row_id} has an unreadable {what}: {err}"
                ) from err
            if len(self._decoded) >= _DECODE_CACHE_LIMIT:
                self._decoded.clear()
            self._decoded[text] = item
        return item

    def _refresh(self, analyst: str, period: str) -> _Account:
        """Fold the account's rows newer than the cache into it (all or nothing)."""
        account = self._accounts.get((analyst, period))
        last = 0 if account is None else account.last_id
        rows = self._conn.execute(
            "SELECT id, item, count FROM spends WHERE analyst = ? AND period = ? AND id > ? "
            "ORDER BY id",
            (analyst, period, last),
        ).fetchall()
        if account is not None and not rows:
            return account
        decoded: list[tuple[int, Guarantee, int]] = []
        for row_id, text, count in rows:
            if not isinstance(text, str) or isinstance(count, bool) or not isinstance(count, int):
                raise LedgerError(f"ledger {self._path!r}: row {row_id} has malformed columns")
            if count < 1:
                raise LedgerError(f"ledger {self._path!r}: row {row_id} has count {count} < 1")
            decoded.append((row_id, self._decode(text, "item description", row_id), count))
        if account is None:
            account = _Account()
            self._accounts[(analyst, period)] = account
        for row_id, item, count in decoded:
            account.add(row_id, item, count)
        return account

    def _entry(self, row: tuple[object, ...]) -> Entry:
        (
            row_id,
            analyst,
            period,
            item,
            count,
            created,
            measure,
            at_delta,
            spent,
            budget,
            version,
        ) = row
        rid = int(row_id)  # type: ignore[call-overload]
        try:
            stamp = datetime.fromisoformat(str(created))
        except ValueError as err:
            raise LedgerError(f"ledger {self._path!r}: row {rid} has a bad timestamp") from err
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        return Entry(
            rid,
            str(analyst),
            str(period),
            self._decode(str(item), "item description", rid),
            int(count),  # type: ignore[call-overload]
            stamp,
            "rho" if measure == "rho" else "epsilon",
            None if at_delta is None else float(at_delta),  # type: ignore[arg-type]
            float(spent),  # type: ignore[arg-type]
            self._decode(str(budget), "budget description", rid),
            str(version),
        )

    def _validate_rows(self) -> None:
        """Every row must be interpretable (types, descriptions); nothing is written."""
        with self._errors("read"):
            bad = self._conn.execute(_BAD_ROWS).fetchone()
            if bad is not None:
                raise LedgerError(f"ledger {self._path!r}: row {bad[0]} has malformed columns")
            for what, column in (("item description", "item"), ("budget description", "budget")):
                rows = self._conn.execute(
                    f"SELECT MIN(id), {column} FROM spends GROUP BY {column}"
                ).fetchall()
                for row_id, text in rows:
                    self._decode(text, what, row_id)


# -- opening and creating files -------------------------------------------------------------------


def _library_version() -> str:
    return __version__


def _connect(target: str, timeout: float, *, uri: bool) -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions (we issue BEGIN IMMEDIATE / COMMIT ourselves);
    # check_same_thread=False: the Ledger's own lock serialises every use of the connection.
    return sqlite3.connect(
        target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
    )


def _initialise(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA_V1.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("format", FORMAT_NAME),
                ("schema_version", str(SCHEMA_VERSION)),
                ("created_at", datetime.now(UTC).isoformat(timespec="microseconds")),
                ("created_by", f"sharpdp {_library_version()}"),
            ],
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _create_file(path: str) -> None:
    """Build a ledger in a temporary file beside ``path`` and hard-link it into place.

    The link is atomic and fails if ``path`` appeared meanwhile (another process won the race:
    its ledger is used). Where hard links are unsupported the bytes are copied into a file created
    with ``O_EXCL`` instead.
    """
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise LedgerError(f"cannot create ledger {path!r}: directory {directory!r} does not exist")
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        os.close(fd)
        conn = _connect(tmp, 5.0, uri=False)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            _initialise(conn)
        finally:
            conn.close()  # checkpoints the WAL into the file and removes it
        _fsync_file(tmp)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created the ledger first; we open theirs
        except OSError:
            _copy_exclusive(tmp, path)
        _fsync_directory(directory)
    except sqlite3.Error as err:
        raise LedgerError(f"cannot create ledger {path!r}: {err}") from err
    except FileExistsError:
        pass
    except OSError as err:
        raise LedgerError(f"cannot create ledger {path!r}: {err}") from err
    finally:
        for leftover in (tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def _copy_exclusive(source: str, target: str) -> None:
    with open(source, "rb") as fh:
        data = fh.read()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: str) -> None:
    # Makes the new directory entry durable (POSIX); not possible on every platform.
    with contextlib.suppress(OSError):
        _fsync_file(directory)


def _open_file(path: str, timeout: float) -> sqlite3.Connection:
    """Open and validate an existing ledger; writes nothing until it has passed every check."""
    if not os.path.isfile(path):
        raise LedgerError(f"ledger {path!r} is not a regular file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)  # the SQLite database header
            size = os.fstat(fh.fileno()).st_size
    except OSError as err:
        raise LedgerError(f"cannot read ledger {path!r}: {err}") from err
    if not head:
        raise LedgerError(
            f"ledger {path!r} is an empty file, not a sharpdp ledger (delete it, or pass a path "
            "that does not exist, to create a new ledger)"
        )
    if not head.startswith(_SQLITE_MAGIC):
        raise LedgerError(f"ledger {path!r} is not an SQLite database (bad header)")
    # SQLite writes whole pages: a main file that is not a whole number of pages was truncated
    # (SQLite itself would read the missing tail as zeros).
    page_size = int.from_bytes(head[16:18], "big") if len(head) == 100 else 0
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1) or size % page_size:
        raise LedgerError(
            f"ledger {path!r} is corrupted: its size {size} is not a whole number of pages"
        )
    try:
        # mode=rw: never create a file here (it may have been removed since the check above).
        conn = _connect(Path(path).as_uri() + "?mode=rw", timeout, uri=True)
    except sqlite3.Error as err:
        raise LedgerError(f"cannot open ledger {path!r}: {err}") from err
    try:
        _check_schema(conn, path)
        # A no-op for ledgers we created. Where WAL is unavailable SQLite keeps its rollback
        # journal, which with synchronous=FULL and BEGIN IMMEDIATE is just as durable and serial.
        conn.execute("PRAGMA journal_mode = WAL").fetchall()
    except sqlite3.Error as err:
        conn.close()
        raise LedgerError(f"ledger {path!r} is corrupted or unreadable: {err}") from err
    except BaseException:
        conn.close()
        raise
    return conn


def _check_schema(conn: sqlite3.Connection, path: str) -> None:
    tables = {
        str(name): str(kind)
        for name, kind in conn.execute("SELECT name, type FROM sqlite_master").fetchall()
    }
    if tables.get("meta") != "table":
        raise LedgerError(
            f"{path!r} is an SQLite database but not a sharpdp ledger (no meta table)"
        )
    meta = {str(k): v for k, v in conn.execute("SELECT key, value FROM meta").fetchall()}
    if meta.get("format") != FORMAT_NAME:
        raise LedgerError(
            f"{path!r} is not a sharpdp ledger (meta.format = {meta.get('format')!r})"
        )
    raw = meta.get("schema_version")
    if not (isinstance(raw, str) and raw.isdigit()):
        raise LedgerError(f"ledger {path!r} has an unreadable schema version {raw!r}")
    version = int(raw)
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"ledger {path!r} has schema version {version}, newer than this sharpdp reads "
            f"({SCHEMA_VERSION}); upgrade sharpdp"
        )
    if version != SCHEMA_VERSION:
        raise LedgerError(f"ledger {path!r} has unknown schema version {version}")
    if tables.get("spends") != "table":
        raise LedgerError(f"ledger {path!r} has no spends table")
    columns = tuple(str(row[1]) for row in conn.execute("PRAGMA table_info(spends)").fetchall())
    if columns != _COLUMNS:
        raise LedgerError(
            f"ledger {path!r}: the spends table has columns {columns}, not {_COLUMNS}"
        )
    check = conn.execute("PRAGMA quick_check").fetchall()
    if check != [("ok",)]:
        problems = "; ".join(str(row[0]) for row in check[:3])
        raise LedgerError(f"ledger {path!r} is corrupted: {problems}")
