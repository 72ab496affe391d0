"""Private multiplicative weights: a synthetic distribution that answers a whole workload.

MWEM (Hardt–Ligett–McSherry 2012, the practical form of Hardt–Rothblum 2010's private
multiplicative weights) over the product domain X of the workload's columns (≤ 2²⁰ cells):

1. n̂ = (bounded number of rows) + noise; A ← the uniform distribution on X scaled to n̂;
2. for t = 1..T: **select** the group of disjoint queries (a whole marginal, or one predicate)
   worst answered by A with the exponential mechanism on its ℓ1 error Σ|q(A) − q(D)|
   (sensitivity m, not monotone; sampled exactly); **measure** the whole group with one use of
   the Gaussian (ℓ2 ≤ m: a person's m rows move its disjoint cells by ℓ2 ≤ m) or discrete
   Laplace; **update** A multiplicatively towards the measured values (each cell rescaled by
   (y_c/A(c))^λ, a damped form of the multiplicative-weights step), replaying all measured groups
   (HLM12 §3) until they are fitted to within their noise's standard deviation —
   post-processing;
3. release A: its counts, answers to any workload over its columns, and sampled rows.

Everything after the noisy values is post-processing, so the privacy of the run is the adaptive
composition of n̂, T selections and T measurements, charged to the accountant as one
:class:`sharpdp.Composition`. The selections are exponential mechanisms, hence ε-bounded range
(Durfee–Rogers 2019; Rogers–Steinke 2021 Lemma 3), ≈ ε²/8-zCDP (Cesar–Rogers 2021) rather than
the ε²/2 of a pure ε-DP analysis: at the same noise, sharpdp affords more rounds, and
``explain()`` says how many more.

**Rounds.** ``rounds=None`` chooses T after n̂ is released (:class:`AdaptivePlan`): the rounds
share what n̂ leaves evenly, so they are ρ_rest-zCDP whatever T, and the choice costs nothing.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

import sharpdp as sdp
from sharpdp import _math, _validate
from sharpdp.conversions import bounded_range_to_zcdp
from sharpdp.data._engine import conform_keys
from sharpdp.data._noise import largest_rho
from sharpdp.data.answers import cell_table, discover, resolve_domains
from sharpdp.data.counts import CountQuery
from sharpdp.data.query import Explanation, Query
from sharpdp.data.release import Release
from sharpdp.data.workloads import MAX_DOMAIN, MAX_MATRIX, Workload
from sharpdp.errors import InvalidParameter
from sharpdp.mechanisms._samplers import RNGLike, as_generator

__all__ = [
    "AdaptivePlan",
    "MWEMPlan",
    "MWEMQuery",
    "Synthetic",
    "plan_adaptive",
    "plan_mwem",
]

#: The most passes over the measured groups after each round (post-processing; they stop earlier
#: once the measurements are fitted to within their noise).
REPLAYS = 1000
#: The damping λ of each pass: A(x) ← A(x)·(y_c/A(c))^λ (λ = 1 is iterative proportional fitting,
#: which fits the noise at once; 0.2 measured best among 0.2, 0.5, 1 on the flights marginals).
STEP = 0.2
#: The share of the privacy spent on the noisy total n̂.
TOTAL_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class MWEMPlan:
    """The mechanisms of one MWEM run.

    Attributes:
        rounds: T.
        total: the noise of n̂ (sensitivity m).
        selection: each round's exponential mechanism (sensitivity m).
        measurement: each round's noise (sensitivity m).
        measurement_charge: what each measurement is charged: the measurement itself, except a
            discrete Laplace with m > 1, charged as the pure (m/t)-DP of the group's vector (a
            person's m rows may move m of its cells by one each).
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
    measurement_charge: sdp.Guarantee | None = None

    @property
    def items(self) -> list[tuple[sdp.Guarantee, int]]:
        """The composition charged: n̂ once, T selections, T measurements."""
        charge = self.measurement if self.measurement_charge is None else self.measurement_charge
        return [(self.total, 1), (self.selection, self.rounds), (charge, self.rounds)]


