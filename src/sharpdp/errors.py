"""Exceptions raised by sharpdp.

Every error sharpdp raises derives from :class:`SharpDPError`, so callers can catch the library's own
failures in one place. Messages name the offending parameter and its value.
"""

from __future__ import annotations

import math

__all__ = [
    "AccuracyNotReached",
    "BudgetExceeded",
    "InvalidParameter",
    "LedgerError",
    "NoExplicitBound",
    "NotImplied",
    "NumericalError",
    "SharpDPError",
]


class SharpDPError(Exception):
    """Base class of every exception raised by sharpdp."""


class InvalidParameter(SharpDPError, ValueError):
    """A parameter is out of its domain (NaN, negative, δ ∉ [0, 1), wrong type, ...)."""


class NotImplied(SharpDPError):
    """The source guarantee implies no guarantee of the requested kind.

    Example: (ε, δ)-DP with δ > 0 implies no zCDP bound at all, because it allows an event of
    probability δ on which the privacy loss is infinite.
    """


class NoExplicitBound(NotImplied):
    """A guarantee of the requested kind is implied, but no bound with explicit constants is known.

    sharpdp never ships a bound it cannot state exactly; this is raised instead.
    """


class NumericalError(SharpDPError, ArithmeticError):
    """A numerical routine could not certify its result (e.g. a root finder found no bracket)."""


class AccuracyNotReached(NumericalError):
    """A composition's value is valid but could not be certified to the requested accuracy.

    ``compose(..., accuracy=a)`` promises exact ≤ value ≤ exact·(1 + a) + s (an absolute slack s
    of 1e-12 on ε, 1e-21 on δ: :attr:`slack`). When the sharpest analysis only brackets the exact
    value more loosely than that (for instance the PLD at atoms off its grid, once its grids reach
    their size limit), the query refuses rather than break the promise; the error still carries
    the valid bound.

    Attributes:
        quantity: ``"epsilon"`` or ``"delta"``.
        at: the δ (for ε) or ε (for δ) of the query.
        value: the least valid upper bound found (safe to use: it is never below the exact value).
        lower: a certified lower end of the exact value.
        accuracy: the relative accuracy requested.
        slack: the absolute slack allowed on top of it (float-level; see ``certifies``).
    """

    def __init__(
        self,
        quantity: str,
        at: float,
        value: float,
        lower: float,
        accuracy: float,
        slack: float = 0.0,
    ) -> None:
        self.quantity = quantity
        self.at = at
        self.value = value
        self.lower = lower
        self.accuracy = accuracy
        self.slack = slack
        width = (value - lower) / value if value > 0.0 else 0.0
        arg = "delta" if quantity == "epsilon" else "epsilon"
        super().__init__(
            f"{quantity}({arg}={at!r}) could not be certified to the relative accuracy "
            f"{accuracy:g}: the exact value lies in [{lower!r}, {value!r}] (relative width "
            f"{width:.2g}); {value!r} is a valid bound (this error's .value), or compose with "
            f"accuracy >= {_coarser(width):g}"
        )

    def certifies(self, value: float) -> bool:
        """Whether ``value`` (an upper bound on the exact value) is within the accuracy of it:
        value − lower ≤ accuracy·value + slack."""
        return value - self.lower <= self.accuracy * value + self.slack


def _coarser(width: float) -> float:
    """The accuracy setting to suggest: ``width`` rounded up to 1, 2 or 5 times a power of 10."""
    if not 0.0 < width < 1.0:
        return 0.5
    power = 10.0 ** math.floor(math.log10(width))
    return min(next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= width), 0.5)


class BudgetExceeded(SharpDPError):
    """A spend would exceed the accountant's budget; nothing was recorded."""


class LedgerError(SharpDPError):
    """The durable ledger is unreadable, corrupted or of an unknown format version."""
