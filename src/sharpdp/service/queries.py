"""JSON bodies → data-layer queries, through a registry (one entry per query kind).

Each kind is a pydantic model (the OpenAPI schema of its body: strict types, unknown fields
refused) and the :class:`~sharpdp.data.Session` method it calls, parameters by name. Building the
query validates the rest (columns exist, keys, bounds, caps: :class:`~sharpdp.InvalidParameter`,
answered 422) and touches neither data nor budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import sharpdp as sdp
from sharpdp.data.release import Release, json_rows
from sharpdp.service._body import Body

__all__ = [
    "QUERIES",
    "HexKey",
    "QueryKind",
    "QueryRequest",
    "build",
    "explanation",
    "release_payload",
]


class HexKey(BaseModel):
    """A byte-string key (for a binary column), as hexadecimal text: ``{"hex": "6162"}`` is
    ``b"ab"``; released byte strings come back in the same form."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    hex: str = Field(max_length=2048, pattern=r"^(?:[0-9a-fA-F]{2})*$")


Key = str | int | float | bool | HexKey
Columns = (
    Annotated[str, Field(min_length=1, max_length=256)]
    | Annotated[
        list[Annotated[str, Field(min_length=1, max_length=256)]],
        Field(min_length=1, max_length=16),
    ]
)
Cap = Annotated[int, Field(ge=1, le=1_000_000)]
Bounds = Annotated[list[float], Field(min_length=2, max_length=2, description="[lower, upper]")]


class _Body(Body):
    dataset: str = Field(min_length=1, max_length=128, description="a served data set")
    privacy: str = Field(
        min_length=1,
        max_length=128,
        description="this query's privacy: pure:ε, approx:ε,δ, zcdp:ρ or approxzcdp:ρ,δ",
        examples=["pure:0.1"],
    )
    level: float = Field(0.95, gt=0.0, lt=1.0, description="confidence level of intervals")


class CountBody(_Body):
    """``Session.count``: the number of rows (≤ ``max_rows`` per person)."""

    query: Literal["count"]
    max_rows: Cap | None = None


class CountByBody(_Body):
    """``Session.count_by``: counts per key of ``column`` (public ``keys``, or found privately)."""

    query: Literal["count_by"]
    column: Columns
    keys: list[Key | list[Key]] | None = None
    max_groups: Cap | None = None
    max_rows: Cap | None = None


class _ValueBody(_Body):
    """What the queries over a clamped numeric column share (sum, mean, quantile)."""

    column: str = Field(min_length=1, max_length=256)
    bounds: Bounds
    max_rows: Cap | None = None
    by: Columns | None = None
    keys: list[Key | list[Key]] | None = None
    max_groups: Cap | None = None


class SumBody(_ValueBody):
    """``Session.sum``: a clamped sum (per public key with ``by``)."""

    query: Literal["sum"]
    granularity: float | None = None
    clamp: Literal["row", "person"] = "row"


class MeanBody(_ValueBody):
    """``Session.mean``: a clamped mean (per public key with ``by``)."""

    query: Literal["mean"]
    granularity: float | None = None


class QuantileBody(_ValueBody):
    """``Session.quantile``: the ``q``-quantile of a clamped column."""

    query: Literal["quantile"]
    q: float
    cells: int | None = Field(None, ge=1)
    support: Literal["cells", "points"] = "cells"


class TopKBody(_Body):
    """``Session.top_k``: the top ``k`` values of ``column`` by bounded count."""

    query: Literal["top_k"]
    column: str = Field(min_length=1, max_length=256)
    k: int = Field(ge=1, le=10_000)
    keys: list[Key] | None = None
    max_groups: Cap | None = None
    max_rows: Cap | None = None
    by: Columns | None = None
    by_keys: list[Key | list[Key]] | None = None
    k_bar: int | None = Field(None, ge=1, le=1_000_000)


class SelectBestBody(_Body):
    """``Session.select_best``: the candidate approved by the most persons, among public ``keys``
    or, without them, among unknown ones (LimitDom with k = 1; needs δ > 0)."""

    query: Literal["select_best"]
    column: str = Field(min_length=1, max_length=256)
    keys: list[Key] | None = None
    max_groups: Cap | None = None


