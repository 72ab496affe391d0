"""Load and faults with a PostgreSQL ledger shared by two servers, bounded and on loopback only.

Each server is a real ``sharpdp serve`` (uvicorn) process with its own directory and state file
(analysts, token hashes, releases): the only thing the two share is the ledger, a database of a
throwaway PostgreSQL cluster (``conftest.postgres``), as two machines would.

* 20 analysts × 50 concurrent spends against one budget each, split between the two servers: no
  analyst over budget, every release stored with its spend in the ledger, no 5xx.
* SIGKILL of one server in the middle of a burst while the other goes on, then a restart on the
  same files: no lost spend, no release without its spend, the budget still enforced.

Afterwards the ledger is read directly (psycopg, not through the service): per analyst, the spends'
ε add up to at most the budget, the ledger's own reading never passes it, and every stored release
names a spend row of its analyst.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
from servers import Server, bearer, new_analyst, write_config

import sharpdp as sdp
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.ledger import Ledger, PostgresLedger

# the cheapest query in the engine (one bounded count): the tests exercise the budget, not DuckDB
BODY = {"dataset": "people", "query": "count", "privacy": "pure:0.1"}


def _configs(tmp_path: Path, url: str) -> tuple[Path, Path]:
    """Two servers' configs: their own directories and state files, one PostgreSQL ledger."""
    configs = []
    for name in ("one", "two"):
        directory = tmp_path / name
        directory.mkdir()
        configs.append(write_config(directory, budget="pure:1", ledger=url))
    return configs[0], configs[1]


