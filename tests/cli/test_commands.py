"""``sharpdp compose``, ``calibrate``, ``capacity``, ``budget`` and ``convert``: through typer's
runner, through ``main()`` in this process (the one-line error path), and — a handful, they cost
about a second each — as real subprocesses of the installed entry point.

Every ``--json`` answer is checked against the library's own value; every human answer's printed
bound is checked to be rounded up (never below the certified value).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.cli.test_cli import script
from typer.testing import CliRunner

import sharpdp as sdp
from sharpdp.accounting.calibration import classical_gaussian_sigma
from sharpdp.cli import app, main
from sharpdp.cli._common import parse_item
from sharpdp.cli.capacity import classical_reading, textbook_count

runner = CliRunner()

#: The ``run_main`` fixture (tests/cli/conftest.py): ``sharpdp ARGS`` → (code, stdout, stderr).
MainRun = Callable[[list[str]], tuple[int, str, str]]

PLAN_TOML = """\
[[item]]
mechanism = "gaussian"
sigma = 5
count = 100

[[item]]
mechanism = "exponential"
epsilon = 0.1
monotonic = true
count = 20
"""
PLAN_ITEMS = [(sdp.Gaussian(5.0), 100), (sdp.Exponential(0.1, monotonic=True), 20)]


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plans") / "plan.toml"
    path.write_text(PLAN_TOML, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three accounts: (ε, δ), pure (with a budget change) and zCDP budgets."""
    path = tmp_path_factory.mktemp("ledgers") / "budget.sqlite"
    with sdp.Accountant(sdp.ApproxDP(1.0, 1e-6), str(path), "ana") as ana:
        ana.spend(sdp.Gaussian(8.0))
        ana.spend(sdp.Exponential(0.1), 3)
    with sdp.Accountant(sdp.PureDP(1.0), str(path), "bob", period="2024-01") as bob:
        bob.spend(sdp.Laplace(10.0))
        bob.set_budget(sdp.PureDP(2.0), reason="a larger grant")
    with sdp.Accountant(sdp.ZCDP(0.5), str(path), "cy") as cy:
        cy.spend(sdp.Gaussian(3.0), 2)
    return path


def run_json(args: list[str]) -> dict[str, object]:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


def printed(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match is not None, text
    return float(match.group(1))


# -- the shared spelling of items ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gaussian:5", sdp.Gaussian(5.0)),
        ("gaussian:5,2", sdp.Gaussian(5.0, sensitivity=2.0)),
        ("laplace:2", sdp.Laplace(2.0)),
        ("exponential:0.1", sdp.Exponential(0.1)),
        ("exponential:0.025,monotonic", sdp.Exponential(0.025, monotonic=True)),
        ("topk:10,0.1", sdp.TopK(10, 0.1)),
        ("discrete-laplace:2,3", sdp.DiscreteLaplace(2.0, 3)),
        ("rr:1,4", sdp.RandomizedResponse(1.0, categories=4)),
        ("pure:1", sdp.PureDP(1.0)),
        ("approx:1,1e-6", sdp.ApproxDP(1.0, 1e-6)),
        ("zcdp:0.1", sdp.ZCDP(0.1)),
        ("br:1", sdp.BoundedRange(1.0)),
        ("GDP:0.5", sdp.GDP(0.5)),
    ],
)
def test_parse_item(text: str, expected: sdp.Guarantee) -> None:
    got = parse_item(text, "ITEM")
    assert type(got) is type(expected)
    assert got == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gauss:1", "unknown 'gauss'"),
        ("gaussian", "gaussian:sigma"),
        ("gaussian:1,2,3", "gaussian:sigma"),
        ("gaussian:-1", "sigma must be > 0"),
        ("gaussian:nan", "NaN"),
        ("laplace:abc", "scale must be a number"),
        # a misspelt flag was read as the sensitivity ("sensitivity must be a number")
        ("exponential:0.1,monotonc", "no flag 'monotonc' in 'exponential:0.1,monotonc'; did you "),
        ("topk:3,0.1,sorted", "its flags: monotonic"),
        ("topk:2.5,0.1", "k must be an integer"),
        ("approx:1", "approx:epsilon,delta"),
        ("approx:1,2", "delta"),
    ],
)
def test_parse_item_names_what_is_wrong(text: str, message: str) -> None:
    import typer

    with pytest.raises(typer.BadParameter, match=re.escape(message)):
        parse_item(text, "ITEM")


