"""Workloads (``Session.answer``) and MWEM (``Session.mwem``), checked from first principles.

Expected values come from independent computations: the bounded true answers from pandas, the
overlap C by brute-force enumeration, the noise calibrations from their closed forms (discrete
Laplace t = mC/ε; Gaussian σ from ρ = Δ₂²/(2σ²), or Balle–Wang's δ(ε) evaluated with scipy's
normal CDF), the mechanism choice from the closed-form E|Z| of each law, and MWEM's privacy from
the sum of its parts' ρ (or ε).
"""

from __future__ import annotations

import datetime
import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sharpdp as sdp

DOM = {"a": [0, 1, 2], "b": ["x", "y"], "c": [10, 20]}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    """300 persons; person p has 1–4 rows with values drawn from a fixed seed."""
    g = np.random.default_rng(7)
    rows = []
    for p in range(300):
        for _ in range(int(g.integers(1, 5))):
            rows.append(
                (p, int(g.integers(0, 3)), "xy"[int(g.integers(0, 2))], int(g.choice([10, 20])))
            )
    return pd.DataFrame(rows, columns=["who", "a", "b", "c"])


def session(table: pd.DataFrame, budget: sdp.Guarantee | None = None) -> sdp.data.Session:
    return sdp.data.Session(table, "who", budget or sdp.ApproxDP(1e9, 1e-3))


def bounded_cells(table: pd.DataFrame, columns: list[str], m: int) -> pd.DataFrame:
    """Each person's distinct combinations, all kept when m ≥ their number (the tests choose m
    so, or check only totals)."""
    distinct = table[["who", *columns]].drop_duplicates()
    assert distinct.groupby("who").size().max() <= m
    return distinct


# -- the workload's structure -----------------------------------------------------------------------


def brute_overlap(queries: dict[str, dict[str, object]], values: dict[str, list[object]]) -> int:
    cols = sorted(values)
    best = 0
    for combo in itertools.product(*[values[c] for c in cols]):
        row = dict(zip(cols, combo, strict=True))
        hits = 0
        for conds in queries.values():
            ok = True
            for col, allowed in conds.items():
                allowed_set = set(allowed) if isinstance(allowed, list) else {allowed}
                ok = ok and row[col] in allowed_set
            hits += ok
        best = max(best, hits)
    return best


@pytest.mark.parametrize("seed", range(5))
def test_predicate_overlap_is_the_brute_force_maximum(seed: int) -> None:
    g = np.random.default_rng(seed)
    queries: dict[str, dict[str, object]] = {}
    for i in range(int(g.integers(1, 12))):
        conds: dict[str, object] = {}
        for col, vals in DOM.items():
            if g.random() < 0.6:
                k = int(g.integers(1, len(vals) + 1))
                conds[col] = [vals[j] for j in g.choice(len(vals), k, replace=False)]
        queries[f"q{i}"] = conds or {"a": [0]}
    w = sdp.data.predicates(queries)
    # values not mentioned behave alike: the brute force includes an "other" value per column
    values = {c: [*DOM[c], object()] for c in DOM}
    assert w.overlap({}) == brute_overlap(queries, values)
    assert w.overlap(DOM) == brute_overlap(queries, dict(DOM))


def test_marginal_cells_and_overlap() -> None:
    w = sdp.data.marginals(["a", "b", "c"], way=2, domains=DOM)
    assert w.subsets == (("a", "b"), ("a", "c"), ("b", "c"))
    assert w.overlap(DOM) == 3
    assert w.query_count(DOM) == 3 * 2 + 3 * 2 + 2 * 2
    _rows, matrix = w.matrix(DOM)
    assert matrix.shape == (16, 12)
    assert np.all(np.asarray(matrix.sum(axis=0)).ravel() == 3)  # each point is in 3 cells


# -- answers -----------------------------------------------------------------------------------------


def test_answers_with_a_huge_budget_equal_the_bounded_truth(table: pd.DataFrame) -> None:
    s = session(table)
    w = sdp.data.marginals(["a", "b", "c"], way=2, domains=DOM)
    r = s.answer(w, privacy=sdp.ZCDP(1e8), max_rows=4, rng=0)
    got = r.to_pandas()
    cells = bounded_cells(table, ["a", "b", "c"], 4)
    for (x, y), part in got[got["query"] == "a × b"].groupby(["a", "b"]):
        want = ((cells["a"] == x) & (cells["b"] == y)).sum()
        assert abs(part["count"].iloc[0] - want) < 0.01
    assert len(got) == 16
    assert r.spend is not None
    assert r.spend.id == 1


