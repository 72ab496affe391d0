"""Stored releases: what was released to whom, each tied to the ledger row of its spend.

Order of events for ``POST /queries`` (principle 6): ``Query.run()`` aggregates in the engine
(nothing released), commits the spend to the ledger (the accountant's check-and-record
transaction), then adds the noise and returns the result with that ledger entry; the result is
stored here with the entry's row id, and only then returned. A crash before the store leaves a spend without a
release (budget lost to the analyst, never privacy); a release without its spend cannot happen.
Asking for a stored release again costs nothing: it is post-processing of a released result.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any

from sharpdp.service._db import Database

__all__ = ["Releases"]


class Releases:
    """The releases table of the service's state file."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def store(
        self,
        analyst: str,
        period: str,
        dataset: str,
        spend_id: int,
        request: dict[str, Any],
        result: dict[str, Any],
    ) -> tuple[str, str]:
        """Record a release durably; return its (id, creation time)."""
        release_id = secrets.token_urlsafe(12)
        created = datetime.now(UTC).isoformat()
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO releases (id, analyst, period, dataset, spend_id, request, result, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    release_id,
                    analyst,
                    period,
                    dataset,
                    spend_id,
                    json.dumps(request, allow_nan=False),
                    json.dumps(result, allow_nan=False),
                    created,
                ),
            )
        return release_id, created

    def get(self, analyst: str, release_id: str) -> dict[str, Any] | None:
        """The release ``release_id`` if it is ``analyst``'s (else ``None``: another analyst's
        release is indistinguishable from a missing one)."""
        rows = self._db.read(
            "SELECT id, period, dataset, spend_id, request, result, created_at FROM releases "
            "WHERE id = ? AND analyst = ?",
            (release_id, analyst),
        )
        if not rows:
            return None
        rid, period, dataset, spend_id, request, result, created = rows[0]
        return {
            "id": rid,
            "period": period,
            "dataset": dataset,
            "spend_id": spend_id,
            "request": json.loads(request),
            "created_at": created,
            **json.loads(result),
        }

    def by_spend(self, analyst: str, period: str) -> dict[int, str]:
        """Spend row id → release id, for the analyst's releases of one period."""
        rows = self._db.read(
            "SELECT spend_id, id FROM releases WHERE analyst = ? AND period = ?", (analyst, period)
        )
        return {int(s): str(r) for s, r in rows}

    def count(self, analyst: str | None = None) -> int:
        """How many releases are stored (of one analyst, or of all)."""
        if analyst is None:
            rows = self._db.read("SELECT COUNT(*) FROM releases")
        else:
            rows = self._db.read("SELECT COUNT(*) FROM releases WHERE analyst = ?", (analyst,))
        return int(rows[0][0])
