"""The PostgreSQL ledger against a real server: a throwaway cluster per test session, no mocks.

The cluster is Debian's ``postgresql`` package (``.ci/run`` installs it), started in a temporary
directory on a free port (as the ``postgres`` user when running as root: initdb refuses root). Each
test gets a fresh database. Without the server binaries the tests skip — except in CI
(``CI=true``), where a missing PostgreSQL fails them. Expected values come from the documented
format (``docs/ledger.md``) read with psycopg directly, never from the ledger's reading of itself.

The concurrency target (200 concurrent spends, zero overspend) runs on both storages.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import pg_cluster
import sharpdp as sdp
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.ledger import (
    FORMAT_NAME,
    SCHEMA_VERSION,
    History,
    Ledger,
    PostgresLedger,
    Reading,
)


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """``postgresql://postgres@127.0.0.1:PORT``: a throwaway cluster for the session."""
    for cluster in pg_cluster.cluster():
        yield cluster.url


@pytest.fixture
def url(server: str) -> str:
    """A fresh, empty database of the session's cluster."""
    import psycopg

    name = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"


def raw(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows read (or a statement run) with psycopg directly, not through sharpdp."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, args)
        return cursor.fetchall() if cursor.description else []


def text(kind: str, **params: float) -> str:
    """A description written by hand from docs/ledger.md (canonical: sorted keys, no spaces)."""
    return json.dumps({"type": kind, "params": params}, sort_keys=True, separators=(",", ":"))


# -- the tables ------------------------------------------------------------------------------------


def test_url_selects_postgres_and_creates_the_documented_tables(url: str) -> None:
    with Ledger(url) as ledger:
        assert isinstance(ledger, PostgresLedger)
        assert isinstance(ledger, Ledger)
        assert ledger.path == url
        assert repr(ledger) == f"PostgresLedger({url!r})"
    meta = dict(raw(url, "SELECT key, value FROM meta"))
    assert meta["format"] == FORMAT_NAME == "sharpdp-ledger"
    assert meta["schema_version"] == str(SCHEMA_VERSION) == "2"
    assert meta["created_by"] == f"sharpdp {sdp.__version__}"
    columns = raw(
        url,
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = "
        "'public' AND table_name IN ('spends', 'budgets') ORDER BY table_name, ordinal_position",
    )
    assert [c for t, c in columns if t == "spends"] == [
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
    ]
    assert [c for t, c in columns if t == "budgets"] == [
        "id",
        "analyst",
        "period",
        "budget",
        "created_at",
        "reason",
        "library_version",
    ]
    assert raw(url, "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal") == [
        ("spends_check_budget",)
    ]
    # Opening again creates nothing more (and create=False opens an existing ledger).
    Ledger(url, create=False).close()
    assert len(raw(url, "SELECT * FROM meta")) == 4


def test_append_and_history(url: str) -> None:
    with Accountant(sdp.ApproxDP(5.0, 1e-6), ledger=url, analyst="ana", period="2026-01") as acc:
        entry = acc.spend(sdp.Gaussian(4.0), count=3)
        acc.spend(sdp.Gaussian(4.0))
        acc.spend(sdp.Laplace(2.0))
        assert [(e.item, e.count) for e in acc.history()] == [
            (sdp.Gaussian(4.0), 3),
            (sdp.Gaussian(4.0), 1),
            (sdp.Laplace(2.0), 1),
        ]
    rows = raw(url, "SELECT * FROM spends ORDER BY id")
    rid, analyst, period, item, count, created, measure, at_delta, spent, budget, version = rows[0]
    assert (rid, analyst, period, count, measure, at_delta) == (
        entry.id,
        "ana",
        "2026-01",
        3,
        "epsilon",
        1e-6,
    )
    assert json.loads(item)["params"]["sigma"] == 4.0
    assert budget == text("ApproxDP", delta=1e-6, epsilon=5.0)
    assert (spent, version) == (entry.spent_after, sdp.__version__)
    assert created == entry.timestamp.isoformat(timespec="microseconds")
    assert created.endswith("+00:00")
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    with Ledger(url) as ledger:
        history = ledger.history("ana", "2026-01")
        assert history.entries == 3
        assert history.items == ((sdp.Gaussian(4.0), 4), (sdp.Laplace(2.0), 1))
        assert history.last_id == rows[-1][0]
        assert history.budget is not None
        assert history.budget.budget == sdp.ApproxDP(5.0, 1e-6)
        Accountant(sdp.PureDP(9.0), ledger=ledger, analyst="bob").spend(sdp.PureDP(0.5))
        assert ledger.accounts() == (("ana", "2026-01"), ("bob", "all"))
        assert [e.analyst for e in ledger.entries()] == ["ana", "ana", "ana", "bob"]
        assert [e.item for e in ledger.entries("bob")] == [sdp.PureDP(0.5)]
        assert ledger.entries(period="none") == ()


def test_refused_spend_writes_nothing(url: str) -> None:
    with Accountant(sdp.PureDP(1.0), ledger=url, analyst="ana") as acc:
        acc.spend(sdp.PureDP(0.75))
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.PureDP(0.5))
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.Gaussian(1.0))  # no pure-DP bound: ε = inf
        assert acc.spend(sdp.PureDP(0.25)).spent_after == 1.0
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.PureDP(1e-9))
        assert acc.remaining() == 0.0
    assert [r[0] for r in raw(url, "SELECT spent_after FROM spends ORDER BY id")] == [0.75, 1.0]

    def fail(history: History) -> Reading:
        raise RuntimeError("decide failed")

    with Ledger(url) as ledger, pytest.raises(RuntimeError, match="decide failed"):
        ledger.append("ana", "all", sdp.PureDP(0.0), 1, decide=fail)
    assert raw(url, "SELECT COUNT(*) FROM spends") == [(2,)]


