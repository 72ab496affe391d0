"""Printing bounds without understating them: upper bounds round up, lower bounds round down.

Rounding an upper bound to nearest can print a number *below* the certified value (ε = 5.22153 for
5.2215344); every bound sharpdp prints goes through :func:`upper` or :func:`lower`. Parameters the
user gave (a δ, a clamping bound) are printed exactly by :func:`exact`.

:func:`html_table` renders the compact HTML tables that Jupyter shows for guarantees,
compositions, explanations and releases (``_repr_html_``): the same content as ``str()``, with
every cell escaped. It lives here, in the lowest layer, so that every layer can use it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

__all__ = ["exact", "html_table", "lower", "text_table", "upper"]


def _round(x: float, digits: int, rounding: str) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0.0:
        return "0"
    d = Decimal(x)  # the float's exact value
    exponent = d.adjusted() - digits + 1
    q = d.quantize(Decimal(1).scaleb(exponent), rounding=rounding)
    if q.adjusted() >= digits + 4 or q.adjusted() <= -5:
        # scientific notation without trailing zeros: 1e-6, not 1.00000e-6 (the same value)
        mantissa, _, power = f"{q:.{digits - 1}e}".partition("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(power)}"
    return format(q.normalize(), "f")


def upper(x: float, digits: int = 6) -> str:
    """``x`` with ``digits`` significant digits, rounded towards +∞ (for upper bounds).

    The number printed is never below ``x`` (the float's exact value: the float nearest 1e-5 is
    slightly above 10⁻⁵, so it prints as 1.00001e-5).

    Example:
        >>> upper(5.2215344), upper(0.46211716, 4), upper(1e-06), upper(2.0), upper(2.5e-12)
        ('5.22154', '0.4622', '1e-6', '2', '2.5e-12')
    """
    return _round(x, digits, ROUND_CEILING)


def lower(x: float, digits: int = 6) -> str:
    """``x`` with ``digits`` significant digits, rounded towards −∞ (for lower bounds).

    Example:
        >>> lower(5.2215344), lower(-0.46211716, 4), lower(1e-05), lower(3e20)
        ('5.22153', '-0.4622', '1e-5', '3e20')
    """
    return _round(x, digits, ROUND_FLOOR)


def exact(x: float) -> str:
    """A parameter as given: the shortest text that reads back as the same float, without a
    trailing ``.0`` (``150`` for 150.0, ``1e-06``, ``0.1``).

    Example:
        >>> exact(150.0), exact(-20), exact(1e-06), exact(0.1), exact(1.2345678e-07)
        ('150', '-20', '1e-06', '0.1', '1.2345678e-07')
    """
    value = float(x)
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _shown(n: int, max_rows: int) -> list[int | None]:
    """The rows shown of ``n``: all, or the first and last ``max_rows // 2`` around a gap (None)."""
    if n <= max_rows or max_rows < 2:
        return list(range(n))
    half = max_rows // 2
    return [*range(half), None, *range(n - half, n)]


def _gap(n: int) -> str:
    return f"… ({n:,} rows in all)"


def html_table(
    rows: Sequence[Sequence[str]],
    *,
    header: Sequence[str] | None = None,
    caption: str | None = None,
    footer: str | None = None,
    right: Collection[int] = (),
    strong: Collection[int] = (),
    max_rows: int = 60,
) -> str:
    """A compact HTML table of text cells (every cell, the caption and the footer are escaped).

    Args:
        rows: the body, one sequence of already formatted cells per row.
        header: column names, if any.
        caption: a line above the table (e.g. the first line of the object's ``str()``).
        footer: a line below it (e.g. a release's noise law).
        right: indices of the columns aligned right (numbers).
        strong: indices of the rows shown in bold (a winner).
        max_rows: beyond this many rows, the first and last ``max_rows // 2`` are shown around a
            row "… (n rows in all)".

    Example:
        >>> html_table([["a<b", "1"]], header=["name", "value"], right=[1]).splitlines()[2]
        '<tr><td style="text-align:left">a&lt;b</td><td style="text-align:right">1</td></tr>'
    """
    import html  # (only for Jupyter: not loaded with every bound printed)

    width = max([len(header) if header is not None else 0, *(len(r) for r in rows)])

    def cell(tag: str, column: int, text: str) -> str:
        align = "right" if column in right else "left"
        return f'<{tag} style="text-align:{align}">{html.escape(text)}</{tag}>'

    lines = ['<table class="sharpdp">']
    if caption is not None:
        lines.append(f'<caption style="text-align:left">{html.escape(caption)}</caption>')
    if header is not None:
        lines.append("<tr>" + "".join(cell("th", i, h) for i, h in enumerate(header)) + "</tr>")
    for index in _shown(len(rows), max_rows):
        if index is None:
            lines.append(f'<tr><td colspan="{width}">{html.escape(_gap(len(rows)))}</td></tr>')
            continue
        body = "".join(cell("td", i, text) for i, text in enumerate(rows[index]))
        bold = ' style="font-weight:bold"' if index in strong else ""
        lines.append(f"<tr{bold}>{body}</tr>")
    lines.append("</table>")
    if footer is not None:
        lines.append(f"<p>{html.escape(footer)}</p>")
    return "\n".join(lines)


def text_table(
    rows: Sequence[Sequence[str]],
    *,
    header: Sequence[str] | None = None,
    right: Collection[int] = (),
    max_rows: int = 60,
) -> str:
    """The same table as plain text, columns padded (``str()`` of a release).

    Example:
        >>> print(text_table([["a", "1"], ["bc", "10"]], header=["key", "n"], right=[1]))
        key   n
        a     1
        bc   10
    """
    shown = _shown(len(rows), max_rows)
    body = [rows[i] for i in shown if i is not None]
    table = [list(header)] if header is not None else []
    table += [list(r) for r in body]
    columns = max((len(r) for r in table), default=0)
    widths = [max((len(r[c]) for r in table if c < len(r)), default=0) for c in range(columns)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            t.rjust(widths[c]) if c in right else t.ljust(widths[c]) for c, t in enumerate(cells)
        ]
        return "  ".join(padded).rstrip()

    lines = [line(header)] if header is not None else []
    for index in shown:
        lines.append(_gap(len(rows)) if index is None else line(rows[index]))
    return "\n".join(lines)
