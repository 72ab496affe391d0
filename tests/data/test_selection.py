"""top_k and select_best: the true top-k at a huge ε, the exact law at a small ε (chi-square)."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sharpdp as sdp

ORIGINS = ["EWR", "JFK", "LGA"]


def test_huge_epsilon_top_k_is_true_top_k_of_bounded_counts(
    flights: pd.DataFrame, reference: type
) -> None:
    # ε = 1e6 per query: c = ε/(k·3·m) ≈ 3e3 per round, so any score gap ≥ 1 loses by a factor
    # e^{-3e3}: the output is the true top-k up to ties (false-failure rate < 1e-1000).
    s = sdp.data.Session(flights, "tailnum", sdp.PureDP(1e9), null_units="drop", seed=4)
    dests = sorted(flights["dest"].unique())
    q = s.top_k(
        "dest",
        10,
        keys=dests,
        privacy=sdp.PureDP(1e6),
        max_groups=3,
        max_rows=2,
        by="origin",
        by_keys=ORIGINS,
    )
    got = q.run(rng=7).to_pandas()
    data = flights[flights["tailnum"].notna()]
    truth = reference.bounded_counts(data, "tailnum", ["origin", "dest"], 2, 3, q.bounding.salt)
    for origin in ORIGINS:
        scores = {d: truth.get((origin, d), 0) for d in dests}
        chosen = got[got["origin"] == origin].sort_values("rank")["dest"].tolist()
        assert len(chosen) == 10
        # the chosen scores, in order, are the 10 largest scores (robust to ties)
        assert [scores[d] for d in chosen] == sorted(scores.values(), reverse=True)[:10]


def test_small_epsilon_top_k_follows_exact_law(
    small: pd.DataFrame, reference: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The release's law is TopK's law on the engine's bounded scores. (1) The engine's scores
    # equal the independently bounded counts (exact check). (2) 3,000 seeded draws of the query's
    # release step (engine scores fetched once) against TopK.probability on the independent counts:
    # chi-square over the 12 ordered pairs (expected counts ≥ 5 checked), failing below p = 1e-4
    # (false-failure rate 1e-4). (3) Full runs spend and release.
    fruits = ["apple", "banana", "cherry", "date"]
    probe = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=8)
    salt = probe.top_k("fruit", 2, keys=fruits, privacy=sdp.PureDP(1.0)).bounding.salt
    truth = reference.bounded_counts(
        small[small["fruit"].isin(fruits)], "person", ["fruit"], 1, 2, salt
    )
    scores = np.array([truth.get((f,), 0) for f in fruits], dtype=float)
    epsilon = 2.0 * 1.5 / float(scores.max() - scores.min())  # c·range ≈ 1.5 per round
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=8)  # same seed: same salt
    q = s.top_k("fruit", 2, keys=fruits, privacy=sdp.PureDP(epsilon), max_groups=2, max_rows=1)
    assert q.bounding.salt == salt
    engine_scores = q._scores("count")
    np.testing.assert_array_equal(engine_scores[()], scores)
    outcomes = list(itertools.permutations(range(4), 2))
    probs = np.array([q.mechanism.probability(scores, o) for o in outcomes])
    n = 3000
    assert (n * probs).min() >= 5
    monkeypatch.setattr(type(q), "_scores", lambda self, metric: engine_scores)
    rng = np.random.default_rng(123)
    seen: Counter[tuple[int, ...]] = Counter()
    for _ in range(n):
        r = q._release(rng).to_pandas().sort_values("rank")
        seen[tuple(fruits.index(f) for f in r["fruit"])] += 1
    observed = np.array([seen[o] for o in outcomes], dtype=float)
    assert stats.chisquare(observed, n * probs).pvalue > 1e-4
    monkeypatch.undo()
    before = len(s.accountant.history())
    assert len(q.run(rng=rng).to_pandas()) == 2
    assert len(s.accountant.history()) == before + 1


def test_select_best_huge_epsilon_picks_most_approved(small: pd.DataFrame, reference: type) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1e9), seed=6)
    fruits = ["apple", "banana", "cherry", "date", "elder"]
    q = s.select_best("fruit", keys=fruits, privacy=sdp.PureDP(1e6), max_groups=2)
    pairs = reference.bounded_pairs(small, "person", ["fruit"], 1, 2, q.bounding.salt)
    approvals = pairs.groupby("fruit").size()
    got = q.run(rng=0).to_pandas()
    assert got["fruit"].tolist() == [approvals.idxmax()]
    assert (q.mechanism.sensitivity, q.mechanism.monotonic) == (1.0, True)
    assert 1e6 * (1 - 1e-9) <= q.mechanism.epsilon_ <= 1e6
