"""Row-level privacy (``privacy_unit=None``: each row is a person).

Expected values come from pandas on the same rows. With a huge ε the discrete noise is zero except
with a negligible probability (stated per test), so a release equals the exact statistic; the same
table protected per row must then release what a session keyed by a unique row id releases."""

from __future__ import annotations

from pathlib import Path

import ibis
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import sharpdp as sdp
from sharpdp.cli import app
from sharpdp.data import _bounding, _engine

FRUITS = ["apple", "banana", "cherry", "date"]


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 3000
    return pd.DataFrame(
        {
            "fruit": rng.choice(FRUITS, n, p=[0.1, 0.2, 0.3, 0.4]),
            "city": rng.choice(["x", "y", "z"], n),
            "amount": rng.integers(-20, 120, n),
        }
    )


def _session(rows: pd.DataFrame, seed: int = 0) -> sdp.data.Session:
    return sdp.data.Session(rows, None, sdp.ApproxDP(1e9, 1e-6), seed=seed)


def test_counts_are_the_plain_counts_whatever_the_declared_caps(rows: pd.DataFrame) -> None:
    # Discrete Laplace of scale 1e-3 (ε = 1e3, Δ = 1): P[Z ≠ 0] = 2e^{-1000}/(1 + e^{-1000}) per
    # cell, so the release is exact except with probability < 1e-400.
    s = _session(rows)
    q = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(1e3), max_groups=3, max_rows=5)
    stat = q.explain().statistics[0]
    assert (q.bounding.max_rows, q.bounding.max_groups) == (1, 1)
    assert (stat.sensitivity, stat.l1, stat.copies) == (1.0, 1.0, 1)
    got = q.run(rng=0).to_pandas().set_index("fruit")["count"]
    truth = rows["fruit"].value_counts()
    assert {f: int(got[f]) for f in FRUITS} == {f: int(truth[f]) for f in FRUITS}
    text = str(q.explain())
    assert "privacy unit: each row" in text
    assert "nothing dropped" in text


def test_same_releases_as_a_unique_row_id_unit(rows: pd.DataFrame) -> None:
    # Keyed by a unique id, every person has one row: the bounding keeps everything, so both
    # sessions release the same values for the same noise draws.
    with_id = rows.assign(rid=np.arange(len(rows)))
    row_level = _session(rows)
    by_id = sdp.data.Session(with_id, "rid", sdp.ApproxDP(1e9, 1e-6), seed=0)
    pairs = [
        (
            s.sum("amount", bounds=(0, 100), by="fruit", keys=FRUITS, privacy=sdp.PureDP(1.0)),
            s.mean("amount", bounds=(0, 100), privacy=sdp.ZCDP(0.5)),
            s.quantile("amount", 0.3, bounds=(-20, 120), privacy=sdp.PureDP(1.0)),
            s.count_by(["fruit", "city"], keys=None, privacy=sdp.PureDP(1.0)),
        )
        for s in (row_level, by_id)
    ]
    for a, b in zip(*pairs, strict=True):
        left = a.run(rng=3).to_pandas()
        right = b.run(rng=3).to_pandas()
        pd.testing.assert_frame_equal(left, right)


def test_sum_clamps_each_row(rows: pd.DataFrame) -> None:
    # integer bounds: grid step 1, so the clamped sum is exact; noise as in the count test
    s = _session(rows)
    q = s.sum("amount", bounds=(0, 100), by="fruit", keys=FRUITS, privacy=sdp.PureDP(1e5))
    assert q.statistics[0].sensitivity == 100.0
    got = q.run(rng=0).to_pandas().set_index("fruit")["sum"]
    truth = rows.assign(a=rows["amount"].clip(0, 100)).groupby("fruit")["a"].sum()
    assert {f: float(got[f]) for f in FRUITS} == {f: float(truth[f]) for f in FRUITS}


def test_workload_answers_are_the_crosstab(rows: pd.DataFrame) -> None:
    # ρ = 1e8 for one marginal (C = 1): discrete Laplace of scale t ≈ 1e-6 is chosen (the
    # Gaussian's σ would be 7e-5), so P[noise ≠ 0] ≈ 2e^{-1/t} < 1e-400000 per cell.
    s = _session(rows)
    w = sdp.data.marginals(["fruit", "city"], way=2, domains={"fruit": FRUITS, "city": list("xyz")})
    r = s.answer(w, privacy=sdp.ZCDP(1e8), max_rows=4, rng=0)
    got = r.to_pandas().set_index(["fruit", "city"])["count"].round().astype(int)
    truth = rows.groupby(["fruit", "city"]).size()
    assert got.to_dict() == truth.to_dict()
    assert s.workload(w, privacy=sdp.ZCDP(1.0), max_rows=4).max_rows == 1


def test_no_bounding_runs_in_the_engine(rows: pd.DataFrame) -> None:
    s = _session(rows)
    pairs = _bounding.per_person_key(
        s.table, None, ("fruit",), max_rows=1, max_groups=1, salt="any"
    )
    with _engine.quiet():
        sql = ibis.to_sql(_bounding.group(pairs, ("fruit",), False), dialect="duckdb").upper()
    assert "ROW_NUMBER" not in sql
    assert "DISTINCT" not in sql
    assert "_SDP_UNIT" not in sql


def test_top_k_with_a_huge_epsilon_is_the_true_top_k(rows: pd.DataFrame) -> None:
    # TopK at ε = 500 per round on monotone counts (range 1), count gaps ≥ 280: a wrong choice
    # has probability < 3·e^{-500·280/2} per round
    s = _session(rows)
    r = s.top_k("fruit", 2, keys=FRUITS, privacy=sdp.PureDP(1e3)).run(rng=0).to_pandas()
    assert list(r["fruit"]) == ["date", "cherry"]


def test_cli_row_level(tmp_path: Path, rows: pd.DataFrame) -> None:
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    runner = CliRunner()
    args = ["query", str(path), "count-by", "fruit", "--privacy", "pure:0.5", "--json"]
    ok = runner.invoke(app, [*args, "--row-level", "--keys", ",".join(FRUITS)])
    assert ok.exit_code == 0, ok.output
    assert '"count"' in ok.output
    priced = runner.invoke(app, [*args[:-1], "--row-level", "--explain"])
    assert priced.exit_code == 0
    assert "each row is one person" in priced.output
    both = runner.invoke(app, [*args, "--row-level", "--unit", "fruit"])
    assert both.exit_code != 0
    assert "not both" in both.output
    neither = runner.invoke(app, args)
    assert neither.exit_code != 0
    assert "--row-level" in neither.output
    # a count reads no column at all: Ibis refused the empty projection
    total = runner.invoke(
        app,
        [
            "query",
            str(path),
            "count",
            "--row-level",
            "--privacy",
            "pure:1e4",
            "--budget",
            "pure:1e5",
        ],
    )
    assert total.exit_code == 0, total.output
    assert str(len(rows)) in total.output


def test_row_level_total_count_reads_no_column(rows: pd.DataFrame) -> None:
    # ε = 10^6: P[Z ≠ 0] = 2q/(1 + q), q = e^{−10^6}
    r = _session(rows).count(privacy=sdp.PureDP(1e6)).run(rng=0).to_pandas()
    assert r["count"].tolist() == [len(rows)]
