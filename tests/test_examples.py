"""The scripts of ``examples/`` (and ``docs/figures.py``) run, and print what their docstrings
claim. Each runs in a subprocess, as a user would run it; the numbers printed are checked against
the library and against the published values (the posts and papers each example cites)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sharpdp as sdp

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # (standard error may carry a library's one-off notice, e.g. matplotlib building its font cache)
    assert "Traceback" not in done.stderr, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    return done.stdout


def test_capacity_example(tmp_path: Path) -> None:
    figure = tmp_path / "capacity.png"
    out = run("examples/capacity.py", str(figure))
    counts = [int(line.split()[-1]) for line in out.splitlines() if re.search(r"\s\d+$", line)]
    # basic, advanced, KOV at 0.05-DP; basic, advanced, KOV at 0.025-DP; zCDP, RDP, DDR20
    assert counts == [20, 13, 26, 40, 54, 92, 311, 313, 359]
    assert "359 mechanisms, 13.8× the 26 of the classical analysis" in out
    assert "3.9× the 92 of the range reading" in out
    # the library agrees: the sharpest count is DDR20's, the classical one KOV's on 2ε0-DP
    budget = sdp.ApproxDP(1.0, 1e-6)
    em = sdp.Exponential(0.025, monotonic=True)
    assert sdp.max_compositions(em, budget, adaptive=False) == 359
    assert sdp.max_compositions(sdp.PureDP(0.05), budget) == 26
    assert figure.read_bytes().startswith(PNG)


def test_approval_voting_example() -> None:
    out = run("examples/approval_voting.py")
    lines = out.splitlines()
    counts = {name: float(n) for name, n in re.findall(r"(\w+) (\d+)", lines[1])}
    assert len(counts) == 6
    scores = np.array(list(counts.values()))
    winner = max(counts, key=lambda c: counts[c])
    assert f"true winner: {winner} ({int(counts[winner])} approvals)" in out
    # the exact laws printed are the library's, and the draws follow them
    laws = [
        sdp.Exponential(0.1).probabilities(scores),
        sdp.Exponential(0.1, monotonic=True).probabilities(scores),
    ]
    tables = re.findall(r"exact P +drawn\n((?:  \w+ +[\d.]+ +[\d.]+\n)+)", out)
    assert len(tables) == 2
    for law, table in zip(laws, tables, strict=True):
        printed = [float(row.split()[1]) for row in table.splitlines()]
        assert printed == pytest.approx(law, abs=5e-5)
    gaps = [float(g) for g in re.findall(r"largest gap: ([\d.]+) standard errors", out)]
    assert len(gaps) == 2
    assert max(gaps) < 4.0
    p_sens, p_range = map(
        float, re.findall(r"P\[true winner\]: ([\d.]+) by sensitivity, ([\d.]+)", out)[0]
    )
    assert p_range > p_sens  # the range reading: the same ε, a sharper selection
    assert "at least OPT − 46.1 votes (sensitivity)" in out  # the seed's "OPT − 46"
    assert "at least OPT − 23.1 votes (range)" in out
    assert "select_best('class') with privacy PureDP(epsilon=0.1)" in out
    (winners,) = re.findall(r"winners of three seeded runs: (.*)", out)
    assert all(w in counts for w in winners.split(", "))
    (spent,) = re.findall(r"budget spent: ε = ([\d.]+) of 1", out)
    assert 0.3 <= float(spent) <= 0.3001


@pytest.mark.slow
def test_the_readme_figures_script(tmp_path: Path) -> None:
    out = run("docs/figures.py", str(tmp_path))
    names = ["profile", "capacity", "renyi", "budget", "release"]
    assert out.split() == [str(tmp_path / f"{n}.png") for n in names]
    for n in names:
        assert (tmp_path / f"{n}.png").read_bytes().startswith(PNG)
        assert f"](docs/img/{n}.png)" in (ROOT / "README.md").read_text(encoding="utf-8")
        assert (ROOT / "docs" / "img" / f"{n}.png").exists()


def test_plan_example_composes() -> None:
    """``examples/plan.toml`` (the README's ``sharpdp compose`` example) composes to the same ε
    as the library given the same items."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sharpdp",
            "compose",
            str(ROOT / "examples/plan.toml"),
            "--delta",
            "1e-6",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    items = [
        (sdp.Gaussian(sigma=20), 100),
        (sdp.Exponential(0.05, monotonic=True), 30),
        (sdp.DiscreteLaplace(scale=10), 5),
    ]
    want = sdp.compose(items).epsilon_bound(1e-6)
    assert json.loads(done.stdout)["epsilon"] == pytest.approx(want, rel=1e-6)
