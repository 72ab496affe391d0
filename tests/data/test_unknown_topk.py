"""top_k over unknown keys (LimitDom): the engine's top k̄ + 1 counts against pandas (tie-break
included), the true top-k at a huge ε, an early ⊥ at a tiny ε/δ, the privacy split."""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sharpdp as sdp


@pytest.fixture(scope="module")
def zipf() -> pd.DataFrame:
    """3,000 persons, 20 keys with weights ∝ 0.8^i, 1–4 rows each (some repeated keys)."""
    rng = np.random.default_rng(77)
    keys = [f"k{i:02d}" for i in range(20)]
    w = 0.8 ** np.arange(20)
    rows = []
    for p in range(3000):
        for i in rng.choice(20, size=int(rng.integers(1, 5)), p=w / w.sum()):
            rows.append((f"u{p:04d}", keys[i]))
    return pd.DataFrame(rows, columns=["person", "item"])


def _top(counts: dict[tuple[Any, ...], int], by: bool, k_bar: int) -> dict[Any, list[Any]]:
    """Per by-group, [(key, count)] of the first k̄ + 1 in ORDER BY count DESC, key ASC."""
    rows = [(g[0] if by else (), g[-1], c) for g, c in counts.items()]
    out: dict[Any, list[Any]] = {}
    for group in sorted({r[0] for r in rows}):
        ranked = sorted([r for r in rows if r[0] == group], key=lambda r: (-r[2], r[1]))
        out[group] = [(r[1], r[2]) for r in ranked[: k_bar + 1]]
    return out


def test_fetched_counts_match_pandas_with_tie_break(flights: pd.DataFrame, reference: type) -> None:
    s = sdp.data.Session(flights, "tailnum", sdp.ApproxDP(10.0, 1e-6), null_units="drop", seed=9)
    q = s.top_k(
        "dest", 3, privacy=sdp.ApproxDP(1.0, 1e-7), max_groups=3, max_rows=1, by="origin", k_bar=8
    )
    data = flights[flights["tailnum"].notna()]
    counts = reference.bounded_counts(data, "tailnum", ["origin", "dest"], 1, 3, q.bounding.salt)
    want = _top(counts, True, 8)
    got = q.top_counts()
    assert [g[0] for g in got] == sorted(want)
    ties = 0
    for (origin,), (keys, cnt, nxt) in got.items():
        expected = want[origin]
        assert list(zip(keys, cnt.tolist(), strict=True)) == expected[:8]
        assert nxt == expected[8][1]
        ties += sum(a[1] == b[1] for a, b in itertools.pairwise(expected))
    assert ties > 0  # the tie-break by key was exercised
    assert s.accountant.history() == ()


def test_huge_epsilon_releases_true_top_k(zipf: pd.DataFrame, reference: type) -> None:
    # η is capped at 30/k = 6 per round; Gumbel(1/6) noise: a gap g ≥ 10 is inverted with
    # probability < e^{−60}; the threshold h⊥ = 0 + 1 + (1/6)·ln(2/δ_⊥) < 10 sits ≥ 10 below the
    # 5th count (checked): the false-failure rate is < 10·e^{−60}.
    s = sdp.data.Session(zipf, "person", sdp.ApproxDP(1e9, 0.1), seed=1)
    q = s.top_k("item", 5, privacy=sdp.ApproxDP(1e6, 1e-3), max_groups=2, max_rows=2)
    assert q.mechanism.epsilon_ == 6.0
    assert q.mechanism.k_bar == 100
    counts = reference.bounded_counts(zipf, "person", ["item"], 2, 2, q.bounding.salt)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top6 = [c for _, c in ranked[:6]]
    assert min(a - b for a, b in itertools.pairwise(top6)) >= 10
    assert top6[4] >= q.mechanism.threshold_offset + 10
    keys, cnt, nxt = q.top_counts()[()]
    assert (keys, cnt.tolist(), nxt) == ([k[0] for k, _ in ranked], [c for _, c in ranked], 0)
    got = q.run(rng=0).to_pandas()
    assert got["item"].tolist() == [k[0] for k, _ in ranked[:5]]
    assert got["rank"].tolist() == [1, 2, 3, 4, 5]


