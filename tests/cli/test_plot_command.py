"""``sharpdp plot``: the files written are valid PNG/SVG/PDF, and the figures hold the library's values.

The figure each command draws is caught on its way to :func:`sharpdp.plots.save` and read back
from its artists (lines by ``gid``); the expected values come from the library directly.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from typer.testing import CliRunner

import sharpdp as sdp
import sharpdp.cli.plot  # registers `plot` on the shared app
from sharpdp.cli._common import app

runner = CliRunner()


def _flat(output: str) -> str:
    """The words of a command's output, without the error panel's borders: rich wraps the panel
    at a width that depends on the temporary path in the message, anywhere in a sentence."""
    return " ".join(re.sub("[\u2500-\u257f]", " ", output).split())


PLAN = """
[[item]]
mechanism = "gaussian"
sigma = 5
count = 100

[[item]]
mechanism = "exponential"
epsilon = 0.1
monotonic = true
count = 10
"""


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """The figures the commands save (they are still written)."""
    figures: list[Figure] = []
    save = sdp.plots.save

    def keep(figure: Figure, path: Any, **kwargs: Any) -> Path:
        figures.append(figure)
        return save(figure, path, **kwargs)

    monkeypatch.setattr(sdp.plots, "save", keep)
    return figures


def lines(fig: Figure) -> dict[str, Any]:
    return {str(ln.get_gid()): ln for ax in fig.axes for ln in ax.get_lines() if ln.get_gid()}


def invoke(*args: str) -> Any:
    result = runner.invoke(app, ["plot", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_renyi_writes_a_pdf(tmp_path: Path, drawn: list[Figure]) -> None:
    out = tmp_path / "renyi.pdf"
    result = invoke("renyi", "br:1", "zcdp:0.125", "-o", str(out))
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    assert data.startswith(b"%PDF-")
    assert data.rstrip().endswith(b"%%EOF")
    assert len(drawn) == 1


def test_capacity_writes_a_png_of_the_library_values(tmp_path: Path, drawn: list[Figure]) -> None:
    out = tmp_path / "capacity.png"
    result = invoke(
        "capacity", "exponential:0.025", "--budget", "approx:1,1e-6", "--max-k", "100",
        "--non-adaptive", "-o", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 5_000
    (fig,) = drawn
    ddr20 = lines(fig)["ddr20"]
    ks = list(ddr20.get_xdata())
    assert (ks[0], ks[-1]) == (1, 100)
    for k, value in zip(ks, ddr20.get_ydata(), strict=True):
        ex = sdp.compose([(sdp.Exponential(0.025), k)], adaptive=False).explain(delta=1e-6)
        assert value == next(r.value for r in ex.rows if r.name == "ddr20")
    assert list(lines(fig)["budget"].get_ydata()) == [1.0, 1.0]


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_profile_of_a_plan_writes_an_svg(tmp_path: Path, drawn: list[Figure], suffix: str) -> None:
    plan = tmp_path / f"plan{suffix}"
    if suffix == ".toml":
        plan.write_text(PLAN, encoding="utf-8")
    else:
        items = [
            {"mechanism": "gaussian", "sigma": 5, "count": 100},
            {"mechanism": "exponential", "epsilon": 0.1, "monotonic": True, "count": 10},
        ]
        plan.write_text(json.dumps({"item": items}), encoding="utf-8")
    out = tmp_path / "profile.svg"
    result = invoke("profile", str(plan), "--epsilons", "1,4,8", "-o", str(out))
    assert result.exit_code == 0, result.output
    root = ET.parse(out).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    (fig,) = drawn
    c = sdp.compose([(sdp.Gaussian(5.0), 100), (sdp.Exponential(0.1, monotonic=True), 10)])
    winners = [c.explain(epsilon=e).winner.value for e in (1.0, 4.0, 8.0)]
    np.testing.assert_array_equal(lines(fig)["sharpest"].get_ydata(), winners)
    # each analysis' line is an element of the SVG, named by its gid
    ids = {el.get("id") for el in root.iter()}
    assert {"sharpest", "rdp", "mgf"} <= ids  # (the PLD is superseded by mgf: not drawn)


def test_renyi_and_budget(tmp_path: Path, drawn: list[Figure]) -> None:
    result = invoke(
        "renyi", "br:1", "zcdp:0.125", "--max-alpha", "64", "-o", str(tmp_path / "r.png")
    )
    assert result.exit_code == 0, result.output
    (fig,) = drawn
    br = lines(fig)["renyi-0"]
    alphas = br.get_xdata()
    assert alphas[0] == 1.0
    assert alphas[-1] == pytest.approx(64.0)
    for a in alphas[::20]:
        assert br.get_ydata()[list(alphas).index(a)] == sdp.BoundedRange(1.0).renyi(a)
    ledger = tmp_path / "ledger.sqlite"
    acc = sdp.Accountant(budget=sdp.ApproxDP(1.0, 1e-6), ledger=str(ledger), analyst="ann")
    acc.spend(sdp.Gaussian(10.0))
    acc.spend(sdp.Gaussian(10.0))
    result = invoke("budget", str(ledger), "-o", str(tmp_path / "b.svg"))
    assert result.exit_code == 0, result.output
    spent = lines(drawn[1])["spent:ann:all:epsilon"]
    with sdp.Ledger(ledger) as opened:
        assert list(spent.get_ydata()) == [0.0, *(e.spent_after for e in opened.entries())]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["capacity", "exponential:0.1", "-o", "x.gif"], 2, "must end in .png, .svg or .pdf"),
        (["capacity", "expo:0.1", "-o", "x.png"], 2, "unknown 'expo'"),
        (["capacity", "gaussian:1,2,3", "-o", "x.png"], 2, "gaussian takes gaussian:sigma"),
        (
            ["capacity", "gaussian:1", "--budget", "zcdp:1", "-o", "x.png"],
            None,
            "ApproxDP or PureDP",
        ),
        (["capacity", "gaussian:-1", "-o", "x.png"], 2, "sigma must be > 0"),
        (["renyi", "br:nan", "-o", "x.png"], 2, "eta must be a number, got NaN"),
        (["renyi", "br:1,2", "-o", "x.png"], 2, "br takes br:eta"),
        # (matplotlib's "cannot be log-scaled" ValueError, exit 1, before)
        (["renyi", "approx:1,1e-6", "-o", "x.png"], None, "has no finite Rényi bound"),
        (["renyi", "gaussian:1e-200", "-o", "x.png"], None, "D_α past the floats"),
        (
            ["capacity", "gaussian:1e-200", "--budget", "approx:1,1e-6", "-o", "x.png"],
            None,
            "nothing to draw",
        ),
        (["profile", "missing.toml", "-o", "x.png"], 2, "cannot read"),
    ],
)
def test_bad_input_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int | None, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plot", *args])
    if code is None:  # refused by the library (InvalidParameter) while parsing
        assert isinstance(result.exception, sdp.InvalidParameter)
        assert message in str(result.exception)
    else:
        assert result.exit_code == code
        assert message in _flat(result.output)
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ('[[item]]\nmechanism = "nope"\n', "'mechanism' must be one of"),
        ('[[item]]\nmechanism = "gaussian"\n', "gaussian needs sigma"),
        ('[[item]]\nmechanism = "gaussian"\nsigma = 1\ncount = 0\n', "count must be an integer"),
        ('[[item]]\nmechanism = "gaussian"\nsigma = 1\nnoise = 2\n', "gaussian takes no 'noise'"),
        ("adaptive = true\n", "lists no items"),
        ("[[item]\n", "TOML"),
    ],
)
def test_bad_plans_are_named(tmp_path: Path, plan: str, message: str) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(plan, encoding="utf-8")
    result = runner.invoke(app, ["plot", "profile", str(path), "-o", str(tmp_path / "p.png")])
    assert result.exit_code == 2
    assert message in _flat(result.output)


def test_without_matplotlib_the_hint_names_the_extra(tmp_path: Path) -> None:
    """Without matplotlib, one line names the extra to install (``sharpdp[plot]``, brackets kept:
    rich markup once swallowed ``[plot]``)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from sharpdp.cli import main\n"
        f"sys.argv = ['sharpdp', 'plot', 'capacity', 'exponential:0.025', '--budget',"
        f" 'approx:1,1e-6', '-o', {str(tmp_path / 'c.png')!r}]\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    text = out.stdout + out.stderr
    # exit 2 on standard error, as every missing extra (it was 1, on standard output)
    assert out.returncode == 2, text
    assert out.stdout == ""
    assert "pip install 'sharpdp[plot]' (in a clone: '.[plot]')" in out.stderr
    assert "Traceback" not in text
    assert not (tmp_path / "c.png").exists()


