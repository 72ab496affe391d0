"""The accountant: filter (never overspends, even racing across processes) and odometer values.

Expected values are computed independently: exact rational sums (fractions), the closed-form profile
of μ-Gaussian DP in mpmath (tests/reference.py), the Bun–Steinke 2016 Lemma 3.5 bound, and
Harrison–Manurangsi's exact zCDP of the Laplace mechanism evaluated in mpmath.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath as mp
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from reference import (
    bs16_lemma35_epsilon,
    gaussian_delta,
    gaussian_epsilon,
    laplace_k_fold_epsilon_lower,
)
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.composition import compose
from sharpdp.accounting.ledger import Ledger
from stable_ids import stable_id

INF = math.inf


def file_bytes(path: Path) -> dict[str, bytes]:
    out = {}
    for suffix in ("", "-wal", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            out[suffix] = p.read_bytes()
    return out


def raw_rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM spends ORDER BY id").fetchall()
    finally:
        conn.close()


# -- the filter ------------------------------------------------------------------------------------


def test_pure_budget_takes_exactly_what_fits(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Accountant(budget=sdp.PureDP(1.0), ledger=path, analyst="ana") as acc:
        for k in range(1, 17):
            entry = acc.spend(sdp.PureDP(0.0625))
            assert entry.spent_after == k * 0.0625  # exact: dyadic
            assert acc.epsilon(0.0) == k * 0.0625
        assert acc.spent() == 1.0
        assert acc.remaining() == 0.0
        assert not acc.would_fit(sdp.PureDP(0.0625))
        assert acc.would_fit(sdp.PureDP(0.0))
        before, rows = file_bytes(path), raw_rows(path)
        with pytest.raises(sdp.BudgetExceeded, match="nothing was recorded"):
            acc.spend(sdp.PureDP(0.0625))
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.Laplace(1000.0))
        assert file_bytes(path) == before  # byte for byte, WAL included
        assert raw_rows(path) == rows
        assert len(acc.history()) == 16
        acc.spend(sdp.PureDP(0.0), count=5)  # free spends still fit
        assert acc.epsilon(0.0) == 1.0


def test_count_is_charged(tmp_path: Path) -> None:
    with Accountant(sdp.PureDP(1.0), ledger=tmp_path / "l.sqlite") as acc:
        assert not acc.would_fit(sdp.PureDP(0.125), count=9)
        with pytest.raises(sdp.BudgetExceeded, match="9 × PureDP"):
            acc.spend(sdp.PureDP(0.125), count=9)
        assert acc.history() == ()
        entry = acc.spend(sdp.PureDP(0.125), count=8)
        assert (entry.count, entry.spent_after) == (8, 1.0)


@given(
    spends=st.lists(
        st.tuples(st.integers(min_value=0, max_value=64), st.integers(min_value=1, max_value=5)),
        max_size=25,
    ),
    budget=st.integers(min_value=0, max_value=256),
)
def test_filter_accepts_exactly_when_the_exact_sum_fits(
    spends: list[tuple[int, int]], budget: int
) -> None:
    # ε values are multiples of 2^-6, so float sums are exact and Fraction gives the truth.
    acc = Accountant(sdp.PureDP(budget / 64), analyst="h")
    total = Fraction(0)
    for units, count in spends:
        eps = Fraction(units, 64)
        fits = total + count * eps <= Fraction(budget, 64)
        assert acc.would_fit(sdp.PureDP(units / 64), count) == fits
        if fits:
            acc.spend(sdp.PureDP(units / 64), count)
            total += count * eps
        else:
            with pytest.raises(sdp.BudgetExceeded):
                acc.spend(sdp.PureDP(units / 64), count)
        assert Fraction(acc.epsilon(0.0)) == total
        assert Fraction(acc.remaining()) == Fraction(budget, 64) - total
    recorded = [(e.count, e.item.epsilon_) for e in acc.history()]  # type: ignore[attr-defined]
    assert sum(c * Fraction(eps) for c, eps in recorded) == total
    acc.close()


def test_other_accountants_spends_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    a = Accountant(sdp.PureDP(1.0), ledger=path, analyst="x")
    b = Accountant(sdp.PureDP(1.0), ledger=path, analyst="x")  # its own connection and cache
    a.spend(sdp.PureDP(0.5))
    assert a.would_fit(sdp.PureDP(0.5))
    b.spend(sdp.PureDP(0.5))  # b has not seen a's spend before: its check reads it
    with pytest.raises(sdp.BudgetExceeded):
        a.spend(sdp.PureDP(0.0625))  # a's cache is stale; the check re-reads the ledger
    assert a.epsilon(0.0) == b.epsilon(0.0) == 1.0
    assert [e.spent_after for e in a.history()] == [0.5, 1.0]
    a.close()
    b.close()


def test_accounts_are_separate(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite") as ledger:
        accs = {
            (analyst, period): Accountant(
                sdp.PureDP(1.0), ledger=ledger, analyst=analyst, period=period
            )
            for analyst in ("ana", "bob")
            for period in ("all", "2026-02")
        }
        for acc in accs.values():
            acc.spend(sdp.PureDP(1.0))
            assert not acc.would_fit(sdp.PureDP(0.0625))
        assert len(ledger.entries()) == 4
        for (analyst, period), acc in accs.items():
            assert (acc.analyst, acc.period) == (analyst, period)
            assert [(e.analyst, e.period) for e in acc.history()] == [(analyst, period)]


def test_threads_share_one_accountant_and_one_file(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    shared = Accountant(sdp.PureDP(1.0), ledger=path, analyst="t")
    own = [Accountant(sdp.PureDP(1.0), ledger=path, analyst="t") for _ in range(4)]
    accepted: list[int] = []

    def work(acc: Accountant) -> None:
        n = 0
        for _ in range(12):
            with contextlib.suppress(sdp.BudgetExceeded):
                acc.spend(sdp.PureDP(0.0625))
                n += 1
        accepted.append(n)

    threads = [threading.Thread(target=work, args=(acc,)) for acc in [shared] * 4 + own]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accepted) == 16
    assert [row[8] for row in raw_rows(path)] == [k * 0.0625 for k in range(1, 17)]
    for acc in [shared, *own]:
        acc.close()


# -- racing processes ------------------------------------------------------------------------------

# Run by ``exec`` in each child (any start method can pickle ``exec`` by reference).
_RACER = """
import sharpdp as sdp
from sharpdp.accounting.accountant import Accountant

