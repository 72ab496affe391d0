"""Values given for a column are matched in its own type, and odd columns are handled or refused
before anything is spent: dates, timestamps, float32 and unsigned 64-bit columns; NaN privacy
units; NULLs in a domain found privately; column names that sharpdp's results use.

Expected values come from pandas on the raw data. Releases use ε = 10⁶ per query on tables where
each person has one row, so every count is exact: the discrete Laplace of scale Δ/ε has
P[Z ≠ 0] ≤ 2e^{−10⁶/Δ} (false-failure rate below 1e-400 per value); selections at such ε pick the
largest score with probability 1 − O(e^{−10⁵}).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import sharpdp as sdp

HUGE = sdp.PureDP(1e6)
BUDGET = sdp.ApproxDP(1e12, 1e-3)
DAYS = [dt.date(2020, 1, 1), dt.date(2020, 1, 2), dt.date(2020, 1, 3)]


@pytest.fixture
def dated() -> pd.DataFrame:
    """300 persons, one row each: day (80 / 140 / 80 rows), a timestamp, a float32, a value."""
    day = [
        DAYS[1] if i % 5 == 0 or i % 3 == 1 else DAYS[0] if i % 3 == 0 else DAYS[2]
        for i in range(300)
    ]
    return pd.DataFrame(
        {
            "uid": np.arange(300),
            "day": day,
            "when": pd.to_datetime([f"2021-06-0{1 + i % 2} 12:00" for i in range(300)]),
            "x": np.array([0.1, 0.2, 0.3] * 100, dtype="float32"),
            "v": np.arange(300) % 10,
        }
    )


def spent(s: sdp.data.Session) -> float:
    return s.accountant.spent()


@pytest.mark.parametrize("form", ["date", "string", "timestamp", "numpy"])
def test_date_keys_in_any_form_count_the_right_rows(dated: pd.DataFrame, form: str) -> None:
    to = {
        "date": lambda d: d,
        "string": lambda d: d.isoformat(),
        "timestamp": pd.Timestamp,
        "numpy": lambda d: np.datetime64(d.isoformat()),
    }[form]
    s = sdp.data.Session(dated, "uid", BUDGET)
    keys = [to(d) for d in DAYS]
    truth = dated.groupby("day").size()
    got = s.count_by("day", keys=keys, privacy=HUGE).run(rng=0).to_pandas()
    assert got["count"].tolist() == [int(truth[d]) for d in DAYS]
    best = s.top_k("day", 1, keys=keys, privacy=HUGE).run(rng=1).to_pandas()["day"].tolist()
    assert best == [pd.Timestamp(DAYS[1])]
    chosen = s.select_best("day", keys=keys, privacy=HUGE).run(rng=2)
    assert pd.Timestamp(chosen.to_pandas()["day"].iloc[0]) == pd.Timestamp(DAYS[1])


def test_date_keys_joined_as_a_table(dated: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the inline limit, keys are semi-joined as a typed table: dates too."""
    from sharpdp.data import _bounding

    monkeypatch.setattr(_bounding, "INLINE_KEYS", 1)
    s = sdp.data.Session(dated, "uid", BUDGET)
    got = s.count_by("day", keys=[d.isoformat() for d in DAYS], privacy=HUGE).run(rng=0)
    sizes = dated.groupby("day").size()
    assert got.to_pandas()["count"].tolist() == [int(sizes[d]) for d in DAYS]


def test_grouped_sums_and_quantiles_by_date(dated: pd.DataFrame) -> None:
    s = sdp.data.Session(dated, "uid", BUDGET)
    sums = s.sum("v", bounds=(0, 10), by="day", keys=DAYS, privacy=HUGE).run(rng=0).to_pandas()
    want = dated.groupby("day")["v"].sum()
    assert np.allclose(sums["sum"], [want[d] for d in DAYS], atol=1e-3)
    q = s.quantile("v", 0.5, bounds=(0, 10), by="day", keys=DAYS, privacy=sdp.PureDP(1e3))
    medians = q.run(rng=0).to_pandas()["quantile"].to_numpy()
    for d, m in zip(DAYS, medians, strict=True):
        values = np.sort(dated.loc[dated["day"] == d, "v"].to_numpy())
        # m splits the group near its middle: at most a few rows off rank n/2
        below = int((values < m).sum())
        assert abs(below - values.size / 2) <= 0.1 * values.size