# -- compose --------------------------------------------------------------------------------------------


def test_compose_json_is_the_librarys_composition(plan: Path) -> None:
    got = run_json(["compose", str(plan), "--delta", "1e-6", "--json"])
    want = sdp.compose(PLAN_ITEMS)
    assert got["epsilon"] == want.epsilon(1e-6)
    assert got["delta"] == 1e-6
    assert got["adaptive"] is True
    assert got["items"] == [{"item": repr(g), "count": n} for g, n in PLAN_ITEMS]
    explanation = want.explain(delta=1e-6)
    rows = got["analyses"]
    assert isinstance(rows, list)
    assert [r["name"] for r in rows] == [r.name for r in explanation.rows]
    assert [r["name"] for r in rows if r["winner"]] == [explanation.winner.name]
    assert got["winner"] == {"name": explanation.winner.name, "theorem": explanation.winner.theorem}


def test_compose_reports_delta_at_epsilon_and_reads_json_plans(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(
        json.dumps(
            {
                "adaptive": False,
                "item": [{"mechanism": "exponential", "epsilon": 0.025, "count": 359}],
            }
        ),
        encoding="utf-8",
    )
    got = run_json(["compose", str(path), "--epsilon", "1", "--json"])
    want = sdp.compose([(sdp.Exponential(0.025), 359)], adaptive=False)
    assert got["adaptive"] is False  # the plan declares it
    assert got["delta"] == want.delta(1.0)
    assert got["delta"] <= 1e-6  # type: ignore[operator]  (359 fit, DDR20)
    assert got["winner"]["name"] == "ddr20"  # type: ignore[index]
    # a bare list of items, from standard input; --non-adaptive declares the batch
    stdin = json.dumps([{"mechanism": "pure", "epsilon": 0.1, "count": 5}])
    result = runner.invoke(app, ["compose", "-", "--json", "--non-adaptive"], input=stdin)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["epsilon"] == sdp.compose(
        [(sdp.PureDP(0.1), 5)], adaptive=False
    ).epsilon(1e-6)


def test_compose_prints_every_bound_rounded_up(plan: Path) -> None:
    result = runner.invoke(app, ["compose", str(plan), "--delta", "1e-6", "--digits", "4"])
    assert result.exit_code == 0, result.output
    value = sdp.compose(PLAN_ITEMS).epsilon(1e-6)
    shown = printed(r"ε = ([0-9.e-]+) at δ", result.stdout)
    assert value <= shown <= value * (1 + 1e-3)
    assert "pld" in result.stdout  # the table, with theorems
    assert "Zhu–Dong–Wang" in result.stdout
    assert "not run: mgf answered" in result.stdout  # the PLD is superseded, and says so


def test_compose_names_the_flag_where_the_library_names_its_keyword(tmp_path: Path) -> None:
    """DDR20 declines adaptive compositions with "pass adaptive=False"; at the terminal the same
    choice is --non-adaptive."""
    plan = tmp_path / "em.toml"
    plan.write_text('[[item]]\nmechanism = "exponential"\nepsilon = 0.1\ncount = 10\n')
    result = runner.invoke(app, ["compose", str(plan)])
    assert result.exit_code == 0, result.output
    flat = re.sub(r"[\s│]+", " ", result.stdout)  # the note wraps inside its table cell
    assert "pass --non-adaptive to use it" in flat
    assert "adaptive=False" not in flat


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        ('[[item]]\nmechanism = "gaussian"\nsigm = 5\n', [], "takes no 'sigm'"),
        ('[[item]]\nmechanism = "gaussian"\nsigma = -5\n', [], "sigma must be > 0"),
        ('[[item]]\nmechanism = "gaussian"\nsigma = 5\ncount = 0\n', [], "count"),
        ('[[item]]\nmechanism = "nope"\n', [], "'mechanism' must be one of"),
        ("[[item]\nmechanism=", [], "not TOML"),
        ("title = 1\n", [], "unknown key 'title'"),
        # both lists: the [[items]] were dropped unread (50 runs left out of the composition)
        (
            '[[item]]\nmechanism = "laplace"\nscale = 1\n'
            '[[items]]\nmechanism = "laplace"\nscale = 1\ncount = 50\n',
            [],
            "both 'item' and 'items'",
        ),
        ("adaptive = true\n", [], "lists no items"),
        ('[[item]]\nmechanism = "pure"\nepsilon = 1\n', ["--delta", "2"], "delta"),
        ('[[item]]\nmechanism = "pure"\nepsilon = 1\n', ["--delta", "nan"], "NaN"),
        ('[[item]]\nmechanism = "pure"\nepsilon = 1\n', ["--delta", "-1"], "delta"),
        (
            '[[item]]\nmechanism = "pure"\nepsilon = 1\n',
            ["--delta", "0.1", "--epsilon", "1"],
            "not both",
        ),
    ],
)
def test_compose_bad_plans_are_one_line(
    tmp_path: Path, body: str, args: list[str], message: str, run_main: MainRun
) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(body, encoding="utf-8")
    code, out, err = run_main(["compose", str(path), *args])
    assert code != 0
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "body",
    [
        # Python's JSON reader keeps a repeated key's last value: 1000 runs read as 1, a list
        # dropped, adaptive read as false
        '[{"mechanism": "gaussian", "sigma": 1, "count": 1000, "count": 1}]',
        '{"item": [{"mechanism": "gaussian", "sigma": 1, "count": 1000}], '
        '"item": [{"mechanism": "gaussian", "sigma": 50}]}',
        '{"adaptive": true, "adaptive": false, "item": [{"mechanism": "pure", "epsilon": 1}]}',
    ],
)
def test_compose_refuses_a_repeated_json_key(tmp_path: Path, body: str, run_main: MainRun) -> None:
    path = tmp_path / "plan.json"
    path.write_text(body, encoding="utf-8")
    code, out, err = run_main(["compose", str(path)])
    assert code == 2
    assert out == ""
    assert "repeats the key" in err
    assert len(err.strip().splitlines()) == 1, err


