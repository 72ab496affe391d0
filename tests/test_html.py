"""Jupyter's HTML (``_repr_html_``) shows the same content as ``str()``, escaped, with every bound
rounded outward (upper bounds up, lower bounds down), for guarantees and mechanisms,
compositions, explanations (of compositions, conversions and query plans) and releases."""

from __future__ import annotations

import html
from decimal import Decimal
from html.parser import HTMLParser

import pandas as pd
import pytest

import sharpdp as sdp
from sharpdp._explain import Explanation, Row
from sharpdp._format import upper
from sharpdp.data.release import QuantileRelease
from stable_ids import stable_id


class _Table(HTMLParser):
    """The caption, the rows of cells (header row included) and the text after the table."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.caption = ""
        self.rows: list[list[str]] = []
        self.bold: list[bool] = []
        self.footer = ""
        self._where: str | None = None
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.depth += 1
        elif tag == "tr":
            self.rows.append([])
            self.bold.append(("style", "font-weight:bold") in attrs)
        elif tag in ("td", "th"):
            self.rows[-1].append("")
            self._where = "cell"
        elif tag in ("caption", "p"):
            self._where = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.depth -= 1
        if tag in ("td", "th", "caption", "p"):
            self._where = None

    def handle_data(self, data: str) -> None:
        if self._where == "cell":
            self.rows[-1][-1] += data
        elif self._where == "caption":
            self.caption += data
        elif self._where == "p":
            self.footer += data


def parse(markup: str) -> _Table:
    table = _Table()
    table.feed(markup)
    table.close()
    assert table.depth == 0, "unbalanced <table>"
    return table


# -- guarantees and mechanisms ----------------------------------------------------------------------

GUARANTEES = [
    sdp.PureDP(1.0),
    sdp.ApproxDP(1.0, 1e-6),
    sdp.ZCDP(0.1, xi=0.25),
    sdp.BoundedRange(0.5),
    sdp.GDP(1.5),
    sdp.Gaussian(5.0, sensitivity=0.5),
    sdp.Laplace(2.0),
    sdp.Exponential(0.1, monotonic=True),
    sdp.TopK(3, 0.2),
    sdp.DiscreteLaplace(3),
]


@pytest.mark.parametrize("g", GUARANTEES, ids=stable_id)
def test_a_guarantee_shows_its_parameters_as_repr_does(g: sdp.Guarantee) -> None:
    t = parse(g._repr_html_())
    assert type(g).__name__ in t.caption
    assert g.notion in t.caption
    header, *rows = t.rows
    assert header == ["parameter", "value"]
    shown = ", ".join(f"{name}={value}" for name, value in rows)
    assert repr(g) == f"{type(g).__name__}({shown})"  # the same content, exactly (no rounding)


def test_a_guarantee_with_its_own_repr_shows_it() -> None:
    g = sdp.RDP((2.0, 8.0), (0.5, 1.0))
    t = parse(g._repr_html_())
    assert t.rows == [[repr(g)]]


def test_parameters_are_shown_exactly() -> None:
    g = sdp.ApproxDP(0.123456789012, 1.2345678901e-7)
    assert parse(g._repr_html_()).rows[1:] == [
        ["epsilon", "0.123456789012"],
        ["delta", "1.2345678901e-07"],
    ]


# -- compositions and explanations ------------------------------------------------------------------


def test_a_composition_lists_its_items() -> None:
    c = sdp.compose([(sdp.Gaussian(5.0), 100), (sdp.Exponential(0.1), 20)], adaptive=False)
    t = parse(c._repr_html_())
    assert "non-adaptive" in t.caption
    assert "accuracy" not in t.caption
    assert t.rows == [
        ["item", "count"],
        ["Gaussian(sigma=5.0)", "100"],
        ["Exponential(epsilon=0.1)", "20"],
    ]
    assert (
        "accuracy=0.001"
        in parse(sdp.compose([sdp.PureDP(1.0)], accuracy=1e-3)._repr_html_()).caption
    )


def test_explanation_values_are_rounded_up_in_str_and_html() -> None:
    # .6g rounds 5.2215344 to 5.22153, below the certified value: upper() prints 5.22154
    ex = Explanation(
        "epsilon",
        1e-6,
        (
            Row("a", "theorem A", 5.2215344),
            Row("b", "theorem <B>", 7.0),
            Row("c", "C", None, "n/a here"),
        ),
    )
    text = str(ex)
    assert "5.22154" in text
    assert "5.22153" not in text
    assert text.splitlines()[0] == "epsilon at δ = 1e-06:"
    t = parse(ex._repr_html_())
    assert t.caption == "epsilon at δ = 1e-06:"
    assert t.rows[0] == ["", "analysis", "value", "theorem", "note"]
    assert t.rows[1] == ["*", "a", "5.22154", "theorem A", ""]
    assert t.rows[2] == ["", "b", "7", "theorem <B>", ""]
    assert t.rows[3] == ["", "c", "n/a", "C", "n/a here"]
    assert t.bold == [False, True, False, False]
    assert "theorem &lt;B&gt;" in ex._repr_html_()


def test_a_composition_explanation_agrees_with_its_str() -> None:
    c = sdp.compose([(sdp.Gaussian(5.0), 100), (sdp.Exponential(0.1), 20)])
    ex = c.explain(delta=1e-6)
    lines = str(ex).splitlines()
    t = parse(ex._repr_html_())
    assert t.caption == lines[0]
    for row, cells, line in zip(ex.rows, t.rows[1:], lines[1:], strict=True):
        mark, name, value, theorem, note = cells
        assert name == row.name
        assert theorem == row.theorem
        assert note == row.note
        assert (mark == "*") == line.startswith(" *")
        assert value in line.split()
        if row.value is not None:
            assert Decimal(value) >= Decimal(row.value)  # never below the certified value
            assert value == upper(row.value)
        else:
            assert value == "n/a"


def test_a_conversion_explanation_rounds_up() -> None:
    ex = sdp.conversions.explain(sdp.PureDP(1.0), sdp.ZCDP)
    assert ex.winner.value is not None
    assert upper(ex.winner.value) == "0.462118"  # ε·tanh(ε/2) = 0.4621171572…, not 0.462117
    assert "0.462118" in str(ex)
    assert "0.462117" not in str(ex)
    assert parse(ex._repr_html_()).rows[1][2] == "0.462118"


# -- the data layer: query plans and releases -------------------------------------------------------


@pytest.fixture(scope="module")
def session() -> sdp.data.Session:
    table = pd.DataFrame(
        {
            "person": [1, 2, 3, 3, 4, 5, 6, 6],
            "fruit": ["apple", "pear", "apple", "<b>kiwi</b>", "apple", "pear", "kiwi", "apple"],
            "weight": [1.5, 2.0, 3.25, 4.0, 5.5, 0.5, 2.25, 7.0],
        }
    )
    return sdp.data.Session(table, "person", sdp.ApproxDP(10.0, 1e-6), seed=0)


FRUITS = ["apple", "pear", "kiwi", "<b>kiwi</b>"]


def test_a_plan_explanation_is_its_str_as_a_table(session: sdp.data.Session) -> None:
    q = session.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(0.3), max_groups=2)
    e = q.explain()
    text = str(e)
    t = parse(e._repr_html_())
    assert t.caption == text.splitlines()[0]
    labels = [row[0] for row in t.rows]
    assert labels == ["bounding", "count", "charge", "cost", "budget"]
    for label, content in t.rows:
        shown = content.split(" (")[0]  # the line of str() holds the same text
        assert shown in text.replace("\n      ", " "), (label, content)
    cost = dict(t.rows)["cost"]
    assert cost.startswith(f"ε = {upper(e.cost)} at δ = 1e-06")
    assert Decimal(upper(e.cost)) >= Decimal(e.cost)


def test_plan_numbers_are_rounded_outward(session: sdp.data.Session) -> None:
    # scale 20/3 = 6.666…67 prints as 6.66666 (at least that much noise), ℓ2 = √2 as 1.41422
    q = session.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(0.3), max_groups=2)
    line = q.explain().statistics[0].describe()
    assert "scale 6.66666," in line
    assert "ℓ2 1.41422" in line
    assert "ℓ1 2," in line
    assert "DiscreteLaplace(scale=6.666666666666667)" in line  # the parameter itself: exact


def test_a_release_shows_its_frame_and_noise_law(session: sdp.data.Session) -> None:
    r = session.sum("weight", bounds=(0, 10), privacy=sdp.PureDP(0.5), max_rows=1).run(rng=0)
    frame = r.to_pandas()
    text = str(r)
    t = parse(r._repr_html_())
    assert t.caption == r.query == text.splitlines()[0]
    assert t.rows[0] == [str(c) for c in frame.columns] == text.splitlines()[1].split()
    (row,) = t.rows[1:]
    cells = dict(zip(t.rows[0], row, strict=True))
    assert Decimal(cells["lower"]) <= Decimal(float(frame["lower"].iloc[0]))
    assert Decimal(cells["upper"]) >= Decimal(float(frame["upper"].iloc[0]))
    assert cells["lower"] in text
    assert cells["upper"] in text
    law = repr(r.noise["sum"])
    assert law in t.footer
    assert t.footer == text.splitlines()[-1]
    assert "0.95" in t.footer


def test_a_release_escapes_its_keys(session: sdp.data.Session) -> None:
    r = session.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(0.5), max_groups=2).run(rng=1)
    markup = r._repr_html_()
    assert "<b>kiwi</b>" not in markup
    assert html.escape("<b>kiwi</b>") in markup
    t = parse(markup)
    assert sorted(row[0] for row in t.rows[1:]) == sorted(FRUITS)
    for row in t.rows[1:]:
        assert int(row[2]) <= int(row[1]) <= int(row[3])  # lower ≤ count ≤ upper
    assert "DiscreteLaplace" in t.footer


def test_selection_and_quantile_releases(session: sdp.data.Session) -> None:
    best = session.select_best("fruit", keys=FRUITS, privacy=sdp.PureDP(0.5)).run(rng=2)
    assert "no intervals" in parse(best._repr_html_()).footer
    med = session.quantile("weight", 0.5, bounds=(0, 10), privacy=sdp.PureDP(0.5)).run(rng=3)
    assert isinstance(med, QuantileRelease)
    t = parse(med._repr_html_())
    cells = dict(zip(t.rows[0], t.rows[1], strict=True))
    assert Decimal(cells["rank_error"]) >= Decimal(med.rank_error())
    assert "rank_error" in t.footer
    assert cells["rank_error"] in str(med)
