"""Contribution bounding in the engine: caps hold (checked in SQL), kept rows match an independent
pandas + hashlib implementation, sensitivities are derived from the caps and bounds."""

from __future__ import annotations

import math
from typing import Any

import ibis
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sharpdp as sdp
from sharpdp.data import _bounding, _engine

FRUITS = ["apple", "banana", "cherry", "date", "elder"]


def _sql_max(backend: Any, sql: str) -> int:
    """Run raw SQL on the DuckDB connection behind the Ibis backend (the engine itself)."""
    return int(backend.con.execute(sql).fetchone()[0])


def _fruit_pairs(
    small: pd.DataFrame, seed: int, max_rows: int, max_groups: int, plan: str = "pairs"
) -> tuple[sdp.data.Session, str, Any]:
    """A session, the salt of a ``count_by("fruit")`` built in it, and its bounded pairs."""
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=seed)
    q = s.count_by(
        "fruit", keys=FRUITS, privacy=sdp.PureDP(1.0), max_groups=max_groups, max_rows=max_rows
    )
    pairs = _bounding.per_person_key(
        s.table,
        "person",
        ("fruit",),
        max_rows=max_rows,
        max_groups=max_groups,
        salt=q.bounding.salt,
        plan=plan,
    )
    return s, q.bounding.salt, pairs


@pytest.mark.parametrize("plan", ["pairs", "rows"])
@pytest.mark.parametrize(("max_rows", "max_groups"), [(1, 1), (2, 3), (3, 2)])
def test_caps_hold_in_sql(small: pd.DataFrame, max_rows: int, max_groups: int, plan: str) -> None:
    s, _, pairs = _fruit_pairs(small, 5, max_rows, max_groups, plan)
    con = s._source.backend
    with _engine.quiet():
        sql = ibis.to_sql(pairs, dialect="duckdb")
    keys_per_person = _sql_max(
        con, f"SELECT max(c) FROM (SELECT _sdp_unit, count(*) AS c FROM ({sql}) GROUP BY 1)"
    )
    rows_per_pair = _sql_max(con, f"SELECT max(rows) FROM ({sql})")
    assert keys_per_person == max_groups  # the table has persons with more fruits than any cap
    assert rows_per_pair == max_rows


def test_rows_kept_by_value_respect_caps(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=5)
    value = _bounding.clamped_grid(s.table["amount"], 0.0, 100.0, 0.5)
    pairs = _bounding.per_person_key(
        s.table, "person", ("fruit",), max_rows=2, max_groups=2, salt="x", value=value
    )
    with _engine.quiet():
        out = s._source.backend.execute(pairs)
    assert out["rows"].max() == 2
    assert out.groupby("_sdp_unit").size().max() == 2
    assert out["total"].max() <= 2 * 200  # ≤ 2 rows of at most 100/0.5 grid steps
    assert out["total"].min() >= 0


@pytest.mark.parametrize("plan", ["pairs", "rows"])
@pytest.mark.parametrize(("max_rows", "max_groups"), [(1, 1), (2, 3)])
def test_kept_keys_match_independent_hash(
    small: pd.DataFrame, reference: type, max_rows: int, max_groups: int, plan: str
) -> None:
    s, salt, pairs = _fruit_pairs(small, 9, max_rows, max_groups, plan)
    with _engine.quiet():
        got = s._source.backend.execute(pairs)
    got = got.rename(columns={"_sdp_unit": "person"}).sort_values(["person", "fruit"])
    want = reference.bounded_pairs(
        small, "person", ["fruit"], max_rows, max_groups, salt
    ).sort_values(["person", "fruit"])
    pd.testing.assert_frame_equal(
        got[["person", "fruit", "rows"]].reset_index(drop=True),
        want[["person", "fruit", "rows"]].reset_index(drop=True),
        check_dtype=False,
    )


