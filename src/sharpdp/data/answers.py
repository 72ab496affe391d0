"""Workload answering: k counting queries released together with the noise of least error.

The bounded *cell table* (each person's distinct rows of the workload's columns, at most
``max_rows`` of them, kept by the seeded hash, then counted per combination) is computed in the
engine; the k answers are sums of its counts (:mod:`sharpdp.data.workloads`), and one person moves
the answer vector by ℓ1 ≤ m·C, ℓ2 ≤ m·√C, ℓ∞ ≤ m. Two mechanisms, each calibrated exactly:

* **discrete Laplace** of scale t on every answer (ℓ1): with m = 1 one person moves ≤ C answers
  by one each, so the release is C runs of the scalar discrete Laplace (charged so, and composed
  exactly by the accountant; pure ε = C/t, Canonne–Kamath–Steinke 2020); with m > 1 the vector is
  (mC/t)-DP (charged as that pure guarantee; under a zCDP target, as C·ρ(m/t) with ρ(ε) the
  pure→zCDP conversion, convex in ε, so concentrating the shift is the worst case);
* the **Gaussian** mechanism with ℓ2 sensitivity Δ₂ = m√C on the whole vector (one run): its
  privacy loss depends on the shift only through ‖v‖₂, so its exact profile (Balle–Wang 2018,
  Thm 8) and ρ = Δ₂²/(2σ²) hold; released on the dyadic grid of :class:`sharpdp.Gaussian`, which
  integer counts sit on exactly. Calibrated to an (ε, δ) target by that exact profile, never by the
  classical σ = Δ₂√(2 ln(1.25/δ))/ε (Dwork–Roth 2014 Thm A.1, which also needs ε < 1).

``mechanism="auto"`` takes the one with the smaller expected absolute error per answer (E|Z|,
computed exactly) at the same target; ``explain()`` shows both.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import pandas as pd

import sharpdp as sdp
from sharpdp import _math
from sharpdp._format import upper
from sharpdp.data import _bounding, _engine
from sharpdp.data._noise import expected_abs, half_width
from sharpdp.data.counts import CountQuery
from sharpdp.data.query import Explanation, Query
from sharpdp.data.release import Release, _level
from sharpdp.data.workloads import MAX_ANSWERS, Bins, Workload
from sharpdp.errors import InvalidParameter

__all__ = [
    "WorkloadNoise",
    "WorkloadQuery",
    "WorkloadRelease",
    "cell_table",
    "choose_noise",
    "discover",
    "resolve_domains",
]

MECHANISMS = ("auto", "laplace", "gaussian")


@dataclass(frozen=True, slots=True)
class WorkloadNoise:
    """The noise of a workload release and what it is charged.

    Attributes:
        name: ``"laplace"`` or ``"gaussian"``.
        law: the noise of each answer (``DiscreteLaplace(t)`` or ``Gaussian(σ, Δ₂)``).
        item: the guarantee charged, ``copies`` times.
        copies: runs charged.
        error: E|Z| per answer (exact).
        route: how it was calibrated (with references).
        comparison: both candidates' E|Z|, for ``explain()``.
    """

    name: str
    law: sdp.DiscreteLaplace | sdp.Gaussian
    item: sdp.Guarantee
    copies: int
    error: float
    route: str
    comparison: str = ""


def _pure_to_rho(epsilon: float) -> float:
    z = sdp.convert(sdp.PureDP(epsilon), sdp.ZCDP)
    assert isinstance(z, sdp.ZCDP)
    return z.rho


def _fits_rho(t: float, m: int, c: int, rho: float) -> bool:
    """Whether the zCDP charge of the discrete Laplace of scale ``t`` for C answers (of Δ = m)
    is ≤ ρ in the accountant's exact rational sum of each item's (float) ρ."""
    if m == 1:
        z = sdp.convert(sdp.DiscreteLaplace(t), sdp.ZCDP)
        assert isinstance(z, sdp.ZCDP)
        return c * Fraction(z.rho) <= Fraction(rho)
    return Fraction(c * _pure_to_rho(m / t)) <= Fraction(rho)


def _within(law: sdp.Gaussian, target: sdp.Guarantee) -> bool:
    """Whether one run of ``law`` meets ``target`` as the accountant composes it."""
    if isinstance(target, sdp.ZCDP):
        z = sdp.convert(law, sdp.ZCDP)
        assert isinstance(z, sdp.ZCDP)
        return Fraction(z.rho) <= Fraction(target.rho)
    assert isinstance(target, sdp.ApproxDP)
    return sdp.compose([(law, 1)], adaptive=True).epsilon_bound(target.delta_) <= target.epsilon_


def _laplace(privacy: sdp.Guarantee, m: int, c: int) -> WorkloadNoise | None:
    """The discrete Laplace candidate (ℓ1), or ``None`` when the target has no ε or ρ to spend."""
    if isinstance(privacy, sdp.PureDP | sdp.ApproxDP):
        eps = privacy.epsilon_
        t = m * c / eps
        while Fraction(m * c) / Fraction(t) > Fraction(eps):
            t = math.nextafter(t, math.inf)
        route = "discrete Laplace, t = m·C/ε (ℓ1; Canonne–Kamath–Steinke 2020: Δ/t-DP per answer)"
        law = sdp.DiscreteLaplace(t)
        if m == 1:
            return WorkloadNoise(
                "laplace", law, sdp.DiscreteLaplace(t), c, expected_abs(law), route
            )
        return WorkloadNoise("laplace", law, sdp.PureDP(eps), 1, expected_abs(law), route)
    if isinstance(privacy, sdp.ZCDP | sdp.ApproxZCDP):
        rho = privacy.rho
        # the largest per-answer pure ε₁ = m/t with C·ρ(ε₁) ≤ ρ (ρ(·) increasing: bisection)
        lo, hi = 0.0, 1.0
        while c * _pure_to_rho(hi) <= rho:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                break
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if c * _pure_to_rho(mid) <= rho:
                lo = mid
            else:
                hi = mid
        if lo <= 0.0:
            return None
        t = m / lo
        # m/lo is rounded: widen t until the charge, as the accountant reads it, fits ρ exactly
        while not _fits_rho(t, m, c, rho):
            t = math.nextafter(t, math.inf)
        law = sdp.DiscreteLaplace(t)
        route = (
            "discrete Laplace, C·ρ(m/t) ≤ ρ with ρ(ε) the sharp pure→zCDP conversion of each "
            "answer's (m/t)-DP"
        )
        if m == 1:
            return WorkloadNoise(
                "laplace", law, sdp.DiscreteLaplace(t), c, expected_abs(law), route
            )
        return WorkloadNoise(
            "laplace", law, sdp.ZCDP(c * _pure_to_rho(m / t)), 1, expected_abs(law), route
        )
    return None


def _gaussian(privacy: sdp.Guarantee, m: int, c: int) -> WorkloadNoise | None:
    """The Gaussian candidate (ℓ2), or ``None`` for a pure target (it needs δ > 0 or zCDP)."""
    l2 = _sqrt_up(m * m * c)
    if isinstance(privacy, sdp.ZCDP | sdp.ApproxZCDP):
        target: sdp.Guarantee = sdp.ZCDP(privacy.rho)
        route = "Gaussian, σ = Δ₂/√(2ρ) (ℓ2 = m√C; ρ = Δ₂²/(2σ²), Bun–Steinke 2016 Prop 1.6)"
    elif isinstance(privacy, sdp.ApproxDP) and privacy.delta_ > 0.0:
        target = privacy
        route = (
            "Gaussian, least σ by its exact (ε, δ) profile (Balle–Wang 2018 Thm 8) for "
            "ℓ2 = m√C, not the classical 1.25/δ rule"
        )
    else:
        return None
    law = sdp.calibrate(sdp.Gaussian, target, sensitivity=l2)
    assert isinstance(law, sdp.Gaussian)
    # the calibration meets the target by the exact profile; the accountant's analysis of the
    # charge may read an ulp or so above it: widen σ until it fits there too
    for _ in range(64):
        if _within(law, target):
            break
        law = dataclasses.replace(law, sigma=law.sigma * (1.0 + 2.0**-40))
    return WorkloadNoise("gaussian", law, law, 1, law.sigma * math.sqrt(2.0 / math.pi), route)


def choose_noise(privacy: sdp.Guarantee, m: int, c: int, mechanism: str = "auto") -> WorkloadNoise:
    """The mechanism of least expected absolute error per answer that meets ``privacy``.

    Args:
        privacy: the target of the whole release (``PureDP``, ``ApproxDP``, ``ZCDP``,
            ``ApproxZCDP``; the δ of ``ApproxZCDP`` is not used by the answers).
        m: rows per person (ℓ∞ sensitivity of each answer).
        c: the most queries one row satisfies.
        mechanism: ``"auto"``, ``"laplace"`` or ``"gaussian"``.

    Raises:
        InvalidParameter: the requested mechanism cannot meet the target (e.g. Gaussian under a
            pure target).

    Example:
        >>> import sharpdp as sdp
        >>> choose_noise(sdp.ApproxDP(1.0, 1e-6), 1, 100).name   # √C beats C for large C
        'gaussian'
    """
    if mechanism not in MECHANISMS:
        raise InvalidParameter(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    candidates: dict[str, WorkloadNoise | None] = {}
    reasons: list[str] = []
    for name, build in (("laplace", _laplace), ("gaussian", _gaussian)):
        try:
            candidates[name] = build(privacy, m, c)
        except sdp.SharpDPError as err:
            if mechanism == name:
                raise
            candidates[name] = None  # it cannot be calibrated here: not a candidate
            reasons.append(f"{name}: {err}")
    if mechanism != "auto":
        chosen = candidates[mechanism]
        if chosen is None:
            raise InvalidParameter(f"mechanism={mechanism!r} cannot meet the target {privacy!r}")
        others = [chosen]
    else:
        others = [n for n in candidates.values() if n is not None]
        if not others:  # (each candidate's own reason: the target's type, or its size)
            raise InvalidParameter(
                f"no noise meets the target {privacy!r} for these answers — {'; '.join(reasons)}"
            )
        chosen = min(others, key=lambda n: n.error)
    text = "; ".join(
        f"{n.name} E|Z| = {upper(n.error, 4)}" for n in candidates.values() if n is not None
    )
    verdict = (
        f"chosen: {chosen.name} (least E|Z|)" if mechanism == "auto" else f"forced: {mechanism}"
    )
    return WorkloadNoise(
        chosen.name,
        chosen.law,
        chosen.item,
        chosen.copies,
        chosen.error,
        chosen.route,
        f"per answer at this target — {text}; {verdict}",
    )


def _sqrt_up(n: int) -> float:
    f = math.sqrt(n)
    while Fraction(f) ** 2 < n:
        f = math.nextafter(f, math.inf)
    return f


def resolve_domains(
    workload: Workload, discovered: Mapping[str, tuple[Any, ...]]
) -> dict[str, tuple[Any, ...]]:
    """Every column's domain values (bins: their labels), declared or discovered."""
    out: dict[str, tuple[Any, ...]] = {}
    for c in workload.columns:
        dom = workload.domain(c)
        if isinstance(dom, Bins):
            out[c] = dom.labels
        elif dom is not None:
            out[c] = dom
        elif c in discovered:
            out[c] = discovered[c]
    return out


