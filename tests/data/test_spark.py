"""The same queries on DuckDB and on PySpark (local mode) release identical values.

Same data, same session seed (so the same salts), same noise seed: the portable seeded hash keeps the
same rows on both engines, the group tables come back equal, and the noise is drawn in the same
order, so every released value must be equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ibis
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sharpdp as sdp
from sharpdp.data import _bounding, _engine

# py4j (PySpark's bridge to the JVM) leaves sockets for the garbage collector; not ours to fix.
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

QUERIES: list[tuple[str, Callable[[Any, list[str], list[str]], Any]]] = [
    ("count", lambda s, c, d: s.count(privacy=sdp.PureDP(0.5), max_rows=4)),
    (
        "count_by public",
        lambda s, c, d: s.count_by(
            "carrier", keys=c, privacy=sdp.PureDP(0.5), max_groups=2, max_rows=3
        ),
    ),
    (
        "count_by unknown",
        lambda s, c, d: s.count_by(
            ["origin", "dest"], privacy=sdp.ApproxDP(0.5, 1e-8), max_groups=3
        ),
    ),
    (
        "sum",
        lambda s, c, d: s.sum("air_time", bounds=(0.0, 500.5), privacy=sdp.PureDP(0.5), max_rows=3),
    ),
    (
        "sum per person by",
        lambda s, c, d: s.sum(
            "dep_delay",
            bounds=(-300.0, 3000.5),
            privacy=sdp.PureDP(0.5),
            by="carrier",
            keys=c,
            max_groups=2,
            clamp="person",
        ),
    ),
    (
        "mean by",
        lambda s, c, d: s.mean(
            "dep_delay",
            bounds=(-60, 600),
            privacy=sdp.PureDP(0.5),
            max_rows=5,
            by="carrier",
            keys=c,
            max_groups=2,
        ),
    ),
    (
        "top_k by",
        lambda s, c, d: s.top_k(
            "dest",
            5,
            keys=d,
            privacy=sdp.PureDP(1.0),
            max_groups=3,
            by="origin",
            by_keys=["EWR", "JFK", "LGA"],
        ),
    ),
    (
        "select_best",
        lambda s, c, d: s.select_best("dest", keys=d, privacy=sdp.PureDP(0.5), max_groups=2),
    ),
    (
        "quantile",
        lambda s, c, d: s.quantile("air_time", 0.5, bounds=(0, 700), privacy=sdp.PureDP(0.5)),
    ),
    (
        "quantile by",
        lambda s, c, d: s.quantile(
            "dep_delay",
            0.9,
            bounds=(-30.0, 300.5),
            privacy=sdp.ZCDP(0.05),
            max_rows=3,
            by="carrier",
            keys=c,
            max_groups=2,
            cells=512,
        ),
    ),
    (
        "workload marginals",
        lambda s, c, d: s.workload(
            sdp.data.marginals(
                ["origin", "carrier"],
                way=2,
                domains={"origin": ["EWR", "JFK", "LGA"], "carrier": c},
            ),
            privacy=sdp.ZCDP(0.5),
            max_rows=2,
        ),
    ),
    (
        "workload discovered domain and bins",
        lambda s, c, d: s.workload(
            sdp.data.marginals(
                ["carrier", "air_time"], way=2, domains={"air_time": sdp.data.bins(0, 700, 7)}
            ),
            privacy=sdp.ApproxDP(1.0, 1e-7),
        ),
    ),
    (
        "mwem",
        lambda s, c, d: s.mwem_query(
            sdp.data.marginals(
                ["origin", "carrier"],
                way=1,
                domains={"origin": ["EWR", "JFK", "LGA"], "carrier": c},
            ),
            privacy=sdp.PureDP(1.0),
            rounds=5,
        ),
    ),
    (
        "top_k unknown by",
        lambda s, c, d: s.top_k(
            "dest", 5, privacy=sdp.ApproxDP(20.0, 1e-6), max_groups=3, max_rows=1, by="origin"
        ),
    ),
]


@pytest.fixture(scope="module")
def both(
    flights: pd.DataFrame, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[sdp.data.Session, sdp.data.Session]:
    cols = ["tailnum", "carrier", "origin", "dest", "air_time", "dep_delay"]
    path = str(tmp_path_factory.mktemp("flights") / "flights.parquet")
    flights[cols].to_parquet(path, index=False)
    budget = sdp.ApproxDP(1e6, 1e-3)
    duck = sdp.data.Session(path, "tailnum", budget, null_units="drop", seed=42)
    spark.read.parquet(path).createOrReplaceTempView("flights")
    with _engine.quiet():
        table = ibis.pyspark.connect(spark).table("flights")
    on_spark = sdp.data.Session(table, "tailnum", budget, null_units="drop", seed=42)
    return duck, on_spark


def test_engines(both: tuple[sdp.data.Session, sdp.data.Session]) -> None:
    duck, on_spark = both
    assert (duck.engine, on_spark.engine) == ("duckdb", "pyspark")


@pytest.mark.parametrize(("name", "build"), QUERIES, ids=[q[0] for q in QUERIES])
def test_same_release_on_duckdb_and_spark(
    both: tuple[sdp.data.Session, sdp.data.Session],
    flights: pd.DataFrame,
    name: str,
    build: Callable[[Any, list[str], list[str]], Any],
) -> None:
    carriers = sorted(flights["carrier"].unique())
    dests = sorted(flights["dest"].unique())
    duck, on_spark = both
    # each session builds the same sequence of queries (parametrised in order), so salts agree
    q_duck = build(duck, carriers, dests)
    q_spark = build(on_spark, carriers, dests)
    assert q_duck.bounding.salt == q_spark.bounding.salt
    a = q_duck.run(rng=2026).to_pandas(level=0.95)
    b = q_spark.run(rng=2026).to_pandas(level=0.95)
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert len(a) > 0


def test_same_release_when_duckdb_ranks_raw_rows(
    both: tuple[sdp.data.Session, sdp.data.Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB on the rows plan (which it takes on large tables with few rows per pair), Spark on
    the pairs plan: the same pairs are kept, so the releases are identical."""
    duck, on_spark = both
    real = _bounding.pair_plan
    chosen: list[str] = []

    def plan(table: Any, *args: Any) -> str:
        chosen.append("rows" if _bounding._engine_name(table) == "duckdb" else real(table, *args))
        return chosen[-1]

    monkeypatch.setattr(_bounding, "pair_plan", plan)
    privacy = sdp.ApproxDP(1.0, 1e-6)
    q_duck = duck.count_by("dest", keys=None, privacy=privacy, max_groups=3, max_rows=2)
    q_spark = on_spark.count_by("dest", keys=None, privacy=privacy, max_groups=3, max_rows=2)
    assert q_duck.bounding.salt == q_spark.bounding.salt
    a = q_duck.run(rng=7).to_pandas(level=0.95)
    b = q_spark.run(rng=7).to_pandas(level=0.95)
    assert chosen == ["rows", "pairs"]
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert len(a) > 20


