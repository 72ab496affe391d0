"""Explanations: every route or analysis tried, its value, and which one won.

Shared by :meth:`sharpdp.Composition.explain` (one row per composition analysis) and
:func:`sharpdp.conversions.explain` (one row per conversion route). It sits in the base layer so
that both can import it without an upward import. Smaller values are sharper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sharpdp._format import exact, html_table, upper
from sharpdp.errors import NotImplied

__all__ = ["Explanation", "Row"]


@dataclass(frozen=True)
class Row:
    """One line of an explanation: the analysis or route, its value (or why it does not apply).

    Attributes:
        name: the analysis or route name (what ``method=`` takes, for a conversion).
        theorem: the result it implements, with its reference.
        value: the value it certifies (smaller is sharper), or ``None`` when it does not apply.
        note: why it does not apply, or a remark on the value.
        ranked: whether the row competes for :attr:`Explanation.winner` (a conversion route that
            :func:`~sharpdp.convert` does not try by default is shown but not ranked).
    """

    name: str
    theorem: str
    value: float | None
    note: str = ""
    ranked: bool = True


@dataclass(frozen=True)
class Explanation:
    """Every analysis tried, its value, and the winner (the smallest ranked value).

    Attributes:
        quantity: what the values are (``"epsilon"``, ``"delta"``, ``"rho"``, ``"mu"``…).
        at: the δ (for ε) or ε (for δ) the values are computed at; ``None`` when not applicable.
        rows: one :class:`Row` per analysis, in the order tried.
        title: the first line of ``str(explanation)``; by default "<quantity> at δ = <at>:".
    """

    quantity: str
    at: float | None
    rows: tuple[Row, ...]
    title: str = ""

    @property
    def winner(self) -> Row:
        """The ranked row with the smallest value (the first one on ties)."""
        valid = self._ranked()
        if not valid:
            raise NotImplied("no analysis applies")
        return min(valid, key=_value)

    @property
    def runner_up(self) -> Row | None:
        """The ranked row with the second smallest value, if any."""
        winner = self.winner
        valid = sorted((r for r in self._ranked() if r is not winner), key=_value)
        return valid[0] if valid else None

    def _ranked(self) -> list[Row]:
        return [r for r in self.rows if r.value is not None and r.ranked]

    def _title(self) -> str:
        if self.title:
            return self.title
        given = "δ" if self.quantity == "epsilon" else "ε"
        at = f" at {given} = {exact(self.at)}" if self.at is not None else ""
        return f"{self.quantity}{at}:"

    def _cells(self) -> list[tuple[str, str, str, str, str]]:
        """(mark, name, value, theorem, note) per row; values are upper bounds, rounded up."""
        win = self.winner if self._ranked() else None
        return [
            (
                "*" if r is win else "",
                r.name,
                upper(r.value) if r.value is not None else "n/a",
                r.theorem,
                r.note,
            )
            for r in self.rows
        ]

    def __str__(self) -> str:
        lines = [self._title()]
        width = max([9, *(len(r.name) for r in self.rows)])
        for mark, name, value, theorem, note in self._cells():
            extra = f"  ({note})" if note else ""
            lines.append(f" {mark or ' '} {name:<{width}} {value:>12}  {theorem}{extra}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter: the rows of ``str()`` as a table, the winner in bold."""
        cells = self._cells()
        return html_table(
            cells,
            header=("", "analysis", "value", "theorem", "note"),
            caption=self._title(),
            right=(2,),
            strong=[i for i, c in enumerate(cells) if c[0] == "*"],
        )


def _value(row: Row) -> float:
    return row.value if row.value is not None else math.inf