def discover(
    discovery: tuple[tuple[str, CountQuery], ...], rng: np.random.Generator, result: str
) -> dict[str, tuple[Any, ...]]:
    """Run the partition selections that find undeclared domains (already paid for by the
    query that holds them): each column's released keys but NULL, sorted. If a column's come
    back empty, warn that ``result`` (what the caller releases) has no cell over it: the spend
    stands."""
    found: dict[str, tuple[Any, ...]] = {}
    for column, sub in discovery:
        # NULL is not a value of a domain (rows with NULL there are in no cell): dropping its
        # released key is post-processing
        keys = [k for k in sub._release(rng).frame[column].tolist() if not pd.isna(k)]
        found[column] = tuple(sorted(keys, key=lambda v: (str(type(v)), v)))
    empty = [c for c, values in found.items() if not values]
    if empty:  # a legitimately empty release: say so rather than return it silently
        warnings.warn(
            f"no value of column(s) {empty} passed the partition selection's threshold: "
            f"{result} has no cell over them (its spend is recorded); declare domains= or give "
            "the query more privacy budget",
            UserWarning,
            stacklevel=5,
        )
    return found


def _bin_code(x: Any, lower: float, width: float, count: int) -> Any:
    """The bin of ``x`` (in [lower, lower + count·width]): the i < count whose label, the left
    edge L + i·w computed as :attr:`Bins.labels` does (the same IEEE operations), is the greatest
    ≤ x. ⌊(x − L)/w⌋ alone put x = 1.4 of bins(1, 2, 5) in the bin labelled 1.2 (its rounding);
    it is off by at most one bin, corrected here."""
    ibis = _engine.ibis()
    f64, i64 = _engine.dtype("float64"), _engine.dtype("int64")
    code = ibis.least(((x - lower) / width).floor().cast(i64), count - 1)

    def edge(i: Any) -> Any:
        return lower + i.cast(f64) * width

    return ibis.cases(
        (x < edge(code), code - 1),
        ((code + 1 < count) & (x >= edge(code + 1)), code + 1),
        else_=code,
    )