@pytest.mark.parametrize("decoder", ["pyspark", "portable"])
def test_hex_decoders_equal_pythons_on_spark(spark: Any, decoder: str) -> None:
    """Spark's own decoder of a digest's first 7 hex digits and the portable one equal
    int(text[:7], 16) (so Spark ranks by the same integers as DuckDB)."""
    rng = np.random.default_rng(7)
    digits = np.array(list("0123456789abcdef"))
    cases = ["".join(rng.choice(digits, 32)) for _ in range(500)]
    cases += ["0" * 32, "f" * 32, "fffffff" + "0" * 25, "0000001" + "f" * 25]
    decode = (
        _bounding._hex7_portable if decoder == "portable" else _bounding._HEX7_DECODERS["pyspark"]
    )
    with _engine.quiet():
        spark.createDataFrame(pd.DataFrame({"x": cases})).createOrReplaceTempView("hex_cases")
        t = ibis.pyspark.connect(spark).table("hex_cases")
        got = _engine.execute(t.get_backend(), t.select(t.x, v=decode(t.x)))
    assert dict(zip(got["x"], got["v"].astype(np.int64).tolist(), strict=True)) == {
        c: int(c[:7], 16) for c in cases
    }


def test_rank_hash_matches_its_specification_on_both_engines(
    spark: Any, reference: type, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The bounding hash, computed by DuckDB and by Spark, equals the Python reference from its
    specification, at the int64 extremes, on negatives, NULLs, booleans, strings and dates (int64
    overflow anywhere would raise on DuckDB and on Spark's ANSI mode, or wrap)."""
    import datetime

    from sharpdp.data import _bounding

    ints = [0, 1, -1, 2**31 - 2, 2**31 - 1, 2**31, -(2**31), 2**63 - 1, -(2**63), 12345, None]
    n = len(ints)
    frame = pd.DataFrame(
        {
            "i": pd.array(ints, dtype="Int64"),
            "s": ["", "N123AA", None, "ü", "a|b", "\\N", "x" * 300, "0", "f", "AA", "zz"],
            "b": pd.array([True, False, None] + [True] * (n - 3), dtype="boolean"),
            "d": [datetime.date(2013, 1, 1) + datetime.timedelta(days=37 * j) for j in range(n)],
        }
    )
    path = str(tmp_path_factory.mktemp("hash") / "h.parquet")
    frame.to_parquet(path, index=False)
    salt = "9f2c1e7a"
    with _engine.quiet():
        duck = ibis.duckdb.connect().read_parquet(path)
        spark.read.parquet(path).createOrReplaceTempView("hash_cases")
        sp = ibis.pyspark.connect(spark).table("hash_cases")
        got = {}
        for name, t in (("duckdb", duck), ("spark", sp)):
            hashed, h = _bounding.rank_hash(t, ["i", "s", "b", "d"], salt)
            got[name] = _engine.execute(t.get_backend(), hashed.mutate(h=h))

    P = 2**31 - 1

    def integral(v: Any) -> Any:  # NULL integers and booleans take code P − 1 ≡ −1
        return -1 if v is None or v is pd.NA else int(v)

    want = [
        reference.rank_hash([integral(i), None if pd.isna(s) else s, integral(b), d], salt)
        for i, s, b, d in zip(ints, frame["s"], frame["b"], frame["d"], strict=True)
    ]
    assert all(0 <= h < P for h in want)
    for name, out in got.items():
        order = out.sort_values("d")  # dates are distinct: row identity
        assert order["h"].astype(np.int64).tolist() == want, name


def _float_cases() -> list[float]:
    """Floats at every binary exponent, their neighbours, subnormals, the extremes, values the
    engines print differently (1e20: ``1e+20``/``1.0E20``; 2.82879384806159e17, which Java 17
    prints in more digits than needed), zeros, infinities and NaN."""
    powers = [2.0**k for k in range(-1074, 1024)]
    below = [float(np.nextafter(2.0**k, 0)) for k in range(-1073, 1024)]
    above = [float(np.nextafter(2.0**k, 5)) for k in range(-1074, 1023)]
    bits = np.random.default_rng(11).integers(0, 2**63, 3000, dtype=np.int64)
    drawn = [float(v) for v in bits.view(np.float64) if v == v]
    named = [0.1, -1.5, 1e20, 2.82879384806159e17, 1e7, 1e-3, 5e-324, -1.7976931348623157e308]
    return powers + below + above + drawn + named + [0.0, -0.0, np.inf, -np.inf, np.nan]


def test_float_codes_match_their_specification_on_both_engines(
    spark: Any, reference: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A float key's two hash codes, computed by DuckDB and by Spark, equal the exact ones from
    Python's frexp: log₂ rounds differently on the engines near powers of two, and the rest is
    exact IEEE arithmetic, so the codes (hence the rows kept) are identical."""
    values = _float_cases()
    path = str(tmp_path_factory.mktemp("floats") / "f.parquet")
    pd.DataFrame({"i": np.arange(len(values)), "x": values}).to_parquet(path, index=False)
    want = [reference.float_codes(v) for v in values]
    spark.read.parquet(path).createOrReplaceTempView("float_cases")
    with _engine.quiet():
        tables = {
            "duckdb": ibis.duckdb.connect().read_parquet(path),
            "spark": ibis.pyspark.connect(spark).table("float_cases"),
        }
        for name, t in tables.items():
            first, second = _bounding._float_codes(t.x)
            got = _engine.execute(t.get_backend(), t.select(t.i, a=first, b=second).order_by("i"))
            pairs = [[int(a), int(b)] for a, b in zip(got["a"], got["b"], strict=True)]
            wrong = [(values[i], want[i], p) for i, p in enumerate(pairs) if p != want[i]]
            assert not wrong, (name, wrong[:5])


def _comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """Byte strings as hex, instants in UTC (Spark returns them in its session's zone name)."""
    out = frame.copy()
    if "b" in out:
        out["b"] = [v.hex() for v in out["b"]]
    if "tz" in out:
        out["tz"] = pd.to_datetime(out["tz"], utc=True)
    return out


def test_same_rows_kept_for_float_binary_and_time_zoned_keys(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Keys whose text the engines print differently, with every cap binding (each person holds
    3 keys and 3 rows of each, 1 and 1 kept): both engines keep the same rows, so the releases
    are identical. (The text of a float, a byte string or a time-zoned timestamp differed
    between DuckDB and Spark, so they kept different rows.)"""
    persons = 200
    keys = {
        "f": [1e20, 2.82879384806159e17, 1e-7, 0.1, 1e7, 123456.789],
        "b": [b"\x00\xff", b"ab", b"\xc3\xa9", b"", b"\x80", b"zz"],
        "tz": list(pd.date_range("2020-01-01 12:30:15.123456", periods=6, freq="37min", tz="UTC")),
        # dates and times outside years 1–9999, which the engines print differently (DuckDB
        # '0222-09-04 (BC)', '10183-09-21'; Spark '-0221-09-04', '+10183-09-21'): as days and
        # microseconds since 1970
        "d": [-800_000, 3_000_000, -719_163, 18_000, 0, -1],
        "t": [-8 * 10**16 + 123_456, 3 * 10**17 + 5, -62_135_596_800_000_001, 1, 0, -1],
    }
    rows: dict[str, list[Any]] = {"who": [], "v": [], **{c: [] for c in keys}}
    for p in range(persons):
        for j in range(3):  # three keys per person, three rows per key
            for r in range(3):
                rows["who"].append(f"p{p}")
                rows["v"].append(float(p % 7 + r) * 1e7 + 0.5)  # printed 1.0E7… by Java
                for c, ks in keys.items():
                    rows[c].append(ks[(p + 2 * j) % len(ks)])
    path = str(tmp_path_factory.mktemp("texts") / "texts.parquet")
    types = {"who": pa.string(), "v": pa.float64(), "f": pa.float64(), "b": pa.binary()}
    types["tz"] = pa.timestamp("us", tz="UTC")
    types["d"], types["t"] = pa.date32(), pa.timestamp("us")
    arrays = {  # (days and microseconds enter as integers: pandas cannot hold such times)
        c: pa.array(v, type=pa.int32() if c == "d" else pa.int64()).cast(types[c])
        if c in ("d", "t")
        else pa.array(v, type=types[c])
        for c, v in rows.items()
    }
    pq.write_table(pa.table(arrays), path)
    spark.read.parquet(path).createOrReplaceTempView("text_keys")
    with _engine.quiet():
        sp = ibis.pyspark.connect(spark).table("text_keys")
    budget = sdp.ApproxDP(1e6, 1e-3)
    sessions = [sdp.data.Session(t, "who", budget, seed=8) for t in (path, sp)]
    out: list[list[pd.DataFrame]] = []
    for s in sessions:
        releases = []
        for column in keys:
            q = s.count_by(column, privacy=sdp.ApproxDP(30.0, 1e-8), max_groups=1, max_rows=1)
            releases.append(q.run(rng=3).to_pandas())
        q = s.sum("v", bounds=(0.0, 1e8), by="f", keys=keys["f"], privacy=sdp.PureDP(30.0))
        releases.append(q.run(rng=3).to_pandas())
        out.append(releases)
    for a, b in zip(*out, strict=True):
        if {"d", "t"} & set(a.columns):  # compared by their counts (pandas cannot hold the keys)
            assert a["count"].tolist() == b["count"].tolist()
            assert len(a) >= 3
            continue
        a, b = (_comparable(x) for x in (a, b))
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
        assert len(a) >= 3


def test_instant_keys_and_long_key_lists_on_spark(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Spark's instants (TimestampType), which Ibis types without a zone: a public key that
    occurs released its count, one that does not failed in pandas (zoned results against naive
    keys) only when the engine returned rows, before the spend — a free test of whether any row
    holds the key. Over 256 public keys (joined as a table) failed on Spark, and decimal keys
    were rounded to three places."""
    from decimal import Decimal

    table = pa.table(
        {
            "p": [f"p{i}" for i in range(30)],
            "t": pa.array([1_577_840_400_000_000] * 20 + [1_577_844_000_000_000] * 10,
                          pa.timestamp("us", tz="UTC")),
            "k": pa.array([Decimal("1.1234")] * 20 + [Decimal("1.1230")] * 10,
                          pa.decimal128(19, 4)),
        }
    )  # fmt: skip
    path = str(tmp_path_factory.mktemp("instants") / "instants.parquet")
    pq.write_table(table, path)
    spark.read.parquet(path).createOrReplaceTempView("instants")
    with _engine.quiet():
        sp = ibis.pyspark.connect(spark).table("instants")
    s = sdp.data.Session(sp, "p", sdp.PureDP(1e9))
    huge = sdp.PureDP(1e6)  # exact counts: P[noise ≠ 0] ≤ 2e^{−10⁶} per cell
    hours = [pd.Timestamp(f"2020-01-01 0{h}:00") for h in (1, 2, 3)]  # wall time, UTC session
    for hour, want in zip(hours, [20, 10, 0], strict=True):
        out = s.count_by("t", keys=[hour], privacy=huge).run(rng=0).to_pandas()
        assert out["count"].tolist() == [want]
    keys = [Decimal("1.1234"), Decimal("1.123")] + [Decimal(f"{i}.0001") for i in range(300)]
    out = s.count_by("k", keys=keys, privacy=huge).run(rng=0).to_pandas()
    assert out["count"].tolist()[:2] == [20, 10]
    assert out["count"].sum() == 30
    out = s.count_by("k", keys=keys[:2], privacy=huge).run(rng=0).to_pandas()
    assert out["count"].tolist() == [20, 10]


def test_declared_csv_types_convert_alike_on_both_engines(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A CSV's declared integer column: DuckDB's TRY_CAST rounds "2.5" to 3 and reads "1e3" as
    1000, Spark's gives NULL, so the same file released different keys. Integers are now read
    from an integer's text only (else NULL), on both engines: 0, 7, 8, 9 and NULL."""
    values = ["2.5", "-2.5", "7", " 8 ", "1e3", "x", "2.0", "+9", "-0"]
    rows = [(f"p{i}_{j}", v) for j, v in enumerate(values) for i in range(20)]
    path = tmp_path_factory.mktemp("declared") / "cast.csv"
    path.write_text("person,v\n" + "".join(f'{p},"{v}"\n' for p, v in rows))
    with _engine.quiet():
        on_spark = ibis.pyspark.connect(spark)
    out = []
    for engine in (None, on_spark):
        s = sdp.data.Session(
            str(path), "person", sdp.PureDP(1e9), schema={"v": "int64"}, engine=engine
        )
        q = s.count_by("v", keys=[0, 7, 8, 9, 2, 3, -3, 1000], privacy=sdp.PureDP(1e6))
        out.append(q.run(rng=0).to_pandas())
    pd.testing.assert_frame_equal(out[0], out[1])
    assert out[0]["count"].tolist() == [20, 20, 20, 20, 0, 0, 0, 0]


def test_row_level_same_release_on_duckdb_and_spark(
    flights: pd.DataFrame, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # privacy_unit=None: each row a person, no bounding in either engine
    cols = ["carrier", "origin", "dest", "dep_delay"]
    path = str(tmp_path_factory.mktemp("rows") / "rows.parquet")
    flights[cols].to_parquet(path, index=False)
    budget = sdp.ApproxDP(1e6, 1e-3)
    spark.read.parquet(path).createOrReplaceTempView("flight_rows")
    with _engine.quiet():
        table = ibis.pyspark.connect(spark).table("flight_rows")
    sessions = [sdp.data.Session(t, None, budget, seed=4) for t in (path, table)]
    releases = []
    for s in sessions:
        qs = [
            s.count_by(["origin", "dest"], privacy=sdp.ApproxDP(0.5, 1e-8)),
            s.mean("dep_delay", bounds=(-60, 600), by="origin", keys=["EWR", "JFK", "LGA"],
                   privacy=sdp.PureDP(0.5)),
            s.count(privacy=sdp.PureDP(0.5)),  # (reads no column: it failed on both engines)
            s.answer(sdp.data.marginals(["origin", "carrier"], way=2), privacy=sdp.ZCDP(0.5),
                     rng=9),
        ]  # fmt: skip
        releases.append([q.run(rng=5).to_pandas() for q in qs[:3]] + [qs[3].to_pandas()])
    for a, b in zip(*releases, strict=True):
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
        assert len(a) > 0


def test_exact_keys_and_types_on_both_engines(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Keys Spark's pandas path got wrong, released alike on both engines with the same dtypes:
    an integer beyond 2^53 in a column that also holds a NULL (one NULL rounded every such key
    through float64), a timestamp before 1677 (nanoseconds overflowed: the query failed, for
    that one person's value, before any spend), and float32 keys (the −0.0 fix had widened them
    to double on Spark, changing the hashed text and so the rows kept)."""
    big = 2**53 + 1
    n = 240
    frame = pd.DataFrame(
        {
            "who": [f"p{i}" for i in range(n)] + ["zz"],
            "k": pd.array([7, big] * (n // 2) + [None], dtype="Int64"),
            "ts": pd.array(
                [pd.Timestamp("2020-01-01 12:30:15.123456")] * n + [pd.Timestamp("1500-01-01")],
                dtype="datetime64[us]",
            ),
            "f32": np.array([0.1, 2.5, -0.0, 0.0] * (n // 4) + [0.1], dtype=np.float32),
        }
    )
    path = str(tmp_path_factory.mktemp("exact") / "exact.parquet")
    frame.to_parquet(path, index=False)
    spark.read.parquet(path).createOrReplaceTempView("exact_keys")
    with _engine.quiet():
        sp = ibis.pyspark.connect(spark).table("exact_keys")
    budget = sdp.ApproxDP(1e6, 1e-3)
    sessions = [sdp.data.Session(t, "who", budget, seed=5) for t in (path, sp)]
    for column in ("k", "ts", "f32"):
        out = []
        for s in sessions:
            q = s.count_by(column, privacy=sdp.ApproxDP(20.0, 1e-8), max_groups=1)
            out.append(q.run(rng=1).to_pandas())
        pd.testing.assert_frame_equal(out[0], out[1])
        if column == "k":
            assert out[0]["k"].tolist() == [7, big]
            assert str(out[0]["k"].dtype) == "Int64"


def test_a_csv_header_that_repeats_a_name_is_refused_on_spark(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Spark renames repeats by their positions (a1, a2): `a` then named no column at all
    path = tmp_path_factory.mktemp("twice") / "twice.csv"
    path.write_text("who,a,A\np1,1,2\n")
    with _engine.quiet():
        on_spark = ibis.pyspark.connect(spark)
    with pytest.raises(sdp.InvalidParameter, match="names two columns 'a' and 'A'"):
        sdp.data.Session(str(path), "who", sdp.PureDP(1.0), engine=on_spark)


def test_a_frame_loaded_into_spark_is_a_temporary_view(spark: Any) -> None:
    """A pandas frame with a Spark engine: Ibis's PySpark backend has no temporary tables, and
    its create_table saved the private rows as a permanent table in the Spark warehouse (a second
    process then failed on the name); now a temporary view, nothing written, and the same release
    as on DuckDB."""
    frame = pd.DataFrame(
        {"who": [f"p{i % 50}" for i in range(500)], "k": [f"k{i % 7}" for i in range(500)]}
    )
    with _engine.quiet():
        engine = ibis.pyspark.connect(spark)
    before = {t.name for t in spark.catalog.listTables() if not t.isTemporary}
    releases = []
    for backend in (None, engine):
        s = sdp.data.Session(frame, "who", sdp.PureDP(100.0), engine=backend, seed=4)
        q = s.count_by("k", keys=[f"k{j}" for j in range(7)], privacy=sdp.PureDP(5.0))
        releases.append(q.run(rng=2).to_pandas())
    pd.testing.assert_frame_equal(releases[0], releases[1], check_dtype=False)
    assert {t.name for t in spark.catalog.listTables() if not t.isTemporary} == before
    assert any(t.name.startswith("sharpdp_") for t in spark.catalog.listTables())