def test_budget_records(url: str) -> None:
    refusals: list[History] = []

    def refuse(history: History) -> None:
        refusals.append(history)
        raise sdp.BudgetExceeded("no")

    with Ledger(url) as ledger:
        assert ledger.budget("a", "p") is None
        first = ledger.open_account("a", "p", sdp.PureDP(1.0), reason="first opener")
        assert ledger.open_account("a", "p", sdp.PureDP(3.0), reason="second opener") == first
        assert ledger.accounts() == (("a", "p"),)
        raised = ledger.set_budget("a", "p", sdp.PureDP(2.0), reason="raised")
        with pytest.raises(sdp.BudgetExceeded):
            ledger.set_budget("a", "p", sdp.PureDP(9.0), reason="refused", check=refuse)
        assert refusals[0].budget == raised
        with pytest.raises(sdp.InvalidParameter, match="reason"):
            ledger.set_budget("a", "p", sdp.PureDP(2.0), reason=" ")
        assert ledger.budget("a", "p") == raised
        assert ledger.budgets() == (first, raised)
        assert ledger.budgets(analyst="b") == ()
        with pytest.raises(sdp.LedgerError, match="no recorded budget"):
            ledger.append("b", "p", sdp.PureDP(0.1), 1, decide=lambda h: Reading(0.1, "rho", None))
    rows = raw(url, "SELECT * FROM budgets ORDER BY id")
    assert [(r[1], r[2], json.loads(r[3]), r[5], r[6]) for r in rows] == [
        ("a", "p", {"type": "PureDP", "params": {"epsilon": 1.0}}, "first opener", sdp.__version__),
        ("a", "p", {"type": "PureDP", "params": {"epsilon": 2.0}}, "raised", sdp.__version__),
    ]
    assert [r[4] for r in rows] == [
        first.timestamp.isoformat(timespec="microseconds"),
        raised.timestamp.isoformat(timespec="microseconds"),
    ]


def test_the_budget_lives_in_the_database(url: str) -> None:
    with Accountant(sdp.PureDP(1.0), ledger=url, analyst="ana") as acc:
        acc.spend(sdp.PureDP(0.5))
    with pytest.raises(sdp.LedgerError, match=r"PureDP\(epsilon=1\.0\).*PureDP\(epsilon=5\.0\)"):
        Accountant(sdp.PureDP(5.0), ledger=url, analyst="ana")
    with Accountant(ledger=url, analyst="ana") as acc:  # budget=None: the recorded one
        assert acc.budget == sdp.PureDP(1.0)
        with pytest.raises(sdp.BudgetExceeded):
            acc.set_budget(sdp.PureDP(0.25), reason="below the spending")
        acc.set_budget(sdp.PureDP(2.0), reason="ticket 42")
        assert acc.spend(sdp.PureDP(1.5)).spent_after == 2.0
    with pytest.raises(sdp.InvalidParameter):
        Accountant(ledger=url, analyst="nobody")
    assert raw(url, "SELECT reason FROM budgets ORDER BY id") == [
        ("opened by the account's first accountant",),
        ("ticket 42",),
    ]