def test_predicate_answers_equal_the_truth(table: pd.DataFrame) -> None:
    s = session(table)
    queries = {"a0": {"a": 0}, "a12_x": {"a": [1, 2], "b": "x"}, "c20": {"c": 20}}
    r = s.answer(sdp.data.predicates(queries), privacy=sdp.PureDP(1e6), max_rows=4, rng=1)
    cells = bounded_cells(table, ["a", "b", "c"], 4)
    want = [
        (cells["a"] == 0).sum(),
        (cells["a"].isin([1, 2]) & (cells["b"] == "x")).sum(),
        (cells["c"] == 20).sum(),
    ]
    assert r.to_pandas()["count"].tolist() == want
    assert r.mechanism == "laplace"


def test_each_person_keeps_at_most_max_rows_distinct_rows(table: pd.DataFrame) -> None:
    s = session(table)
    w = sdp.data.marginals(["a", "b", "c"], way=3, domains=DOM)
    total = s.answer(w, privacy=sdp.ZCDP(1e8), max_rows=2, rng=0).to_pandas()["count"].sum()
    distinct = table[["who", "a", "b", "c"]].drop_duplicates().groupby("who").size()
    assert abs(total - np.minimum(distinct, 2).sum()) < 0.01


def discrete_laplace_abs(t: float) -> float:
    q = math.exp(-1.0 / t)
    return 2 * q / (1 - q * q)


def balle_wang_delta(mu: float, eps: float) -> float:
    return float(
        stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    )


@pytest.mark.parametrize(
    ("privacy", "m", "c"),
    [
        (sdp.PureDP(0.5), 1, 3),
        (sdp.PureDP(0.5), 3, 3),
        (sdp.ZCDP(0.1), 1, 10),
        (sdp.ZCDP(0.1), 2, 6),
        (sdp.ApproxDP(1.0, 1e-6), 1, 2),
        (sdp.ApproxDP(1.0, 1e-6), 1, 50),
        (sdp.ApproxDP(0.3, 1e-8), 2, 20),
    ],
)
def test_noise_calibration_and_choice(privacy: sdp.Guarantee, m: int, c: int) -> None:
    from sharpdp.data.answers import choose_noise

    lap = choose_noise(privacy, m, c, "laplace")
    assert isinstance(lap.law, sdp.DiscreteLaplace)
    if isinstance(privacy, sdp.PureDP | sdp.ApproxDP):
        assert lap.law.scale == pytest.approx(m * c / privacy.epsilon_, rel=1e-12)
        assert lap.law.scale >= m * c / privacy.epsilon_
    assert lap.error == pytest.approx(discrete_laplace_abs(lap.law.scale), rel=1e-9)
    if isinstance(privacy, sdp.PureDP):
        with pytest.raises(sdp.InvalidParameter):
            choose_noise(privacy, m, c, "gaussian")
        assert choose_noise(privacy, m, c).name == "laplace"
        return
    gauss = choose_noise(privacy, m, c, "gaussian")
    assert isinstance(gauss.law, sdp.Gaussian)
    sigma, l2 = gauss.law.sigma, gauss.law.sensitivity
    assert l2 >= m * math.sqrt(c)
    assert l2 == pytest.approx(m * math.sqrt(c), rel=1e-12)
    if isinstance(privacy, sdp.ZCDP):
        assert sigma == pytest.approx(l2 / math.sqrt(2 * privacy.rho), rel=1e-9)
        assert l2**2 / (2 * sigma**2) <= privacy.rho * (1 + 1e-9)
    else:
        eps, delta = privacy.epsilon_, privacy.delta_
        assert balle_wang_delta(l2 / sigma, eps) <= delta * (1 + 1e-6)
        assert balle_wang_delta(l2 / (sigma * 0.99), eps) > delta  # least σ, to 1%
        classical = l2 * math.sqrt(2 * math.log(1.25 / delta)) / eps
        assert sigma < classical
    best = min((lap, gauss), key=lambda n: n.error)
    assert gauss.error == pytest.approx(sigma * math.sqrt(2 / math.pi))
    assert choose_noise(privacy, m, c).name == best.name