def test_integer_parameters_are_read_exactly() -> None:
    # read through a float, 2^53 + 1 became 2^53
    from sharpdp.cli._common import parse_item

    assert parse_item("topk:9007199254740993,0.1", "x").k == 2**53 + 1  # type: ignore[attr-defined]
    dl = parse_item("discrete-laplace:2,9007199254740993", "x")
    assert dl.sensitivity == 2**53 + 1  # type: ignore[attr-defined]
    assert parse_item("topk:1e3,0.1", "x").k == 1000  # type: ignore[attr-defined]


# -- calibrate ------------------------------------------------------------------------------------------


def test_calibrate_gaussian_json_and_the_classical_rule() -> None:
    got = run_json(["calibrate", "gaussian", "--target", "approx:1,1e-6", "--json"])
    exact = sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(1.0, 1e-6))
    assert got["sigma"] == got["value"] == exact.sigma  # type: ignore[attr-defined]
    assert got["sigma"] == pytest.approx(4.224679, abs=1e-6)
    classical = got["classical"]
    assert isinstance(classical, dict)
    assert classical["valid"] is False  # Dwork–Roth Thm A.1 needs ε < 1
    assert "ε < 1" in classical["note"]
    assert classical["value"] == pytest.approx(math.sqrt(2 * math.log(1.25e6)), rel=1e-12)
    # at ε < 1 it is valid, and is exactly the library's classical rule
    got = run_json(["calibrate", "gaussian", "--target", "approx:0.5,1e-5", "--json"])
    assert got["classical"]["valid"] is True  # type: ignore[index]
    assert got["classical"]["value"] == classical_gaussian_sigma(0.5, 1e-5)  # type: ignore[index]
    assert got["noise_ratio"] > 1.0  # type: ignore[operator]
    # the ratio is printed to nearest: σ = Δ/√(2ρ) is the least noise for zCDP, and its ratio of
    # 1 − 1e-12 to the searched σ read "the classical rule uses 0.999× the noise"
    text = runner.invoke(app, ["calibrate", "gaussian", "--target", "zcdp:0.1"]).stdout
    assert "× the noise" not in text
    text = runner.invoke(app, ["calibrate", "gaussian", "--target", "approx:1,1e-6"]).stdout
    ratio = classical["value"] / exact.sigma  # type: ignore[attr-defined,operator]
    assert f"the classical rule uses {ratio:.3g}× the noise" in text