#: The body of ``POST /queries`` and ``POST /explain``: one of the kinds, by ``query``.
QueryRequest = Annotated[
    CountBody | CountByBody | SumBody | MeanBody | QuantileBody | TopKBody | SelectBestBody,
    Field(discriminator="query"),
]


@dataclass(frozen=True)
class QueryKind:
    """How one kind of body becomes a query.

    Attributes:
        body: the pydantic model of the body.
        method: the :class:`~sharpdp.data.Session` method.
        renames: body field → the method's parameter name (``column`` → ``columns``).
        key_fields: fields holding keys (JSON arrays of a multi-column key become tuples).
    """

    body: type[_Body]
    method: str
    renames: tuple[tuple[str, str], ...] = ()
    key_fields: tuple[str, ...] = ("keys",)


#: Query kinds by the name used in the ``query`` field.
QUERIES: dict[str, QueryKind] = {
    "count": QueryKind(CountBody, "count", key_fields=()),
    "count_by": QueryKind(CountByBody, "count_by", renames=(("column", "columns"),)),
    "sum": QueryKind(SumBody, "sum"),
    "mean": QueryKind(MeanBody, "mean"),
    "quantile": QueryKind(QuantileBody, "quantile"),
    "top_k": QueryKind(TopKBody, "top_k", key_fields=("keys", "by_keys")),
    "select_best": QueryKind(SelectBestBody, "select_best"),
}

_COMMON = frozenset({"dataset", "query", "privacy", "level"})


def _key(value: Any) -> Any:
    """A key as the data layer takes it: a list (several columns) becomes a tuple, and a
    ``{"hex": ...}`` object (dumped from :class:`HexKey`) its bytes."""
    if isinstance(value, list):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict) and set(value) == {"hex"}:
        return bytes.fromhex(value["hex"])
    return value


def _keys(value: Any) -> Any:
    if isinstance(value, list):
        return [_key(v) for v in value]
    return value


def build(session: sdp.data.Session, body: _Body, privacy: sdp.Guarantee) -> sdp.data.Query:
    """The query plan of ``body`` on ``session`` (validated; nothing run or spent).

    Raises:
        InvalidParameter: a parameter the data layer refuses (named in the message).
    """
    name = str(getattr(body, "query"))  # noqa: B009 - every registered body has one
    kind = QUERIES[name]
    params = {k: v for k, v in body.model_dump(exclude_unset=True).items() if k not in _COMMON}
    for field in kind.key_fields:
        if field in params:
            params[field] = _keys(params[field])
    for old, new in kind.renames:
        if old in params:
            params[new] = params.pop(old)
    if "bounds" in params:
        params["bounds"] = tuple(params["bounds"])
    query: sdp.data.Query = getattr(session, kind.method)(**params, privacy=privacy)
    return query


def _finite(x: float) -> float | str:
    if math.isnan(x):
        raise sdp.NumericalError("a NaN reached the response (a bug)")
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def explanation(query: sdp.data.Query) -> dict[str, Any]:
    """``query.explain()`` as JSON: the price, touching neither data nor budget."""
    e = query.explain()
    item, count = e.charge
    return {
        "description": e.query,
        "engine": e.engine,
        "privacy_unit": e.privacy_unit,
        "bounding": str(e.bounding),
        "statistics": [s.describe() for s in e.statistics],
        "notes": list(e.notes),
        "charge": {"item": repr(item), "count": count},
        "cost": _finite(e.cost),
        "measure": e.measure,
        "route": e.route,
        "budget": repr(e.budget),
        "spent_before": _finite(e.spent_before),
        "spent_after": _finite(e.spent_after),
        "remaining_after": _finite(e.remaining_after),
        "fits": e.fits,
        "text": str(e),
    }


def release_payload(release: Release, level: float) -> dict[str, Any]:
    """A release as JSON: its rows (with intervals at ``level``) and noise laws."""
    frame, failure = release.released_rows(level)  # (paid for: never lost to an interval)
    payload = {
        "description": release.query,
        "keys": list(release.keys),
        "level": level,
        "rows": json_rows(frame),
        "noise": {name: repr(law) for name, law in release.noise.items()},
    }
    if failure is not None:
        payload["intervals_error"] = failure
    return payload