barrier.wait()  # all children open the (not yet existing) ledger and spend at the same moment
acc = Accountant(budget=sdp.PureDP(1.0), ledger=PATH, analyst="shared")
accepted = refused = 0
while refused < 3:  # keep trying after the first refusal: later attempts must be refused too
    try:
        acc.spend(sdp.PureDP(0.0625))
        accepted += 1
    except sdp.BudgetExceeded:
        refused += 1
conn.send(accepted)
"""


def test_eight_processes_racing_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["sharpdp.accounting.accountant"])
    barrier = ctx.Barrier(8)
    pipes, procs = [], []
    for _ in range(8):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=exec, args=(_RACER, {"PATH": str(path), "barrier": barrier, "conn": child})
        )
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)
    accepted = []
    for parent, proc in zip(pipes, procs, strict=True):
        assert parent.poll(120), "a racer did not finish"
        accepted.append(parent.recv())
        proc.join(30)
        assert proc.exitcode == 0
    assert sum(accepted) == 16  # floor(1/0.0625), exactly: no overspend, no lost capacity
    rows = raw_rows(path)
    assert len(rows) == 16
    # Every row saw a different history: the readings are exactly 1/16, 2/16, ..., 16/16.
    assert [row[8] for row in rows] == [k * 0.0625 for k in range(1, 17)]
    assert sum(Fraction(0.0625) * row[4] for row in rows) == 1
    # One ledger was created (SQLite side files may remain; no temporary ledger does).
    names = {p.name for p in tmp_path.iterdir()}
    assert names <= {"shared.sqlite", "shared.sqlite-wal", "shared.sqlite-shm"}


# -- the odometer against independent computations -------------------------------------------------


def test_gaussian_odometer_is_a_valid_upper_bound() -> None:
    # k runs of the Gaussian mechanism compose exactly to (√k/σ)-GDP (Dong–Roth–Su 2019 Cor 3.3),
    # whose ε(δ) is the exact value. Any valid accountant reports at least that and, using the
    # zCDP route alone, at most BS16 Lemma 3.5's ε = ρ + 2√(ρ log 1/δ) with ρ = k/(2σ²).
    delta, sigma = 1e-6, 8.0
    acc = Accountant(sdp.ApproxDP(3.0, delta), analyst="g")
    for k in range(1, 9):
        acc.spend(sdp.Gaussian(sigma))
        exact = gaussian_epsilon(math.sqrt(k) / sigma, delta)
        loose = bs16_lemma35_epsilon(k / (2 * sigma**2), delta)
        reported = acc.epsilon(delta)
        assert mp.mpf(reported) >= exact
        assert mp.mpf(reported) <= loose
        assert acc.spent() == reported
        assert acc.history()[-1].spent_after == reported
        # δ at the reported ε is within the target (the odometer's ε(δ) and δ(ε) agree).
        assert acc.delta(reported) <= delta * (1 + 1e-9)
    acc.close()


def test_approx_budget_refuses_at_the_threshold() -> None:
    delta, sigma = 1e-6, 8.0
    acc = Accountant(sdp.ApproxDP(1.0, delta), analyst="g")
    accepted = 0
    while acc.would_fit(sdp.Gaussian(sigma)):
        acc.spend(sdp.Gaussian(sigma))
        accepted += 1
    with pytest.raises(sdp.BudgetExceeded):
        acc.spend(sdp.Gaussian(sigma))
    # The last accepted reading fits; one more does not (by the accountant's own analysis), and
    # the exact GDP analysis confirms no valid accountant could take more than it allows.
    assert acc.spent() <= 1.0
    assert compose([(sdp.Gaussian(sigma), accepted + 1)]).epsilon(delta) > 1.0
    exact_next = gaussian_epsilon(math.sqrt(accepted + 1) / sigma, delta)
    assert accepted >= 1
    assert mp.mpf(acc.spent()) >= gaussian_epsilon(math.sqrt(accepted) / sigma, delta)
    limit = 0
    while gaussian_epsilon(math.sqrt(limit + 1) / sigma, delta) <= 1.0:
        limit += 1
    assert accepted <= limit  # never more than the exact analysis allows
    assert exact_next > 0
    remaining = acc.remaining()
    assert Fraction(remaining) <= Fraction(1.0) - Fraction(acc.spent())
    assert remaining >= 0.0
    acc.close()


def test_zcdp_budget_sums_exactly() -> None:
    # Gaussian(σ = 2): ρ = 1/(2σ²) = 1/8 exactly (BS16 Prop 1.6), so 8 fit in ZCDP(1).
    acc = Accountant(sdp.ZCDP(1.0), analyst="z")
    assert acc.measure == "rho"
    for k in range(1, 9):
        entry = acc.spend(sdp.Gaussian(2.0))
        assert entry.spent_after == k / 8
        assert (entry.measure, entry.at_delta) == ("rho", None)
    assert (acc.spent(), acc.remaining()) == (1.0, 0.0)
    with pytest.raises(sdp.BudgetExceeded, match=r"ρ = 1\.125"):
        acc.spend(sdp.Gaussian(2.0))
    # The odometer still answers in (ε, δ): 1-zCDP gives at most the BS16 Lemma 3.5 ε.
    assert mp.mpf(acc.epsilon(1e-6)) <= bs16_lemma35_epsilon(1.0, 1e-6)
    acc.close()


def test_zcdp_budget_of_laplace_spends() -> None:
    # Laplace with ε0 = 1/b is exactly (ε0 + e^{−ε0} − 1)-zCDP (Harrison–Manurangsi 2025).
    scales = [1.0, 2.0, 3.0, 5.0, 0.75]
    acc = Accountant(sdp.ZCDP(2.0), analyst="z")
    exact = mp.mpf(0)
    with mp.workdps(40):
        for b in scales:
            acc.spend(sdp.Laplace(b))
            e0 = 1 / mp.mpf(b)
            exact += e0 + mp.exp(-e0) - 1
            assert mp.mpf(acc.spent()) >= exact * (1 - mp.mpf(2) ** -50)  # converter is tight
            assert mp.mpf(acc.spent()) <= exact * (1 + mp.mpf(1e-12))
            assert mp.mpf(acc.remaining()) <= 2 - exact * (1 - mp.mpf(2) ** -50)
    acc.close()


def test_zcdp_budget_checks_xi() -> None:
    # ZCDP(0, 0.5) is pure 0.5-DP written as (ξ, ρ) = (0.5, 0): under ZCDP(1) (ξ + ρ = 1) two fit.
    acc = Accountant(sdp.ZCDP(1.0), analyst="xi")
    acc.spend(sdp.ZCDP(0.0, 0.5), count=2)
    assert acc.spent() == 0.0  # Σρ
    assert acc.remaining() == 0.0  # ξ + ρ − Σξ − Σρ = 0
    with pytest.raises(sdp.BudgetExceeded):
        acc.spend(sdp.ZCDP(0.0625))
    acc.close()
    # A budget with ξ = 0.25 and ρ = 0.5: a 0.5-zCDP spend fits; then nothing with ρ > 0.
    acc = Accountant(sdp.ZCDP(0.5, 0.25), analyst="xi2")
    acc.spend(sdp.ZCDP(0.25, 0.25))
    assert acc.remaining() == 0.25
    assert acc.would_fit(sdp.ZCDP(0.25))
    assert not acc.would_fit(sdp.ZCDP(0.25, 0.0625))
    acc.close()


def test_zcdp_budget_refuses_items_without_zcdp() -> None:
    acc = Accountant(sdp.ZCDP(1.0))
    with pytest.raises(sdp.NotImplied, match="cannot charge"):
        acc.spend(sdp.ApproxDP(0.1, 1e-9))
    with pytest.raises(sdp.NotImplied):
        acc.would_fit(sdp.ApproxDP(0.1, 1e-9))
    assert acc.history() == ()
    acc.close()


def test_infinite_budget_and_infinite_spends() -> None:
    with Accountant(sdp.ApproxDP(INF, 1e-6)) as acc:
        acc.spend(sdp.PureDP(INF))
        assert (acc.spent(), acc.remaining()) == (INF, INF)
    with Accountant(sdp.PureDP(1.0)) as acc:
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.Gaussian(100.0))  # no finite pure-DP ε
        assert acc.remaining() == 1.0
    with Accountant(sdp.ZCDP(INF)) as acc:
        acc.spend(sdp.ZCDP(INF))
        assert (acc.spent(), acc.remaining()) == (INF, INF)


def test_mechanisms_and_compositions_are_recorded_as_descriptions(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    batch = compose([(sdp.Exponential(0.1), 3), sdp.Laplace(10.0)], adaptive=False)
    items = [sdp.Exponential(0.25, monotonic=True), sdp.RandomizedResponse(0.5, 4), batch]
    with Accountant(sdp.ApproxDP(5.0, 1e-6), ledger=path) as acc:
        for item in items:
            acc.spend(item)
        odometer = acc.epsilon(1e-6)
    with Accountant(sdp.ApproxDP(5.0, 1e-6), ledger=path) as again:
        assert [e.item for e in again.history()] == items
        assert again.epsilon(1e-6) == odometer
        assert again.epsilon(1e-6) == compose(items).epsilon(1e-6)


# -- many distinct descriptions (the quick Rényi-summary pre-check) --------------------------------


def test_many_distinct_pure_spends_are_filtered_exactly(tmp_path: Path) -> None:
    # 48 distinct dyadic ε's: the exact sum decides, including at the boundary (where the quick
    # check's upward rounding refuses and the full analysis must be consulted).
    units = [3 * j + 1 for j in range(48)]  # ε_j = units_j / 2^12, Σ = 3432 / 4096
    budget = Fraction(sum(units) + 100, 4096)
    path = tmp_path / "l.sqlite"
    acc = Accountant(sdp.PureDP(float(budget)), ledger=path, analyst="many")
    for u in units:
        acc.spend(sdp.PureDP(u / 4096))
    assert Fraction(acc.epsilon(0.0)) == Fraction(sum(units), 4096)
    assert not acc.would_fit(sdp.PureDP(101 / 4096))
    with pytest.raises(sdp.BudgetExceeded):
        acc.spend(sdp.PureDP(101 / 4096))
    entry = acc.spend(sdp.PureDP(100 / 4096))  # lands exactly on the budget
    assert Fraction(entry.spent_after) >= budget
    assert acc.remaining() == 0.0
    acc.close()


def test_quick_check_sees_rows_written_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    a = Accountant(sdp.PureDP(1.0), ledger=path, analyst="x")
    for j in range(1, 33):
        a.spend(sdp.PureDP(j / 4096))  # 32 distinct descriptions, Σ = 528/4096
    assert a.would_fit(sdp.PureDP(0.03))
    with Accountant(sdp.PureDP(1.0), ledger=path, analyst="x") as b:
        b.spend(sdp.PureDP(0.85))
    with pytest.raises(sdp.BudgetExceeded):
        a.spend(sdp.PureDP(0.03))  # 528/4096 + 0.85 + 0.03 > 1
    a.spend(sdp.PureDP(0.0078125))  # 528/4096 + 0.85 + 2^-7 < 1 still fits
    assert len(a.history()) == 34
    a.close()


def test_many_distinct_gaussians_readings_are_valid_and_refusals_are_sharp() -> None:
    delta, budget = 1e-6, 1.0
    acc = Accountant(sdp.ApproxDP(budget, delta), analyst="g")
    sigmas: list[float] = []
    sigma = 30.0
    while True:
        item = sdp.Gaussian(sigma)
        if not acc.would_fit(item):
            with pytest.raises(sdp.BudgetExceeded):
                acc.spend(item)
            break
        entry = acc.spend(item)
        sigmas.append(sigma)
        # Exact: the history is (√Σσ⁻²)-GDP (Dong–Roth–Su 2019 Cor 3.3).
        exact = gaussian_epsilon(math.sqrt(sum(s**-2 for s in sigmas)), delta)
        assert mp.mpf(entry.spent_after) >= exact
        assert entry.spent_after <= budget
        sigma -= 0.25
    assert len(sigmas) > 32  # the quick check was used
    # A refusal is confirmed by the full analysis of the whole history plus the refused spend.
    full = compose([sdp.Gaussian(s) for s in [*sigmas, sigma]]).epsilon(delta)
    assert full > budget
    assert mp.mpf(acc.epsilon(delta)) >= gaussian_epsilon(
        math.sqrt(sum(s**-2 for s in sigmas)), delta
    )


def test_long_history_of_one_kind_reads_valid_and_sharp() -> None:
    """1000 spends of one Laplace (one count), then more: each reading (the PLD certified to 1e-3
    inside a spend) is at least an independent lower bound on the exact ε — the binned-output
    pair composed by a plain FFT power (tests/reference.py) — and within 1e-3 of it."""
    delta = 1e-6
    item = sdp.Laplace(100.0)
    acc = Accountant(sdp.ApproxDP(3.0, delta), analyst="long")
    acc.spend(item, count=1000)
    for k in (1001, 1002, 1003):
        entry = acc.spend(item)
        lower = laplace_k_fold_epsilon_lower(item.epsilon0, k, delta, cells=400)
        assert lower * (1 - 1e-9) <= entry.spent_after <= lower * (1 + 1e-3)
    acc.close()


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "budget",
    [
        sdp.ApproxZCDP(0.1, 1e-6),
        sdp.GDP(1.0),
        sdp.RDP((2.0,), (0.5,)),
        sdp.Gaussian(1.0),
        1.0,
        None,
    ],
    ids=stable_id,
)
def test_unsupported_budgets(budget: Any) -> None:
    with pytest.raises(sdp.InvalidParameter, match="budget"):
        Accountant(budget)


def test_bad_spends_record_nothing(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Accountant(sdp.PureDP(1.0), ledger=path) as acc:
        acc.spend(sdp.PureDP(0.25))
        before, rows = file_bytes(path), raw_rows(path)
        for count in (0, -1, 1.5, 2.0, True, "2", None, math.nan):
            with pytest.raises(sdp.InvalidParameter, match="count"):
                acc.spend(sdp.PureDP(0.25), count=count)  # type: ignore[arg-type]
            with pytest.raises(sdp.InvalidParameter, match="count"):
                acc.would_fit(sdp.PureDP(0.25), count=count)  # type: ignore[arg-type]
        for item in (0.25, "PureDP(0.25)", None, (sdp.PureDP(0.25), 1)):
            with pytest.raises(sdp.InvalidParameter, match="item"):
                acc.spend(item)  # type: ignore[arg-type]
        with pytest.raises(sdp.InvalidParameter, match="function"):
            acc.spend(sdp.RDP.from_function(lambda a: 0.01 * a))
        assert file_bytes(path) == before
        assert raw_rows(path) == rows


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"analyst": ""}, "analyst"),
        ({"analyst": 3}, "analyst"),
        ({"period": ""}, "period"),
        ({"period": None}, "period"),
        ({"ledger": 42}, "ledger"),
    ],
)
def test_bad_accountant_arguments(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match=name):
        Accountant(sdp.PureDP(1.0), **kwargs)


def test_shared_ledger_is_not_closed_by_the_accountant(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    with Accountant(sdp.PureDP(1.0), ledger=ledger) as acc:
        acc.spend(sdp.PureDP(0.5))
        assert acc.ledger is ledger
        assert "PureDP(epsilon=1.0)" in repr(acc)
    assert ledger.history("default", "all").entries == 1  # still open
    ledger.close()
    with pytest.raises(sdp.LedgerError):
        ledger.history("default", "all")


# -- the budget lives in the ledger ----------------------------------------------------------------


def raw_budgets(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM budgets ORDER BY id").fetchall()
    finally:
        conn.close()


ONE = sdp.ApproxDP(1.0, 1e-6)
FIVE = sdp.ApproxDP(5.0, 1e-6)


def test_reopening_with_another_budget_raises_naming_both(tmp_path: Path) -> None:
    # The issue: reopening an account created with ApproxDP(1, 1e-6) with ApproxDP(5, 1e-6)
    # silently allowed spending past the original limit.
    path = tmp_path / "l.sqlite"
    with Accountant(ONE, ledger=path, analyst="ana") as acc:
        acc.spend(sdp.Gaussian(8.0))
        spent = acc.spent()
    assert 0.5 < spent < 0.51  # (1/8)-GDP at δ = 1e-6
    spends, budgets = raw_rows(path), raw_budgets(path)
    with pytest.raises(sdp.LedgerError) as refused:
        Accountant(FIVE, ledger=path, analyst="ana")
    message = str(refused.value)
    assert repr(ONE) in message
    assert repr(FIVE) in message
    assert "set_budget" in message
    assert (raw_rows(path), raw_budgets(path)) == (spends, budgets)  # nothing written
    # Reopened with its budget, the account reads what was spent and still refuses overspending.
    with Accountant(ONE, ledger=path, analyst="ana") as acc:
        assert acc.spent() == spent
        assert acc.remaining() == 1.0 - spent
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.Gaussian(8.0), count=4)
        assert not acc.summary().over_budget
    # Other accounts of the same ledger keep their own budgets.
    with Accountant(FIVE, ledger=path, analyst="bob") as bob:
        bob.spend(sdp.Gaussian(8.0), count=4)


def test_set_budget_is_recorded_with_time_and_reason(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    reason = "approved by the privacy board (ticket 42)"
    with Accountant(ONE, ledger=path, analyst="ana") as acc:
        acc.spend(sdp.Gaussian(8.0))
        (first,) = acc.budgets()
        assert not acc.would_fit(sdp.Gaussian(8.0), count=4)
        start = datetime.now(UTC)
        record = acc.set_budget(FIVE, reason=reason)
        end = datetime.now(UTC)
        assert acc.budget == FIVE
        entry = acc.spend(sdp.Gaussian(8.0), count=4)  # over the old budget, within the new one
        assert 1.0 < entry.spent_after <= 5.0
        assert entry.budget == FIVE
    # The record, read with sqlite3 and json as docs/ledger.md describes it.
    (_, row) = raw_budgets(path)
    rid, analyst, period, text, created, why, version = row
    assert (rid, analyst, period, why, version) == (2, "ana", "all", reason, sdp.__version__)
    assert json.loads(text) == {"type": "ApproxDP", "params": {"epsilon": 5.0, "delta": 1e-6}}
    assert start <= datetime.fromisoformat(created) <= end
    assert (record.id, record.budget, record.reason) == (2, FIVE, reason)
    assert record.timestamp == datetime.fromisoformat(created)
    # The spend rows name the budget each was checked against.
    assert [json.loads(r[9])["params"]["epsilon"] for r in raw_rows(path)] == [1.0, 5.0]
    # Now the old budget is the one refused, and the new one opens the account.
    with pytest.raises(sdp.LedgerError, match=r"epsilon=5\.0.*epsilon=1\.0"):
        Accountant(ONE, ledger=path, analyst="ana")
    with Accountant(FIVE, ledger=path, analyst="ana") as acc:
        assert acc.budgets() == (first, record)
        summary = acc.summary()
        assert (summary.budget, summary.budget_reason) == (FIVE, reason)
        assert summary.budget_since == record.timestamp


def test_set_budget_never_below_what_is_spent(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    acc = Accountant(sdp.PureDP(1.0), ledger=path, analyst="x")
    acc.spend(sdp.PureDP(0.5))
    spends, budgets = raw_rows(path), raw_budgets(path)
    with pytest.raises(sdp.BudgetExceeded, match=r"PureDP\(epsilon=0\.4375\).*ε = 0\.5 at δ = 0"):
        acc.set_budget(sdp.PureDP(0.4375), reason="cut")
    for bad in (sdp.GDP(1.0), sdp.ApproxZCDP(0.1, 1e-6), None, 0.5):
        with pytest.raises(sdp.InvalidParameter, match="budget"):
            acc.set_budget(bad, reason="bad type")  # type: ignore[arg-type]
    for reason in ("", " ", None, 7):
        with pytest.raises(sdp.InvalidParameter, match="reason"):
            acc.set_budget(sdp.PureDP(2.0), reason=reason)  # type: ignore[arg-type]
    assert (raw_rows(path), raw_budgets(path)) == (spends, budgets)
    assert acc.budget == sdp.PureDP(1.0)
    # Exactly what is spent is allowed: the account is then full.
    acc.set_budget(sdp.PureDP(0.5), reason="freeze")
    assert (acc.spent(), acc.remaining()) == (0.5, 0.0)
    assert not acc.would_fit(sdp.PureDP(2**-20))
    acc.spend(sdp.PureDP(0.0))
    # A zCDP budget cannot be set on a history that implies no zCDP bound.
    other = Accountant(ONE, ledger=path, analyst="y")
    other.spend(sdp.ApproxDP(0.1, 1e-9))
    with pytest.raises(sdp.NotImplied):
        other.set_budget(sdp.ZCDP(10.0), reason="switch to zCDP")
    assert other.budget == ONE
    assert len(raw_budgets(path)) == len(budgets) + 2  # "freeze" and y's first budget only
    acc.close()
    other.close()


def test_budget_changes_apply_to_every_accountant_of_the_account(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    a = Accountant(sdp.PureDP(1.0), ledger=path, analyst="x")
    b = Accountant(ledger=path, analyst="x")  # the recorded budget
    assert b.budget == sdp.PureDP(1.0)
    a.spend(sdp.PureDP(0.5))
    b.set_budget(sdp.PureDP(2.0), reason="raised")
    assert a.budget == sdp.PureDP(2.0)
    a.spend(sdp.PureDP(1.0))
    # A change of type: the history is read in the new currency, exactly.
    b.set_budget(sdp.ZCDP(2.0), reason="switch to zCDP")
    assert a.measure == "rho"
    entry = a.spend(sdp.Gaussian(1.0))
    assert (entry.measure, entry.at_delta, entry.budget) == ("rho", None, sdp.ZCDP(2.0))
    # ε-DP is ε·tanh(ε/2)-zCDP (Cesar–Rogers); the Gaussian with σ = 1 is 1/2-zCDP.
    rho = 0.5 * math.tanh(0.25) + 1.0 * math.tanh(0.5) + 0.5
    assert a.spent() == pytest.approx(rho, rel=1e-12)
    assert a.spent() >= rho * (1 - 1e-15)
    a.close()
    b.close()


def test_a_budget_change_just_before_a_spend_is_checked_in_its_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "l.sqlite"
    a = Accountant(sdp.PureDP(1.0), ledger=path, analyst="x")
    b = Accountant(sdp.PureDP(1.0), ledger=path, analyst="x")
    a.spend(sdp.PureDP(0.5))
    assert a.would_fit(sdp.PureDP(0.5))
    append = Ledger.append
    cuts: list[object] = []

    def cut_then_append(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        # Another process lowers the budget after a's own pre-check, before a's transaction.
        if not cuts:
            cuts.append(b.set_budget(sdp.PureDP(0.75), reason="cut"))
        return append(self, *args, **kwargs)

    monkeypatch.setattr(Ledger, "append", cut_then_append)
    with pytest.raises(sdp.BudgetExceeded, match=r"over the budget PureDP\(epsilon=0\.75\)"):
        a.spend(sdp.PureDP(0.5))
    assert cuts
    assert len(a.history()) == 1
    assert a.spend(sdp.PureDP(0.25)).budget == sdp.PureDP(0.75)
    assert a.remaining() == 0.0
    a.close()
    b.close()


def test_budget_none_opens_only_an_account_with_a_recorded_budget(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    # (it said "(create=False)", an argument the caller never passed)
    with pytest.raises(sdp.LedgerError, match=r"does not exist: without a budget.*pass budget="):
        Accountant(ledger=missing, analyst="ana")
    assert not missing.exists()  # a mistyped path never starts a ledger
    with pytest.raises(sdp.InvalidParameter, match="no budget is recorded"):
        Accountant()  # a fresh in-memory ledger has no budget
    path = tmp_path / "l.sqlite"
    Accountant(sdp.PureDP(1.0), ledger=path, analyst="ana").close()
    with pytest.raises(sdp.InvalidParameter, match=r"budget: no budget is recorded.*'bob'"):
        Accountant(ledger=path, analyst="bob")
    with pytest.raises(sdp.InvalidParameter, match="no budget is recorded"):
        Accountant(ledger=path, analyst="ana", period="2026-01")
    assert [row[1] for row in raw_budgets(path)] == ["ana"]
    with Accountant(ledger=path, analyst="ana") as acc:
        assert acc.budget == sdp.PureDP(1.0)
        acc.spend(sdp.PureDP(1.0))
        with pytest.raises(sdp.BudgetExceeded):
            acc.spend(sdp.PureDP(2**-20))


def test_readings_show_spent_and_budget(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    acc = Accountant(sdp.ZCDP(1.0), ledger=path, analyst="z")
    acc.spend(sdp.Gaussian(2.0))  # ρ = 1/(2σ²) = 1/8
    summary = acc.summary()
    assert (
        summary.analyst,
        summary.period,
        summary.budget,
        summary.measure,
        summary.at_delta,
        summary.spent,
        summary.remaining,
        summary.over_budget,
        summary.spends,
    ) == ("z", "all", sdp.ZCDP(1.0), "rho", None, 0.125, 0.875, False, 1)
    assert summary.budget_reason == "opened by the account's first accountant"
    text = str(summary)
    for needle in ("ρ = 0.125", repr(sdp.ZCDP(1.0)), "remaining 0.875", "1 spend"):
        assert needle in text
    shown = repr(acc)
    assert "spent=0.125" in shown
    assert f"budget={sdp.ZCDP(1.0)!r}" in shown
    history = acc.ledger.history("z", "all")
    assert history.budget is not None
    assert history.budget.budget == sdp.ZCDP(1.0)
    (entry,) = acc.history()
    assert (entry.spent_after, entry.budget) == (0.125, sdp.ZCDP(1.0))
    acc.close()
    assert "spent=<unreadable>" in repr(acc)  # a closed ledger: repr still answers


# Run by ``exec`` in each child. Every opener first reads "no budget recorded" (the read is slowed
# down until all have made it), then records: the race that the transaction must settle.
_OPENER = """
import time
import sharpdp as sdp
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.ledger import Ledger

