"""The durable privacy ledger: append-only SQLite tables of spends and budgets, per account.

An *account* is a pair (analyst, period). Each spend row records *what was run* (the JSON
description of the guarantee or mechanism, see :mod:`sharpdp.accounting._serialize`), how many
times, when, by which library version, and the odometer's reading right after the spend.
Descriptions rather than bare ε values let a later, sharper analysis re-account the whole history.
Each budget row records an account's budget from then on, with the time and the reason; the
latest row is the account's budget, so the budget belongs to the ledger, not to whoever opens the
account. The file format (schema version 2) is documented in ``docs/ledger.md``.

Storage: an SQLite file (the default, :class:`Ledger`), or — for several server processes or
machines — a PostgreSQL database (``Ledger("postgresql://...")`` returns a :class:`PostgresLedger`,
whose storage is :mod:`sharpdp.accounting._postgres`; ``docs/ledger.md``, section "PostgreSQL").
Both run the same logic below; the storage hooks (``_fetch``, ``_insert``, ``_begin``,
``_commit``, ``_rollback``, ``_errors``) are all that differs. The guarantees below are SQLite's;
PostgreSQL's are the same with a per-account advisory lock in place of ``BEGIN IMMEDIATE``.

Guarantees (principle 6, "budget is durable"):

* :meth:`Ledger.append` runs ``BEGIN IMMEDIATE`` → read every row of the account not yet seen
  (also those written by other processes) and its latest budget → ask the caller's ``decide``
  callback for the post-spend reading (it raises to refuse) → ``INSERT`` → ``COMMIT``, all in one
  transaction. ``BEGIN IMMEDIATE`` takes SQLite's write lock, so concurrent spenders on one file
  (threads or processes) serialise and each decision sees every committed spend and the budget
  in force: they can never overspend together. A trigger refuses any spend row whose budget is not
  the account's recorded one, whoever writes it.
* Budgets are recorded the same way (:meth:`Ledger.open_account`, :meth:`Ledger.set_budget`):
  of two processes opening a new account with different budgets, exactly one records its budget.
* The database runs in WAL mode with ``synchronous=FULL``: a commit is on disk before
  :meth:`~Ledger.append` returns. A crash at any point leaves either the whole row or nothing.
* A refused or failed append rolls back and writes nothing.
* Opening validates the file read-only first (SQLite header, format name, schema version, tables,
  ``PRAGMA quick_check``, every row's types and descriptions); a file that fails raises
  :class:`~sharpdp.errors.LedgerError` and is left byte-for-byte untouched. A valid file of schema
  version 1 is then migrated to version 2 in one transaction (see ``docs/ledger.md``). A new
  ledger is built in a temporary file and hard-linked into place, so a ledger file is never seen
  half-initialised and two processes creating the same ledger at once agree on one file.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, cast

from sharpdp import _validate
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

if TYPE_CHECKING:
    from sharpdp.accounting._postgres import PostgresStore

__all__ = [
    "FORMAT_NAME",
    "MAX_COUNT",
    "SCHEMA_VERSION",
    "BudgetRecord",
    "Entry",
    "History",
    "Ledger",
    "PostgresLedger",
    "Reading",
    "dumps",
    "from_description",
    "known_types",
    "loads",
    "register_type",
    "to_description",
]

Measure = Literal["epsilon", "rho"]

_SQLITE_MAGIC = b"SQLite format 3\x00"

_COLUMNS = COLUMNS
_BUDGET_COLUMNS = BUDGET_COLUMNS
_BUDGET_TRIGGER = BUDGET_TRIGGER

# Version 1: meta, spends and its index. Statements are kept separate (a trigger body has ';').
_SCHEMA_V1 = (
    """CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
)""",
    """CREATE TABLE spends (
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
)""",
    "CREATE INDEX spends_by_account ON spends (analyst, period, id)",
)

# Version 2 adds these to version 1 (a new file runs both; a migration runs these).
_SCHEMA_V2 = (
    """CREATE TABLE budgets (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    analyst         TEXT    NOT NULL CHECK (typeof(analyst) = 'text' AND length(analyst) > 0),
    period          TEXT    NOT NULL CHECK (typeof(period) = 'text' AND length(period) > 0),
    budget          TEXT    NOT NULL CHECK (typeof(budget) = 'text'),
    created_at      TEXT    NOT NULL CHECK (typeof(created_at) = 'text'),
    reason          TEXT    NOT NULL CHECK (typeof(reason) = 'text' AND length(reason) > 0),
    library_version TEXT    NOT NULL CHECK (typeof(library_version) = 'text')
)""",
    "CREATE INDEX budgets_by_account ON budgets (analyst, period, id)",
    f"""CREATE TRIGGER {_BUDGET_TRIGGER} BEFORE INSERT ON spends
WHEN NEW.budget IS NOT (
    SELECT budget FROM budgets WHERE analyst = NEW.analyst AND period = NEW.period
    ORDER BY id DESC LIMIT 1
)
BEGIN
    SELECT RAISE(ABORT, 'sharpdp ledger: a spend must name its account''s recorded budget');
