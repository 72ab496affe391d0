"""``sharpdp demo`` as a user runs it: the flights analysis, its budget statement, a durable ledger."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from tests.cli.test_cli import script

import sharpdp as sdp


def test_demo_prints_every_release_and_the_budget_statement(tmp_path: Path) -> None:
    ledger = tmp_path / "demo.sqlite"
    out = subprocess.run(  # at a level whose percentage needs a decimal (it printed 100%)
        [*script(), "demo", "--ledger", str(ledger), "--level", "0.999"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": ""},
        check=True,
    )
    text = out.stdout
    assert text.count("99.9% interval") == 3  # carriers' counts and means, routes
    assert "With 99.9% probability the released value's rank" in text  # (it said 95%)
    assert "95%" not in text
    for heading in (
        "1. The 10 destinations",
        "2. Flights per carrier",
        "3. Mean departure delay",
        "4. Median air time",
        "5. Routes",
        "Budget statement",
    ):
        assert heading in text
    spent = float(re.search(r"Spent ε = ([0-9.]+) of 1", text).group(1))  # type: ignore[union-attr]
    # the statement agrees with the ledger, read independently of the demo's process
    acct = sdp.Accountant(budget=sdp.ApproxDP(1.0, 1e-6), ledger=str(ledger), analyst="demo")
    assert len(acct.history()) == 5
    assert spent >= acct.epsilon(1e-6) > spent - 1e-3  # printed rounded up, to 4 digits
    assert spent <= 1.0
    # a second run on the same ledger is refused: the budget is kept, nothing more is released
    again = subprocess.run(
        [*script(), "demo", "--ledger", str(ledger)],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": ""},
    )
    assert again.returncode == 1
    assert "Traceback" not in again.stdout + again.stderr
    assert "budget" in (again.stdout + again.stderr).lower()
    assert len(acct.history()) == 5


def test_demo_scales_its_queries_to_the_budget(tmp_path: Path) -> None:
    # the queries' shares were fixed for (1, 1e-6): any smaller budget ran two sections, then
    # was refused (exit 1); now each share scales with the budget's ε and δ
    ledger = tmp_path / "small.sqlite"
    out = subprocess.run(
        [*script(), "demo", "--ledger", str(ledger), "--budget", "approx:0.2,1e-7"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": ""},
        check=True,
    )
    assert "5. Routes" in out.stdout
    acct = sdp.Accountant(None, ledger=str(ledger), analyst="demo")
    assert acct.budget == sdp.ApproxDP(0.2, 1e-7)
    shares = [item for entry in acct.history() for item in [entry.item]]
    assert len(shares) == 5
    assert acct.epsilon(1e-7) <= 0.2
    # the flights-per-carrier count is PureDP(0.1) scaled by 0.2: a discrete Laplace of
    # scale Δ/ε = 100/0.02 (100 rows per aircraft)
    counts = [g for g in shares if isinstance(g, sdp.DiscreteLaplace) and g.sensitivity == 100]
    assert len(counts) == 1
    assert counts[0].scale == pytest.approx(5000.0, rel=1e-12)


def test_classical_accounting_counts_each_top_k_round() -> None:
    """Thirty 0.03-DP rounds at δ = 1e-6, by the classical routes: basic 0.9; zCDP with ε²/2 per
    round, ρ = 0.0135, ε = ρ + 2√(ρ ln 10⁶) = 0.87723 (Bun–Steinke 2016, Lemma 3.5); advanced
    composition √(2·30·ln 10⁶)·0.03 + 30·0.03·(e^0.03 − 1) = 0.89114. The least is the zCDP one."""
    import math

    from sharpdp.cli.demo import classical_epsilon

    rho = 30 * 0.03**2 / 2
    expected = rho + 2 * math.sqrt(rho * math.log(1e6))
    got = classical_epsilon([(sdp.TopK(10, 0.03, monotonic=True), 3)], 1e-6)
    assert got == pytest.approx(expected, rel=1e-12)
    assert got == pytest.approx(0.87723, abs=1e-5)