#: The most rounds an adaptive run (``rounds=None``) chooses.
MAX_ADAPTIVE_ROUNDS = 1000


def _gaussian(sigma: float, sensitivity: int) -> sdp.Gaussian:
    """A Gaussian measurement whose grid holds any count of up to 2^32 rows of ``sensitivity``:
    its default step (about σ/2^31) is coarsened to at least Δ·2^-29, a power of two, below 2^62
    steps for every such count. Δ (an integer) stays a multiple of the step, so the charge is
    that of the Gaussian of sensitivity Δ; a tiny σ can thus no longer fail after the spend."""
    law = sdp.Gaussian(sigma, sensitivity=sensitivity)
    floor = 2.0 ** math.ceil(math.log2(sensitivity * 2.0**-29))
    if law.granularity is not None and law.granularity < floor:
        law = sdp.Gaussian(sigma, sensitivity=sensitivity, granularity=floor)
    return law


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
        _gaussian(sigma_n, sensitivity=m),
        sdp.Exponential(eps_sel, sensitivity=m),
        _gaussian(sigma_m, sensitivity=m),
    )


def _classical(rho: float, selection: sdp.Exponential, measurement: sdp.Gaussian) -> int:
    """Rounds that fit ρ when each selection is charged ε²/2 (Bun–Steinke 2016 Prop 1.4)."""
    per = selection.epsilon_**2 / 2.0 + measurement.rho
    return int((1.0 - TOTAL_SHARE) * rho // per)


def _check_rho(rho: float, limit: float, privacy: sdp.Guarantee) -> None:
    """Refuse a plan whose zCDP cost ``rho`` (each Gaussian's own ρ, its grid included, and
    each selection's η²/8), rounded up, exceeds ``limit`` (the target's ρ, or the share of the
    rounds): a Gaussian's grid keeps its ρ above ~4e-31 (its step is at least Δ·2^-29), so
    ZCDP(1e-60) was charged ρ = 3.4e-30, and the rounds of an adaptive run at ZCDP(1e-28) cost
    more than the ρ charged for them."""
    if _math.up(rho) > limit:
        raise InvalidParameter(
            f"privacy {privacy!r} is too small for MWEM: its mechanisms cost at least ρ = {rho:.3g}"
        )


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
            None if m == 1 else sdp.PureDP(math.nextafter(m / measurement.scale, math.inf)),
        )
    if isinstance(privacy, sdp.ZCDP | sdp.ApproxZCDP):
        n, sel, meas = _zcdp_plan(privacy.rho, m, rounds)
        # (the selection's η²/8 in closed form, Cesar–Rogers 2021: its certified conversion
        # costs ~0.4 s at small η, and can improve on η²/8 only by a relative η²/72)
        sel_rho = bounded_range_to_zcdp(sdp.BoundedRange(sel.epsilon_)).rho
        _check_rho(math.fsum([n.rho, rounds * sel_rho, rounds * meas.rho]), privacy.rho, privacy)
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
        rho = largest_rho(privacy)

        def fits(r: float) -> bool:
            parts = _zcdp_plan(r, m, rounds)
            items = [(parts[0], 1), (parts[1], rounds), (parts[2], rounds)]
            return sdp.compose(items, adaptive=True).epsilon_bound(delta) <= eps

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