def _raw(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows read with psycopg directly, not through sharpdp."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def _releases(*configs: Path) -> list[tuple[str, str, int]]:
    """(analyst, release id, spend row id) of every release stored by the servers."""
    out = []
    for config in configs:
        with sqlite3.connect(config.with_name("service.sqlite")) as conn:
            out += [
                (str(a), str(i), int(s))
                for a, i, s in conn.execute("SELECT analyst, id, spend_id FROM releases")
            ]
    return out


def _exact_epsilon(item: sdp.Guarantee) -> Fraction:
    """The pure ε of a spend as an exact rational: Δ/t for the discrete Laplace of scale t
    (Canonne–Kamath–Steinke 2020), computed here from its parameters; else the (rounded-up) float
    the library reports."""
    if isinstance(item, sdp.DiscreteLaplace):
        return Fraction(item.sensitivity) / Fraction(item.scale)
    return Fraction(item.epsilon(0.0))


def _check_ledger(url: str, budget: float) -> dict[int, str]:
    """Every account within its budget, read directly and through the Ledger API; return spend
    row id → analyst."""
    budgets = _raw(url, "SELECT analyst, period, budget FROM budgets")
    assert budgets, "no account was opened"
    for _, _, text in budgets:  # the documented format: {"type": ..., "params": {...}}
        assert json.loads(text) == {"type": "PureDP", "params": {"epsilon": budget}}
    rows = _raw(url, "SELECT id, analyst, period, count, spent_after, measure FROM spends")
    spends = {int(i): str(a) for i, a, _, _, _, _ in rows}
    assert len(spends) == len(rows)
    for _, analyst, _, _, spent_after, measure in rows:
        assert measure == "epsilon"
        assert spent_after <= budget, (analyst, spent_after)  # the reading recorded at each spend
    total: Counter[str] = Counter()
    with Ledger(url, create=False) as ledger:
        assert isinstance(ledger, PostgresLedger)
        entries = ledger.entries()
        assert {e.id: e.analyst for e in entries} == spends
        for e in entries:  # pure DP adds up: the plain sum of the spends' ε, in exact arithmetic
            total[e.analyst] += _exact_epsilon(e.item) * e.count
        for analyst, period in ledger.accounts():
            assert total[analyst] <= Fraction(budget), (analyst, float(total[analyst]))
            with Accountant(None, ledger, analyst, period=period) as account:
                assert account.epsilon(0.0) <= budget, (analyst, account.epsilon(0.0))
                assert not account.summary().over_budget
    return spends


async def _burst(targets: list[tuple[str, str, str, int]]) -> list[tuple[str, int, Any]]:
    """All at once: for each (analyst, server url, token, n), n concurrent spends of the analyst
    on that server (one client with n connections each)."""

    async def batch(name: str, url: str, token: str, n: int) -> list[tuple[str, int, Any]]:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(base_url=url, timeout=120.0, limits=limits) as client:

            async def one() -> tuple[str, int, Any]:
                r = await client.post("/queries", json=BODY, headers=bearer(token))
                return name, r.status_code, r.json()

            return list(await asyncio.gather(*(one() for _ in range(n))))

    groups = await asyncio.gather(*(batch(*target) for target in targets))
    return [r for group in groups for r in group]


def test_two_servers_share_one_postgres_ledger_without_overspend(
    serve: Callable[..., Server], pg_url: str, tmp_path: Path
) -> None:
    one, two = _configs(tmp_path, pg_url)
    a, b = serve(one), serve(two)
    names = [f"a{i:02d}" for i in range(20)]
    # the same analyst on both servers (each keeps its own token hashes): one ledger account
    tokens = {(n, s.url): new_analyst(s.url, n) for n in names for s in (a, b)}
    targets = [(n, s.url, tokens[n, s.url], 25) for n in names for s in (a, b)]
    results = asyncio.run(_burst(targets))
    statuses = Counter(status for _, status, _ in results)
    assert set(statuses) <= {200, 403}, statuses
    assert len(results) == 20 * 50
    spends = _check_ledger(pg_url, 1.0)
    releases = _releases(one, two)
    answered = {
        (name, out["id"], out["spend_id"]) for name, status, out in results if status == 200
    }
    assert set(releases) == answered  # every release answered is stored, and nothing else
    assert len({spend_id for _, _, spend_id in releases}) == len(releases)  # one spend each
    for analyst, _, spend_id in releases:
        assert spends[spend_id] == analyst  # ... its own, in the shared ledger
    per = Counter(spends.values())
    assert set(per) == set(names)
    assert all(9 <= n <= 10 for n in per.values()), per  # ten spends of ε = 0.1 in ε = 1 at most
    assert len(spends) == len(releases)
    # the two servers spent from the same accounts at once (which one wins each spend is a race)
    both = {a for a, _, _ in _releases(one)} & {a for a, _, _ in _releases(two)}
    print(f"accounts spent through both servers: {len(both)} of {len(names)}")
    assert len(both) >= 1


def test_sigkill_of_a_server_sharing_a_postgres_ledger_loses_no_spend(
    serve: Callable[..., Server], pg_url: str, tmp_path: Path
) -> None:
    one, two = _configs(tmp_path, pg_url)
    servers = {"one": serve(one), "two": serve(two)}
    names = [f"k{i}" for i in range(4)]
    tokens = {(n, s): new_analyst(servers[s].url, n) for n in names for s in servers}
    answered: list[tuple[str, str, int]] = []
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[str] = []
    cut: list[str] = []  # requests to server one cut by its death

    def client(name: str, which: str) -> None:
        url = servers[which].url
        try:
            with httpx.Client(base_url=url, timeout=30.0) as c:
                for _ in range(40):
                    if stop.is_set() and which == "one":
                        return
                    try:
                        r = c.post("/queries", json=BODY, headers=bearer(tokens[name, which]))
                    except httpx.TransportError:
                        if which == "two":
                            raise
                        cut.append(name)  # the server died under us
                        return
                    if r.status_code == 200:
                        with lock:
                            answered.append((name, r.json()["id"], r.json()["spend_id"]))
                    elif r.status_code != 403:
                        errors.append(f"{which}: {r.status_code} {r.text}")
        except Exception as err:  # reported by the test below
            errors.append(f"{which}: {err!r}")

    threads = [
        threading.Thread(target=client, args=(n, s)) for n in names for s in servers for _ in (0, 1)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # kill once some spends are through, requests in flight
        with lock:
            if len(answered) >= 8:
                break
        time.sleep(0.005)
    servers["one"].kill()  # SIGKILL, every worker at once; server two goes on
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors  # server two never failed: no 5xx while its peer died mid-spend
    assert cut, "server one was not killed mid-run"

    spends = _check_ledger(pg_url, 1.0)
    releases = _releases(one, two)
    assert set(answered) <= set(releases)  # every answered release was stored before it was sent
    for analyst, _, spend_id in releases:
        assert spends[spend_id] == analyst  # no release without its spend
    assert len(spends) >= len(releases)  # a spend may lack its release (killed in between)

    again = serve(one)  # restart on the same files: the history is all there, the locks free
    for name in names:
        h = bearer(tokens[name, "one"])
        budget = httpx.get(f"{again.url}/budget", headers=h, timeout=30).json()
        assert len(budget["history"]) == sum(1 for a in spends.values() if a == name)
        refused = False
        while not refused:  # spend the rest through both servers, in turn, until refused
            for which, url in (("one", again.url), ("two", servers["two"].url)):
                r = httpx.post(
                    f"{url}/queries", json=BODY, headers=bearer(tokens[name, which]), timeout=30
                )
                if r.status_code == 403:
                    refused = True
                    break
                assert r.status_code == 200, r.text
    spends = _check_ledger(pg_url, 1.0)
    counts = Counter(spends.values())
    assert set(counts) == set(names)
    assert all(9 <= n <= 10 for n in counts.values()), counts
    for analyst, _, spend_id in _releases(one, two):
        assert spends[spend_id] == analyst
