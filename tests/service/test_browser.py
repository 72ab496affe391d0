"""The web pages in a real browser: Playwright drives Debian's Chromium (``/usr/bin/chromium``,
installed by ``.ci/run`` with apt) against a real uvicorn server.

The analyst signs in with a token, runs a query from the form, and the numbers the page shows
equal the API's; the calculator composes two mechanisms and shows the library's ε, rounded up.
A screenshot of each page goes to a temporary directory (printed; never into the repository).
With ``CI=true`` a missing Chromium or Playwright fails the test; elsewhere a missing Chromium
skips it.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from servers import Server, bearer, new_analyst, write_config

import sharpdp as sdp
from sharpdp._format import lower, upper
from sharpdp.service.calculator import more_fit

CHROMIUM = Path("/usr/bin/chromium")
IN_CI = os.environ.get("CI", "").lower() == "true"
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium fonts-liberation"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # a dependency of the test extra: always a failure
        pytest.fail("playwright is missing: pip install -e '.[test]'")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(write_config(tmp_path_factory.mktemp("browser"), budget="approx:1,1e-6")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    """A fresh page that records every request and script error."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.requests = []
    tab.errors = []
    tab.on("request", lambda r: tab.requests.append(r.url))
    tab.on("pageerror", lambda e: tab.errors.append(str(e)))
    tab.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
    yield tab
    context.close()
    assert not tab.errors, tab.errors
    # offline: nothing fetched from anywhere but the server
    assert all(u.startswith(server.url) for u in tab.requests), tab.requests


def shown_number(text: str) -> float:
    return math.inf if text == "inf" else float(text)


def sign_in(page: Any, server: Server, token: str) -> None:
    """Open the analyst page and sign in with ``token``."""
    page.goto(f"{server.url}/")
    page.fill("#token", token)
    page.click("#sign-in")
    page.wait_for_selector("#workspace", state="visible")


def test_analyst_signs_in_runs_a_query_and_sees_the_apis_numbers(
    page: Any, server: Server, shots: Path
) -> None:
    token = new_analyst(server.url, "bea", "approx:1,1e-6")
    sign_in(page, server, token)
    assert page.text_content("#who") == "bea"

    page.select_option("#dataset", "people")
    page.select_option("#query", "count_by")
    page.select_option("#column", "dept")
    page.fill("#keys", "a, b, c")
    page.fill("#privacy", "pure:0.1")
    page.fill("#max-groups", "1")
    page.fill("#max-rows", "1")
    page.click("#run")
    page.wait_for_selector("#release-panel", state="visible")
    release_id = page.text_content("#release-id")
    assert release_id
    page.wait_for_selector("#history tbody tr")

    # the release as the API returns it, and as the page shows it
    api = httpx.get(f"{server.url}/releases/{release_id}", headers=bearer(token)).json()
    columns = page.eval_on_selector_all(
        "#release-rows thead th", "cells => cells.map(c => c.textContent)"
    )
    assert columns == list(api["rows"][0])
    cells = page.eval_on_selector_all(
        "#release-rows tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.textContent))",
    )
    assert len(cells) == len(api["rows"]) == 3
    for shown, row in zip(cells, api["rows"], strict=True):
        for text, (column, value) in zip(shown, row.items(), strict=True):
            if isinstance(value, int | float):
                assert shown_number(text) == value, (column, text, value)
            else:
                assert text == str(value), (column, text, value)
    assert [row["dept"] for row in api["rows"]] == ["a", "b", "c"]
    # one bar and one error bar (3 lines) per key
    assert page.locator("#release-chart rect.bar-value").count() == 3
    assert page.locator("#release-chart line.whisker").count() == 9

    # the budget left and the spends, as the API reports them (spent up, remaining down)
    budget = httpx.get(f"{server.url}/budget", headers=bearer(token)).json()
    assert page.text_content("#spent") == upper(budget["spent"])
    assert page.text_content("#remaining") == lower(budget["remaining"])
    assert page.text_content("#budget-text") == budget["budget"]
    [spend] = budget["history"]
    assert spend["release"] == release_id
    history = page.eval_on_selector_all(
        "#history tbody tr", "rows => rows.map(r => r.querySelector('.cost').textContent)"
    )
    assert history == [upper(spend["cost"])]

    path = shots / "analyst.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"\nscreenshot of the analyst's page: {path}")
    assert path.stat().st_size > 10_000

    # a clamped mean from the same form: one row, its value and interval as the API's
    page.select_option("#query", "mean")
    page.select_option("#column", "value")
    page.fill("#bounds", "0, 100")
    page.click("#run")
    from playwright.sync_api import expect  # the page's policy forbids wait_for_function

    expect(page.locator("#release-id")).not_to_have_text(release_id, timeout=TIMEOUT_MS)
    mean_id = page.text_content("#release-id")
    api = httpx.get(f"{server.url}/releases/{mean_id}", headers=bearer(token)).json()
    [row] = api["rows"]
    shown = page.eval_on_selector_all(
        "#release-rows tbody td", "cells => cells.map(c => [c.dataset.col, c.textContent])"
    )
    assert [(c, shown_number(t)) for c, t in shown] == list(row.items())
    expect(page.locator("#history tbody tr")).to_have_count(2, timeout=TIMEOUT_MS)


