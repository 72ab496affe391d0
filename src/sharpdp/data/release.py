"""Released results: the values, their noise laws and confidence intervals.

Intervals are computed from the *exact* noise law (discrete Laplace or Gaussian tails, rounded
outward) and cover the true value of the statistic on the **bounded** data — after dropping rows
beyond the contribution caps and clamping (plus grid rounding) of summed values — not the raw table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import pandas as pd

from sharpdp import _math, _validate
from sharpdp._format import exact, html_table, lower, text_table, upper
from sharpdp.data._noise import IntegerNoise, half_width, half_width_missing

if TYPE_CHECKING:
    from sharpdp.accounting.ledger import Entry
from sharpdp.errors import InvalidParameter

__all__ = [
    "BOUND_COLUMNS",
    "AdditiveRelease",
    "MeanRelease",
    "QuantileRelease",
    "Release",
    "SelectionRelease",
    "format_cell",
    "json_cell",
    "json_rows",
    "text_rows",
]

#: The columns of ``to_pandas()`` that are bounds, and how each is printed: rounded outward
#: (an interval's ``lower`` down, its ``upper`` and a quantile's ``rank_error`` up).
BOUND_COLUMNS: dict[str, Callable[[float, int], str]] = {
    "lower": lower,
    "upper": upper,
    "rank_error": upper,
}


def format_cell(column: str, value: object, digits: int = 6) -> str:
    """A cell of ``to_pandas()`` as ``str()``, Jupyter and the ``sharpdp`` command print it:
    bounds rounded outward (:data:`BOUND_COLUMNS`) to ``digits`` significant digits, released
    values to 10 (they are not bounds), keys as they are.

    Example:
        >>> format_cell("lower", -268.2578125000001), format_cell("upper", 330.8828125000001)
        ('-268.258', '330.883')
    """
    if isinstance(value, float):  # numpy's float64 too
        rounding = BOUND_COLUMNS.get(column)
        return rounding(float(value), digits) if rounding is not None else f"{value:.10g}"
    if isinstance(value, pd.Timestamp) and value.tzinfo is None and value == value.normalize():
        return value.date().isoformat()  # a date (engines return date columns as timestamps)
    return str(value)


def text_rows(frame: pd.DataFrame, keys: Sequence[str], digits: int = 6) -> list[list[str]]:
    """The rows of a ``to_pandas()`` frame as text (:func:`format_cell` per cell), a key that is
    NULL as ``NULL``: pandas shows a missing text key as NaN, which printed as "nan", the same
    text as a key "nan"."""
    key_columns = set(keys)
    header = [str(c) for c in frame.columns]

    def cell(name: str, value: object) -> str:
        if name in key_columns and _is_missing(value):
            return "NULL"
        return format_cell(name, value, digits)

    return [
        [cell(name, value) for name, value in zip(header, row, strict=True)]
        for row in frame.itertuples(index=False, name=None)
    ]


def _is_missing(value: object) -> bool:
    try:
        return bool(pd.isna(cast(Any, value)))
    except (TypeError, ValueError):  # (a list-like value: not a scalar NULL)
        return False


def json_cell(value: Any) -> Any:
    """A cell of ``to_pandas()`` as JSON, at full precision, alike in ``sharpdp query --json`` and
    the service: NULL, NaN and NaT → ``None``; ±inf → ``"inf"``/``"-inf"``; dates, times and
    timestamps → their ISO text (microseconds, nanoseconds and a time zone when they have one);
    byte strings → ``{"hex": "..."}`` (the form the service takes binary keys in).

    Example:
        >>> json_cell(pd.Timestamp("2013-01-01")), json_cell(float("inf")), json_cell(pd.NA)
        ('2013-01-01T00:00:00', 'inf', None)
        >>> json_cell(b"ab")
        {'hex': '6162'}
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, bytes | bytearray):  # (np.bytes_ is a bytes)
        return {"hex": bytes(value).hex()}
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else value
    if value is pd.NaT or value is pd.NA:  # (a NULL date or time has an isoformat too: "NaT")
        return None
    isoformat = getattr(value, "isoformat", None)
    if isoformat is not None:
        return str(isoformat())
    if isinstance(value, tuple | list):
        return [json_cell(v) for v in value]
    try:
        if bool(pd.isna(value)):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def json_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a ``to_pandas()`` frame as JSON objects (:func:`json_cell` per cell)."""
    columns = {str(c): [json_cell(v) for v in frame[c].tolist()] for c in frame.columns}
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def _level(level: object) -> float:
    x = _validate.real("level", level)
    if not 0.0 < x < 1.0:
        raise InvalidParameter(f"level must be in (0, 1), got {x!r}")
    return x


@dataclass(frozen=True, eq=False)
class Release:
    """A released result.

    Attributes:
        query: the query, in words.
        keys: the key columns of the result (empty for one total).
        frame: the released values (key columns and released columns; nothing else).
        noise: each released statistic's noise law (the same law for every cell, drawn
            independently per cell), e.g. ``{"count": DiscreteLaplace(scale=10.0, ...)}``.
        spend: the ledger entry of the spend that paid for it (set by ``Query.run``, which records
            it before computing anything; ``spend.id`` names the ledger row).
    """

    query: str
    keys: tuple[str, ...]
    frame: pd.DataFrame = field(repr=False)
    noise: dict[str, IntegerNoise]
    spend: Entry | None = field(default=None, repr=False, compare=False, kw_only=True)
    #: whether ``Query.run`` gives the key columns the dtypes of their types in the table's
    #: schema (workloads and MWEM build their cells from declared domains, and keep them)
    typed_keys: ClassVar[bool] = True

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        """The released values with ``lower``/``upper`` bounds of a ``level`` confidence interval.

        Args:
            level: the coverage probability, in (0, 1).
        """
        _level(level)
        return self.frame.copy()

    def released_rows(self, level: float = 0.95) -> tuple[pd.DataFrame, str | None]:
        """``to_pandas(level)``, or, should its intervals fail, the released values alone and why.

        For callers that show a release after paying for it (the CLI, the service): the values
        are the part that was paid for, and an interval's failure must not lose them.
        """
        try:
            return self.to_pandas(level), None
        except Exception as err:  # any failure of the intervals: the values still stand
            return self.frame.copy(), f"no intervals ({type(err).__name__}: {err})"

    def _law(self, level: float) -> str:
        """The line under the table: each released statistic's noise law (and its intervals)."""
        laws = "; ".join(f"{name}: Z ~ {law!r}" for name, law in self.noise.items())
        return f"noise added, independent per cell — {laws}" if laws else "no noise"

    def _table(self, level: float) -> tuple[list[str], list[list[str]], list[int]]:
        """Header, formatted rows and right-aligned (numeric) columns of ``to_pandas(level)``."""
        frame = self.to_pandas(level)
        header = [str(c) for c in frame.columns]
        right = [i for i, c in enumerate(frame.columns) if pd.api.types.is_numeric_dtype(frame[c])]
        return header, text_rows(frame, self.keys), right

    def __str__(self) -> str:
        """The query, ``to_pandas()`` (intervals at level 0.95, rounded outward), the noise law."""
        header, rows, right = self._table(0.95)
        table = text_table(rows, header=header, right=right)
        return f"{self.query}\n{table}\n{self._law(0.95)}"

    def _repr_html_(self) -> str:
        """Jupyter: the content of ``str()`` as an HTML table."""
        header, rows, right = self._table(0.95)
        return html_table(
            rows, header=header, caption=self.query, footer=self._law(0.95), right=right
        )