def test_gaussian_noise_law_and_interval_coverage(table: pd.DataFrame) -> None:
    """One release through the engine, then 150 seeded draws of the same law: the residuals'
    standard deviation is within 7% of σ (2,400 draws: the sample sd's sd ≈ 1.44%, so a false
    failure needs > 4.8 sd, probability < 2e-6), and the 90% intervals cover the truth 90% ± 2.5%
    of the time (binomial sd 0.61%: a false failure needs 4.1 sd, probability < 1e-4)."""
    w = sdp.data.marginals(["a", "b", "c"], way=2, domains=DOM)
    truth = session(table).answer(w, privacy=sdp.ZCDP(1e8), max_rows=4, rng=0)
    exact = np.rint(truth.to_pandas()["count"].to_numpy())
    r = session(table).answer(w, privacy=sdp.ZCDP(0.05), max_rows=4, mechanism="gaussian", rng=3)
    assert isinstance(r.law, sdp.Gaussian)
    sigma = r.law.sigma
    half = r.half_width(0.9)
    g = np.random.default_rng(11)
    draws = np.stack([r.law.release(exact, rng=g) for _ in range(150)])
    draws[0] = r.to_pandas()["count"].to_numpy()  # the engine's own release among them
    assert np.std(draws - exact) == pytest.approx(sigma, rel=0.07)
    assert np.mean(np.abs(draws - exact) <= half) == pytest.approx(0.9, abs=0.025)
    assert half == pytest.approx(sigma * stats.norm.ppf(0.95), rel=1e-6)


def test_explain_spends_nothing_and_the_charge_is_spent(table: pd.DataFrame) -> None:
    s = session(table, sdp.ApproxDP(1.0, 1e-6))
    w = sdp.data.marginals(["a", "b"], way=2, domains={"a": DOM["a"], "b": DOM["b"]})
    q = s.workload(w, privacy=sdp.ApproxDP(0.5, 1e-7), max_rows=1)
    text = str(q.explain())
    assert "E|Z|" in text
    assert "chosen" in text
    assert not s.accountant.history()
    r = q.run(rng=0)
    (entry,) = s.accountant.history()
    assert (entry.item, entry.count) == q.charge
    # the release's pricing is the one it was charged at (not a second, hypothetical run)
    assert r.explain().spent_before == 0.0
    assert r.explain().charge == q.charge
    with pytest.raises(sdp.BudgetExceeded):
        s.answer(w, privacy=sdp.ApproxDP(0.9, 1e-7), max_rows=1, rng=0)
    assert len(s.accountant.history()) == 1


def test_undeclared_domains_are_found_privately(table: pd.DataFrame) -> None:
    s = session(table, sdp.ApproxDP(1e6, 1e-6))
    r = s.answer(sdp.data.marginals(["a", "b"], way=2), privacy=sdp.ApproxDP(1e5, 1e-7), rng=0)
    assert dict(r.domains) == {"a": (0, 1, 2), "b": ("x", "y")}
    assert len(r.to_pandas()) == 6
    # discovery needs δ: a pure budget cannot pay it, and nothing is spent
    pure = session(table, sdp.PureDP(10.0))
    with pytest.raises(sdp.InvalidParameter, match="δ"):
        pure.answer(sdp.data.marginals(["a"], way=1), privacy=sdp.PureDP(1.0))
    assert not pure.accountant.history()


def test_binned_columns(table: pd.DataFrame) -> None:
    s = session(table)
    w = sdp.data.marginals(["c"], way=1, domains={"c": sdp.data.bins(0, 30, 3)})
    got = s.answer(w, privacy=sdp.ZCDP(1e8), max_rows=4, rng=0).to_pandas()
    cells = bounded_cells(table, ["c"], 4)
    assert got["c"].tolist() == [0.0, 10.0, 20.0]
    want = [0, (cells["c"] == 10).sum(), (cells["c"] == 20).sum()]
    assert np.allclose(got["count"], want, atol=0.01)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: sdp.data.predicates({}), "non-empty"),
        (lambda: sdp.data.predicates({"q": {}}), "map columns"),
        (lambda: sdp.data.marginals([], way=1), "non-empty"),
        (lambda: sdp.data.marginals(["a", "b"], way=3), "way"),
        (lambda: sdp.data.marginals(["a", "a"], way=1), "repeated"),
        (lambda: sdp.data.marginals(["a"], way=1, domains={"b": [1]}), "not in the workload"),
        (lambda: sdp.data.marginals(["a"], way=1, domains={"a": []}), "empty"),
        (lambda: sdp.data.marginals(["a"], way=1, domains={"a": [1, 1]}), "repeated"),
        (lambda: sdp.data.marginals(["a"], way=1, domains={"a": "abc"}), "list of values"),
        (lambda: sdp.data.bins(1, 0, 3), "lower < upper"),
        (lambda: sdp.data.bins(0, 1, 0), "count"),
    ],
)
def test_bad_workloads(build: object, match: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match=match):
        build()  # type: ignore[operator]


