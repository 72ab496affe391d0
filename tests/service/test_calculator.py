"""The public calculator's API and the pages' serving, against a real uvicorn server: the values
are the library's (rounded up when shown), bad or oversize requests get 422 before any work, and
the pages' assets ship with the package and reference nothing outside the server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from servers import Server, write_config

import sharpdp as sdp
from sharpdp._format import upper
from sharpdp.cli._common import parse_item
from sharpdp.service import calculator
from sharpdp.service.pages import STATIC


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(write_config(tmp_path_factory.mktemp("calculator"))).start()
    yield s
    s.stop()


def compose(server: Server, **body: Any) -> httpx.Response:
    return httpx.post(f"{server.url}/calculator/compose", json=body, timeout=60)


def test_compose_equals_the_library(server: Server) -> None:
    items = [{"item": "gaussian:5", "count": 100}, {"item": "laplace:2", "count": 10}]
    r = compose(server, items=items, delta=1e-6)  # no token: the calculator is public
    assert r.status_code == 200, r.text
    out = r.json()
    library = sdp.compose([(sdp.Gaussian(5.0), 100), (sdp.Laplace(2.0), 10)])
    epsilon = library.epsilon(1e-6)
    assert out["epsilon"] == epsilon
    assert out["epsilon_shown"] == upper(epsilon)
    assert float(out["epsilon_shown"]) >= epsilon  # shown rounded up
    explanation = library.explain(delta=1e-6)
    assert out["winner"]["name"] == explanation.winner.name
    rows = {row["name"]: row for row in out["analyses"]}
    assert set(rows) == {row.name for row in explanation.rows}
    for row in explanation.rows:
        assert rows[row.name]["epsilon"] == row.value
        assert rows[row.name]["shown"] == (None if row.value is None else upper(row.value))
        assert rows[row.name]["winner"] is (row is explanation.winner)
    curve = out["curve"]
    assert len(curve["epsilons"]) == calculator.CURVE_POINTS
    assert curve["epsilons"][0] == 0.0
    assert len(curve["sharpest"]) == calculator.CURVE_POINTS
    at = curve["epsilons"][10]
    assert curve["sharpest"][10] == library.explain(epsilon=at).winner.value
    # the profile decreases in ε
    finite = [d for d in curve["sharpest"] if isinstance(d, float)]
    assert finite == sorted(finite, reverse=True)
    assert out["fit"] is None


def test_how_many_more_fit(server: Server) -> None:
    r = compose(
        server,
        items=[{"item": "gaussian:5", "count": 100}],
        delta=1e-6,
        budget="approx:20,1e-6",
        next="gaussian:20",
    )
    assert r.status_code == 200, r.text
    fit = r.json()["fit"]
    g5, g20, budget = sdp.Gaussian(5.0), sdp.Gaussian(20.0), sdp.ApproxDP(20.0, 1e-6)
    assert fit["alone"] == sdp.max_compositions(g20, budget)
    more = fit["more"]
    assert 0 < more < fit["alone"]
    assert sdp.compose([(g5, 100), (g20, more)]).certifies(20.0, 1e-6)
    assert not sdp.compose([(g5, 100), (g20, more + 1)]).certifies(20.0, 1e-6)
    assert fit["at_least"] is False


def test_more_fit_stops_at_its_cap() -> None:
    free = sdp.Gaussian(1e6)
    assert calculator.more_fit([], free, sdp.ApproxDP(1.0, 1e-6), cap=1000) == (1000, True)
    over = [(sdp.PureDP(2.0), 1)]
    assert calculator.more_fit(over, free, sdp.ApproxDP(1.0, 0.0)) == (0, False)


def test_non_adaptive_uses_ddr20(server: Server) -> None:
    items = [{"item": "exponential:0.025", "count": 300}]
    out = compose(server, items=items, delta=1e-6, adaptive=False).json()
    library = sdp.compose([(parse_item("exponential:0.025", "x"), 300)], adaptive=False)
    assert out["epsilon_shown"] == upper(library.epsilon(1e-6))
    assert out["winner"]["name"] == "ddr20"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"items": [{"item": "gauss:5"}]}, "unknown 'gauss'"),
        ({"items": [{"item": "gaussian:-1"}]}, "sigma"),
        ({"items": [{"item": "gaussian:nan"}]}, "NaN"),
        ({"items": [{"item": "gaussian"}]}, "gaussian takes"),
        ({"items": []}, "items"),
        ({"items": [{"item": "gaussian:5", "count": 0}]}, "count"),
        ({"items": [{"item": "gaussian:5", "count": "3"}]}, "count"),
        ({"items": [{"item": "gaussian:5"}], "delta": 1.0}, "delta"),
        ({"items": [{"item": "gaussian:5"}], "delta": -1e-9}, "delta"),
        ({"items": [{"item": "gaussian:5"}], "budget": "approx:1,1e-6"}, "next"),
        ({"items": [{"item": "gaussian:5"}], "budget": "zcdp:1", "next": "laplace:1"}, "zcdp"),
        ({"items": [{"item": "gaussian:5"}], "budget": "pure:1", "next": "lap:1"}, "next"),
        ({"items": [{"item": "gaussian:5"}], "extra": 1}, "extra"),
        # an infinite budget (a typo: 1e999) answered "1,000,000 more fit"
        (
            {"items": [{"item": "gaussian:5"}], "budget": "pure:1e999", "next": "pure:1"},
            "finite",
        ),
    ],
)
def test_bad_requests_get_422(server: Server, body: dict[str, Any], says: str) -> None:
    r = httpx.post(f"{server.url}/calculator/compose", json=body, timeout=30)
    assert r.status_code == 422, r.text
    assert says in r.json()["error"]


def post_text(server: Server, path: str, text: str) -> httpx.Response:
    """POST ``text`` as a JSON body, as written (httpx's json= would re-encode it)."""
    return httpx.post(
        f"{server.url}{path}",
        content=text,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )


@pytest.mark.parametrize(
    "text",
    [
        # FastAPI's JSON reader kept a repeated key's last value: one run, where 1000 were asked
        '{"items": [{"item": "gaussian:1", "count": 1000, "count": 1}]}',
        '{"items": [{"item": "gaussian:1", "count": 1000}], "items": [{"item": "gaussian:50"}]}',
        '{"items": [{"item": "gaussian:1"}], "delta": 1e-6, "delta": 0.5}',
    ],
)
def test_a_repeated_key_is_refused(server: Server, text: str) -> None:
    r = post_text(server, "/calculator/compose", text)
    assert r.status_code == 422, r.text
    assert "repeats the key" in r.json()["error"]
    assert r.headers["server-timing"].startswith("app;dur=")  # as every response


def test_deeply_nested_json_is_a_422(server: Server) -> None:
    # the repeated-key check recursed past Python's limit: a 500 in plain text, with no token
    text = '{"a":' + "[" * 3000 + "]" * 3000 + "}"
    for path in ("/calculator/compose", "/admin/analysts"):
        r = post_text(server, path, text)
        assert r.status_code == 422, r.text
        assert "nested too deeply" in r.json()["error"]


def test_oversize_requests_get_422(server: Server) -> None:
    too_many = [{"item": f"gaussian:{i + 1}", "count": 1} for i in range(calculator.MAX_ITEMS + 1)]
    r = compose(server, items=too_many)
    assert r.status_code == 422
    assert "items" in r.json()["error"]
    r = compose(server, items=[{"item": "gaussian:5", "count": calculator.MAX_COUNT + 1}])
    assert r.status_code == 422
    assert "count" in r.json()["error"]
    r = compose(server, items=[{"item": "gaussian:" + "5" * 100, "count": 1}])
    assert r.status_code == 422
    # the largest request allowed is answered
    r = compose(server, items=[{"item": "laplace:2", "count": calculator.MAX_COUNT}])
    assert r.status_code == 200, r.text


def test_item_spellings(server: Server) -> None:
    kinds = httpx.get(f"{server.url}/calculator/items").json()
    assert {"name": "gaussian", "spelling": "gaussian:sigma[,sensitivity]"} in kinds


def test_pages_are_served_with_a_strict_policy(server: Server) -> None:
    for path, marker in (("/", 'data-page="analyst"'), ("/calculator", 'data-page="calculator"')):
        r = httpx.get(f"{server.url}{path}")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/html")
        assert marker in r.text
        policy = r.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "script-src 'self'" in policy
    for asset in ("sharpdp.js", "sharpdp.css"):
        r = httpx.get(f"{server.url}/static/{asset}")
        assert r.status_code == 200
    assert httpx.get(f"{server.url}/static/../app.py").status_code == 404
    schema = httpx.get(f"{server.url}/openapi.json").json()
    assert "/calculator/compose" in schema["paths"]
    assert "/" not in schema["paths"]


def test_assets_reference_nothing_outside_the_server() -> None:
    names = sorted(p.name for p in STATIC.iterdir())
    assert names == ["calculator.html", "index.html", "sharpdp.css", "sharpdp.js"]
    for path in STATIC.iterdir():
        text = path.read_text(encoding="utf-8")
        # the only absolute URL is the SVG namespace (a name, never fetched)
        urls = {w for w in text.replace('"', " ").split() if "://" in w}
        assert urls <= {"http://www.w3.org/2000/svg"}, (path.name, urls)
        assert "<script>" not in text  # no inline script (the policy forbids it anyway)


def test_the_curve_is_cut_short_on_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calculator, "CURVE_SECONDS", 0.0)
    body = calculator.ComposeBody.model_validate({"items": [{"item": "laplace:2", "count": 3}]})
    curve = calculator.answer(body)["curve"]
    assert curve["truncated"] is True
    assert len(curve["epsilons"]) == len(curve["sharpest"]) == 1