def test_calibrate_rounds_noise_towards_more_noise() -> None:
    """σ is printed rounded up, a selection mechanism's ε rounded down: either still meets it."""
    result = runner.invoke(app, ["calibrate", "gaussian", "--target", "approx:1,1e-6"])
    assert result.exit_code == 0, result.output
    sigma = printed(r"σ = ([0-9.]+) ", result.stdout)
    assert sigma == 4.22468  # 4.2246788… rounded up
    assert "proved only for ε < 1" in result.stdout
    result = runner.invoke(
        app, ["calibrate", "exponential", "--target", "zcdp:0.5", "--monotonic", "--digits", "3"]
    )
    assert result.exit_code == 0, result.output
    exact = sdp.calibrate(sdp.Exponential, sdp.ZCDP(0.5), monotonic=True).epsilon_
    shown = printed(r"ε = ([0-9.]+) ", result.stdout)
    assert exact - 0.01 < shown <= exact
    assert sdp.convert(sdp.Exponential(shown, monotonic=True), sdp.ZCDP).rho <= 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gaussian", "--target", "approx:-1,1e-6"], "epsilon must be >= 0"),
        (["gaussian", "--target", "approx:1,2"], "delta"),
        (["gaussian", "--target", "approx:nan,1e-6"], "NaN"),
        (["gaussian", "--target", "pure:1"], "no Gaussian"),
        (["gaussian", "--target", "rdp:1"], "unknown 'rdp'"),
        (["topk", "--target", "pure:1"], "--k"),
        (["topk", "--target", "pure:1", "--k", "0"], "k must be >= 1, got 0"),
        (["laplace", "--target", "pure:1", "--k", "3"], "--k applies to topk"),
        (["gaussian", "--target", "zcdp:1", "--categories", "3"], "--categories applies to rr"),
        (["gaussian", "--target", "approx:1,1e-6", "--sensitivity", "-1"], "sensitivity"),
        (["discrete-laplace", "--target", "pure:1", "--sensitivity", "1.5"], "integer"),
        (["cauchy", "--target", "pure:1"], "cauchy"),
    ],
)
def test_calibrate_bad_input_is_one_line(args: list[str], message: str, run_main: MainRun) -> None:
    code, out, err = run_main(["calibrate", *args])
    assert code != 0
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert message in err


# -- capacity -------------------------------------------------------------------------------------------


def test_capacity_359_against_92_and_26() -> None:
    budget = sdp.ApproxDP(1.0, 1e-6)
    args = ["--budget", "approx:1,1e-6", "--non-adaptive", "--json"]
    got = run_json(["capacity", "exponential:0.025", *args])
    assert (
        got["count"] == 359 == sdp.max_compositions(sdp.Exponential(0.025), budget, adaptive=False)
    )
    assert got["analysis"]["name"] == "ddr20"  # type: ignore[index]
    assert got["analysis"]["epsilon"] <= 1.0  # type: ignore[index]
    assert got["classical"]["reading"] == "PureDP(epsilon=0.025)"  # type: ignore[index]
    assert got["classical"]["count"] == 92  # type: ignore[index]
    # P ∝ exp(0.025·q) on monotone counts: 0.025-BR, but 0.05-DP by sensitivity — the 359 vs 26
    got = run_json(["capacity", "exponential:0.025,monotonic", *args])
    assert got["count"] == 359
    assert got["classical"]["count"] == 26 == sdp.max_compositions(sdp.PureDP(0.05), budget)  # type: ignore[index]
    textbook = got["classical"]["textbook_count"]  # type: ignore[index]
    assert textbook == textbook_count(sdp.PureDP(0.05), 0.0, budget)
    assert textbook <= 26
    # adaptively, DDR20 does not apply
    got = run_json(["capacity", "exponential:0.025", "--budget", "approx:1,1e-6", "--json"])
    assert got["count"] == sdp.max_compositions(sdp.Exponential(0.025), budget) < 359


@pytest.mark.parametrize(
    "item", ["laplace:0.001", "pure:710", "exponential:800", "pure:1e308", "gaussian:1e-300"]
)
def test_capacity_of_an_item_costing_more_than_the_budget_is_zero(item: str) -> None:
    """One run past e^709 (ε > 709) overflowed the textbook count's advanced composition; a
    Gaussian of σ = 1e-300 has ρ = 5e599, whose float() overflowed."""
    got = run_json(["capacity", item, "--budget", "approx:1,1e-6", "--json"])
    assert got["count"] == 0
    assert got["classical"]["textbook_count"] == 0  # type: ignore[index]