@dataclass(frozen=True, slots=True)
class AdaptivePlan:
    """An MWEM run whose number of rounds is chosen after n̂ is released (``rounds=None``).

    Attributes:
        total: the noise of n̂ (sensitivity m).
        rest: the guarantee of all the rounds together, whatever their number T:
            ``ZCDP(ρ_rest)`` (each round ρ_rest/T) or ``PureDP(ε_rest)`` (each ε_rest/T).
        sensitivity: m.
        route: how it was calibrated.
    """

    total: sdp.DiscreteLaplace | sdp.Gaussian
    rest: sdp.ZCDP | sdp.PureDP
    sensitivity: int
    route: str

    @property
    def items(self) -> list[tuple[sdp.Guarantee, int]]:
        """The composition charged: n̂, then the rounds as one guarantee.

        Valid whatever T the released n̂ leads to: given n̂, the rounds are T mechanisms of
        ρ_rest/T each (ε_rest/T), so they are ρ_rest-zCDP (ε_rest-DP) for every n̂ (zCDP adds,
        Bun–Steinke 2016 Lemma 2.3; pure ε adds), and a mechanism chosen from earlier outputs
        composes adaptively with them (Dwork–Roth 2014 Thm 3.16; BS16 Lemma 2.3).
        """
        return [(self.total, 1), (self.rest, 1)]

    def rounds_for(self, total: float, groups: int, cells: int) -> int:
        """T = min(G, ⌈(ε·n̂·√ln|X| / (10·ln max(G, 2)))^{2/3}⌉), at most 1000: the rounds that
        minimise Hardt–Ligett–McSherry 2012 (Thm 2.2)'s error bound 2n√(ln|X|/T) + 10T·ln G/ε,
        with ε = ε_rest, or √(2ρ_rest) under zCDP; never more than the G groups."""
        eps = (
            self.rest.epsilon_
            if isinstance(self.rest, sdp.PureDP)
            else math.sqrt(2 * self.rest.rho)
        )
        best = (eps * max(total, 1.0) * math.sqrt(math.log(max(cells, 2)))) / (
            10.0 * math.log(max(groups, 2))
        )
        return int(max(1, min(groups, MAX_ADAPTIVE_ROUNDS, math.ceil(float(best) ** (2.0 / 3.0)))))

    def plan(self, rounds: int) -> MWEMPlan:
        """The mechanisms of ``rounds`` rounds sharing :attr:`rest` evenly."""
        m = self.sensitivity
        if isinstance(self.rest, sdp.PureDP):
            half = self.rest.epsilon_ / rounds / 2.0
            meas = sdp.DiscreteLaplace(m / half * (1 + 1e-12), sensitivity=m)
            charge = None if m == 1 else sdp.PureDP(math.nextafter(m / meas.scale, math.inf))
            sel = sdp.Exponential(half * (1 - 1e-12), sensitivity=m)
            return MWEMPlan(rounds, self.total, sel, meas, rounds, self.route, charge)
        rho_round = self.rest.rho / rounds
        sel = sdp.Exponential(math.sqrt(4.0 * rho_round) * (1 - 1e-12), sensitivity=m)
        gauss = _gaussian(m / math.sqrt(rho_round) * (1 + 1e-12), sensitivity=m)
        return MWEMPlan(rounds, self.total, sel, gauss, int(rounds / 2.5), self.route)


def _check_rounds(plan: AdaptivePlan, privacy: sdp.Guarantee) -> None:
    """Build the rounds' mechanisms for the fewest and the most rounds the run may choose (the
    least and the most noise per round) before anything is spent: they were built only after
    n̂'s release, and a huge target (ZCDP(1e18)) failed there, its budget spent."""
    for rounds in (1, MAX_ADAPTIVE_ROUNDS):
        try:
            planned = plan.plan(rounds)
        except InvalidParameter as err:
            raise InvalidParameter(
                f"privacy {privacy!r} cannot be met by MWEM's mechanisms ({rounds} round(s): {err})"
            ) from None
        rest = plan.rest
        if isinstance(rest, sdp.ZCDP) and isinstance(planned.measurement, sdp.Gaussian):
            # the charge is ZCDP(ρ_rest) whatever T: the rounds' own ρ (each Gaussian's grid
            # included, each selection η²/8) must fit it, and grows with T (the grids' floor)
            sel = bounded_range_to_zcdp(sdp.BoundedRange(planned.selection.epsilon_)).rho
            _check_rho(rounds * (sel + planned.measurement.rho), rest.rho, privacy)