def test_workload_values_for_dates_are_matched(dated: pd.DataFrame) -> None:
    s = sdp.data.Session(dated, "uid", BUDGET)
    w = sdp.data.predicates({"first": {"day": "2020-01-01"}, "both": {"day": list(DAYS[:2])}})
    got = s.answer(w, privacy=HUGE, rng=0).to_pandas().set_index("query")["count"]
    sizes = dated.groupby("day").size()
    assert got["first"] == sizes[DAYS[0]]
    assert got["both"] == sizes[DAYS[0]] + sizes[DAYS[1]]
    m = sdp.data.marginals(["day"], way=1, domains={"day": [d.isoformat() for d in DAYS]})
    cells = s.answer(m, privacy=HUGE, rng=1).to_pandas()["count"].tolist()
    assert cells == [int(sizes[d]) for d in DAYS]


def test_timestamps_and_time_zones(dated: pd.DataFrame) -> None:
    s = sdp.data.Session(dated, "uid", BUDGET)
    got = s.count_by("when", keys=["2021-06-01 12:00"], privacy=HUGE).run(rng=0).to_pandas()
    assert got["count"].tolist() == [150]
    before = spent(s)
    aware = pd.Timestamp("2021-06-01 12:00", tz="UTC")
    with pytest.raises(sdp.InvalidParameter, match="naive"):
        s.count_by("when", keys=[aware], privacy=HUGE)
    with pytest.raises(sdp.InvalidParameter, match="time of day"):
        s.count_by("day", keys=["2020-01-01 10:00"], privacy=HUGE)
    with pytest.raises(sdp.InvalidParameter, match="not a date"):
        s.count_by("day", keys=["notadate"], privacy=HUGE)
    # pandas reads years before 1, which no engine literal can be written in (a ValueError or
    # NotImplementedError from Ibis: a 500 in the service)
    for column, key in [
        ("day", "-0001-01-01"),
        ("when", "-0001-01-01 10:00"),
        ("day", "0000-06-01"),
    ]:
        with pytest.raises(sdp.InvalidParameter, match="years 1 to 9999"):
            s.count_by(column, keys=[key], privacy=HUGE).run(rng=0)
    assert spent(s) == before


def test_float32_keys_match_their_float32_values(dated: pd.DataFrame) -> None:
    s = sdp.data.Session(dated, "uid", BUDGET)
    got = s.count_by("x", keys=[0.1, 0.3], privacy=HUGE).run(rng=0).to_pandas()
    assert got["count"].tolist() == [100, 100]
    w = sdp.data.marginals(["x"], way=1, domains={"x": [0.1, 0.2, 0.3]})
    assert s.answer(w, privacy=HUGE, rng=0).to_pandas()["count"].tolist() == [100, 100, 100]


def test_integers_beyond_the_column_type_are_refused() -> None:
    s = sdp.data.Session(pd.DataFrame({"uid": range(10), "j": [1, 2] * 5}), "uid", BUDGET)
    with pytest.raises(sdp.InvalidParameter, match="outside the range"):
        s.count_by("j", keys=[2**63], privacy=HUGE)
    assert spent(s) == 0.0


def test_unsigned_64_bit_units_and_keys() -> None:
    big = np.uint64(2**63)
    df = pd.DataFrame(
        {
            "uid": np.arange(10, dtype="uint64") + big,
            "k": (np.arange(10, dtype="uint64") % 2) + big,
        }
    )
    s = sdp.data.Session(df, "uid", BUDGET)
    got = s.count_by("k", keys=[2**63, 2**63 + 1], privacy=HUGE).run(rng=0).to_pandas()
    assert got["count"].tolist() == [5, 5]


@pytest.mark.parametrize("form", ["polars", "arrow"])
def test_nan_privacy_units_are_null_units(form: str) -> None:
    units = [1.0, 2.0, float("nan"), float("nan"), 3.0]
    table: Any = pl.DataFrame({"uid": units}) if form == "polars" else pa.table({"uid": units})
    with pytest.raises(sdp.InvalidParameter, match="NaN"):
        sdp.data.Session(table, "uid", BUDGET)
    s = sdp.data.Session(table, "uid", BUDGET, null_units="drop")
    assert s.count(privacy=HUGE, max_rows=1).run(rng=0).to_pandas()["count"].tolist() == [3]