read = Ledger.budget

def slow_read(self, analyst, period):
    found = read(self, analyst, period)
    time.sleep(0.5)
    return found

Ledger.budget = slow_read
barrier.wait()
try:
    acc = Accountant(budget=sdp.PureDP(EPSILON), ledger=PATH, analyst="new")
except sdp.LedgerError as err:
    conn.send(("refused", str(err)))
else:
    conn.send(("opened", repr(acc.budget)))
    acc.close()
"""


def test_concurrent_first_openers_with_different_budgets_exactly_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["sharpdp.accounting.accountant"])
    n = 5
    barrier = ctx.Barrier(n)
    budgets = [sdp.PureDP(0.5 * (i + 1)) for i in range(n)]
    pipes, procs = [], []
    for budget in budgets:
        parent, child = ctx.Pipe(duplex=False)
        env = {"PATH": str(path), "EPSILON": budget.epsilon_, "barrier": barrier, "conn": child}
        proc = ctx.Process(target=exec, args=(_OPENER, env))
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)
    results = []
    for parent, proc in zip(pipes, procs, strict=True):
        assert parent.poll(120), "an opener did not finish"
        results.append(parent.recv())
        proc.join(30)
        assert proc.exitcode == 0
    winners = [i for i, (kind, _) in enumerate(results) if kind == "opened"]
    assert len(winners) == 1
    winner = budgets[winners[0]]
    assert results[winners[0]][1] == repr(winner)
    for budget, (kind, message) in zip(budgets, results, strict=True):
        if kind == "refused":
            assert repr(winner) in message
            assert repr(budget) in message
    (row,) = raw_budgets(path)
    assert json.loads(row[3]) == {"type": "PureDP", "params": {"epsilon": winner.epsilon_}}


def test_a_new_process_sees_the_recorded_budget(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Accountant(ONE, ledger=path, analyst="ana") as acc:
        acc.spend(sdp.Gaussian(8.0))
        acc.set_budget(sdp.ApproxDP(2.0, 1e-6), reason="ticket 42")
    script = textwrap.dedent(
        f"""
        import sharpdp as sdp
        from sharpdp.accounting.accountant import Accountant
        try:
            Accountant(sdp.ApproxDP(1.0, 1e-6), ledger={str(path)!r}, analyst="ana")
        except sdp.LedgerError as err:
            print("refused", "epsilon=1.0" in str(err) and "epsilon=2.0" in str(err))
        with Accountant(ledger={str(path)!r}, analyst="ana") as acc:
            print(repr(acc.budget))
            print(acc.summary().budget_reason)
            print(acc.spend(sdp.Gaussian(8.0), count=4).spent_after > 1.0)
        """
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.splitlines() == [
        "refused True",
        repr(sdp.ApproxDP(2.0, 1e-6)),
        "ticket 42",
        "True",
    ]
    with Accountant(ledger=path, analyst="ana") as acc:  # and this process sees the child's spend
        assert len(acc.history()) == 2
        assert acc.budget == sdp.ApproxDP(2.0, 1e-6)


def test_quick_check_takes_items_with_a_delta_part() -> None:
    """12 distinct (ε_i, δ_i)-DP spends (the quick check starts at 8 distinct descriptions and now
    carries δ parts): every recorded reading ε is valid, checked against the exact optimal
    composition δ(ε) = 1 − Π(1 − δ_i)·(1 − δ_RR(ε)) [Murtagh–Vadhan 2016] summed over all 2^12
    outcomes of the randomized-response pairs in mpmath."""
    delta = 1e-6
    items = [(0.05 + 0.011 * i, (1 + i) * 1e-9) for i in range(12)]
    acc = Accountant(sdp.ApproxDP(3.0, delta), analyst="q")
    for n, (e, d) in enumerate(items, start=1):
        entry = acc.spend(sdp.ApproxDP(e, d))
        eps = mp.mpf(entry.spent_after)
        assert eps < 3.0
        with mp.workdps(40):  # δ ≈ 1e-6 next to 1: 15 digits cannot decide
            assert _exact_delta(items[:n], eps) <= delta, (n, entry.spent_after)
    acc.close()


def _exact_delta(head: list[tuple[float, float]], eps: mp.mpf) -> mp.mpf:
    """Exact δ(ε) of the (ε_i, δ_i)-DP items by enumeration (in the caller's precision)."""
    keep = mp.fprod([1 - mp.mpf(di) for _, di in head])
    rr = mp.mpf(0)
    for mask in range(2 ** len(head)):  # flipped pairs: each contributes −ε_i to the loss
        loss, weight = mp.mpf(0), mp.mpf(1)
        for j, (ej, _) in enumerate(head):
            ej = mp.mpf(ej)
            p = mp.e**ej / (1 + mp.e**ej)
            if mask >> j & 1:
                loss, weight = loss - ej, weight * (1 - p)
            else:
                loss, weight = loss + ej, weight * p
        if loss > eps:
            rr += weight * (1 - mp.e ** (eps - loss))
    return 1 - keep * (1 - rr)


@pytest.mark.parametrize(
    ("budget", "make"),
    [
        (sdp.PureDP(100.0), lambda i: sdp.PureDP(0.01 + 0.001 * i)),
        (sdp.ApproxDP(100.0, 1e-6), lambda i: sdp.ApproxDP(0.01 + 0.001 * i, 1e-10)),
    ],
    ids=["pure budget", "approx items"],
)
def test_quick_check_spares_the_full_composition(
    monkeypatch: pytest.MonkeyPatch, budget: sdp.Guarantee, make: Any
) -> None:
    """Past 8 distinct descriptions a spend that clearly fits is decided by the Rényi summary
    alone: the full composition is not run (pure-DP budgets and (ε, δ) items included; a δ = 0
    budget once made the summary read ∞ and every spend recompose in full)."""
    import sharpdp.accounting.accountant as accountant_module

    calls = []
    real = accountant_module.compose

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(accountant_module, "compose", counted)
    with Accountant(budget, analyst="quick") as acc:
        for i in range(8):
            acc.spend(make(i))
        calls.clear()
        for i in range(8, 20):
            acc.spend(make(i))
    assert calls == []


def test_projected_is_the_reading_the_spend_leaves() -> None:
    # pure ε-DP spends under a pure budget compose to their sum (at δ = 0 that is exact)
    acct = sdp.Accountant(budget=sdp.PureDP(1.0))
    acct.spend(sdp.PureDP(0.25))
    assert acct.projected(sdp.PureDP(0.5), count=1) == 0.75
    assert [e.item for e in acct.history()] == [sdp.PureDP(0.25)]  # nothing recorded
    gauss = sdp.Accountant(budget=sdp.ApproxDP(10.0, 1e-6))
    item = sdp.compose([(sdp.Gaussian(3.0), 4), (sdp.DiscreteLaplace(2.0), 3)])
    after = gauss.projected(item)
    gauss.spend(item)
    assert gauss.spent() == after


@pytest.mark.parametrize(
    ("budget", "item", "count"),
    [
        (sdp.ZCDP(1.0), sdp.Gaussian(5.0), 50),  # 50 · 1/(2·25) = 1
        (sdp.ZCDP(0.5), sdp.DiscreteGaussian(20.0), 400),  # 400 · 1/800 = 1/2
        (sdp.PureDP(1.0), sdp.Laplace(10.0), 10),  # 10 · 1/10 = 1
        (sdp.PureDP(1.0), sdp.DiscreteLaplace(3.0), 3),  # 3 · 1/3 = 1
        (sdp.ApproxDP(1.0, 1e-6), sdp.DiscreteLaplace(7.0), 7),  # 7 · 1/7 = 1 (and δ = 0)
    ],
)
def test_spends_that_exactly_exhaust_the_budget_fit(
    budget: sdp.Guarantee, item: sdp.Guarantee, count: int
) -> None:
    """Each run's exact rational cost times ``count`` is the budget exactly: the last spend fits
    and one more does not (the rounded-up float per run summed past the budget and refused the
    last one)."""
    account = sdp.Accountant(budget)
    for _ in range(count):
        account.spend(item)
    with pytest.raises(sdp.BudgetExceeded):
        account.spend(item)


def test_spends_priced_alike_across_accountants_keep_their_own_values() -> None:
    """Readings kept process-wide (short histories) are per (history, δ): accountants with other
    charges or another δ never read each other's values. Expected: one Laplace with ε0 = 1/b
    has the exact profile δ(ε) = 1 − e^{(ε − ε0)/2} for ε < ε0, so ε(δ) = ε0 + 2·ln(1 − δ)."""

    def exact(scale: float, delta: float) -> float:
        return 1.0 / scale + 2.0 * math.log1p(-delta)

    from sharpdp.accounting import accountant

    before = accountant._spent_epsilon_kept.cache_info().hits
    for scale in (1.0, 2.0, 1.0):  # the third repeats the first: it reads the kept value
        for delta in (1e-6, 1e-3, 1e-6):
            acc = Accountant(budget=sdp.ApproxDP(5.0, delta))
            acc.spend(sdp.Laplace(scale))
            assert acc.spent() >= exact(scale, delta) - 1e-12
            assert acc.spent() == pytest.approx(exact(scale, delta), rel=1e-3)
            assert acc.projected(sdp.Laplace(scale)) > acc.spent()  # a second one costs more
    assert accountant._spent_epsilon_kept.cache_info().hits > before  # values were kept


def test_threads_sharing_an_accountant_never_overspend(tmp_path: Path) -> None:
    """Four threads spending through one accountant whose budget reads through the Rényi
    summary (18 kinds of item): its sums were updated without a lock, so one thread's overwrote
    another's while the counts kept both. Valid spends then failed ("count must be >= 0",
    in every run with a 1 µs switch interval) and, in about one run in five, the accepted
    history composed past the budget. The history is recomposed from the ledger independently."""
    pool = [sdp.PureDP(0.004 * (i + 1)) for i in range(6)]
    pool += [sdp.Gaussian(30.0 + 7 * i) for i in range(6)]
    pool += [sdp.Laplace(150.0 + 11 * i) for i in range(6)]
    interval = sys.getswitchinterval()
    for run in range(3):
        path = str(tmp_path / f"threads{run}.sqlite")
        acct = sdp.Accountant(sdp.ApproxDP(1.0, 1e-6), ledger=path, analyst="ana")
        errors: list[Exception] = []

        def spend(seed: int, acct: sdp.Accountant = acct, errors: list[Exception] = errors) -> None:
            r = random.Random(seed)
            for _ in range(60):
                item = r.choice(pool)
                try:
                    acct.would_fit(item)
                    acct.spend(item)
                except sdp.BudgetExceeded:
                    pass
                except Exception as err:
                    errors.append(err)

        threads = [threading.Thread(target=spend, args=(10 * run + i,)) for i in range(4)]
        sys.setswitchinterval(1e-6)  # (widens the window the race needs)
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(interval)
        assert not errors, errors[:3]
        history = sdp.Accountant(None, ledger=path, analyst="ana").history()
        assert sdp.compose([(e.item, e.count) for e in history]).epsilon(1e-6) <= 1.0


def test_a_zcdp_budget_charges_a_composition_by_its_parts() -> None:
    """compose([ZCDP(0.01)] * 3) has no conversion as a whole; it was refused (NotImplied) by a
    zCDP budget. Its parts' ρ add (Bun–Steinke 2016 Lemma 2.3): 0.03, rounded up."""
    with sdp.Accountant(sdp.ZCDP(0.1)) as acct:
        acct.spend(sdp.compose([(sdp.ZCDP(0.01), 3)]))
        assert Fraction(acct.spent()) >= 3 * Fraction(0.01)
        assert acct.spent() == pytest.approx(0.03, rel=1e-15)
        with pytest.raises(sdp.NotImplied, match="zCDP budget"):
            acct.spend(sdp.compose([(sdp.ApproxDP(0.1, 1e-6), 1), (sdp.ZCDP(0.01), 1)]))
        assert acct.spent() == pytest.approx(0.03, rel=1e-15)


@pytest.mark.parametrize(
    ("family", "target", "fixed"),
    [
        (sdp.Laplace, sdp.ApproxDP(0.5, 1e-6), {}),
        (sdp.DiscreteGaussian, sdp.ApproxDP(1.0, 1e-5), {}),
        (sdp.TopK, sdp.ApproxDP(0.6113198464092003, 1e-6), {"k": 3}),
        (sdp.ReportNoisyMax, sdp.ApproxDP(0.37, 1e-9), {"noise": "laplace"}),
    ],
)
def test_a_mechanism_calibrated_to_a_budget_fits_it(
    family: type[sdp.Guarantee], target: sdp.ApproxDP, fixed: dict[str, object]
) -> None:
    # calibrate certified δ(ε) ≤ δ; the accountant read ε(δ) by inverting a composition's
    # bound, a few ulps above ε (Laplace: the MGF inversion's 0.5 + 7e-14 against the closed
    # form's 0.5 − 5e-14), and refused the mechanism on the very budget it was calibrated to
    m = sdp.calibrate(family, target, **fixed)  # type: ignore[arg-type]
    assert sdp.max_compositions(m, target) >= 1
    acct = Accountant(target)
    acct.spend(m)
    assert acct.spent() <= target.epsilon_
    assert acct.remaining() >= 0.0


def test_the_accountant_and_max_compositions_agree_at_the_boundary() -> None:
    # ten Gaussians exactly at the budget: δ(1) certified, while ε(δ) read fresh was
    # 1 + 4e-14; max_compositions (δ(ε) ≤ δ) said 10, the accountant (ε(δ) ≤ ε) took 9.
    # Exact: ten σ = 5 Gaussians are μ = √10/5-GDP (Dong–Roth–Su 2019 Cor 3.3).
    g = sdp.Gaussian(5.0)
    budget = sdp.ApproxDP(1.0, sdp.compose([(g, 10)]).delta(1.0))
    assert float(gaussian_delta(math.sqrt(10) / 5, 1.0)) <= budget.delta_  # ten do fit
    assert sdp.max_compositions(g, budget) == 10
    acct = Accountant(budget)
    acct.spend(g, 9)
    acct.spend(g)
    assert acct.spent() == 1.0
    with pytest.raises(sdp.BudgetExceeded):
        acct.spend(g)


def _laplace_renyi(b: mp.mpf, alpha: mp.mpf) -> mp.mpf:
    """D_α of Laplace(b), Δ = 1 (Mironov 2017, Table II)."""
    return mp.log(
        alpha / (2 * alpha - 1) * mp.exp((alpha - 1) / b)
        + (alpha - 1) / (2 * alpha - 1) * mp.exp(-alpha / b)
    ) / (alpha - 1)


def test_a_zcdp_budget_with_xi_holds_what_lies_under_its_line() -> None:
    # ZCDP(0.1, 0.5) holds k Laplace(10) while k·D_α ≤ 0.5 + 0.1α at every α (Bun–Steinke 2016
    # Def 1.1; RDP adds, Mironov 2017 Prop 1). Summing each copy's (ρᵢ = 0.00484, ξᵢ = 0) allowed
    # 20; the curve allows 34, and 35 cross the line (near α = 12, on the grid below).
    budget = sdp.ZCDP(0.1, 0.5)
    item = sdp.Laplace(10.0)
    with mp.workdps(30):
        orders = [mp.mpf(a) / 20 for a in range(21, 4000)]

        def worst(k: int) -> mp.mpf:
            return max(k * _laplace_renyi(mp.mpf(10), a) - mp.mpf("0.1") * a for a in orders)

        assert worst(35) > mp.mpf("0.5")
        assert worst(34) <= mp.mpf("0.5")
    assert sdp.max_compositions(item, budget) == 34
    acct = Accountant(budget)
    acct.spend(item, 34)
    assert acct.spent() == 0.1
    with pytest.raises(sdp.BudgetExceeded):
        acct.spend(item)
    # and what calibrate gives for that budget is accepted by it
    Accountant(budget).spend(sdp.calibrate(sdp.Laplace, budget))


def test_the_zcdp_line_is_checked_at_every_order() -> None:
    # ten 0.001-DP items against ZCDP(ρ = 1e-30, ξ = 0.01 − 1e-14): their summed curve
    # 10·D_α(RR 0.001) (Steinke 2024 Thm 4: pure DP's curve is randomized response's) crosses
    # ξ + ρα near α = 1e15, past the 1e12 where the check stopped: 10 were accepted, 9 fit
    budget = sdp.ZCDP(1e-30, 0.01 - 1e-14)
    with mp.workdps(60):
        eps = mp.mpf(0.001)
        p = mp.e**eps / (1 + mp.e**eps)
        q = 1 - p
        a = mp.mpf(10) ** 15
        d = mp.log(p**a * q ** (1 - a) + q**a * p ** (1 - a)) / (a - 1)
        assert 10 * d > mp.mpf(budget.xi) + mp.mpf(budget.rho) * a  # ten cross the line
    assert sdp.max_compositions(sdp.PureDP(0.001), budget) == 9
    acct = Accountant(budget)
    acct.spend(sdp.PureDP(0.001), 9)
    with pytest.raises(sdp.BudgetExceeded):
        acct.spend(sdp.PureDP(0.001))


def test_refusal_message_rounds_against_the_user_and_abbreviates() -> None:
    """The refusal reads like the CLI: spent readings rounded up to 6 significant digits (never
    below the value the accountant holds), what is left rounded down, long compositions cut."""
    import re
    from decimal import Decimal

    acc = Accountant(sdp.ApproxDP(1.0, 1e-6))
    acc.spend(sdp.PureDP(0.8))
    spent, left = acc.epsilon(1e-6), acc.remaining()
    laplaces = sdp.compose([sdp.Laplace(i + 1.0) for i in range(9)])
    with pytest.raises(sdp.BudgetExceeded) as info:
        acc.spend(laplaces, count=2)
    text = str(info.value)
    assert "2 × compose(Laplace(scale=1.0), Laplace(scale=2.0)" in text
    assert "… 5 more)" in text
    assert "Composition(items=" not in text
    printed_spent = re.search(r"spent so far ε = ([0-9.e-]+) at δ = 1e-06", text)
    printed_left = re.search(r"remaining ε = ([0-9.e-]+)\)", text)
    would = re.search(r"to ε = ([0-9.e-]+) at δ = 1e-06, over the budget", text)
    assert printed_spent, text
    assert printed_left, text
    assert would, text
    # (the reading after the spend is the accountant's own bound: over the budget, 6 digits)
    assert Decimal(would[1]) > 1, would[1]
    assert len(would[1].replace(".", "")) <= 6, would[1]
    for printed, value, up in ((printed_spent[1], spent, True), (printed_left[1], left, False)):
        digits = len(printed.replace(".", "").lstrip("0"))
        assert digits <= 6, printed
        exact_value = Decimal(value)  # the float's exact value
        assert (Decimal(printed) >= exact_value) if up else (Decimal(printed) <= exact_value)
        assert abs(Decimal(printed) - exact_value) <= exact_value * Decimal("1e-5")