def cell_table(
    query: Query,
    workload: Workload,
    domains: Mapping[str, tuple[Any, ...]],
    max_rows: int,
    salt: str,
    *,
    whole_rows: bool = False,
) -> pd.DataFrame:
    """The bounded cell table, computed in the engine: one row per combination of the workload's
    columns present, with ``count`` (persons, each keeping ≤ ``max_rows`` distinct combinations).

    A value outside a declared (or discovered) categorical domain, and a NULL or NaN under
    :class:`Bins`, becomes NULL: the row still counts in every query that does not look at that
    column (a marginal of the other columns, a predicate without it). With ``whole_rows`` (MWEM,
    whose synthetic data lives on the product of the domains) such rows are dropped instead.
    Numeric columns with :class:`Bins` are replaced by their bin (label). All row-wise maps, so
    neighbouring tables stay neighbouring. Each person's distinct combinations are ranked by the
    seeded hash and the first ``max_rows`` kept (:func:`sharpdp.data._bounding.per_person_key`).
    """
    ibis = _engine.ibis()
    t = query._rows(*workload.columns)
    for c in workload.columns:
        dom = workload.domain(c)
        if isinstance(dom, Bins):
            if whole_rows:
                x = t[c].cast(_engine.dtype("float64"))
                t = t.filter(x.notnull() & ~x.isnan())
        elif c in domains:
            if whole_rows:
                t = _bounding.restrict_keys(t, (c,), [(v,) for v in domains[c]])
            else:
                t = _bounding.blank_outside(t, c, domains[c])
    unit = query.privacy_unit
    cols: dict[str, Any] = {} if unit is None else {unit: t[unit]}
    for c in workload.columns:
        dom = workload.domain(c)
        if isinstance(dom, Bins):
            width = (dom.upper - dom.lower) / dom.count
            x = t[c].cast(_engine.dtype("float64"))
            valued = x.notnull() & ~x.isnan()
            # NaN never reaches the cast (it would fail in the engine, only when such a row exists)
            safe = valued.ifelse(x, dom.lower).clip(lower=dom.lower, upper=dom.upper)
            code = _bin_code(safe, dom.lower, width, dom.count)
            cols[c] = valued.ifelse(code, ibis.null(_engine.dtype("int64")))
        else:
            cols[c] = t[c]
    rows = t.select(**cols)
    pairs = _bounding.per_person_key(
        rows,
        unit,
        workload.columns,
        max_rows=1,
        max_groups=max_rows,
        salt=salt,
        plan=_bounding.pair_plan(rows, unit, workload.columns, query.source.rows),
    )
    frame: pd.DataFrame = query._execute(_bounding.group(pairs, workload.columns, False))
    for c in workload.columns:
        dom = workload.domain(c)
        if isinstance(dom, Bins):
            codes = frame[c]
            present = codes.notna().to_numpy()
            labels = np.full(len(frame), np.nan)  # a row without a bin: NaN, in no bin's query
            labels[present] = np.asarray(dom.labels)[codes[present].to_numpy(np.int64)]
            frame[c] = labels
    return frame[[*workload.columns, "count"]]


