"""Printing bounds: ``upper`` never prints below its argument, ``lower`` never above, both within
one unit of the last digit shown; scientific notation carries no trailing zeros; ``exact`` reads
back as the same float; the text and HTML tables escape and truncate."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sharpdp._format import exact, html_table, lower, text_table, upper

FINITE = st.floats(allow_nan=False, allow_infinity=False)


@given(FINITE, st.integers(1, 9))
@example(1e-6, 6)
@example(5.2215344, 6)
@example(11.775950000000001, 6)
@example(5e-324, 6)
@example(-1e-7, 6)
@example(1.7976931348623157e308, 6)
def test_rounding_is_outward_and_tight(x: float, digits: int) -> None:
    up, down = Decimal(upper(x, digits)), Decimal(lower(x, digits))
    exact_value = Decimal(x)
    assert down <= exact_value <= up
    if x != 0.0:  # within one unit of the last digit shown
        unit = Decimal(10) ** (exact_value.adjusted() - digits + 1)
        assert up - exact_value <= unit
        assert exact_value - down <= unit


@given(FINITE, st.integers(1, 9))
def test_no_trailing_zeros_in_scientific_notation(x: float, digits: int) -> None:
    for text in (upper(x, digits), lower(x, digits)):
        assert not re.search(r"\.\d*0e", text), text
        assert not re.search(r"\.e", text), text
        for bad in ("e+", "e0", "e-0"):
            assert bad not in text, text


@pytest.mark.parametrize(
    ("x", "up", "down"),
    [
        (1e-6, "1e-6", "9.99999e-7"),  # the float nearest 1e-6 is just below 10⁻⁶
        (1e-5, "1.00001e-5", "1e-5"),  # ... and the one nearest 1e-5 just above 10⁻⁵
        (1e10, "1e10", "1e10"),
        (1.5e-7, "1.5e-7", "1.49999e-7"),
        (5.2215344, "5.22154", "5.22153"),
        (2.0, "2", "2"),
        (0.0, "0", "0"),
        (math.inf, "inf", "inf"),
        (-math.inf, "-inf", "-inf"),
        (math.nan, "nan", "nan"),
    ],
)
def test_known_values(x: float, up: str, down: str) -> None:
    assert (upper(x), lower(x)) == (up, down)


@given(FINITE)
def test_exact_reads_back(x: float) -> None:
    assert float(exact(x)) == x
    assert not exact(x).endswith(".0")


def test_html_table_escapes_and_marks() -> None:
    out = html_table(
        [["<script>", "1"], ["b&c", "2"]],
        header=["name", "n"],
        caption="a < b",
        footer='"quoted"',
        right=[1],
        strong=[1],
    )
    assert "<script>" not in out
    assert "&lt;script&gt;" in out
    assert "b&amp;c" in out
    assert "a &lt; b" in out
    assert "&quot;quoted&quot;" in out
    assert out.count('style="font-weight:bold"') == 1
    assert out.startswith('<table class="sharpdp">')


def test_long_tables_are_cut_in_the_middle() -> None:
    rows = [[str(i)] for i in range(100)]
    out = html_table(rows, max_rows=10)
    assert ">0<" in out
    assert ">4<" in out
    assert ">95<" in out
    assert ">99<" in out
    assert ">50<" not in out
    assert "100 rows in all" in out
    text = text_table(rows, header=["i"], max_rows=10)
    assert text.splitlines()[0] == "i"
    assert "100 rows in all" in text
    assert len(text.splitlines()) == 12


def test_text_table_pads_and_aligns() -> None:
    text = text_table([["a", "1"], ["bcd", "100"]], header=["k", "n"], right=[1])
    assert text.splitlines() == ["k      n", "a      1", "bcd  100"]
