"""The service's refusals, each with its HTTP status (the app turns them into JSON 4xx)."""

from __future__ import annotations

from sharpdp.errors import SharpDPError

__all__ = ["Conflict", "Forbidden", "NotFound", "ServiceError", "Unauthorized"]


class ServiceError(SharpDPError):
    """A refused request; ``status`` is its HTTP status code."""

    status = 400


class Unauthorized(ServiceError):
    """No bearer token, or one that is unknown, forged, expired or revoked."""

    status = 401


class Forbidden(ServiceError):
    """A valid token without the right (an analyst's token on an admin route)."""

    status = 403


class NotFound(ServiceError):
    """No such data set, analyst or release (another analyst's release reads as none)."""

    status = 404


class Conflict(ServiceError):
    """The request contradicts the state (an analyst that already exists)."""

    status = 409