def _two_key_table(int_nulls: bool) -> pd.DataFrame:
    """``small`` with an integer key ``size`` and NULL fruits (and sizes), some rows repeated."""
    rng = np.random.default_rng(31)
    rows = []
    for person in range(150):
        for _ in range(int(rng.integers(1, 12))):
            fruit = None if rng.random() < 0.1 else FRUITS[int(rng.integers(0, 5))]
            rows.append((f"p{person:03d}", fruit, int(rng.integers(0, 3))))
    df = pd.DataFrame(rows, columns=["person", "fruit", "size"])
    df["size"] = df["size"].astype("Int64")
    if int_nulls:
        df.loc[rng.random(len(df)) < 0.1, "size"] = pd.NA
    return pd.concat([df, df.iloc[::3]], ignore_index=True)  # repeated rows of some pairs


def _bounded(df: pd.DataFrame, plan: str, max_rows: int, max_groups: int) -> pd.DataFrame:
    backend = _engine.embedded()
    table = _engine.open_table(df, backend).table
    pairs = _bounding.per_person_key(
        table,
        "person",
        ("fruit", "size"),
        max_rows=max_rows,
        max_groups=max_groups,
        salt="two keys",
        plan=plan,
    )
    with _engine.quiet():
        return backend.execute(pairs).rename(columns={"_sdp_unit": "person"})


