"""Bearer tokens: issued once, stored only as salted scrypt hashes, compared in constant time.

A token reads ``sdp_<id>_<secret>``: ``id`` (16 hex digits) names its row, ``secret``
(``secrets.token_urlsafe(32)``, 256 bits) is checked against ``scrypt(secret, salt)`` (RFC 7914,
n = 2^14, r = 8, p = 1: ~16 MiB and tens of milliseconds per check, standard library
``hashlib.scrypt``) with ``hmac.compare_digest``. The plaintext is never stored.

So that a request does not pay for scrypt every time, a process remembers the SHA-256 of each
token it has verified (in memory only); the token's row is still read on every request, so a
revocation or an expiry applies at once, in every worker. The admin token comes from the
environment (``SHARPDP_ADMIN_TOKEN``) and is compared through SHA-256 digests in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sharpdp.errors import InvalidParameter
from sharpdp.service._db import Database
from sharpdp.service.config import check_budget, check_period
from sharpdp.service.errors import Conflict, Forbidden, NotFound, Unauthorized

__all__ = ["Analyst", "Authenticator", "hash_secret"]

_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32, "maxmem": 64 * 1024 * 1024}
_PREFIX = "sdp_"
_MAX_TOKEN = 200
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.@")


def hash_secret(secret: str, salt: bytes) -> bytes:
    """scrypt(secret, salt) with the parameters above (32 bytes)."""
    return hashlib.scrypt(secret.encode(), salt=salt, **_SCRYPT)


def _now() -> datetime:
    return datetime.now(UTC)


def check_name(name: object) -> str:
    """An analyst name: 1–64 characters among letters, digits and ``_-.@``, starting with a
    letter or digit (``.`` and ``..`` would be path segments in the admin routes' URLs)."""
    if (
        not isinstance(name, str)
        or not 0 < len(name) <= 64
        or not set(name) <= _NAME_CHARS
        or not name[0].isalnum()
    ):
        raise InvalidParameter(
            "name must be 1 to 64 letters, digits or _-.@ characters, starting with a letter or "
            f"digit, got {name!r}"
        )
    return name


@dataclass(frozen=True, slots=True)
class Analyst:
    """An authenticated analyst.

    Attributes:
        name: the analyst (the ledger account's analyst).
        budget: the analyst's budget policy, spelled as on the command line.
        period: the budget period (``month``, ``day``, ``year`` or ``all``).
        token_id: the id of the token used.
    """

    name: str
    budget: str
    period: str
    token_id: str


class Authenticator:
    """Analysts and their tokens, in the service's state file.

    Args:
        db: the state file.
        admin_token: the admin bearer token (``None``: admin routes refuse everyone).
    """

    def __init__(self, db: Database, admin_token: str | None) -> None:
        self._db = db
        self._admin = None if not admin_token else hashlib.sha256(admin_token.encode()).digest()
        self._verified: dict[bytes, str] = {}  # SHA-256(token) → token id, this process only
        self._checking: dict[bytes, threading.Lock] = {}
        self._lock = threading.Lock()

    # -- admin ------------------------------------------------------------------------------------
    def require_admin(self, token: str | None) -> None:
        """Raise unless ``token`` is the admin token (401 missing/wrong, 403 an analyst's)."""
        if token is None:
            raise Unauthorized("this route needs the admin bearer token")
        digest = hashlib.sha256(token.encode()).digest()
        if self._admin is not None and hmac.compare_digest(digest, self._admin):
            return
        if token.startswith(_PREFIX):
            try:
                self.analyst(token)
            except Unauthorized:
                pass
            else:
                raise Forbidden("this route needs the admin token; an analyst token cannot use it")
        raise Unauthorized("invalid admin token")

    def create_analyst(
        self, name: str, budget: str, period: str, ttl_seconds: float | None = None
    ) -> str:
        """Record a new analyst with its budget policy; return its first token.

        Raises:
            InvalidParameter: a bad name, budget, period or ttl.
            Conflict: the analyst exists.
        """
        check_name(name)
        check_budget(budget, "budget")
        check_period(period, "period")
        with self._db.write() as conn:
            if conn.execute("SELECT 1 FROM analysts WHERE name = ?", (name,)).fetchone():
                raise Conflict(f"analyst {name!r} already exists")
            conn.execute(
                "INSERT INTO analysts (name, budget, period, created_at) VALUES (?, ?, ?, ?)",
                (name, budget, period, _now().isoformat()),
            )
            return self._insert_token(conn, name, ttl_seconds)

    def issue_token(self, name: str, ttl_seconds: float | None = None) -> str:
        """A new token for an existing analyst (earlier tokens stay valid until revoked)."""
        with self._db.write() as conn:
            if not conn.execute("SELECT 1 FROM analysts WHERE name = ?", (name,)).fetchone():
                raise NotFound(f"no analyst {name!r}")
            return self._insert_token(conn, name, ttl_seconds)

    def revoke(self, name: str) -> int:
        """Revoke every live token of analyst ``name``; return how many."""
        with self._db.write() as conn:
            if not conn.execute("SELECT 1 FROM analysts WHERE name = ?", (name,)).fetchone():
                raise NotFound(f"no analyst {name!r}")
            now = _now().isoformat()
            cursor = conn.execute(  # live tokens only: an expired one is not counted as revoked
                "UPDATE tokens SET revoked_at = ? WHERE analyst = ? AND revoked_at IS NULL "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (now, name, now),
            )
            return int(cursor.rowcount)

    def set_policy(self, name: str, budget: str) -> None:
        """Record ``budget`` as the analyst's budget policy (for the periods to come)."""
        check_budget(budget, "budget")
        with self._db.write() as conn:
            cursor = conn.execute("UPDATE analysts SET budget = ? WHERE name = ?", (budget, name))
            if cursor.rowcount != 1:
                raise NotFound(f"no analyst {name!r}")

    def policy(self, name: str) -> tuple[str, str]:
        """The analyst's (budget, period) policy."""
        rows = self._db.read("SELECT budget, period FROM analysts WHERE name = ?", (name,))
        if not rows:
            raise NotFound(f"no analyst {name!r}")
        return str(rows[0][0]), str(rows[0][1])

    def analysts(self) -> list[dict[str, object]]:
        """Every analyst with its policy and live-token count."""
        rows = self._db.read(  # live: neither revoked nor expired (as revoke() counts them)
            "SELECT a.name, a.budget, a.period, a.created_at, "
            "(SELECT COUNT(*) FROM tokens t WHERE t.analyst = a.name AND t.revoked_at IS NULL "
            "AND (t.expires_at IS NULL OR t.expires_at > ?)) "
            "FROM analysts a ORDER BY a.name",
            (_now().isoformat(),),
        )
        return [
            {"name": n, "budget": b, "period": p, "created_at": c, "live_tokens": k}
            for n, b, p, c, k in rows
        ]

    # -- analysts ---------------------------------------------------------------------------------
    def analyst(self, token: str | None) -> Analyst:
        """The analyst a bearer token belongs to.

        Raises:
            Unauthorized: no token, a malformed, unknown, forged, expired or revoked one.
        """
        if token is None:
            raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")
        if len(token) > _MAX_TOKEN or not token.startswith(_PREFIX) or token.count("_") < 2:
            if self._admin is not None and hmac.compare_digest(
                hashlib.sha256(token.encode()).digest(), self._admin
            ):  # the reverse of an analyst token on an admin route (403 there)
                raise Forbidden(
                    "this route needs an analyst's token; the admin token cannot use it"
                )
            raise Unauthorized("malformed bearer token")
        token_id, _, secret = token[len(_PREFIX) :].partition("_")
        rows = self._db.read(
            "SELECT t.salt, t.hash, t.expires_at, t.revoked_at, a.name, a.budget, a.period "
            "FROM tokens t JOIN analysts a ON a.name = t.analyst WHERE t.id = ?",
            (token_id,),
        )
        if not rows:
            raise Unauthorized("unknown or invalid bearer token")
        salt, stored, expires, revoked, name, budget, period = rows[0]
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            known = self._verified.get(digest) == token_id
            checking = self._checking.setdefault(digest, threading.Lock())
        try:
            if not known:
                with checking:  # concurrent first uses of one token run scrypt once
                    with self._lock:
                        known = self._verified.get(digest) == token_id
                    if not known:
                        if not hmac.compare_digest(hash_secret(secret, bytes(salt)), bytes(stored)):
                            raise Unauthorized("unknown or invalid bearer token")
                        with self._lock:
                            if len(self._verified) > 100_000:
                                self._verified.clear()
                            self._verified[digest] = token_id
        finally:
            with self._lock:
                self._checking.pop(digest, None)
        if revoked is not None:
            raise Unauthorized("this token was revoked")
        if expires is not None and datetime.fromisoformat(str(expires)) <= _now():
            raise Unauthorized("this token has expired")
        return Analyst(str(name), str(budget), str(period), token_id)

    # -- internals --------------------------------------------------------------------------------
    def _insert_token(self, conn: sqlite3.Connection, name: str, ttl_seconds: float | None) -> str:
        expires = None
        if ttl_seconds is not None:
            if not ttl_seconds > 0 or ttl_seconds > 10 * 366 * 86400:
                raise InvalidParameter(f"ttl_seconds must be in (0, 10 years], got {ttl_seconds!r}")
            expires = (_now() + timedelta(seconds=ttl_seconds)).isoformat()
        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        conn.execute(
            "INSERT INTO tokens (id, analyst, salt, hash, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (token_id, name, salt, hash_secret(secret, salt), _now().isoformat(), expires),
        )
        return f"{_PREFIX}{token_id}_{secret}"
