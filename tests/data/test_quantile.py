"""quantile: the engine's histogram against an independent pandas computation; the true quantile's
cell at a huge ε; the exact law at a small ε (chi-square); the rank accuracy statement."""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sharpdp as sdp

FRUITS = ["apple", "banana", "cherry"]


def _histogram(
    df: pd.DataFrame,
    reference: type,
    column: str,
    keys: list[str],
    lo: float,
    hi: float,
    cells: int,
    max_rows: int,
    max_groups: int,
    salt: str,
) -> dict[tuple[Any, ...], tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """Independent bounding in pandas + hashlib: grid index v = ⌊(clip(x) − L)·cells/(U − L) + ½⌋,
    rows ranked per (person, key) by hash(person|key…|v|salt) then v, pairs per person by
    hash(person|key…|salt) then key; then (key, v) → rows."""
    d = df[df[column].notna()].copy()
    if keys:
        d = d[d[keys[0]].isin(FRUITS)]  # the public by-keys are kept first, then bounded
    x = d[column].astype(float).clip(lo, hi)
    d["v"] = np.clip(np.floor((x - lo) * float(cells) / (hi - lo) + 0.5), 0, cells).astype(np.int64)
    d["digest"] = [
        reference.rank_hash([p, *ks, v], salt)
        for p, ks, v in zip(
            d["person"], d[keys].itertuples(index=False, name=None), d["v"], strict=True
        )
    ]
    d = d.sort_values(["person", *keys, "digest", "v"], kind="mergesort")
    d = d[d.groupby(["person", *keys]).cumcount() < max_rows]
    if keys:
        pairs = d.groupby(["person", *keys]).size().reset_index(name="n")
        pairs["digest"] = [
            reference.rank_hash([p, *ks], salt)
            for p, ks in zip(
                pairs["person"], pairs[keys].itertuples(index=False, name=None), strict=True
            )
        ]
        pairs = pairs.sort_values(["person", "digest", *keys], kind="mergesort")
        pairs = pairs[pairs.groupby("person").cumcount() < max_groups]
        d = d.merge(pairs[["person", *keys]], on=["person", *keys])
    out = {}
    groups = [()] if not keys else [(k,) for k in FRUITS]
    for g in groups:
        part = d
        for c, v in zip(keys, g, strict=True):
            part = part[part[c] == v]
        h = part.groupby("v").size().sort_index()
        out[g] = (h.index.to_numpy(np.int64), h.to_numpy(np.int64))
    return out


def _optimal_cells(
    positions: np.ndarray[Any, Any], counts: np.ndarray[Any, Any], q: float, cells: int
) -> set[int]:
    """Cells t ∈ [0, cells) minimising |r_t − qn|, r_t = rows at grid points ≤ t (by brute force)."""
    n = int(counts.sum())
    r = np.array([int(counts[positions <= t].sum()) for t in range(cells)])
    dist = np.abs(r - q * n)
    return {int(t) for t in np.flatnonzero(dist <= dist.min() + 1e-9)}


def _released(q: Any, histograms: Any, n: int, seed: int) -> list[float]:
    """``n`` seeded runs of the release step alone, on histograms fetched once."""
    rng = np.random.default_rng(seed)
    return [float(q._sample(histograms, rng).frame["quantile"].iloc[0]) for _ in range(n)]


def _chisquare_pvalue(seen: Counter[int], expected: np.ndarray[Any, Any]) -> float:
    """Pearson's p-value of the outcome counts ``seen`` (outcome i) against ``expected``, the
    outcomes expected fewer than 5 times pooled into one bin (dropped if it expects none); at
    least 5 bins are required, so the test is not vacuous."""
    big = expected >= 5
    assert big.sum() >= 5
    observed = [seen[int(i)] for i in np.flatnonzero(big)]
    exp = list(expected[big])
    if expected[~big].sum() > 0:
        observed.append(sum(seen[int(i)] for i in np.flatnonzero(~big)))
        exp.append(expected[~big].sum())
    return float(stats.chisquare(np.array(observed, dtype=float), np.array(exp)).pvalue)


def test_huge_epsilon_quantile_is_the_true_cell(small: pd.DataFrame, reference: type) -> None:
    # amount ∈ {−19.5, …, 119.5}; bounds (−10, 100) clamp both tails; 55 cells of width 2.
    # ε = 1e6: c = ε/(2·m·½) = 5e5 per rank; with q = 0.5 every non-optimal cell is ≥ ½ rank
    # worse, so P[non-optimal] ≤ 55·e^{−2.5e5}: the false-failure rate is nil.
    s = sdp.data.Session(small, "person", sdp.PureDP(1e12), seed=11)
    lo, hi, cells = -10.0, 100.0, 55
    for by, keys, max_groups in ((None, None, 1), ("fruit", FRUITS, 2)):
        q = s.quantile(
            "amount",
            0.5,
            (lo, hi),
            privacy=sdp.PureDP(1e6),
            max_rows=2,
            by=by,
            keys=keys,
            max_groups=max_groups,
            cells=cells,
        )
        truth = _histogram(
            small,
            reference,
            "amount",
            [] if by is None else ["fruit"],
            lo,
            hi,
            cells,
            2,
            max_groups,
            q.bounding.salt,
        )
        engine = q.histograms()
        assert engine.keys() == truth.keys()
        for g, (pos, cnt) in truth.items():
            np.testing.assert_array_equal(engine[g][0], pos)
            np.testing.assert_array_equal(engine[g][1], cnt)
        got = q.run(rng=3).to_pandas(level=0.9)
        assert list(got.columns) == ([] if by is None else ["fruit"]) + ["quantile", "rank_error"]
        for i, g in enumerate(truth):
            value = float(got["quantile"].iloc[i])
            t = round((value - lo) / ((hi - lo) / cells) - 0.5)
            assert value == lo + (t + 0.5) * (hi - lo) / cells
            assert t in _optimal_cells(*truth[g], 0.5, cells)


def test_small_epsilon_quantile_follows_interval_law(small: pd.DataFrame, reference: type) -> None:
    # (1) the engine's histogram equals the independent one (exact); (2) 2,000 seeded draws of the
    # release step (histogram fetched once) against Quantile.interval_law evaluated on the
    # independent histogram: chi-square over the intervals (those with expected count < 5 pooled),
    # failing below p = 1e-4 (false-failure rate 1e-4).
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=5)
    lo, hi, cells = -20.0, 120.0, 70
    q = s.quantile("amount", 0.3, (lo, hi), privacy=sdp.PureDP(0.8), max_rows=3, cells=cells)
    truth = _histogram(small, reference, "amount", [], lo, hi, cells, 3, 1, q.bounding.salt)
    engine = q.histograms()
    np.testing.assert_array_equal(engine[()][0], truth[()][0])
    np.testing.assert_array_equal(engine[()][1], truth[()][1])
    # the mechanism's parameters are the documented ones: Δ = m·max(q, 1 − q) = 2.1
    assert q.mechanism.epsilon_ == 0.8
    assert math.isclose(q.mechanism.sensitivity, 2.1)
    starts, _, probs = q.mechanism.interval_law(*truth[()])
    n = 2000
    step = (hi - lo) / cells
    seen: Counter[int] = Counter()
    for value in _released(q, engine, n, seed=2024):
        t = round((value - lo) / step - 0.5)
        seen[int(np.searchsorted(starts, t, side="right")) - 1] += 1
    assert n * probs[n * probs < 5].sum() >= 5  # the pooled bin is a real bin here
    assert _chisquare_pvalue(seen, n * probs) > 1e-4


