"""Exceptions raised by sharpdp.

Every error sharpdp raises derives from :class:`SharpDPError`, so callers can catch the library's own
failures in one place. Messages name the offending parameter and its value.
"""

from __future__ import annotations

__all__ = [
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


class BudgetExceeded(SharpDPError):
    """A spend would exceed the accountant's budget; nothing was recorded."""


class LedgerError(SharpDPError):
    """The durable ledger is unreadable, corrupted or of an unknown format version."""