def test_capacity_under_pure_and_zcdp_budgets() -> None:
    got = run_json(["capacity", "laplace:10", "--budget", "pure:1", "--json"])
    assert got["count"] == sdp.max_compositions(sdp.Laplace(10.0), sdp.PureDP(1.0))
    # ρ = Δ²/(2σ²) = 1/800 exactly, so 400 runs are exactly 1/2 (the rounded-up floats of
    # 1/800 summed past it and gave 399); likewise 50 · 1/50 = 1 and 10 · (1/10) = 1
    got = run_json(["capacity", "gaussian:20", "--budget", "zcdp:0.5", "--json"])
    assert got["count"] == 400
    assert run_json(["capacity", "gaussian:5", "--budget", "zcdp:1", "--json"])["count"] == 50
    got = run_json(["capacity", "laplace:10", "--budget", "pure:1", "--json"])
    assert got["count"] == 10
    assert got["classical"]["count"] == 10  # type: ignore[index]
    # classical: the 0.1-DP reading of top-10 rounds at 0.01 on monotone counts, as ε²/2-zCDP
    got = run_json(["capacity", "topk:10,0.01,monotonic", "--budget", "zcdp:0.1", "--json"])
    assert got["classical"]["reading"] == "PureDP(epsilon=0.2)"  # type: ignore[index]
    assert got["count"] > 100 * got["classical"]["count"]  # type: ignore[index,operator]


def test_capacity_of_items_with_delta() -> None:
    """An approxzcdp: item (a documented spelling) made the classical row raise NotImplied, and so
    did any δ > 0 item under a zCDP budget."""
    got = run_json(["capacity", "approxzcdp:0.1,1e-7", "--budget", "approx:8,1e-6", "--json"])
    want = sdp.max_compositions(sdp.ApproxZCDP(0.1, 1e-7), sdp.ApproxDP(8.0, 1e-6))
    assert got["count"] == want > 0

    def classical_fits(k: int) -> bool:  # BS16: (kρ, kδᵢ) add; Lemma 3.5 at δ − kδᵢ
        left = 1e-6 - k * 1e-7
        return left > 0 and k * 0.1 + 2 * math.sqrt(k * 0.1 * math.log(1 / left)) <= 8.0

    classical = max(k for k in range(1, 11) if classical_fits(k))
    assert got["classical"]["count"] == classical  # type: ignore[index]
    assert classical <= want
    for item in ("approxzcdp:0.1,1e-7", "approx:0.1,1e-7"):
        got = run_json(["capacity", item, "--budget", "zcdp:1", "--json"])
        assert got["count"] == 0
        assert got["classical"]["count"] == 0  # type: ignore[index]


def test_capacity_text_shows_the_comparison() -> None:
    result = runner.invoke(
        app,
        ["capacity", "exponential:0.025,monotonic", "--budget", "approx:1,1e-6", "--non-adaptive"],
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"sharp\s.*359", result.stdout)
    assert re.search(r"classical\s.*26", result.stdout)
    assert "13.8× the runs" in result.stdout  # 359/26 = 13.807…, rounded down


def test_classical_reading() -> None:
    assert classical_reading(sdp.Exponential(0.1))[0] == sdp.PureDP(0.1)
    assert classical_reading(sdp.TopK(10, 0.01, monotonic=True))[0] == sdp.PureDP(0.2)
    assert classical_reading(sdp.Laplace(2.0))[0] == sdp.PureDP(0.5)
    assert classical_reading(sdp.Gaussian(1.0))[0] is None
    assert classical_reading(sdp.ApproxDP(1.0, 1e-6))[0] == sdp.ApproxDP(1.0, 1e-6)
    # basic composition is exact: 10 · fl(0.1) > 1, so only 9 fit a pure ε = 1
    assert textbook_count(sdp.PureDP(0.1), 0.0, sdp.ApproxDP(1.0, 0.0)) == 9
    assert textbook_count(sdp.PureDP(0.125), 0.0, sdp.ApproxDP(1.0, 0.0)) == 8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gaussian:-1", "--budget", "approx:1,1e-6"], "sigma must be > 0"),
        (["gauss:1", "--budget", "approx:1,1e-6"], "unknown 'gauss'"),
        (["gaussian:1", "--budget", "approx:1,2"], "delta"),
        (["gaussian:1", "--budget", "gdp:1"], "unknown 'gdp'"),
        (["gaussian:1"], "--budget"),
        (["pure:0", "--budget", "approx:1,1e-6"], "free"),
    ],
)
def test_capacity_bad_input_is_one_line(args: list[str], message: str, run_main: MainRun) -> None:
    code, out, err = run_main(["capacity", *args])
    assert code != 0
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert message in err


