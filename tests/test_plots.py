"""Figures (``sdp.plots``): files are written and valid, and what is drawn is the library's values.

Every check reads the data back from the figure's artists (lines by their ``gid``, error bars
from the container) and compares it with values computed apart from the drawing: a fresh
composition's ``explain``, the ledger's rows, a release's ``to_pandas``, and for bounded range's
Rényi curve an mpmath brute force over the two-point pairs (``reference.br_renyi``).
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

import sharpdp as sdp
from reference import br_renyi
from sharpdp._explain import Explanation
from sharpdp.accounting.registry import all_analyses
from sharpdp.plots.capacity import capacities

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def lines(fig: Figure) -> dict[str, Line2D]:
    """The lines of every axes, by gid."""
    return {
        str(line.get_gid()): line for ax in fig.axes for line in ax.get_lines() if line.get_gid()
    }


def ydata(line: Line2D) -> np.ndarray:
    return np.asarray(line.get_ydata(), dtype=float)


def drawn(value: float | None) -> float:
    return np.nan if value is None or np.isinf(value) else float(value)


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 5_000
    assert data.endswith(b"IEND\xaeB`\x82")


def assert_svg(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(path.read_bytes()) > 5_000


# -- profile ---------------------------------------------------------------------------------------

ITEMS = [(sdp.Gaussian(5.0), 100), (sdp.Exponential(0.1, monotonic=True), 10)]
EPSILONS = [0.0, 2.0, 5.0, 9.0, 13.0]


@pytest.fixture(scope="module")
def profile_figure() -> Figure:
    return sdp.plots.profile(sdp.compose(ITEMS), EPSILONS)


def test_profile_draws_every_analysis_and_the_sharpest(profile_figure: Figure) -> None:
    fresh = sdp.compose(ITEMS)
    explanations = [fresh.explain(epsilon=e) for e in EPSILONS]
    drawn_lines = lines(profile_figure)
    applicable = {
        r.name for ex in explanations for r in ex.rows if r.value is not None and r.value < np.inf
    }
    assert applicable
    assert applicable <= set(drawn_lines)
    for name in applicable:
        line = drawn_lines[name]
        assert list(line.get_xdata()) == EPSILONS
        expected = [drawn(next(r.value for r in ex.rows if r.name == name)) for ex in explanations]
        np.testing.assert_array_equal(ydata(line), expected)
        assert line.get_label().startswith(f"{name}: ")
    # the thick line is the least δ over the analyses; the composition's δ(ε) agrees to 1e-4
    sharpest = ydata(drawn_lines["sharpest"])
    np.testing.assert_array_equal(sharpest, [ex.winner.value for ex in explanations])
    np.testing.assert_allclose(sharpest, [fresh.delta(e) for e in EPSILONS], rtol=1e-4, atol=0)
    # the winner of each ε is marked in its label
    winners = {ex.winner.name for ex in explanations}
    for name in applicable:
        assert ("sharpest at" in str(drawn_lines[name].get_label())) == (name in winners)
    ax = profile_figure.axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "ε (nats)"


def test_profile_of_a_single_guarantee() -> None:
    g = sdp.BoundedRange(1.0)
    fig = sdp.plots.profile(g, [0.0, 0.25, 0.5, 0.75])
    (line,) = lines(fig).values()
    # η-BR's exact profile (1 − e^{(ε−η)/2})²/(1 − e^{−η}) at the sample points
    expected = [(1 - np.exp((e - 1) / 2)) ** 2 / (1 - np.exp(-1)) for e in (0.0, 0.25, 0.5, 0.75)]
    np.testing.assert_allclose(ydata(line), expected, rtol=1e-12)


def test_files_are_valid_png_and_svg(profile_figure: Figure, tmp_path: Path) -> None:
    assert_png(sdp.plots.save(profile_figure, tmp_path / "profile.png"))
    assert_svg(sdp.plots.save(profile_figure, tmp_path / "profile.svg"))
    # no creation date in the files: the same figure gives the same bytes
    sdp.plots.save(profile_figure, tmp_path / "again.svg")
    assert (tmp_path / "again.svg").read_bytes() == (tmp_path / "profile.svg").read_bytes()
    with pytest.raises(sdp.InvalidParameter, match="png"):
        sdp.plots.save(profile_figure, tmp_path / "profile.gif")


# -- capacity --------------------------------------------------------------------------------------

EM = sdp.Exponential(0.025)
BUDGET = sdp.ApproxDP(1.0, 1e-6)
KS = [1, 10, 100, 1000]


@pytest.fixture(scope="module")
def capacity_figure() -> Figure:
    return sdp.plots.capacity(EM, BUDGET, KS, adaptive=False)


#: Analyses bracketing the same exact composition of the dominating pairs; one of them answers at
#: each k (the inversion declines nearly atomic laws, and supersedes the PLD once it answers).
PAIRS = ("mgf", "mgf-smoothed", "pld")


def _first_answer(ex: Explanation, names: tuple[str, ...]) -> float | None:
    found = {r.name: r.value for r in ex.rows}
    return next((found[n] for n in names if found[n] is not None), None)


def test_capacity_draws_epsilon_of_k_fold_compositions(capacity_figure: Figure) -> None:
    drawn_lines = lines(capacity_figure)
    explanations = [sdp.compose([(EM, k)], adaptive=False).explain(delta=1e-6) for k in KS]
    lone = {a.name for a in all_analyses() if not a.composes}  # a lone release's: no curve
    for row in explanations[0].rows:
        if row.name in PAIRS:
            continue
        values = [drawn(_first_answer(ex, (row.name,))) for ex in explanations]
        if all(np.isnan(values)) or row.name in lone:
            assert row.name not in drawn_lines
            continue
        line = drawn_lines[row.name]
        assert list(line.get_xdata()) == KS
        np.testing.assert_array_equal(ydata(line), values)
    # the pairs' analyses share one curve without holes: the inversion declines k = 1 here
    assert not any(name in drawn_lines for name in PAIRS)
    merged = [drawn(_first_answer(ex, PAIRS)) for ex in explanations]
    assert not any(np.isnan(merged))
    np.testing.assert_array_equal(ydata(drawn_lines["/".join(PAIRS)]), merged)
    assert "ddr20" in drawn_lines  # non-adaptive: DDR20's optimal composition of BR mechanisms
    np.testing.assert_array_equal(ydata(drawn_lines["budget"]), [1.0, 1.0])
    ax = capacity_figure.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")


def test_capacity_counts_what_fits(capacity_figure: Figure) -> None:
    # the sharpest count is the library's max_compositions (DDR20: 359 for ε0 = 0.025 in (1, 1e-6))
    best = sdp.max_compositions(EM, BUDGET, adaptive=False)
    assert best == 359
    label = str(lines(capacity_figure)["ddr20"].get_label())
    assert label.endswith(f"k ≤ {best} fit")
    assert f"fits {best} compositions" in capacity_figure.axes[0].get_title()
    # every analysis' count fits under that analysis, and one more does not
    found = capacities(EM, BUDGET, KS, adaptive=False)
    assert found.fits["ddr20"] == best
    for name, k in found.fits.items():
        assert k is not None
        assert 0 < k < KS[-1]
        members = tuple(name.split("/"))

        def value(n: int, members: tuple[str, ...] = members) -> float:
            v = _first_answer(sdp.compose([(EM, n)], adaptive=False).explain(delta=1e-6), members)
            assert v is not None
            return v

        assert value(k) <= 1.0 < value(k + 1), name


def test_capacity_adaptive_leaves_out_ddr20() -> None:
    fig = sdp.plots.capacity(EM, sdp.ApproxDP(0.5, 1e-6), [1, 5, 20])
    assert "ddr20" not in lines(fig)
    assert "basic" in lines(fig)


def test_capacity_under_a_pure_budget() -> None:
    # δ = 0: ε0-DP items add up exactly, so 2 of ε0 = 0.025 fit ε = 0.06 and 3 do not
    found = capacities(EM, sdp.PureDP(0.06), [1, 2, 4])
    assert found.fits["basic"] == 2
    fig = sdp.plots.capacity(EM, sdp.PureDP(0.06), [1, 2, 4])
    np.testing.assert_allclose(ydata(lines(fig)["basic"]), [0.025, 0.05, 0.1], rtol=1e-12)
    assert fig.axes[0].get_ylabel() == "ε at δ = 0 (nats)"


def test_capacity_refuses_a_budget_without_epsilon() -> None:
    with pytest.raises(sdp.InvalidParameter, match="budget"):
        sdp.plots.capacity(EM, sdp.ZCDP(1.0), KS)
    with pytest.raises(sdp.InvalidParameter, match="ks"):
        sdp.plots.capacity(EM, BUDGET, [0, 3])


# -- Rényi -----------------------------------------------------------------------------------------

ALPHAS = [1.0, 1.5, 4.0, 32.0]


def test_renyi_br_exact_curve_matches_mpmath_and_the_zcdp_line() -> None:
    fig = sdp.plots.renyi(
        sdp.BoundedRange(1.0),
        sdp.ZCDP(1 / 8),
        alphas=ALPHAS,
        labels=["1-BR", "η²α/8"],
        zcdp=True,
    )
    drawn_lines = lines(fig)
    br = drawn_lines["renyi-0"]
    assert list(br.get_xdata()) == ALPHAS
    expected = [float(br_renyi(1.0, a, points=60, iterations=60)) for a in ALPHAS]
    np.testing.assert_allclose(ydata(br), expected, rtol=1e-9)
    np.testing.assert_allclose(ydata(drawn_lines["renyi-1"]), [a / 8 for a in ALPHAS], rtol=1e-15)
    # zCDP lines: BR's tight ρ (below η²/8), and the zCDP guarantee's own line again
    rho = sdp.convert(sdp.BoundedRange(1.0), sdp.ZCDP).rho
    assert rho < 1 / 8
    np.testing.assert_allclose(ydata(drawn_lines["zcdp-0"]), [rho * a for a in ALPHAS], rtol=1e-12)
    assert ydata(br)[-1] < ydata(drawn_lines["zcdp-0"])[-1]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()][:2] == [
        "1-BR",
        "1-BR as zCDP: ρα, ρ = 0.1234",
    ]


def test_renyi_refuses_bad_input() -> None:
    with pytest.raises(sdp.InvalidParameter):
        sdp.plots.renyi()
    with pytest.raises(sdp.InvalidParameter, match="labels"):
        sdp.plots.renyi(sdp.PureDP(1.0), labels=["a", "b"])
    with pytest.raises(sdp.InvalidParameter, match="alphas"):
        sdp.plots.renyi(sdp.PureDP(1.0), alphas=[0.5, 2.0])
    # no curve to draw: alone, matplotlib's "cannot be log-scaled" ValueError; beside another
    # curve, a legend entry without a line
    for items in ([sdp.ApproxDP(1.0, 1e-6)], [sdp.ApproxDP(1.0, 1e-6), sdp.PureDP(1.0)]):
        with pytest.raises(sdp.InvalidParameter, match=r"ApproxDP.*has no finite Rényi bound"):
            sdp.plots.renyi(*items)
    with pytest.raises(sdp.InvalidParameter, match=r"PureDP.*no positive finite"):
        sdp.plots.renyi(sdp.PureDP(0.0))


# -- budget (ledger) -------------------------------------------------------------------------------


def spend_some(ledger: sdp.Ledger) -> None:
    ann = sdp.Accountant(budget=sdp.ApproxDP(1.0, 1e-6), ledger=ledger, analyst="ann")
    bob = sdp.Accountant(budget=sdp.ZCDP(0.5), ledger=ledger, analyst="bob")
    for _ in range(3):
        ann.spend(sdp.Gaussian(10.0))
        bob.spend(sdp.Laplace(5.0), count=2)


def test_budget_draws_each_analysts_odometer(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with sdp.Ledger(path) as ledger:
        spend_some(ledger)
        entries, budgets = ledger.entries(), ledger.budgets()
    fig = sdp.plots.budget(path)
    assert len(fig.axes) == 2  # one panel for ε readings, one for ρ readings
    drawn_lines = lines(fig)
    for analyst, measure, limit in (("ann", "epsilon", 1.0), ("bob", "rho", 0.5)):
        mine = [e for e in entries if e.analyst == analyst]
        (opened,) = [b for b in budgets if b.analyst == analyst]
        spent = drawn_lines[f"spent:{analyst}:all:{measure}"]
        assert list(spent.get_xdata()) == [opened.timestamp, *(e.timestamp for e in mine)]
        np.testing.assert_array_equal(ydata(spent), [0.0, *(e.spent_after for e in mine)])
        np.testing.assert_array_equal(
            ydata(drawn_lines[f"budget:{analyst}:all:{measure}"]), [limit] * 2
        )
    assert fig.axes[0].get_ylabel() == "ε spent (nats) at δ = 1e-06"
    assert_png(sdp.plots.save(fig, tmp_path / "budget.png"))


def test_budget_refuses_an_empty_or_missing_ledger(tmp_path: Path) -> None:
    with sdp.Ledger(None) as ledger:
        with pytest.raises(sdp.InvalidParameter, match="no spend"):
            sdp.plots.budget(ledger)
        spend_some(ledger)
        with pytest.raises(sdp.InvalidParameter, match="cy"):
            sdp.plots.budget(ledger, analyst="cy")
        assert len(sdp.plots.budget(ledger, analyst="bob").axes) == 1
    with pytest.raises(sdp.LedgerError):
        sdp.plots.budget(tmp_path / "missing.sqlite")
    assert not (tmp_path / "missing.sqlite").exists()


# -- releases --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session() -> Any:
    people = pd.DataFrame(
        {
            "person": [f"p{i}" for i in range(200)],
            "shop": ["abc"[i % 3] for i in range(200)],
            "spent": [i % 7 for i in range(200)],
        }
    )
    return sdp.data.Session(people, "person", sdp.PureDP(10.0), seed=1)


def errorbars(fig: Figure) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, lower, upper) read back from the figure's error bars."""
    (container,) = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    data_line, _, (bars,) = container.lines
    assert data_line is not None
    segments = bars.get_segments()
    return (
        ydata(data_line),
        np.array([s[0][1] for s in segments]),
        np.array([s[1][1] for s in segments]),
    )