def test_every_spend_must_name_its_accounts_recorded_budget(url: str) -> None:
    import psycopg

    with Accountant(sdp.PureDP(1.0), ledger=url, analyst="ana") as acc:
        acc.spend(sdp.PureDP(0.25))
    insert = (
        "INSERT INTO spends (analyst, period, item, count, created_at, measure, at_delta, "
        "spent_after, budget, library_version) VALUES (%s, %s, %s, 1, %s, 'epsilon', 0.0, 0.5, "
        "%s, '0')"
    )
    item, stamp = text("PureDP", epsilon=0.25), "2026-01-01T00:00:00.000000+00:00"
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="recorded budget"):
        raw(url, insert, ("ana", "all", item, stamp, text("PureDP", epsilon=5.0)))
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="recorded budget"):
        raw(url, insert, ("zed", "all", item, stamp, text("PureDP", epsilon=1.0)))
    raw(url, insert, ("ana", "all", item, stamp, text("PureDP", epsilon=1.0)))
    assert raw(url, "SELECT COUNT(*) FROM spends") == [(2,)]


# -- opening: what is refused, and left untouched ----------------------------------------------


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("UPDATE meta SET value = '3' WHERE key = 'schema_version'", "newer than this sharpdp"),
        ("UPDATE meta SET value = '1' WHERE key = 'schema_version'", "unknown schema version 1"),
        ("UPDATE meta SET value = 'x' WHERE key = 'schema_version'", "unreadable schema version"),
        ("UPDATE meta SET value = 'other' WHERE key = 'format'", "not a sharpdp ledger"),
        ("DROP TRIGGER spends_check_budget ON spends", "no enabled spends_check_budget"),
        ("ALTER TABLE spends DISABLE TRIGGER spends_check_budget", "no enabled"),
        # a rewritten function, or the trigger moved to another event, opened silently
        (
            "CREATE OR REPLACE FUNCTION spends_check_budget() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
            "not the one sharpdp creates",
        ),
        (
            "DROP TRIGGER spends_check_budget ON spends; CREATE TRIGGER spends_check_budget "
            "AFTER UPDATE ON spends FOR EACH ROW EXECUTE FUNCTION spends_check_budget()",
            "not the one sharpdp creates",
        ),
        ("UPDATE meta SET value = '²' WHERE key = 'schema_version'", "unreadable schema version"),
        ("ALTER TABLE budgets DROP COLUMN reason", "budgets table has columns"),
        ("ALTER TABLE spends ALTER COLUMN spent_after TYPE real", "spends table has columns"),
        ("DROP TABLE meta", "not a sharpdp ledger"),
        (
            "INSERT INTO budgets (analyst, period, budget, created_at, reason, library_version) "
            "VALUES ('z', 'p', '{\"type\": \"NoSuchType\", \"params\": {}}', 'x', 'r', '0')",
            "unreadable budget description",
        ),
    ],
)
def test_bad_ledgers_are_refused_and_untouched(url: str, damage: str, message: str) -> None:
    Ledger(url).close()
    raw(url, damage)
    dropped = damage == "DROP TABLE meta"
    before = [] if dropped else raw(url, "SELECT key, value FROM meta ORDER BY key")
    with pytest.raises(sdp.LedgerError, match=message):
        Ledger(url)
    with pytest.raises(sdp.LedgerError, match=message):
        Accountant(sdp.PureDP(1.0), ledger=url, analyst="ana")
    if not dropped:
        assert raw(url, "SELECT key, value FROM meta ORDER BY key") == before
    assert raw(url, "SELECT COUNT(*) FROM spends") == [(0,)]


