"""Latency of ``Accountant.spend`` on a ledger that already holds 10^4 entries.

Usage::

    python bench/ledger.py [--entries 10000] [--spends 200] [--dir /path/on/the/real/disk]

The ledger is pre-filled by writing rows directly with the standard ``sqlite3`` module, following
the documented format (docs/ledger.md) — which also checks that the format is usable by other tools.
Scenarios (one ledger each):

* ``1 kind``     — 10^4 spends of one mechanism (a typical analyst repeating a query type), then
  more of the same;
* ``1 kind + G``  — the same history, then spends of a Gaussian mechanism;
* ``100 kinds``  — 10^4 spends of 100 different Gaussian mechanisms;
* ``10^4 kinds`` — 10^4 spends, every one a different Gaussian (the worst case for grouping).

* ``growing: 40 distinct Laplace`` (and ``… EM/Laplace/pure``) — a fresh account that spends 40
  mechanisms of distinct parameters one after another, each spend recomposing a history of
  distinct items (what the data layer and the service do: one heterogeneous item per query);
  every spend's latency is reported (p50/p95/max and the slowest spend's index).

For the pre-filled ledgers: the time to open the ledger (read-only validation of every row), the
first spend of a fresh accountant (reads and groups all 10^4 rows), then warm spends (p50/p95/max),
and warm spends
when another connection commits one row to the same account between our spends (the cache re-reads
only that row). Every spend is durable (WAL, synchronous=FULL: one fsync per commit), so the
wall-clock numbers include the disk's fsync latency; the CPU time of the process is shown too.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import sharpdp as sdp
from sharpdp.accounting._serialize import dumps
from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.composition import compose
from sharpdp.accounting.ledger import Ledger
from sharpdp.guarantees import Guarantee


def prefill(path: Path, items: list[Guarantee], budget: Guarantee) -> None:
    """Create the ledger, record the account's budget, then append one row per item, in a single
    transaction (every spend row names the account's recorded budget, as the format requires)."""
    Ledger(path).close()
    stamp = datetime.now(UTC).isoformat(timespec="microseconds")
    rows = [
        (
            "bench",
            "all",
            dumps(item),
            1,
            stamp,
            "epsilon",
            1e-6,
            0.0,
            dumps(budget),
            sdp.__version__,
        )
        for item in items
    ]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO budgets (analyst, period, budget, created_at, reason, library_version) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        ("bench", "all", dumps(budget), stamp, "benchmark prefill", sdp.__version__),
    )
    conn.executemany(
        "INSERT INTO spends (analyst, period, item, count, created_at, measure, at_delta, "
        "spent_after, budget, library_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("COMMIT")
    conn.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(
    name: str, path: Path, items: list[Guarantee], spends: int, new_item: Guarantee | None = None
) -> None:
    budget = sdp.ApproxDP(1e9, 1e-6)  # never exhausted: measure the check, not a refusal
    prefill(path, items, budget)
    new_item = sdp.Gaussian(1234.5) if new_item is None else new_item

    t0 = time.perf_counter()
    ledger = Ledger(path)
    t_open = time.perf_counter() - t0
    acc = Accountant(budget, ledger=ledger, analyst="bench")
    t0 = time.perf_counter()
    acc.spend(new_item)
    t_first = time.perf_counter() - t0

    warm: list[float] = []
    cpu: list[float] = []
    for _ in range(spends):
        t0, c0 = time.perf_counter(), time.process_time()
        acc.spend(new_item)
        warm.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)

    other = Accountant(budget, ledger=path, analyst="bench")
    interleaved: list[float] = []
    for i in range(spends // 4):
        other.spend(sdp.Gaussian(2000.0 + i))  # a row the first accountant has not seen
        t0 = time.perf_counter()
        acc.spend(new_item)
        interleaved.append(time.perf_counter() - t0)
    other.close()
    ledger.close()

    ms = 1e3
    print(
        f"{name:<11} open {t_open * ms:7.1f} ms | first spend {t_first * ms:7.1f} ms | warm p50 "
        f"{statistics.median(warm) * ms:6.2f} p95 {percentile(warm, 0.95) * ms:6.2f} max "
        f"{max(warm) * ms:6.2f} ms (CPU p50 {statistics.median(cpu) * ms:5.2f}) | "
        "after another writer p50 "
        f"{statistics.median(interleaved) * ms:6.2f} "
        f"p95 {percentile(interleaved, 0.95) * ms:6.2f} ms"
    )


def growing(label: str, path: Path, items: list[Guarantee], budget: Guarantee) -> None:
    """Spend ``items`` one by one on a fresh account; print each spend's latency distribution."""
    times = []
    with Accountant(budget, ledger=str(path), analyst="ana") as acc:
        for item in items:
            t0 = time.perf_counter()
            acc.spend(item)
            times.append(time.perf_counter() - t0)
        reading = acc.epsilon(budget.delta_) if isinstance(budget, sdp.ApproxDP) else None
    ms = 1e3
    slowest = max(range(len(times)), key=times.__getitem__)
    print(
        f"{label:32s} {len(items)} spends | p50 {statistics.median(times) * ms:7.2f} "
        f"p95 {percentile(times, 0.95) * ms:7.2f} max {max(times) * ms:7.2f} ms "
        f"(slowest: spend #{slowest + 1}) | reading ε = {reading}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--spends", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None, help="directory for the ledger files")
    args = parser.parse_args()
    n = args.entries
    # Warm-up: imports and the first (lazily initialised) numerics are not what we measure.
    compose([sdp.Laplace(1.0), sdp.Gaussian(1.0)]).epsilon(1e-6)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        print(f"{n} entries per ledger, {args.spends} warm spends, files in {root}")
        run(
            "1 kind",
            root / "one.sqlite",
            [sdp.Laplace(100.0)] * n,
            args.spends,
            new_item=sdp.Laplace(100.0),
        )
        run("1 kind + G", root / "one_g.sqlite", [sdp.Laplace(100.0)] * n, args.spends)
        run(
            "100 kinds",
            root / "hundred.sqlite",
            [sdp.Gaussian(100.0 + i % 100) for i in range(n)],
            args.spends,
        )
        run(
            "10^4 kinds",
            root / "distinct.sqlite",
            [sdp.Gaussian(100.0 + i) for i in range(n)],
            max(8, args.spends // 10),
        )
        budget = sdp.ApproxDP(50.0, 1e-6)
        growing(
            "growing: 40 distinct Laplace",
            root / "laplace40.sqlite",
            [sdp.Laplace(10.0 + 0.5 * i) for i in range(40)],
            budget,
        )
        mixed: list[Guarantee] = []
        for i in range(10):
            mixed += [
                sdp.Exponential(0.05 + 0.01 * i),
                sdp.Laplace(20.0 + i),
                sdp.PureDP(0.02 + 0.003 * i),
                sdp.ApproxDP(0.03 + 0.002 * i, 1e-9),
            ]
        growing("growing: 40 EM/Laplace/pure/approx", root / "mixed40.sqlite", mixed, budget)


if __name__ == "__main__":
    main()
