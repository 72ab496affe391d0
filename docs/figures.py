"""Draw the README's pictures, one of each kind, into ``docs/img/`` (PNG, 100 dpi).

* ``profile.png``: δ(ε) of 100 Gaussians (σ = 5) and 20 exponential mechanisms (ε = 0.1) under
  every composition analysis (``sdp.plots.profile``);
* ``capacity.png``: ε at δ = 10⁻⁶ of k exponential mechanisms (ε0 = 0.025, monotone scores) under
  every analysis, with the (1, 10⁻⁶) budget (``sdp.plots.capacity``; the comparison of
  ``examples/capacity.py``);
* ``renyi.png``: the exact Rényi curve of 1-bounded range against the classical η²α/8 and 1-DP's
  (``sdp.plots.renyi``);
* ``budget.png``: three analysts' spending over a simulated week, from a ledger
  (``sdp.plots.budget``);
* ``release.png``: flights per carrier in nycflights13 (at most 100 per aircraft), protecting
  each aircraft, with 95% intervals (``sdp.plots.release``).

Run from anywhere: ``python docs/figures.py [OUTPUT_DIR]`` (default: ``docs/img``; about 10 s).
The same library version gives the same files.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import sharpdp as sdp
from sharpdp.accounting import ledger as ledger_module

DPI = 100
#: The simulated clock of the budget picture: the first spend's time, and the time between spends.
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
STEP = timedelta(hours=14)


def profile(out: Path) -> None:
    c = sdp.compose([(sdp.Gaussian(5.0), 100), (sdp.Exponential(0.1), 20)])
    sdp.plots.save(sdp.plots.profile(c), out / "profile.png", dpi=DPI)


def capacity(out: Path) -> None:
    ks = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    fig = sdp.plots.capacity(
        sdp.Exponential(0.025, monotonic=True), sdp.ApproxDP(1.0, 1e-6), ks, adaptive=False
    )
    sdp.plots.save(fig, out / "capacity.png", dpi=DPI)


def renyi(out: Path) -> None:
    fig = sdp.plots.renyi(
        sdp.BoundedRange(1.0),
        sdp.ZCDP(1 / 8),
        sdp.PureDP(1.0),
        labels=["1-bounded range (exact)", "η²α/8 (Cesar–Rogers 2021)", "1-DP (exact)"],
    )
    sdp.plots.save(fig, out / "renyi.png", dpi=DPI)


class _Clock(datetime):
    """``datetime`` whose ``now()`` advances by :data:`STEP` at each call (a simulated clock)."""

    calls = 0

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        _Clock.calls += 1
        return START + _Clock.calls * STEP


def budget(out: Path) -> None:
    # The ledger stamps each record with datetime.now(); a simulated clock spreads the spends
    # over a week (this script only: nothing else of the ledger is touched).
    with mock.patch.object(ledger_module, "datetime", _Clock), tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "team-budget.sqlite"
        ana = sdp.Accountant(sdp.ApproxDP(1.0, 1e-6), ledger=str(path), analyst="ana")
        bo = sdp.Accountant(sdp.ApproxDP(2.0, 1e-6), ledger=str(path), analyst="bo")
        cy = sdp.Accountant(sdp.ZCDP(0.5), ledger=str(path), analyst="cy")
        plan = [
            (ana, sdp.Gaussian(8.0), 1),
            (bo, sdp.Exponential(0.1, monotonic=True), 10),
            (cy, sdp.Gaussian(4.0), 2),
            (ana, sdp.Exponential(0.05), 20),
            (bo, sdp.Laplace(5.0), 3),
            (cy, sdp.DiscreteGaussian(3.0), 1),
            (ana, sdp.Gaussian(12.0), 2),
            (bo, sdp.Gaussian(10.0), 4),
            (cy, sdp.Exponential(0.2), 5),
            (ana, sdp.Laplace(40.0), 3),
        ]
        for account, item, count in plan:
            account.spend(item, count)
        for account in (ana, bo, cy):
            account.close()
        sdp.plots.save(sdp.plots.budget(path), out / "budget.png", dpi=DPI)


def release(out: Path) -> None:
    flights = sdp.data.datasets.flights()
    carriers = sorted(flights.carrier.unique())
    s = sdp.data.Session(
        flights,
        privacy_unit="tailnum",
        budget=sdp.ApproxDP(1.0, 1e-6),
        null_units="drop",
        seed=0,
    )
    q = s.count_by("carrier", keys=carriers, privacy=sdp.PureDP(0.1), max_groups=1, max_rows=100)
    sdp.plots.save(sdp.plots.release(q.run(rng=0)), out / "release.png", dpi=DPI)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for draw in (profile, capacity, renyi, budget, release):
        draw(out)
        print(f"{out / draw.__name__}.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "img")
