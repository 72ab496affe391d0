"""Printing bounds without understating them: upper bounds round up, lower bounds round down.

Rounding an upper bound to nearest can print a number *below* the certified value (ε = 5.22153 for
5.2215344); every bound sharpdp prints goes through :func:`upper` or :func:`lower`.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

__all__ = ["lower", "upper"]


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
        return f"{q:.{digits - 1}e}".replace("e+", "e").replace("e0", "e").replace("e-0", "e-")
    return format(q.normalize(), "f")


def upper(x: float, digits: int = 6) -> str:
    """``x`` with ``digits`` significant digits, rounded towards +∞ (for upper bounds).

    Example:
        >>> upper(5.2215344), upper(0.46211716, 4), upper(1e-06), upper(2.0)
        ('5.22154', '0.4622', '1e-6', '2')
    """
    return _round(x, digits, ROUND_CEILING)


def lower(x: float, digits: int = 6) -> str:
    """``x`` with ``digits`` significant digits, rounded towards −∞ (for lower bounds).

    Example:
        >>> lower(5.2215344), lower(-0.46211716, 4)
        ('5.22153', '-0.4622')
    """
    return _round(x, digits, ROUND_FLOOR)