def _canonical(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    cells = frame[["person", "fruit", "size", "rows"]].astype(object)
    return sorted(
        (
            tuple(None if pd.isna(v) else int(v) if k >= 2 else v for k, v in enumerate(r))
            for r in cells.itertuples(index=False, name=None)
        ),
        key=repr,
    )


@pytest.mark.parametrize("plan", ["pairs", "rows"])
@pytest.mark.parametrize(("max_rows", "max_groups"), [(1, 2), (3, 1)])
def test_both_plans_keep_the_reference_pairs_with_two_keys(
    reference: type, plan: str, max_rows: int, max_groups: int
) -> None:
    """A text key with NULLs and an integer key, many rows repeating a pair: the rows plan (a
    dense_rank over raw rows) and the pairs plan keep exactly the reference's pairs."""
    df = _two_key_table(int_nulls=False)
    got = _bounded(df, plan, max_rows, max_groups)
    plain = df.astype({"size": "int64"})  # the reference types a value, not a column
    want = reference.bounded_pairs(
        plain, "person", ["fruit", "size"], max_rows, max_groups, "two keys"
    )
    assert want["fruit"].isna().any()
    assert (want["rows"] > 1).any() == (max_rows > 1)
    assert _canonical(got) == _canonical(want)


def test_both_plans_agree_on_null_integer_keys() -> None:
    """NULLs in an integer key (hashed as P − 1 by the engine, not as text): the plans agree."""
    df = _two_key_table(int_nulls=True)
    rows, pairs = (_bounded(df, plan, 2, 2) for plan in ("rows", "pairs"))
    assert df["size"].isna().any()
    assert rows["size"].isna().any()
    assert _canonical(rows) == _canonical(pairs)


def _many_persons(rows_per_pair: int, keys: int = 10**5) -> pd.DataFrame:
    """10⁶ rows: 10⁶/``rows_per_pair`` draws of (person, item), each repeated ``rows_per_pair``
    times (a person's draws rarely share an item, so about that many rows per distinct pair)."""
    rng = np.random.default_rng(3)
    pairs = 10**6 // rows_per_pair
    person = rng.integers(0, pairs // 10, pairs)
    item = (person * 7919 + np.arange(pairs)) % keys
    return pd.DataFrame(
        {"person": np.repeat(person, rows_per_pair), "item": np.repeat(item, rows_per_pair)}
    )


def test_pair_plan_follows_the_rows_per_pair() -> None:
    """Rows plan on a large DuckDB table with one row per pair; pairs plan with 2 rows per pair,
    on a small table, with a float key, or at row level."""
    backend = _engine.embedded()
    once = _engine.open_table(_many_persons(1), backend).table
    twice = _engine.open_table(_many_persons(2), backend).table
    assert _bounding.pair_plan(once, "person", ["item"], 10**6) == "rows"
    assert _bounding.pair_plan(twice, "person", ["item"], 10**6) == "pairs"
    assert _bounding.pair_plan(once, "person", ["item"], 10**6 - 1) == "pairs"
    assert _bounding.pair_plan(once, "person", ["item"], None) == "pairs"
    assert _bounding.pair_plan(once, None, ["item"], 10**6) == "pairs"
    floats = once.mutate(item=once.item.cast("float64"))
    assert _bounding.pair_plan(floats, "person", ["item"], 10**6) == "pairs"


def test_pair_plan_falls_back_to_pairs_when_the_count_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    once = _engine.open_table(_many_persons(1), _engine.embedded()).table

    def fail(*args: Any) -> Any:
        raise RuntimeError("engine cannot count this struct")

    monkeypatch.setattr(_engine, "execute", fail)
    assert _bounding.pair_plan(once, "person", ["item"], 10**6) == "pairs"


def test_count_by_releases_alike_under_either_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session on a table the rows plan is chosen for releases what the pairs plan releases."""
    df = _many_persons(1, keys=300)
    releases = []
    for plan in ("rows", "pairs"):
        monkeypatch.setattr(_bounding, "pair_plan", lambda *args, p=plan: p)
        s = sdp.data.Session(df, "person", sdp.ApproxDP(1e9, 1e-3), seed=4)
        q = s.count_by("item", keys=None, privacy=sdp.ApproxDP(1, 1e-6), max_groups=3)
        releases.append(q.run(rng=0).to_pandas())
    pd.testing.assert_frame_equal(releases[0], releases[1])
    assert len(releases[0]) > 100


def hex_cases() -> list[str]:
    """2,000 random 32-digit hex strings (a fixed seed) and the extreme 7-digit prefixes."""
    rng = np.random.default_rng(7)
    digits = np.array(list("0123456789abcdef"))
    cases = ["".join(rng.choice(digits, 32)) for _ in range(2000)]
    return [*cases, "0" * 32, "f" * 32, "fffffff" + "0" * 25, "0000001" + "f" * 25, "9a" * 16]


@pytest.mark.parametrize("decoder", ["duckdb", "portable"])
def test_hex_decoders_equal_pythons(decoder: str) -> None:
    """The engine's own decoder of a digest's first 7 hex digits and the portable one both equal
    int(text[:7], 16) (the Spark decoder is checked in test_spark.py)."""
    cases = hex_cases()
    decode = (
        _bounding._hex7_portable if decoder == "portable" else _bounding._HEX7_DECODERS["duckdb"]
    )
    with _engine.quiet():
        t = ibis.duckdb.connect().create_table("hexes", pd.DataFrame({"x": cases}))
        got = t.select(t.x, v=decode(t.x)).execute()
    assert dict(zip(got["x"], got["v"].astype(np.int64).tolist(), strict=True)) == {
        c: int(c[:7], 16) for c in cases
    }


def test_salt_changes_per_query(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=1)
    a = s.count(privacy=sdp.PureDP(1.0))
    b = s.count(privacy=sdp.PureDP(1.0))
    assert a.bounding.salt != b.bounding.salt
    # the same seed and the same sequence of queries give the same salts (engine-independent)
    s2 = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=1)
    assert s2.count(privacy=sdp.PureDP(1.0)).bounding.salt == a.bounding.salt


def test_sensitivities_derived_from_caps(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=1)
    fruits = ["apple", "banana", "cherry", "date", "elder"]
    c = s.count_by("fruit", keys=fruits, privacy=sdp.PureDP(1.0), max_groups=3, max_rows=2)
    stat = c.explain().statistics[0]
    assert (stat.sensitivity, stat.l1, stat.l2, stat.copies) == (2.0, 6.0, 2.0 * math.sqrt(3), 3)
    # pure ε of 3 copies of discrete Laplace(t, Δ=2) is 3·2/t: t = 6 for ε = 1
    assert stat.mechanism == sdp.DiscreteLaplace(6.0, sensitivity=2)
    # copies never exceed the number of public keys
    c2 = s.count_by("fruit", keys=fruits[:2], privacy=sdp.PureDP(1.0), max_groups=3)
    assert c2.statistics[0].copies == 2
    # sum: Δ∞ = m·max(|L|, |U|) in grid steps (a float column: step 2^⌊log2(400/2^10)⌋ = 1/4)
    sm = s.sum("amount", bounds=(-300, 100), privacy=sdp.PureDP(1.0), max_rows=2)
    assert sm.bounding.step == 2.0**-2
    assert sm.statistics[0].sensitivity == 2 * 300 * 2**2
    # mean: the centred doubled sum moves by m·(U − L) grid steps, the count by m
    mn = s.mean("amount", bounds=(0.0, 10.0), privacy=sdp.PureDP(1.0), max_rows=3)
    step = mn.bounding.step
    assert step == 2.0 ** math.floor(math.log2(10.0 / 2**10))
    assert mn.statistics[0].sensitivity == 3 * round(10.0 / step)
    assert mn.statistics[1].sensitivity == 3.0
    # top-k: the score range is max_rows (monotonic counts)
    tk = s.top_k("fruit", 2, keys=fruits, privacy=sdp.PureDP(1.0), max_groups=2, max_rows=3)
    assert tk.statistics[0].sensitivity == 3.0
    assert tk.mechanism.monotonic
    assert tk.mechanism.sensitivity == 3.0


def test_huge_epsilon_counts_equal_bounded_truth_flights(
    flights: pd.DataFrame, reference: type
) -> None:
    # Discrete Laplace of scale κm/ε = 6e-3: P[Z ≠ 0] = 2q/(1 + q) with q = e^{-166}: the counts
    # equal the truth except with probability < 1e-70 (false-failure rate).
    s = sdp.data.Session(flights, "tailnum", sdp.PureDP(1e9), null_units="drop", seed=3)
    carriers = sorted(flights["carrier"].unique())
    q = s.count_by("carrier", keys=carriers, privacy=sdp.PureDP(1e3), max_groups=2, max_rows=3)
    got = q.run(rng=1).to_pandas()
    truth = reference.bounded_counts(
        flights[flights["tailnum"].notna()], "tailnum", ["carrier"], 3, 2, q.bounding.salt
    )
    assert dict(zip(got["carrier"], got["count"], strict=True)) == {
        c: truth.get((c,), 0) for c in carriers
    }


def test_confidence_intervals_cover_at_their_level(small: pd.DataFrame, reference: type) -> None:
    # 100 runs × 5 keys of an exact 90% interval: coverage is ≥ 0.9 per cell, so the number of
    # misses over 500 cells is stochastically ≤ Binomial(500, 0.1) — the cells of one run are
    # independent (independent noise). Fail if misses exceed its 1 − 1e-6 quantile (false-failure
    # rate < 1e-6); the exact intervals are also not grossly conservative (≥ 5 misses expected).
    s = sdp.data.Session(small, "person", sdp.ZCDP(1e9), seed=2)
    fruits = ["apple", "banana", "cherry", "date", "elder"]
    q = s.count_by("fruit", keys=fruits, privacy=sdp.ZCDP(0.05), max_groups=2, max_rows=2)
    truth = reference.bounded_counts(small, "person", ["fruit"], 2, 2, q.bounding.salt)
    t = np.array([truth[(f,)] for f in fruits])
    rng = np.random.default_rng(11)
    misses = 0
    for _ in range(100):
        r = q.run(rng=rng).to_pandas(level=0.9)
        misses += int(np.sum((t < r["lower"].to_numpy()) | (t > r["upper"].to_numpy())))
    assert misses <= stats.binom.ppf(1 - 1e-6, 500, 0.1)
    assert misses >= 5


def test_session_default_caps(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=1, max_groups=3, max_rows=2)
    q = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(1.0))
    assert (q.bounding.max_rows, q.bounding.max_groups) == (2, 3)
    q = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(1.0), max_groups=1)
    assert (q.bounding.max_rows, q.bounding.max_groups) == (2, 1)
    assert s.top_k("fruit", 1, keys=FRUITS, privacy=sdp.PureDP(1.0)).bounding.max_rows == 2
