"""The ledger's format constants, shared by its SQLite and PostgreSQL storages (``docs/ledger.md``).

Kept apart from :mod:`sharpdp.accounting.ledger` so that the PostgreSQL storage
(:mod:`sharpdp.accounting._postgres`, which the ledger loads only for ``postgresql://`` URLs) can
use them without importing the ledger back.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sharpdp._version import __version__
from sharpdp.errors import LedgerError

__all__ = [
    "BUDGET_COLUMNS",
    "BUDGET_TRIGGER",
    "COLUMNS",
    "FORMAT_NAME",
    "SCHEMA_VERSION",
    "isoformat",
    "library_version",
    "schema_version",
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


def schema_version(meta: Mapping[str, object], where: str, readable: Collection[int]) -> int:
    """The schema version of a ledger's ``meta`` table, checked (``where`` names the ledger).

    Raises:
        LedgerError: another ``format``; an unreadable, newer or unknown (not ``readable``)
            schema version.
    """
    if meta.get("format") != FORMAT_NAME:
        raise LedgerError(f"{where} is not a sharpdp ledger (meta.format = {meta.get('format')!r})")
    raw = meta.get("schema_version")
    # ASCII digits only: str.isdigit() also accepts "²" (which int() refuses) and "٢"
    if not (isinstance(raw, str) and raw.isascii() and raw.isdigit()):
        raise LedgerError(f"{where} has an unreadable schema version {raw!r}")
    version = int(raw)
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"{where} has schema version {version}, newer than this sharpdp reads "
            f"({SCHEMA_VERSION}); upgrade sharpdp"
        )
    if version not in readable:
        raise LedgerError(f"{where} has unknown schema version {version}")
    return version