def test_create_false_and_unreachable(url: str, server: str) -> None:
    with pytest.raises(sdp.LedgerError, match="create=False"):
        Ledger(url, create=False)
    with pytest.raises(sdp.LedgerError, match="create=False"):
        Accountant(ledger=url, analyst="ana")  # budget=None never creates a ledger
    assert (
        raw(url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        == []
    )
    with pytest.raises(sdp.LedgerError, match="cannot connect") as info:
        Ledger(f"{server}/no_such_database".replace("postgres@", "postgres:s3cret@"))
    assert "s3cret" not in str(info.value)
    assert "***" in str(info.value)
    with pytest.raises(sdp.InvalidParameter, match="URL"):
        PostgresLedger("/tmp/not-a-url.sqlite")


# -- concurrency -----------------------------------------------------------------------------------


def test_accounts_lock_separately(url: str) -> None:
    # A writer holding account a's lock (inside its decide) blocks a's other writers, which give up
    # after `timeout`, but not writers of account b.
    with Ledger(url) as one, Ledger(url) as two, Ledger(url, timeout=0.2) as impatient:
        for analyst in ("a", "b"):
            one.open_account(analyst, "p", sdp.PureDP(1.0), reason="test")
        inside, release = threading.Event(), threading.Event()

        def slow(history: History) -> Reading:
            inside.set()
            assert release.wait(30)
            return Reading(0.25, "epsilon", 0.0)

        held: list[int] = []
        holder = threading.Thread(
            target=lambda: held.append(one.append("a", "p", sdp.PureDP(0.25), 1, decide=slow).id)
        )
        holder.start()
        try:
            assert inside.wait(30)
            entry = two.append(
                "b", "p", sdp.PureDP(0.5), 1, decide=lambda h: Reading(0.5, "epsilon", 0.0)
            )
            assert entry.analyst == "b"
            with pytest.raises(sdp.LedgerError, match="lock"):
                impatient.append(
                    "a", "p", sdp.PureDP(0.5), 1, decide=lambda h: Reading(0.5, "epsilon", 0.0)
                )
        finally:
            release.set()
            holder.join(30)
        # The blocked account works again, and saw the holder's spend.
        seen = impatient.append(
            "a", "p", sdp.PureDP(0.5), 1, decide=lambda h: Reading(0.75, "epsilon", 0.0)
        )
        assert len(held) == 1
        assert seen.id > held[0]
        assert impatient.history("a", "p").entries == 2


# Run by ``exec`` in each child (any start method can pickle ``exec`` by reference).
_SPENDER = """
import sharpdp as sdp
from sharpdp.accounting.accountant import Accountant

barrier.wait()  # every child opens the (not yet created) ledger and spends at the same moment
acc = Accountant(budget=sdp.PureDP(BUDGET), ledger=TARGET, analyst="shared")
accepted = 0
for _ in range(ATTEMPTS):  # keep trying after refusals: later attempts must be refused too
    try:
        acc.spend(sdp.PureDP(EPSILON))
        accepted += 1
    except sdp.BudgetExceeded:
        pass
acc.close()
conn.send(accepted)
"""

# 4 processes × 50 spends of ε = 2⁻⁷ against a pure budget of 100 · 2⁻⁷ = 0.78125: exactly 100
# fit. (Not ε = 0.01 against 1.0: compose rounds up, 100 × 0.01 reads 1.0000000000000002 > 1, and
# only 99 would fit.) Every sum here is exact in binary floating point.
PROCESSES, ATTEMPTS, EPSILON, FITTING = 4, 50, 2.0**-7, 100


@pytest.mark.parametrize("storage", ["sqlite", "postgresql"])
def test_200_concurrent_spends_never_overspend(
    storage: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target = (
        str(tmp_path / "shared.sqlite") if storage == "sqlite" else request.getfixturevalue("url")
    )
    budget = FITTING * EPSILON
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["sharpdp.accounting.accountant"])
    barrier = ctx.Barrier(PROCESSES)
    pipes, procs = [], []
    for _ in range(PROCESSES):
        parent, child = ctx.Pipe(duplex=False)
        env = {
            "TARGET": target,
            "BUDGET": budget,
            "EPSILON": EPSILON,
            "ATTEMPTS": ATTEMPTS,
            "barrier": barrier,
            "conn": child,
        }
        proc = ctx.Process(target=exec, args=(_SPENDER, env))
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)
    accepted = []
    for parent, proc in zip(pipes, procs, strict=True):
        assert parent.poll(120), "a spender did not finish"
        accepted.append(parent.recv())
        proc.join(30)
        assert proc.exitcode == 0
    assert sum(accepted) == FITTING  # no overspend, and no capacity lost
    if storage == "sqlite":
        conn = sqlite3.connect(target)
        rows = conn.execute("SELECT count, spent_after, item FROM spends ORDER BY id").fetchall()
        budgets = conn.execute("SELECT COUNT(*) FROM budgets").fetchall()
        conn.close()
    else:
        rows = raw(target, "SELECT count, spent_after, item FROM spends ORDER BY id")
        budgets = raw(target, "SELECT COUNT(*) FROM budgets")
    assert len(rows) == FITTING
    assert budgets == [(1,)]  # of the racing first openers, exactly one recorded the budget
    assert {item for _, _, item in rows} == {text("PureDP", epsilon=EPSILON)}
    # Each row saw a different history: the readings are exactly 1, 2, ..., 100 times ε, in order.
    assert [spent for _, spent, _ in rows] == [k * EPSILON for k in range(1, FITTING + 1)]
    assert sum(Fraction(EPSILON) * count for count, _, _ in rows) == Fraction(budget)


