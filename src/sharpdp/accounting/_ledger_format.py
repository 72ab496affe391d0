"""The ledger's format constants, shared by its SQLite and PostgreSQL storages (``docs/ledger.md``).

Kept apart from :mod:`sharpdp.accounting.ledger` so that the PostgreSQL storage
(:mod:`sharpdp.accounting._postgres`, which the ledger loads only for ``postgresql://`` URLs) can
use them without importing the ledger back.
"""

from __future__ import annotations

from datetime import datetime

from sharpdp._version import __version__

__all__ = [
    "BUDGET_COLUMNS",
    "BUDGET_TRIGGER",
    "COLUMNS",
    "FORMAT_NAME",
    "SCHEMA_VERSION",
    "isoformat",
    "library_version",
]

#: The value of ``meta.format`` in every sharpdp ledger.
FORMAT_NAME = "sharpdp-ledger"
#: The ledger schema version this library writes (it also reads, and migrates, version 1).
SCHEMA_VERSION = 2

#: The columns of the ``spends`` table, in order.
COLUMNS = (
    "id",
    "analyst",
    "period",
    "item",
    "count",
    "created_at",
    "measure",
    "at_delta",
    "spent_after",
    "budget",
    "library_version",
)

#: The columns of the ``budgets`` table (schema version 2), in order.
BUDGET_COLUMNS = (
    "id",
    "analyst",
    "period",
    "budget",
    "created_at",
    "reason",
    "library_version",
)

#: The name of the trigger that ties every new spend to its account's recorded budget.
BUDGET_TRIGGER = "spends_check_budget"


def isoformat(stamp: datetime) -> str:
    """A ``created_at`` text: ISO 8601 with microseconds and the UTC offset."""
    return stamp.isoformat(timespec="microseconds")


def library_version() -> str:
    """The ``library_version`` text of rows written now."""
    return __version__
