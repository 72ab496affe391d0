"""The FastAPI application: ``create_app(config)``.

Routes (JSON in and out; the OpenAPI schema is at ``/openapi.json``):

* ``POST /admin/analysts`` (admin) — create an analyst with a budget policy; returns its token.
* ``PUT /admin/analysts/{name}/budget`` (admin) — change the budget (policy and current account).
* ``POST /admin/analysts/{name}/tokens``, ``DELETE /admin/analysts/{name}/tokens`` (admin) —
  issue a new token, revoke every token. ``GET /admin/analysts`` lists them.
* ``POST /queries`` (analyst) — run one query: the spend is checked and recorded in one ledger
  transaction, then the result is computed, stored with its spend and returned.
* ``POST /explain`` (analyst) — price the same body without spending.
* ``GET /budget`` (analyst) — the caller's budget, spent, remaining, and each spend with the
  theorem that prices it and the release it paid for.
* ``GET /releases/{id}`` (analyst) — a past release of the caller (free: post-processing).
* ``GET /datasets`` (analyst) — the served data sets and their columns.
* ``GET /calculator/items``, ``POST /calculator/compose`` (public) — the privacy calculator
  (:mod:`sharpdp.service.calculator`).
* ``GET /`` and ``GET /calculator`` — the analyst's page and the calculator's page
  (:mod:`sharpdp.service.pages`; assets under ``/static``).

Every refusal is a 4xx with ``{"error": "..."}``: 401 (no/bad/expired/revoked token), 403 (over
budget: nothing spent; or an analyst token on an admin route), 404 (unknown data set or release,
including another analyst's), 409 (analyst exists; a budget below what is spent), 413 (body too
large), 422 (a malformed body or a parameter the data layer refuses), 503 (ledger busy).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

import sharpdp as sdp
from sharpdp._validate import json_unique
from sharpdp._version import __version__
from sharpdp.accounting.accountant import describe_left, item_text
from sharpdp.accounting.ledger import (
    Entry,
    History,
    Ledger,
    PostgresLedger,
    Reading,
    is_postgres_url,
)
from sharpdp.cli.budget import Cost, spend_cost
from sharpdp.service import calculator, pages, spelling
from sharpdp.service._body import Body
from sharpdp.service._db import Database
from sharpdp.service.auth import Analyst, Authenticator
from sharpdp.service.config import ServiceConfig, check_period, example_config, load
from sharpdp.service.errors import Conflict, NotFound, ServiceError
from sharpdp.service.queries import QueryRequest, build, explanation, release_payload
from sharpdp.service.releases import Releases
from sharpdp.service.sessions import Datasets, load_all, period_label

__all__ = [
    "ADMIN_TOKEN_ENV",
    "CONFIG_ENV",
    "Service",
    "app_from_environment",
    "create_app",
    "open_ledger",
]

#: The environment variable holding the admin bearer token.
ADMIN_TOKEN_ENV = "SHARPDP_ADMIN_TOKEN"
#: The environment variable naming the config file of workers started by ``sharpdp serve``
#: (``example:DIR`` for the flights example with its ledger in DIR).
CONFIG_ENV = "SHARPDP_SERVICE_CONFIG"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_log = logging.getLogger("sharpdp.service")


class Guard:
    """ASGI middleware: a request body over ``limit`` bytes gets 413 before the app reads it
    (``Content-Length`` checked first; chunked bodies counted as they arrive); every response
    carries a ``Server-Timing`` header: ``app`` (ms from the body's arrival to the response) and
    the parts timed by the routes (``auth``; for queries ``check`` — the dry run —, ``spend`` —
    the accountant's check and the ledger transaction —, ``engine`` — building the plan, running
    it in the engine, adding noise —, ``store`` and ``respond`` — encoding the JSON), each also
    as ``<part>-cpu``, the CPU time of the thread that ran it. ``app`` minus the parts is the
    rest: body validation, waiting for a thread of the pool, the framework."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entered = time.perf_counter()
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _refuse_early(send, "invalid Content-Length", 400, entered)
                    return
                if declared > self.limit:
                    await _refuse_early(send, f"request body over {self.limit} bytes", 413, entered)
                    return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _refuse_early(send, f"request body over {self.limit} bytes", 413, entered)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        if body:  # a repeated key: FastAPI's JSON reader would keep its last value unsaid
            try:
                json_unique(body)
            except sdp.InvalidParameter as err:
                await _refuse_early(send, f"request body: {err}", 422, entered)
                return
            except ValueError:  # not JSON (or not UTF-8): the routes answer it as such
                pass
        sent = False
        started = False
        start = time.perf_counter()

        async def timed(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                total = (time.perf_counter() - start) * 1000.0
                timing = f"app;dur={total:.3f}"
                parts = scope.get("state", {}).get("timings", {})
                timing += "".join(f", {k};dur={v:.3f}" for k, v in parts.items())
                message["headers"] = [
                    *message.get("headers", []),
                    (b"server-timing", timing.encode()),
                ]
            await send(message)

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            await self.app(scope, replay, timed)
        except Exception as exc:
            # a bug: logged for the operator, answered as JSON, the connection kept open
            # (Starlette's own last-resort handler re-raises, which drops the connection)
            if started:
                raise
            _log.exception("internal error on %s %s", scope.get("method"), scope.get("path"))
            await _error(500, f"internal error ({type(exc).__name__})")(scope, replay, send)


async def _refuse_early(send: Send, message: str, status: int, since: float) -> None:
    """Answer a request the middleware refuses before the app sees it (too large, a bad
    Content-Length, a repeated JSON key), with its ``Server-Timing`` as every response has
    (``app``: ms since the middleware took the request)."""
    timing = f"app;dur={(time.perf_counter() - since) * 1000.0:.3f}"
    # (compact, UTF-8: the same bytes as the app's JSONResponse bodies)
    payload = json.dumps({"error": message}, ensure_ascii=False, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
                (b"server-timing", timing.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


# -- bodies and answers ---------------------------------------------------------------------------
class NewAnalyst(Body):
    """``POST /admin/analysts``."""

    name: str = Field(min_length=1, max_length=64, examples=["ana"])
    # (absent: the configured policy; an empty string was read as absent)
    budget: str | None = Field(None, min_length=1, max_length=128, examples=["approx:1,1e-6"])
    period: str | None = Field(None, min_length=1, max_length=16, examples=["month"])
    ttl_seconds: float | None = Field(None, gt=0, description="token lifetime (default: none)")


class NewToken(Body):
    """``POST /admin/analysts/{name}/tokens``."""

    ttl_seconds: float | None = Field(None, gt=0)


class NewBudget(Body):
    """``PUT /admin/analysts/{name}/budget``."""

    budget: str = Field(min_length=1, max_length=128, examples=["approx:2,1e-6"])
    reason: str = Field("changed by the admin through sharpdp serve", min_length=1, max_length=500)


class Token(BaseModel):
    """An analyst and a token (shown once; only its salted hash is stored)."""

    name: str
    token: str


def _json(value: Any) -> Any:
    """Non-finite floats as ``"inf"``/``"-inf"`` (JSON has none)."""
    if isinstance(value, float):
        if value != value:
            raise sdp.NumericalError("a NaN reached the response (a bug)")
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


def _payload(value: dict[str, Any]) -> dict[str, Any]:
    """A JSON-safe copy of a response body (see :func:`_json`)."""
    out: dict[str, Any] = _json(value)
    return out


def _make_directory(directory: Path, what: str) -> None:
    """Create ``directory`` (and its parents) for ``what``; a clear error when it cannot be."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        why = err.strerror or type(err).__name__
        raise sdp.LedgerError(
            f"cannot create the directory {str(directory)!r} of {what}: {why}"
        ) from err


class Service:
    """What the routes share: the config, the ledger, the state file and the data sets."""

    def __init__(self, config: ServiceConfig, admin_token: str | None) -> None:
        self.config = config
        loaded = load_all(config)  # first: a file it cannot serve leaves no ledger behind
        if isinstance(config.ledger, Path):
            _make_directory(config.ledger.parent, "[ledger] path")
        _make_directory(config.state.parent, "the state file")
        self.ledger = open_ledger(config.ledger)
        self.db = Database(config.state)
        self.auth = Authenticator(self.db, admin_token)
        self.releases = Releases(self.db)
        self.datasets = Datasets(config, self.ledger, loaded)
        self._costs: dict[tuple[Any, ...], Cost] = {}
        self._costs_lock = threading.Lock()

    def close(self) -> None:
        """Close the ledger and the state file."""
        self.ledger.close()
        self.db.close()

    def cost(self, item: sdp.Guarantee, count: int, measure: str, at: float | None) -> Cost:
        """One spend's own cost and theorem (cached: histories repeat items)."""
        key = (item, count, measure, at)
        with self._costs_lock:
            found = self._costs.get(key)
        if found is None:
            found = spend_cost(item, count, measure, at)
            with self._costs_lock:
                if len(self._costs) > 10_000:
                    self._costs.clear()
                self._costs[key] = found
        return found


def _respond(request: Request, value: dict[str, Any]) -> Response:
    """``value`` as a JSON response, encoded here (timed as ``respond``) rather than by FastAPI:
    the same bytes as its ``JSONResponse`` (UTF-8, compact), without validating the dict again
    against the route's ``dict[str, Any]`` model."""
    start = _clock()
    body = json.dumps(
        _payload(value), ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode()
    response = Response(body, media_type="application/json")
    _timed(request, "respond", start)
    return response


_bearer = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def _clock() -> tuple[float, float]:
    """(wall clock, this thread's CPU time), in seconds."""
    return time.perf_counter(), time.thread_time()


def _timed(
    request: Request, name: str, start: tuple[float, float], end: tuple[float, float] | None = None
) -> None:
    """Record ``name`` from ``start`` to ``end`` (default: now) for the ``Server-Timing`` header:
    the wall-clock ms as ``name`` and this thread's CPU ms as ``name-cpu`` (the difference is
    waiting: for the GIL, a lock, the disk)."""
    timings = getattr(request.state, "timings", None)
    if timings is None:
        timings = request.state.timings = {}
    wall, cpu = _clock() if end is None else end
    timings[name] = timings.get(name, 0.0) + (wall - start[0]) * 1000.0
    timings[f"{name}-cpu"] = timings.get(f"{name}-cpu", 0.0) + (cpu - start[1]) * 1000.0


#: When this thread's last spend committed (``_clock()``), set by the service's ledger.
_SPENT = threading.local()


def _split(request: Request, start: tuple[float, float], spent: tuple[float, float] | None) -> None:
    """Time one ``Query.run`` (and the release's JSON) as two phases, split where its spend
    committed: ``spend`` from ``start`` to the commit (the accountant's check and the ledger
    transaction), ``engine`` from the commit to now (the engine and the noise). Without a commit
    in this thread (none recorded), all of it is ``spend``."""
    if spent is None:
        _timed(request, "spend", start)
        return
    _timed(request, "spend", start, spent)
    _timed(request, "engine", spent)


class _TimedLedger(Ledger):
    """The SQLite :class:`Ledger`, remembering in the thread when each of its spends committed
    (so that ``Server-Timing`` can tell the spend from the engine inside ``Query.run``)."""

    __slots__ = ()

    def append(
        self,
        analyst: str,
        period: str,
        item: sdp.Guarantee,
        count: int,
        *,
        decide: Callable[[History], Reading],
    ) -> Entry:
        """:meth:`Ledger.append`, then the time of its commit noted for this thread."""
        entry = super().append(analyst, period, item, count, decide=decide)
        _SPENT.at = _clock()
        return entry


class _TimedPostgresLedger(_TimedLedger, PostgresLedger):
    """:class:`PostgresLedger` timed as :class:`_TimedLedger` (its ``append`` comes first in the
    method order, then :class:`PostgresLedger`'s)."""

    __slots__ = ()


def open_ledger(target: str | os.PathLike[str]) -> Ledger:
    """The service's ledger at ``target``: a SQLite file, or a PostgreSQL database named by a
    ``postgresql://`` URL (created if missing in either case)."""
    if isinstance(target, str) and is_postgres_url(target):
        return _TimedPostgresLedger(target)
    return _TimedLedger(target)


def _analyst(request: Request, credentials: Credentials) -> Analyst:
    start = _clock()
    token = None if credentials is None else credentials.credentials
    who = _service(request).auth.analyst(token)
    _timed(request, "auth", start)
    return who


def _admin(request: Request, credentials: Credentials) -> None:
    token = None if credentials is None else credentials.credentials
    _service(request).auth.require_admin(token)


Caller = Annotated[Analyst, Depends(_analyst)]
Admin = Annotated[None, Depends(_admin)]


def create_app(config: ServiceConfig, admin_token: str | None = None) -> FastAPI:
    """The service's FastAPI app over ``config`` (data sets are loaded now, once).

    Args:
        config: the validated configuration (:func:`sharpdp.service.config.load`).
        admin_token: the admin bearer token (default: the ``SHARPDP_ADMIN_TOKEN`` environment
            variable; without one, admin routes refuse everyone).
    """
    token = admin_token if admin_token is not None else os.environ.get(ADMIN_TOKEN_ENV)
    service = Service(config, token)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        yield
        service.close()

    app = FastAPI(
        title="sharpdp",
        version=__version__,
        summary="Private queries over tables under durable per-analyst privacy budgets.",
        lifespan=lifespan,
        # the pages are offline (a Content-Security-Policy lets them load nothing but the
        # server's own files); FastAPI's /docs and /redoc load Swagger UI and ReDoc from a CDN,
        # so they are not served: the schema itself is /openapi.json
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service
    app.add_middleware(Guard, limit=config.max_body_bytes)
    _handlers(app)
    app.include_router(calculator.router)  # public: the privacy calculator's API
    pages.mount(app)  # the analyst's page (/) and the calculator's (/calculator)

    # -- admin ------------------------------------------------------------------------------------
    @app.post("/admin/analysts", status_code=201, tags=["admin"])
    def create_analyst(body: NewAnalyst, _: Admin) -> Token:
        """Create an analyst with a budget policy (default: the config's); returns its token."""
        budget = config.budget if body.budget is None else body.budget
        period = check_period(config.period if body.period is None else body.period, "period")
        spelling.budget(budget, "budget")
        token = service.auth.create_analyst(body.name, budget, period, body.ttl_seconds)
        return Token(name=body.name, token=token)

    @app.get("/admin/analysts", tags=["admin"])
    def list_analysts(_: Admin) -> list[dict[str, Any]]:
        """Every analyst with its budget policy and live-token count."""
        return service.auth.analysts()

    @app.post("/admin/analysts/{name}/tokens", status_code=201, tags=["admin"])
    def issue_token(name: str, _: Admin, body: NewToken | None = None) -> Token:
        """A new token for the analyst (earlier ones stay valid until revoked)."""
        ttl = None if body is None else body.ttl_seconds
        return Token(name=name, token=service.auth.issue_token(name, ttl))

    @app.delete("/admin/analysts/{name}/tokens", tags=["admin"])
    def revoke_tokens(name: str, _: Admin) -> dict[str, Any]:
        """Revoke every token of the analyst (at once, in every worker)."""
        return {"name": name, "revoked": service.auth.revoke(name)}

    @app.put("/admin/analysts/{name}/budget", tags=["admin"])
    def set_budget(name: str, body: NewBudget, _: Admin) -> dict[str, Any]:
        """Change the analyst's budget: its policy for the periods to come and, recorded in the
        ledger with the reason, the budget of its current account (never below what is spent:
        409)."""
        new = spelling.budget(body.budget, "budget")
        old_budget, period_kind = service.auth.policy(name)
        period = period_label(period_kind)
        # The policy first: requests authenticated from now on open accounts with it. One
        # authenticated before may still open the current account with the old budget, so the
        # account is opened here if it has none, and whatever budget is then in force is replaced:
        # when this returns, the new budget is the one in force.
        service.auth.set_policy(name, body.budget)
        try:
            service.ledger.open_account(name, period, new, reason=body.reason)
            with sdp.Accountant(None, service.ledger, name, period=period) as account:
                if account.budget != new:
                    account.set_budget(new, reason=body.reason)
        except sdp.BudgetExceeded as err:
            service.auth.set_policy(name, old_budget)
            raise Conflict(str(err)) from None
        except BaseException:  # any refusal (a zCDP budget that cannot charge the history...)
            service.auth.set_policy(name, old_budget)  # leaves the policy as it was
            raise
        return {"name": name, "budget": body.budget, "period": period}

    # -- analysts ---------------------------------------------------------------------------------
    @app.get("/datasets", tags=["analysts"])
    def datasets(_: Caller) -> list[dict[str, Any]]:
        """The served data sets: engine, privacy unit, default caps, columns and types."""
        return service.datasets.describe()

    @app.post("/explain", tags=["analysts"])
    def explain(body: QueryRequest, who: Caller) -> dict[str, Any]:
        """Price a query without spending or reading data: mechanisms, noise, cost, theorem,
        and what the budget would read after it."""
        target = spelling.target(body.privacy)
        slot = service.datasets.slot(body.dataset, who)
        with slot.lock:
            query = build(slot.session, body, target)
            out = explanation(query)
        return _payload({"dataset": body.dataset, "period": slot.period, **out})

    @app.post("/queries", tags=["analysts"], response_model=dict[str, Any])
    def run_query(body: QueryRequest, who: Caller, request: Request) -> Response:
        """Run one query: check and record its spend in one ledger transaction (403, nothing
        spent, when it does not fit), then compute, store the release with its spend, return."""
        target = spelling.target(body.privacy)
        slot = service.datasets.slot(body.dataset, who)
        with slot.lock:
            start = _clock()
            query = build(slot.session, body, target)
            _timed(request, "engine", start)
            item, count = query.charge
            accountant = slot.session.accountant
            start = _clock()
            fits = accountant.would_fit(item, count)
            _timed(request, "check", start)
            if not fits:
                # a dry run on committed state: refuse without taking the ledger's write lock
                # (a refusal is always safe; only spend's own check can accept)
                summary = accountant.summary()
                raise sdp.BudgetExceeded(
                    f"spending {item_text(item, count)} would take analyst {who.name!r} (period "
                    f"{slot.period!r}) over the budget {summary.budget!r}: spent so far "
                    f"{summary.reading}, remaining "
                    f"{describe_left(summary.measure, summary.remaining)}; nothing was recorded"
                )
            # Query.run: the spend is checked and recorded durably first, then the engine runs
            start = _clock()
            _SPENT.at = None
            # the request as stored, before the spend: storing it must not fail after it (a key
            # of 1e999 spent, then failed as JSON, and the release was lost)
            stored_request = _json(body.model_dump(mode="json"))
            release = query.run(rng=None)
            result = release_payload(release, body.level)
            _split(request, start, getattr(_SPENT, "at", None))
            entry = release.spend
            if entry is None:  # pragma: no cover - Query.run always names its spend
                raise sdp.LedgerError("the release does not name its spend")
            result["cost"] = {"item": repr(entry.item), "count": entry.count}
            start = _clock()
            release_id, created = service.releases.store(
                who.name,
                slot.period,
                body.dataset,
                entry.id,
                stored_request,
                _json(result),
            )
            # the odometer now, with the remaining budget from the same reading (a spend's own
            # spent_after may be a quicker, looser bound: the two did not add up to the budget)
            now = accountant.summary()
            _timed(request, "store", start)
        return _respond(
            request,
            {
                "id": release_id,
                "created_at": created,
                "spend_id": entry.id,
                "period": slot.period,
                **result,
                "spent": now.spent,
                "measure": now.measure,
                "remaining": now.remaining,
            },
        )

    @app.get("/budget", tags=["analysts"])
    def budget(who: Caller) -> dict[str, Any]:
        """The caller's budget in the current period: spent, remaining, and each spend with its
        own cost, the theorem that certifies it and the release it paid for."""
        with service.datasets.accountant(who) as account:
            s = account.summary()
            entries = account.history()
        releases = service.releases.by_spend(who.name, s.period)
        history = []
        for e in entries:
            cost = service.cost(e.item, e.count, s.measure, s.at_delta)
            history.append(
                {
                    "spend_id": e.id,
                    "time": e.timestamp.isoformat(),
                    "item": repr(e.item),
                    "count": e.count,
                    "cost": cost.value,
                    "analysis": cost.analysis,
                    "theorem": cost.theorem,
                    # the reading that admitted the spend, in the budget of its time (which
                    # the admin may have changed since: ε at δ, or ρ), as the CLI's budget shows
                    "spent_after": e.spent_after,
                    "measure": e.measure,
                    "at_delta": e.at_delta,
                    "checked_against": repr(e.budget),
                    "release": releases.get(e.id),
                }
            )
        return _payload(
            {
                "analyst": s.analyst,
                "period": s.period,
                "budget": repr(s.budget),
                "budget_since": s.budget_since.isoformat(),
                "budget_reason": s.budget_reason,
                "measure": s.measure,
                "at_delta": s.at_delta,
                "spent": s.spent,
                "remaining": s.remaining,
                "over_budget": s.over_budget,
                "history": history,
            }
        )

    @app.get("/releases/{release_id}", tags=["analysts"])
    def get_release(release_id: str, who: Caller) -> dict[str, Any]:
        """A past release of the caller, as released (asking again spends nothing)."""
        if len(release_id) > 64:
            raise NotFound("no such release")
        found = service.releases.get(who.name, release_id)
        if found is None:
            raise NotFound(f"no release {release_id!r} of yours")
        return found

    return app


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def _handlers(app: FastAPI) -> None:
    """Every error as JSON ``{"error": ...}`` with a 4xx status (5xx only for the server's own
    failures)."""

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        parts = []
        for e in errors[:5]:
            if e.get("type") == "json_invalid":  # its loc is a character position, not a field
                at = [p for p in e.get("loc", ()) if isinstance(p, int)]
                place = f" (at character {at[0]})" if at else ""
                parts.append(f"the body is not valid JSON{place}")
                continue
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
            parts.append(f"{where}: {e.get('msg', 'invalid')}" if where else e.get("msg", ""))
        # the offending input is not echoed: it may be NaN or ±Infinity, which JSON cannot carry
        detail = [{k: e[k] for k in ("type", "loc", "msg") if k in e} for e in errors]
        return _error(422, "; ".join(parts) or "invalid request", detail=jsonable_encoder(detail))

    @app.exception_handler(ServiceError)
    async def refused(_: Request, exc: ServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        response = _error(exc.status, str(exc))
        if headers:
            response.headers.update(headers)
        return response

    @app.exception_handler(sdp.BudgetExceeded)
    async def over_budget(_: Request, exc: sdp.BudgetExceeded) -> JSONResponse:
        return _error(403, str(exc), reason="over budget")

    @app.exception_handler(sdp.LedgerError)
    async def ledger(_: Request, exc: sdp.LedgerError) -> JSONResponse:
        return _error(503, f"the ledger is unavailable: {exc}")

    @app.exception_handler(sdp.NumericalError)
    async def numerical(_: Request, exc: sdp.NumericalError) -> JSONResponse:
        return _error(500, f"internal numerical error: {exc}")

    @app.exception_handler(sdp.SharpDPError)
    async def bad_parameter(_: Request, exc: sdp.SharpDPError) -> JSONResponse:
        return _error(422, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and "parsing the body" in str(exc.detail):
            # FastAPI's own words for a body Python's JSON parser refused (invalid UTF-8, an
            # integer of over 4,300 digits, nesting past the recursion limit): malformed, 422
            return _error(422, "the body is not valid JSON (or not UTF-8, or too deeply nested)")
        return _error(exc.status_code, str(exc.detail))


def app_from_environment() -> FastAPI:
    """The app of a worker started by ``sharpdp serve``: the config named by
    ``SHARPDP_SERVICE_CONFIG`` (a path, or ``example:DIR``), the admin token from
    ``SHARPDP_ADMIN_TOKEN``."""
    where = os.environ.get(CONFIG_ENV)
    if not where:
        raise sdp.InvalidParameter(f"{CONFIG_ENV} is not set: name the service's config file")
    if where.startswith("example:"):
        return create_app(example_config(where.removeprefix("example:")))
    return create_app(load(where))