def test_tiny_budget_stops_at_bottom(zipf: pd.DataFrame) -> None:
    # ApproxDP(0.02, 1e-12), k = 3: η ≈ 0.0067 per round, threshold offset ≈ ln(2/δ_⊥)/η ≈ 4,400
    # above h₍ₖ̄₊₁₎ = 0 while the counts are ≈ 1,000: a key beats ⊥ with probability
    # < e^{−(h⊥ − count)/b} each (Gumbel difference: logistic); their sum, the false-failure rate,
    # is checked to be < 1e-6.
    s = sdp.data.Session(zipf, "person", sdp.ApproxDP(1.0, 1e-6), seed=2)
    q = s.top_k("item", 3, privacy=sdp.ApproxDP(0.02, 1e-12), max_groups=2)
    m = q.mechanism
    _, cnt, nxt = q.top_counts()[()]
    b = m.sensitivity / m.epsilon_
    bound = sum(math.exp(-(nxt + m.threshold_offset - c) / b) for c in cnt.tolist())
    assert bound < 1e-6
    r = q.run(rng=4).to_pandas()
    assert len(r) == 0
    assert list(r.columns) == ["rank", "item"]
    assert len(s.accountant.history()) == 1  # spent, even though nothing came out


def test_privacy_split_fits_target_and_beats_all_delta_to_bottom() -> None:
    t = pd.DataFrame({"u": [1, 2, 3], "x": ["a", "b", "a"]})
    s = sdp.data.Session(t, "u", sdp.ApproxDP(5.0, 1e-5), seed=0)
    target = sdp.ApproxDP(0.5, 1e-7)
    q = s.top_k("x", 4, privacy=target, max_groups=2)
    m, copies = q.charge
    assert isinstance(m, sdp.LimitDom)
    assert (copies, m.max_keys) == (1, 2)
    # the charge fits the target under sdp.compose …
    items = [(sdp.BoundedRange(m.epsilon_), 4), sdp.ApproxDP(0.0, m.delta_)]
    assert sdp.compose(items).epsilon(1e-7) <= 0.5
    assert sdp.compose([(m, 1)]).epsilon(1e-7) <= 0.5
    # … and a 1% larger per-round ε would not (the search is tight to 1e-3)
    bigger = [(sdp.BoundedRange(m.epsilon_ * 1.01), 4), sdp.ApproxDP(0.0, m.delta_)]
    assert sdp.compose(bigger).epsilon(1e-7) > 0.5
    # spending all δ on ⊥ leaves the rounds at δ = 0: pure 4η ≤ 0.5, a lower η
    assert m.epsilon_ > 0.5 / 4
    assert s.accountant.history() == ()
    assert q.explain().fits


def test_flights_demo_call(flights: pd.DataFrame) -> None:
    s = sdp.data.Session(flights, "tailnum", sdp.ApproxDP(1.0, 1e-6), null_units="drop", seed=0)
    start = time.perf_counter()
    q = s.top_k(
        "dest", k=10, privacy=sdp.ApproxDP(0.2, 1e-7), max_groups=3, max_rows=1, by="origin"
    )
    text = str(q.explain())
    assert "LimitDom" in text
    assert s.accountant.history() == ()
    r = q.run(rng=0).to_pandas()
    elapsed = time.perf_counter() - start
    assert list(r.columns) == ["origin", "rank", "dest"]
    assert (r.groupby("origin").size() <= 10).all()
    assert q.statistics[0].copies == 3
    assert len(s.accountant.history()) == 1
    assert elapsed < 10.0  # ~0.7 s measured; generous for slow CI machines


def test_small_epsilon_follows_limitdom_law(
    small: pd.DataFrame, reference: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ApproxZCDP(0.0025, 0.3): η = √(8ρ/k) = 0.1 per round, Gumbel(10) noise, ⊥ ≈ 27 above the
    # 4th count: every outcome has a fair chance. (1) The engine's top k̄ + 1 equal the independent
    # bounded counts; (2) 3,000 seeded draws of
    # the release step (counts fetched once) against LimitDom.law on the independent counts:
    # chi-square over the outcomes (expected < 5 pooled), failing below p = 1e-4 (false-failure
    # rate 1e-4); (3) a full run spends once and releases at most k keys.
    s = sdp.data.Session(small, "person", sdp.ApproxDP(50.0, 0.5), seed=12)
    q = s.top_k("fruit", 2, privacy=sdp.ApproxZCDP(0.0025, 0.3), max_groups=2, k_bar=3)
    counts = reference.bounded_counts(small, "person", ["fruit"], 1, 2, q.bounding.salt)
    want = _top(counts, False, 3)[()]
    tops = q.top_counts()
    keys, cnt, nxt = tops[()]
    assert list(zip(keys, cnt.tolist(), strict=True)) == want[:3]
    assert nxt == want[3][1]
    law = q.mechanism.law([c for _, c in want[:3]], want[3][1])
    outcomes = sorted(law)
    probs = np.array([law[o] for o in outcomes])
    assert math.isclose(probs.sum(), 1.0, rel_tol=1e-9)
    assert probs.max() < 0.9  # the law is spread (⊥ competes with the counts)
    n = 3000
    rng = np.random.default_rng(99)
    seen: dict[tuple[int, ...], int] = dict.fromkeys(outcomes, 0)
    index = {k: i for i, (k, _) in enumerate(want[:3])}
    for _ in range(n):
        frame = q._sample(tops, rng).frame
        seen[tuple(index[k] for k in frame["fruit"])] += 1
    expected = n * probs
    big = expected >= 5
    observed = [seen[o] for o, b in zip(outcomes, big, strict=True) if b]
    observed.append(sum(seen[o] for o, b in zip(outcomes, big, strict=True) if not b))
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] < 5:  # nothing (or too little) to pool: merge into the smallest kept cell
        observed, exp = observed[:-1], exp[:-1]
        observed[int(np.argmin(exp))] += sum(
            seen[o] for o, b in zip(outcomes, big, strict=True) if not b
        )
        exp[int(np.argmin(exp))] += expected[~big].sum()
    assert stats.chisquare(np.array(observed, dtype=float), exp).pvalue > 1e-4
    monkeypatch.undo()
    r = q.run(rng=rng).to_pandas()
    assert len(r) <= 2
    assert len(s.accountant.history()) == 1