def test_an_account_on_postgres_opens_without_a_budget(url: str) -> None:
    # a check for a missing ledger *file* took the URL for a path: the account could not be
    # opened by budget=None, and the message showed the URL's password
    with sdp.Accountant(sdp.PureDP(1.0), ledger=url, analyst="ana") as first:
        first.spend(sdp.PureDP(0.25))
    with sdp.Accountant(None, ledger=url, analyst="ana") as again:
        assert again.budget == sdp.PureDP(1.0)
        assert again.spent() == 0.25
    secret = url.replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    with pytest.raises(sdp.LedgerError) as info:
        sdp.Accountant(None, ledger=secret.rsplit("/", 1)[0] + "/no_such_db", analyst="ana")
    assert "s3cret" not in str(info.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h:5/db", "postgresql://u:***@h:5/db"),
        (
            "postgresql://u@h/db?password=hunter2&sslmode=require",
            "postgresql://u@h/db?password=***&sslmode=require",
        ),
        (
            "postgresql://u@h/db?sslmode=require&PASSWORD=x",
            "postgresql://u@h/db?sslmode=require&PASSWORD=***",
        ),
        ("postgresql:///db?host=/tmp&password=a%20b", "postgresql:///db?host=/tmp&password=***"),
        ("postgres://u:p@h/db?password=q#f", "postgres://u:***@h/db?password=***#f"),
        ("postgresql://h/db?sslmode=require", "postgresql://h/db?sslmode=require"),
        ("postgresql://[oops/db", "postgresql://…"),
    ],
)
def test_passwords_never_shown(url: str, shown: str) -> None:
    # libpq also takes the password as a query parameter: it was shown in messages, repr, path and
    # the service's 503 bodies; a URL that does not parse raised ValueError from the redaction
    from sharpdp.accounting._postgres import redact

    assert redact(url) == shown


def test_query_string_password_and_bad_urls_in_errors(server: str) -> None:
    secret = f"{server}/no_such_db?password=hunter2"
    with pytest.raises(sdp.LedgerError, match="cannot connect") as info:
        Ledger(secret)
    assert "hunter2" not in str(info.value)
    assert "password=***" in str(info.value)
    with pytest.raises(sdp.LedgerError, match="cannot connect"):
        sdp.Accountant(sdp.PureDP(1.0), ledger="postgresql://[oops/db", analyst="ana")


def test_a_lost_connection_is_opened_again(url: str) -> None:
    # a terminated backend (a server restart, a failover, an idle timeout) left the ledger's one
    # connection closed for good: every later spend failed until the process restarted
    with sdp.Accountant(sdp.PureDP(1.0), ledger=url, analyst="ana") as acc:
        acc.spend(sdp.PureDP(0.25))
        killed = raw(
            url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        assert killed
        assert all(ok for (ok,) in killed)
        acc.spend(sdp.PureDP(0.25))  # the lost connection is found at BEGIN and opened again
        assert acc.spent() == 0.5
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.PureDP(0.75))
    assert raw(url, "SELECT COUNT(*) FROM spends") == [(2,)]
    with sdp.Accountant(None, ledger=url, analyst="ana") as again:
        assert again.spent() == 0.5