def test_rank_error_statement(small: pd.DataFrame) -> None:
    # w = ln(cells/(1 − level))/c with c = ε/(2Δ): here ε = 1, Δ = ½, cells = 140 (step 1)
    s = sdp.data.Session(small, "person", sdp.PureDP(10.0), seed=0)
    q = s.quantile("amount", 0.5, (-20, 120), privacy=sdp.PureDP(1.0), cells=140)
    r = q.run(rng=0)
    w = float(r.to_pandas(level=0.95)["rank_error"].iloc[0])
    assert math.log(140 / 0.05) <= w <= math.log(140 / 0.05) * (1 + 1e-12)
    assert "rank_error" not in r.frame.columns
    assert "lower" not in r.to_pandas().columns


def test_quantile_privacy_targets(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.ApproxDP(10.0, 1e-5), seed=0)
    # pure: η = ε/copies (2 groups a person can touch)
    q = s.quantile(
        "amount", 0.5, (0, 100), privacy=sdp.PureDP(0.6), by="fruit", keys=FRUITS, max_groups=2
    )
    assert q.statistics[0].copies == 2
    assert q.mechanism.epsilon_ == 0.3
    # zCDP: the largest η whose BR zCDP constant fits (≤ η²/8), within 1e-6 relative
    q = s.quantile("amount", 0.5, (0, 100), privacy=sdp.ZCDP(0.02))
    eta = q.mechanism.epsilon_
    rho = sdp.convert(sdp.BoundedRange(eta), sdp.ZCDP).rho
    assert rho <= 0.02
    assert eta >= math.sqrt(8 * 0.02)
    assert sdp.convert(sdp.BoundedRange(eta * (1 + 1e-6)), sdp.ZCDP).rho > 0.02
    # (ε, δ): η-BR's exact profile meets the target, a slightly larger η does not
    q = s.quantile("amount", 0.5, (0, 100), privacy=sdp.ApproxDP(0.5, 1e-6))
    eta = q.mechanism.epsilon_
    assert sdp.BoundedRange(eta).delta(0.5) <= 1e-6 < sdp.BoundedRange(eta * 1.001).delta(0.5)
    assert s.accountant.history() == ()