def test_bad_use_spends_nothing(table: pd.DataFrame) -> None:
    s = session(table)
    cases = [
        lambda: s.answer("a", privacy=sdp.PureDP(1.0)),
        lambda: s.answer(
            sdp.data.marginals(["nope"], way=1, domains={"nope": [1]}), privacy=sdp.PureDP(1.0)
        ),
        lambda: s.answer(
            sdp.data.marginals(["who"], way=1, domains={"who": [1]}), privacy=sdp.PureDP(1.0)
        ),
        lambda: s.answer(
            sdp.data.marginals(["b"], way=1, domains={"b": sdp.data.bins(0, 1, 2)}),
            privacy=sdp.PureDP(1.0),
        ),
        lambda: s.answer(
            sdp.data.predicates({"q": {"a": 0}}), privacy=sdp.PureDP(1.0), mechanism="gaussian"
        ),
        lambda: s.answer(
            sdp.data.predicates({"q": {"a": 0}}), privacy=sdp.PureDP(1.0), mechanism="best"
        ),
        lambda: s.answer(sdp.data.predicates({"q": {"a": 0}}), privacy=1.0),
        lambda: s.answer(sdp.data.predicates({"q": {"a": 0}}), privacy=sdp.PureDP(1.0), max_rows=0),
        lambda: s.mwem(sdp.data.predicates({"q": {"a": 0}}), privacy=sdp.PureDP(1.0)),
        lambda: s.mwem(
            sdp.data.marginals(
                ["a", "b"], way=1, domains={"a": list(range(2000)), "b": list(range(1000))}
            ),
            privacy=sdp.PureDP(1.0),
        ),
        lambda: s.mwem(
            sdp.data.marginals(["a"], way=1, domains={"a": [0, 1, 2]}),
            privacy=sdp.PureDP(1.0),
            rounds=0,
        ),
    ]
    for case in cases:
        with pytest.raises(sdp.InvalidParameter):
            case()
    assert not s.accountant.history()


# -- MWEM ---------------------------------------------------------------------------------------------


