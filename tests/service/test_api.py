"""The HTTP contract against a real uvicorn server: admin, queries, explain, budget, releases,
isolation between analysts, and hostile input (always a 4xx with a message; nothing spent)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from servers import ADMIN, Server, admin, bearer, new_analyst, write_config

import sharpdp as sdp
from sharpdp.accounting.ledger import Ledger

#: A second data set, keyed by a binary column (Parquet keeps the type; CSV has none).
BLOBS = """
[datasets.blobs]
path = "blobs.parquet"
privacy_unit = "person"
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    import pandas as pd

    directory = tmp_path_factory.mktemp("api")
    blobs = pd.DataFrame(
        {"person": range(90), "tag": [b"\x00\xff", b"ab", b"z"] * 30}  # 30 persons per tag
    )
    blobs.to_parquet(directory / "blobs.parquet")
    s = Server(write_config(directory, budget="approx:1,1e-6", extra=BLOBS)).start()
    yield s
    s.stop()


def count_by(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "dataset": "people",
        "query": "count_by",
        "column": "dept",
        "keys": ["a", "b", "c"],
        "privacy": "pure:0.1",
        "max_groups": 1,
        "max_rows": 1,
    }
    body.update(extra)
    return body


def on_value(query: str, bounds: list[float], **extra: Any) -> dict[str, Any]:
    """A ``query`` ("sum", "mean", "quantile") of the numeric column at pure:0.1."""
    body: dict[str, Any] = {
        "dataset": "people",
        "query": query,
        "column": "value",
        "bounds": bounds,
        "privacy": "pure:0.1",
    }
    body.update(extra)
    return body


def ledger_rows(server: Server, analyst: str | None = None) -> int:
    with Ledger(server.config.with_name("ledger.sqlite")) as ledger:
        return len(ledger.entries(analyst))


def test_openapi_schema_lists_the_routes(server: Server) -> None:
    schema = httpx.get(f"{server.url}/openapi.json").json()
    for path in ("/queries", "/explain", "/budget", "/releases/{release_id}", "/admin/analysts"):
        assert path in schema["paths"]
    assert "HTTPBearer" in schema["components"]["securitySchemes"]
    bodies = schema["components"]["schemas"]
    for kind in ("CountBody", "CountByBody", "SumBody", "MeanBody", "QuantileBody", "TopKBody"):
        assert kind in bodies
    assert bodies["CountByBody"]["additionalProperties"] is False