# -- budget ---------------------------------------------------------------------------------------------


def test_budget_json_reads_every_account(ledger: Path) -> None:
    got = run_json(["budget", str(ledger), "--json"])
    accounts = {(a["analyst"], a["period"]): a for a in got["accounts"]}  # type: ignore[attr-defined]
    assert set(accounts) == {("ana", "all"), ("bob", "2024-01"), ("cy", "all")}
    with sdp.Accountant(None, str(ledger), "ana") as acct:
        summary = acct.summary()
        entries = acct.history()
    ana = accounts[("ana", "all")]
    assert ana["budget"] == repr(sdp.ApproxDP(1.0, 1e-6))
    assert ana["spent"] == summary.spent
    assert ana["remaining"] == summary.remaining
    assert ana["at_delta"] == 1e-6
    assert [s["spent_after"] for s in ana["spends"]] == [e.spent_after for e in entries]
    first, second = ana["spends"]
    assert first["item"] == "Gaussian(sigma=8.0)"
    assert first["cost"] == sdp.compose([sdp.Gaussian(8.0)]).epsilon(1e-6)
    assert first["analysis"] in {"gdp", "mgf", "pld"}
    assert "Dong" in first["theorem"] or first["theorem"]
    assert second["count"] == 3
    assert second["cost"] == sdp.compose([(sdp.Exponential(0.1), 3)]).epsilon(1e-6)
    bob = accounts[("bob", "2024-01")]
    assert bob["budget"] == repr(sdp.PureDP(2.0))
    assert [b["reason"] for b in bob["budget_history"]][-1] == "a larger grant"
    cy = accounts[("cy", "all")]
    assert cy["measure"] == "rho"
    assert cy["spends"][0]["cost"] == pytest.approx(2 / 18, rel=1e-15)
    assert cy["spends"][0]["cost"] >= 2 * (1 / 18)
    assert cy["spends"][0]["analysis"] == "bs16-prop1.6"


def test_budget_filters_and_prints_rounded(ledger: Path) -> None:
    got = run_json(["budget", str(ledger), "--analyst", "bob", "--no-spends", "--json"])
    [bob] = got["accounts"]  # type: ignore[misc]
    assert "spends" not in bob
    result = runner.invoke(app, ["budget", str(ledger), "--analyst", "ana", "--digits", "3"])
    assert result.exit_code == 0, result.output
    with sdp.Accountant(None, str(ledger), "ana") as acct:
        spent, remaining = acct.spent(), acct.remaining()
    assert spent <= printed(r"spent ε = ([0-9.]+)", result.stdout) < spent + 0.01
    assert remaining - 0.01 < printed(r"remaining ([0-9.]+)", result.stdout) <= remaining
    assert "Dong–Roth–Su" in result.stdout  # the legend of the analyses used


def test_budget_never_creates_a_ledger(tmp_path: Path, run_main: MainRun) -> None:
    missing = tmp_path / "missing.sqlite"
    code, out, err = run_main(["budget", str(missing)])
    assert code == 2
    assert "does not exist" in err
    assert not missing.exists()
    bogus = tmp_path / "bogus.sqlite"
    bogus.write_text("not a ledger", encoding="utf-8")
    code, out, err = run_main(["budget", str(bogus)])
    assert code == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert bogus.read_text(encoding="utf-8") == "not a ledger"


def test_budget_unknown_analyst(ledger: Path, run_main: MainRun) -> None:
    code, out, err = run_main(["budget", str(ledger), "--analyst", "zed"])
    assert code == 2  # invalid input (an unknown name), not a refusal
    assert out == ""
    assert "'zed'" in err
    assert "'ana' (period 'all'), 'bob' (period '2024-01'), 'cy' (period 'all')" in err
    # an unknown period lists the periods too (it listed the analysts alone)
    code, _, err = run_main(["budget", str(ledger), "--period", "2099"])
    assert code == 2
    assert "'bob' (period '2024-01')" in err


# -- convert, and errors in general -------------------------------------------------------------------