def test_nulls_are_not_part_of_a_domain_found_privately() -> None:
    df = pd.DataFrame(
        {
            "uid": range(3000),
            "k": ["a", "b", None] * 1000,
            "f": [1.0, np.nan, 2.0] * 1000,
        }
    )
    s = sdp.data.Session(df, "uid", sdp.ApproxDP(1e12, 1e-3))
    got = s.answer(
        sdp.data.marginals(["k", "f"], way=2), privacy=sdp.ApproxDP(1e6, 1e-4), rng=0
    ).to_pandas()
    # the rows are (a, 1), (b, NaN), (NULL, 2): only (a, 1) has both; every cell is released
    assert {(r.k, r.f): r.count for r in got.itertuples()} == {
        ("a", 1.0): 1000,
        ("a", 2.0): 0,
        ("b", 1.0): 0,
        ("b", 2.0): 0,
    }
    syn = s.mwem(sdp.data.marginals(["k", "f"], way=2), privacy=sdp.ApproxDP(1e6, 1e-4), rng=0)
    assert set(dict(syn.domains)["k"]) == {"a", "b"}


@pytest.mark.parametrize(
    "name",
    ["count", "total", "mean", "lower", "rank", "query", "ROWS", "Total", "Persons", "COUNT"],
)
def test_columns_named_like_results_are_refused(name: str) -> None:
    """In any case: the engines match column names regardless of case, so a key ``ROWS`` was read
    in the place of the bounding's ``rows`` and released key value × persons."""
    df = pd.DataFrame({"uid": range(20), name: ["a", "b"] * 10, "v": [1.0] * 20})
    s = sdp.data.Session(df, "uid", BUDGET)
    for build in (
        lambda: s.count_by(name, keys=["a", "b"], privacy=HUGE),
        lambda: s.mean("v", bounds=(0, 2), by=name, keys=["a", "b"], privacy=HUGE),
        lambda: s.top_k(name, 1, keys=["a", "b"], privacy=HUGE),
        lambda: s.answer(sdp.data.marginals([name], way=1), privacy=HUGE, rng=0),
    ):
        with pytest.raises(sdp.InvalidParameter, match="rename the column"):
            build()
    assert spent(s) == 0.0


@pytest.mark.parametrize("name", ["_sdp_md5", "_SDP_V", "_Sdp_unit"])
def test_tables_with_the_bounding_prefix_are_refused(name: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match="reserved"):
        sdp.data.Session(pd.DataFrame({"uid": [1], name: ["a"]}), "uid", BUDGET)


@pytest.mark.parametrize("name", ["n", "N", "pairs", "h"])
def test_key_columns_named_like_intermediate_columns_count_right(name: str) -> None:
    """A key ``n`` made every count with max_rows ≥ 2 fail (the bounding's row count per pair
    was named ``n``); ``N`` would have read it. Bounded counts against pandas: each person's
    rows per key capped at 2, every key kept (κ = 3 ≥ the keys a person has)."""
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"uid": rng.integers(0, 30, 300), name: rng.choice([-5, 7, 11], 300)})
    s = sdp.data.Session(df, "uid", BUDGET)
    got = s.count_by(name, keys=[-5, 7, 11], privacy=HUGE, max_rows=2, max_groups=3).bounded()
    expected = df.groupby(["uid", name]).size().clip(upper=2).groupby(name).sum()
    assert got.set_index(name)["count"].to_dict() == expected.to_dict()


def test_predicate_values_from_series_and_ranges_and_no_nulls(dated: pd.DataFrame) -> None:
    s = sdp.data.Session(dated, "uid", BUDGET)
    w = sdp.data.predicates(
        {
            "series": {"v": pd.Series([1, 2])},
            "range": {"v": range(3, 5)},
        }
    )
    got = s.answer(w, privacy=HUGE, rng=0).to_pandas().set_index("query")["count"]
    assert got["series"] == int(dated["v"].isin([1, 2]).sum())
    assert got["range"] == int(dated["v"].isin([3, 4]).sum())
    with pytest.raises(sdp.InvalidParameter, match="NULL"):
        sdp.data.predicates({"q": {"v": None}})
    with pytest.raises(sdp.InvalidParameter, match="scalars"):
        sdp.data.marginals(["v"], way=1, domains={"v": [[1]]})
    bins = sdp.data.bins(0, 1, 10)
    w = sdp.data.predicates(
        {"q": {"x": 0.3}}, domains={"x": bins}
    )  # the label is 0.30000000000000004
    before = spent(s)
    with pytest.raises(sdp.InvalidParameter, match="not a bin label"):
        s.answer(w, privacy=HUGE, rng=0)
    assert spent(s) == before


