"""Values given for a column (public keys, domains, predicate values), checked and converted to
the column's own type before anything is spent.

A value is matched against the engine's values twice: in the engine (a filter) and in pandas
(merging released keys, looking scores up). Both must agree with what the engine returns, so each
value is converted to the Python value the engine's results hold for that column: a
``pandas.Timestamp`` for a date or timestamp (``datetime.date(2020, 1, 1)`` or ``"2020-01-01"``
otherwise match nothing in pandas, or fail there after the spend), the float32 nearest a float
for a float32 column (0.1 is not equal to float32(0.1)), a ``Decimal`` of the column's scale for
a decimal column (a float by its shortest text: 1.1 is 1.10), an ``int`` within the column's
range. A value that cannot be one of the column's raises :class:`~sharpdp.errors.InvalidParameter`
naming the parameter, the value and the column's type.
"""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from sharpdp.data._engine import quiet
from sharpdp.errors import InvalidParameter

__all__ = ["canonical"]


class _NotOfColumn(Exception):
    """The value cannot be one of the column's (the message says why, if not the type)."""


def _is_integer(v: object) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_)


def _is_real(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def _boolean(v: object, dtype: Any) -> Any:
    if not isinstance(v, bool | np.bool_):
        raise _NotOfColumn
    return bool(v)


def _integer(v: object, dtype: Any) -> Any:
    if not _is_integer(v):
        raise _NotOfColumn
    value = int(v)  # type: ignore[call-overload]
    lower, upper = dtype.bounds
    if not lower <= value <= upper:
        raise _NotOfColumn(f"is outside the range [{lower}, {upper}] of the column's {dtype}")
    return value


def _floating(v: object, dtype: Any) -> Any:
    if not _is_real(v):
        raise _NotOfColumn
    # the nearest value of the column's width: float32(0.1) ≠ 0.1, and the data holds the former
    width = {16: np.float16, 32: np.float32}.get(getattr(dtype, "nbytes", 8) * 8, np.float64)
    try:
        with np.errstate(over="raise"):
            value = float(width(v))  # type: ignore[arg-type]
    except (OverflowError, FloatingPointError):
        value = math.inf
    asked_inf = isinstance(v, float | np.floating) and math.isinf(v)  # (no int is infinite)
    if math.isinf(value) and not asked_inf:
        # (1e39 became a float32 inf, counting the +inf rows; 10**400 raised OverflowError)
        raise _NotOfColumn(f"is outside the range of the column's {dtype} (it would be ±inf)")
    return value


def _decimal(v: object, dtype: Any) -> Any:
    # a float means its shortest decimal text (1.1 is "1.1", not 1.100000000000000088817...)
    if isinstance(v, decimal.Decimal):
        value = v
    elif _is_integer(v):
        value = decimal.Decimal(int(v))  # type: ignore[call-overload]
    elif _is_real(v) and math.isfinite(float(v)):  # type: ignore[arg-type]
        value = decimal.Decimal(repr(float(v)))  # type: ignore[arg-type]
    else:
        raise _NotOfColumn
    scale = getattr(dtype, "scale", None)
    if scale is not None and value.is_finite():
        try:  # (in a context wider than any column: 38 digits, where Python's default is 28)
            with decimal.localcontext(prec=100):
                exact = value.quantize(
                    decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_EVEN
                )
        except decimal.InvalidOperation:  # more digits than any decimal context holds
            raise _NotOfColumn(f"has more digits than the column's {dtype} holds") from None
        if exact != value:
            raise _NotOfColumn(f"has more decimal places than the column's {dtype}")
        precision = getattr(dtype, "precision", None)
        if precision is not None and exact and exact.adjusted() + 1 > precision - scale:
            raise _NotOfColumn(f"has more digits than the column's {dtype} holds")
        value = exact
    return value


def _string(v: object, dtype: Any) -> Any:
    if not isinstance(v, str):
        raise _NotOfColumn
    return v


def _timestamp_of(v: object) -> pd.Timestamp:
    if not isinstance(v, datetime.date | np.datetime64 | str):
        raise _NotOfColumn
    try:
        ts = pd.Timestamp(v)
    except (ValueError, TypeError, OverflowError):
        raise _NotOfColumn("is not a date or time pandas can read") from None
    if pd.isna(ts):
        raise _NotOfColumn("is NaT (keys must not be NULL)")
    if not 1 <= ts.year <= 9999:  # the engines' literals are written through Python's datetime
        raise _NotOfColumn("is outside the years 1 to 9999 that a key can be written in")
    return ts


def _date(v: object, dtype: Any) -> Any:
    ts = _timestamp_of(v)
    if ts.tzinfo is not None or ts != ts.normalize():
        raise _NotOfColumn("has a time of day or a time zone, and the column holds dates")
    return ts


def _timestamp(v: object, dtype: Any) -> Any:
    ts = _timestamp_of(v)
    zone = getattr(dtype, "timezone", None)
    if (ts.tzinfo is None) != (zone is None):
        raise _NotOfColumn(
            f"must be {'time-zone aware' if zone else 'naive (no time zone)'}, like the column"
        )
    return ts if zone is None else ts.tz_convert(zone)


def _binary(v: object, dtype: Any) -> Any:
    if not isinstance(v, bytes):
        raise _NotOfColumn("is not a byte string (give bytes, e.g. b'ab' or 'ab'.encode())")
    return v


def _time(v: object, dtype: Any) -> Any:
    if isinstance(v, datetime.time) and v.tzinfo is None:
        return v
    if isinstance(v, str):
        try:
            return datetime.time.fromisoformat(v)
        except ValueError:
            raise _NotOfColumn("is not a time of day (HH:MM[:SS[.ffffff]])") from None
    raise _NotOfColumn("is not a time of day without a time zone (a datetime.time or its text)")


#: (Ibis dtype predicate, converter, what the column holds), first match wins. Types not listed
#: (UUIDs, intervals, nested types) are passed through unchecked.
_CONVERTERS: tuple[tuple[str, Callable[[object, Any], Any], str], ...] = (
    ("is_boolean", _boolean, "booleans"),
    ("is_integer", _integer, "integers"),
    ("is_floating", _floating, "numbers"),
    ("is_decimal", _decimal, "numbers"),
    ("is_string", _string, "strings"),
    ("is_date", _date, "dates"),
    ("is_timestamp", _timestamp, "timestamps"),
    ("is_binary", _binary, "byte strings"),
    ("is_time", _time, "times of day"),
)


def canonical(
    table: Any, parameter: str, columns: tuple[str, ...], rows: tuple[tuple[Any, ...], ...]
) -> tuple[tuple[Any, ...], ...]:
    """``rows`` (one value per column each) converted to their columns' types.

    Raises:
        InvalidParameter: naming ``parameter`` if a value cannot be a value of its column (a string
            for an integer column, an integer beyond int64, an unreadable date...), or if two
            values become one (e.g. two floats with the same float32).
    """
    with quiet():
        schema = table.schema()
    converters = []
    for c in columns:
        dtype = schema[c]
        rule = next((r for r in _CONVERTERS if getattr(dtype, r[0])()), None)
        converters.append((c, dtype, rule))
    out = []
    for row in rows:
        values = []
        for v, (c, dtype, rule) in zip(row, converters, strict=True):
            if rule is None:
                values.append(v)
                continue
            convert, holds = rule[1], rule[2]
            try:
                values.append(convert(v, dtype))
            except _NotOfColumn as why:
                reason = str(why) or f"cannot be a value of it: it holds {holds}"
                raise InvalidParameter(
                    f"{parameter}: {v!r} ({type(v).__name__}) for column {c!r} ({dtype}) {reason}"
                ) from None
        out.append(tuple(values))
    if len(set(out)) != len(out):
        raise InvalidParameter(
            f"{parameter}: two values are the same value of the column once converted to its type"
        )
    return tuple(out)
