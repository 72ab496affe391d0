"""The calls code outside the repository makes (the data layer's contract), on the flights."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import sharpdp as sdp


@pytest.fixture
def session(flights: pd.DataFrame, tmp_path: Path) -> sdp.data.Session:
    return sdp.data.Session(
        flights,
        privacy_unit="tailnum",
        budget=sdp.ApproxDP(1.0, 1e-6),
        ledger=str(tmp_path / "budget.sqlite"),
        analyst="ana",
        null_units="drop",
        seed=0,
    )


def test_count_by_unknown_keys_with_a_pure_target(
    session: sdp.data.Session, flights: pd.DataFrame
) -> None:
    """Unknown keys need δ > 0: a PureDP(ε) target is met for the noise and the key selection
    takes a tenth of the budget's δ (1e-7), which explain() shows and the ledger records."""
    q = session.count_by("carrier", keys=None, privacy=sdp.PureDP(0.1), max_groups=1, max_rows=1)
    text = str(q.explain())
    assert "ApproxDP(epsilon=0.1, delta=1e-07)" in text
    out = q.run(rng=0).to_pandas(level=0.95)
    assert list(out.columns) == ["carrier", "count", "lower", "upper"]
    # carriers flown by ≫ τ ≈ 180 aircraft are released (failure probability < 1e-9 each)
    big = flights.dropna(subset=["tailnum"]).groupby("carrier").tailnum.nunique()
    assert set(big[big > 400].index) <= set(out["carrier"])
    assert set(out["carrier"]) <= set(big.index)
    (entry,) = session.accountant.history()
    spent = sdp.compose([entry.item]).epsilon(1e-6)
    assert 0.09 < spent <= 0.1 + 1e-9


def test_top_k_unknown_keys_with_a_pure_target(
    session: sdp.data.Session, flights: pd.DataFrame
) -> None:
    q = session.top_k("dest", k=10, privacy=sdp.PureDP(0.1), max_groups=3, max_rows=1, by=None)
    assert "delta=1e-07" in str(q.explain())
    out = q.run(rng=0).to_pandas()
    assert len(out) <= 10
    assert set(out["dest"]) <= set(flights["dest"])


def test_sum_mean_and_quantile(session: sdp.data.Session) -> None:
    s = session.sum("dep_delay", bounds=(-60, 600), privacy=sdp.PureDP(0.1), max_rows=1)
    assert list(s.run(rng=0).to_pandas().columns) == ["sum", "lower", "upper"]
    m = session.mean("dep_delay", bounds=(-60, 600), privacy=sdp.PureDP(0.1), max_rows=1)
    assert list(m.run(rng=0).to_pandas().columns) == ["mean", "lower", "upper"]
    q = session.quantile("air_time", 0.5, bounds=(0, 700), privacy=sdp.PureDP(0.1), max_rows=1)
    value = float(q.run(rng=0).to_pandas()["quantile"].iloc[0])
    assert 0.0 <= value <= 700.0


def test_same_rng_same_release_by_default(flights: pd.DataFrame) -> None:
    """Without seed=, sessions bound with the same salts: the same run(rng) releases the same."""
    frames = []
    for _ in range(2):
        s = sdp.data.Session(
            flights, privacy_unit="tailnum", budget=sdp.ApproxDP(1.0, 1e-6), null_units="drop"
        )
        q = s.count_by("dest", keys=None, privacy=sdp.ApproxDP(1.0, 1e-7), max_groups=3)
        frames.append(q.run(rng=0).to_pandas())
    pd.testing.assert_frame_equal(frames[0], frames[1])