@dataclass(frozen=True, kw_only=True)
class WorkloadQuery(Query):
    """A workload of counting queries (built by ``Session.workload``; ``Session.answer`` runs it).

    Attributes:
        workload: the workload.
        max_rows: m, distinct rows per person kept.
        overlap: C, the most queries one row satisfies.
        plan: the noise.
        discovery: partition selections finding undeclared marginal domains (charged with it).
    """

    workload: Workload
    max_rows: int
    overlap: int
    plan: WorkloadNoise
    discovery: tuple[tuple[str, CountQuery], ...] = ()

    _priced_release: ClassVar[bool] = True

    def _compute(self) -> tuple[dict[str, tuple[Any, ...]], pd.DataFrame] | None:
        """Domains and cell counts; ``None`` when domains are found by noise (then after the
        spend, in :meth:`_finish`)."""
        if self.discovery:
            return None
        domains = resolve_domains(self.workload, {})
        return domains, cell_table(self, self.workload, domains, self.max_rows, self.bounding.salt)

    def _finish(
        self, data: tuple[dict[str, tuple[Any, ...]], pd.DataFrame] | None, rng: np.random.Generator
    ) -> WorkloadRelease:
        if data is None:
            domains = resolve_domains(
                self.workload, discover(self.discovery, rng, "the workload's release")
            )
            data = (
                domains,
                cell_table(self, self.workload, domains, self.max_rows, self.bounding.salt),
            )
        domains, cells = data
        answers = self.workload.query_count(domains)
        if answers > MAX_ANSWERS:  # only with discovered domains (declared ones: checked before)
            raise InvalidParameter(
                f"workload: the discovered domains make {answers} answers, over the limit "
                f"{MAX_ANSWERS} (2^22); the budget is spent (a domain found privately is known "
                "only after its paid discovery) — declare domains= to have this checked before"
            )
        rows, truth = self.workload.evaluate(cells, domains)
        if isinstance(self.plan.law, sdp.DiscreteLaplace):
            noisy = self.plan.law.release(np.rint(truth).astype(np.int64), rng=rng)
            values = np.asarray(noisy, dtype=np.int64)  # integer counts stay integers
        else:
            values = np.asarray(self.plan.law.release(truth, rng=rng), dtype=np.float64)
        frame = rows.copy()
        frame["count"] = values
        return WorkloadRelease(
            query=self.description,
            keys=tuple(c for c in frame.columns if c not in ("query", "count")),
            frame=frame,
            noise={},
            law=self.plan.law,
            mechanism=self.plan.name,
            domains=tuple(domains.items()),
        )