def test_query_explain_budget_release_round_trip(server: Server) -> None:
    token = new_analyst(server.url, "ana", "approx:1,1e-6", period="month")
    h = bearer(token)
    priced = httpx.post(f"{server.url}/explain", json=count_by(), headers=h).json()
    assert priced["fits"] is True
    assert priced["cost"] > 0
    assert "DiscreteLaplace" in priced["charge"]["item"]
    assert httpx.get(f"{server.url}/budget", headers=h).json()["spent"] == 0.0  # explain is free

    r = httpx.post(f"{server.url}/queries", json=count_by(), headers=h)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [row["dept"] for row in out["rows"]] == ["a", "b", "c"]
    assert all(row["lower"] <= row["count"] <= row["upper"] for row in out["rows"])
    assert 0 < out["remaining"] < 1

    budget = httpx.get(f"{server.url}/budget", headers=h).json()
    assert budget["budget"] == "ApproxDP(epsilon=1.0, delta=1e-06)"
    assert budget["period"] == time.strftime("%Y-%m", time.gmtime())
    [spend] = budget["history"]
    assert spend["release"] == out["id"]
    assert spend["spend_id"] == out["spend_id"]
    assert spend["theorem"]
    assert spend["cost"] > 0
    assert budget["spent"] + budget["remaining"] <= 1.0
    # each spend's reading says its own unit (an admin may change the budget's measure since)
    assert (spend["measure"], spend["at_delta"]) == ("epsilon", 1e-6)
    assert spend["checked_against"] == budget["budget"]
    assert spend["spent_after"] >= spend["cost"]

    again = httpx.get(f"{server.url}/releases/{out['id']}", headers=h).json()
    assert again["rows"] == out["rows"]
    assert httpx.get(f"{server.url}/budget", headers=h).json()["spent"] == budget["spent"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "count", "privacy": "zcdp:0.01"},
        {"query": "count_by", "column": "dept", "privacy": "approx:0.5,1e-7", "max_groups": 2},
        {"query": "sum", "column": "value", "bounds": [0, 100], "privacy": "pure:0.1"},
        {
            "query": "mean",
            "column": "value",
            "bounds": [0, 100],
            "by": "dept",
            "keys": ["a", "b"],
            "privacy": "pure:0.1",
        },
        {
            "query": "quantile",
            "column": "value",
            "q": 0.5,
            "bounds": [0, 100],
            "privacy": "pure:0.1",
        },
        {
            "query": "quantile",
            "column": "value",
            "q": 0.5,
            "bounds": [0, 100],
            "privacy": "pure:0.1",
            "support": "points",
        },
        {
            "query": "top_k",
            "column": "dept",
            "k": 2,
            "keys": ["a", "b", "c"],
            "privacy": "pure:0.1",
        },
        {"query": "select_best", "column": "dept", "keys": ["a", "b", "c"], "privacy": "pure:0.1"},
        {"query": "select_best", "column": "dept", "privacy": "approx:0.1,1e-7"},
    ],
    ids=lambda b: str(b["query"]),
)
def test_every_query_kind_runs(server: Server, body: dict[str, Any]) -> None:
    token = new_analyst(
        server.url, f"kind-{body['query']}-{len(body)}-{'keys' in body}", "approx:10,1e-6"
    )
    full = {"dataset": "people", **body}
    priced = httpx.post(f"{server.url}/explain", json=full, headers=bearer(token))
    assert priced.status_code == 200, priced.text
    assert ("support=points" in priced.json()["description"]) == ("support" in body)
    r = httpx.post(f"{server.url}/queries", json=full, headers=bearer(token))
    assert r.status_code == 200, r.text
    assert isinstance(r.json()["rows"], list)


def test_the_admin_token_on_an_analyst_route_is_a_403(server: Server) -> None:
    # it was a 401 "malformed bearer token", the reverse case a clear 403
    for method, path in (("GET", "/budget"), ("POST", "/queries")):
        r = httpx.request(method, f"{server.url}{path}", json=count_by(), headers=admin())
        assert r.status_code == 403, r.text
        assert "needs an analyst's token" in r.json()["error"]