def test_convert_rounds_up_and_takes_negative_values(run_main: MainRun) -> None:
    result = runner.invoke(app, ["convert", "pure", "1", "--to", "zcdp"])
    assert result.exit_code == 0, result.output
    assert "ρ = 0.462118" in result.stdout  # ε·tanh(ε/2) = 0.46211716 rounded up
    assert "0.462117 " not in result.stdout
    got = run_json(["convert", "zcdp", "0.1", "--to", "approx", "--delta", "1e-5", "--json"])
    assert got["fields"] == {"ε": sdp.ZCDP(0.1).epsilon(1e-5)}
    code, out, err = run_main(["convert", "pure", "-1"])
    assert code == 2  # invalid input, as `convert pure nan` (noticed by the library here)
    assert out == ""
    assert "No such option" not in err
    assert "epsilon must be >= 0, got -1.0" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # unknown options were taken as values: "zcdp takes 1 value(s): rho, got 3"
        (["zcdp", "0.1", "--to", "approx", "--delat", "1e-6"], "no such option: --delat"),
        (["pure", "1", "--bogus"], "no such option: --bogus"),
        (["pure", "-1", "--debug"], "go before the command"),
        # options the conversion does not use were ignored
        (["pure", "1", "--to", "zcdp", "--alpha", "2"], "--alpha is only used with --to rdp"),
        (["pure", "1", "--to", "zcdp", "--delta", "1e-5"], "--delta is only used with --to approx"),
    ],
)
def test_convert_refuses_unknown_and_unused_options(
    args: list[str], message: str, run_main: MainRun
) -> None:
    code, out, err = run_main(["convert", *args])
    assert code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1, err


