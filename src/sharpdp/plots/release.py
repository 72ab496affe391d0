"""A release's values with their confidence intervals, per key (from the data layer)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from sharpdp import _validate
from sharpdp.errors import InvalidParameter
from sharpdp.plots._figure import legend, new_figure

if TYPE_CHECKING:  # the data layer needs the `data` extra; a release passed in has loaded it
    from sharpdp.data.release import Release

__all__ = ["release"]

#: Columns of ``Release.to_pandas`` that are not released values.
_NOT_VALUES = {"lower", "upper", "rank", "rank_error"}
#: Beyond this many keys the key labels are drawn smaller.
_MANY = 20


def _value_column(frame: Any, keys: tuple[str, ...]) -> str:
    columns = [c for c in frame.columns if c not in keys and c not in _NOT_VALUES]
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    # pandas' own dtype tests: numpy's issubdtype raises on extension dtypes (text, Int64)
    numeric = [
        c for c in columns if is_numeric_dtype(frame[c].dtype) and not is_bool_dtype(frame[c].dtype)
    ]
    if len(numeric) != 1:
        raise InvalidParameter(
            "release must have one released numeric column to draw (a selection releases keys, "
            f"not values), got columns {list(frame.columns)}"
        )
    return str(numeric[0])


def release(result: Release, level: float = 0.95) -> Figure:
    """The released value per key, with its ``level`` confidence interval as an error bar.

    The intervals are ``result.to_pandas(level)``'s ``lower``/``upper`` (they cover the true
    value on the bounded data with probability ≥ ``level``, each key separately; see
    :mod:`sharpdp.data.release`). Releases without a value interval (quantiles) are drawn as
    points; selections, which release keys and no values, are refused.

    Args:
        result: a release (``query.run()`` of a session's count, sum, mean or quantile query).
        level: the confidence level of the intervals, in (0, 1).

    Returns:
        The figure.
    """
    lv = _validate.real("level", level)
    if not 0.0 < lv < 1.0:
        raise InvalidParameter(f"level must be in (0, 1), got {level!r}")
    to_pandas = getattr(result, "to_pandas", None)
    keys = getattr(result, "keys", None)
    if not callable(to_pandas) or not isinstance(keys, tuple):
        raise InvalidParameter(f"result must be a sharpdp.data release, got {result!r}")
    frame = to_pandas(lv)
    column = _value_column(frame, keys)
    # a workload's rows are named by their query (a predicate's name) and the values of the
    # marginal's own columns: the others are NULL there ("0 / nan" before; predicates "total")
    labels = [c for c in ("query", *keys) if c in frame.columns]
    names = (
        [
            " / ".join(str(v) for v in row if not _missing(v)) or "total"
            for row in frame[labels].itertuples(False)
        ]
        if labels
        else ["total"] * len(frame)
    )
    positions = np.arange(len(frame), dtype=float)
    values = frame[column].to_numpy(dtype=float)
    fig, ax = new_figure(str(getattr(result, "query", "release")))
    if "lower" in frame.columns and "upper" in frame.columns:
        lower = frame["lower"].to_numpy(dtype=float)
        upper = frame["upper"].to_numpy(dtype=float)
        ax.errorbar(
            positions,
            values,
            yerr=np.maximum(np.vstack([values - lower, upper - values]), 0.0),
            fmt="o",
            color="C0",
            ecolor="C0",
            elinewidth=1.2,
            capsize=4,
            label=f"released {column} with its {lv * 100:g}% confidence interval",
            gid="release",
        )
    else:
        ax.plot(positions, values, "o", color="C0", label=f"released {column}", gid="release")
    slanted = len(names) > 5
    ax.set_xticks(
        positions,
        names,
        rotation=45 if slanted else 0,
        ha="right" if slanted else "center",
        fontsize="small" if len(names) > _MANY else "medium",
    )
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_xlabel(", ".join(keys) if keys else "")
    ax.set_ylabel(f"released {column}")
    legend(ax)
    return fig


def _missing(value: object) -> bool:
    try:
        return bool(pd.isna(cast(Any, value)))
    except (TypeError, ValueError):
        return False
