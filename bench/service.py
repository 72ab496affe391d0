"""The query service's overhead and its budget under concurrency (loopback only, bounded).

Usage::

    python bench/service.py [--clients 20] [--requests 50] [--workers 1] [--spends 200]

Needs the ``service`` extra (FastAPI, uvicorn, httpx). Starts ``sharpdp.service`` on uvicorn
(127.0.0.1, a free port) over a tiny table (60 persons × 3 rows), so the engine's part is small,
and measures:

1. **Overhead of ``POST /queries``** with ``--clients`` concurrent clients (threads with keep-alive
   connections), each its own analyst, ``--requests`` queries each (a bounded ``count``, budget
   ``approx:10,1e-6``, privacy ``pure:0.01``). Every response carries ``Server-Timing``: ``app``
   (from the request's body to the response: validation, auth, budget check, durable spend,
   release storage, serialisation, and waiting for a thread) and ``engine`` (building the plan,
   running it on DuckDB, adding the noise). Overhead = app − engine, per request; also the
   client's latency − engine (adds HTTP parsing and the loopback). The same query through the
   library directly (one thread, in-memory ledger) gives the engine's own time for comparison.
2. **Zero overspend**: ``--spends`` concurrent spends of ``pure:0.1`` from one analyst against a
   ``pure:1`` budget: how many were accepted, what the ledger reads, and any 5xx.

Every spend is durable (WAL, synchronous=FULL): the numbers include the disk's fsync latency.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

import sharpdp as sdp
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.ledger import Ledger

ADMIN = "bench-admin-token"
QUERY = {"dataset": "people", "query": "count", "privacy": "pure:0.01"}


def table(path: Path) -> Path:
    rows = [
        (f"p{p}", "abc"[(p + r) % 3], (7 * p + 13 * r) % 100) for p in range(60) for r in range(3)
    ]
    pd.DataFrame(rows, columns=["person", "dept", "value"]).to_csv(path, index=False)
    return path


def config(directory: Path, budget: str) -> Path:
    data = table(directory / "people.csv")
    path = directory / "service.toml"
    path.write_text(
        f'[ledger]\npath = "ledger.sqlite"\n[policy]\nbudget = "{budget}"\nperiod = "month"\n'
        f'[datasets.people]\npath = "{data.name}"\nprivacy_unit = "person"\n'
    )
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(path: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "SHARPDP_ADMIN_TOKEN": ADMIN}
    process = subprocess.Popen(  # `sharpdp serve` (the import registers the command)
        [
            sys.executable,
            "-c",
            "import sharpdp.cli.serve; from sharpdp.cli import main; main()",
            "serve",
            str(path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/openapi.json").status_code == 200:
                time.sleep(1.0 if workers > 1 else 0.0)
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    stop(process)
    raise SystemExit("the server did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


def analyst(url: str, name: str) -> str:
    r = httpx.post(
        f"{url}/admin/analysts",
        json={"name": name},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=30,
    )
    r.raise_for_status()
    return str(r.json()["token"])


def timing(header: str) -> dict[str, float]:
    out = {}
    for part in header.split(","):
        name, _, value = part.strip().partition(";dur=")
        out[name] = float(value)
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def library_engine(path: Path, n: int) -> list[float]:
    """ms per query (plan + engine + noise) through the library directly, one thread."""
    s = sdp.data.Session(str(path), "person", budget=sdp.ApproxDP(1e3, 1e-6), seed=None)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(n + 5):
        t0 = time.perf_counter()
        q = s.count(privacy=sdp.PureDP(0.01))
        q._release(rng)  # the part of run() after the spend
        times.append((time.perf_counter() - t0) * 1000)
    return times[5:]


def overhead(url: str, clients: int, requests: int, prefix: str) -> dict[str, list[float]]:
    tokens = [analyst(url, f"{prefix}{i}") for i in range(clients)]

    def client(token: str) -> list[tuple[float, dict[str, float], int]]:
        out = []
        h = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, timeout=60) as c:
            for i in range(requests + 2):
                t0 = time.perf_counter()
                r = c.post("/queries", json=QUERY, headers=h)
                ms = (time.perf_counter() - t0) * 1000
                if i >= 2:  # the first two warm the worker (token check, session)
                    out.append((ms, timing(r.headers["server-timing"]), r.status_code))
        return out

    with ThreadPoolExecutor(clients) as pool:
        results = [r for rs in pool.map(client, tokens) for r in rs]
    statuses = Counter(s for _, _, s in results)
    if set(statuses) != {200}:
        raise SystemExit(f"unexpected statuses {statuses}")

    def part(t: dict[str, float], name: str) -> float:
        return t.get(name, 0.0)

    return {
        "client latency": [ms for ms, _, _ in results],
        "  engine": [part(t, "engine") for _, t, _ in results],
        "  auth": [part(t, "auth") for _, t, _ in results],
        "  budget check (dry run)": [part(t, "check") for _, t, _ in results],
        "  durable spend": [part(t, "spend") for _, t, _ in results],
        "  store release": [part(t, "store") for _, t, _ in results],
        "overhead work": [
            sum(part(t, k) for k in ("auth", "check", "spend", "store")) for _, t, _ in results
        ],
        "overhead CPU": [
            sum(part(t, f"{k}-cpu") for k in ("auth", "check", "spend", "store"))
            for _, t, _ in results
        ],
        "app − engine (with waits)": [t["app"] - part(t, "engine") for _, t, _ in results],
        "client − engine": [ms - part(t, "engine") for ms, t, _ in results],
    }


def overspend(url: str, directory: Path, spends: int) -> tuple[Counter[int], int, float, float]:
    token = analyst(url, "one")
    body = {"dataset": "people", "query": "count", "privacy": "pure:0.1"}

    def one(_: int) -> int:
        r = httpx.post(
            f"{url}/queries", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=120
        )
        return r.status_code

    t0 = time.perf_counter()
    with ThreadPoolExecutor(spends) as pool:
        statuses = Counter(pool.map(one, range(spends)))
    wall = time.perf_counter() - t0
    with (
        Ledger(directory / "ledger.sqlite") as ledger,
        Accountant(None, ledger, "one", period=time.strftime("%Y-%m", time.gmtime())) as account,
    ):
        return statuses, len(account.history()), account.epsilon(0.0), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--spends", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        path = config(directory, "approx:10,1e-6")
        lib = library_engine(directory / "people.csv", 200)
        for clients, requests in ((1, args.requests), (args.clients, args.requests)):
            process, url = start(path, args.workers)
            try:
                stats = overhead(url, clients, requests, prefix=f"c{clients}-")
            finally:
                stop(process)
            print(
                f"POST /queries, {clients} concurrent client(s) × {requests} queries, "
                f"{args.workers} worker(s), {os.cpu_count()} cores (ms)"
            )
            print(f"{'':28s} {'p50':>8s} {'p99':>8s} {'max':>8s}")
            rows = {"library: plan + engine": lib, **stats}
            for name, values in rows.items():
                print(
                    f"{name:28s} {pct(values, 50):8.2f} {pct(values, 99):8.2f} {max(values):8.2f}"
                )
            n = len(stats["client latency"])
            rate = n / sum(stats["client latency"]) * 1000 * clients
            print(f"({n} queries, ≈ {rate:.0f} queries/s)\n")

        directory2 = directory / "overspend"
        directory2.mkdir()
        path2 = config(directory2, "pure:1")
        process, url = start(path2, max(2, args.workers))
        try:
            statuses, rows_in_ledger, eps, wall = overspend(url, directory2, args.spends)
        finally:
            stop(process)
        print(
            f"{args.spends} concurrent spends of pure:0.1 by one analyst, budget pure:1, "
            f"{max(2, args.workers)} workers"
        )
        print(
            f"  statuses {dict(statuses)}; ledger rows {rows_in_ledger}; ledger reads "
            f"ε = {eps!r} (≤ 1: {'yes' if eps <= 1.0 else 'NO — OVERSPENT'}); {wall:.2f} s"
        )


if __name__ == "__main__":
    main()
