"""Sums of integer columns with wide bounds: the time to price and to run them.

Usage::

    python bench/wide_sums.py        # ~1 minute on 2 cores

An integer column's sum is released on the integer grid (step 1: exact), so bounds (0, U) make a
discrete Laplace of sensitivity Δ = U grid steps, whose privacy-loss law has Δ + 1 atoms. Each row
of the table opens a session on a small synthetic table (5,000 rows, 1,000 persons) with an
(1, 1e-6) budget and prices then runs four such sums at ε = 0.1 each: ``explain()`` composes the
budget spent so far with the new query (the PLD accountant reads the pair), ``run()`` spends it.
Columns: Δ, the first ``explain()`` (builds the pair's table of atoms), the median of the other
three, the median ``run()``. Measured on DuckDB, in one process, sizes in increasing order.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sharpdp as sdp
from _shared import load_note, print_table

WIDTHS = (10**3, 10**4, 10**5, 10**6, 4 * 10**6)


def one_width(upper: int) -> list[str]:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"p": rng.integers(0, 1000, 5000), "x": rng.integers(0, upper, 5000)})
    session = sdp.data.Session(frame, privacy_unit="p", budget=sdp.ApproxDP(1.0, 1e-6))
    explains, runs = [], []
    for i in range(4):
        query = session.sum("x", bounds=(0, upper), privacy=sdp.PureDP(0.1), max_rows=1)
        t0 = time.perf_counter()
        query.explain()
        t1 = time.perf_counter()
        query.run(rng=i)
        t2 = time.perf_counter()
        explains.append(t1 - t0)
        runs.append(t2 - t1)
    return [
        f"{upper:,}",
        f"{explains[0]:.3f}",
        f"{statistics.median(explains[1:]):.3f}",
        f"{statistics.median(runs):.3f}",
    ]


def main() -> None:
    import argparse

    argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    ).parse_args()  # no options: --help prints the summary and exits
    print(f"# integer sums with wide bounds — {time.strftime('%Y-%m-%d %H:%M')}, {load_note()}")
    rows = [one_width(u) for u in WIDTHS]
    print_table(
        f"sharpdp {sdp.__version__} ({Path(sdp.__file__).parent})",
        ["Δ (grid steps)", "first explain s", "explain s", "run s"],
        rows,
    )


if __name__ == "__main__":
    main()
