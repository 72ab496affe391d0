"""Budget: explain() spends nothing and reads no data; run() spends first; refusals are durable."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import sharpdp as sdp
from sharpdp.data.query import Query

FRUITS = ["apple", "banana", "cherry", "date", "elder"]


def test_explain_spends_nothing_and_reads_no_data(
    small: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = sdp.data.Session(small, "person", sdp.ApproxDP(1.0, 1e-6), seed=0)
    q = s.count_by("fruit", keys=None, privacy=sdp.ApproxDP(0.3, 1e-7), max_groups=2)

    def no_data(self: Query, expr: object) -> None:
        raise AssertionError("explain() touched the data")

    monkeypatch.setattr(Query, "_execute", no_data)
    e = q.explain()
    assert s.accountant.history() == ()
    assert e.fits
    assert e.spent_before == 0.0
    assert 0.29 < e.spent_after <= 0.3 + 1e-9
    assert e.remaining_after == pytest.approx(1.0 - e.spent_after)
    text = str(e)
    for needle in ("DiscreteLaplace", "τ =", "ℓ1", "ApproxDP(epsilon=0.0", "remaining"):
        assert needle in text


@pytest.mark.parametrize(
    "budget", [sdp.ApproxDP(50.0, 1e-5), sdp.ApproxDP(10.0, 1e-6), sdp.ZCDP(5.0)]
)
def test_explain_states_what_the_run_records(small: pd.DataFrame, budget: sdp.Guarantee) -> None:
    """spent_after is the accountant's own reading after the spend, for a first query and one
    after history (a composition of several mechanisms: its reading depends on the accuracy the
    analysis runs at, which explain() once took from another call, 1.6e-4 below the spend)."""
    s = sdp.data.Session(small, "person", budget, seed=0)
    privacy = sdp.ZCDP(0.2) if isinstance(budget, sdp.ZCDP) else sdp.ApproxDP(0.5, 1e-7)
    keys = FRUITS if isinstance(budget, sdp.ZCDP) else None  # unknown keys need δ
    fruits = sdp.data.marginals(["fruit"], way=1, domains={"fruit": FRUITS})
    found = sdp.data.marginals(["fruit"], way=1)  # its domain found privately (needs δ)
    queries = [
        s.workload(fruits if keys else found, privacy=sdp.ZCDP(0.2), max_rows=2),
        s.mean("amount", bounds=(0, 10), privacy=privacy),
        s.count_by("fruit", keys=keys, privacy=privacy, max_groups=2),
    ]
    for q in queries:
        e = q.explain()
        q.run(rng=0)
        assert s.accountant.spent() == e.spent_after


def test_run_spends_then_releases(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1.0), seed=0)
    q = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(0.4))
    q.run(rng=0)
    (entry,) = s.accountant.history()
    assert (entry.item, entry.count) == q.charge
    assert s.accountant.spent() == pytest.approx(0.4)


def test_exceeding_raises_and_releases_nothing(
    small: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1.0), seed=0)
    s.count(privacy=sdp.PureDP(0.7)).run(rng=0)
    q = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(0.5))
    assert not q.explain().fits
    computed: list[bool] = []
    monkeypatch.setattr(Query, "_execute", lambda self, expr: computed.append(True))
    with pytest.raises(sdp.BudgetExceeded):
        q.run(rng=0)
    assert computed == []  # the engine was never asked
    assert len(s.accountant.history()) == 1


def test_refusal_survives_a_new_process(small: pd.DataFrame, tmp_path: Path) -> None:
    ledger = tmp_path / "budget.sqlite"
    table = tmp_path / "small.parquet"
    small.to_parquet(table)
    s = sdp.data.Session(
        str(table), "person", sdp.PureDP(1.0), ledger=str(ledger), analyst="ana", seed=0
    )
    s.count(privacy=sdp.PureDP(0.9)).run(rng=0)
    s.accountant.close()
    script = textwrap.dedent(
        f"""
        import sharpdp as sdp
        s = sdp.data.Session({str(table)!r}, "person", sdp.PureDP(1.0), ledger={str(ledger)!r},
                             analyst="ana")
        q = s.count_by("fruit", keys=["apple"], privacy=sdp.PureDP(0.2))
        try:
            q.run(rng=0)
        except sdp.BudgetExceeded:
            print("refused", len(s.accountant.history()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip() == "refused 1"


def test_session_reopens_a_ledger_account_only_with_its_budget(
    small: pd.DataFrame, tmp_path: Path
) -> None:
    # The budget lives in the ledger: a later session must bring the same one (or none at all).
    ledger = str(tmp_path / "budget.sqlite")
    s = sdp.data.Session(small, "person", sdp.PureDP(1.0), ledger=ledger, analyst="ana", seed=0)
    s.count(privacy=sdp.PureDP(0.25)).run(rng=0)
    s.accountant.close()
    again = sdp.data.Session(small, "person", sdp.PureDP(1.0), ledger=ledger, analyst="ana")
    assert len(again.accountant.history()) == 1
    assert again.count(privacy=sdp.PureDP(0.25)).explain().spent_before == 0.25
    again.accountant.close()
    with pytest.raises(sdp.LedgerError, match=r"PureDP\(epsilon=1\.0\).*PureDP\(epsilon=2\.0\)"):
        sdp.data.Session(small, "person", sdp.PureDP(2.0), ledger=ledger, analyst="ana")
    with sdp.Accountant(ledger=ledger, analyst="ana") as acc:
        assert acc.budget == sdp.PureDP(1.0)
        assert len(acc.history()) == 1  # the refused session recorded nothing


def test_session_without_a_budget_uses_the_recorded_one(
    small: pd.DataFrame, tmp_path: Path
) -> None:
    path = str(tmp_path / "b.sqlite")
    first = sdp.data.Session(small, "person", sdp.PureDP(0.7), ledger=path, analyst="ana")
    first.count(privacy=sdp.PureDP(0.5)).run(rng=0)
    again = sdp.data.Session(small, "person", None, ledger=path, analyst="ana")
    assert again.accountant.budget == sdp.PureDP(0.7)
    with pytest.raises(sdp.BudgetExceeded):
        again.count(privacy=sdp.PureDP(0.5)).run(rng=1)


@pytest.mark.parametrize(
    "build",
    [
        lambda s: s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(0.1)),
        lambda s: s.count_by("fruit", keys=None, privacy=sdp.ApproxDP(0.1, 1e-8), max_groups=2),
        lambda s: s.sum("amount", bounds=(0, 100), privacy=sdp.PureDP(0.1)),
        lambda s: s.mean("amount", bounds=(0, 100), privacy=sdp.PureDP(0.1)),
        lambda s: s.quantile("amount", 0.5, bounds=(0, 100), privacy=sdp.PureDP(0.1)),
        lambda s: s.top_k("fruit", 2, keys=FRUITS, privacy=sdp.PureDP(0.1)),
        lambda s: s.top_k("fruit", 2, privacy=sdp.ApproxDP(0.5, 1e-8)),
        lambda s: s.select_best("fruit", keys=FRUITS, privacy=sdp.PureDP(0.1)),
        lambda s: s.workload(
            sdp.data.marginals(["fruit"], way=1, domains={"fruit": FRUITS}), privacy=sdp.ZCDP(0.01)
        ),
        lambda s: s.mwem_query(
            sdp.data.marginals(["fruit"], way=1, domains={"fruit": FRUITS}), privacy=sdp.ZCDP(0.01)
        ),
    ],
    ids=[
        "count_by",
        "unknown keys",
        "sum",
        "mean",
        "quantile",
        "top_k",
        "limitdom",
        "best",
        "workload",
        "mwem",
    ],
)
def test_an_engine_failure_spends_nothing(small: pd.DataFrame, tmp_path: Path, build: Any) -> None:
    """The engine computes before the spend: a table whose file vanished after the session
    opened (DuckDB reads Parquet lazily) fails the run with the ledger untouched."""
    path = tmp_path / "small.parquet"
    small.to_parquet(path)
    s = sdp.data.Session(str(path), "person", sdp.ApproxDP(1.0, 1e-6), seed=0)
    q = build(s)
    path.unlink()
    with pytest.raises(Exception, match=r"small\.parquet"):
        q.run(rng=0)
    assert s.accountant.history() == ()


@pytest.mark.parametrize("kappa", [3, 5, 6, 7])
def test_a_query_at_exactly_the_whole_budget_fits(kappa: int) -> None:
    """κ copies of the discrete Laplace of scale κ are exactly 1-DP (κ·(1/κ) = 1): at
    PureDP(1) on a PureDP(1) budget the spend fits (the rounded-up floats of 1/κ summed to
    1.0000000000000002 and refused it)."""
    df = pd.DataFrame({"person": [0, 1, 2], "a": [0, 1, 1]})
    s = sdp.data.Session(df, "person", sdp.PureDP(1.0))
    q = s.count_by("a", keys=list(range(8)), privacy=sdp.PureDP(1.0), max_groups=kappa)
    q.run(rng=0)
    assert s.accountant.spent() == 1.0


@pytest.mark.parametrize(
    ("target", "mechanism"),
    [
        (sdp.PureDP(1.0), "auto"),
        (sdp.ZCDP(0.5), "laplace"),
        (sdp.ZCDP(0.07), "auto"),
        (sdp.ApproxDP(1.0, 1e-6), "gaussian"),
    ],
)
def test_a_workload_at_exactly_the_whole_budget_fits(target: sdp.Guarantee, mechanism: str) -> None:
    """Workloads of C = 1…6 one-way marginals, m = 1…3 rows per person, at a target equal to
    the budget: each is calibrated to meet it, so the accountant must accept it (29 of these
    were refused by an ulp)."""
    for c, m in itertools.product(range(1, 7), (1, 2, 3)):
        cols = [f"c{i}" for i in range(c)]
        df = pd.DataFrame({"person": [0, 0, 0, 1, 1, 1], **{x: [0, 1, 0, 1, 0, 1] for x in cols}})
        w = sdp.data.marginals(cols, way=1, domains={x: [0, 1] for x in cols})
        s = sdp.data.Session(df, "person", target)
        s.answer(w, privacy=target, max_rows=m, mechanism=mechanism, rng=0)
