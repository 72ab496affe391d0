"""The query service's overhead and its budget under concurrency (loopback only, bounded).

Usage::

    python bench/service.py [--clients 20] [--requests 50] [--workers 1] [--spends 200]
                            [--ledger sqlite|postgres]

Needs the ``test`` extra (``pip install -e '.[test]'``: the ``service`` and ``postgres`` extras
for FastAPI, uvicorn and psycopg, and the ``httpx`` client) and, for the
PostgreSQL ledger, Debian's ``postgresql`` package (a throwaway cluster on 127.0.0.1, the one
``tests/service`` uses; without it the PostgreSQL parts are skipped with a message). Starts
``sharpdp serve`` (uvicorn, 127.0.0.1, a free port) over a tiny table (60 persons × 3 rows), so
the engine's part is small, and measures:

1. **Overhead of ``POST /queries``** beyond the engine's query time, with 1 client (no queueing)
   and with ``--clients`` concurrent clients (threads with keep-alive connections), each its own
   analyst, ``--requests`` queries each (a bounded ``count``, budget ``approx:10,1e-6``, privacy
   ``pure:0.01``), on the ``--ledger`` storage. Every response carries ``Server-Timing``:
   ``auth``, ``check`` (the dry run), ``spend`` (the accountant's check and the durable ledger
   transaction), ``engine`` (building the plan, running it on DuckDB, adding the noise),
   ``store`` (the release, durably) and ``respond`` (encoding the JSON), each with its CPU time,
   and ``app`` (from the request's body to the response, including waiting for a thread).

   (a) overhead as the server measures it: auth + check + spend + store + respond (wall clock of
       those phases, and their CPU time); (b) overhead seen by the client: its latency minus the
       engine phase (adds the framework, waiting for a thread and a core, HTTP on loopback).
   The same query through the library directly (one thread) gives the engine's own time.
2. **Zero overspend**: ``--spends`` concurrent spends of ``pure:0.1`` from one analyst against a
   ``pure:1`` budget, on a SQLite ledger and on a PostgreSQL ledger: how many were accepted, the
   ledger's rows and reading (read back directly), and any 5xx.

Every spend is durable (SQLite: WAL, synchronous=FULL; PostgreSQL: synchronous_commit=on): the
numbers include the disk's fsync latency.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "service"))
from servers import Postgres, postgres_bindir  # the tests' throwaway cluster

ADMIN = "bench-admin-token"
QUERY = {"dataset": "people", "query": "count", "privacy": "pure:0.01"}


def table(path: Path) -> Path:
    rows = [
        (f"p{p}", "abc"[(p + r) % 3], (7 * p + 13 * r) % 100) for p in range(60) for r in range(3)
    ]
    pd.DataFrame(rows, columns=["person", "dept", "value"]).to_csv(path, index=False)
    return path


def config(directory: Path, budget: str, ledger: str = "ledger.sqlite") -> Path:
    data = table(directory / "people.csv")
    path = directory / "service.toml"
    path.write_text(
        f'[ledger]\npath = "{ledger}"\n[policy]\nbudget = "{budget}"\nperiod = "month"\n'
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

    phases = ("auth", "check", "spend", "store", "respond")
    return {
        "client latency": [ms for ms, _, _ in results],
        "  engine": [part(t, "engine") for _, t, _ in results],
        "  auth": [part(t, "auth") for _, t, _ in results],
        "  budget check (dry run)": [part(t, "check") for _, t, _ in results],
        "  durable spend": [part(t, "spend") for _, t, _ in results],
        "  store release": [part(t, "store") for _, t, _ in results],
        "  encode the JSON": [part(t, "respond") for _, t, _ in results],
        "(a) overhead, server": [sum(part(t, k) for k in phases) for _, t, _ in results],
        "(a) overhead, its CPU": [sum(part(t, f"{k}-cpu") for k in phases) for _, t, _ in results],
        "app − engine (with waits)": [t["app"] - part(t, "engine") for _, t, _ in results],
        "(b) client − engine": [ms - part(t, "engine") for ms, t, _ in results],
    }


def overspend(
    url: str, ledger_target: str | Path, spends: int
) -> tuple[Counter[int], int, float, float]:
    """``spends`` concurrent spends of pure:0.1 by one analyst; (statuses, the ledger's rows of
    the account, its ε read back from the ledger, wall seconds)."""
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
        Ledger(ledger_target, create=False) as ledger,
        Accountant(None, ledger, "one", period=time.strftime("%Y-%m", time.gmtime())) as account,
    ):
        return statuses, len(account.history()), account.epsilon(0.0), wall


def table_of(rows: dict[str, list[float]]) -> None:
    print(f"{'':28s} {'p50':>8s} {'p99':>8s} {'max':>8s}")
    for name, values in rows.items():
        print(f"{name:28s} {pct(values, 50):8.2f} {pct(values, 99):8.2f} {max(values):8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--spends", type=int, default=200)
    parser.add_argument("--ledger", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args()
    bindir = postgres_bindir()
    cluster = Postgres(bindir).start() if bindir is not None else None
    if cluster is None:
        print("(no PostgreSQL server binaries: apt-get install postgresql; skipping PostgreSQL)\n")
        if args.ledger == "postgres":
            raise SystemExit("--ledger postgres needs the PostgreSQL server binaries")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run(Path(tmp), args, cluster)
    finally:
        if cluster is not None:
            cluster.stop()


def run(directory: Path, args: argparse.Namespace, cluster: Postgres | None) -> None:
    summary: list[tuple[str, float, float]] = []
    lib = library_engine(table(directory / "people.csv"), 200)
    for clients in (1, args.clients):
        here = directory / f"c{clients}"
        here.mkdir()
        pg = cluster.database() if cluster is not None and args.ledger == "postgres" else None
        path = config(here, "approx:10,1e-6", pg or "ledger.sqlite")
        process, url = start(path, args.workers)
        try:
            stats = overhead(url, clients, args.requests, prefix=f"c{clients}-")
        finally:
            stop(process)
        print(
            f"POST /queries, {clients} concurrent client(s) × {args.requests} queries, "
            f"{args.workers} worker(s), {args.ledger} ledger, {os.cpu_count()} cores (ms)"
        )
        table_of({"library: plan + engine": lib, **stats})
        n = len(stats["client latency"])
        rate = n / sum(stats["client latency"]) * 1000 * clients
        print(f"({n} queries, ≈ {rate:.0f} queries/s)\n")
        for name in ("(a) overhead, server", "(a) overhead, its CPU", "(b) client − engine"):
            values = stats[name]
            summary.append((f"{name}, {clients} client(s)", pct(values, 50), pct(values, 99)))

    print("Target: POST /queries overhead beyond the engine, p50 < 10 ms, p99 < 50 ms (ms)")
    print(f"{'':40s} {'p50':>8s} {'p99':>8s}  met")
    for name, p50, p99 in summary:
        met = "yes" if p50 < 10 and p99 < 50 else "no"
        print(f"{name:40s} {p50:8.2f} {p99:8.2f}  {met}")
    print()

    workers = max(2, args.workers)
    print(
        f"Target: {args.spends} concurrent spends, zero overspend (pure:0.1 each by one analyst, "
        f"budget pure:1, {workers} workers)"
    )
    ledgers: list[tuple[str, str | None]] = [("sqlite", None)]
    if cluster is not None:
        ledgers.append(("postgres", cluster.database()))
    for kind, url_or_none in ledgers:
        here = directory / f"overspend-{kind}"
        here.mkdir()
        path = config(here, "pure:1", url_or_none or "ledger.sqlite")
        target: str | Path = url_or_none or here / "ledger.sqlite"
        process, url = start(path, workers)
        try:
            statuses, rows_in_ledger, eps, wall = overspend(url, target, args.spends)
        finally:
            stop(process)
        fine = eps <= 1.0 and set(statuses) <= {200, 403} and rows_in_ledger == statuses[200]
        print(
            f"  {kind:8s} statuses {dict(sorted(statuses.items()))}; ledger rows {rows_in_ledger};"
            f" ledger reads ε = {eps!r}; {wall:.2f} s; zero overspend, no 5xx: "
            f"{'yes' if fine else 'NO'}"
        )


if __name__ == "__main__":
    main()