@pytest.mark.parametrize("kind", ["count", "mean"])
def test_release_draws_values_and_intervals(session: Any, kind: str) -> None:
    if kind == "count":
        query = session.count_by("shop", keys=["a", "b", "c"], privacy=sdp.PureDP(1.0))
    else:
        query = session.mean(
            "spent", (0, 10), by="shop", keys=["a", "b", "c"], privacy=sdp.PureDP(1.0)
        )
    result = query.run(rng=3)
    frame = result.to_pandas(0.9)
    fig = sdp.plots.release(result, 0.9)
    values, lower, upper = errorbars(fig)
    np.testing.assert_allclose(values, frame[kind].to_numpy(float), rtol=1e-12)
    np.testing.assert_allclose(lower, frame["lower"].to_numpy(float), rtol=1e-12)
    np.testing.assert_allclose(upper, frame["upper"].to_numpy(float), rtol=1e-12)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert ax.get_ylabel() == f"released {kind}"


def test_release_draws_workload_answers(session: Any) -> None:
    """A workload's answers carry a text ``query`` column (pandas' string dtype, which numpy's
    dtype test rejected with a TypeError): the counts are the one numeric column drawn."""
    workload = sdp.data.marginals(["shop"], way=1, domains={"shop": ["a", "b", "c"]})
    result = session.answer(workload, privacy=sdp.PureDP(1.0), max_rows=1)
    frame = result.to_pandas(0.9)
    values, _, _ = errorbars(sdp.plots.release(result, 0.9))
    np.testing.assert_allclose(values, frame["count"].to_numpy(float), rtol=1e-12)