def test_flights_median_demo_call(flights: pd.DataFrame) -> None:
    s = sdp.data.Session(flights, "tailnum", sdp.ApproxDP(1.0, 1e-6), null_units="drop", seed=0)
    start = time.perf_counter()
    q = s.quantile("air_time", 0.5, bounds=(0, 700), privacy=sdp.PureDP(0.1), max_rows=1)
    assert "Quantile" in str(q.explain())
    assert s.accountant.history() == ()
    r = q.run(rng=0).to_pandas(level=0.95)
    elapsed = time.perf_counter() - start
    assert len(s.accountant.history()) == 1
    assert 0.0 <= float(r["quantile"].iloc[0]) <= 700.0
    assert q.mechanism.cells == 700  # integer bounds ≥ 2^8 apart: step 1 (else 1024 cells)
    assert s.quantile("air_time", 0.5, (0, 100), privacy=sdp.PureDP(0.1)).mechanism.cells == 1024
    assert elapsed < 10.0  # ~0.5 s measured; generous for slow CI machines


# -- support="points": tie-aware, over grid points ------------------------------------------------


def _point_law(
    positions: np.ndarray[Any, Any], counts: np.ndarray[Any, Any], q: float, c: float, cells: int
) -> np.ndarray[Any, Any]:
    """P[point t] ∝ exp(−c·dist(qn, [#{x < t}, #{x ≤ t}])), t = 0..cells, by brute force."""
    n = int(counts.sum())
    below = np.array([int(counts[positions < t].sum()) for t in range(cells + 1)])
    upto = np.array([int(counts[positions <= t].sum()) for t in range(cells + 1)])
    dist = np.maximum(np.maximum(below - q * n, q * n - upto), 0.0)
    w = np.exp(-c * (dist - dist.min()))
    return w / w.sum()


def test_points_release_a_tied_median_that_cells_miss() -> None:
    # 300 persons, one row each: 180 hold 4, the rest 0..9 spread: the median is the tie at 4
    # (ranks [54, 249] with these draws; qn = 150). ε = 2, Δ = ½: c = 2 per rank. Points: every
    # other grid point is ≥ 96 ranks away, P[other] ≤ 9·e^{−192}. Cells: Smith's mechanism
    # releases a cell's midpoint; the cells beside the tie are 96 and 99 ranks away and every
    # other ≥ 108, so it releases 3.5 or 4.5 (P[other] ≤ 8·e^{−24} per run, false failure
    # < 1e-9 over 20 runs), never the tied value.
    rng = np.random.default_rng(8)
    values = np.concatenate([np.full(180, 4), rng.integers(0, 10, size=120)])
    df = pd.DataFrame({"person": [f"p{i}" for i in range(300)], "x": values})
    s = sdp.data.Session(df, "person", sdp.PureDP(1e9), seed=1)
    points = s.quantile("x", 0.5, (0, 9), privacy=sdp.PureDP(2.0), support="points")
    assert points.mechanism.cells == 9  # an integer column: step 1
    assert "support=points" in points.description
    assert "grid points" in str(points.explain())
    assert {float(points.run(rng=seed).frame["quantile"].iloc[0]) for seed in range(20)} == {4.0}
    cells = s.quantile("x", 0.5, (0, 9), privacy=sdp.PureDP(2.0))
    got = {float(cells.run(rng=seed).frame["quantile"].iloc[0]) for seed in range(20)}
    assert got <= {3.5, 4.5}
    assert 4.0 not in got