def test_debug_shows_the_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the traceback, then the same one-line error and exit status as without --debug (it
    # re-raised, exiting 1 where the invalid input exits 2)
    monkeypatch.setattr(sys, "argv", ["sharpdp", "--debug", "convert", "pure", "-1"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "InvalidParameter: epsilon must be >= 0" in err
    assert err.strip().splitlines()[-1].startswith("error: epsilon must be >= 0")


def test_a_list_of_choices_is_one_line(run_main: MainRun, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    code, _, err = run_main(["query", str(table)])
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "count-by" in err


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (KeyboardInterrupt(), 130, "error: interrupted"),
        (RuntimeError("Query interrupted"), 130, "error: interrupted"),
        (NotImplementedError("grouping by 'interrupt_reason' is not supported"), 1, "unexpected"),
        (RuntimeError("worker pool: uninterruptible wait failed"), 1, "unexpected"),
    ],
    ids=["signal", "engine", "mentions-1", "mentions-2"],
)
def test_an_interrupt_exits_130_and_nothing_else_does(
    error: BaseException,
    code: int,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ctrl-C reaches the command as KeyboardInterrupt (click's Abort), or, during a query, as
    # DuckDB's own "Query interrupted" error, which exited 1 as an unexpected RuntimeError; an
    # error that merely mentions an interruption is still a failure (exit 1, its message shown)
    import sharpdp.cli as cli

    def raising(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(cli, "app", raising)
    monkeypatch.setattr(sys, "argv", ["sharpdp", "demo"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == code
    assert message in capsys.readouterr().err


def test_an_interrupt_inside_a_command_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # typer catches a KeyboardInterrupt raised inside a command and returns 130: the command
    # exited 130 with nothing printed
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sdp, "calibrate", interrupted)
    monkeypatch.setattr(sys, "argv", ["sharpdp", "calibrate", "gaussian", "--target", "zcdp:1"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 130
    assert capsys.readouterr().err.strip() == "error: interrupted"


@pytest.mark.parametrize(
    "args",
    [
        ["demo", "--level", "2"],
        ["demo", "--budget", "approx:nan,1e-6"],
        ["demo", "--budget", "approx:1,2"],
        ["demo", "--budget", "pure:-1"],
        ["demo", "--seed", "-1"],
        ["convert", "pure", "nan"],
        ["convert", "pure", "1", "--to", "approx", "--delta", "2"],
        ["convert", "pure", "1", "--digits", "0"],
    ],
)
def test_bad_input_fails_fast_in_one_line(args: list[str], run_main: MainRun) -> None:
    code, out, err = run_main(args)
    assert code != 0
    assert out == ""  # nothing ran
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["bogus"], "(see sharpdp --help)"),
        (["compose", "--bogus"], "(see sharpdp compose --help)"),
        (["plot", "capacity", "--bogus"], "(see sharpdp plot capacity --help)"),
        (["query", "x.csv", "quantile", "--bogus"], "(see sharpdp query --help)"),
    ],
)
def test_usage_errors_point_to_the_help_of_the_command_that_refused(
    args: list[str], hint: str, run_main: MainRun
) -> None:
    code, _, err = run_main(args)
    assert code == 2
    assert err.strip().endswith(hint), err


# -- the installed entry point (each call costs about a second) ----------------------------------------


def test_contract_invocations_as_subprocesses(plan: Path, ledger: Path) -> None:
    def run(*args: str) -> dict[str, object]:
        out = subprocess.run([*script(), *args], capture_output=True, text=True, check=True)
        assert out.stderr == ""  # no progress bar, nothing else, when not on a terminal
        result: dict[str, object] = json.loads(out.stdout)
        return result

    got = run("compose", str(plan), "--delta", "1e-6", "--json")
    assert got["epsilon"] == sdp.compose(PLAN_ITEMS).epsilon(1e-6)
    got = run("calibrate", "gaussian", "--target", "approx:1,1e-6", "--json")
    assert got["sigma"] == sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(1.0, 1e-6)).sigma  # type: ignore[attr-defined]
    got = run(
        "capacity", "exponential:0.025", "--budget", "approx:1,1e-6", "--non-adaptive", "--json"
    )
    assert got["count"] == 359
    got = run("budget", str(ledger), "--json")
    assert len(got["accounts"]) == 3  # type: ignore[arg-type]


def test_bad_input_as_a_subprocess() -> None:
    for args in (["convert", "pure", "-1"], ["capacity", "gaussian:-1", "--budget", "pure:1"]):
        out = subprocess.run([*script(), *args], capture_output=True, text=True)
        assert out.returncode != 0
        assert out.stdout == ""
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1, out.stderr
        assert lines[0].startswith("error: ")
        assert "Traceback" not in out.stderr
        assert "No such option" not in out.stderr


def test_convert_to_rdp_shows_the_order_asked_for() -> None:
    """--alpha 5 shows ε(α=5) = 5/(2σ²) for the Gaussian (Mironov 2017), in the text and the JSON
    (it was used only to rank the routes; the table showed the default orders)."""
    got = run_json(["convert", "gaussian", "1", "--to", "rdp", "--alpha", "5", "--json"])
    assert list(got["fields"]) == ["ε(α=5)"]  # type: ignore[call-overload]
    assert 2.5 <= got["fields"]["ε(α=5)"] <= 2.5 * (1 + 1e-12)  # type: ignore[index]
    result = runner.invoke(app, ["convert", "gaussian", "1", "--to", "rdp", "--alpha", "5"])
    assert "ε(α=5) = 2.5" in result.output
    assert "α=8" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["convert", "pure", "-1"],  # refused by the library
        ["convert", "pure", "nan"],  # refused by the command line
        ["convert", "pure:abc"],
        ["compose", "--delta", "-1", "nothing.toml"],
        ["calibrate", "gaussian", "--target", "pure:-1"],
    ],
)
def test_invalid_input_exits_2_whichever_layer_notices_it(
    args: list[str], run_main: MainRun
) -> None:
    code, out, err = run_main(args)
    assert code == 2, err
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err


def test_a_refused_request_exits_1(run_main: MainRun) -> None:
    """A valid request with no answer (no zCDP bound follows from (ε, δ)-DP) is a refusal."""
    code, _out, err = run_main(["convert", "approx", "1", "1e-6", "--to", "zcdp"])
    assert code == 1, err
    assert "implies no ZCDP" in err


@pytest.mark.parametrize(
    ("blocked", "code", "message"),
    [
        # the script is installed with the core package: without the cli extra it raised a
        # ModuleNotFoundError traceback
        ("typer", "from sharpdp.__main__ import main; main()", "needs the cli extra"),
        ("pandas", "import sharpdp as sdp; sdp.data", "pip install 'sharpdp[data]'"),
    ],
)
def test_a_missing_extra_is_named(blocked: str, code: str, message: str) -> None:
    script = f"import sys; sys.modules[{blocked!r}] = None; {code}"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0
    assert message in done.stderr
    if blocked == "typer":
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