def test_calibration_is_kept_per_shape_and_never_shared_across_targets(zipf: pd.DataFrame) -> None:
    """A second session's query of the same shape reuses the process's calibration (equal
    targets built apart); another target or k gets a charge of its own, which still fits its
    own target."""
    from sharpdp.data import _calibrate

    def query(epsilon: float, k: int) -> Any:
        s = sdp.data.Session(zipf, privacy_unit="person", budget=sdp.ApproxDP(9.0, 1e-5))
        return s.top_k("item", k=k, privacy=sdp.ApproxDP(epsilon, 1e-6), max_groups=1)

    before = _calibrate.limitdom.cache_info()
    first, again = query(0.7, 3), query(0.7, 3)
    assert _calibrate.limitdom.cache_info().hits >= before.hits + 1
    assert first.charge == again.charge
    other, wider = query(0.35, 3), query(0.7, 5)
    assert len({repr(q.charge) for q in (first, other, wider)}) == 3
    for q, epsilon in ((first, 0.7), (other, 0.35), (wider, 0.7)):
        assert sdp.compose([q.charge]).certifies(epsilon, 1e-6)


def test_select_best_without_keys_is_limitdom_with_k_one(
    zipf: pd.DataFrame, reference: type
) -> None:
    # the best of unknown candidates: one LimitDom round over approvals (one row per person
    # and key); at a huge ε the true best (by persons, capped) is released, as in the test above
    s = sdp.data.Session(zipf, "person", sdp.ApproxDP(1e9, 0.1), seed=1)
    q = s.select_best("item", privacy=sdp.ApproxDP(1e6, 1e-3), max_groups=2)
    assert (q.mechanism.k, q.bounding.max_rows) == (1, 1)
    counts = reference.bounded_counts(zipf, "person", ["item"], 1, 2, q.bounding.salt)
    best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0][0]
    assert q.run(rng=0).to_pandas()["item"].tolist() == [best]
    pure = sdp.data.Session(zipf, "person", sdp.PureDP(1.0))
    with pytest.raises(sdp.InvalidParameter, match="need δ > 0"):
        pure.select_best("item", privacy=sdp.PureDP(0.5))
    assert pure.accountant.history() == ()


@pytest.mark.parametrize("kwargs", [{"k": 1, "k_bar": 2**63}, {"k": 2**63}])
def test_k_and_k_bar_beyond_the_engines_ranks_are_refused(
    zipf: pd.DataFrame, kwargs: dict[str, int]
) -> None:
    # the engine compares k̄ with int64 ranks: k̄ = 2⁶³ raised a TypeError there after explain()
    # had priced it; the default k̄ = max(2k, 100) is capped at 2⁶³ − 1
    s = sdp.data.Session(zipf, "person", sdp.ApproxDP(1.0, 1e-6))
    with pytest.raises(sdp.InvalidParameter, match="must be <= 9223372036854775807"):
        s.top_k("item", privacy=sdp.ApproxDP(0.5, 1e-7), **kwargs)  # type: ignore[arg-type]
    q = s.top_k("item", 2**62, privacy=sdp.ApproxDP(0.5, 1e-7))
    assert q.mechanism.k_bar == 2**63 - 1
    assert q.run(rng=0).to_pandas().empty  # (every key falls short of the threshold)