def test_date_keys_print_as_dates(dated: pd.DataFrame) -> None:
    s = sdp.data.Session(dated, "uid", BUDGET)
    text = str(s.count_by("day", keys=DAYS, privacy=HUGE).run(rng=0))
    assert "2020-01-02" in text
    assert "00:00:00" not in text


def test_decimal_columns_take_floats_by_their_decimal_text() -> None:
    dec = pa.array(
        [Decimal("1.10")] * 2 + [Decimal("2.25")] * 3 + [Decimal("-3.00")],
        type=pa.decimal128(10, 2),
    )
    s = sdp.data.Session(pa.table({"uid": list(range(6)), "dec": dec}), "uid", BUDGET)
    got = s.count_by("dec", keys=[1.1, 2.25, -3], privacy=HUGE).run(rng=0).to_pandas()
    assert got["count"].tolist() == [2, 3, 1]
    w = sdp.data.predicates({"p": {"dec": 1.1}})
    assert s.answer(w, privacy=HUGE, rng=0).to_pandas()["count"].tolist() == [2]
    before = spent(s)
    with pytest.raises(sdp.InvalidParameter, match="more decimal places"):
        s.count_by("dec", keys=[1.123], privacy=HUGE)
    for too_long in (123456789.0, 1e30, Decimal("1e40")):  # decimal(10, 2): ≤ 8 integer digits
        with pytest.raises(sdp.InvalidParameter, match="more digits"):
            s.count_by("dec", keys=[too_long], privacy=HUGE)
    assert spent(s) == before


def test_integer_keys_with_nulls_keep_their_integer_values() -> None:
    """Pandas turns an integer column with NULLs into float64, which changes integers beyond
    2^53: 2^53 + 1 would become 2^53 and its count would be lost."""
    big = 2**53 + 1
    k = pd.array([big] * 3 + [big + 1] * 3 + [None] * 3, dtype="Int64")
    s = sdp.data.Session(pd.DataFrame({"uid": range(9), "k": k}), "uid", BUDGET)
    target = sdp.ApproxDP(1e6, 1e-5)
    got = s.count_by("k", privacy=target).run(rng=0).to_pandas()
    assert got["k"].tolist()[:2] == [big, big + 1]
    assert got["count"].tolist()[:2] == [3, 3]
    cells = s.answer(sdp.data.marginals(["k"], way=1), privacy=target, rng=0).to_pandas()
    assert dict(zip(cells["k"], cells["count"], strict=True)) == {big: 3, big + 1: 3}


@pytest.mark.parametrize("values", [10, 300])  # an IN list, and a joined table (> 256 values)
def test_unsigned_64_bit_domains_found_privately(values: int) -> None:
    u = np.repeat(np.arange(values, dtype=np.uint64) + np.uint64(2**63), 3)
    s = sdp.data.Session(pd.DataFrame({"uid": range(u.size), "u": u}), "uid", BUDGET)
    target = sdp.ApproxDP(1e6, 1e-5)
    got = s.answer(sdp.data.marginals(["u"], way=1), privacy=target, rng=0).to_pandas()
    assert len(got) == values
    assert set(got["count"]) == {3}