def test_admin_bodies_are_read_as_written(server: Server) -> None:
    # an empty budget or period was taken for an absent one (the configured policy), and a
    # repeated key for its last value
    for body in ({"name": "eve", "budget": ""}, {"name": "eve", "period": ""}):
        r = httpx.post(f"{server.url}/admin/analysts", json=body, headers=admin(), timeout=30)
        assert r.status_code == 422, r.text
    text = '{"name": "eve", "budget": "pure:0.5", "budget": "pure:50"}'
    r = httpx.post(
        f"{server.url}/admin/analysts",
        content=text,
        headers={**admin(), "Content-Type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 422, r.text
    assert "repeats the key 'budget'" in r.json()["error"]
    listed = httpx.get(f"{server.url}/admin/analysts", headers=admin(), timeout=30).json()
    assert "eve" not in str(listed)


def test_over_budget_is_refused_and_nothing_is_spent(server: Server) -> None:
    token = new_analyst(server.url, "spender", "pure:0.25")
    h = bearer(token)
    assert httpx.post(f"{server.url}/queries", json=count_by(), headers=h).status_code == 200
    assert httpx.post(f"{server.url}/queries", json=count_by(), headers=h).status_code == 200
    before = ledger_rows(server, "spender")
    r = httpx.post(f"{server.url}/queries", json=count_by(), headers=h)
    assert r.status_code == 403
    error = r.json()["error"]
    assert "over the budget" in error
    # two ε = 0.1 spends of a pure budget 0.25 (count_by() prices PureDP(0.1)): 0.2 spent is
    # printed rounded up, 0.05 left rounded down, in the budget's currency
    assert "spent so far ε = 0.2" in error, error
    assert "remaining ε = 0.0499999" in error, error
    assert ledger_rows(server, "spender") == before == 2
    assert httpx.post(f"{server.url}/explain", json=count_by(), headers=h).json()["fits"] is False


def test_a_query_is_timed_phase_by_phase(server: Server) -> None:
    """``Server-Timing`` of ``POST /queries``: one ``Query.run`` split at its spend's commit into
    ``spend`` and ``engine``, and the other phases, each with its CPU time, within ``app``."""
    h = bearer(new_analyst(server.url, "timed", "approx:1,1e-6"))
    r = httpx.post(f"{server.url}/queries", json=count_by(), headers=h)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    parts = {}
    for part in r.headers["server-timing"].split(","):
        name, _, value = part.strip().partition(";dur=")
        parts[name] = float(value)
    phases = ("auth", "check", "spend", "engine", "store", "respond")
    assert set(parts) == {"app", *phases, *(f"{p}-cpu" for p in phases)}
    assert all(value >= 0.0 for value in parts.values())
    assert parts["spend"] > 0.0
    assert parts["engine"] > 0.0
    assert sum(parts[p] for p in phases) <= parts["app"] + 0.01  # all inside the request
    # the spend timed is the one recorded: the ledger holds it, and the release names it
    with Ledger(server.config.with_name("ledger.sqlite")) as ledger:
        [entry] = ledger.entries("timed")
    assert r.json()["spend_id"] == entry.id
    refused = httpx.post(f"{server.url}/queries", json=count_by(privacy="pure:5"), headers=h)
    assert refused.status_code == 403  # refused on the dry run: no spend, no engine run timed
    timed = refused.headers["server-timing"]
    assert "check;" in timed
    assert "spend;" not in timed
    assert "store;" not in timed


def test_admin_changes_budgets_and_revokes_tokens(server: Server) -> None:
    token = new_analyst(server.url, "carla", "pure:0.1")
    h = bearer(token)
    assert httpx.post(f"{server.url}/queries", json=count_by(), headers=h).status_code == 200
    assert httpx.post(f"{server.url}/queries", json=count_by(), headers=h).status_code == 403
    low = httpx.put(
        f"{server.url}/admin/analysts/carla/budget", json={"budget": "pure:0.05"}, headers=admin()
    )
    assert low.status_code == 409, low.text  # never below what is spent
    up = httpx.put(
        f"{server.url}/admin/analysts/carla/budget",
        json={"budget": "pure:0.3", "reason": "more work"},
        headers=admin(),
    )
    assert up.status_code == 200, up.text
    assert httpx.get(f"{server.url}/budget", headers=h).json()["budget_reason"] == "more work"
    assert httpx.post(f"{server.url}/queries", json=count_by(), headers=h).status_code == 200
    second = httpx.post(f"{server.url}/admin/analysts/carla/tokens", headers=admin()).json()
    assert httpx.get(f"{server.url}/budget", headers=bearer(second["token"])).status_code == 200
    revoked = httpx.delete(f"{server.url}/admin/analysts/carla/tokens", headers=admin()).json()
    assert revoked["revoked"] == 2
    for t in (token, second["token"]):
        r = httpx.get(f"{server.url}/budget", headers=bearer(t))
        assert r.status_code == 401
        assert "revoked" in r.json()["error"]
    dup = httpx.post(f"{server.url}/admin/analysts", json={"name": "carla"}, headers=admin())
    assert dup.status_code == 409
    listed = {
        a["name"]: a for a in httpx.get(f"{server.url}/admin/analysts", headers=admin()).json()
    }
    assert listed["carla"]["budget"] == "pure:0.3"
    assert listed["carla"]["live_tokens"] == 0
    assert "token" not in listed["carla"]
    assert "hash" not in listed["carla"]


def test_no_analyst_sees_or_spends_another_s(server: Server) -> None:
    ann = bearer(new_analyst(server.url, "ann", "pure:1"))
    bob = bearer(new_analyst(server.url, "bob", "pure:1"))
    mine = httpx.post(f"{server.url}/queries", json=count_by(), headers=ann).json()
    assert httpx.get(f"{server.url}/releases/{mine['id']}", headers=bob).status_code == 404
    assert httpx.get(f"{server.url}/releases/{mine['id']}", headers=ann).status_code == 200
    bob_budget = httpx.get(f"{server.url}/budget", headers=bob).json()
    assert bob_budget["analyst"] == "bob"
    assert bob_budget["history"] == []
    # no body field names an analyst: one sent is refused, not obeyed
    r = httpx.post(f"{server.url}/queries", json=count_by(analyst="ann"), headers=bob)
    assert r.status_code == 422
    assert ledger_rows(server, "bob") == 0
    # admin routes: 403 for an analyst, 401 without a token or with a wrong one
    body = {"name": "mallory"}
    assert httpx.post(f"{server.url}/admin/analysts", json=body, headers=bob).status_code == 403
    assert httpx.post(f"{server.url}/admin/analysts", json=body).status_code == 401
    wrong = bearer(ADMIN + "x")
    assert httpx.post(f"{server.url}/admin/analysts", json=body, headers=wrong).status_code == 401


def _nan_json(body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    """``body`` as JSON with ``NaN``/``Infinity`` literals (which httpx's ``json=`` refuses and
    Python's JSON parser, hence the server's, accepts), and the request's headers."""
    return {
        "content": json.dumps(body).encode(),
        "headers": {"content-type": "application/json", **(headers or {})},
    }


def _hostile(server: Server, token: str) -> list[tuple[str, httpx.Response]]:
    h = bearer(token)
    url = f"{server.url}/queries"
    forged = token[: token.rindex("_") + 1] + "A" * 43
    cases: list[tuple[str, httpx.Response]] = [
        ("oversized body", httpx.post(url, json=count_by(keys=["x" * 100] * 1000), headers=h)),
        (
            "oversized chunked body",
            httpx.post(url, content=iter([b"{" + b" " * 70_000, b"}"]), headers=h),
        ),
        ("max_rows as a string", httpx.post(url, json=count_by(max_rows="1"), headers=h)),
        ("max_rows negative", httpx.post(url, json=count_by(max_rows=-1), headers=h)),
        ("max_rows huge", httpx.post(url, json=count_by(max_rows=10**30), headers=h)),
        ("privacy as a number", httpx.post(url, json=count_by(privacy=0.1), headers=h)),
        ("privacy NaN", httpx.post(url, json=count_by(privacy="pure:nan"), headers=h)),
        ("privacy negative", httpx.post(url, json=count_by(privacy="pure:-1"), headers=h)),
        ("keys as an object", httpx.post(url, json=count_by(keys={"a": 1}), headers=h)),
        ("empty keys", httpx.post(url, json=count_by(keys=[]), headers=h)),
        (
            "SQL in a column",
            httpx.post(url, json=count_by(column="dept; DROP TABLE people --"), headers=h),
        ),
        ("the privacy unit as column", httpx.post(url, json=count_by(column="person"), headers=h)),
        ("unknown data set", httpx.post(url, json=count_by(dataset="secrets"), headers=h)),
        ("unknown query", httpx.post(url, json=count_by(query="drop"), headers=h)),
        ("unknown field", httpx.post(url, json=count_by(sql="SELECT 1"), headers=h)),
        ("not JSON", httpx.post(url, content=b"{nope", headers=h)),
        ("a JSON list", httpx.post(url, json=[1, 2], headers=h)),
        ("level 1", httpx.post(url, json=count_by(level=1.0), headers=h)),
        (
            "sum without bounds",
            httpx.post(url, json=count_by(query="sum", column="value", keys=None), headers=h),
        ),
        ("bounds reversed", httpx.post(url, json=on_value("sum", [5, 1]), headers=h)),
        ("level NaN", httpx.post(url, **_nan_json(count_by(level=float("nan")), h))),
        ("level Infinity", httpx.post(url, **_nan_json(count_by(level=float("inf")), h))),
        ("a lone surrogate key", httpx.post(url, **_nan_json(count_by(keys=["\ud800"]), h))),
        ("a lone surrogate column", httpx.post(url, **_nan_json(count_by(column="\ud800"), h))),
        ("a lone surrogate data set", httpx.post(url, **_nan_json(count_by(dataset="\ud800"), h))),
        ("privacy 1_0", httpx.post(url, json=count_by(privacy="pure:1_0"), headers=h)),
        (
            "privacy in Arabic digits",
            httpx.post(url, json=count_by(privacy="pure:\u0663"), headers=h),
        ),
        ("epsilon subnormal", httpx.post(url, json=count_by(privacy="pure:1e-320"), headers=h)),
        ("rho 1e308", httpx.post(url, json=count_by(privacy="zcdp:1e308"), headers=h)),
        (
            "granularity subnormal",
            httpx.post(url, json=on_value("sum", [0, 1], granularity=1e-320), headers=h),
        ),
        (
            "an integer of 5,000 digits",
            httpx.post(
                url,
                content=b'{"dataset": "people", "max_rows": ' + b"9" * 5000 + b"}",
                headers={**h, "content-type": "application/json"},
            ),
        ),
        (
            "quantile bounds overflowing the grid",
            httpx.post(url, json=on_value("quantile", [-1e307, 1e307], q=0.5), headers=h),
        ),
        (
            "sum bounds a subnormal apart",
            httpx.post(url, json=on_value("sum", [0.0, 5e-324]), headers=h),
        ),
        ("no token", httpx.post(url, json=count_by())),
        ("forged token", httpx.post(url, json=count_by(), headers=bearer(forged))),
        ("garbage token", httpx.post(url, json=count_by(), headers=bearer("'; DROP TABLE--"))),
        ("huge token", httpx.post(url, json=count_by(), headers=bearer("sdp_" + "x" * 5000))),
        ("basic auth", httpx.post(url, json=count_by(), auth=("ana", "pw"))),
        ("release id", httpx.get(f"{server.url}/releases/{'x' * 500}", headers=h)),
        ("release SQL", httpx.get(f"{server.url}/releases/1' OR '1'='1", headers=h)),
        (
            "an infinite budget",
            httpx.post(
                f"{server.url}/admin/analysts",
                json={"name": "unlimited", "budget": "pure:inf"},
                headers=admin(),
            ),
        ),
        (
            "a budget of 1e999",
            httpx.post(
                f"{server.url}/admin/analysts",
                json={"name": "unlimited", "budget": "pure:1e999"},
                headers=admin(),
            ),
        ),
        (
            "ttl NaN",
            httpx.post(
                f"{server.url}/admin/analysts",
                **_nan_json({"name": "nan", "ttl_seconds": float("nan")}, admin()),
            ),
        ),
        (
            "calculator δ NaN",
            httpx.post(
                f"{server.url}/calculator/compose",
                **_nan_json({"items": [{"item": "gaussian:5"}], "delta": float("nan")}),
            ),
        ),
    ]
    return cases


def test_hostile_input_gets_a_4xx_and_spends_nothing(server: Server) -> None:
    token = new_analyst(server.url, "eve", "approx:1,1e-6")
    expiring = new_analyst(server.url, "eve2", "approx:1,1e-6", ttl_seconds=0.5)
    before = ledger_rows(server)
    cases = _hostile(server, token)
    time.sleep(0.6)
    cases.append(
        (
            "expired token",
            httpx.post(f"{server.url}/queries", json=count_by(), headers=bearer(expiring)),
        )
    )
    for name, r in cases:
        assert 400 <= r.status_code < 500, (name, r.status_code, r.text)
        assert r.json()["error"], name
    statuses = {name: r.status_code for name, r in cases}
    assert statuses["oversized body"] == statuses["oversized chunked body"] == 413
    # every error body is the same compact JSON (the 413, written before the app, had spaces)
    for name, r in cases:
        assert r.content == json.dumps(r.json(), ensure_ascii=False, separators=(",", ":")).encode()
        # every response is timed, the ones refused before the app too (the 413s were not)
        assert r.headers["server-timing"].startswith("app;dur="), name
    assert statuses["unknown data set"] == 404
    assert statuses["forged token"] == statuses["expired token"] == statuses["no token"] == 401
    assert "expired" in dict(cases)["expired token"].json()["error"]
    assert ledger_rows(server) == before
    admins = {a["name"] for a in httpx.get(f"{server.url}/admin/analysts", headers=admin()).json()}
    assert not {"unlimited", "nan"} & admins
    # after all of those 4xx, the same connection still serves (no 500 dropped it)
    with httpx.Client(base_url=server.url, headers=bearer(token)) as client:
        assert client.post("/queries", **_nan_json(count_by(level=float("nan")))).status_code == 422
        assert client.get("/budget").status_code == 200
    # a key that looks like SQL is a value like any other: released as itself, the table intact
    key = "a' OR '1'='1"
    r = httpx.post(f"{server.url}/queries", json=count_by(keys=[key, "b"]), headers=bearer(token))
    assert r.status_code == 200, r.text
    assert [row["dept"] for row in r.json()["rows"]] == [key, "b"]
    assert (
        httpx.post(f"{server.url}/queries", json=count_by(), headers=bearer(token)).status_code
        == 200
    )


def test_a_query_its_budget_cannot_pay_for_is_a_422(server: Server) -> None:
    zcdp = bearer(new_analyst(server.url, "zed", "zcdp:0.5"))
    pure = bearer(new_analyst(server.url, "puri", "pure:1"))
    needs_delta = count_by(privacy="approx:0.5,1e-7", keys=None)  # partition selection: δ > 0
    r = httpx.post(f"{server.url}/queries", json=needs_delta, headers=zcdp)
    assert r.status_code == 422, r.text
    assert "cannot pay" in r.json()["error"]
    unknown_keys = count_by(keys=None)
    r = httpx.post(f"{server.url}/queries", json=unknown_keys, headers=pure)
    assert r.status_code == 422, r.text
    assert "δ" in r.json()["error"]
    assert ledger_rows(server, "zed") == ledger_rows(server, "puri") == 0
    ok = httpx.post(f"{server.url}/queries", json=count_by(privacy="zcdp:0.01"), headers=zcdp)
    assert ok.status_code == 200, ok.text
    assert ok.json()["measure"] == "rho"


def test_a_zcdp_account_reads_its_budget_after_a_mean(server: Server) -> None:
    """A mean under a zCDP target is charged as a ZCDP item; reading the account then prices it
    at its own ρ (it failed with "no analysis applies": there is no ZCDP → ZCDP conversion to
    explain)."""
    h = bearer(new_analyst(server.url, "zoe", "zcdp:1"))
    body = on_value("mean", [0, 10], privacy="zcdp:0.05")
    assert httpx.post(f"{server.url}/queries", json=body, headers=h).status_code == 200
    r = httpx.get(f"{server.url}/budget", headers=h)
    assert r.status_code == 200, r.text
    costs = [spend["cost"] for spend in r.json()["history"]]
    # the two halves' discrete Gaussians have σ rounded up, so their ρ (which adds, Bun–Steinke
    # 2016 Lemma 2.3) is at most the target's
    assert 0.05 * (1 - 1e-12) <= sum(costs) <= 0.05, r.json()["history"]
    assert r.json()["spent"] == sum(costs)


def test_a_budget_change_is_in_force_when_it_returns(server: Server) -> None:
    """Changing the budget of an analyst that has no account yet opens it with the new budget,
    so a request authenticated before the change (which opens the account with the budget it
    read, only if none is open) cannot put the old budget in force afterwards."""
    new_analyst(server.url, "cut", "pure:1", period="all")
    r = httpx.put(
        f"{server.url}/admin/analysts/cut/budget", json={"budget": "pure:0.3"}, headers=admin()
    )
    assert r.status_code == 200, r.text
    with Ledger(server.config.with_name("ledger.sqlite")) as ledger:
        stale = ledger.open_account("cut", "all", sdp.PureDP(1.0), reason="a stale request")
    assert stale.budget == sdp.PureDP(0.3)


def test_analyst_names_are_not_path_segments(server: Server) -> None:
    """``.`` and ``..`` (or any name not starting with a letter or digit) are refused: they would be
    path segments in ``/admin/analysts/{name}``, which clients normalise away."""
    for name in (".", "..", "-x", "@home"):
        r = httpx.post(f"{server.url}/admin/analysts", json={"name": name}, headers=admin())
        assert r.status_code == 422, (name, r.text)
        assert "starting with a letter or digit" in r.json()["error"]


def test_revoking_counts_live_tokens_only(server: Server) -> None:
    new_analyst(server.url, "tess", "pure:1", ttl_seconds=0.2)
    httpx.post(f"{server.url}/admin/analysts/tess/tokens", headers=admin())  # a second, no ttl
    time.sleep(0.3)  # the first has expired
    # the listing agrees: one live token (an expired one was counted as live)
    listed = httpx.get(f"{server.url}/admin/analysts", headers=admin()).json()
    assert {a["name"]: a["live_tokens"] for a in listed}["tess"] == 1
    r = httpx.delete(f"{server.url}/admin/analysts/tess/tokens", headers=admin())
    assert r.json()["revoked"] == 1


def test_a_body_that_is_not_json_is_named_so(server: Server) -> None:
    """Malformed JSON is a 422 saying what is wrong (it read "1: JSON decode error")."""
    headers = {
        **bearer(new_analyst(server.url, "jason", "pure:1")),
        "content-type": "application/json",
    }
    r = httpx.post(f"{server.url}/queries", content=b'{"dataset": ', headers=headers)
    assert r.status_code == 422
    assert "not valid JSON" in r.json()["error"]


def test_null_cells_of_every_type_are_json_null() -> None:
    """A NULL date or time has an ``isoformat`` too: it was sent as the string "NaT"."""
    import pandas as pd

    from sharpdp.data.release import json_cell

    assert [json_cell(v) for v in (pd.NaT, pd.NA, None, float("nan"))] == [None] * 4
    assert json_cell(pd.Timestamp("2021-06-01 12:30:15.123456")) == "2021-06-01T12:30:15.123456"
    assert [json_cell(v) for v in (float("inf"), -float("inf"))] == ["inf", "-inf"]


def test_an_infinite_key_is_released_and_stored(server: Server) -> None:
    """A key of 1e999 (JSON for +inf in Python's parser) on a numeric column spent, then failed
    to be stored as JSON: a 500, the budget spent and the release lost. It is a key like any
    other (no row holds it: a count of 0), and the release is kept."""
    h = bearer(new_analyst(server.url, "inf", "pure:1"))
    content = json.dumps(count_by(column="score", keys=["KEYS"])).replace(
        '["KEYS"]', "[1e999, 1.75]"
    )
    r = httpx.post(
        f"{server.url}/queries",
        content=content.encode(),
        headers={**h, "content-type": "application/json"},
    )
    assert r.status_code == 200, r.text
    got = r.json()
    assert [row["score"] for row in got["rows"]] == ["inf", 1.75]
    stored = httpx.get(f"{server.url}/releases/{got['id']}", headers=h)
    assert stored.status_code == 200, stored.text
    assert stored.json()["request"]["keys"] == ["inf", 1.75]
    assert ledger_rows(server, "inf") == 1


def test_a_refused_budget_change_leaves_the_policy(server: Server) -> None:
    """A zCDP budget cannot charge a history with a δ part: refused (422), and the policy for the
    periods to come stays the old one (it was saved before the ledger refused)."""
    h = bearer(new_analyst(server.url, "polly", "approx:5,1e-6"))
    r = httpx.post(
        f"{server.url}/queries", json=count_by(keys=None, privacy="approx:0.5,1e-7"), headers=h
    )
    assert r.status_code == 200, r.text
    r = httpx.put(
        f"{server.url}/admin/analysts/polly/budget",
        json={"budget": "zcdp:100", "reason": "t"},
        headers=admin(),
    )
    assert r.status_code == 422, r.text
    listed = {
        a["name"]: a for a in httpx.get(f"{server.url}/admin/analysts", headers=admin()).json()
    }
    assert listed["polly"]["budget"] == "approx:5,1e-6"


def test_the_budget_reads_after_a_count_over_a_million_groups(server: Server) -> None:
    """A count with max_groups = 10⁶ is 10⁶ noisy counts; its cost could not be certified to
    the accuracy promised, and every later GET /budget failed with a 500."""
    h = bearer(new_analyst(server.url, "wide", "approx:5,1e-6"))
    body = count_by(keys=None, max_groups=10**6, privacy="pure:0.01")
    assert httpx.post(f"{server.url}/queries", json=body, headers=h).status_code == 200
    r = httpx.get(f"{server.url}/budget", headers=h)
    assert r.status_code == 200, r.text
    (spend,) = r.json()["history"]
    assert 0 < spend["cost"] <= 0.01


def test_spent_and_remaining_add_up_after_many_kinds_of_spend(server: Server) -> None:
    """With 8 or more distinct items the accountant records a quicker bound as each spend's
    spent_after; the response reported it beside the remaining budget of the full analysis,
    and the two added up to more than the budget. Both now come from one reading, the one
    GET /budget gives."""
    h = bearer(new_analyst(server.url, "many", "pure:5"))
    for i in range(10):
        r = httpx.post(
            f"{server.url}/queries", json=count_by(privacy=f"pure:0.0{i + 1}"), headers=h
        )
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["spent"] + got["remaining"] == pytest.approx(5.0, abs=1e-9)
    assert httpx.get(f"{server.url}/budget", headers=h).json()["spent"] == got["spent"]


def test_binary_keys_go_in_and_come_back_as_hex(server: Server) -> None:
    # JSON has no bytes: a binary column's public keys are {"hex": ...}, and released byte
    # strings come back so (they came back as the text "b'ab'", and could not be sent at all)
    h = bearer(new_analyst(server.url, "hex-keys", "pure:100"))
    body = {
        "dataset": "blobs",
        "query": "count_by",
        "column": "tag",
        "keys": [{"hex": "00ff"}, {"hex": "6162"}, {"hex": ""}],
        "privacy": "pure:50",
    }
    r = httpx.post(f"{server.url}/queries", json=body, headers=h)
    assert r.status_code == 200, r.text
    rows = {json.dumps(row["tag"]): row["count"] for row in r.json()["rows"]}
    assert set(rows) == {'{"hex": "00ff"}', '{"hex": "6162"}', '{"hex": ""}'}
    # ε = 50, one row per person: discrete Laplace noise of scale 1/50, |noise| ≥ 1 with
    # probability ≈ 2e^{−50} per count
    assert (rows['{"hex": "00ff"}'], rows['{"hex": "6162"}'], rows['{"hex": ""}']) == (30, 30, 0)
    bad = httpx.post(f"{server.url}/queries", json={**body, "keys": [{"hex": "6"}]}, headers=h)
    assert bad.status_code == 422


def test_no_page_loads_anything_from_elsewhere(server: Server) -> None:
    # FastAPI's /docs and /redoc load Swagger UI and ReDoc from a CDN (blank on an offline
    # host, and outside the pages' Content-Security-Policy): not served; the schema is
    pages = {p: httpx.get(f"{server.url}{p}") for p in ("/", "/calculator", "/docs", "/redoc")}
    assert pages["/docs"].status_code == pages["/redoc"].status_code == 404
    for path in ("/", "/calculator"):
        assert pages[path].status_code == 200
        assert "http://" not in pages[path].text
        assert "https://" not in pages[path].text
        assert 'href="/openapi.json"' in pages[path].text
    assert httpx.get(f"{server.url}/openapi.json").json()["info"]["title"] == "sharpdp"
    for path in ("/", "/calculator"):  # (a monitor's HEAD got 405)
        head = httpx.head(f"{server.url}{path}")
        assert head.status_code == 200
        assert head.headers["content-type"].startswith("text/html")