def plan_adaptive(privacy: sdp.Guarantee, m: int) -> AdaptivePlan:
    """Calibrate an MWEM run whose rounds are chosen after n̂ (see :class:`AdaptivePlan`).

    5% of ε (or ρ) to n̂, the rest to the rounds. An (ε, δ) target takes the largest ρ whose
    conversion meets it (Canonne–Kamath–Steinke 2020, via ``sdp.ZCDP(ρ).epsilon``); the charge's
    sharp composition is then checked to fit.
    """
    if isinstance(privacy, sdp.PureDP):
        eps = privacy.epsilon_
        total = sdp.DiscreteLaplace(m / (TOTAL_SHARE * eps) * (1 + 1e-12), sensitivity=m)
        rest = sdp.PureDP((1.0 - TOTAL_SHARE) * eps * (1 - 1e-12))
        pure = AdaptivePlan(total, rest, m, "pure ε: 5% to n̂, the rest shared by the rounds")
        _check_rounds(pure, privacy)
        return pure
    if isinstance(privacy, sdp.ApproxDP) and privacy.delta_ <= 0.0:
        return plan_adaptive(sdp.PureDP(privacy.epsilon_), m)
    if isinstance(privacy, sdp.ZCDP | sdp.ApproxZCDP):
        rho = privacy.rho
    elif isinstance(privacy, sdp.ApproxDP):
        rho = largest_rho(privacy)
    else:
        raise InvalidParameter(
            f"privacy must be sdp.PureDP, sdp.ApproxDP, sdp.ZCDP or sdp.ApproxZCDP, got {privacy!r}"
        )
    if rho <= 0.0:
        raise InvalidParameter(f"privacy {privacy!r} is too small for MWEM")
    plan = AdaptivePlan(
        _gaussian(m / math.sqrt(2.0 * TOTAL_SHARE * rho) * (1 + 1e-12), sensitivity=m),
        sdp.ZCDP((1.0 - TOTAL_SHARE) * rho * (1 - 1e-12)),
        m,
        f"ρ = {rho:.6g}: 5% to n̂, the rest shared by the rounds, half of each round to a "
        "selection at ε²/8 (bounded range, Cesar–Rogers 2021), half to a Gaussian measurement",
    )
    _check_rounds(plan, privacy)
    if isinstance(privacy, sdp.ZCDP | sdp.ApproxZCDP):
        total_rho = cast(sdp.Gaussian, plan.total).rho
        _check_rho(total_rho + cast(sdp.ZCDP, plan.rest).rho, privacy.rho, privacy)
    if isinstance(privacy, sdp.ApproxDP):
        got = sdp.compose(plan.items, adaptive=True).epsilon_bound(privacy.delta_)
        if got > privacy.epsilon_:  # (ε so small that the rounds' grids cannot meet it)
            raise InvalidParameter(f"could not fit an MWEM plan in {privacy!r} (ε = {got})")
    return plan


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
    groups: list[npt.NDArray[np.int64]],
    total: float,
    plan: MWEMPlan,
    rng: np.random.Generator,
) -> tuple[npt.NDArray[np.float64], list[int]]:
    """The MWEM loop on the true answers ``answers`` = W·h (only noisy views of them leave).

    Each round selects a *group* of disjoint queries (a whole marginal, or one predicate) by the
    exponential mechanism on its ℓ1 error Σ_{q∈g} |q(A) − q(D)| (one person moves it by ≤ m),
    measures the whole group with one use of the measurement mechanism (ℓ2 and ℓ1 ≤ m), and
    updates A multiplicatively towards the measurement: each part c of the group (a marginal's
    cells; a predicate and its complement, target n̂ − y) is rescaled by (y_c/A(c))^λ (targets
    ≤ 0 floored; λ = :data:`STEP`: a damped information projection, where HLM12's step
    exp(q(x)(y − q(A))/(2n̂)) moves a small cell of a large table too slowly), and A renormalised
    to n̂; passes over every measured group go on until the measured values are fitted to
    within their noise's standard deviation (root mean square; the discrepancy principle: a
    closer fit fits the noise) or :data:`REPLAYS` passes — post-processing of the noisy values.

    Args:
        answers: the workload's true (bounded) answers.
        matrix: W, the k × |X| 0/1 query matrix (CSR).
        groups: the rows of each group (see :meth:`~sharpdp.data.workloads.Workload.groups`).
        total: n̂ (noisy, ≥ 1).
        plan: the mechanisms.
        rng: the generator.

    Returns:
        The synthetic counts A over X (summing to n̂) and the selected group indices.
    """
    n_cells = matrix.shape[1]
    log_a = np.full(n_cells, math.log(total / n_cells))
    group_of = np.empty(matrix.shape[0], dtype=np.int64)
    for g, rows in enumerate(groups):
        group_of[rows] = g
    chosen: list[int] = []
    spread = noise_sd(plan.measurement)
    parts: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
    floor = total * 1e-9 / n_cells
    # replays are post-processing; bound their work to ~2·10⁷ cell updates per round
    most = max(1, min(REPLAYS, int(2e7 // max(1, matrix.nnz))))
    for _ in range(plan.rounds):
        a = np.exp(log_a)
        errors = np.abs(matrix @ a - answers)
        scores = np.bincount(group_of, weights=errors, minlength=len(groups)).astype(np.float64)
        g = int(plan.selection.select(scores, rng=rng))
        chosen.append(g)
        rows = groups[g]
        noisy = np.asarray(plan.measurement.release(answers[rows], rng=rng), dtype=np.float64)
        parts[g] = _partition(matrix[rows], noisy, total)
        for _pass in range(most):
            for cell, target in parts.values():
                a = np.exp(log_a)
                mass = np.bincount(cell, weights=a, minlength=target.size)
                log_a = (
                    log_a + STEP * np.log(np.maximum(target, floor) / np.maximum(mass, floor))[cell]
                )
                log_a -= _logsumexp(log_a) - math.log(total)
            # discrepancy principle: stop once the measured values are fitted to within their
            # noise (fitting them closer fits the noise)
            a = np.exp(log_a)
            residual = np.concatenate(
                [t - np.bincount(c, weights=a, minlength=t.size) for c, t in parts.values()]
            )
            if math.sqrt(float(np.mean(residual * residual))) <= spread:
                break
    return np.exp(log_a), chosen


def noise_sd(law: sdp.DiscreteLaplace | sdp.Gaussian) -> float:
    """The standard deviation of a measurement's noise: σ, or √(2q)/(1 − q) for the discrete
    Laplace (q = e^{−1/t})."""
    if isinstance(law, sdp.Gaussian):
        return float(law.sigma)
    q = math.exp(-1.0 / float(law.scale))
    return math.sqrt(2.0 * q) / (1.0 - q)


def _partition(
    block: Any, noisy: npt.NDArray[np.float64], total: float
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """A measured group as a partition of X and a target mass per part: a marginal's cells (each
    point in exactly one), or a predicate and its complement (targets y and n̂ − y)."""
    if block.shape[0] > 1:
        return block.tocsc().indices.astype(np.int64), noisy
    inside = block.toarray()[0] > 0
    return inside.astype(np.int64), np.array([total - noisy[0], noisy[0]])


def _group_label(labels: pd.DataFrame, rows: npt.NDArray[np.int64]) -> str:
    first = labels.iloc[int(rows[0])]
    if len(rows) > 1:  # a whole marginal
        return str(first["query"])
    cell = {k: v for k, v in first.to_dict().items() if not pd.isna(v)}
    name = str(cell.pop("query", ""))  # a predicate's name, or the marginal of one cell
    where = ", ".join(f"{k}={v}" for k, v in cell.items())
    return f"{name} [{where}]" if where else name


def _logsumexp(x: npt.NDArray[np.float64]) -> float:
    top = float(np.max(x))
    return top + math.log(float(np.sum(np.exp(x - top))))


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
    plan: MWEMPlan | AdaptivePlan
    discovery: tuple[tuple[str, CountQuery], ...] = ()
    typed: Callable[[Workload], Workload] | None = field(default=None, repr=False, compare=False)

    _priced_release: ClassVar[bool] = True

    def _compute(self) -> tuple[dict[str, tuple[Any, ...]], pd.DataFrame] | None:
        """Domains and cell counts; ``None`` when domains are found by noise (then after the
        spend, in :meth:`_finish`)."""
        if self.discovery:
            return None
        domains = resolve_domains(self.workload, {})
        return domains, self._cells(domains)

    def _cells(self, domains: dict[str, tuple[Any, ...]]) -> pd.DataFrame:
        sizes = [len(domains[c]) for c in self.workload.columns]
        cells = math.prod(sizes)
        groups = len(self.workload.groups(domains)) if cells <= MAX_DOMAIN else 0
        if cells > MAX_DOMAIN or groups * cells > MAX_MATRIX:  # (both checked before the spend
            # when the domains are declared; the matrix was not checked after discovery)
            what = (
                f"{cells} cells > {MAX_DOMAIN}"
                if cells > MAX_DOMAIN
                else f"{groups} query groups × {cells} cells > {MAX_MATRIX} matrix entries"
            )
            raise InvalidParameter(
                f"MWEM: the discovered domain has {what}; the budget is spent (a domain found "
                "privately is known only after its paid discovery) — declare smaller domains= "
                "to have this checked before"
            )
        return cell_table(
            self, self.workload, domains, self.max_rows, self.bounding.salt, whole_rows=True
        )

    def _finish(
        self, data: tuple[dict[str, tuple[Any, ...]], pd.DataFrame] | None, rng: np.random.Generator
    ) -> Synthetic:
        columns = self.workload.columns
        if data is None:
            domains = resolve_domains(
                self.workload, discover(self.discovery, rng, "MWEM's synthetic data")
            )
            if not all(domains.values()):  # nothing to synthesise: release the empty result
                return Synthetic(
                    query=self.description,
                    keys=columns,
                    frame=pd.DataFrame({**{c: [] for c in columns}, "count": []}),
                    noise={},
                    domains=tuple(domains.items()),
                    typed=self.typed,
                    key_types=self._key_types(),
                )
            data = domains, self._cells(domains)
        domains, cells = data
        hist = _flat_histogram(cells, columns, domains)
        labels, matrix = self.workload.matrix(domains)
        groups = self.workload.groups(domains)
        answers = np.asarray(matrix @ hist, dtype=np.float64)
        total = max(1.0, float(self.plan.total.release(float(hist.sum()), rng=rng)))
        plan = self.plan
        if isinstance(plan, AdaptivePlan):  # T from the released n̂ (see AdaptivePlan.items)
            plan = plan.plan(plan.rounds_for(total, len(groups), matrix.shape[1]))
        synthetic, chosen = multiplicative_weights(answers, matrix, groups, total, plan, rng)
        grid = pd.MultiIndex.from_product(
            [list(domains[c]) for c in columns], names=list(columns)
        ).to_frame(index=False)
        grid["count"] = synthetic
        return Synthetic(
            query=self.description,
            keys=columns,
            frame=grid,
            noise={},
            rounds=plan.rounds,
            selected=tuple(_group_label(labels, groups[g]) for g in chosen),
            domains=tuple(domains.items()),
            typed=self.typed,
            key_types=self._key_types(),
        )

    def _key_types(self) -> tuple[tuple[str, Any], ...]:
        schema = self.source.table.schema()
        return tuple((c, schema[c]) for c in self.workload.columns)


def _physical_memory() -> int | None:
    """The machine's physical memory in bytes, or ``None`` where the platform does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


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

    typed_keys: ClassVar[bool] = False  # (its frame feeds answer() and sample(), which convert)

    rounds: int = 0
    selected: tuple[str, ...] = ()
    domains: tuple[tuple[str, tuple[Any, ...]], ...] = field(default=(), repr=False)
    explanation: Explanation | None = field(default=None, repr=False)
    #: the session's conversion of a workload's values to the columns' types (dates given as
    #: text, float32...), applied by :meth:`answer` as the session applies it to the run's own
    typed: Callable[[Workload], Workload] | None = field(default=None, repr=False, compare=False)
    #: the key columns' types in the table's schema: what to_pandas, answer and sample give
    #: their key columns (Int64, boolean, datetime64[ms]... as every release)
    key_types: tuple[tuple[str, Any], ...] = field(default=(), repr=False, compare=False)

    def _conform(self, frame: pd.DataFrame) -> pd.DataFrame:
        typed: pd.DataFrame = conform_keys(
            frame, dict(self.key_types), [c for c, _ in self.key_types]
        )
        return typed

    def explain(self) -> Explanation:
        """The pricing of the run (rounds, mechanisms, the sharp vs classical rounds), with a last
        note on the rounds this run made (with ``rounds=None``, chosen after the pricing)."""
        assert self.explanation is not None
        ran = f"this run: T = {self.rounds} round(s), selected {', '.join(self.selected) or 'none'}"
        return dataclasses.replace(self.explanation, notes=(*self.explanation.notes, ran))

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        """The cells and their synthetic counts (``level`` is accepted and ignored)."""
        return self._conform(self.frame.copy())

    def answer(self, workload: Workload) -> pd.DataFrame:
        """Answer any workload over these columns from the synthetic counts (post-processing).

        Returns:
            ``query``, the key columns (marginals) and ``count``.
        """
        if not isinstance(workload, Workload):
            raise InvalidParameter(
                "workload must be built by sdp.data.marginals(...) or sdp.data.predicates(...), "
                f"got {workload!r}"
            )
        domains = dict(self.domains)
        missing = [c for c in workload.columns if c not in domains]
        if missing:
            raise InvalidParameter(f"workload columns {missing} are not in the synthetic data")
        if self.typed is not None:
            workload = self.typed(workload)
        declared = resolve_domains(workload, domains)  # its own domains, else the synthetic's
        for c in workload.columns:
            if set(declared[c]) != set(domains[c]):  # (the order does not matter)
                raise InvalidParameter(
                    f"workload's domain of {c!r} differs from the synthetic's {domains[c]!r}"
                )
        rows, values = workload.evaluate(self.frame, domains)
        out = rows.copy()
        out["count"] = values
        return self._conform(out)

    def sample(self, n: int | None = None, rng: RNGLike = None) -> pd.DataFrame:
        """``n`` synthetic rows drawn from the distribution (default: round(n̂)).

        Raises:
            InvalidParameter: ``n`` is not an integer ≥ 0, or its rows would not fit in this
                machine's memory (draw them in batches: several calls, one generator).
        """
        counts = self.frame["count"].to_numpy(np.float64)
        size = round(float(counts.sum())) if n is None else _validate.integer("n", n, minimum=0)
        need = size * 8 * (2 + self.frame.shape[1])  # the draws, and the rows' column arrays
        have = _physical_memory()
        if have is not None and need > have:
            raise InvalidParameter(
                f"n={size:,} synthetic rows need about {need / 2**30:,.0f} GiB, more than this "
                f"machine's {have / 2**30:,.0f} GiB: draw them in batches (several sample() "
                "calls sharing one np.random.Generator)"
            )
        if not counts.size:
            if size:
                raise InvalidParameter("no synthetic cells to sample from (a domain is empty)")
            return self._conform(self.frame.drop(columns="count"))
        idx = as_generator(rng).choice(len(counts), size=size, p=counts / counts.sum())
        return self._conform(self.frame.drop(columns="count").iloc[idx].reset_index(drop=True))

    def _law(self, level: float) -> str:
        return f"synthetic counts from {self.rounds} MWEM rounds (no per-cell noise law)"