def test_points_follow_their_law_on_the_engine(small: pd.DataFrame, reference: type) -> None:
    # The engine's histogram equals the independent one; 2,000 seeded release steps against the
    # brute-force point law on it (chi-square, bins with expected count < 5 pooled; false-failure
    # rate 1e-4).
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=6)
    lo, hi, cells = -20.0, 120.0, 28
    q = s.quantile(
        "amount", 0.4, (lo, hi), privacy=sdp.PureDP(0.5), max_rows=2, cells=cells, support="points"
    )
    truth = _histogram(small, reference, "amount", [], lo, hi, cells, 2, 1, q.bounding.salt)
    engine = q.histograms()
    np.testing.assert_array_equal(engine[()][0], truth[()][0])
    np.testing.assert_array_equal(engine[()][1], truth[()][1])
    law = _point_law(*truth[()], 0.4, 0.5 / (2 * 2 * 0.6), cells)
    n = 2000
    step = (hi - lo) / cells
    seen: Counter[int] = Counter()
    for value in _released(q, engine, n, seed=77):
        t = round((value - lo) / step)
        assert value == lo + t * step
        seen[t] += 1
    assert _chisquare_pvalue(seen, n * law) > 1e-4


def test_points_rank_error_statement(small: pd.DataFrame) -> None:
    # w = ln((cells + 1)/(1 − level))/c: ε = 1, Δ = ½ (c = 1), 140 cells, so 141 points
    s = sdp.data.Session(small, "person", sdp.PureDP(10.0), seed=0)
    q = s.quantile("amount", 0.5, (-20, 120), privacy=sdp.PureDP(1.0), cells=140, support="points")
    r = q.run(rng=0)
    w = float(r.to_pandas(level=0.95)["rank_error"].iloc[0])
    assert math.log(141 / 0.05) <= w <= math.log(141 / 0.05) * (1 + 1e-12)
    assert "a grid point drawn" in str(r)


def test_bad_support_is_refused_before_anything_is_spent(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(10.0), seed=0)
    for bad in ("intervals", "", None, 1):
        with pytest.raises(sdp.InvalidParameter, match="support"):
            s.quantile("amount", 0.5, (0, 100), privacy=sdp.PureDP(1.0), support=bad)  # type: ignore[arg-type]
    assert s.accountant.history() == ()


def test_the_mechanisms_aggregate_is_the_engines_grid() -> None:
    # halfway values round up on the engine, floor((x − L)·cells/(U − L) + ½); the helper
    # rounded halves to even (np.rint) and divided first: positions [0, 2, 3, 4] for these
    from sharpdp.data import _engine
    from sharpdp.data._bounding import grid_position
    from sharpdp.mechanisms import Quantile

    ibis = _engine.ibis()
    rng = np.random.default_rng(20261130)
    x = np.concatenate([[0.05, 0.25, 0.45, 0.3, -3.0, 7.0], rng.integers(0, 21, 200) / 20.0])
    m = Quantile(1.0, 0.5, (0.0, 1.0), cells=10)
    positions, counts = m.aggregate(x)
    with _engine.quiet():  # (ibis 12 asks pandas 3 for an option it deprecates)
        table = ibis.memtable(pd.DataFrame({"x": x}))
    grid = (
        table.select(t=grid_position(table.x, 0.0, 1.0, 10))
        .group_by("t")
        .aggregate(n=ibis._.count())
    )
    engine = _engine.execute(ibis.duckdb.connect(), grid.order_by("t"))
    assert positions.tolist() == engine["t"].tolist()
    assert counts.tolist() == engine["n"].tolist()
    assert m.aggregate([0.05, 0.25, 0.45, 0.3])[0].tolist() == [1, 3, 5]
    # (x − L)·cells overflowing: refused, as the session refuses such bounds (it binned 0.3·U
    # into the last cell)
    wide = Quantile(5.0, 0.5, (0.0, 1e300), cells=2**40)
    with pytest.raises(sdp.InvalidParameter, match="too far apart"):
        wide.aggregate([3e299])


def test_bounds_whose_cells_are_zero_wide_are_refused(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(10.0), seed=0)
    with pytest.raises(sdp.InvalidParameter, match="too close together for 1024 cells"):
        s.quantile("amount", 0.5, (0.0, 5e-324), privacy=sdp.PureDP(1.0))
    assert s.accountant.history() == ()
    # bounds as a 1-D array or Series of two numbers, read by position
    for bounds in (np.array([0.0, 100.0]), pd.Series([0.0, 100.0])):
        q = s.quantile("amount", 0.5, bounds, privacy=sdp.PureDP(1.0))  # type: ignore[arg-type]
        assert "bounds=(0.0, 100.0)" in str(q.explain())