END""",
)

# Rows a version-1 reader cannot interpret (the CHECK constraints keep our own writes out of here;
# this catches files edited by other tools). SQLite's datetime() also takes a Julian day number
# or 'now', which are no ISO timestamps: the GLOB asks for the date that every reader parses.
_BAD_ROWS = """
SELECT id FROM spends WHERE
    typeof(analyst) != 'text' OR length(analyst) = 0
    OR typeof(period) != 'text' OR length(period) = 0
    OR typeof(item) != 'text'
    OR typeof(count) != 'integer' OR count < 1
    OR typeof(created_at) != 'text' OR datetime(created_at) IS NULL
    OR created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
    OR typeof(measure) != 'text' OR measure NOT IN ('epsilon', 'rho')
    OR (measure = 'epsilon' AND typeof(at_delta) NOT IN ('real', 'integer'))
    OR (measure = 'rho' AND at_delta IS NOT NULL)
    OR typeof(spent_after) NOT IN ('real', 'integer')
    OR typeof(budget) != 'text'
    OR typeof(library_version) != 'text'
LIMIT 1
"""

_BAD_BUDGET_ROWS = """
SELECT id FROM budgets WHERE
    typeof(analyst) != 'text' OR length(analyst) = 0
    OR typeof(period) != 'text' OR length(period) = 0
    OR typeof(budget) != 'text'
    OR typeof(created_at) != 'text' OR datetime(created_at) IS NULL
    OR created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
    OR typeof(reason) != 'text' OR length(reason) = 0
    OR typeof(library_version) != 'text'