@dataclass(frozen=True, eq=False)
class AdditiveRelease(Release):
    """Counts or sums with additive integer noise: value = step·(true + Z).

    ``to_pandas(level)`` adds ``lower``/``upper``: step·(released/step ∓ w) with w the least
    integer such that P[|Z| ≤ w] ≥ level, computed from the exact law (so the interval covers the
    bounded true value with probability ≥ level, for each cell separately).

    Attributes:
        value: the released column (``"count"`` or ``"sum"``).
        step: the grid step (1 for counts and integer sums).
    """

    value: str = "count"
    step: float = 1.0

    def _law(self, level: float) -> str:
        (law,) = self.noise.values()
        grid = "" if self.step == 1.0 else f"{exact(self.step)}·"
        return (
            f"{self.value} = {grid}(bounded true value + Z), Z ~ {law!r}, independent per cell; "
            f"lower/upper: a {exact(level)} confidence interval per cell from Z's exact law, "
            "rounded outward"
        )

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        """See the class docstring."""
        lv = _level(level)
        out = self.frame.copy()
        w = half_width(self.noise[self.value], lv)
        vals = out[self.value].to_numpy()
        if self.step == 1.0:
            out["lower"] = vals - w
            out["upper"] = vals + w
        else:
            ints = np.rint(vals / self.step).astype(np.int64)
            out["lower"] = np.nextafter((ints - w) * self.step, -np.inf)
            out["upper"] = np.nextafter((ints + w) * self.step, np.inf)
        return out