def _shown_rows(page: Any) -> list[list[str]]:
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        "#release-rows tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.textContent))",
    )


def _fields(page: Any) -> dict[str, bool]:
    """Which of the kind-dependent fields the form shows."""
    return {f: page.is_visible(f) for f in ("#keys", "#k", "#bounds", "#q")}


def _run_from_form(page: Any, server: Server, token: str, previous: str | None) -> dict[str, Any]:
    """Click Run, wait for a new release id; return the release as the API gives it, with the
    request the server stored (its unset optional fields, stored as null, left out)."""
    from playwright.sync_api import expect

    page.click("#run")
    if previous is None:
        page.wait_for_selector("#release-panel", state="visible")
    else:
        expect(page.locator("#release-id")).not_to_have_text(previous, timeout=TIMEOUT_MS)
    release_id = page.text_content("#release-id")
    r = httpx.get(f"{server.url}/releases/{release_id}", headers=bearer(token))
    assert r.status_code == 200, r.text
    release: dict[str, Any] = r.json()
    release["request"] = {k: v for k, v in release["request"].items() if v is not None}
    return release


def test_selections_and_quantiles_from_the_form(page: Any, server: Server) -> None:
    """top_k, quantile and select_best from the form: the request the server received holds
    exactly the fields of that kind (an extra field would be refused), and the page's table is
    the API's rows, with no bars (a rank or a rank error is not a value with an interval)."""
    token = new_analyst(server.url, "cleo", "approx:10,1e-6")
    sign_in(page, server, token)
    page.select_option("#dataset", "people")
    page.fill("#privacy", "pure:1")

    page.select_option("#query", "top_k")
    assert _fields(page) == {"#keys": True, "#k": True, "#bounds": False, "#q": False}
    page.select_option("#column", "dept")
    page.fill("#keys", "a, b, c")
    page.fill("#k", "2")
    top = _run_from_form(page, server, token, None)
    assert top["request"] == {
        "dataset": "people", "query": "top_k", "privacy": "pure:1", "level": 0.95,
        "max_rows": 1, "column": "dept", "max_groups": 1, "keys": ["a", "b", "c"], "k": 2,
    }  # fmt: skip
    assert [r["rank"] for r in top["rows"]] == [1, 2]
    assert _shown_rows(page) == [[str(r["rank"]), r["dept"]] for r in top["rows"]]
    assert page.locator("#release-chart rect.bar-value").count() == 0
    assert "private selection" in page.text_content("#release-noise")

    page.select_option("#query", "quantile")
    assert _fields(page) == {"#keys": False, "#k": False, "#bounds": True, "#q": True}
    page.select_option("#column", "value")
    page.fill("#bounds", "0, 100")
    page.fill("#q", "0.25")
    page.select_option("#support", "points")
    quantile = _run_from_form(page, server, token, top["id"])
    assert quantile["request"] == {
        "dataset": "people", "query": "quantile", "privacy": "pure:1", "level": 0.95,
        "max_rows": 1, "column": "value", "max_groups": 1, "bounds": [0, 100], "q": 0.25,
        "support": "points",
    }  # fmt: skip
    [row] = quantile["rows"]
    assert set(row) == {"quantile", "rank_error"}
    [shown] = _shown_rows(page)
    assert [shown_number(t) for t in shown] == [row["quantile"], row["rank_error"]]
    assert page.locator("#release-chart rect.bar-value").count() == 0

    page.select_option("#query", "select_best")
    assert _fields(page) == {"#keys": True, "#k": False, "#bounds": False, "#q": False}
    assert page.is_disabled("#max-rows")
    page.select_option("#column", "dept")
    page.fill("#keys", "b, c")
    best = _run_from_form(page, server, token, quantile["id"])
    assert best["request"] == {
        "dataset": "people", "query": "select_best", "privacy": "pure:1", "level": 0.95,
        "column": "dept", "max_groups": 1, "keys": ["b", "c"],
    }  # fmt: skip
    [row] = best["rows"]
    assert row["dept"] in ("b", "c")
    assert _shown_rows(page) == [["1", row["dept"]]]