@dataclass(frozen=True, eq=False)
class WorkloadRelease(Release):
    """The released answers of a workload: ``count`` = true bounded answer + Z, Z ~ ``law``.

    ``to_pandas(level)`` adds ``lower``/``upper``, a ``level`` confidence interval per answer from
    Z's exact law (discrete Laplace: the least integer w with P[|Z| ≤ w] ≥ level; Gaussian on the
    grid γℤ: w = σ·Φ⁻¹((1 + level)/2) + γ/2, rounded up, since |γ·round(N/γ)| ≤ |N| + γ/2).

    Attributes:
        law: the noise law of each answer.
        mechanism: ``"laplace"`` or ``"gaussian"``.
        explanation: what was charged and why this mechanism (``explain()`` returns it).
        domains: the domains answered over (declared or found privately).
    """

    law: sdp.DiscreteLaplace | sdp.Gaussian | None = None
    mechanism: str = ""
    explanation: Explanation | None = field(default=None, repr=False)
    domains: tuple[tuple[str, tuple[Any, ...]], ...] = field(default=(), repr=False)

    def explain(self) -> Explanation:
        """The pricing of the query that produced this release (mechanism choice included)."""
        assert self.explanation is not None
        return self.explanation

    def half_width(self, level: float = 0.95) -> float:
        """The half-width w of every answer's ``level`` interval (see the class docstring)."""
        level = _level(level)
        law = self.law
        if isinstance(law, sdp.DiscreteLaplace):
            return float(half_width(law, level))
        assert isinstance(law, sdp.Gaussian)
        z = _math.two_sided_normal_quantile(level)
        w = law.sigma * z * (1.0 + 1e-12) + law.granularity / 2.0  # type: ignore[operator]
        return math.nextafter(w, math.inf)

    def to_pandas(self, level: float = 0.95) -> pd.DataFrame:
        w: float = self.half_width(level)
        if isinstance(self.law, sdp.DiscreteLaplace):
            w = int(w)  # integer noise: integer counts and bounds
        frame = self.frame.copy()
        frame["lower"] = frame["count"] - w
        frame["upper"] = frame["count"] + w
        return frame

    def _law(self, level: float) -> str:
        return (
            f"count = (bounded true answer + Z), Z ~ {self.law!r}, independent per answer; "
            f"lower/upper: a {level:g} confidence interval per answer from Z's exact law"
        )