def test_mwem_accounting_adds_up_independently() -> None:
    """zCDP: ρ(n̂) + T·ε_sel²/8 + T·ρ(measurement) ≤ ρ (each part from its closed form); pure:
    ε(n̂) + T·(ε_sel + ε_meas) ≤ ε; bounded range buys 2–4× the rounds of an ε²/2 analysis."""
    from sharpdp.data.mwem import plan_mwem

    for m, t in ((1, 7), (2, 30)):
        p = plan_mwem(sdp.ZCDP(0.5), m, t)
        rho = (m / p.total.sigma) ** 2 / 2 + t * p.selection.epsilon_**2 / 8
        rho += t * (m / p.measurement.sigma) ** 2 / 2
        assert rho <= 0.5
        assert rho == pytest.approx(0.5, rel=1e-6)
        assert p.selection.sensitivity == m
        assert not p.selection.monotonic
        per_round_classical = p.selection.epsilon_**2 / 2 + (m / p.measurement.sigma) ** 2 / 2
        assert p.classical_rounds == int(0.95 * 0.5 // per_round_classical)
        assert 1.5 * p.classical_rounds <= t
        q = plan_mwem(sdp.PureDP(1.0), m, t)
        eps = m / q.total.scale + t * (q.selection.epsilon_ + m / q.measurement.scale)
        assert eps <= 1.0
        assert eps == pytest.approx(1.0, rel=1e-6)


def test_mwem_selections_are_audited_bounded_range() -> None:
    from sharpdp.data.mwem import plan_mwem

    sel = plan_mwem(sdp.ZCDP(0.5), 2, 10).selection
    scores = [3.0, 0.0, 7.5, 1.0]  # |q(A) − q(D)| moves by ≤ m = 2 either way
    worst = 0.0
    for x, y in sdp.audit.score_neighbours(scores, sensitivity=2.0):
        report = sdp.audit.exact(sel, x, y)
        assert report.check().ok
        worst = max(worst, report.bounded_range())
    assert worst == pytest.approx(sel.epsilon_, rel=1e-9)


def test_mwem_converges_with_a_huge_budget(table: pd.DataFrame) -> None:
    s = session(table)
    w = sdp.data.marginals(["a", "b", "c"], way=2, domains=DOM)
    syn = s.mwem(w, privacy=sdp.ZCDP(1e8), rounds=16, max_rows=4, rng=0)
    truth = session(table).answer(w, privacy=sdp.ZCDP(1e8), max_rows=4, rng=0).to_pandas()
    got = syn.answer(w)
    assert got[["query", "a", "b", "c"]].equals(truth[["query", "a", "b", "c"]])
    assert np.max(np.abs(got["count"] - truth["count"])) < 0.02 * truth["count"].max()
    assert syn.to_pandas()["count"].sum() == pytest.approx(
        len(table[["who", "a", "b", "c"]].drop_duplicates()), rel=1e-3
    )
    # the same domains in another order are the same domains; a plain list is not a workload
    reordered = sdp.data.marginals(["a", "b"], way=1, domains={"a": [2, 0, 1], "b": ["y", "x"]})
    assert syn.answer(reordered)["count"].sum() == pytest.approx(2 * syn.to_pandas()["count"].sum())
    with pytest.raises(sdp.InvalidParameter, match="workload must be built"):
        syn.answer(["a"])
    assert "this run: T = 16 round(s)" in str(syn.explain())
    with pytest.raises(sdp.InvalidParameter, match="n"):
        syn.sample(2.5)
    with pytest.raises(sdp.InvalidParameter, match=r"GiB.*batches"):  # was a MemoryError
        syn.sample(10**15)
    rows = syn.sample(50, rng=0)
    assert list(rows.columns) == ["a", "b", "c"]
    assert len(rows) == 50
    (entry,) = s.accountant.history()
    # one charge: n̂ once, then 16 selections and 16 Gaussian measurements of sensitivity m = 4
    kinds = [(type(item).__name__, count) for item, count in entry.item.items]
    assert kinds == [("Gaussian", 1), ("Exponential", 16), ("Gaussian", 16)]
    assert all(item.sensitivity == 4 for item, _ in entry.item.items)


def test_mwem_explains_rounds_and_bounded_range(table: pd.DataFrame) -> None:
    s = session(table)
    w = sdp.data.marginals(["a", "b", "c"], way=2, domains=DOM)
    q = s.mwem_query(w, privacy=sdp.ApproxDP(1.0, 1e-7))
    text = str(q.explain())
    assert "after n̂" in text
    assert "ε²/8" in text
    assert not s.accountant.history()
    fixed = str(s.mwem_query(w, privacy=sdp.ZCDP(0.5), rounds=3).explain())
    assert "3 rounds" in fixed
    before = s.accountant.spent()
    syn = s.mwem_query(w, privacy=sdp.ZCDP(0.5), rounds=3).run(rng=0)
    assert syn.explain().spent_before == before  # priced before its own spend


def test_adaptive_rounds_add_up_for_every_t() -> None:
    """Rounds chosen after n̂: whatever T, the T rounds' parts add up to the rest charged
    (ρ from each part's closed form), and T follows the stated rule."""
    from sharpdp.data.mwem import plan_adaptive

    for m in (1, 3):
        plan = plan_adaptive(sdp.ZCDP(0.5), m)
        assert isinstance(plan.rest, sdp.ZCDP)
        rho_n = (m / plan.total.sigma) ** 2 / 2
        assert rho_n + plan.rest.rho <= 0.5
        for t in (1, 2, 7, 100, 1000):
            p = plan.plan(t)
            rho = t * (p.selection.epsilon_**2 / 8 + (m / p.measurement.sigma) ** 2 / 2)
            assert rho <= plan.rest.rho
            assert rho == pytest.approx(plan.rest.rho, rel=1e-9)
        pure = plan_adaptive(sdp.PureDP(1.0), m)
        for t in (1, 5, 50):
            p = pure.plan(t)
            eps = t * (p.selection.epsilon_ + m / p.measurement.scale)
            assert eps <= pure.rest.epsilon_ * (1 + 1e-12)
        assert m / pure.total.scale + pure.rest.epsilon_ <= 1.0
    plan = plan_adaptive(sdp.ZCDP(0.5), 1)
    eps = math.sqrt(2 * plan.rest.rho)
    want = math.ceil((eps * 1e5 * math.sqrt(math.log(1000)) / (10 * math.log(100))) ** (2 / 3))
    assert plan.rounds_for(1e5, 100, 1000) == min(100, want)
    assert plan.rounds_for(1e5, 3, 1000) == 3
    approx = plan_adaptive(sdp.ApproxDP(1.0, 1e-6), 1)
    assert sdp.compose(approx.items, adaptive=True).epsilon(1e-6) <= 1.0


def test_mwem_run_with_adaptive_rounds_is_charged_its_plan(table: pd.DataFrame) -> None:
    s = session(table)
    w = sdp.data.predicates(
        {f"q{i}": {"a": [i % 3], "b": "xy"[i % 2]} for i in range(6)},
        domains={"a": DOM["a"], "b": DOM["b"]},
    )
    q = s.mwem_query(w, privacy=sdp.ZCDP(0.3), max_rows=2)
    syn = q.run(rng=1)
    (entry,) = s.accountant.history()
    assert (entry.item, entry.count) == q.charge
    assert 1 <= syn.rounds <= 6
    assert len(syn.answer(w)) == 6


def test_long_domains_filter_by_semi_join_alike(
    table: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Domains longer than the inline limit are filtered by a semi-join: same answers."""
    from sharpdp.data import _bounding

    w = sdp.data.marginals(["a", "b"], way=2, domains={"a": [0, 2], "b": ["y"]})
    inline = session(table).answer(w, privacy=sdp.ZCDP(1e8), max_rows=2, rng=0).to_pandas()
    monkeypatch.setattr(_bounding, "INLINE_KEYS", 1)
    joined = session(table).answer(w, privacy=sdp.ZCDP(1e8), max_rows=2, rng=0).to_pandas()
    pd.testing.assert_frame_equal(inline, joined)
    assert inline["count"].sum() > 0


def test_sensitivities_by_removing_each_person(table: pd.DataFrame) -> None:
    """Remove each person in turn (pandas, no sharpdp): every marginal moves by ℓ1, ℓ2 ≤ m (its
    cells are disjoint: what MWEM measures at once), the whole workload by ℓ1 ≤ mC, ℓ2 ≤ m√C."""
    m = 4
    w = sdp.data.marginals(["a", "b", "c"], way=2, domains=DOM)
    cells = bounded_cells(table, ["a", "b", "c"], m)

    def answers(frame: pd.DataFrame) -> list[np.ndarray]:
        out = []
        for x, y in w.subsets:
            grid = pd.MultiIndex.from_product([DOM[x], DOM[y]])
            counts = frame.groupby([x, y]).size().reindex(grid, fill_value=0)
            out.append(counts.to_numpy(np.float64))
        return out

    full = answers(cells)
    c = len(w.subsets)
    for who in cells["who"].unique()[:60]:
        moved = [f - g for f, g in zip(full, answers(cells[cells["who"] != who]), strict=True)]
        for v in moved:
            assert np.abs(v).sum() <= m
            assert np.sqrt((v * v).sum()) <= m
        allv = np.concatenate(moved)
        assert np.abs(allv).sum() <= m * c
        assert np.sqrt((allv * allv).sum()) <= m * math.sqrt(c) + 1e-12


def test_an_empty_domain_found_privately_is_said_not_silent() -> None:
    """20 persons per value and a threshold in the thousands: no value can pass (the largest
    count is 20 < τ), so the release is empty; it warns, and the spend stays recorded."""
    df = pd.DataFrame({"uid": range(40), "c": ["a", "b"] * 20})
    s = sdp.data.Session(df, "uid", sdp.ApproxDP(10.0, 1e-6))
    with pytest.warns(UserWarning, match="passed the partition selection's threshold"):
        r = s.answer(sdp.data.marginals(["c"], way=1), privacy=sdp.ApproxDP(0.1, 1e-8), rng=0)
    assert r.to_pandas().empty
    assert s.accountant.spent() > 0.0


def test_mwem_with_an_empty_domain_found_privately_releases_nothing_and_says_so() -> None:
    """As answer(): a threshold no value can pass leaves an empty synthetic distribution (the
    run was paid for), with a warning, instead of raising after the spend."""
    df = pd.DataFrame({"uid": range(40), "c": ["a", "b"] * 20, "d": ["x"] * 40})
    s = sdp.data.Session(df, "uid", sdp.ApproxDP(10.0, 1e-6))
    w = sdp.data.marginals(["c", "d"], way=2)
    with pytest.warns(UserWarning, match="synthetic data has no cell over them"):
        syn = s.mwem(w, privacy=sdp.ApproxDP(0.1, 1e-8), rng=0)
    assert syn.to_pandas().empty
    assert syn.answer(w).empty
    assert syn.sample(rng=0).empty
    with pytest.raises(sdp.InvalidParameter, match="no synthetic cells"):
        syn.sample(5, rng=0)
    assert "selected none" in str(syn.explain())
    assert s.accountant.spent() > 0.0


def test_a_value_off_one_columns_domain_still_counts_in_the_others_marginals() -> None:
    """A row whose ``b`` is NULL or outside ``b``'s declared domain is in no cell of ``b``, but
    still in ``a``'s 1-way marginal and in predicates that do not look at ``b`` (it used to be
    dropped from every query). Truths from pandas; ε = 10^6 per answer: P[Z ≠ 0] < 1e-100."""
    df = pd.DataFrame(
        {"a": [0, 0, 1, 1, 1], "b": ["x", None, "y", "x", "z"], "v": [0.5, np.nan, 1.5, 9.0, 2.5]}
    )
    s = sdp.data.Session(df, privacy_unit=None, budget=sdp.PureDP(1e9))
    w = sdp.data.marginals(
        ["a", "b", "v"], way=1, domains={"a": [0, 1], "b": ["x"], "v": sdp.data.bins(0, 3, 3)}
    )
    out = s.answer(w, privacy=sdp.PureDP(1e7), rng=0).to_pandas()
    a = out[out["query"] == "a"].set_index("a")["count"].to_dict()
    assert a == df.groupby("a").size().to_dict()  # {0: 2, 1: 3}: every row
    b = out[out["query"] == "b"].set_index("b")["count"].to_dict()
    assert b == {"x": int((df["b"] == "x").sum())}
    v = out[out["query"] == "v"]["count"].tolist()
    clipped = df["v"].dropna().clip(0, 3)  # bins clamp to the range: 9.0 is in the last bin
    assert v == np.histogram(clipped, bins=[0, 1, 2, 3.0000001])[0].tolist()
    p = sdp.data.predicates({"a1": {"a": [1]}, "bx": {"b": ["x"]}}, domains={"b": ["x"]})
    got = s.answer(p, privacy=sdp.PureDP(1e7), rng=0).to_pandas().set_index("query")["count"]
    assert got.to_dict() == {"a1": int((df["a"] == 1).sum()), "bx": int((df["b"] == "x").sum())}


def test_mwem_drops_rows_off_the_product_domain() -> None:
    """MWEM's synthetic data lives on the product of the domains: a row with a value outside one
    of them has no point there and is dropped (its total is that of the complete rows)."""
    df = pd.DataFrame({"a": [0, 0, 1, 1], "b": ["x", None, "y", "x"]})
    s = sdp.data.Session(df, privacy_unit=None, budget=sdp.PureDP(1e9))
    w = sdp.data.marginals(["a", "b"], way=1, domains={"a": [0, 1], "b": ["x", "y"]})
    syn = s.mwem(w, privacy=sdp.PureDP(1e8), rng=0)
    assert abs(float(syn.to_pandas()["count"].sum()) - 3.0) < 0.05


def test_synthetic_answers_type_values_as_the_session_does() -> None:
    """Dates given as text (or datetime.date) answer the synthetic data's Timestamp cells, and the
    workload it was built from (date domains as text) is answered, not refused."""
    df = pd.DataFrame({"day": pd.to_datetime(["2020-01-01"] * 30 + ["2020-01-02"] * 10)})
    s = sdp.data.Session(df, privacy_unit=None, budget=sdp.ZCDP(1e4))
    w = sdp.data.marginals(["day"], way=1, domains={"day": ["2020-01-01", "2020-01-02"]})
    syn = s.mwem(w, privacy=sdp.ZCDP(1e3), rng=0)
    cells = syn.to_pandas()
    first = float(cells.loc[cells["day"] == pd.Timestamp("2020-01-01"), "count"].sum())
    for value in ("2020-01-01", datetime.date(2020, 1, 1)):
        got = syn.answer(sdp.data.predicates({"q": {"day": value}}))
        assert float(got["count"].iloc[0]) == first
    assert syn.answer(w)["count"].sum() == pytest.approx(float(cells["count"].sum()))


def _binary(columns: int, rows: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({f"c{i}": rng.integers(0, 2, rows) for i in range(columns)})


@pytest.mark.parametrize(
    ("build", "limit"),
    [
        # C(20, 10) = 184,756 marginals of 1,024 cells: 1.9e8 answers
        (
            lambda s, w: s.answer(w(10), privacy=sdp.PureDP(1.0)),
            "over the limit 4194304",
        ),
        # 1,140 three-way marginals over the 2^20 cells: a matrix of 1.2e9 entries
        (lambda s, w: s.mwem(w(3), privacy=sdp.PureDP(1.0)), "over the limit 33554432"),
        (lambda s, w: s.mwem(w(1), privacy=sdp.PureDP(1.0), rounds=10**7), "rounds must be"),
    ],
)
def test_workloads_too_large_are_refused_before_the_spend(build: Any, limit: str) -> None:
    """Sizes known from declared domains are checked when the query is built (they ran out of
    memory, or for a day, after the spend)."""
    cols = [f"c{i}" for i in range(20)]

    def workload(way: int) -> Any:
        return sdp.data.marginals(cols, way=way, domains={c: [0, 1] for c in cols})

    s = sdp.data.Session(_binary(20), privacy_unit=None, budget=sdp.PureDP(10.0))
    with pytest.raises(sdp.InvalidParameter, match=limit):
        build(s, workload)
    assert s.accountant.spent() == 0.0


def test_mwem_at_a_huge_rho_releases_the_counts() -> None:
    """ρ = 10^10 made the measurement's grid step 7e-15, too fine for counts of 5·10^4, and the
    run failed after the spend; the step is now coarse enough for any count of 2^32 rows."""
    df = pd.DataFrame({"a": np.arange(10**5) % 2})
    s = sdp.data.Session(df, privacy_unit=None, budget=sdp.ZCDP(1e11))
    w = sdp.data.marginals(["a"], way=1, domains={"a": [0, 1]})
    counts = s.mwem(w, privacy=sdp.ZCDP(1e10), rng=0).to_pandas()["count"].to_numpy()
    assert np.allclose(counts, [5e4, 5e4], atol=0.01)


def test_a_value_falls_in_the_bin_its_label_names() -> None:
    """A value is in bin i iff label_i ≤ x < label_{i+1} (labels L + i·w as Bins.labels gives
    them; below L the first, from U the last). ⌊(x − L)/w⌋ in the engine put x = 1.4 of
    bins(1, 2, 5) in the bin labelled 1.2. Against np.searchsorted on the labels, at every label
    and at random values, for 40 random bins (released at ε = 1e8: the noise is 0 but with
    probability ~e^-1e8)."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        lo = float(rng.uniform(-50, 50))
        hi = lo + float(rng.choice([1.0, 18.0, 0.3, 1e3])) * float(rng.uniform(0.5, 2))
        n = int(rng.integers(1, 30))
        dom = sdp.data.bins(lo, hi, n)
        labels = np.array(dom.labels)
        values = np.concatenate([labels, rng.uniform(lo - 1, hi + 1, 60), [hi]])
        table = pd.DataFrame({"pid": range(len(values)), "v": values})
        s = sdp.data.Session(table, "pid", sdp.PureDP(1e9))
        w = sdp.data.marginals(["v"], way=1, domains={"v": dom})
        got = s.answer(w, privacy=sdp.PureDP(1e8), rng=0).to_pandas()
        expected = np.bincount(
            np.clip(np.searchsorted(labels, values, side="right") - 1, 0, n - 1), minlength=n
        )
        assert got["count"].tolist() == expected.tolist(), (lo, hi, n)


@pytest.mark.parametrize(("lower", "upper", "count"), [(-1e308, 1e308, 4), (1e16, 1e16 + 8, 8)])
def test_bins_whose_edges_are_not_distinct_floats_are_refused(
    lower: float, upper: float, count: int
) -> None:
    """A width that overflows, or edges that round to one float, failed the release (NULL or
    repeated labels) after the budget was spent; refused when the bins are made."""
    with pytest.raises(sdp.InvalidParameter, match="not distinct floats"):
        sdp.data.bins(lower, upper, count)


def test_a_level_within_an_ulp_of_one_has_an_interval() -> None:
    """z_{(1+level)/2} rounded its argument to 1 for level = nextafter(1, 0): a raw
    StatisticsError. −Φ⁻¹((1 − level)/2) has an exact argument; against scipy's."""
    level = math.nextafter(1.0, 0.0)
    table = pd.DataFrame({"pid": range(8), "a": [0, 1, 1, 0, 1, 0, 1, 1]})
    s = sdp.data.Session(table, "pid", sdp.ZCDP(1.0))
    w = sdp.data.marginals(["a"], way=1, domains={"a": [0, 1]})
    r = s.answer(w, privacy=sdp.ZCDP(0.5), mechanism="gaussian", rng=0)
    sigma = r.law.sigma  # type: ignore[attr-defined]
    z = -stats.norm.ppf((1 - level) / 2)
    assert r.half_width(level) == pytest.approx(sigma * z, rel=1e-9)
    assert np.isfinite(r.to_pandas(level)[["lower", "upper"]].to_numpy()).all()


def test_mwem_checks_the_query_matrix_of_discovered_domains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 2^25-entry limit on MWEM's query matrix was checked for declared domains only: with
    domains found privately a matrix past it was built (10 columns of 4 values, way 2: ~47M
    non-zeros). The limit is lowered here to what this table's discovered domain exceeds."""
    import sharpdp.data.mwem as mwem

    monkeypatch.setattr(mwem, "MAX_MATRIX", 3)
    table = pd.DataFrame({"pid": range(400), "a": [0, 1] * 200, "b": ["x", "y"] * 200})
    s = sdp.data.Session(table, "pid", sdp.ApproxDP(50.0, 1e-6))
    w = sdp.data.marginals(["a", "b"], way=1)
    with pytest.raises(sdp.InvalidParameter, match="matrix entries; the budget is spent"):
        s.mwem(w, privacy=sdp.ApproxDP(20.0, 1e-7), rounds=2, rng=0)


def test_answers_no_noise_can_meet_say_why() -> None:
    """It said "privacy must be sdp.PureDP, ..., got PureDP(epsilon=1e-20)": the type was right,
    the size was not."""
    table = pd.DataFrame({"pid": range(8), "a": [0, 1, 1, 0, 1, 0, 1, 1]})
    s = sdp.data.Session(table, "pid", sdp.PureDP(1.0))
    w = sdp.data.marginals(["a"], way=1, domains={"a": [0, 1]})
    with pytest.raises(sdp.InvalidParameter, match=r"no noise meets .* laplace: scale must be"):
        s.answer(w, privacy=sdp.PureDP(1e-20), rng=0)
    assert not s.accountant.history()
