"""The durable ledger: descriptions, file format, corruption handling, crash safety.

Expected values come from the documented format (docs/ledger.md) read with the standard ``sqlite3``
and ``json`` modules, never from the ledger's own reading of itself.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import multiprocessing
import os
import signal
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from sharpdp import mechanisms as mech
from sharpdp.accounting import _serialize
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.composition import compose
from sharpdp.accounting.ledger import FORMAT_NAME, SCHEMA_VERSION, History, Ledger, Reading
from sharpdp.guarantees import Guarantee
from stable_ids import stable_id

INF = math.inf

# One or more instances of every guarantee and mechanism type of sharpdp (edge values included).
EXAMPLES: list[Guarantee] = [
    sdp.PureDP(1.0),
    sdp.PureDP(0.0),
    sdp.PureDP(INF),
    sdp.ApproxDP(0.5, 1e-6),
    sdp.ApproxDP(INF, 0.0),
    sdp.ZCDP(0.1),
    sdp.ZCDP(0.25, -0.25),
    sdp.ZCDP(INF),
    sdp.ApproxZCDP(0.1, 1e-7, 0.05),
    sdp.MCDP(0.3, 0.2),
    sdp.RDP((1.5, 2.0, INF), (0.1, 0.2, 3.0)),
    sdp.BoundedRange(0.7),
    sdp.GDP(1.25),
    sdp.GDP(INF),
    sdp.Laplace(2.0),
    sdp.Laplace(0.5, sensitivity=3.0),
    sdp.Gaussian(1.5, sensitivity=0.1),
    sdp.RandomizedResponse(1.0),
    sdp.RandomizedResponse(0.3, categories=7),
    sdp.Exponential(0.5),
    sdp.Exponential(0.5, sensitivity=2.0, monotonic=True),
    sdp.PermuteAndFlip(1.0, monotonic=True),
    sdp.ReportNoisyMax(0.3),
    sdp.ReportNoisyMax(0.3, noise="exponential", sensitivity=2.0),
    sdp.ReportNoisyMax(0.3, noise="laplace", monotonic=True),
    sdp.TopK(3, 0.2),
    sdp.TopK(1, 0.2, sensitivity=0.5, monotonic=True),
    sdp.Quantile(1.0, q=0.5, bounds=(0.0, 700.0), cells=2**20, max_rows=1),
    sdp.LimitDom(k=3, k_bar=5, epsilon=1.0, delta=1e-6),
    compose([(sdp.Gaussian(2.0), 3), sdp.Laplace(1.0)]),
    compose([compose([sdp.PureDP(0.1)]), (sdp.Exponential(0.2), 2)], adaptive=False),
]
# Mechanisms being added to sharpdp (DESIGN.md) are covered as soon as they exist.
for _name, _args in (("DiscreteLaplace", (2.0,)), ("DiscreteGaussian", (1.5,))):
    if hasattr(mech, _name):
        EXAMPLES.append(getattr(mech, _name)(*_args))


GUARANTEE_MODULES = ("sharpdp.guarantees", "sharpdp.mechanisms", "sharpdp.accounting.composition")


def library_types() -> dict[str, type[Guarantee]]:
    """Every public concrete dataclass guarantee that sharpdp's guarantee, mechanism and composition
    modules expose (found here by a walk of the subclass tree, independently of the registry)."""
    found: dict[str, type[Guarantee]] = {}
    stack: list[type[Guarantee]] = [Guarantee]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            module = inspect.getmodule(sub)
            if (
                sub.__module__.startswith(GUARANTEE_MODULES)
                and dataclasses.is_dataclass(sub)
                and not sub.__name__.startswith("_")
                and getattr(module, sub.__name__, None) is sub
            ):
                found[sub.__name__] = sub
    return found


def file_bytes(path: Path) -> dict[str, bytes]:
    """The ledger file and its SQLite side files, byte for byte."""
    out = {}
    for suffix in ("", "-wal", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            out[suffix] = p.read_bytes()
    return out


def raw_rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM spends ORDER BY id").fetchall()
    finally:
        conn.close()


# -- descriptions ----------------------------------------------------------------------------------


def test_every_library_type_has_an_example_and_is_registered() -> None:
    types = library_types()
    assert {type(g).__name__ for g in EXAMPLES} == set(types)
    registry = _serialize.known_types()
    for name, cls in types.items():
        assert registry[name] is cls


@pytest.mark.parametrize("item", EXAMPLES, ids=stable_id)
def test_round_trip_of_every_type(item: Guarantee) -> None:
    text = _serialize.dumps(item)
    back = _serialize.loads(text)
    assert type(back) is type(item)
    assert back == item
    obj = json.loads(text)
    assert obj["type"] == type(item).__name__
    # The params are the constructor's keywords (epsilon_/delta_ fields written epsilon/delta).
    keywords = set(inspect.signature(type(item)).parameters)
    assert set(obj["params"]) <= keywords
    assert not any(k.endswith("_") for k in obj["params"])
    # Canonical text: sorted keys, no whitespace; re-dumping the parsed object gives it back.
    assert json.dumps(obj, sort_keys=True, separators=(",", ":")) == text


def test_pinned_texts() -> None:
    # The documented format (docs/ledger.md), written out by hand.
    assert _serialize.dumps(sdp.PureDP(1.0)) == '{"params":{"epsilon":1.0},"type":"PureDP"}'
    assert (
        _serialize.dumps(sdp.ApproxDP(INF, 1e-6))
        == '{"params":{"delta":1e-06,"epsilon":{"float":"inf"}},"type":"ApproxDP"}'
    )
    assert (
        _serialize.dumps(sdp.ZCDP(0.125, -0.0625))
        == '{"params":{"rho":0.125,"xi":-0.0625},"type":"ZCDP"}'
    )
    assert (
        _serialize.dumps(sdp.RDP((2.0, INF), (1.0, 3.0)))
        == '{"params":{"epsilons":[1.0,3.0],"function":null,"orders":[2.0,{"float":"inf"}]},'
        '"type":"RDP"}'
    )
    gaussian = json.loads(_serialize.dumps(sdp.Gaussian(2.0)))
    assert gaussian["type"] == "Gaussian"
    assert gaussian["params"]["sigma"] == 2.0
    assert gaussian["params"]["sensitivity"] == 1.0
    # Readers accept any JSON spelling of the same description (whitespace, key order, ints).
    assert _serialize.loads('{ "params" : { "epsilon" : 1 }, "type" : "PureDP" }') == sdp.PureDP(1)


@given(
    epsilon=st.floats(min_value=0.0, allow_nan=False),
    delta=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    rho=st.floats(min_value=0.0, max_value=1e300),
    mu=st.floats(min_value=0.0, allow_nan=False),
)
def test_round_trip_is_exact_for_any_float(
    epsilon: float, delta: float, rho: float, mu: float
) -> None:
    for item in (
        sdp.PureDP(epsilon),
        sdp.ApproxDP(epsilon, delta),
        sdp.ZCDP(rho, -rho),
        sdp.GDP(mu),
    ):
        back = _serialize.loads(_serialize.dumps(item))
        assert back == item
        assert all(
            math.copysign(1.0, getattr(back, f.name)) == math.copysign(1.0, getattr(item, f.name))
            for f in dataclasses.fields(item)
        )


@dataclass(frozen=True, slots=True)
class _Custom(Guarantee):
    epsilon_: float
    notion: ClassVar[str] = "custom"

    def __init__(self, epsilon: float) -> None:
        object.__setattr__(self, "epsilon_", float(epsilon))

    def _renyi(self, alpha: float) -> float:
        return self.epsilon_


@dataclass(frozen=True, slots=True)
class _Lossy(Guarantee):
    # Its constructor does not reproduce the object: it cannot be described faithfully.
    value: float

    def __init__(self, value: float) -> None:
        object.__setattr__(self, "value", 2.0 * value)


def test_exact_rational_parameters_round_trip(tmp_path: Path) -> None:
    from fractions import Fraction

    item = sdp.DiscreteGaussian(Fraction(7, 3), sensitivity=2)
    text = _serialize.dumps(item)
    assert '{"fraction":"7/3"}' in text
    assert _serialize.loads(text) == item
    with Accountant(budget=sdp.ZCDP(1.0), ledger=tmp_path / "f.sqlite") as acc:
        acc.spend(item)
        assert acc.history()[0].item == item


def test_cannot_describe() -> None:
    with pytest.raises(sdp.InvalidParameter, match="function"):
        _serialize.dumps(sdp.RDP.from_function(lambda a: 0.1 * a))
    with pytest.raises(sdp.InvalidParameter, match="not registered"):
        _serialize.dumps(_Custom(0.5))
    with pytest.raises(sdp.InvalidParameter, match="guarantee"):
        _serialize.dumps(1.0)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="name is required"):
        _serialize.register_type(_Lossy)
    _serialize.register_type(_Lossy, name="tests.Lossy")
    with pytest.raises(sdp.InvalidParameter, match="faithfully"):
        _serialize.dumps(_Lossy(1.0))
    with pytest.raises(sdp.InvalidParameter, match="already registered"):
        _serialize.register_type(_Custom, name="Gaussian")
    with pytest.raises(sdp.InvalidParameter, match="dataclass"):
        _serialize.register_type(Guarantee, name="x")


def test_registered_user_type_round_trips() -> None:
    _serialize.register_type(_Custom, name="tests.Custom")
    item = _Custom(0.25)
    text = _serialize.dumps(item)
    assert json.loads(text) == {"type": "tests.Custom", "params": {"epsilon": 0.25}}
    assert _serialize.loads(text) == item


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        '{"type": "PureDP"}',
        '{"type": "NoSuchType", "params": {}}',
        '{"type": "PureDP", "params": {"epsilon": -1.0}}',
        '{"type": "PureDP", "params": {"eps": 1.0}}',
        '{"type": "PureDP", "params": {"epsilon": NaN}}',
        '{"type": "PureDP", "params": {"epsilon": Infinity}}',
        '{"type": "PureDP", "params": {"epsilon": {"float": "huge"}}}',
        '{"type": 3, "params": {}}',
        '{"type": "PureDP", "params": [1.0]}',
        '{"type": "DiscreteGaussian", "params": {"sigma": {"fraction": "7/0"}}}',
        '{"type": "DiscreteGaussian", "params": {"sigma": {"fraction": 3}}}',
        '{"type": "DiscreteGaussian", "params": {"sigma": {"fraction": "1/2/3"}}}',
        # a repeated key (no text dumps() writes) was read as its last value
        '{"type": "PureDP", "params": {"epsilon": 5.0, "epsilon": 0.1}}',
        '{"type": "Gaussian", "type": "PureDP", "params": {"epsilon": 1.0}}',
    ],
)
def test_bad_descriptions(text: str) -> None:
    with pytest.raises(sdp.InvalidParameter):
        _serialize.loads(text)


# -- the file --------------------------------------------------------------------------------------


def test_new_ledger_format(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        assert ledger.path == str(path)
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert path.read_bytes()[18:20] == b"\x02\x02"  # WAL (file format versions 2)
    assert [p.name for p in tmp_path.iterdir()] == ["l.sqlite"]  # no temporary file left
    conn = sqlite3.connect(path)
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert meta["format"] == FORMAT_NAME == "sharpdp-ledger"
    assert meta["schema_version"] == str(SCHEMA_VERSION) == "2"
    assert meta["created_by"] == f"sharpdp {sdp.__version__}"
    assert "migrated_from_1_at" not in meta  # created as version 2, never migrated
    budget_columns = [r[1] for r in conn.execute("PRAGMA table_info(budgets)").fetchall()]
    assert budget_columns == [
        "id",
        "analyst",
        "period",
        "budget",
        "created_at",
        "reason",
        "library_version",
    ]
    assert conn.execute("SELECT COUNT(*) FROM budgets").fetchone() == (0,)
    kinds = dict(conn.execute("SELECT name, type FROM sqlite_master").fetchall())
    assert kinds["spends_check_budget"] == "trigger"
    columns = [r[1] for r in conn.execute("PRAGMA table_info(spends)").fetchall()]
    assert columns == [
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
    conn.close()


def test_rows_follow_the_documented_format(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Accountant(sdp.ApproxDP(5.0, 1e-6), ledger=path, analyst="ana", period="2026-01") as acc:
        entry = acc.spend(sdp.Gaussian(4.0), count=3)
    (row,) = raw_rows(path)
    rid, analyst, period, item, count, created, measure, at_delta, spent, budget, version = row
    assert (rid, analyst, period, count, measure, at_delta) == (
        1,
        "ana",
        "2026-01",
        3,
        "epsilon",
        1e-6,
    )
    description = json.loads(item)
    assert description["type"] == "Gaussian"
    assert description["params"]["sigma"] == 4.0
    assert json.loads(budget) == {"type": "ApproxDP", "params": {"epsilon": 5.0, "delta": 1e-6}}
    assert version == sdp.__version__
    assert spent == entry.spent_after
    assert entry.timestamp.isoformat(timespec="microseconds") == created
    assert created.endswith("+00:00")
    # The account's budget row: written when the accountant opened it, before the spend.
    conn = sqlite3.connect(path)
    (brow,) = conn.execute("SELECT * FROM budgets").fetchall()
    conn.close()
    bid, banalyst, bperiod, btext, bcreated, reason, bversion = brow
    assert (bid, banalyst, bperiod, bversion) == (1, "ana", "2026-01", sdp.__version__)
    assert btext == budget  # the spend names the very text of its account's budget
    assert reason == "opened by the account's first accountant"
    assert bcreated.endswith("+00:00")
    assert bcreated < created


def test_in_memory_ledger() -> None:
    for target in (None, ":memory:"):
        with Ledger(target) as ledger:
            assert ledger.path is None
            empty = ledger.history("a", "all")
            assert (empty.analyst, empty.period, empty.last_id, empty.entries) == ("a", "all", 0, 0)
            assert empty.items == ()
            acc = Accountant(sdp.PureDP(1.0), ledger=ledger, analyst="a")
            acc.spend(sdp.PureDP(0.5))
            assert ledger.history("a", "all").items == ((sdp.PureDP(0.5), 1),)


def test_entries_and_accounts(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        for analyst, period in [("b", "p1"), ("a", "p2"), ("a", "p1"), ("b", "p1")]:
            Accountant(sdp.PureDP(9.0), ledger=ledger, analyst=analyst, period=period).spend(
                sdp.PureDP(0.5)
            )
        assert ledger.accounts() == (("a", "p1"), ("a", "p2"), ("b", "p1"))
        assert [e.id for e in ledger.entries()] == [1, 2, 3, 4]
        assert [e.id for e in ledger.entries("b")] == [1, 4]
        assert [e.id for e in ledger.entries(period="p1")] == [1, 3, 4]
        assert [e.id for e in ledger.entries("a", "p1")] == [3]
        history = ledger.history("b", "p1")
        assert (history.last_id, history.entries, history.items) == (4, 2, ((sdp.PureDP(0.5), 2),))


def test_a_read_only_file_system_is_a_ledger_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a read-only file system every write fails with EROFS, the clean-up's unlink too, whose
    OSError replaced the LedgerError (seen through a read-only bind mount; simulated here, as
    root ignores permissions and mounts need privileges)."""
    import errno

    import sharpdp.accounting.ledger as ledger_module

    def read_only(*args: object, **kwargs: object) -> Any:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(ledger_module.os, "open", read_only)
    monkeypatch.setattr(ledger_module.os, "unlink", read_only)
    with pytest.raises(sdp.LedgerError, match=r"cannot create ledger .*: Read-only file system"):
        Ledger(tmp_path / "new.sqlite")


