"""Bad input: a clear sharpdp error naming the parameter, and nothing spent."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import sharpdp as sdp

FRUITS = ["apple", "banana", "cherry", "date", "elder"]
P = sdp.PureDP(0.1)
A = sdp.ApproxDP(0.1, 1e-8)


@pytest.fixture
def session(small: pd.DataFrame) -> sdp.data.Session:
    return sdp.data.Session(small.assign(label=small["fruit"]), "person", sdp.PureDP(1.0), seed=0)


BAD_QUERIES: list[tuple[str, Callable[[Any], Any], str]] = [
    ("unknown key column", lambda s: s.count_by("colour", keys=FRUITS, privacy=P), "colour"),
    ("unknown by column", lambda s: s.sum("amount", (0, 1), privacy=P, by="x", keys=[1]), "by"),
    ("unknown sum column", lambda s: s.sum("weight", (0, 1), privacy=P), "weight"),
    ("non-numeric sum", lambda s: s.sum("fruit", (0, 1), privacy=P), "numeric"),
    ("non-numeric mean", lambda s: s.mean("label", (0, 1), privacy=P), "numeric"),
    ("reversed bounds", lambda s: s.sum("amount", (10, 0), privacy=P), "bounds"),
    ("equal bounds", lambda s: s.mean("amount", (3, 3), privacy=P), "bounds"),
    ("NaN bound", lambda s: s.sum("amount", (float("nan"), 1), privacy=P), r"bounds\[0\]"),
    ("k = 0", lambda s: s.top_k("fruit", 0, keys=FRUITS, privacy=P), "k"),
    ("k < 0", lambda s: s.top_k("fruit", -2, keys=FRUITS, privacy=P), "k"),
    ("k too large", lambda s: s.top_k("fruit", 6, keys=FRUITS, privacy=P), "k"),
    ("no candidates", lambda s: s.top_k("fruit", 1, keys=[], privacy=P), "keys"),
    (
        "by without keys",
        lambda s: s.top_k("fruit", 1, keys=FRUITS, privacy=P, by="label"),
        "by_keys",
    ),
    (
        "max_groups 0",
        lambda s: s.count_by("fruit", keys=FRUITS, privacy=P, max_groups=0),
        "max_groups",
    ),
    (
        "max_groups past int64",  # failed in the engine (a TypeError) after explain() priced it
        lambda s: s.count_by("fruit", keys=FRUITS, privacy=P, max_groups=2**63),
        "max_groups must be <=",
    ),
    ("max_rows float", lambda s: s.count(privacy=P, max_rows=1.5), "max_rows"),
    ("privacy type", lambda s: s.count(privacy=0.1), "privacy"),
    ("pure unknown keys", lambda s: s.count_by("fruit", privacy=P), "privacy"),
    (
        "grouping by the unit",
        lambda s: s.count_by("person", keys=["p001"], privacy=P),
        "privacy unit",
    ),
    ("sum by without keys", lambda s: s.sum("amount", (0, 1), privacy=P, by="fruit"), "keys"),
    ("duplicate keys", lambda s: s.count_by("fruit", keys=["apple", "apple"], privacy=P), "keys"),
    # unhashable key values raised TypeError from the duplicate check
    (
        "a bytearray key",
        lambda s: s.count_by("fruit", keys=[bytearray(b"a")], privacy=P),
        "single values",
    ),
    (
        "a list inside a two-column key",
        lambda s: s.count_by(["fruit", "label"], keys=[("apple", ["x"])], privacy=P),
        "single values",
    ),
    (
        "a list in a key table's cell",
        lambda s: s.count_by("fruit", keys=pd.DataFrame({"fruit": [["apple"]]}), privacy=P),
        "single values",
    ),
    # quantile and top_k refused their column as a by-column; sums and means did not
    (
        "sum by its own column",
        lambda s: s.sum("amount", (0, 1), privacy=P, by="amount", keys=[1]),
        "by must not contain",
    ),
    (
        "mean by its own column",
        lambda s: s.mean("amount", (0, 1), privacy=P, by="amount", keys=[1]),
        "by must not contain",
    ),
    ("quantile q < 0", lambda s: s.quantile("amount", -0.1, (0, 1), privacy=P), "q must"),
    ("quantile q > 1", lambda s: s.quantile("amount", 1.5, (0, 1), privacy=P), "q must"),
    ("quantile q NaN", lambda s: s.quantile("amount", float("nan"), (0, 1), privacy=P), "q"),
    ("quantile reversed bounds", lambda s: s.quantile("amount", 0.5, (9, 1), privacy=P), "bounds"),
    (
        "quantile infinite bound",
        lambda s: s.quantile("amount", 0.5, (0, math.inf), privacy=P),
        "bounds",
    ),
    ("quantile non-numeric", lambda s: s.quantile("label", 0.5, (0, 1), privacy=P), "numeric"),
    ("quantile unknown column", lambda s: s.quantile("weight", 0.5, (0, 1), privacy=P), "weight"),
    ("quantile cells 0", lambda s: s.quantile("amount", 0.5, (0, 1), privacy=P, cells=0), "cells"),
    (
        "quantile by without keys",
        lambda s: s.quantile("amount", 0.5, (0, 1), privacy=P, by="fruit"),
        "keys",
    ),
    ("quantile privacy type", lambda s: s.quantile("amount", 0.5, (0, 1), privacy=0.1), "privacy"),
    ("unknown top_k k = 0", lambda s: s.top_k("fruit", 0, privacy=A), "k"),
    ("unknown top_k k < 0", lambda s: s.top_k("fruit", -1, privacy=A), "k"),
    ("unknown top_k pure", lambda s: s.top_k("fruit", 2, privacy=P), "privacy"),
    ("unknown top_k zCDP", lambda s: s.top_k("fruit", 2, privacy=sdp.ZCDP(0.1)), "privacy"),
    ("unknown top_k δ = 0", lambda s: s.top_k("fruit", 2, privacy=sdp.ApproxDP(1, 0)), "privacy"),
    ("unknown top_k k_bar < k", lambda s: s.top_k("fruit", 3, privacy=A, k_bar=2), "k_bar"),
    ("unknown top_k by = column", lambda s: s.top_k("fruit", 2, privacy=A, by="fruit"), "by"),
    (
        "public top_k with k_bar",
        lambda s: s.top_k("fruit", 2, keys=FRUITS, privacy=P, k_bar=9),
        "k_bar",
    ),
    # keys of another type than their column: engines fail only while running, after the spend
    ("int keys, text column", lambda s: s.count_by("fruit", keys=[1, 2], privacy=P), "'fruit'"),
    ("mixed keys", lambda s: s.count_by("fruit", keys=["apple", 3], privacy=P), "holds strings"),
    (
        "text keys, float column",
        lambda s: s.count_by("amount", keys=["1"], privacy=P),
        "holds numbers",
    ),
    ("bool keys, text column", lambda s: s.top_k("fruit", 1, keys=[True], privacy=P), "keys"),
    (
        "int by_keys, text column",
        lambda s: s.top_k("fruit", 1, keys=FRUITS, privacy=P, by="label", by_keys=[1]),
        "by_keys",
    ),
    ("int candidates", lambda s: s.select_best("fruit", keys=[1, 2], privacy=P), "keys"),
    (
        "marginal domain of ints, text column",
        lambda s: s.answer(
            sdp.data.marginals(["fruit"], way=1, domains={"fruit": [1, 2]}), privacy=P
        ),
        r"domains\['fruit'\]",
    ),
    (
        "MWEM domain of ints, text column",
        lambda s: s.mwem(
            sdp.data.marginals(["fruit"], way=1, domains={"fruit": [1, 2]}), privacy=sdp.PureDP(1)
        ),
        r"domains\['fruit'\]",
    ),
    (
        "predicate value of another type",
        lambda s: s.answer(sdp.data.predicates({"q": {"fruit": [7]}}), privacy=P),
        r"predicates\['q'\]",
    ),
    (
        "two key columns, keys as strings",
        lambda s: s.count_by(["fruit", "label"], keys=["ab", "cd"], privacy=P),
        "2 value",
    ),
    (
        "infinite ε",
        lambda s: s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(math.inf)),
        "privacy",
    ),
    ("infinite ρ", lambda s: s.count(privacy=sdp.ZCDP(math.inf)), "privacy"),
]


@pytest.mark.parametrize(("case", "build", "names"), BAD_QUERIES, ids=[c[0] for c in BAD_QUERIES])
def test_bad_query_raises_naming_parameter(
    session: sdp.data.Session, case: str, build: Callable[[Any], Any], names: str
) -> None:
    with pytest.raises(sdp.SharpDPError, match=names):
        build(session)
    assert session.accountant.history() == ()


def test_unknown_keys_need_a_budget_with_delta(session: sdp.data.Session) -> None:
    # the session's budget is PureDP(1.0): LimitDom's δ cannot be paid
    with pytest.raises(sdp.SharpDPError, match="budget"):
        session.top_k("fruit", 2, privacy=A)
    assert session.accountant.history() == ()


def test_unknown_privacy_unit(small: pd.DataFrame) -> None:
    with pytest.raises(sdp.InvalidParameter, match=r"privacy_unit.*'who'"):
        sdp.data.Session(small, "who", sdp.PureDP(1.0))


def test_null_units_refused_by_default_and_dropped_on_request(small: pd.DataFrame) -> None:
    holes = small.copy()
    holes.loc[holes.index[:7], "person"] = None
    with pytest.raises(sdp.InvalidParameter, match=r"privacy_unit.*NULL"):
        sdp.data.Session(holes, "person", sdp.PureDP(1.0))
    s = sdp.data.Session(holes, "person", sdp.PureDP(1e9), null_units="drop", seed=0)
    r = s.count(privacy=sdp.PureDP(1e3), max_rows=100).run(rng=0).to_pandas()
    assert int(r["count"].iloc[0]) == len(small) - 7  # no noise at this ε (P[Z ≠ 0] < 1e-40)
    with pytest.raises(sdp.InvalidParameter, match="null_units"):
        sdp.data.Session(holes, "person", sdp.PureDP(1.0), null_units="ignore")


def test_empty_table(small: pd.DataFrame, tmp_path: Any) -> None:
    with pytest.raises(sdp.InvalidParameter, match="empty"):
        sdp.data.Session(small.iloc[:0], "person", sdp.PureDP(1.0))
    # every unit NULL: empty once they are dropped, refused alike (it ran and spent before)
    holes = small.assign(person=None)
    with pytest.raises(sdp.InvalidParameter, match="no rows to query"):
        sdp.data.Session(holes, "person", sdp.PureDP(1.0), null_units="drop")
    # a column with no value at all has no type (it failed in the engine), refused by name
    with pytest.raises(sdp.InvalidParameter, match=r"privacy_unit.*NULL"):
        sdp.data.Session(holes, "person", sdp.PureDP(1.0))
    zero = tmp_path / "zero.csv"
    zero.write_text("", encoding="utf-8")
    with pytest.raises(sdp.InvalidParameter, match="0 bytes"):
        sdp.data.Session(str(zero), "person", sdp.PureDP(1.0))


def test_bad_table_and_budget(small: pd.DataFrame, tmp_path: Any) -> None:
    with pytest.raises(sdp.InvalidParameter, match="table"):
        sdp.data.Session({"person": [1]}, "person", sdp.PureDP(1.0))
    with pytest.raises(sdp.InvalidParameter, match="table"):
        sdp.data.Session(str(tmp_path / "missing.csv"), "person", sdp.PureDP(1.0))
    with pytest.raises(sdp.InvalidParameter, match="budget"):
        sdp.data.Session(small, "person", sdp.GDP(1.0))


def test_an_engine_sharpdp_does_not_run_on_is_refused_when_the_session_opens(
    small: pd.DataFrame, tmp_path: Any
) -> None:
    """An Ibis table on SQLite (no MD5 for the bounding hash), or SQLite passed as the engine,
    is refused by name at open, before any query: it used to fail in the engine per query."""
    import warnings

    import ibis

    con = ibis.sqlite.connect(tmp_path / "data.db")
    with warnings.catch_warnings():  # (Ibis's SQLite loader calls APIs pandas 3 deprecates)
        warnings.simplefilter("ignore")
        on_sqlite = con.create_table("t", small)
    for table, engine in ((on_sqlite, None), (small, con)):
        with pytest.raises(sdp.InvalidParameter, match=r"DuckDB.*PySpark.*'sqlite'"):
            sdp.data.Session(table, "person", sdp.PureDP(1.0), engine=engine)


def test_bad_level(session: sdp.data.Session) -> None:
    r = session.count(privacy=P).run(rng=0)
    with pytest.raises(sdp.InvalidParameter, match="level"):
        r.to_pandas(level=1.0)


def test_array_keys_are_a_list_of_keys(small: pd.DataFrame) -> None:
    """A numpy array, a Series or an Index of keys (``df[col].unique()``) is taken as the list."""
    import numpy as np

    frames = [  # a session each: the same seed, so the same salt
        sdp.data.Session(small, "person", sdp.PureDP(1e8), seed=0)
        .count_by("fruit", keys=keys, privacy=sdp.PureDP(1e6))
        .run(rng=0)
        .to_pandas()
        for keys in (
            FRUITS,
            np.array(FRUITS),
            pd.Series(FRUITS),
            pd.Index(FRUITS),
            np.array([[f] for f in FRUITS]),  # a one-column 2-D array (df[["fruit"]].values)
            [[f] for f in FRUITS],  # rows as lists
        )
    ]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])