def test_many_multi_column_keys_are_joined_not_nested() -> None:
    """2,000 (a, b) keys: one OR of 2,000 conjunctions exceeded Python's recursion limit."""
    n = 3000
    df = pd.DataFrame({"uid": range(n), "a": np.arange(n) % 50, "b": (np.arange(n) // 50) % 40})
    s = sdp.data.Session(df, "uid", BUDGET)
    keys = [(i, j) for i in range(50) for j in range(40)]
    got = s.count_by(["a", "b"], keys=keys, privacy=HUGE).run(rng=0).to_pandas()
    truth = df.groupby(["a", "b"]).size()
    assert got["count"].tolist() == [int(truth.get(k, 0)) for k in keys]


def test_keys_from_unique_of_extension_columns() -> None:
    df = pd.DataFrame(
        {
            "uid": range(6),
            "c": pd.Categorical(list("xyxyxz")),
            "s": pd.array(["a", "b", "a", None, "b", "a"], dtype="string"),
        }
    )
    s = sdp.data.Session(df, "uid", BUDGET)
    got = s.count_by("c", keys=df["c"].unique(), privacy=HUGE).run(rng=0).to_pandas()
    assert dict(zip(got["c"], got["count"], strict=True)) == {"x": 3, "y": 2, "z": 1}
    with pytest.raises(sdp.InvalidParameter, match="NULL"):
        s.count_by("s", keys=df["s"].unique(), privacy=HUGE)  # holds <NA>


def test_select_best_takes_an_approximate_zcdp_target() -> None:
    s = sdp.data.Session(pd.DataFrame({"uid": range(6), "c": list("xyxyxz")}), "uid", BUDGET)
    q = s.select_best("c", keys=["x", "y", "z"], privacy=sdp.ApproxZCDP(1e4, 1e-6))
    assert q.run(rng=0).to_pandas()["c"].tolist() == ["x"]


def _decimal_and_nanosecond_table() -> pa.Table:
    """20 persons at 1.1234 and 10 at 1.1230 in a decimal(19, 4) column (and 1e20 in a
    decimal(38, 10) one); 20 at 1 ns past midnight and 10 at midnight in a nanosecond column."""
    return pa.table(
        {
            "who": [f"p{i}" for i in range(30)],
            "k": pa.array([Decimal("1.1234")] * 20 + [Decimal("1.1230")] * 10, pa.decimal128(19, 4)),
            "big": pa.array([Decimal("1e20")] * 30, pa.decimal128(38, 10)),
            "v": pa.array([Decimal("1.1234")] * 20 + [Decimal("1.1230")] * 10, pa.decimal128(19, 4)),
            "ns": pa.array([1_577_836_800_000_000_001] * 20 + [1_577_836_800_000_000_000] * 10,
                           pa.timestamp("ns")),
        }
    )  # fmt: skip


def test_decimal_and_nanosecond_keys_keep_all_their_digits() -> None:
    """A key is compared in the column's own type: Ibis had written decimal keys as
    DECIMAL(18, 3) (1.1234 matched 1.123, no row: a count of 0 where pandas counts 20) and
    timestamp keys in microseconds (a nanosecond key matched no row); keys of more than 28
    digits were refused (Python's default decimal context) though the column holds them."""
    s = sdp.data.Session(_decimal_and_nanosecond_table(), "who", BUDGET)
    counts = s.count_by("k", keys=[Decimal("1.1234"), Decimal("1.123")], privacy=HUGE)
    assert counts.run(rng=0).to_pandas()["count"].tolist() == [20, 10]
    big = s.count_by("big", keys=[Decimal("1e20")], privacy=HUGE).run(rng=0).to_pandas()
    assert big["count"].tolist() == [30]
    tick = pd.Timestamp("2020-01-01 00:00:00.000000001")
    ns = s.count_by("ns", keys=[tick, pd.Timestamp("2020-01-01")], privacy=HUGE)
    assert ns.run(rng=0).to_pandas()["count"].tolist() == [20, 10]
    # (a copy of k summed by k: a sum's own column is no by-column)
    total = s.sum("v", bounds=(0, 2), by="k", keys=[Decimal("1.1234")], privacy=HUGE)
    assert float(total.run(rng=0).to_pandas()["sum"].iloc[0]) == pytest.approx(
        20 * 1.1234,
        abs=0.2,  # (values on the sum's grid)
    )


def test_duration_keys_are_refused_by_their_type() -> None:
    """Durations (pandas timedelta, Polars Duration: intervals in the engine) failed in Arrow
    when the result came back, before the spend; they are refused when the query is built."""
    frame = pd.DataFrame({"who": ["a", "b", "c"], "d": pd.to_timedelta([1, 2, 3], unit="h")})
    s = sdp.data.Session(frame, "who", BUDGET)
    for build in (
        lambda: s.count_by("d", privacy=HUGE),
        lambda: s.top_k("d", k=1, keys=[pd.Timedelta(hours=1)], privacy=HUGE),
        lambda: s.count_by(["d"], keys=[(pd.Timedelta(hours=1),)], privacy=HUGE),
    ):
        with pytest.raises(sdp.InvalidParameter, match="durations"):
            build()
    assert spent(s) == 0.0


def test_byte_string_and_time_keys_are_checked() -> None:
    """Keys of binary and time columns passed unchecked: a str for a byte-string column, or a
    time's text, matched the rows in the engine but not in the released table (a count of 0
    where 2 persons hold it). Now bytes are required and a time's text is read as a time."""
    table = pa.table(
        {
            "who": ["a", "b", "c", "d"],
            "b": pa.array([b"\x00", b"\x00", b"ab", b"ab"], pa.binary()),
            "tm": pa.array([dt.time(1, 2, 3)] * 2 + [dt.time(4, 5, 6)] * 2, pa.time64("us")),
        }
    )
    s = sdp.data.Session(table, "who", BUDGET)
    got = s.count_by("b", keys=[b"\x00", b"ab"], privacy=HUGE).run(rng=0).to_pandas()
    assert got["count"].tolist() == [2, 2]
    got = s.count_by("tm", keys=[dt.time(1, 2, 3), "04:05:06"], privacy=HUGE).run(rng=0)
    assert got.to_pandas()["count"].tolist() == [2, 2]
    before = spent(s)
    for column, key, message in (("b", "ab", "not a byte string"), ("tm", "25:00", "time of day")):
        with pytest.raises(sdp.InvalidParameter, match=message):
            s.count_by(column, keys=[key], privacy=HUGE)
    assert spent(s) == before


@pytest.mark.parametrize(
    "table",
    [
        pd.DataFrame({"who": ["a", "b"], "x": pd.period_range("2020-01", periods=2, freq="M")}),
        pd.DataFrame({"who": ["a", "b"], "x": [1, "b"]}),
        pa.table({"who": ["a", "b"], "x": pa.array([1, 2], pa.float16())}),
        pa.table({"who": ["a", "b"], "x": pa.array([b"ab", b"cd"], pa.binary(2))}),
        pl.DataFrame({"who": ["a", "b"], "x": pl.Series([1, 2], dtype=pl.Int128)}),
    ],
    ids=["period", "mixed-objects", "float16", "fixed-size-binary", "int128"],
)
def test_columns_the_engine_cannot_hold_are_named_when_the_session_opens(table: Any) -> None:
    """These raised AttributeError, ArrowTypeError, DuckDB's NotImplementedException or a bare
    KeyError from inside Ibis."""
    with pytest.raises(sdp.InvalidParameter, match=r"cannot load this .* convert the offending"):
        sdp.data.Session(table, "who", BUDGET)


def test_one_far_date_or_midnight_time_fails_no_query(tmp_path: Any) -> None:
    """Two values one person could hold made queries fail before the spend (a free test of
    whether anyone holds them): a date beyond the timestamp range (public date keys were
    compared as timestamps, so DuckDB cast every row's date) and the time 24:00:00 (which
    DuckDB's TIME holds and Python's cannot: the key table failed to come back). On both
    neighbours every query now releases."""
    far = int(300_000 * 365.25)  # a date in the year ~302,000 (date32: days since 1970)
    for victim in (True, False):
        days = [18_262] * 50 + ([far] if victim else [])
        table = pa.table(
            {"who": [f"p{i}" for i in range(len(days))], "d": pa.array(days, pa.date32())}
        )
        s = sdp.data.Session(table, "who", BUDGET)
        got = s.count_by("d", keys=[dt.date(2020, 1, 1)], privacy=HUGE).run(rng=0).to_pandas()
        assert got["count"].tolist() == [50]
        path = tmp_path / f"times-{victim}.csv"
        extra = "victim,24:00:00\n" if victim else ""
        path.write_text("who,t\n" + "".join(f"p{i},12:00:00\n" for i in range(50)) + extra)
        for schema in (None, {"t": "time"}):
            s = sdp.data.Session(str(path), "who", BUDGET, schema=schema)
            got = s.count_by("t", privacy=sdp.ApproxDP(1e6, 1e-8)).run(rng=0).to_pandas()
            assert got["t"].tolist() == [dt.time(12)]
            assert got["count"].tolist() == [50]


def test_workload_and_mwem_cells_take_the_schema_dtypes() -> None:
    """Workload cells came back as objects (integers, booleans), and a date column as
    datetime64[ms] or [s] depending on whether its domain was declared; MWEM's synthetic cells
    as int64/bool, and its answers as objects. All now take the schema's dtypes, as every
    other release."""
    frame = pd.DataFrame(
        {
            "who": [f"p{i}" for i in range(8)],
            "i": pd.array([1, 1, 2, 2, 3, 3, 1, 2], dtype="Int16"),
            "b": [True, False] * 4,
            "d": [DAYS[i % 2] for i in range(8)],
        }
    )
    s = sdp.data.Session(frame, "who", BUDGET)
    want = {"i": "Int64", "b": "boolean", "d": "datetime64[ms]"}
    found = s.answer(sdp.data.marginals(["i", "b", "d"], way=1), privacy=sdp.ApproxDP(1e6, 1e-8))
    domains = {"i": [1, 2, 3], "b": [True, False], "d": DAYS[:2]}
    declared = s.answer(sdp.data.marginals(["i", "b", "d"], way=1, domains=domains), privacy=HUGE)
    for release in (found, declared):
        out = release.to_pandas()
        assert {c: str(out[c].dtype) for c in want} == want
    w = sdp.data.marginals(["i", "b"], way=1, domains={"i": [1, 2, 3], "b": [True, False]})
    syn = s.mwem(w, privacy=HUGE, rounds=3, rng=0)
    for out in (syn.to_pandas(), syn.sample(rng=0), syn.answer(w)):
        assert {c: str(out[c].dtype) for c in ("i", "b")} == {"i": "Int64", "b": "boolean"}


def test_float_keys_take_the_column_float_dtype_in_every_release() -> None:
    """A float key column came back as objects from a workload (NaN in the rows of the other
    marginals), as float64 from public keys and as float32 from the engine for a float32 column.
    Every release now gives the column's own float dtype (NaN where a row has no such key)."""
    frame = pd.DataFrame(
        {
            "who": [f"p{i}" for i in range(8)],
            "x": np.array([0.5, 1.5] * 4, dtype="float32"),
            "f": [0.25, 0.75] * 4,
            "k": ["a", "b", "c", "d"] * 2,
        }
    )
    s = sdp.data.Session(frame, "who", BUDGET)
    want = {"x": "float32", "f": "float64"}
    domains = {"x": [0.5, 1.5], "f": [0.25, 0.75], "k": ["a", "b"]}
    w = sdp.data.marginals(["x", "f", "k"], way=1, domains=domains)
    out = s.answer(w, privacy=HUGE, rng=0).to_pandas()
    assert {c: str(out[c].dtype) for c in want} == want
    assert out["x"].isna().sum() == 4  # the other marginals' rows
    assert out["f"].isna().sum() == 4
    assert out.loc[out["query"] == "x", "x"].tolist() == [0.5, 1.5]
    for keys in ([0.5, 1.5], None):
        got = s.count_by("x", keys=keys, privacy=sdp.ApproxDP(1e6, 1e-8)).run(rng=0).to_pandas()
        assert str(got["x"].dtype) == "float32", keys
        assert got["count"].tolist() == [4, 4]


@pytest.mark.parametrize(
    ("dtype", "key"),
    [("float32", 1e39), ("float32", -1e300), ("float32", 10**400), ("float64", 10**400)],
)
def test_a_float_key_past_the_columns_range_is_refused(dtype: str, key: object) -> None:
    """1e39 became a float32 inf (counting the column's +inf rows under a key no one asked for);
    10**400 raised OverflowError. An infinite key asked as such still matches."""
    df = pd.DataFrame({"uid": range(4), "f": np.array([1.0, np.inf, 2.0, 3.0], dtype=dtype)})
    s = sdp.data.Session(df, "uid", BUDGET)
    with pytest.raises(sdp.InvalidParameter, match="outside the range"):
        s.count_by("f", keys=[key, 1.0], privacy=HUGE)
    got = s.count_by("f", keys=[math.inf, 1.0], privacy=HUGE).bounded()
    assert got["count"].tolist() == [1, 1]
    assert spent(s) == 0.0