@dataclass(frozen=True, eq=False)
class MeanRelease(Release):
    """Means: c + (noisy centred sum)/(noisy count), clamped to the bounds, per key.

    Interval (conservative, valid): with probability ≥ 1 − (1 − level)/2 each, the true centred sum
    S lies in [Ŝ − a, Ŝ + a] and the true count N in [N̂ − b, N̂ + b] (exact noise laws), so by the
    union bound both hold with probability ≥ level; then the true mean c + S/N lies between the
    extreme corner ratios of that box (S/N is monotone in each of S and N for N > 0), intersected
    with [lower, upper] of the clamping bounds. If N̂ − b < 1 the interval is the whole clamping
    range. Endpoints are rounded outward.

    Attributes:
        bounds: the clamping bounds (in value units, after grid rounding).
        centre: c, the midpoint of the bounds.
        half_step: the value of one unit of the (doubled, centred) integer sum.
        sums: the released noisy centred sums (integers, in doubled grid units), per row of frame.
        counts: the released noisy counts, per row of frame.
    """

    bounds: tuple[float, float] = (0.0, 0.0)
    centre: float = 0.0
    half_step: float = 1.0
    sums: np.ndarray[Any, Any] = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    counts: np.ndarray[Any, Any] = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)

    def _law(self, level: float) -> str:
        laws = "; ".join(f"{name}: Z ~ {law!r}" for name, law in self.noise.items())
        return (
            f"mean = c + (centred sum + Z)/(count + Z′), clamped; noise independent per cell — "
            f"{laws}; lower/upper: a {exact(level)} confidence interval per cell (union bound "
            "over both noises), rounded outward"
        )

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        """See the class docstring."""
        lv = _level(level)
        each = (1.0 - lv) / 2.0  # each noise's miss (exact: 1 − (1 − lv)/2 can round to 1)
        a = half_width_missing(self.noise["sum"], each)
        b = half_width_missing(self.noise["count"], each)
        lo_b, hi_b = self.bounds
        lowers, uppers = [], []
        for s_hat, n_hat in zip(self.sums.tolist(), self.counts.tolist(), strict=True):
            n_lo, n_hi = n_hat - b, n_hat + b
            if n_lo < 1:
                lowers.append(lo_b)
                uppers.append(hi_b)
                continue
            s_lo, s_hi = s_hat - a, s_hat + a
            r_lo = min(s_lo / n_lo, s_lo / n_hi)
            r_hi = max(s_hi / n_lo, s_hi / n_hi)
            lo = math.nextafter(self.centre + r_lo * self.half_step, -math.inf)
            hi = math.nextafter(self.centre + r_hi * self.half_step, math.inf)
            lowers.append(max(lo_b, lo))
            uppers.append(min(hi_b, hi))
        out = self.frame.copy()
        out["lower"] = lowers
        out["upper"] = uppers
        return out


@dataclass(frozen=True, eq=False)
class SelectionRelease(Release):
    """Selected keys (top-k or best), best first per group, with their ``rank`` (1 = best).

    A selection releases which keys, not values: ``to_pandas`` has no interval columns.
    """

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        """The selected keys and their rank (``level`` is accepted for uniformity, unused)."""
        _level(level)
        return self.frame.copy()

    def _law(self, level: float) -> str:
        return "selected keys, best first (rank 1 = best): no values, so no intervals"


