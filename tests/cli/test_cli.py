"""The ``sharpdp`` command, through typer's runner and as a real subprocess (the installed script)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import sharpdp as sdp
from sharpdp._format import lower, upper
from sharpdp.cli import app

runner = CliRunner()


def run_json(args: list[str]) -> dict[str, object]:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


#: The ``run_main`` fixture (tests/cli/conftest.py): ``sharpdp ARGS`` → (code, stdout, stderr).
MainRun = Callable[[list[str]], tuple[int, str, str]]


def script() -> list[str]:
    """The installed console script, or ``python -m sharpdp`` where none is on the PATH."""
    found = shutil.which("sharpdp", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "sharpdp"]


@pytest.fixture(scope="module")
def people_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "visits.csv"
    rows = [(f"p{i}", "abc"[i % 3], i % 7) for i in range(300)] + [(None, "a", 1)]
    pd.DataFrame(rows, columns=["who", "shop", "spent"]).to_csv(path, index=False)
    return path


#: A sum clamped per person (every row counts: --max-rows does not apply).
_SUM_PER_PERSON = ["sum", "spent", "--bounds", "0,9", "--unit", "who", "--clamp", "person"]


def _same_session(path: Path, seed: int) -> sdp.data.Session:
    """The session ``sharpdp query`` opens on ``path`` with ``--drop-null-units --seed``."""
    return sdp.data.Session(
        str(path),
        privacy_unit="who",
        budget=sdp.ApproxDP(1.0, 1e-6),
        null_units="drop",
        seed=seed,
    )


def test_version_and_help() -> None:
    for command in (script(), [sys.executable, "-m", "sharpdp.cli"]):
        out = subprocess.run([*command, "--version"], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == f"sharpdp {sdp.__version__}"
    for flag in ("-h", "--help"):
        out = subprocess.run([*script(), flag], capture_output=True, text=True, check=True)
        assert "demo" in out.stdout
        assert "query" in out.stdout


def test_query_json_matches_a_session_with_the_same_seed(people_csv: Path) -> None:
    args = [
        str(people_csv),
        "count-by",
        "shop",
        "--unit",
        "who",
        "--privacy",
        "pure:0.5",
        "--keys",
        "a,b,c",
        "--seed",
        "7",
        "--drop-null-units",
        "--json",
    ]
    result = runner.invoke(app, ["query", *args])
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    want = (
        _same_session(people_csv, seed=7)
        .count_by("shop", keys=["a", "b", "c"], privacy=sdp.PureDP(0.5))
        .run(rng=7)
        .to_pandas()
    )
    assert [r["count"] for r in got["rows"]] == want["count"].tolist()
    assert [r["lower"] for r in got["rows"]] == want["lower"].tolist()
    # a 0.5-DP discrete Laplace, read at the budget's δ = 1e-6 (its exact profile: just below 0.5)
    assert got["cost"] == pytest.approx(0.5, rel=1e-4)
    assert got["cost"] <= 0.5


def test_query_prints_bounds_to_its_digits(people_csv: Path) -> None:
    """``--digits 3``: the interval's ends rounded outward to 3 significant digits (the mean
    itself is a release, printed as it is), the cost rounded up."""
    args = ["query", str(people_csv), "mean", "spent", "--unit", "who", "--drop-null-units"]
    args += ["--bounds", "0,6", "--privacy", "pure:0.5", "--seed", "3", "--digits", "3"]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    query = _same_session(people_csv, seed=3).mean("spent", bounds=(0, 6), privacy=sdp.PureDP(0.5))
    frame = query.run(rng=3).to_pandas()
    lo, hi = float(frame["lower"].iloc[0]), float(frame["upper"].iloc[0])
    assert f"{lower(lo, 3)} " in result.output
    assert f"{upper(hi, 3)} " in result.output
    assert len(lower(lo, 3).replace("-", "").replace(".", "").lstrip("0")) <= 3
    # the cost, 0.5-DP read at δ = 1e-6 (just below 0.5), rounded up to 3 digits
    assert "cost ε = 0.5 " in result.output


def test_query_spends_from_a_ledger_and_then_refuses(people_csv: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "b.sqlite"
    args = [
        *script(),
        "query",
        str(people_csv),
        "count",
        "--unit",
        "who",
        "--drop-null-units",
        "--privacy",
        "pure:0.6",
        "--budget",
        "pure:1",
        "--ledger",
        str(ledger),
    ]
    first = subprocess.run(args, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(args, capture_output=True, text=True)
    assert second.returncode == 1
    lines = [line for line in (second.stdout + second.stderr).splitlines() if line.strip()]
    assert len(lines) <= 3, lines  # a short message, no traceback
    assert "Traceback" not in second.stdout + second.stderr
    assert "budget" in (second.stdout + second.stderr).lower()


def test_query_uses_the_ledgers_budget_unless_told(people_csv: Path, tmp_path: Path) -> None:
    """The first query records --budget; later ones without --budget use it; another --budget is
    refused (exit 1, naming both budgets)."""
    ledger = tmp_path / "b.sqlite"
    runner = CliRunner()
    base = ["query", str(people_csv), "count", "--unit", "who", "--drop-null-units"]
    base += ["--ledger", str(ledger), "--privacy", "pure:0.6", "--json"]
    assert runner.invoke(app, [*base, "--budget", "pure:1.3"]).exit_code == 0
    assert runner.invoke(app, base).exit_code == 0  # 1.2 of the recorded 1.3
    over = runner.invoke(app, base)  # the app raises; sharpdp's main() prints it as one line
    assert isinstance(over.exception, sdp.BudgetExceeded)
    other = runner.invoke(app, [*base, "--budget", "pure:5"])
    assert isinstance(other.exception, sdp.LedgerError)
    assert "PureDP(epsilon=1.3)" in str(other.exception)
    assert "PureDP(epsilon=5.0)" in str(other.exception)
    assert "leave --budget out" in str(other.exception)  # the way out at the terminal


def test_query_explain_writes_nothing_and_prices_against_the_recorded_budget(
    people_csv: Path, tmp_path: Path
) -> None:
    """--explain with a ledger that does not exist creates no file; with one that records the
    analyst's budget, it prices against that budget (the remaining ε after the spend is read from
    it) and leaves the history as it was."""
    ledger = tmp_path / "b.sqlite"
    runner = CliRunner()
    base = ["query", str(people_csv), "count", "--unit", "who", "--drop-null-units"]
    base += ["--ledger", str(ledger), "--privacy", "pure:0.6"]
    assert runner.invoke(app, [*base, "--explain"]).exit_code == 0
    assert not ledger.exists()
    assert runner.invoke(app, [*base, "--budget", "pure:1.3"]).exit_code == 0
    before = sdp.Ledger(str(ledger)).history("default", "all").entries
    out = runner.invoke(app, [*base, "--explain"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "budget PureDP(epsilon=1.3): spent 0.6 → 1.2" in out.output
    assert sdp.Ledger(str(ledger)).history("default", "all").entries == before == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["count-by", "nope", "--unit", "who", "--drop-null-units"], "nope"),
        (["count", "--unit", "who"], "NULL"),
        (["count", "--unit", "who", "--privacy", "pure:-1", "--drop-null-units"], "epsilon"),
        (["count", "--unit", "who", "--privacy", "approx:nan,1e-6"], "--privacy"),
        (["sum", "spent", "--unit", "who", "--drop-null-units"], "--bounds"),
        (["count", "--privacy", "pure:1"], "--unit"),
        # brackets in a message are text, not rich markup (they used to vanish)
        (["count-by", "[bold]x[/bold]", "--unit", "who", "--drop-null-units"], "[bold]x[/bold]"),
        (["count", "--unit", "who"], "--drop-null-units"),  # the option, not the Python keyword
        (["count-by", "spent", "--unit", "who", "--drop-null-units", "--keys", "1,x"], "'x'"),
        (["count-by", "shop,spent", "--unit", "who", "--drop-null-units", "--keys", "a"], "':'"),
        (["sum", "spent", "--bounds", "0,9", "--unit", "who", "--clamp", "foo"], "--clamp"),
        (["count-by", "shop", "--by", "spent", "--unit", "who", "--keys", "a"], "--by"),
        (["quantile", "spent", "--bounds", "0,9", "--unit", "who", "--keys", "1"], "--keys"),
        (["quantile", "spent", "--bounds", "0,9", "--unit", "who", "--support", "x"], "--support"),
        (["count", "--unit", "who", "--drop-null-units", "--support", "points"], "--support"),
        (["count", "--unit", "who", "--drop-null-units", "--privacy", "pure:inf"], "finite"),
        # options and arguments a query does not use are refused, not ignored
        (["count", "spent", "--unit", "who", "--drop-null-units"], "count takes no COLUMN"),
        (["mean", "spent", "--bounds", "0,9", "--unit", "who", "--q", "0.9"], "--q does not"),
        (["count-by", "shop", "--unit", "who", "--k", "3"], "--k does not apply"),
        (["count", "--unit", "who", "--max-groups", "2"], "--max-groups does not apply"),
        (["quantile", "spent", "--bounds", "0,9", "--unit", "who", "--max-groups", "2"], "--max"),
        ([*_SUM_PER_PERSON, "--max-rows", "5"], "--max-rows does not apply to sum --clamp person"),
        # float() took "1_0" as 10 and other scripts' digits as numbers
        (["sum", "spent", "--bounds", "0,1_0", "--unit", "who"], "comma-separated numbers"),
        (["sum", "spent", "--bounds", "0,\u0661\u0660", "--unit", "who"], "comma-separated"),
        # each row is a person: caps, person clamping and dropping units were ignored
        (["sum", "spent", "--bounds", "0,9", "--row-level", "--max-rows", "5"], "--row-level"),
        (["count-by", "shop", "--row-level", "--max-groups", "7"], "--max-groups does not"),
        (["count", "--row-level", "--drop-null-units"], "--drop-null-units does not apply"),
        (
            ["sum", "spent", "--bounds", "0,9", "--row-level", "--clamp", "person"],
            "--clamp person does not apply",
        ),
        # the library's keyword arguments are named as this command's options
        (
            ["count-by", "shop", "--unit", "who", "--drop-null-units", "--max-rows", "0"],
            "--max-rows must be",
        ),
        (
            [
                "sum",
                "spent",
                "--bounds",
                "0,9",
                "--unit",
                "who",
                "--drop-null-units",
                "--keys",
                "a",
            ],
            "--keys is only used with --by",
        ),
        (
            ["count", "--unit", "who", "--drop-null-units", "--privacy", "pure:1e308"],
            "integer noise",
        ),
    ],
)
def test_bad_input_is_one_line_and_a_nonzero_exit(
    people_csv: Path, extra: list[str], message: str, run_main: MainRun
) -> None:
    code, out, err = run_main(["query", str(people_csv), *extra])
    assert code != 0
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert message in err


def test_bad_input_from_the_installed_script_is_one_line(people_csv: Path) -> None:
    """The same in a process of its own (the console script as installed)."""
    extra = ["count-by", "nope", "--unit", "who", "--drop-null-units"]
    out = subprocess.run(
        [*script(), "query", str(people_csv), *extra], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "nope" in out.stderr


def test_keys_are_typed_by_their_column(people_csv: Path, tmp_path: Path) -> None:
    """--keys on an integer column are integers (they were text: the engine failed after the
    spend); several key columns take one value each, separated by ':'. Nothing is spent on a
    refusal."""
    ledger = tmp_path / "k.sqlite"
    base = ["query", str(people_csv), "--unit", "who", "--drop-null-units", "--json"]
    base += ["--ledger", str(ledger), "--privacy", "pure:0.5", "--seed", "3"]
    out = runner.invoke(app, [*base[:2], "count-by", "spent", *base[2:], "--keys", "1,2,40"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["rows"]
    assert [r["spent"] for r in rows] == [1, 2, 40]
    out = runner.invoke(app, [*base[:2], "count-by", "shop,spent", *base[2:], "--keys", "a:1,b:2"])
    assert out.exit_code == 0, out.output
    assert [(r["shop"], r["spent"]) for r in json.loads(out.stdout)["rows"]] == [("a", 1), ("b", 2)]
    bad = runner.invoke(app, [*base[:2], "count-by", "spent", *base[2:], "--keys", "1,x"])
    assert bad.exit_code != 0
    with sdp.Accountant(None, str(ledger), "default") as account:
        assert len(account.history()) == 2


def test_json_dates_are_iso_text(tmp_path: Path) -> None:
    path = tmp_path / "days.csv"
    days = ["2020-01-01", "2020-01-02"]
    pd.DataFrame({"who": range(40), "day": days * 20}).to_csv(path, index=False)
    args = ["query", str(path), "count-by", "day", "--unit", "who", "--keys", ",".join(days)]
    out = runner.invoke(app, [*args, "--json", "--privacy", "pure:1"])
    assert out.exit_code == 0, out.output
    # ISO text (not epoch ms), written as the service writes it (pandas' writer added
    # ".000000000" to every date)
    assert [r["day"] for r in json.loads(out.stdout)["rows"]] == [f"{d}T00:00:00" for d in days]


def test_query_json_keeps_timestamps_to_the_microsecond(tmp_path: Path) -> None:
    """``--json`` is full precision: a timestamp key keeps its microseconds (pandas' JSON writer
    cut them to milliseconds)."""
    path = tmp_path / "times.parquet"
    stamp = pd.Timestamp("2021-06-01 12:30:15.123456")
    pd.DataFrame({"who": [f"p{i}" for i in range(300)], "ts": [stamp] * 300}).to_parquet(path)
    args = ["query", str(path), "count-by", "ts", "--unit", "who", "--privacy", "approx:0.9,1e-7"]
    result = runner.invoke(app, [*args, "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    assert [r["ts"][:26] for r in rows] == ["2021-06-01T12:30:15.123456"]


def test_quantile_support_points_releases_the_tied_median(people_csv: Path) -> None:
    """spent = i mod 7 over 300 persons: ranks [129, 172] sit at 3, so the median is the tie at 3
    (qn = 150). At ε = 10 (c = 10 per rank) --support points releases 3 (every other point is ≥ 21
    ranks away: P[other] ≤ 9·e^{−210}); Smith's cells release a midpoint, 2.5 or 3.5 (the
    cells beside the tie are 21 and 22 ranks away, every other ≥ 64: P[other] ≤ 7·e^{−430})."""
    base = ["query", str(people_csv), "quantile", "spent", "--bounds", "0,9", "--unit", "who"]
    base += ["--drop-null-units", "--privacy", "pure:10", "--budget", "pure:10", "--json"]
    runner = CliRunner()
    points = runner.invoke(app, [*base, "--support", "points", "--seed", "1"])
    assert points.exit_code == 0, points.output
    assert json.loads(points.output)["rows"][0]["quantile"] == 3.0
    cells = runner.invoke(app, [*base, "--seed", "1"])
    assert cells.exit_code == 0, cells.output
    assert json.loads(cells.output)["rows"][0]["quantile"] in (2.5, 3.5)


def test_text_that_looks_like_markup_prints_as_itself(tmp_path: Path, run_main: MainRun) -> None:
    """Column names and keys are the data's text: "[/c]" as a column failed in the terminal's
    markup parser after the spend (its release lost, its budget gone); "[bold]y" lost its tag."""
    path = tmp_path / "markup.csv"
    rows = [(i, "[/c]" if i % 2 else "[bold]y") for i in range(60)]
    pd.DataFrame(rows, columns=["pid", "[/c]"]).to_csv(path, index=False)
    ledger = tmp_path / "m.sqlite"
    args = ["query", str(path), "count-by", "[/c]", "--unit", "pid", "--keys", "[/c],[bold]y"]
    args += ["--privacy", "pure:0.1", "--budget", "pure:1", "--ledger", str(ledger)]
    code, out, err = run_main([*args, "--explain"])
    assert code == 0, err
    assert "count_by(['[/c]']" in out
    code, out, err = run_main(args)
    assert code == 0, err
    assert "[bold]y" in out
    assert "[/c]" in out
    history = sdp.Accountant(budget=sdp.PureDP(1.0), ledger=str(ledger)).history()
    assert len(history) == 1


def test_query_names_the_budgets_currency(people_csv: Path, run_main: MainRun) -> None:
    """Under a zCDP budget the cost is ρ (it was labelled ε); --json says which."""
    args = ["query", str(people_csv), "count", "--unit", "who", "--drop-null-units"]
    args += ["--budget", "zcdp:0.1", "--privacy", "zcdp:0.01"]
    code, out, err = run_main(args)
    assert code == 0, err
    assert "cost ρ = 0.01" in out
    assert "cost ε" not in out
    code, out, err = run_main([*args, "--json"])
    assert code == 0, err
    assert json.loads(out)["measure"] == "rho"
    code, out, err = run_main([*args[:-4], "--json"])
    assert json.loads(out)["measure"] == "epsilon"


@pytest.mark.parametrize("content", [b"hello", b"PAR1" + bytes(200)])
def test_a_file_that_is_not_parquet_is_bad_input(
    content: bytes, tmp_path: Path, run_main: MainRun
) -> None:
    path = tmp_path / "fake.parquet"
    path.write_bytes(content)
    code, out, err = run_main(["query", str(path), "count", "--unit", "pid"])
    assert (code, out) == (2, "")
    assert err.startswith("error: table: cannot read")
    assert "as Parquet" in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_null_key_prints_as_null_not_as_the_text_nan(tmp_path: Path, run_main: MainRun) -> None:
    """pandas holds a missing text key as NaN, which printed as "nan", the text of a real key."""
    path = tmp_path / "nulls.csv"
    keys = ["nan"] * 100 + [None] * 100 + ["x"] * 100
    pd.DataFrame({"who": range(300), "k": keys}).to_csv(path, index=False)
    args = ["query", str(path), "count-by", "k", "--unit", "who", "--seed", "0"]
    code, out, err = run_main([*args, "--privacy", "approx:5,1e-7", "--budget", "approx:9,1e-6"])
    assert code == 0, err
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if "│" in line]
    assert sorted(row[0] for row in cells) == ["NULL", "nan", "x"]
    s = sdp.data.Session(str(path), "who", sdp.ApproxDP(9.0, 1e-6))
    shown = str(s.count_by("k", keys=None, privacy=sdp.ApproxDP(5.0, 1e-7)).run(rng=0))
    assert sorted(line.split()[0] for line in shown.splitlines()[2:5]) == ["NULL", "nan", "x"]


def test_keys_with_commas_and_colons_are_escaped(tmp_path: Path, run_main: MainRun) -> None:
    """A value holding ':' (a time) in a key of several columns, or ',' in any key, had no way
    through --keys; '\\:' and '\\,' write them."""
    path = tmp_path / "escaped.csv"
    rows = [(i, "05:00" if i % 2 else "06:30", "a,b" if i % 3 else "c") for i in range(120)]
    pd.DataFrame(rows, columns=["who", "at", "tag"]).to_csv(path, index=False)
    keys = r"05\:00:a\,b,06\:30:c"
    args = ["query", str(path), "count-by", "at,tag", "--unit", "who", "--keys", keys]
    code, out, err = run_main([*args, "--privacy", "pure:50", "--budget", "pure:60", "--json"])
    assert code == 0, err
    got = {(r["at"], r["tag"]): r["count"] for r in json.loads(out)["rows"]}
    assert set(got) == {("05:00:00", "a,b"), ("06:30:00", "c")}  # (the CSV's times, as TIME)
    assert abs(got[("05:00:00", "a,b")] - 40) <= 2  # odd i not divisible by 3: 40 persons
    code, out, err = run_main(
        ["query", str(path), "count-by", "tag", "--unit", "who", "--keys", r"a\,b,c", "--json"]
    )
    assert code == 0, err
    assert sorted(r["tag"] for r in json.loads(out)["rows"]) == ["a,b", "c"]


@pytest.mark.parametrize("command", ["query", "demo"])
def test_a_ledger_in_a_missing_directory_or_a_directory_is_bad_input(
    command: str, people_csv: Path, tmp_path: Path, run_main: MainRun
) -> None:
    # as `budget` and `plot` treat their ledger argument: exit 2, with the option named (it was
    # the library's LedgerError, exit 1, a refusal)
    head = ["query", str(people_csv), "count", "--unit", "who"] if command == "query" else ["demo"]
    for ledger, words in (
        (tmp_path / "nodir" / "x.sqlite", "does not exist"),
        (tmp_path, "not a regular file"),
    ):
        code, out, err = run_main([*head, "--ledger", str(ledger)])
        assert code == 2, err
        assert "--ledger" in err
        assert words in err
        assert out == ""
    assert not (tmp_path / "nodir").exists()


def test_over_the_default_budget_says_where_the_budget_came_from(
    people_csv: Path, run_main: MainRun
) -> None:
    # the analyst never chose ApproxDP(1, 1e-6): the refusal named it with no way out
    args = ["query", str(people_csv), "count", "--unit", "who", "--drop-null-units"]
    args += ["--privacy", "pure:2"]
    code, out, err = run_main(args)
    assert code == 1
    assert "the default budget --budget approx:1,1e-6: pass --budget" in err
    assert out == ""
    code, _, err = run_main([*args, "--budget", "pure:1"])
    assert code == 1
    assert "default budget" not in err


def test_query_and_budget_read_the_same_odometer(people_csv: Path, tmp_path: Path) -> None:
    """`query` printed Accountant.epsilon(δ) (compose's default accuracy) where `budget` and the
    service print Accountant.spent(): two values, ~1e-6 apart, for one ledger."""
    ledger = tmp_path / "b.sqlite"
    base = ["query", str(people_csv), "--unit", "who", "--drop-null-units", "--json"]
    base += ["--ledger", str(ledger), "--budget", "approx:1,1e-6"]
    run_json([*base[:2], "count", *base[2:], "--privacy", "zcdp:0.01"])
    run_json([*base[:2], "mean", "spent", "--bounds", "0,100", *base[2:], "--privacy", "pure:0.2"])
    last = run_json([*base[:2], "count", *base[2:], "--privacy", "approx:0.2,1e-8"])
    with sdp.Accountant(None, str(ledger), "default") as account:
        assert last["spent"] == account.spent()
    shown = run_json(["budget", str(ledger), "--json"])
    assert str(last["spent"]) in json.dumps(shown)


@pytest.mark.parametrize("budget", ["pure:inf", "pure:1e999", "approx:1e999,1e-6", "zcdp:inf"])
def test_a_budget_without_limit_is_bad_input(
    budget: str, people_csv: Path, tmp_path: Path, run_main: MainRun
) -> None:
    # the service refused these; the CLI recorded PureDP(inf) in the ledger, and then accepted
    # any spend from it
    ledger = tmp_path / "b.sqlite"
    head = ["query", str(people_csv), "count", "--unit", "who", "--drop-null-units"]
    code, out, err = run_main([*head, "--budget", budget, "--ledger", str(ledger)])
    assert code == 2, err
    assert "finite" in err
    assert out == ""
    assert not ledger.exists()
    plot = ["plot", "capacity", "laplace:1", "-o", str(tmp_path / "c.png")]
    for command in (["demo"], ["capacity", "laplace:1"], plot):
        code, _, err = run_main([*command, "--budget", budget])
        assert code == 2, (command, err)
        assert "a budget must have finite parameters" in err