def test_a_wrong_token_is_refused_in_the_page(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/")
    page.fill("#token", "sdp_not-a-token")
    page.click("#sign-in")
    page.wait_for_selector("#signin-panel .hint.error")
    assert "401" in page.text_content("#signin-panel .hint")
    assert page.is_hidden("#workspace")
    page.errors.clear()  # the browser logs the 401 of the refused fetch


def test_calculator_composes_two_mechanisms_as_the_library(
    page: Any, server: Server, shots: Path
) -> None:
    page.goto(f"{server.url}/calculator")
    page.wait_for_selector("#spellings:not(:empty)")
    for item, count in (("gaussian:5", "100"), ("laplace:2", "10")):
        page.click("#add")
        row = page.locator("#items tbody tr").last
        row.locator(".item").fill(item)
        row.locator(".count").fill(count)
    page.fill("#delta", "1e-6")
    page.fill("#budget", "approx:20,1e-6")
    page.fill("#next", "gaussian:20")
    page.click("#compute")
    page.wait_for_selector("#result", state="visible")

    items = [(sdp.Gaussian(5.0), 100), (sdp.Laplace(2.0), 10)]
    epsilon = sdp.compose(items).epsilon(1e-6)
    assert page.text_content("#epsilon") == upper(epsilon)
    winner = sdp.compose(items).explain(delta=1e-6).winner
    assert page.text_content("#winner") == winner.name
    assert winner.value is not None
    assert page.text_content("#analyses tr.winner td.num") == upper(winner.value)
    more, _ = more_fit(items, sdp.Gaussian(20.0), sdp.ApproxDP(20.0, 1e-6))
    assert f"{more:,} more" in page.text_content("#fit")
    # δ(ε) drawn: the sharpest line and one per analysis that applies
    assert page.locator("#curve path.sharpest").count() == 1
    assert page.locator("#curve path.line").count() >= 2

    path = shots / "calculator.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"\nscreenshot of the calculator: {path}")
    assert path.stat().st_size > 10_000


def test_page_rounds_bounds_as_the_library(page: Any, server: Server) -> None:
    """The page's directed rounding (``sharpdp.js``) prints what ``_format.upper``/``lower``
    print, on awkward values and random ones."""
    page.goto(f"{server.url}/calculator")
    rng = random.Random(7)
    values = [0.1, 1e-6, 2.0, 5.2215344, 0.46211716, 2.5e-12, 999999.5, 9.999995, 1e20, -0.1]
    values += [5e-324, 1.7976931348623157e308, 123456789.0, 0.00012345678, -3e-7]
    values += [rng.uniform(-10, 10) * 10 ** rng.randint(-8, 12) for _ in range(200)]
    for digits in (3, 6):
        got = page.evaluate(
            "([xs, d]) => xs.map(x => [sharpdp.upper(x, d), sharpdp.lower(x, d)])",
            [values, digits],
        )
        assert got == [[upper(x, digits), lower(x, digits)] for x in values]


def test_sign_out_forgets_the_analysts_page_and_keys_follow_their_column(
    page: Any, server: Server
) -> None:
    """After sign-out the next analyst on the tab saw the last release and found the token in
    its field; digits were sent as numbers whatever the column (007 → 7, refused for a text
    column); a value left in a hidden field (q = 1.5) blocked Run without a word."""
    first = new_analyst(server.url, "dee", "approx:1,1e-6")
    second = new_analyst(server.url, "eli", "approx:1,1e-6")
    sign_in(page, server, first)
    page.select_option("#dataset", "people")
    page.select_option("#query", "quantile")
    page.fill("#q", "1.5")  # out of range, then hidden by the next choice
    page.select_option("#query", "count_by")
    page.select_option("#column", "dept")
    page.fill("#keys", "a, 007")  # a text column: "007" is text
    page.fill("#privacy", "pure:0.1")
    page.fill("#level", "0.999")  # any level in (0, 1) (the field stopped at 0.99 steps)
    page.click("#run")
    page.wait_for_selector("#release-panel", state="visible")
    release_id = page.text_content("#release-id")
    rows = httpx.get(f"{server.url}/releases/{release_id}", headers=bearer(first)).json()["rows"]
    assert [row["dept"] for row in rows] == ["a", "007"]

    page.click("#sign-out")
    page.wait_for_selector("#signin-panel", state="visible")
    assert page.input_value("#token") == ""
    assert page.is_hidden("#release-panel")
    assert page.locator("#release-rows tbody tr").count() == 0
    page.fill("#token", second)
    page.click("#sign-in")
    page.wait_for_selector("#workspace", state="visible")
    assert page.text_content("#who") == "eli"
    assert page.is_hidden("#release-panel")
    assert release_id not in page.content()


def test_calculator_reads_its_form_as_typed(page: Any, server: Server) -> None:
    """An empty δ was sent as δ = 0 (ε = inf with no word); "how many more" without a budget
    was dropped silently; after an error the last result stayed under the new form."""
    page.goto(f"{server.url}/calculator")
    page.wait_for_selector("#spellings:not(:empty)")
    page.click("#add")
    page.locator("#items tbody tr").last.locator(".item").fill("gaussian:5")
    page.fill("#delta", "")
    page.fill("#next", "")
    page.click("#compute")
    page.wait_for_selector("#result", state="visible")
    assert page.text_content("#at-delta") == "0.000001"
    assert page.text_content("#epsilon") == upper(sdp.Gaussian(5.0).epsilon(1e-6))

    page.fill("#budget", "")
    page.fill("#next", "gaussian:20")
    page.click("#compute")
    page.wait_for_selector("#message.error")
    assert "budget" in page.text_content("#message")
    assert page.is_hidden("#result")
    page.errors.clear()  # the refused request's console line