@dataclass(frozen=True, eq=False)
class QuantileRelease(Release):
    """Quantiles (Smith's interval exponential mechanism), one per by-group, with their accuracy.

    ``to_pandas(level)`` gives the key columns, ``quantile`` (the released value: the midpoint of
    the sampled grid cell) and ``rank_error``: a number w, the same for every group and computed
    without the data, such that for each group separately, with probability ≥ ``level``,

        |r − q·n| ≤ d* + w,   w = ln(cells/(1 − level))/c,   c = ε/(2Δ),

    where n is the number of bounded rows of the group (after clamping, grid rounding and the
    contribution caps), r the number of them below the released value, and d* = min_t |r_t − qn|
    the best any grid cell achieves (0 ≤ d* ≤ the largest number of bounded rows sharing one grid
    point). When no two rows share a grid point, the ranks r_t of consecutive cells differ by at
    most 1, so d* ≤ ½ — unless q·n lies beyond the first or last cell's rank (a row at an end of
    the grid: q = 0 with a row at L has r_t ≥ 1 for every cell), where d* ≤ 1. Proof [the
    exponential mechanism's utility bound, McSherry–Talwar 2007, Thm 6]: the sampled cell t has
    P[t] = e^{c·u_t}/Σ_s e^{c·u_s} with u_t = −|r_t − qn| and max_s u_s = −d*, so the cells with
    u_t < −d* − w have total probability < cells·e^{−c(d* + w)}/e^{−c·d*} = cells·e^{−cw} =
    1 − level. w is rounded up.

    **Why no value interval** (``lower``/``upper`` columns like the counts'): the values at ranks
    qn ± (d* + w) are order statistics of the private data; an interval made of them would be a
    second release needing its own budget, and no interval in value units holds independently of
    the data (one person's rows can move the empirical quantile anywhere between its neighbours).
    A user who needs one can release the quantiles at q ± w/n as further queries.

    **Grid points** (``support="points"``): the released value is the sampled grid point t, whose
    rows occupy the ranks [r_t⁻, r_t] (r_t⁻ rows below it, r_t at or below it), and with
    probability ≥ ``level`` the distance from q·n to [r_t⁻, r_t] is ≤ w = ln((cells + 1)/(1 −
    level))/c: no d* term, since some grid point's ranks always hold q·n (the same proof, over
    the cells + 1 points, with max_s u_s = 0).

    Attributes:
        coefficient: c = ε/(2Δ) of each run.
        cells: the number of grid cells.
        support: ``"cells"`` or ``"points"``, what the mechanism drew.
    """

    coefficient: float = 1.0
    cells: int = 1
    support: str = "cells"

    def rank_error(self, level: float = 0.95) -> float:
        """w = ln(N/(1 − level))/c with N = cells (cells + 1 grid points with
        ``support="points"``), rounded up (see the class docstring)."""
        lv = _level(level)
        outcomes = self.cells + (self.support == "points")
        log_ratio = _math.up(math.log(outcomes) - math.log1p(-lv))
        return _math.up(log_ratio / self.coefficient)

    def _law(self, level: float) -> str:
        if self.support == "points":
            return (
                f"quantile: a grid point drawn by the exponential mechanism (c = "
                f"{self.coefficient!r}, {self.cells + 1:,} points); rank_error w: with probability "
                f"≥ {exact(level)}, q·n is within w (rounded up) of the ranks the released point's "
                "rows occupy"
            )
        return (
            f"quantile: midpoint of a grid cell drawn by the exponential mechanism (c = "
            f"{self.coefficient!r}, {self.cells:,} cells); rank_error w: with probability ≥ "
            f"{exact(level)}, |rank − q·n| ≤ d* + w (rounded up), where d*, the best rank any "
            "cell reaches, is ≤ 1 for distinct grid values (≤ ½ unless q·n lies beyond the end "
            "cells' ranks) but up to the largest number of rows sharing one (a tie has no width "
            "in Smith's mechanism: on heavily tied data, e.g. a constant column, the value can "
            "fall anywhere between the tie's neighbours)"
        )

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        """See the class docstring."""
        w = self.rank_error(level)
        out = self.frame.copy()
        out["rank_error"] = w
        return out