def test_plot_reads_items_and_plans_as_compose_does(tmp_path: Path, drawn: list[Figure]) -> None:
    """One parser: the repository's example plan (discrete Laplace items), monotone scores,
    sensitivities and top-k draw (plot had a smaller parser of its own that refused them)."""
    plan = Path(__file__).resolve().parents[2] / "examples" / "plan.toml"
    out = tmp_path / "p.png"
    assert invoke("profile", str(plan), "-o", str(out)).exit_code == 0
    for item in ("exponential:0.025,monotonic", "gaussian:5,2", "topk:3,0.1,monotonic"):
        # (k ≤ 100: the items' parsing is what is tested; the default 10,000 took ~8 s each)
        result = invoke("capacity", item, "--max-k", "100", "-o", str(tmp_path / "c.png"))
        assert result.exit_code == 0, (item, result.output)


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    """``-o`` into a folder that does not exist: one line naming it, exit 2 (it was reported as
    an unexpected FileNotFoundError)."""
    import subprocess
    import sys

    target = tmp_path / "nowhere" / "r.png"
    argv = ["sharpdp", "plot", "renyi", "br:1", "-o", str(target)]
    code = f"import sys; from sharpdp.cli import main; sys.argv = {argv!r}; main()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert "no folder" in out.stderr
    assert "unexpected" not in out.stderr
    with pytest.raises(sdp.InvalidParameter, match="no folder"):
        sdp.plots.save(Figure(), target)
