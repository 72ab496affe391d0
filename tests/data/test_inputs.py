"""Every accepted table form (pandas, Polars, Arrow, CSV, Parquet, Ibis) releases the same values
for the same seeds; multi-column public keys; partition selection under a zCDP-style target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ibis
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import sharpdp as sdp
from sharpdp.data import _engine

FRUITS = ["apple", "banana", "cherry", "date", "elder"]


def _release(table: Any) -> pd.DataFrame:
    s = sdp.data.Session(table, "person", sdp.PureDP(10.0), seed=17)
    q = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(1.0), max_groups=2, max_rows=2)
    return q.run(rng=5).to_pandas()


def test_all_table_forms_agree(small: pd.DataFrame, tmp_path: Path) -> None:
    want = _release(small)
    csv = tmp_path / "small.csv"
    small.to_csv(csv, index=False)
    parquet = tmp_path / "small.parquet"
    small.to_parquet(parquet, index=False)
    with _engine.quiet():
        con = ibis.duckdb.connect()
        ibis_table = con.create_table("small", pa.Table.from_pandas(small, preserve_index=False))
    for table in (
        pl.from_pandas(small),
        pa.Table.from_pandas(small, preserve_index=False),
        str(csv),
        parquet,
        ibis_table,
    ):
        pd.testing.assert_frame_equal(_release(table), want, check_dtype=False)


def test_multi_column_public_keys(flights: pd.DataFrame, reference: type) -> None:
    # ε = 1e3 with Δ1 = 4: P[some count ≠ truth] < 1e-80 (false-failure rate)
    s = sdp.data.Session(flights, "tailnum", sdp.PureDP(1e9), null_units="drop", seed=12)
    keys = pd.DataFrame(
        {"origin": ["EWR", "JFK", "LGA", "JFK"], "carrier": ["UA", "B6", "DL", "ZZ"]}
    )
    q = s.count_by(
        ["origin", "carrier"], keys=keys, privacy=sdp.PureDP(1e3), max_groups=2, max_rows=2
    )
    got = q.run(rng=0).to_pandas()
    data = flights[flights["tailnum"].notna()]
    data = data.merge(keys, on=["origin", "carrier"])  # rows of other keys dropped first
    truth = reference.bounded_counts(data, "tailnum", ["origin", "carrier"], 2, 2, q.bounding.salt)
    wanted = list(zip(keys["origin"], keys["carrier"], strict=True))
    assert list(zip(got["origin"], got["carrier"], strict=True)) == wanted
    assert got["count"].tolist() == [truth.get(k, 0) for k in wanted]
    assert got["count"].iloc[3] == 0  # ZZ flies nowhere: released as 0


def test_unknown_keys_with_approx_zcdp_target(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.ApproxDP(5.0, 1e-5), seed=3)
    q = s.count_by("fruit", privacy=sdp.ApproxZCDP(0.5, 1e-7), max_groups=2)
    e = q.explain()
    noise, new_keys = e.statistics
    assert isinstance(noise.mechanism, sdp.DiscreteGaussian)
    assert noise.copies == 2
    assert isinstance(new_keys.mechanism, sdp.ApproxDP)
    assert new_keys.mechanism.delta_ <= 1e-7
    assert e.fits
    r = q.run(rng=1).to_pandas()
    assert set(r["fruit"]) <= set(FRUITS)
    assert (r["count"] >= q.tau).all()


def test_zcdp_budget_refuses_unknown_keys_up_front(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.ZCDP(1.0), seed=3)
    with pytest.raises(sdp.InvalidParameter, match="budget"):
        s.count_by("fruit", privacy=sdp.ApproxZCDP(0.1, 1e-7))
    assert s.accountant.history() == ()


def test_bounded_counts_are_the_reference_bounding(small: pd.DataFrame, reference: type) -> None:
    """CountQuery.bounded() (the data holder's view of what the noise is added to) equals the
    independent pandas bounding, and reading it spends nothing."""
    s = sdp.data.Session(small, "person", sdp.PureDP(1.0), seed=4)
    q = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(0.5), max_groups=2, max_rows=3)
    got = q.bounded()
    truth = reference.bounded_counts(small, "person", ["fruit"], 3, 2, q.bounding.salt)
    assert got["fruit"].tolist() == FRUITS
    assert got["count"].tolist() == [truth.get((f,), 0) for f in FRUITS]
    assert s.accountant.history() == ()