LIMIT 1
"""

#: Decoded descriptions kept per ledger (distinct texts; cleared past this size).
_DECODE_CACHE_LIMIT = 100_000
#: The most runs one spend records: the ledgers' count column is a signed 64-bit integer.
MAX_COUNT = 2**63 - 1
#: Seconds an opener waits for a ledger's second hard link to go (one being created has one).
_LINK_WAIT = 2.0


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
class BudgetRecord:
    """One recorded budget of an account (a row of the ``budgets`` table).

    The latest record of an account is its budget; earlier ones are its history of changes.

    Attributes:
        id: the row id (increasing in commit order, never reused).
        analyst: the account's analyst.
        period: the account's period label.
        budget: the budget (decoded from its description).
        timestamp: the commit time (UTC): the budget is in force from then on.
        reason: why it was recorded (the first accountant's opening, an explicit change, a
            migration from schema version 1).
        library_version: the sharpdp version that wrote the row.
    """

    id: int
    analyst: str
    period: str
    budget: Guarantee
    timestamp: datetime
    reason: str
    library_version: str


@dataclass(frozen=True, slots=True)
class Reading:
    """What a ``decide`` callback of :meth:`Ledger.append` returns to accept a spend.

    Attributes:
        spent_after: the account's odometer just after the spend, in ``measure`` (an upper bound).
        measure: ``"epsilon"`` (ε at δ = ``at_delta``) or ``"rho"`` (zCDP ρ), the currency of the
            budget the spend was checked against.
        at_delta: the δ of an ε reading (``None`` for ρ).

    Raises:
        InvalidParameter: an unknown measure, or ``at_delta`` given for ρ / missing for ε.
        NumericalError: a reading that is not a number (a bug; it is never recorded).
    """

    spent_after: float
    measure: Measure
    at_delta: float | None

    def __post_init__(self) -> None:
        reading = self.spent_after
        if isinstance(reading, bool) or not isinstance(reading, float | int) or math.isnan(reading):
            raise NumericalError(f"the odometer reading {reading!r} is not a number (a bug)")
        if self.measure not in ("epsilon", "rho"):
            raise InvalidParameter(f"measure must be 'epsilon' or 'rho', got {self.measure!r}")
        if (self.measure == "epsilon") != (self.at_delta is not None):
            raise InvalidParameter(
                f"at_delta must be given exactly for epsilon readings, got {self.at_delta!r}"
            )
        object.__setattr__(self, "spent_after", float(reading) + 0.0)
        if self.at_delta is not None:
            object.__setattr__(self, "at_delta", _validate.real("at_delta", self.at_delta))


@dataclass(frozen=True, slots=True)
class History:
    """The spends of one account, with equal descriptions grouped, and its budget (a snapshot).

    Attributes:
        analyst: the analyst.
        period: the period label.
        last_id: the largest spend row id of the account (0 when it is empty); the account's rows
            are append-only, so ``last_id`` identifies the snapshot of its spends.
        entries: the number of spend rows.
        counts: a read-only mapping item → total count, one key per distinct description, in
            order of first use.
        budget: the account's budget in force (its latest :class:`BudgetRecord`), or ``None``
            when no budget is recorded for it.
    """

    analyst: str
    period: str
    last_id: int
    entries: int
    counts: Mapping[Guarantee, int]
    budget: BudgetRecord | None = None

    @property
    def items(self) -> tuple[tuple[Guarantee, int], ...]:
        """``(item, total count)`` pairs; ``compose(items)`` is the composition of the history."""
        return tuple(self.counts.items())


class _Account:
    """Cached, grouped history of one (analyst, period), built from rows with id ≤ last_id, and
    the latest budget record seen (with its exact description text, which spends must repeat).

    Snapshots share the counts dictionary until the next change, which copies it first
    (copy-on-write), so a published snapshot never changes and costs no per-item allocation.
    """

    __slots__ = ("_published", "budget", "budget_text", "counts", "entries", "last_id")

    def __init__(self) -> None:
        self.last_id = 0
        self.entries = 0
        self.counts: dict[Guarantee, int] = {}
        self._published: Mapping[Guarantee, int] | None = None
        self.budget: BudgetRecord | None = None
        self.budget_text = ""

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
        return History(analyst, period, self.last_id, self.entries, self._published, self.budget)


def is_postgres_url(target: str) -> bool:
    """Whether ``target`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return target.startswith(("postgresql://", "postgres://"))


def account_name(name: str, value: object) -> str:
    """Validate an analyst or period label: a non-empty string (see :func:`_storable`)."""
    if not isinstance(value, str) or not value:
        raise InvalidParameter(f"{name} must be a non-empty string, got {value!r}")
    return _storable(name, value)


def _storable(name: str, value: str) -> str:
    """``value`` if a ledger can store it as text: no NUL (SQLite's length() stops at one, so
    "\x00x" failed the schema's checks as a LedgerError) and valid Unicode (a lone surrogate
    cannot be encoded: a raw UnicodeEncodeError)."""
    if "\x00" in value:
        raise InvalidParameter(f"{name} must not contain NUL characters, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParameter(f"{name} must be valid Unicode text, got {value!r}") from None
    return value


class Ledger:
    """A durable SQLite ledger of privacy spends and budgets, shared safely by threads and processes.

    Args:
        path: the ledger file, or ``None`` (or ``":memory:"``) for an in-memory ledger that uses
            the same code path and lives as long as this object. A ``postgresql://`` (or
            ``postgres://``) URL opens a :class:`PostgresLedger` instead (same interface).
        create: create the file when it does not exist (``False``: raise :class:`LedgerError`
            instead, so that a mistyped path never starts a fresh budget).
        timeout: seconds to wait for another writer's lock before raising :class:`LedgerError`.

    A valid file of schema version 1 is migrated to version 2 when opened (one transaction; see
    ``docs/ledger.md``): processes of older sharpdp versions then refuse it.

    Raises:
        LedgerError: the file is not a sharpdp ledger, is corrupted, has an unknown (newer) schema
            version, or cannot be opened; the file is left untouched.
    """

    __slots__ = ("_accounts", "_conn", "_decoded", "_label", "_lock", "_path")

    def __new__(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        timeout: float = 30.0,
    ) -> Self:
        # A ``postgresql://`` URL selects the PostgreSQL storage (the same interface and logic).
        if cls is Ledger and isinstance(path, str) and is_postgres_url(path):
            return cast(Self, object.__new__(PostgresLedger))
        return object.__new__(cls)

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
        if path is None or (isinstance(path, str) and path == ":memory:"):
            self._init_state(None, repr(None))
            self._conn = _connect(":memory:", seconds, uri=False)
            try:
                _initialise(self._conn)
            except sqlite3.Error as err:
                self._conn.close()
                raise LedgerError(f"cannot initialise an in-memory ledger: {err}") from err
            version = SCHEMA_VERSION
        else:
            if not isinstance(path, str | os.PathLike):
                raise InvalidParameter(f"path must be a file path or None, got {path!r}")
            absolute = os.path.abspath(_file_path(path))
            self._init_state(absolute, repr(absolute))
            if not os.path.lexists(absolute):
                if not create:
                    raise LedgerError(f"ledger {absolute!r} does not exist (create=False)")
                _create_file(absolute)
            self._conn, version = _open_file(absolute, seconds)
        try:
            self._validate_rows(version)
            self._conn.execute("PRAGMA synchronous = FULL")
            if version == 1:
                self._migrate()
        except BaseException:
            self._conn.close()
            raise

    def _init_state(self, path: str | None, label: str) -> None:
        """The storage-independent state: the lock, the account cache, the decoded texts."""
        self._path = path
        self._label = label  # names the ledger in messages: ``ledger {label}: ...``
        self._lock = threading.RLock()
        self._accounts: dict[tuple[str, str], _Account] = {}
        self._decoded: dict[str, Guarantee] = {}

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
        """The grouped history of one account and its budget, including rows other processes
        have committed.

        Only rows not read before are fetched (the grouped history is cached per account).
        """
        a, p = account_name("analyst", analyst), account_name("period", period)
        with self._lock, self._errors("read"):
            return self._refresh(a, p).snapshot(a, p)

    def budget(self, analyst: str, period: str) -> BudgetRecord | None:
        """The account's budget in force (its latest record), or ``None`` if none is recorded."""
        a, p = account_name("analyst", analyst), account_name("period", period)
        with self._lock, self._errors("read"):
            return self._refresh(a, p).budget

    def budgets(
        self, analyst: str | None = None, period: str | None = None
    ) -> tuple[BudgetRecord, ...]:
        """Every recorded budget, in commit order, optionally of one analyst and/or one period.

        Per account, the last record is the budget in force and the earlier ones its changes.
        """
        where, args = _filter(analyst, period)
        sql = f"SELECT {', '.join(_BUDGET_COLUMNS)} FROM budgets{where} ORDER BY id"
        with self._lock, self._errors("read"):
            return tuple(self._budget_record(row) for row in self._fetch(sql, args))

    def entries(self, analyst: str | None = None, period: str | None = None) -> tuple[Entry, ...]:
        """Every recorded spend, in commit order, optionally of one analyst and/or one period.

        Each :class:`Entry` shows the odometer after the spend (``spent_after``) and the budget
        it was checked against (``budget``).
        """
        where, args = _filter(analyst, period)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM spends{where} ORDER BY id"
        with self._lock, self._errors("read"):
            return tuple(self._entry(row) for row in self._fetch(sql, args))

    def accounts(self) -> tuple[tuple[str, str], ...]:
        """The (analyst, period) pairs that have a recorded budget or at least one spend, sorted."""
        with self._lock, self._errors("read"):
            rows = self._fetch(
                "SELECT analyst, period FROM spends UNION SELECT analyst, period FROM budgets "
                "ORDER BY analyst, period"
            )
        return tuple((str(a), str(p)) for a, p in rows)

    # -- writing ----------------------------------------------------------------------------------
    def append(
        self,
        analyst: str,
        period: str,
        item: Guarantee,
        count: int,
        *,
        decide: Callable[[History], Reading],
    ) -> Entry:
        """Atomically check and record one spend against the account's recorded budget.

        In one ``BEGIN IMMEDIATE`` transaction: refresh the account's history and budget (every
        committed row, whoever wrote it), call ``decide(history)`` — which reads the history
        against ``history.budget`` and returns the :class:`Reading` after the spend, or raises
        to refuse it — then insert the row (with the budget's description) and commit durably. If
        anything raises (the refusal, a bad description, an I/O error) the transaction rolls back
        and nothing is written. The item is validated and described *before* the lock is taken.

        Args:
            analyst: the account's analyst.
            period: the account's period label.
            item: the guarantee or mechanism spent.
            count: how many times (≥ 1).
            decide: ``History → Reading``; raises (e.g. :class:`~sharpdp.BudgetExceeded`) to
                refuse.

        Returns:
            The recorded :class:`Entry`.

        Raises:
            LedgerError: no budget is recorded for the account (record one first with
                :meth:`open_account` or :meth:`set_budget`), or the ledger cannot be written.
        """
        a, p = account_name("analyst", analyst), account_name("period", period)
        k = _validate.integer("count", count, minimum=1, maximum=MAX_COUNT)
        item_text = dumps(item)
        version = _library_version()
        with self._lock:
            with self._errors("begin a spend on"):
                self._begin(a, p)
            try:
                with self._errors("record a spend in"):
                    account = self._refresh(a, p)
                record = account.budget
                if record is None:
                    raise LedgerError(
                        f"{self!r}: analyst {a!r} (period {p!r}) has no recorded budget; record "
                        "one before spending"
                    )
                reading = decide(account.snapshot(a, p))
                if not isinstance(reading, Reading):
                    raise InvalidParameter(f"decide must return a Reading, got {reading!r}")
                stamp = datetime.now(UTC)
                with self._errors("record a spend in"):
                    row_id = self._insert(
                        "INSERT INTO spends (analyst, period, item, count, created_at, measure, "
                        "at_delta, spent_after, budget, library_version) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            a,
                            p,
                            item_text,
                            k,
                            _isoformat(stamp),
                            reading.measure,
                            reading.at_delta,
                            reading.spent_after,
                            account.budget_text,
                            version,
                        ),
                    )
                    self._commit()
            except BaseException:
                self._rollback()
                raise
            account.add(row_id, item, k)
        return Entry(
            row_id,
            a,
            p,
            item,
            k,
            stamp,
            reading.measure,
            reading.at_delta,
            reading.spent_after,
            record.budget,
            version,
        )

    def open_account(
        self, analyst: str, period: str, budget: Guarantee, *, reason: str
    ) -> BudgetRecord:
        """The account's budget record, recording ``budget`` first if the account has none.

        Checking for a record and inserting one happen in one ``BEGIN IMMEDIATE`` transaction,
        so of several processes opening a new account at once exactly one records its budget;
        the others get that record back. The caller compares the returned budget with its own.

        Args:
            analyst: the account's analyst.
            period: the account's period label.
            budget: the budget to record if the account has none.
            reason: why (stored with the record; a non-empty string).

        Returns:
            The account's budget in force after the call (``budget``'s new record, or the record
            that was already there, whatever its budget).
        """
        a, p = account_name("analyst", analyst), account_name("period", period)
        text, why = dumps(budget), _reason(reason)
        existing = self.budget(a, p)  # no lock needed to read: budgets are append-only
        if existing is not None:
            return existing
        return self._record_budget(a, p, budget, text, why, check=None, only_if_none=True)

    def set_budget(
        self,
        analyst: str,
        period: str,
        budget: Guarantee,
        *,
        reason: str,
        check: Callable[[History], object] | None = None,
    ) -> BudgetRecord:
        """Record a new budget for the account (in force from now on), with a reason.

        In one ``BEGIN IMMEDIATE`` transaction: refresh the account's history, call
        ``check(history)`` — which raises to refuse (the accountant refuses a budget that the
        history already exceeds) — then insert the budget row and commit durably. A refusal
        writes nothing.

        Args:
            analyst: the account's analyst.
            period: the account's period label.
            budget: the new budget.
            reason: why it changes (stored with the record; a non-empty string).
            check: ``History → anything``; raises to refuse. ``None``: no check.

        Returns:
            The new :class:`BudgetRecord`.
        """
        a, p = account_name("analyst", analyst), account_name("period", period)
        text, why = dumps(budget), _reason(reason)
        return self._record_budget(a, p, budget, text, why, check=check, only_if_none=False)

    # -- internals --------------------------------------------------------------------------------
    def _record_budget(
        self,
        analyst: str,
        period: str,
        budget: Guarantee,
        text: str,
        reason: str,
        *,
        check: Callable[[History], object] | None,
        only_if_none: bool,
    ) -> BudgetRecord:
        version = _library_version()
        with self._lock:
            with self._errors("begin recording a budget in"):
                self._begin(analyst, period)
            try:
                with self._errors("record a budget in"):
                    account = self._refresh(analyst, period)
                if only_if_none and account.budget is not None:
                    self._rollback()  # another process recorded one first: theirs stands
                    return account.budget
                if check is not None:
                    check(account.snapshot(analyst, period))
                stamp = datetime.now(UTC)
                with self._errors("record a budget in"):
                    row_id = self._insert(
                        "INSERT INTO budgets (analyst, period, budget, created_at, reason, "
                        "library_version) VALUES (?, ?, ?, ?, ?, ?)",
                        (analyst, period, text, _isoformat(stamp), reason, version),
                    )
                    self._commit()
            except BaseException:
                self._rollback()
                raise
            record = BudgetRecord(row_id, analyst, period, budget, stamp, reason, version)
            account.budget, account.budget_text = record, text
        return record

    # -- storage hooks: SQLite here; PostgresLedger overrides exactly these -------------------------
    # Every statement of the shared logic goes through them, written with ``?`` placeholders.

    def _fetch(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and return its rows."""
        return self._conn.execute(sql, tuple(args)).fetchall()

    def _insert(self, sql: str, args: Sequence[object]) -> int:
        """Run one ``INSERT`` of one row and return its new ``id``."""
        row_id = self._conn.execute(sql, tuple(args)).lastrowid
        if row_id is None:
            raise LedgerError(f"{self!r}: SQLite reported no row id for the insert")
        return row_id

    def _begin(self, analyst: str, period: str) -> None:
        """Start a write transaction in which no other writer of the account can commit.

        SQLite: ``BEGIN IMMEDIATE`` takes the file's write lock (every account of the file),
        waiting up to ``timeout``.
        """
        self._conn.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        """Commit the write transaction durably."""
        self._conn.execute("COMMIT")

    def _rollback(self) -> None:
        """Roll back the write transaction, if one is open (never raises)."""
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

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
                    f"ledger {self._label}: row {row_id} has an unreadable {what}: {err}"
                ) from err
            if len(self._decoded) >= _DECODE_CACHE_LIMIT:
                self._decoded.clear()
            self._decoded[text] = item
        return item

    def _refresh(self, analyst: str, period: str) -> _Account:
        """Fold the account's rows newer than the cache into it (all or nothing)."""
        account = self._accounts.get((analyst, period))
        last = 0 if account is None else account.last_id
        last_budget = 0 if account is None or account.budget is None else account.budget.id
        rows = self._fetch(
            "SELECT id, item, count FROM spends WHERE analyst = ? AND period = ? AND id > ? "
            "ORDER BY id",
            (analyst, period, last),
        )
        budget_rows = self._fetch(
            f"SELECT {', '.join(_BUDGET_COLUMNS)} FROM budgets "
            "WHERE analyst = ? AND period = ? AND id > ? ORDER BY id DESC LIMIT 1",
            (analyst, period, last_budget),
        )
        budget_row = budget_rows[0] if budget_rows else None
        if account is not None and not rows and budget_row is None:
            return account
        decoded: list[tuple[int, Guarantee, int]] = []
        for row_id, text, count in rows:
            if not isinstance(text, str) or isinstance(count, bool) or not isinstance(count, int):
                raise LedgerError(f"ledger {self._label}: row {row_id} has malformed columns")
            if count < 1:
                raise LedgerError(f"ledger {self._label}: row {row_id} has count {count} < 1")
            decoded.append((row_id, self._decode(text, "item description", row_id), count))
        record = None if budget_row is None else self._budget_record(budget_row)
        if account is None:
            account = _Account()
            self._accounts[(analyst, period)] = account
        for row_id, item, count in decoded:
            account.add(row_id, item, count)
        if record is not None and budget_row is not None:
            account.budget, account.budget_text = record, str(budget_row[3])
        return account

    def _timestamp(self, created: object, row_id: int, table: str) -> datetime:
        try:
            stamp = datetime.fromisoformat(str(created))
        except ValueError as err:
            raise LedgerError(
                f"ledger {self._label}: {table} row {row_id} has a bad timestamp"
            ) from err
        return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp

    def _budget_record(self, row: tuple[object, ...]) -> BudgetRecord:
        row_id, analyst, period, budget, created, reason, version = row
        rid = int(row_id)  # type: ignore[call-overload]
        if not (isinstance(budget, str) and isinstance(reason, str) and reason):
            raise LedgerError(f"ledger {self._label}: budgets row {rid} has malformed columns")
        return BudgetRecord(
            rid,
            str(analyst),
            str(period),
            self._decode(budget, "budget description (budgets table)", rid),
            self._timestamp(created, rid, "budgets"),
            reason,
            str(version),
        )

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
        return Entry(
            rid,
            str(analyst),
            str(period),
            self._decode(str(item), "item description", rid),
            int(count),  # type: ignore[call-overload]
            self._timestamp(created, rid, "spends"),
            "rho" if measure == "rho" else "epsilon",
            None if at_delta is None else float(at_delta),  # type: ignore[arg-type]
            float(spent),  # type: ignore[arg-type]
            self._decode(str(budget), "budget description", rid),
            str(version),
        )

    def _validate_rows(self, version: int) -> None:
        """Every row must be interpretable (types, descriptions); nothing is written."""
        with self._errors("read"):
            bad = self._conn.execute(_BAD_ROWS).fetchone()
            if bad is not None:
                raise LedgerError(f"ledger {self._label}: row {bad[0]} has malformed columns")
            if version >= 2:
                bad = self._conn.execute(_BAD_BUDGET_ROWS).fetchone()
                if bad is not None:
                    raise LedgerError(
                        f"ledger {self._label}: budgets row {bad[0]} has malformed columns"
                    )
            self._check_descriptions(budgets=version >= 2)

    def _check_descriptions(self, *, budgets: bool) -> None:
        """Every distinct description must decode (spends' items and budgets; ``budgets``: also
        the budgets table's). Raises :class:`LedgerError` naming the first bad row."""
        for what, column in (("item description", "item"), ("budget description", "budget")):
            rows = self._fetch(f"SELECT MIN(id), {column} FROM spends GROUP BY {column}")
            for row_id, text in rows:
                self._decode(text, what, row_id)
        if budgets:
            rows = self._fetch("SELECT MIN(id), budget FROM budgets GROUP BY budget")
            for row_id, text in rows:
                self._decode(text, "budget description (budgets table)", row_id)

    def _migrate(self) -> None:
        """Migrate a validated schema-1 file to schema 2, in one transaction (all or nothing).

        Adds the ``budgets`` table, its index and the spend trigger; records for every account
        the budget of its first spend (the budget it was opened with); sets ``schema_version`` to
        2. The version is re-read under the write lock: of processes opening the same schema-1
        file at once, the first migrates and the others find version 2 and check it.
        """
        path = self._path or ":memory:"
        with self._lock:
            with self._errors("migrate"):
                self._conn.execute("BEGIN IMMEDIATE")
            try:
                with self._errors("migrate"):
                    row = self._conn.execute(
                        "SELECT value FROM meta WHERE key = 'schema_version'"
                    ).fetchone()
                    if row == (str(SCHEMA_VERSION),):  # another process migrated first
                        _check_schema(self._conn, path)
                        self._validate_rows(SCHEMA_VERSION)
                        self._conn.execute("ROLLBACK")
                        return
                    if row != ("1",):
                        raise LedgerError(
                            f"ledger {path!r}: schema version changed to {row!r} while opening"
                        )
                    for statement in _SCHEMA_V2:
                        self._conn.execute(statement)
                    stamp, version = _isoformat(datetime.now(UTC)), _library_version()
                    self._conn.executemany(
                        "INSERT INTO budgets (analyst, period, budget, created_at, reason, "
                        "library_version) VALUES (?, ?, ?, ?, ?, ?)",
                        [(a, p, text, stamp, why, version) for a, p, text, why in self._seeds()],
                    )
                    self._conn.execute(
                        "UPDATE meta SET value = ? WHERE key = 'schema_version'",
                        (str(SCHEMA_VERSION),),
                    )
                    self._conn.executemany(
                        "INSERT INTO meta (key, value) VALUES (?, ?)",
                        [
                            ("migrated_from_1_at", stamp),
                            ("migrated_from_1_by", f"sharpdp {version}"),
                        ],
                    )
                    self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _seeds(self) -> list[tuple[str, str, str, str]]:
        """(analyst, period, budget text, reason) of each schema-1 account: its first spend's
        budget. Later spends checked against other budgets (the overspend schema 1 allowed) are
        named in the reason, so the record shows them and the odometer reads over the budget."""
        first: dict[tuple[str, str], tuple[int, str, Guarantee]] = {}
        other: dict[tuple[str, str], list[int]] = {}
        rows = self._conn.execute("SELECT id, analyst, period, budget FROM spends ORDER BY id")
        for row_id, analyst, period, text in rows:
            key = (str(analyst), str(period))
            budget = self._decode(str(text), "budget description", int(row_id))
            seen = first.get(key)
            if seen is None:
                first[key] = (int(row_id), str(text), budget)
            elif not _same(seen[2], budget):
                other.setdefault(key, []).append(int(row_id))
        seeds = []
        for key, (row_id, text, _budget) in first.items():
            reason = (
                f"migrated from ledger schema version 1: the budget of the account's first spend "
                f"(row {row_id})"
            )
            later = other.get(key)
            if later:
                reason += (
                    f"; {len(later)} later spend(s) were checked against other budgets "
                    f"(rows {', '.join(map(str, later[:10]))}{', ...' if len(later) > 10 else ''})"
                )
            seeds.append((*key, text, reason))
        return seeds


class PostgresLedger(Ledger):
    """A durable ledger in a PostgreSQL database, shared safely by processes on many machines.

    ``Ledger(url)`` with a ``postgresql://`` (or ``postgres://``) URL returns one of these, and an
    :class:`~sharpdp.accounting.accountant.Accountant` accepts the URL as its ``ledger``. It *is*
    a :class:`Ledger`: the same methods, caching, descriptions and ``decide``/``check`` protocol;
    only the storage hooks differ (``sharpdp.accounting._postgres``; needs the ``postgres``
    extra, i.e. psycopg 3). The tables mirror the SQLite file's (schema version 2); see
    ``docs/ledger.md``, section "PostgreSQL".

    Guarantees: every write transaction takes the account's transaction-level advisory lock
    (``pg_advisory_xact_lock``) under READ COMMITTED before reading the account, so writers of
    one account serialise (on any machine) and each decision sees every committed spend and the
    budget in force; other accounts proceed in parallel. ``synchronous_commit = on``: a spend is
    flushed to the server's WAL before :meth:`append` returns. A trigger refuses any spend that
    does not name its account's recorded budget. Opening checks the tables and every description
    read-only; ``create=True`` creates missing tables in one transaction (concurrent creators
    agree on one ledger). Row ids increase in commit order per account (not across accounts).

    Args:
        path: a libpq URL, e.g. ``postgresql://sharpdp@db.internal:5432/privacy``. The tables
            live in the connection's current schema (``?options=-csearch_path%3Dname`` chooses
            another). The password, if any, never appears in messages, :attr:`path` or ``repr``.
        create: create the ledger's tables when the database has none (``False``: raise
            :class:`LedgerError`). The database itself must exist.
        timeout: seconds to wait for another writer's account lock (``lock_timeout``) and to
            connect, before raising :class:`LedgerError`.

    Raises:
        LedgerError: psycopg is not installed, the server cannot be reached, or the database
            holds ledger tables that are not a valid sharpdp ledger of a known schema version;
            nothing is written.
    """

    __slots__ = ("_store",)

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        timeout: float = 30.0,
    ) -> None:
        if not (isinstance(path, str) and is_postgres_url(path)):
            raise InvalidParameter(f"path must be a postgresql:// or postgres:// URL, got {path!r}")
        seconds = _validate.nonnegative("timeout", timeout)
        if not isinstance(create, bool):
            raise InvalidParameter(f"create must be a bool, got {create!r}")
        try:
            from sharpdp.accounting._postgres import PostgresStore, redact
        except ModuleNotFoundError as err:
            if (err.name or "").partition(".")[0] != "psycopg":
                raise
            raise LedgerError(
                "a postgresql:// ledger needs the psycopg driver: pip install 'sharpdp[postgres]'"
            ) from err
        shown = redact(path)
        self._init_state(shown, repr(shown))
        self._store: PostgresStore = PostgresStore(path, shown, seconds)
        try:
            with self._errors("open"):
                if not self._store.tables():
                    if not create:
                        raise LedgerError(
                            f"ledger {shown!r} does not exist: the database has no sharpdp "
                            "ledger tables (create=False)"
                        )
                    self._store.create()
                self._store.check()
                self._check_descriptions(budgets=True)
        except BaseException:
            self._store.close()
            raise

    @property
    def path(self) -> str | None:
        """The ledger's URL, without its password."""
        return self._path

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._store.close()

    def __repr__(self) -> str:
        return f"PostgresLedger({self._path!r})"

    # -- storage hooks: PostgreSQL ----------------------------------------------------------------
    def _fetch(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return self._store.fetch(sql, args)

    def _insert(self, sql: str, args: Sequence[object]) -> int:
        return self._store.insert(sql, args)

    def _begin(self, analyst: str, period: str) -> None:
        """``BEGIN ISOLATION LEVEL READ COMMITTED`` and take the account's advisory lock."""
        self._store.begin_account(analyst, period)

    def _commit(self) -> None:
        self._store.commit()

    def _rollback(self) -> None:
        self._store.rollback()

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn PostgreSQL failures into LedgerError naming the ledger."""
        with self._store.errors(action, repr(self)):
            yield


def _same(a: Guarantee, b: Guarantee) -> bool:
    """Whether two budgets are the same (same type and parameters)."""
    return type(a) is type(b) and a == b


def _reason(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidParameter(f"reason must be a non-empty string, got {reason!r}")
    return _storable("reason", reason)


_isoformat = isoformat
_library_version = library_version


def _filter(analyst: str | None, period: str | None) -> tuple[str, list[str]]:
    """A WHERE clause (and its arguments) selecting one analyst and/or one period."""
    clauses, args = [], []
    if analyst is not None:
        clauses.append("analyst = ?")
        args.append(account_name("analyst", analyst))
    if period is not None:
        clauses.append("period = ?")
        args.append(account_name("period", period))
    return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), args


# -- opening and creating files -------------------------------------------------------------------


def _connect(target: str, timeout: float, *, uri: bool) -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions (we issue BEGIN IMMEDIATE / COMMIT ourselves);
    # check_same_thread=False: the Ledger's own lock serialises every use of the connection.
    return sqlite3.connect(
        target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
    )


def _initialise(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in (*_SCHEMA_V1, *_SCHEMA_V2):
            conn.execute(statement)
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("format", FORMAT_NAME),
                ("schema_version", str(SCHEMA_VERSION)),
                ("created_at", _isoformat(datetime.now(UTC))),
                ("created_by", f"sharpdp {_library_version()}"),
            ],
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _file_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a file-system path, or InvalidParameter (:func:`_validate.file_path`)."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise InvalidParameter(f"path must be a text path, got {path!r}")
    return _validate.file_path("path", text)


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
            os.unlink(tmp)  # at once: until then the ledger has two links (see _open_file)
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
        # (the error names the temporary file the ledger is built in: name the directory)
        why = err.strerror or type(err).__name__
        raise LedgerError(f"cannot create ledger {path!r} in {directory!r}: {why}") from err
    finally:
        for leftover in (tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"):
            # (any OSError: on a read-only file system unlink fails with EROFS, which replaced
            # the LedgerError above with an unexpected OSError)
            with contextlib.suppress(OSError):
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


def _open_file(path: str, timeout: float) -> tuple[sqlite3.Connection, int]:
    """Open and check an existing ledger; writes nothing until it has passed every check.

    Returns the connection and the file's schema version (1 or 2).
    """
    if not os.path.isfile(path):
        raise LedgerError(f"ledger {path!r} is not a regular file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)  # the SQLite database header
            stat = os.fstat(fh.fileno())
            size = stat.st_size
    except OSError as err:
        raise LedgerError(f"cannot read ledger {path!r}: {err}") from err
    links = stat.st_nlink
    # (a ledger being created has a second link, its temporary name, for the moment between
    # _create_file's link and unlink: another process opening it then waits that moment out)
    deadline = time.monotonic() + min(timeout, _LINK_WAIT)
    while links > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
        try:
            links = os.stat(path).st_nlink
        except OSError as err:
            raise LedgerError(f"cannot read ledger {path!r}: {err}") from err
    if links > 1:
        # SQLite names its write-ahead log and locks after the path: through two hard links,
        # two processes spent 2.5 each from a budget of 3, and the ledger kept one's rows
        raise LedgerError(
            f"ledger {path!r} has {links} hard links: SQLite keeps its write-ahead log "
            "and locks per path name, so spends through two names would not serialise; keep "
            "one name (a symbolic link is fine)"
        )
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
        version = _check_schema(conn, path)
        # A no-op for ledgers we created. Where WAL is unavailable SQLite keeps its rollback
        # journal, which with synchronous=FULL and BEGIN IMMEDIATE is just as durable and serial.
        _switch_to_wal(conn, timeout)
    except sqlite3.Error as err:
        conn.close()
        folder = os.path.dirname(os.path.abspath(path))
        if not (os.access(path, os.W_OK) and os.access(folder, os.W_OK)):
            raise LedgerError(
                f"cannot open ledger {path!r} ({err}): a ledger needs write access to its file "
                "and its directory, even to be read (SQLite keeps its write-ahead log beside it)"
            ) from err
        raise LedgerError(f"ledger {path!r} is corrupted or unreadable: {err}") from err
    except BaseException:
        conn.close()
        raise
    return conn, version


def _switch_to_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """``PRAGMA journal_mode = WAL``, retried while another opener holds the lock.

    Switching a rollback-journal file (e.g. a version-1 ledger) to WAL escalates a shared lock to
    an exclusive one. When two openers do so at once, SQLite answers one with SQLITE_BUSY at once,
    without waiting (its deadlock avoidance), so the busy timeout does not help. By the retry the
    other has switched the file, and the pragma is a no-op.
    """
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError as err:
            text = str(err).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.1)


def _check_schema(conn: sqlite3.Connection, path: str) -> int:
    """Check the file's format, schema version and tables (read-only); return the version.

    The reads run in one read transaction: read one by one, another opener's migration could
    commit between the table list and the version row, and a file being migrated would be
    reported broken ("version 2 but no budgets table").
    """
    if conn.in_transaction:  # the caller's transaction is the snapshot (e.g. the migration's)
        return _check_schema_snapshot(conn, path)
    conn.execute("BEGIN")
    try:
        return _check_schema_snapshot(conn, path)
    finally:
        conn.execute("ROLLBACK")


#: The budget trigger as sharpdp creates it (unchanged since schema version 2 began). SQLite keeps
#: a trigger's CREATE statement verbatim: another text is a trigger someone else wrote.
_TRIGGER_SQL = next(s for s in _SCHEMA_V2 if s.startswith("CREATE TRIGGER"))


def _check_schema_snapshot(conn: sqlite3.Connection, path: str) -> int:
    master = conn.execute("SELECT name, type, sql FROM sqlite_master").fetchall()
    tables = {str(name): str(kind) for name, kind, _ in master}
    statements = {str(name): sql for name, _, sql in master}
    if tables.get("meta") != "table":
        raise LedgerError(
            f"{path!r} is an SQLite database but not a sharpdp ledger (no meta table)"
        )
    meta = {str(k): v for k, v in conn.execute("SELECT key, value FROM meta").fetchall()}
    version = schema_version(meta, f"ledger {path!r}", (1, SCHEMA_VERSION))
    expected: dict[str, tuple[str, ...]] = {"spends": _COLUMNS}
    if version == 1:
        if "budgets" in tables:  # a migration would collide with it: not a file we wrote
            raise LedgerError(f"ledger {path!r} has schema version 1 but a budgets table")
    else:
        expected["budgets"] = _BUDGET_COLUMNS
    for table, wanted in expected.items():
        if tables.get(table) != "table":
            raise LedgerError(f"ledger {path!r} has no {table} table")
        columns = tuple(
            str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})").fetchall()
        )
        if columns != wanted:
            raise LedgerError(
                f"ledger {path!r}: the {table} table has columns {columns}, not {wanted}"
            )
    if version >= 2 and tables.get(_BUDGET_TRIGGER) != "trigger":
        raise LedgerError(f"ledger {path!r} has no {_BUDGET_TRIGGER} trigger")
    if version >= 2 and statements[_BUDGET_TRIGGER] != _TRIGGER_SQL:
        raise LedgerError(
            f"ledger {path!r}: its {_BUDGET_TRIGGER} trigger is not the one sharpdp creates "
            "(edited by another tool: it may no longer refuse a spend checked against another "
            "budget)"
        )
    check = conn.execute("PRAGMA quick_check").fetchall()
    if check != [("ok",)]:
        problems = "; ".join(str(row[0]) for row in check[:3])
        raise LedgerError(f"ledger {path!r} is corrupted: {problems}")
    return version