def test_create_false_and_bad_paths(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(sdp.LedgerError, match="does not exist"):
        Ledger(missing, create=False)
    assert not missing.exists()
    with pytest.raises(sdp.LedgerError, match="directory"):
        Ledger(tmp_path / "no" / "such" / "dir.sqlite")
    # a directory where no file can be made (even by root): the error named the temporary file
    # the ledger is built in ('/proc/.x.sqlite.<hex>.tmp')
    with pytest.raises(
        sdp.LedgerError, match=r"cannot create ledger '/proc/x.sqlite' in '/proc'"
    ) as info:
        Ledger("/proc/x.sqlite")
    assert ".tmp" not in str(info.value)
    with pytest.raises(sdp.LedgerError, match="regular file"):
        Ledger(tmp_path)
    with pytest.raises(sdp.InvalidParameter, match="path"):
        Ledger(3)  # type: ignore[arg-type]
    # the OS's ValueError / UnicodeEncodeError leaked from wherever the path was first used
    for bad, message in (
        (f"{tmp_path}/a\x00b.sqlite", "NUL"),
        (f"{tmp_path}/a\ud800.sqlite", "file name"),
    ):
        with pytest.raises(sdp.InvalidParameter, match=message):
            Ledger(bad)
        with pytest.raises(sdp.InvalidParameter, match=message):
            Accountant(sdp.PureDP(1.0), ledger=bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with pytest.raises(sdp.InvalidParameter, match="timeout"):
        Ledger(None, timeout=-1.0)


def test_creation_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(src: str, dst: str) -> None:
        raise PermissionError("hard links are not supported here")

    monkeypatch.setattr(os, "link", no_link)
    path = tmp_path / "l.sqlite"
    with Accountant(sdp.PureDP(1.0), ledger=path) as acc:
        acc.spend(sdp.PureDP(0.25))
    assert len(raw_rows(path)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.sqlite"]


# -- corrupted and foreign files: LedgerError, file untouched --------------------------------------


@functools.cache
def _valid_ledger_bytes(spends: int = 40) -> bytes:
    """The bytes of a valid ledger of ``spends`` accountant spends, built once per test session
    (every corruption case starts from a copy: the spends themselves are not under test here)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "valid.sqlite"
        with Accountant(sdp.PureDP(100.0), ledger=path, analyst="x") as acc:
            for i in range(spends):
                acc.spend(sdp.Laplace(1.0 + i))
        return path.read_bytes()


def _valid_ledger(path: Path) -> None:
    path.write_bytes(_valid_ledger_bytes())


def _edit(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    for statement in statements:
        conn.execute(statement)
    conn.close()


def _random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(1).bytes(8192))


def _random_after_magic(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + np.random.default_rng(2).bytes(8192 - 16))


@functools.cache
def _multi_page_ledger() -> bytes:
    """The bytes of a valid ledger of 300 rows (many pages), built once."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.sqlite"
        with Ledger(path) as ledger:
            ledger.open_account("x", "all", sdp.PureDP(1000.0), reason="test")
            for i in range(300):
                ledger.append(
                    "x",
                    "all",
                    sdp.Laplace(1.0 + i),
                    1,
                    decide=lambda history: Reading(float(history.entries + 1), "epsilon", 0.0),
                )
        return path.read_bytes()


def _truncated(fraction: float) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        data = _multi_page_ledger()
        path.write_bytes(data[: int(len(data) * fraction)])

    return make


def _truncated_to_page(path: Path) -> None:
    data = _multi_page_ledger()
    assert len(data) >= 8 * 4096
    path.write_bytes(data[: len(data) - 4096])


def _foreign_sqlite(path: Path) -> None:
    _edit(path, "CREATE TABLE t (x INTEGER)", "INSERT INTO t VALUES (1)")


def _empty_sqlite(path: Path) -> None:
    _edit(path, "CREATE TABLE t (x)", "DROP TABLE t")


def _row_edit(*statements: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        _valid_ledger(path)
        _edit(path, *statements)

    return make


CORRUPTIONS: dict[str, tuple[Callable[[Path], object], str]] = {
    "empty file": (lambda p: p.write_bytes(b""), "empty"),
    "random bytes": (_random_bytes, "not an SQLite"),
    "random after SQLite magic": (_random_after_magic, "corrupt|not a database|malformed"),
    "truncated to 1/2": (_truncated(0.5), "corrupt"),
    "truncated by 1 byte": (_truncated(0.9999), "corrupt"),
    "truncated to a page boundary": (_truncated_to_page, "corrupt|malformed"),
    "SQLite without our tables": (_foreign_sqlite, "not a sharpdp ledger"),
    "SQLite with no tables": (_empty_sqlite, "not a sharpdp ledger"),
    "bad JSON in a row": (_row_edit("UPDATE spends SET item = '{bad json' WHERE id = 7"), "row 7"),
    "unknown type in a row": (
        _row_edit("""UPDATE spends SET item = '{"type":"Nope","params":{}}' WHERE id = 3"""),
        "row 3",
    ),
    "invalid parameter in a row": (
        _row_edit(
            """UPDATE spends SET item = '{"type":"Laplace","params":{"scale":-1.0}}' WHERE id = 9"""
        ),
        "row 9",
    ),
    "bad budget in a row": (_row_edit("UPDATE spends SET budget = 'x' WHERE id = 2"), "row 2"),
    "zero count": (_row_edit("UPDATE spends SET count = 0 WHERE id = 5"), "CHECK|row 5"),
    "text count": (_row_edit("UPDATE spends SET count = 'two' WHERE id = 5"), "CHECK|row 5"),
    "bad timestamp": (_row_edit("UPDATE spends SET created_at = 'noon' WHERE id = 4"), "row 4"),
    "text reading": (_row_edit("UPDATE spends SET spent_after = 'lots' WHERE id = 4"), "row 4"),
    "newer schema": (
        _row_edit("UPDATE meta SET value = '3' WHERE key = 'schema_version'"),
        "newer",
    ),
    "schema version 0": (
        _row_edit("UPDATE meta SET value = '0' WHERE key = 'schema_version'"),
        "unknown schema version 0",
    ),
    "missing budgets table": (_row_edit("DROP TABLE budgets"), "no budgets table"),
    "missing budget trigger": (_row_edit("DROP TRIGGER spends_check_budget"), "trigger"),
    "extra budgets column": (
        _row_edit("ALTER TABLE budgets ADD COLUMN extra TEXT"),
        "budgets table has columns",
    ),
    "bad budget description in budgets": (
        _row_edit("UPDATE budgets SET budget = '{bad json' WHERE id = 1"),
        "budgets table",
    ),
    "empty budget reason": (
        _row_edit("UPDATE budgets SET reason = '' WHERE id = 1"),
        "CHECK constraint failed in budgets|budgets row 1",
    ),
    "bad budget timestamp": (
        _row_edit("UPDATE budgets SET created_at = 'noon' WHERE id = 1"),
        "budgets row 1",
    ),
    "unknown schema": (
        _row_edit("UPDATE meta SET value = 'v1' WHERE key = 'schema_version'"),
        "schema version",
    ),
    # str.isdigit() holds for '²', which int() refuses: it raised ValueError
    "superscript schema": (
        _row_edit("UPDATE meta SET value = '²' WHERE key = 'schema_version'"),
        "unreadable schema version",
    ),
    # SQLite's datetime() reads a Julian day number: the file opened, then every use of the
    # account failed
    "julian budget timestamp": (
        _row_edit("UPDATE budgets SET created_at = '2461010.5' WHERE id = 1"),
        "budgets row 1",
    ),
    # a trigger of the same name that no longer guards the spends opened silently
    "foreign budget trigger": (
        _row_edit(
            "DROP TRIGGER spends_check_budget",
            "CREATE TRIGGER spends_check_budget AFTER DELETE ON meta BEGIN SELECT 1; END",
        ),
        "not the one sharpdp creates",
    ),
    "'now' spend timestamp": (
        _row_edit("UPDATE spends SET created_at = 'now' WHERE id = 1"),
        "row 1",
    ),
    "other format": (_row_edit("UPDATE meta SET value = 'other' WHERE key = 'format'"), "format"),
    "missing spends table": (_row_edit("DROP TABLE spends"), "no spends table"),
    "extra column": (_row_edit("ALTER TABLE spends ADD COLUMN extra TEXT"), "columns"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_corrupted_files_raise_and_are_untouched(tmp_path: Path, case: str) -> None:
    make, message = CORRUPTIONS[case]
    path = tmp_path / "bad.sqlite"
    make(path)
    before = file_bytes(path)
    with pytest.raises(sdp.LedgerError, match=message):
        Ledger(path)
    with pytest.raises(sdp.LedgerError):
        Accountant(sdp.PureDP(1.0), ledger=path)
    assert file_bytes(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sqlite"]


def test_corrupt_row_written_later_is_caught_and_nothing_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    acc = Accountant(sdp.PureDP(10.0), ledger=path, analyst="x")
    acc.spend(sdp.PureDP(0.5))
    # Another tool appends a row that does not decode, after this accountant validated the file.
    conn = sqlite3.connect(path, isolation_level=None)
    row = conn.execute("SELECT * FROM spends").fetchone()
    conn.execute(
        "INSERT INTO spends (analyst, period, item, count, created_at, measure, at_delta, "
        "spent_after, budget, library_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("x", "all", '{"type":"Nope","params":{}}', *row[4:]),
    )
    conn.close()
    rows = raw_rows(path)
    with pytest.raises(sdp.LedgerError, match="row 2"):
        acc.spend(sdp.PureDP(0.5))
    with pytest.raises(sdp.LedgerError, match="row 2"):
        acc.epsilon(0.0)
    assert raw_rows(path) == rows
    acc.close()


# -- append is all or nothing ----------------------------------------------------------------------


def test_refused_append_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    ledger = Ledger(path)
    seen: list[History] = []

    def refuse(history: History) -> Reading:
        seen.append(history)
        raise sdp.BudgetExceeded("no")

    def accept(history: History) -> Reading:
        return Reading(0.5, "epsilon", 0.0)

    # No budget recorded for the account yet: nothing can be spent.
    with pytest.raises(sdp.LedgerError, match="no recorded budget"):
        ledger.append("a", "all", sdp.PureDP(0.5), 1, decide=accept)
    assert raw_rows(path) == []
    ledger.open_account("a", "all", sdp.PureDP(1.0), reason="test")
    entry = ledger.append("a", "all", sdp.PureDP(0.5), 1, decide=accept)
    assert (entry.budget, entry.spent_after, entry.measure) == (sdp.PureDP(1.0), 0.5, "epsilon")
    before, rows = file_bytes(path), raw_rows(path)
    with pytest.raises(sdp.BudgetExceeded):
        ledger.append("a", "all", sdp.PureDP(0.5), 2, decide=refuse)
    assert seen[0].items == ((sdp.PureDP(0.5), 1),)
    assert seen[0].budget is not None
    assert seen[0].budget.budget == sdp.PureDP(1.0)
    assert file_bytes(path) == before
    assert raw_rows(path) == rows
    # A NaN reading is a bug, never recorded.
    with pytest.raises(sdp.NumericalError):
        ledger.append(
            "a", "all", sdp.PureDP(0.5), 1, decide=lambda h: Reading(math.nan, "epsilon", 0.0)
        )
    assert raw_rows(path) == rows
    for bad in (
        ("delta", 0.0),
        ("rho", 0.0),  # rho readings have no at_delta
        ("epsilon", None),
    ):
        with pytest.raises(sdp.InvalidParameter):
            ledger.append("a", "all", sdp.PureDP(0.5), 1, decide=lambda h, b=bad: Reading(0.5, *b))
    with pytest.raises(sdp.InvalidParameter, match="Reading"):
        ledger.append("a", "all", sdp.PureDP(0.5), 1, decide=lambda h: 0.5)  # type: ignore[arg-type,return-value]
    assert raw_rows(path) == rows
    ledger.close()


# -- crash safety: SIGKILL during spend() ----------------------------------------------------------

# The child runs this source with ``exec`` (a target that any start method can pickle by reference,
# unlike a function defined in a test module imported by pytest).
_SPENDER = """
import sharpdp as sdp
from sharpdp.accounting.accountant import Accountant

acc = Accountant(budget=sdp.PureDP(1e9), ledger=PATH, analyst="child")
acc.would_fit(sdp.Laplace(SCALE))  # first evaluations warm up lazily loaded numerics
conn.send(("ready", 0))
while True:
    entry = acc.spend(sdp.Laplace(SCALE), count=1)
    conn.send(("spent", entry.id))  # reported only after spend() returned
"""


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        ["sharpdp.accounting.accountant"]
    )  # fast children (ignored once started)
    return ctx


def test_sigkill_during_spend_never_loses_a_reported_spend(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    ctx = _context()
    rng = np.random.default_rng(20260101)
    reported: set[int] = set()
    for trial in range(6):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=exec, args=(_SPENDER, {"PATH": str(path), "SCALE": 1.0 + trial, "conn": child})
        )
        proc.start()
        child.close()
        assert parent.poll(60), "child did not start"
        assert parent.recv() == ("ready", 0)
        time.sleep(float(rng.uniform(0.02, 0.25)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        assert proc.exitcode == -signal.SIGKILL
        this_trial: set[int] = set()
        while True:
            try:
                kind, rid = parent.recv()
            except EOFError:  # end of the pipe (a message cut by the kill is not a report)
                break
            assert kind == "spent"
            this_trial.add(rid)
        parent.close()
        assert this_trial, "the child was killed before its first spend: lengthen the delay"
        reported |= this_trial
        # Opening validates the whole file (structure, every row); then compare with the reports.
        with Ledger(path) as ledger:
            entries = ledger.entries("child")
        ids = [e.id for e in entries]
        assert ids == sorted(set(ids))
        assert reported <= set(ids)
        # At most one spend per killed child was committed without being reported.
        assert len(ids) - len(reported) <= trial + 1
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT COUNT(*) FROM spends WHERE count != 1").fetchone() == (0,)
        conn.close()
    # After all the crashes the ledger still takes spends, and the odometer counts every row.
    with Accountant(sdp.PureDP(1e9), ledger=path, analyst="child") as acc:
        acc.spend(sdp.PureDP(1.0))
        scales = [e.item.scale for e in acc.history()[:-1]]  # type: ignore[attr-defined]
        expected = sum(1.0 / s for s in scales) + 1.0  # pure DP of Laplace(b) is 1/b; compose adds
        assert acc.epsilon(0.0) == pytest.approx(expected, rel=1e-12)


# -- budgets in the file (schema version 2) --------------------------------------------------------


def _text(kind: str, **params: float) -> str:
    """A description written by hand from docs/ledger.md (canonical: sorted keys, no spaces)."""
    return json.dumps({"type": kind, "params": params}, sort_keys=True, separators=(",", ":"))


def _insert_spend(conn: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    conn.execute(
        "INSERT INTO spends (analyst, period, item, count, created_at, measure, at_delta, "
        "spent_after, budget, library_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        row,
    )


def test_budget_records(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    refusals: list[History] = []

    def refuse(history: History) -> None:
        refusals.append(history)
        raise sdp.BudgetExceeded("no")

    with Ledger(path) as ledger:
        assert ledger.budget("a", "p") is None
        assert ledger.history("a", "p").budget is None
        first = ledger.open_account("a", "p", sdp.PureDP(1.0), reason="first opener")
        # A second opener gets the recorded budget back, whatever its own: it compares.
        assert ledger.open_account("a", "p", sdp.PureDP(3.0), reason="second opener") == first
        assert ledger.accounts() == (("a", "p"),)  # an account with a budget and no spend
        raised = ledger.set_budget("a", "p", sdp.PureDP(2.0), reason="raised")
        with pytest.raises(sdp.BudgetExceeded):
            ledger.set_budget("a", "p", sdp.PureDP(9.0), reason="refused", check=refuse)
        assert refusals[0].budget == raised  # the check saw the budget in force
        for reason in ("", "   ", None, 3):
            with pytest.raises(sdp.InvalidParameter, match="reason"):
                ledger.set_budget("a", "p", sdp.PureDP(2.0), reason=reason)  # type: ignore[arg-type]
        assert ledger.budget("a", "p") == raised
        assert ledger.history("a", "p").budget == raised
        assert ledger.budgets() == (first, raised)
        assert ledger.budgets("a", "p") == (first, raised)
        assert ledger.budgets(analyst="b") == ()
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT * FROM budgets ORDER BY id").fetchall()
    conn.close()
    assert [(r[0], r[1], r[2], json.loads(r[3]), r[5], r[6]) for r in rows] == [
        (
            1,
            "a",
            "p",
            {"type": "PureDP", "params": {"epsilon": 1.0}},
            "first opener",
            sdp.__version__,
        ),
        (2, "a", "p", {"type": "PureDP", "params": {"epsilon": 2.0}}, "raised", sdp.__version__),
    ]
    assert [r[4] for r in rows] == [
        first.timestamp.isoformat(timespec="microseconds"),
        raised.timestamp.isoformat(timespec="microseconds"),
    ]


def test_every_spend_must_name_its_accounts_recorded_budget(tmp_path: Path) -> None:
    # What an older sharpdp, or another tool, writing spends directly would meet: the file itself
    # (a trigger) refuses a spend checked against any budget but the account's recorded one.
    path = tmp_path / "l.sqlite"
    with Accountant(sdp.PureDP(1.0), ledger=path, analyst="ana") as acc:
        acc.spend(sdp.PureDP(0.25))
    (row,) = raw_rows(path)
    assert row[9] == _text("PureDP", epsilon=1.0)
    conn = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.IntegrityError, match="recorded budget"):
        _insert_spend(
            conn,
            (
                "ana",
                "all",
                row[3],
                1,
                row[5],
                "epsilon",
                0.0,
                0.5,
                _text("PureDP", epsilon=5.0),
                "0.0.1",
            ),
        )
    with pytest.raises(sqlite3.IntegrityError, match="recorded budget"):  # no budget recorded
        _insert_spend(conn, ("zed", "all", row[3], 1, row[5], "epsilon", 0.0, 0.25, row[9], "0"))
    _insert_spend(conn, ("ana", "all", row[3], 1, row[5], "epsilon", 0.0, 0.5, row[9], "0.0.1"))
    conn.close()
    assert len(raw_rows(path)) == 2


# The schema of version 1, as docs/ledger.md gives it (written out here, not taken from sharpdp).
V1_SCHEMA = (
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

# (analyst, item ε, count, budget ε, spent_after) of a version-1 ledger in which ana's account,
# opened with PureDP(1), was later reopened with PureDP(5) and overspent (what version 1 allowed).
V1_SPENDS = [
    ("ana", 0.5, 2, 1.0, 1.0),
    ("bob", 0.25, 1, 2.0, 0.25),
    ("ana", 0.75, 1, 5.0, 1.75),
    ("ana", 0.125, 1, 5.0, 1.875),
]


def make_v1_ledger(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in V1_SCHEMA:
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [
            ("format", "sharpdp-ledger"),
            ("schema_version", "1"),
            ("created_at", "2025-01-01T00:00:00.000000+00:00"),
            ("created_by", "sharpdp 0.1.0"),
        ],
    )
    for day, (analyst, eps, count, budget, spent) in enumerate(V1_SPENDS, start=1):
        _insert_spend(
            conn,
            (
                analyst,
                "all",
                _text("PureDP", epsilon=eps),
                count,
                f"2025-01-{day:02d}T00:00:00.000000+00:00",
                "epsilon",
                0.0,
                spent,
                _text("PureDP", epsilon=budget),
                "0.1.0",
            ),
        )
    conn.close()


def _schema_state(path: Path) -> tuple[str, set[str]]:
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master").fetchall()}
        return version[0], names
    finally:
        conn.close()


def test_v1_ledger_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    make_v1_ledger(path)
    spends = raw_rows(path)
    start = datetime.now(UTC)
    Ledger(path).close()
    end = datetime.now(UTC)
    version, names = _schema_state(path)
    assert version == "2"
    assert {"budgets", "budgets_by_account", "spends_check_budget"} <= names
    assert raw_rows(path) == spends  # the spends are untouched
    conn = sqlite3.connect(path)
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    rows = conn.execute(
        "SELECT analyst, period, budget, created_at, reason FROM budgets"
    ).fetchall()
    conn.close()
    assert meta["migrated_from_1_by"] == f"sharpdp {sdp.__version__}"
    assert start <= datetime.fromisoformat(meta["migrated_from_1_at"]) <= end
    # Each account gets the budget of its first spend: the one it was opened with.
    assert sorted((a, p, json.loads(b)) for a, p, b, _, _ in rows) == [
        ("ana", "all", {"type": "PureDP", "params": {"epsilon": 1.0}}),
        ("bob", "all", {"type": "PureDP", "params": {"epsilon": 2.0}}),
    ]
    reasons = {a: reason for a, _, _, _, reason in rows}
    assert "schema version 1" in reasons["ana"]
    assert "row 1" in reasons["ana"]
    assert "rows 3, 4" in reasons["ana"]  # the spends checked against PureDP(5) are named
    assert "row 2" in reasons["bob"]
    assert "other budgets" not in reasons["bob"]
    # The overspend is visible, and nothing more can be spent.
    with Accountant(ledger=path, analyst="ana") as ana:
        summary = ana.summary()
        assert (summary.budget, summary.spent, summary.remaining) == (sdp.PureDP(1.0), 1.875, 0.0)
        assert summary.over_budget
        assert "OVER the budget PureDP(epsilon=1.0)" in str(summary)
        assert "over_budget=True" in repr(ana)
        with pytest.raises(sdp.BudgetExceeded):
            ana.spend(sdp.PureDP(0.0))
    with pytest.raises(sdp.LedgerError, match=r"PureDP\(epsilon=1\.0\).*PureDP\(epsilon=5\.0\)"):
        Accountant(sdp.PureDP(5.0), ledger=path, analyst="ana")
    with Accountant(sdp.PureDP(2.0), ledger=path, analyst="bob") as bob:
        assert bob.spend(sdp.PureDP(1.75)).spent_after == 2.0
    # Opening again migrates nothing more.
    with Ledger(path) as ledger:
        assert len(ledger.budgets()) == 2


def test_v1_migration_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "v1.sqlite"
    make_v1_ledger(path)
    spends = raw_rows(path)

    def fail(self: Ledger) -> list[tuple[str, str, str, str]]:
        raise RuntimeError("crash in the middle of the migration")

    monkeypatch.setattr(Ledger, "_seeds", fail)  # runs after the new tables were created
    with pytest.raises(RuntimeError, match="crash"):
        Ledger(path)
    version, names = _schema_state(path)
    assert version == "1"
    assert names.isdisjoint({"budgets", "budgets_by_account", "spends_check_budget"})
    assert raw_rows(path) == spends
    monkeypatch.undo()
    with Ledger(path) as ledger:
        assert len(ledger.budgets()) == 2
    assert _schema_state(path)[0] == "2"


def test_concurrent_openers_migrate_a_v1_ledger_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.sqlite"
    make_v1_ledger(path)
    openers = 4
    validated = threading.Barrier(openers, timeout=30)
    validate = Ledger._validate_rows

    def validate_then_wait(self: Ledger, version: int) -> None:
        validate(self, version)
        if version == 1:
            validated.wait()  # every opener has read version 1 before any of them migrates

    monkeypatch.setattr(Ledger, "_validate_rows", validate_then_wait)
    errors: list[BaseException] = []

    def open_ledger() -> None:
        try:
            Ledger(path).close()
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=open_ledger) for _ in range(openers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT analyst FROM budgets ORDER BY analyst").fetchall() == [
        ("ana",),
        ("bob",),
    ]
    conn.close()


def test_simultaneous_openers_of_a_v1_ledger_all_succeed(tmp_path: Path) -> None:
    """Without a barrier between reading and migrating: an opener could read the table list
    before another's migration committed and its version row after ("no budgets table"), and two
    openers switching the file to WAL at once got SQLITE_BUSY without waiting. Before the fix
    about half of these trials failed (31 and 33 of 60 in two runs), so 15 clean trials would
    pass by chance with probability about 2⁻¹⁵."""
    for trial in range(15):
        path = tmp_path / f"v1-{trial}.sqlite"
        make_v1_ledger(path)
        start = threading.Barrier(6, timeout=30)
        errors: list[BaseException] = []

        def open_ledger(
            path: Path = path,
            start: threading.Barrier = start,
            errors: list[BaseException] = errors,
        ) -> None:
            start.wait()
            try:
                Ledger(path).close()
            except BaseException as err:
                errors.append(err)

        threads = [threading.Thread(target=open_ledger) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], (trial, errors)
        with Ledger(path) as ledger:
            assert len(ledger.budgets()) == 2


def test_the_documented_example_texts_are_what_sharpdp_writes() -> None:
    """docs/ledger.md's example descriptions are the exact texts written for these items."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "ledger.md").read_text(encoding="utf-8")
    block = doc.split("Examples (exact texts written by this version", 1)[1]
    texts = block.split("```text\n", 1)[1].split("```", 1)[0].split()
    items = [
        sdp.PureDP(1.0),
        sdp.ApproxDP(math.inf, 1e-6),
        sdp.TopK(3, 0.5, monotonic=True, sensitivity=2.0),
        sdp.RDP(orders=(2.0, math.inf), epsilons=(1.0, 3.0)),
        sdp.compose([(sdp.Gaussian(sigma=2.0), 3)]),
    ]
    assert texts == [_serialize.dumps(item) for item in items]


def test_a_ledger_with_two_hard_links_is_refused(tmp_path: Path) -> None:
    """SQLite names its write-ahead log and locks after the path: two processes spending through
    two hard links to one ledger each saw only their own spends (50 of 0.1 accepted from a budget
    of 3, 25 rows kept). A symbolic link resolves to one name and stays usable."""
    path = tmp_path / "a.sqlite"
    with sdp.Accountant(sdp.PureDP(3.0), ledger=str(path)) as acct:
        acct.spend(sdp.PureDP(0.1))
    (tmp_path / "sym.sqlite").symlink_to(path)
    with sdp.Accountant(sdp.PureDP(3.0), ledger=str(tmp_path / "sym.sqlite")) as acct:
        assert len(acct.history()) == 1
    os.link(path, tmp_path / "b.sqlite")
    for name in ("a.sqlite", "b.sqlite"):
        with pytest.raises(sdp.LedgerError, match="hard links"):
            sdp.Accountant(sdp.PureDP(3.0), ledger=str(tmp_path / name))


@pytest.mark.parametrize(
    ("analyst", "reason", "message"),
    [
        ("\x00x", "r", "NUL"),
        ("\x00", "r", "NUL"),
        ("\ud800", "r", "valid Unicode"),
        ("ana", "\x00", "NUL"),
    ],
)
def test_names_a_ledger_cannot_store_are_invalid(analyst: str, reason: str, message: str) -> None:
    """A NUL (SQLite's length() stops at it: a LedgerError from the schema's checks) or a lone
    surrogate (a raw UnicodeEncodeError) in an analyst, period or reason is invalid input."""
    with (
        pytest.raises(sdp.InvalidParameter, match=message),
        sdp.Accountant(sdp.PureDP(1.0), analyst=analyst) as acct,
    ):
        acct.set_budget(sdp.PureDP(2.0), reason=reason)


def test_a_count_past_the_ledgers_integers_is_invalid() -> None:
    with sdp.Accountant(sdp.PureDP(1.0)) as acct:
        with pytest.raises(sdp.InvalidParameter, match="count must be <="):
            acct.spend(sdp.PureDP(1e-30), 2**63)
        acct.spend(sdp.PureDP(1e-30), 2**63 - 1)
        assert len(acct.history()) == 1


def test_an_opener_waits_out_the_second_link_of_a_ledger_being_created(tmp_path: Path) -> None:
    """A ledger being created has its temporary name as a second link for a moment (link, then
    unlink): an opener then must wait, not refuse it as hard-linked (8 processes racing to
    create one ledger failed so in about 1 iteration in 7). Here the second link goes after
    0.2 s; a link that stays is refused (the test above)."""
    path = tmp_path / "l.sqlite"
    with sdp.Accountant(sdp.PureDP(1.0), ledger=str(path)) as acct:
        acct.spend(sdp.PureDP(0.1))
    temporary = tmp_path / ".l.sqlite.tmp"
    os.link(path, temporary)
    threading.Timer(0.2, os.unlink, args=(temporary,)).start()
    with sdp.Accountant(sdp.PureDP(1.0), ledger=str(path)) as acct:
        assert len(acct.history()) == 1
