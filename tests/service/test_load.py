"""Load and faults through real uvicorn workers, bounded and on loopback only.

* 20 analysts × 50 concurrent spends against one budget each, on two worker processes: no
  analyst over budget, every release stored with its spend in the ledger, no 5xx.
* SIGKILL of the server in the middle of a burst of spends, then a restart on the same files: no
  release without its spend, every answered release stored, the budget still enforced.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from servers import Server, bearer, new_analyst, write_config

from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.ledger import Ledger

# the cheapest query in the engine (one bounded count): the tests exercise the budget, not DuckDB
BODY = {"dataset": "people", "query": "count", "privacy": "pure:0.1"}


async def _burst(url: str, tokens: dict[str, str], per_analyst: int) -> list[tuple[str, int, Any]]:
    """``per_analyst`` concurrent spends of every analyst at once (one client per analyst)."""

    async def analyst(name: str) -> list[tuple[str, int, Any]]:
        limits = httpx.Limits(max_connections=per_analyst, max_keepalive_connections=per_analyst)
        async with httpx.AsyncClient(base_url=url, timeout=120.0, limits=limits) as client:

            async def one() -> tuple[str, int, Any]:
                r = await client.post("/queries", json=BODY, headers=bearer(tokens[name]))
                return name, r.status_code, r.json()

            return list(await asyncio.gather(*(one() for _ in range(per_analyst))))

    groups = await asyncio.gather(*(analyst(name) for name in tokens))
    return [r for group in groups for r in group]


def _releases(config: Path) -> list[tuple[str, str, int]]:
    state = config.with_name("ledger.service.sqlite")
    with sqlite3.connect(state) as conn:
        return [
            (str(a), str(i), int(s))
            for a, i, s in conn.execute("SELECT analyst, id, spend_id FROM releases")
        ]


def _check_ledger(config: Path, budget: float) -> dict[int, str]:
    """Every account within its budget; return spend id → analyst."""
    spends: dict[int, str] = {}
    with Ledger(config.with_name("ledger.sqlite")) as ledger:
        for analyst, period in ledger.accounts():
            with Accountant(None, ledger, analyst, period=period) as account:
                assert account.epsilon(0.0) <= budget, (analyst, account.epsilon(0.0))
                assert not account.summary().over_budget
        for e in ledger.entries():
            spends[e.id] = e.analyst
    return spends


def test_concurrent_spends_never_overspend(serve: Callable[..., Server], tmp_path: Path) -> None:
    config = write_config(tmp_path, budget="pure:1")
    server = serve(config, workers=2)
    tokens = {f"a{i:02d}": new_analyst(server.url, f"a{i:02d}") for i in range(20)}
    results = asyncio.run(_burst(server.url, tokens, 50))
    statuses = Counter(status for _, status, _ in results)
    assert set(statuses) <= {200, 403}, statuses
    spends = _check_ledger(config, 1.0)
    releases = _releases(config)
    answered = {
        (name, out["id"], out["spend_id"]) for name, status, out in results if status == 200
    }
    assert set(releases) == answered  # every release answered is stored, and nothing else
    for analyst, _, spend_id in releases:
        assert spends[spend_id] == analyst  # ... each with its own spend in the ledger
    per = Counter(spends.values())
    assert set(per) == set(tokens)
    assert all(9 <= n <= 10 for n in per.values()), per  # ten spends of ε = 0.1 in ε = 1 at most
    assert len(spends) == len(releases)


def test_sigkill_mid_run_loses_no_spend(serve: Callable[..., Server], tmp_path: Path) -> None:
    config = write_config(tmp_path, budget="pure:1")
    server = serve(config)
    tokens = {f"k{i}": new_analyst(server.url, f"k{i}") for i in range(4)}
    answered: list[tuple[str, str, int]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(name: str) -> None:
        with httpx.Client(base_url=server.url, timeout=30.0) as c:
            for _ in range(40):
                if stop.is_set():
                    return
                try:
                    r = c.post("/queries", json=BODY, headers=bearer(tokens[name]))
                except httpx.TransportError:
                    return  # the server died under us
                if r.status_code == 200:
                    with lock:
                        answered.append((name, r.json()["id"], r.json()["spend_id"]))
                else:
                    assert r.status_code == 403, r.text

    threads = [threading.Thread(target=client, args=(n,)) for n in tokens for _ in range(3)]
    for t in threads:
        t.start()
    while True:  # kill once some spends are through, while requests are in flight
        with lock:
            if len(answered) >= 6:
                break
    server.kill()
    stop.set()
    for t in threads:
        t.join(timeout=60)

    spends = _check_ledger(config, 1.0)
    releases = _releases(config)
    assert set(answered) <= set(releases)  # every answered release was stored before it was sent
    for analyst, _, spend_id in releases:
        assert spends[spend_id] == analyst  # no release without its spend
    assert len(spends) >= len(releases)  # a spend may lack its release (killed in between)

    again = serve(config)  # restart on the same files: the history is all there
    for name, token in tokens.items():
        h = bearer(token)
        budget = httpx.get(f"{again.url}/budget", headers=h).json()
        assert len(budget["history"]) == sum(1 for a in spends.values() if a == name)
        while True:
            r = httpx.post(f"{again.url}/queries", json=BODY, headers=h)
            if r.status_code == 403:
                break
            assert r.status_code == 200, r.text
    spends = _check_ledger(config, 1.0)
    counts = Counter(spends.values())
    assert set(counts) == set(tokens)
    assert all(9 <= n <= 10 for n in counts.values()), counts
