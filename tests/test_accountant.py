"""The accountant: filter (never overspends, even racing across processes) and odometer values.

Expected values are computed independently: exact rational sums (fractions), the closed-form profile
of μ-Gaussian DP in mpmath (tests/reference.py), the Bun–Steinke 2016 Lemma 3.5 bound, and
Harrison–Manurangsi's exact zCDP of the Laplace mechanism evaluated in mpmath.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import sqlite3
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath as mp
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from reference import bs16_lemma35_epsilon, gaussian_epsilon, laplace_k_fold_epsilon_lower
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.composition import compose
from sharpdp.accounting.ledger import Ledger

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
        with pytest.raises(sdp.BudgetExceeded, match="x9"):
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
    ids=repr,
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
