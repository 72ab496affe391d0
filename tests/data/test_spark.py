"""The same queries on DuckDB and on PySpark (local mode) release identical values.

Same data, same session seed (so the same salts), same noise seed: the portable seeded hash keeps the
same rows on both engines, the group tables come back equal, and the noise is drawn in the same
order, so every released value must be equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ibis
import pandas as pd
import pytest

import sharpdp as sdp
from sharpdp.data import _engine

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
