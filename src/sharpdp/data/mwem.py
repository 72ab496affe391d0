"""Private multiplicative weights: a synthetic distribution that answers a whole workload.

MWEM (Hardt–Ligett–McSherry 2012, the practical form of Hardt–Rothblum 2010's private
multiplicative weights) over the product domain X of the workload's columns (≤ 2²⁰ cells):

1. n̂ = (bounded number of rows) + noise; A ← the uniform distribution on X scaled to n̂;
2. for t = 1..T: **select** the query i worst answered by A with the exponential mechanism on the
   scores |q_i(A) − q_i(D)| (sensitivity m, not monotone; sampled exactly); **measure** it,
   y_i = q_i(D) + noise; **update** A(x) ← A(x)·exp(q_i(x)·(y_i − q_i(A))/(2n̂)), renormalised
   to n̂, then replay every measurement so far once more in the same way (HLM12 §3: cheap,
   post-processing, and it helps);
3. release A: its counts, answers to any workload over its columns, and sampled rows.

Everything after the noisy values is post-processing, so the privacy of the run is the adaptive
composition of n̂, T selections and T measurements, charged to the accountant as one
:class:`sharpdp.Composition`. The selections are exponential mechanisms, hence ε-bounded range
(Durfee–Rogers 2019; Rogers–Steinke 2021 Lemma 3), ≈ ε²/8-zCDP (Cesar–Rogers 2021) rather than
the ε²/2 of a pure ε-DP analysis: at the same noise, sharpdp affords more rounds, and
``explain()`` says how many more.

**Rounds.** ``rounds=None`` takes T = min(k, 2⌈log₂|X|⌉ + 10): it depends only on the public
workload and domain, never on the data (a data-dependent T would need its own privacy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

import sharpdp as sdp
from sharpdp.data.answers import cell_table, resolve_domains
from sharpdp.data.counts import CountQuery
from sharpdp.data.query import Explanation, Query
from sharpdp.data.release import Release
from sharpdp.data.workloads import MAX_DOMAIN, Workload
from sharpdp.errors import InvalidParameter

__all__ = ["MWEMPlan", "MWEMQuery", "Synthetic", "auto_rounds", "plan_mwem"]

#: Passes over all measurements after each round (HLM12 §3.3: cheap, and it helps).
REPLAYS = 10
#: The share of the privacy spent on the noisy total n̂.
TOTAL_SHARE = 0.05


def auto_rounds(queries: int, cells: int) -> int:
    """T = min(k, 2⌈log₂|X|⌉ + 10) (public quantities only)."""
    return max(1, min(queries, 2 * math.ceil(math.log2(max(cells, 2))) + 10))


@dataclass(frozen=True, slots=True)
class MWEMPlan:
    """The mechanisms of one MWEM run.

    Attributes:
        rounds: T.
        total: the noise of n̂ (sensitivity m).
        selection: each round's exponential mechanism (sensitivity m).
        measurement: each round's noise (sensitivity m).
        classical_rounds: rounds an analysis charging each selection ε²/2 (pure ε-DP) instead of
            its bounded-range ε²/8 affords at the same noise (zCDP view).
        route: how the parameters were calibrated.
    """

    rounds: int
    total: sdp.DiscreteLaplace | sdp.Gaussian
    selection: sdp.Exponential
    measurement: sdp.DiscreteLaplace | sdp.Gaussian
    classical_rounds: int
    route: str

    @property
    def items(self) -> list[tuple[sdp.Guarantee, int]]:
        """The composition charged: n̂ once, T selections, T measurements."""
        return [(self.total, 1), (self.selection, self.rounds), (self.measurement, self.rounds)]


def _zcdp_plan(
    rho: float, m: int, rounds: int
) -> tuple[sdp.Gaussian, sdp.Exponential, sdp.Gaussian]:
    """Split ρ: 5% to n̂, the rest evenly over T rounds, half to selection (ρ = ε²/8), half to
    measurement (ρ = m²/(2σ²))."""
    rho_total = TOTAL_SHARE * rho
    rho_round = (1.0 - TOTAL_SHARE) * rho / rounds
    eps_sel = math.sqrt(8.0 * rho_round / 2.0) * (1.0 - 1e-12)
    sigma_m = m / math.sqrt(2.0 * rho_round / 2.0) * (1.0 + 1e-12)
    sigma_n = m / math.sqrt(2.0 * rho_total) * (1.0 + 1e-12)
    return (
        sdp.Gaussian(sigma_n, sensitivity=m),
        sdp.Exponential(eps_sel, sensitivity=m),
        sdp.Gaussian(sigma_m, sensitivity=m),
    )


def _classical(rho: float, selection: sdp.Exponential, measurement: sdp.Gaussian) -> int:
    """Rounds that fit ρ when each selection is charged ε²/2 (Bun–Steinke 2016 Prop 1.4)."""
    per = selection.epsilon_**2 / 2.0 + measurement.rho
    return int((1.0 - TOTAL_SHARE) * rho // per)


def plan_mwem(privacy: sdp.Guarantee, m: int, rounds: int) -> MWEMPlan:
    """Calibrate an MWEM run of ``rounds`` rounds to ``privacy`` (see the module docstring).

    * ``PureDP(ε)``: 5% of ε to n̂ (discrete Laplace), the rest evenly over the rounds, half to
      the selection (ε-DP), half to a discrete Laplace measurement; pure ε adds exactly.
    * ``ZCDP(ρ)`` / ``ApproxZCDP``: the same split of ρ; selections at ρ = ε²/8 (bounded range),
      Gaussian measurements.
    * ``ApproxDP(ε, δ)``: the zCDP plan with the largest ρ whose *sharp* composition (the
      accountant's, PLD and Rényi) meets (ε, δ): start from the ρ whose CKS20 conversion meets it
      and grow ρ while the sharp composition still fits.
    """
    if isinstance(privacy, sdp.PureDP):
        eps = privacy.epsilon_
        eps_round = (1.0 - TOTAL_SHARE) * eps / rounds
        total = sdp.DiscreteLaplace(m / (TOTAL_SHARE * eps) * (1 + 1e-12), sensitivity=m)
        selection = sdp.Exponential(eps_round / 2.0 * (1 - 1e-12), sensitivity=m)
        measurement = sdp.DiscreteLaplace(m / (eps_round / 2.0) * (1 + 1e-12), sensitivity=m)
        return MWEMPlan(
            rounds,
            total,
            selection,
            measurement,
            rounds,
            "pure ε split: 5% to n̂, the rest evenly over the rounds, half selection, half "
            "measurement (pure ε adds: Dwork–Roth 2014 Thm 3.16)",
        )
    if isinstance(privacy, sdp.ZCDP | sdp.ApproxZCDP):
        n, sel, meas = _zcdp_plan(privacy.rho, m, rounds)
        return MWEMPlan(
            rounds,
            n,
            sel,
            meas,
            _classical(privacy.rho, sel, meas),
            "ρ split: 5% to n̂, the rest evenly over the rounds, half to each selection "
            "(bounded range: ε²/8, Cesar–Rogers 2021), half to each Gaussian measurement",
        )
    if isinstance(privacy, sdp.ApproxDP):
        eps, delta = privacy.epsilon_, privacy.delta_
        if delta <= 0.0:
            return plan_mwem(sdp.PureDP(eps), m, rounds)
        lo, hi = 0.0, max(eps, 1.0)
        while sdp.ZCDP(hi).epsilon(delta) <= eps:
            lo, hi = hi, 2 * hi
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if sdp.ZCDP(mid).epsilon(delta) <= eps else (lo, mid)
        rho = lo

        def fits(r: float) -> bool:
            parts = _zcdp_plan(r, m, rounds)
            items = [(parts[0], 1), (parts[1], rounds), (parts[2], rounds)]
            return sdp.compose(items, adaptive=True).epsilon(delta) <= eps

        if rho <= 0.0 or not fits(rho):
            raise InvalidParameter(f"privacy {privacy!r} is too small for {rounds} MWEM rounds")
        step = 1.25
        for _ in range(12):  # grow while the sharp composition fits (each check ~0.1 s)
            if fits(rho * step):
                rho *= step
            elif step > 1.01:
                step = math.sqrt(step)
            else:
                break
        n, sel, meas = _zcdp_plan(rho, m, rounds)
        return MWEMPlan(
            rounds,
            n,
            sel,
            meas,
            _classical(rho, sel, meas),
            f"zCDP plan with ρ = {rho:.6g}, the largest found whose sharp composition (PLD/Rényi) "
            f"meets {privacy!r}; selections bounded range (ε²/8), Gaussian measurements",
        )
    raise InvalidParameter(
        f"privacy must be sdp.PureDP, sdp.ApproxDP, sdp.ZCDP or sdp.ApproxZCDP, got {privacy!r}"
    )


def _flat_histogram(
    cells: pd.DataFrame, columns: tuple[str, ...], domains: Mapping[str, tuple[Any, ...]]
) -> npt.NDArray[np.float64]:
    sizes = tuple(len(domains[c]) for c in columns)
    codes = [pd.Categorical(cells[c], categories=list(domains[c])).codes for c in columns]
    inside = np.all([k >= 0 for k in codes], axis=0) if len(cells) else np.zeros(0, bool)
    if not len(cells) or not inside.any():
        return np.zeros(math.prod(sizes))
    flat = np.ravel_multi_index(tuple(k[inside] for k in codes), sizes)
    w = cells["count"].to_numpy(np.float64)[inside]
    return np.bincount(flat, weights=w, minlength=math.prod(sizes)).astype(np.float64)


def multiplicative_weights(
    answers: npt.NDArray[np.float64],
    matrix: Any,
    total: float,
    plan: MWEMPlan,
    rng: np.random.Generator,
) -> tuple[npt.NDArray[np.float64], list[int]]:
    """The MWEM loop on true answers ``answers`` = W·h (only noisy views of them leave).

    Args:
        answers: the workload's true (bounded) answers.
        matrix: W, the k × |X| 0/1 query matrix (CSR).
        total: n̂ (noisy, ≥ 1).
        plan: the mechanisms.
        rng: the generator.

    Returns:
        The synthetic counts A over X (summing to n̂) and the selected query indices.
    """
    n_cells = matrix.shape[1]
    # weights w (A = n̂·w/Σw), updated on each query's cells only; Σw kept incrementally
    w = np.ones(n_cells)
    z = float(n_cells)
    measured: dict[int, float] = {}
    chosen: list[int] = []
    indptr, indices = matrix.indptr, matrix.indices
    for _ in range(plan.rounds):
        a = w * (total / z)
        scores = np.abs(matrix @ a - answers)
        i = int(plan.selection.select(scores, rng=rng))
        chosen.append(i)
        measured[i] = float(plan.measurement.release(answers[i], rng=rng))
        # the new measurement, then replays of all of them (post-processing)
        order = [i, *(list(measured) * REPLAYS)]
        for j in order:
            row = indices[indptr[j] : indptr[j + 1]]
            before = w[row]
            q_a = total * before.sum() / z
            after = before * math.exp((measured[j] - q_a) / (2.0 * total))
            w[row] = after
            z += after.sum() - before.sum()
        w /= z
        z = 1.0
    a = w * (total / z)
    return a, chosen


@dataclass(frozen=True, kw_only=True)
class MWEMQuery(Query):
    """An MWEM run (built by ``Session.mwem_query``; ``Session.mwem`` runs it).

    Attributes:
        workload: the workload selected from (and answered).
        max_rows: m.
        plan: the mechanisms.
        discovery: partition selections finding undeclared domains.
    """

    workload: Workload
    max_rows: int
    plan: MWEMPlan
    discovery: tuple[tuple[str, CountQuery], ...] = ()

    def _release(self, rng: np.random.Generator) -> Synthetic:
        found: dict[str, tuple[Any, ...]] = {}
        for column, sub in self.discovery:
            keys = sub._release(rng).frame[column].tolist()
            found[column] = tuple(sorted(keys, key=lambda v: (str(type(v)), v)))
        domains = resolve_domains(self.workload, found)
        columns = self.workload.columns
        sizes = [len(domains[c]) for c in columns]
        if 0 in sizes:
            raise InvalidParameter(
                "MWEM: a discovered domain is empty (no value passed the threshold); the budget "
                "is spent — declare domains= to avoid discovery"
            )
        if math.prod(sizes) > MAX_DOMAIN:
            raise InvalidParameter(
                f"MWEM: the discovered domain has {math.prod(sizes)} cells > {MAX_DOMAIN}; "
                "declare smaller domains"
            )
        cells = cell_table(self, self.workload, domains, self.max_rows, self.bounding.salt)
        hist = _flat_histogram(cells, columns, domains)
        labels, matrix = self.workload.matrix(domains)
        answers = np.asarray(matrix @ hist, dtype=np.float64)
        total = max(1.0, float(self.plan.total.release(float(hist.sum()), rng=rng)))
        synthetic, chosen = multiplicative_weights(answers, matrix, total, self.plan, rng)
        grid = pd.MultiIndex.from_product(
            [list(domains[c]) for c in columns], names=list(columns)
        ).to_frame(index=False)
        grid["count"] = synthetic
        return Synthetic(
            query=self.description,
            keys=columns,
            frame=grid,
            noise={},
            rounds=self.plan.rounds,
            selected=tuple(str(labels.iloc[i].to_dict()) for i in chosen),
            domains=tuple(domains.items()),
            explanation=self.explain(),
        )


@dataclass(frozen=True, eq=False)
class Synthetic(Release):
    """MWEM's synthetic distribution: counts over every cell of the product domain.

    ``to_pandas()`` is the cells with their synthetic ``count`` (summing to n̂; no intervals:
    MWEM's error has no exact law). Everything here is post-processing of the release.

    Attributes:
        rounds: T.
        selected: the queries selected, in order.
        domains: the domain of each column.
        explanation: the pricing (``explain()``).
    """

    rounds: int = 0
    selected: tuple[str, ...] = ()
    domains: tuple[tuple[str, tuple[Any, ...]], ...] = field(default=(), repr=False)
    explanation: Explanation | None = field(default=None, repr=False)

    def explain(self) -> Explanation:
        """The pricing of the run (rounds, mechanisms, the sharp vs classical rounds)."""
        assert self.explanation is not None
        return self.explanation

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        """The cells and their synthetic counts (``level`` is accepted and ignored)."""
        return self.frame.copy()

    def answer(self, workload: Workload) -> pd.DataFrame:
        """Answer any workload over these columns from the synthetic counts (post-processing).

        Returns:
            ``query``, the key columns (marginals) and ``count``.
        """
        domains = dict(self.domains)
        missing = [c for c in workload.columns if c not in domains]
        if missing:
            raise InvalidParameter(f"workload columns {missing} are not in the synthetic data")
        for c in workload.columns:
            dom = workload.domain(c)
            declared = resolve_domains(workload, domains).get(c)
            if dom is not None and declared is not None and tuple(declared) != domains[c]:
                raise InvalidParameter(f"workload's domain of {c!r} differs from the synthetic's")
        cells = self.frame.rename(columns={})
        rows, values = workload.evaluate(cells, domains)
        out = rows.copy()
        out["count"] = values
        return out

    def sample(self, n: int | None = None, rng: Any = None) -> pd.DataFrame:
        """``n`` synthetic rows drawn from the distribution (default: round(n̂))."""
        from sharpdp.mechanisms._samplers import as_generator

        counts = self.frame["count"].to_numpy(np.float64)
        size = round(float(counts.sum())) if n is None else int(n)
        if size < 0:
            raise InvalidParameter(f"n must be ≥ 0, got {n!r}")
        g = as_generator(rng)
        idx = g.choice(len(counts), size=size, p=counts / counts.sum())
        return self.frame.drop(columns="count").iloc[idx].reset_index(drop=True)

    def _law(self, level: float) -> str:
        return f"synthetic counts from {self.rounds} MWEM rounds (no per-cell noise law)"