def test_release_refuses_a_selection(session: Any) -> None:
    picked = session.top_k("shop", 2, keys=["a", "b", "c"], privacy=sdp.PureDP(1.0)).run(rng=1)
    with pytest.raises(sdp.InvalidParameter, match="selection"):
        sdp.plots.release(picked)


# -- no global state, light import -----------------------------------------------------------------


def test_import_stays_light_and_pyplot_is_never_loaded(tmp_path: Path) -> None:
    code = (
        "import sys, sharpdp as sdp\n"
        "assert 'matplotlib' not in sys.modules\n"
        "fig = sdp.plots.renyi(sdp.PureDP(1.0), alphas=[1.0, 2.0])\n"
        f"sdp.plots.save(fig, {str(tmp_path / 'r.png')!r})\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert_png(tmp_path / "r.png")


def test_a_workload_release_is_labelled_by_its_queries() -> None:
    """Predicates were all labelled "total" (their names are the query column, not a key), and
    a marginal's rows showed the other marginals' NULLs ("0 / nan")."""
    table = pd.DataFrame({"pid": range(8), "a": [0, 1, 1, 0, 1, 0, 1, 1], "b": list("xyxyxyxy")})
    s = sdp.data.Session(table, "pid", sdp.PureDP(10.0))

    def labels(workload: sdp.data.Workload) -> list[str]:
        figure = sdp.plots.release(s.answer(workload, privacy=sdp.PureDP(1.0), rng=0))
        return [t.get_text() for t in figure.axes[0].get_xticklabels()]

    assert labels(sdp.data.predicates({"a0": {"a": 0}, "bx": {"b": "x"}})) == ["a0", "bx"]
    domains = {"a": [0, 1], "b": ["x", "y"]}
    marginals = sdp.data.marginals(["a", "b"], way=1, domains=domains)
    assert labels(marginals) == ["a / 0", "a / 1", "b / x", "b / y"]


@pytest.mark.parametrize("alphas", [["x"], [2.0, "x"], "abc", [0.5]])
def test_renyi_refuses_orders_that_are_not_orders(alphas: Any) -> None:
    """["x"] raised numpy's raw ValueError."""
    with pytest.raises(sdp.InvalidParameter, match="alphas"):
        sdp.plots.renyi(sdp.BoundedRange(1.0), alphas=alphas)
