"""Demo utility benchmark: error per released count at equal privacy, sharpdp against peers.

Usage::

    python bench/demo_utility.py      # ~50 s on 2 cores (idle); prints markdown tables

The question (the open issue, "utility at equal privacy"): for the whole set of queries of
``sharpdp demo`` under one (ε, δ) = (1, 1e-6) budget, is the expected absolute error of every
released count ≤ 0.8× that of the best peer running the same queries under the same total budget?

**The query set** is read from ``src/sharpdp/cli/demo.py`` itself: each of the demo's five
sections is called with a recording stand-in for the session, which keeps the arguments of the
query the section builds (column, keys, ``privacy=``, ``max_groups``, ``max_rows``, ``by``...) and
stops the section before anything runs. So the caps and the relative privacy shares (ε_i, δ_i) are
the demo's: top-10 destinations per origin ApproxDP(0.4, 1e-7), flights per carrier PureDP(0.1),
mean delay per carrier PureDP(0.15), median air time PureDP(0.05), routes over unknown keys
ApproxDP(0.35, 1e-7), unless demo.py changes.

**The comparison.** Each system gives query i the privacy t·ε_i (δ_i kept: see below), calibrates
the query's mechanisms to that target with its own tools, and composes the five queries with its
own accounting; t is the largest scale (bisection, relative 1e-4) at which the composition fits
(1, 1e-6). A sharper accountant reaches a larger t, so every query gets more privacy budget.
Reported per system: t, each query's privacy and mechanism at t, and for each released *count*
(flights per carrier; the mean's separately noised count; the routes' counts) its noise law and
E|noise|, computed from the law. The selections (top-k, median) release no counts: they only
consume budget, and the per-query table shows what each system gives them.

**δ_i kept, not scaled.** The demo spends δ on two queries (1e-7 each: the top-k's calibration
target and the routes' threshold) and leaves the rest of the budget's δ to the composition. Scaling
δ_i with t (t ≈ 0.5–1.2 here) would move the routes' threshold by under one noise scale and change
no ε by more than a few percent, for every system alike; keeping δ_i fixed keeps the search
one-dimensional and monotone and gives every system the same δ for partition selection.

**What is run** (no query touches the data, nothing is spent):

* sharpdp: the demo's queries are built on a real ``sdp.data.Session`` over the flights at privacy
  t·ε_i; each query's charge is ``q.explain().charge``; the five charges are composed as the
  session's accountant does (``sdp.compose([...]).epsilon(1e-6)``). At the final t the charges are
  also spent, one by one, into a fresh in-memory ``sdp.Accountant`` (what ``run()`` would do first)
  and its ``epsilon(1e-6)`` is printed. Noise laws are read from ``explain().statistics``.
* OpenDP 0.16 (imported here): every privacy number comes from OpenDP's own constructors and
  maps: ``make_noisy_top_k`` (zCDP output, ℓ∞ monotonic: its map gives ρ = η²/8 per round, the
  bounded-range constant — OpenDP 0.16 already has it), ``make_private_quantile`` (zCDP: ε²/8),
  ``make_laplace`` + ``make_pureDP_to_zCDP`` (ε²/2), ``make_gaussian`` (Δ₂²/(2σ²)),
  ``make_gaussian_threshold`` / ``make_laplace_threshold`` (ρ or ε, and the δ of the threshold),
  ``make_composition`` (ρ adds; δ adds), ``make_zCDP_to_approxDP`` (its ρ→(ε, δ) conversion). The
  five queries live on different input domains, so their ρ and δ are summed (what
  ``make_composition`` does) into a user measurement that ``make_zCDP_to_approxDP`` converts.
* dp_accounting 0.6 (imported here) for PipelineDP's PLD accountant (PipelineDP composes
  dp_accounting PLDs: ``from_laplace_mechanism`` with the ℓ1 sensitivity, ``from_privacy_parameters``
  for generic (ε, δ) mechanisms, threshold δ taken off the total δ, default grid 1e-4).

**What is modelled** (the peer is not importable here, or cannot run the query natively):

* zCDP peers (OpenDP, Tumult under ``RhoZCDPBudget``): a pure-ε query's share is the ρ = ε²/2
  their pure→zCDP conversion charges for the Laplace meeting it; a count may instead use the
  Gaussian of the *same* ρ (same cost, so t does not change), and does whenever its E|noise| is
  smaller (always, here). A query with an (ε_i, δ_i) target (the top-k) is calibrated so that its
  own zCDP, converted at δ_i, meets it; it is then charged its ρ. The routes' share is ρ = ε_i²/2
  plus the threshold's δ ≤ δ_i (additive, approximate zCDP). Tumult's numbers are its documented
  formulas (tmlt.core 0.21 source: counts σ² = Δ₂²/(2ρ) with ℓ2 stability √κ·m; quantile
  ε = √(8ρ)/d_mid; PureDP→RhoZCDP ε²/2; the mean halves its budget), but Tumult has no top-k, no
  partition selection under a ρ budget (``get_groups`` and automatic partition selection require
  an ``ApproxDPBudget``) and no ρ→(ε, δ) conversion: those are modelled as OpenDP's.
* Tumult under ``ApproxDPBudget``: basic composition (tmlt.core's ``Composition`` adds ε and δ),
  no Gaussian noise, automatic partition selection gives half of ε and all of δ to a separate
  selection and half of ε to the counts.
* Basic composition (PipelineDP's ``NaiveBudgetAccountant``, SmartNoise SQL's odometer): Σ ε ≤ 1,
  Σ δ ≤ 1e-6, Laplace counts. Neither has an exponential-mechanism top-k or quantile: the top-k is
  modelled as k·copies ε-DP exponential mechanisms given the best classical treatment inside the
  query (the least of basic composition, advanced composition [Dwork–Rothblum–Vadhan 2010] and
  zCDP with ε²/2 [Bun–Steinke 2016] at δ_i), the median as one ε-DP exponential mechanism. The
  routes may use a Gaussian threshold instead of Laplace (analytic Gaussian [Balle–Wang 2018] at
  (ε_i, δ_i/2), threshold at δ_i/2) when its E|noise| is smaller.
* PipelineDP with its PLD accountant: the same per-query mechanisms composed as dp_accounting PLDs;
  dp_accounting has no exponential mechanism, so each EM round is a pure ε-DP pair
  (``from_privacy_parameters(ε, 0)``), and the top-k's per-round ε is the largest whose R-fold PLD
  meets (ε_i, δ_i). PipelineDP's own allocation (one base noise scaled by weights, 0.25·δ to
  thresholding) is replaced by the demo's shares, so that every system splits alike.

**Second comparison: selections held equal.** Scaling every query by one t hands sharpdp's gain
on the selections (30 bounded-range top-k rounds, an EM median) back to the selections themselves:
at its t sharpdp's top-k gets about twice the per-round η of the PLD peer, an accuracy the
per-count metric does not see. So, against each peer in turn, sharpdp's top-k and median are held
to *at least that peer's η* (no less accurate than the peer's), and the count queries (at their
demo shares, δ_i kept) get the largest scale t at which the five still fit (1, 1e-6) in sharpdp's
composition. The table gives, per peer, the held η, the count scale, and each count's E|err|
against the peer's own (at the peer's t): the ratio the issue asks about with every selection
equally accurate in both systems.

**Third comparison: dominance.** The demo's relative shares are one analyst's choice; the
question "can sharpdp release everything this peer releases, with less error" lets sharpdp split
its own budget. Against each peer: selections held to the peer's η as above, and the least r such
that every count query, each at its own scale (its discrete Laplace b with E|X| = r × the peer's
E|err| for that count), still fits (1, 1e-6) in sharpdp's composition. r ≤ 0.8 against every
peer means sharpdp's release has every count's expected error ≤ 0.8× the peer's and no selection
less accurate, under the same budget. The routes' threshold τ is printed beside it (a lower τ
releases more keys; it is not part of the ratio).

**Ceiling** (a computed diagnostic): the largest t at which the count queries' own discrete
Laplace noise alone would fit the budget (selections free, threshold δ ignored, exact PLDs with the
optimistic discretisation: every simplification errs towards a larger t), and the count ratios
sharpdp would reach there against the same best peers: the best any accounting can do for these
count mechanisms at the demo's shares.

**Lower bound, every query scaled alike** (a computed proof that the first comparison's target is
out of reach, not only of sharpdp): the largest t at which a *lower* bound on the five queries'
composition fits (1, 1e-6). It composes, as exact dp_accounting PLDs with the optimistic
discretisation, the count mechanisms as in the ceiling and the top-k's rounds and the median as
two-outcome η-BR pairs (the exponential mechanism over two candidates, which every bounded-range
accounting must cover; the split of the range maximised over a grid) at the η sharpdp calibrates
for each target at t, which the least-noise calibration can only exceed. The count ratios at that
t are the best any accounting of the rounds as bounded range can reach with every query scaled
alike.

Noise laws: integer counts get the discrete Laplace (P(k) ∝ e^{−|k|/b}) or discrete Gaussian
(P(k) ∝ e^{−k²/(2σ²)}) in sharpdp, OpenDP and Tumult; PipelineDP and SmartNoise add continuous
Laplace/Gaussian noise. E|X|: discrete Laplace 2q/(1 − q²) with q = e^{−1/b} (derived in
:func:`e_abs_discrete_laplace`), continuous Laplace b, discrete Gaussian by direct summation,
continuous Gaussian σ·√(2/π); all four are checked at start-up against brute-force summation or
quadrature (asserts).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import integrate, special

import sharpdp as sdp
from sharpdp.cli.demo import _Demo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import load_note, print_table

BUDGET = sdp.ApproxDP(1.0, 1e-6)
TARGET_RATIO = 0.8
RTOL = 1e-4  # relative accuracy of every search for t and for per-query calibrations
SECTIONS = ("top_destinations", "flights_per_carrier", "mean_delay", "median_air_time", "routes")
COUNTS = ("flights per carrier", "mean delay: its count", "routes: counts")


# -- expected absolute error of the noise laws ------------------------------------------------------


def e_abs_discrete_laplace(b: float) -> float:
    """E|X| for P(k) ∝ e^{−|k|/b} on the integers.

    With q = e^{−1/b}: Σ_k q^{|k|} = (1 + q)/(1 − q) and Σ_k |k| q^{|k|} = 2 Σ_{k≥1} k q^k =
    2q/(1 − q)², so E|X| = 2q/(1 − q)² · (1 − q)/(1 + q) = 2q/(1 − q²).
    """
    return 2.0 * math.exp(-1.0 / b) / -math.expm1(-2.0 / b)


def e_abs_discrete_gaussian(sigma: float) -> float:
    """E|X| for P(k) ∝ e^{−k²/(2σ²)} on the integers, by direct summation over |k| ≤ 40σ + 2
    (the terms beyond are below e^{−800})."""
    top = math.ceil(40.0 * sigma) + 2
    k = np.arange(1, top + 1, dtype=np.float64)
    w = np.exp(-(k * k) / (2.0 * sigma * sigma))
    return float(2.0 * np.sum(k * w) / (1.0 + 2.0 * np.sum(w)))


def e_abs_laplace(b: float) -> float:
    """E|X| = b for the continuous Laplace of scale b."""
    return b


def e_abs_gaussian(sigma: float) -> float:
    """E|X| = σ·√(2/π) for the continuous Gaussian."""
    return sigma * math.sqrt(2.0 / math.pi)


def check_formulas() -> str:
    """Assert the E|X| formulas against brute force; return a one-line summary."""
    worst = 0.0
    for b in (0.3, 1.0, 8.571428571428573, 250.0, 1000.0):
        n = math.ceil(80.0 * b) + 10  # e^{-80}: the truncated tail is far below 1e-12
        k = np.arange(-n, n + 1, dtype=np.float64)
        w = np.exp(-np.abs(k) / b)
        brute = float(np.sum(np.abs(k) * w) / np.sum(w))
        closed = e_abs_discrete_laplace(b)
        assert math.isclose(closed, brute, rel_tol=1e-9), (b, closed, brute)
        worst = max(worst, abs(closed / brute - 1.0))
        quad = integrate.quad(lambda x, b=b: x * math.exp(-x / b) / b, 0.0, math.inf)[0]
        assert math.isclose(e_abs_laplace(b), quad, rel_tol=1e-8), (b, quad)
    for s in (0.4, 1.0, 3.0, 50.0, 2000.0):
        n = math.ceil(60.0 * s) + 5
        k = np.arange(-n, n + 1, dtype=np.float64)
        w = np.exp(-(k * k) / (2.0 * s * s))
        brute = float(np.sum(np.abs(k) * w) / np.sum(w))
        summed = e_abs_discrete_gaussian(s)
        assert math.isclose(summed, brute, rel_tol=1e-9), (s, summed, brute)
        worst = max(worst, abs(summed / brute - 1.0))
        if s >= 3.0:  # Euler–Maclaurin at the kink of |x|: σ√(2/π) − 1/(6√(2π)σ) + O(σ⁻³)
            approx = e_abs_gaussian(s) - 1.0 / (6.0 * math.sqrt(2.0 * math.pi) * s)
            assert abs(summed / approx - 1.0) <= max(0.005 / s**4, 1e-12), (s, summed, approx)
        quad = (
            2.0
            * integrate.quad(
                lambda x, s=s: x * math.exp(-x * x / (2 * s * s)) / (s * math.sqrt(2 * math.pi)),
                0.0,
                math.inf,
            )[0]
        )
        assert math.isclose(e_abs_gaussian(s), quad, rel_tol=1e-8), (s, quad)
    from sharpdp.data._noise import expected_abs  # what sharpdp's explain() prints

    for b in (1.0, 8.571428571428573, 1000.0):
        assert math.isclose(expected_abs(sdp.DiscreteLaplace(b)), e_abs_discrete_laplace(b))
    for s in (1.0, 50.0):
        assert math.isclose(expected_abs(sdp.DiscreteGaussian(s)), e_abs_discrete_gaussian(s))
    for eta, split, rounds, eps in ((0.04, 0.5, 30, 0.1), (0.3, 0.2, 5, 0.2), (1.0, 0.7, 1, 0.0)):
        # the η-BR pair's PLD against the binomial law of its rounds' summed loss
        a = split * eta
        p = math.expm1(eta - a) / (math.exp(eta - a) - math.exp(-a))
        exact = sum(
            math.comb(rounds, j)
            * p**j
            * (1 - p) ** (rounds - j)
            * max(0.0, -math.expm1(eps - (j * a + (rounds - j) * (a - eta))))
            for j in range(rounds + 1)
        )
        pld = br_pair_pld(eta, split).self_compose(rounds)
        optimistic = float(pld.get_delta_for_epsilon(eps))
        assert 0.95 * exact <= optimistic <= exact * (1 + 1e-9), (eta, exact, optimistic)
    return (
        "E|X| formulas checked: discrete Laplace closed form and discrete Gaussian sum against "
        f"brute-force sums over ±80b / ±60σ (largest relative gap {worst:.1e}), continuous laws "
        "against quadrature, and against sharpdp's expected_abs; the η-BR pairs' optimistic PLDs "
        "against the binomial law of their summed loss"
    )


# -- the demo's queries ---------------------------------------------------------------------------


class _Captured(Exception):
    """Raised by the recorder as soon as a demo section has built its query."""


class _Recorder:
    """Stands in for the demo's session: records the query a section builds, then stops it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def record(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((method, args, kwargs))
            raise _Captured

        return record


def scaled(privacy: sdp.Guarantee, t: float) -> sdp.Guarantee:
    """The query's target at scale t: ε·t, δ kept."""
    if isinstance(privacy, sdp.PureDP):
        return sdp.PureDP(t * privacy.epsilon_)
    if isinstance(privacy, sdp.ApproxDP):
        return sdp.ApproxDP(t * privacy.epsilon_, privacy.delta_)
    raise TypeError(f"demo query with privacy {privacy!r}: only PureDP/ApproxDP are modelled")


@dataclass(frozen=True)
class DemoQuery:
    """One query of the demo: the session method and arguments, and its shape for the peers."""

    label: str
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(hash=False)
    kind: str  # top_k | count | mean | quantile | partition
    epsilon: float
    delta: float
    m: int  # max_rows: the most one person moves one key's count (or score)
    copies: int  # keys (or by-groups) one person moves
    k: int = 0  # top-k only

    def build(self, session: Any, t: float) -> Any:
        return getattr(session, self.method)(
            *self.args, **{**self.kwargs, "privacy": scaled(self.kwargs["privacy"], t)}
        )

    @property
    def rounds(self) -> int:
        return self.k * self.copies

    @property
    def l1(self) -> int:
        return self.copies * self.m

    @property
    def l2(self) -> float:
        return math.sqrt(self.copies) * self.m


def _n(keys: Any) -> int:
    return len(keys)


def demo_queries(known: Any) -> list[DemoQuery]:
    """Call each demo section with the recorder; derive each query's shape from its arguments."""
    rec = _Recorder()
    run = _Demo(rec, known, 0, 0.95)
    out = []
    labels = {
        "top_destinations": "top-10 dest. per origin",
        "flights_per_carrier": "flights per carrier",
        "mean_delay": "mean delay per carrier",
        "median_air_time": "median air time",
        "routes": "routes (unknown keys)",
    }
    for section in SECTIONS:
        before = len(rec.calls)
        with contextlib.suppress(_Captured):
            getattr(run, section)()
        if len(rec.calls) != before + 1:
            raise RuntimeError(f"demo section {section!r} did not build exactly one query")
        method, args, kw = rec.calls[-1]
        privacy = kw["privacy"]
        eps = privacy.epsilon_
        delta = getattr(privacy, "delta_", 0.0)
        m = int(kw.get("max_rows", 1))
        kappa = int(kw.get("max_groups", 1))
        keys = kw.get("keys", args[1] if method == "count_by" and len(args) > 1 else None)
        if method == "top_k":
            if keys is None:
                raise RuntimeError("the demo's top-k has unknown keys: not modelled here")
            groups = kw.get("by_keys")
            copies = min(kappa, _n(groups)) if kw.get("by") is not None else 1
            q = DemoQuery(
                labels[section], method, args, kw, "top_k", eps, delta, m, copies, int(kw["k"])
            )
        elif method == "count_by":
            if keys is None:
                q = DemoQuery(labels[section], method, args, kw, "partition", eps, delta, m, kappa)
            else:
                copies = min(kappa, _n(keys))
                q = DemoQuery(labels[section], method, args, kw, "count", eps, delta, m, copies)
        elif method in ("mean", "quantile"):
            copies = min(kappa, _n(keys)) if kw.get("by") is not None else 1
            q = DemoQuery(labels[section], method, args, kw, method, eps, delta, m, copies)
        else:
            raise RuntimeError(f"demo section {section!r} uses {method}: not modelled here")
        out.append(q)
    return out


# -- results --------------------------------------------------------------------------------------


@dataclass
class Noise:
    """The noise of one released count."""

    law: str
    e_abs: float
    extra: str = ""


@dataclass
class System:
    name: str
    accounting: str
    t: float
    epsilon: float
    per_query: list[str]
    counts: dict[str, Noise]
    selections: dict[str, float] = field(default_factory=dict)  # kind → η (per round for top-k)
    missing: str = "—"


def largest(fits: Callable[[float], bool], guess: float, rtol: float = RTOL) -> float:
    """The largest x > 0 with fits(x), for fits monotone (true below, false above), to ``rtol``."""
    lo = hi = guess
    if fits(lo):
        hi = 2.0 * lo
        while fits(hi):
            lo, hi = hi, 2.0 * hi
    else:
        lo = 0.5 * hi
        while not fits(lo):
            hi, lo = lo, 0.5 * lo
            if lo < 1e-12:
                raise RuntimeError("no scale fits")
    while hi - lo > rtol * lo:
        mid = 0.5 * (lo + hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _f(x: float, d: int = 4) -> str:
    return f"{x:.{d}g}"


# -- sharpdp --------------------------------------------------------------------------------------


def sharpdp_session() -> Any:
    """A session over the flights (nothing is spent: only ``explain()`` is called)."""
    return sdp.data.Session(
        sdp.data.datasets.flights(),
        privacy_unit="tailnum",
        budget=BUDGET,
        ledger=None,
        analyst="demo-utility",
        null_units="drop",
        seed=0,
    )


SELECTIONS = ("top_k", "quantile")


def sharpdp_charges(
    session: Any, queries: list[DemoQuery], t: float, selection_scale: dict[str, float] | None
) -> tuple[list[Any], list[Any], list[tuple[sdp.Guarantee, int]]]:
    """Each query built at scale t (a selection at ``selection_scale[kind]`` when given)."""
    scales = [
        selection_scale[q.kind] if selection_scale and q.kind in selection_scale else t
        for q in queries
    ]
    pairs = [_explained(session, q, s) for q, s in zip(queries, scales, strict=True)]
    built, explained = [b for b, _ in pairs], [e for _, e in pairs]
    return built, explained, [e.charge for e in explained]


_EXPLAINED: dict[tuple[int, str, float], tuple[Any, Any]] = {}


def _explained(session: Any, q: DemoQuery, scale: float) -> tuple[Any, Any]:
    """(query, explain()) of ``q`` at ``scale``, built once (the searches revisit scales, and a
    selection held at a peer's η is the same query at every count scale)."""
    key = (id(session), q.label, scale)
    if key not in _EXPLAINED:
        built = q.build(session, scale)
        _EXPLAINED[key] = (built, built.explain())
    return _EXPLAINED[key]


def selection_eta(explained: Any, q: DemoQuery) -> float:
    """The exponential mechanism's η (per round for the top-k) of an explained selection."""
    stats = explained.statistics
    if q.kind == "top_k":
        assert stats[0].copies == q.copies
        assert stats[0].mechanism.k == q.k
    return float(stats[0].mechanism.epsilon_)


def describe(target: sdp.Guarantee) -> str:
    """A target in a few characters: ``ε 0.1``, ``ε 0.4, δ 1e-07``, ``ρ 0.02, δ 1e-07``."""
    if isinstance(target, sdp.ApproxZCDP):
        return f"ρ {_f(target.rho)}, δ {target.delta_:g}"
    text = f"ε {_f(target.epsilon_)}"
    return text + (f", δ {target.delta_:g}" if isinstance(target, sdp.ApproxDP) else "")


def held_etas(queries: list[DemoQuery], explained: list[Any]) -> dict[str, float]:
    """{selection kind: its η} of the explained queries."""
    pairs = zip(queries, explained, strict=True)
    return {q.kind: selection_eta(e, q) for q, e in pairs if q.kind in SELECTIONS}


def sharpdp_counts(
    queries: list[DemoQuery], built: list[Any], explained: list[Any], scales: list[float]
) -> tuple[list[str], dict[str, Noise]]:
    """Per-query descriptions and the noise of each released count, read from explain()."""
    per_query, counts = [], {}
    for q, b, e, t in zip(queries, built, explained, scales, strict=True):
        target = scaled(q.kwargs["privacy"], t)
        tgt = describe(target)
        if q.kind == "top_k":
            text = f"η {_f(selection_eta(e, q))}/round × {q.rounds} (BR rounds, sharp)"
        elif q.kind == "quantile":
            text = f"EM η {_f(selection_eta(e, q))}"
        else:
            parts = []
            for s in e.statistics:
                mech = s.mechanism
                if s.name != "count":
                    continue
                assert s.copies == q.copies, (s, q)
                if isinstance(mech, sdp.DiscreteLaplace):
                    b_ = float(mech.scale)
                    noise = Noise(f"discrete Laplace b {_f(b_)}", e_abs_discrete_laplace(b_))
                    # the peers are modelled on the same calibration: b = copies·m/ε_share
                    share = target.epsilon_ / (2.0 if q.kind == "mean" else 1.0)
                    assert math.isclose(b_, q.l1 / share, rel_tol=1e-9), (q.label, b_)
                else:
                    sg = float(mech.sigma)
                    noise = Noise(f"discrete Gaussian σ {_f(sg)}", e_abs_discrete_gaussian(sg))
                if q.kind == "partition":
                    noise.extra = f"τ {b.tau}"
                label = {"count": COUNTS[0], "mean": COUNTS[1], "partition": COUNTS[2]}[q.kind]
                counts[label] = noise
                parts.append(noise.law + (f", {noise.extra}" if noise.extra else ""))
            if q.kind == "mean":
                parts.insert(0, "ε/2 sum + ε/2 count:")
            text = " ".join(parts)
        per_query.append(f"{tgt}: {text}")
    return per_query, counts


def run_sharpdp(queries: list[DemoQuery], session: Any) -> tuple[System, str]:
    delta = BUDGET.delta_

    def fits(t: float) -> bool:
        return sdp.compose(sharpdp_charges(session, queries, t, None)[2]).epsilon(delta) <= 1.0

    t = largest(fits, 1.0)
    built, explained, ch = sharpdp_charges(session, queries, t, None)
    composed = sdp.compose(ch)
    eps = composed.epsilon(delta)
    winner = composed.explain(delta=delta).winner.name
    acc = sdp.Accountant(budget=BUDGET)  # in memory: what run() spends first, query by query
    for item, count in ch:
        acc.spend(item, count)
    after = sharpdp_charges(session, queries, t * (1 + RTOL), None)[2]
    check = (
        f"sharpdp at t = {t:.5g}: the five explain() charges spent into a fresh "
        f"sdp.Accountant(ApproxDP(1, 1e-6)) read ε = {acc.epsilon(delta):.6f} at δ = 1e-6; "
        f"at t·(1 + {RTOL:g}) they compose to ε = {sdp.compose(after).epsilon(delta):.6f}"
    )
    per_query, counts = sharpdp_counts(queries, built, explained, [t] * len(queries))
    sysres = System(
        "sharpdp",
        f"sdp.compose of the explain() charges (winner: {winner})",
        t,
        eps,
        per_query,
        counts,
        held_etas(queries, explained),
    )
    return sysres, check


def held_selection_scales(queries: list[DemoQuery], session: Any, peer: System) -> dict[str, float]:
    """{selection kind: the least scale at which sharpdp's η reaches the peer's}."""
    selection_scale = {}
    for q in queries:
        if q.kind not in SELECTIONS:
            continue
        want = peer.selections[q.kind]

        def short(s: float, q: DemoQuery = q, want: float = want) -> bool:
            _, explained, _ = sharpdp_charges(session, [q], s, None)
            return selection_eta(explained[0], q) < want

        # the smallest scale whose η reaches the peer's: just above the largest that falls short
        s = largest(short, want / q.epsilon) * (1 + RTOL)
        while short(s):
            s *= 1 + RTOL
        selection_scale[q.kind] = s
    return selection_scale


def run_sharpdp_matched(
    queries: list[DemoQuery], session: Any, peer: System, held: dict[str, float]
) -> System:
    """sharpdp with each selection held to the peer's η (``held``: their scales), the count
    queries scaled by the largest t at which the whole set still fits the budget."""
    delta = BUDGET.delta_

    def fits(t: float) -> bool:
        ch = sharpdp_charges(session, queries, t, held)[2]
        return sdp.compose(ch).epsilon(delta) <= BUDGET.epsilon_

    t = largest(fits, peer.t)
    built, explained, ch = sharpdp_charges(session, queries, t, held)
    scales = [held.get(q.kind, t) for q in queries]
    per_query, counts = sharpdp_counts(queries, built, explained, scales)
    return System(
        f"sharpdp, selections at {peer.name}'s η",
        "sdp.compose of the explain() charges",
        t,
        sdp.compose(ch).epsilon(delta),
        per_query,
        counts,
        held_etas(queries, explained),
    )


COUNT_LABEL = {"count": COUNTS[0], "mean": COUNTS[1], "partition": COUNTS[2]}


def laplace_scale_for(e_abs: float) -> float:
    """The discrete Laplace scale b whose E|X| is ``e_abs`` (E|X| increases with b)."""
    return largest(lambda b: e_abs_discrete_laplace(b) <= e_abs, e_abs)


def run_sharpdp_dominating(
    queries: list[DemoQuery], session: Any, peer: System, held: dict[str, float]
) -> tuple[float, System]:
    """The least r such that sharpdp, selections held to the peer's η, gives *every* count an
    E|err| of at most r × the peer's within the budget (each count query at its own scale: its
    discrete Laplace b has E|X| = r·E_peer, so b = ℓ1/(ε share), share = scale·ε_i (·½ for the
    mean's count)). Returns (r, sharpdp at r)."""
    delta = BUDGET.delta_

    def scales_at(r: float) -> dict[str, float]:
        out = dict(held)
        for q in queries:
            if q.kind in COUNT_LABEL:
                b = laplace_scale_for(r * peer.counts[COUNT_LABEL[q.kind]].e_abs)
                out[q.kind] = q.l1 / (b * q.epsilon * (0.5 if q.kind == "mean" else 1.0))
        return out

    def fits(r: float) -> bool:
        ch = sharpdp_charges(session, queries, 0.0, scales_at(r))[2]
        return sdp.compose(ch).epsilon(delta) <= BUDGET.epsilon_

    # the least r that fits: just above the largest 1/r that fits
    inverse = largest(lambda x: fits(1.0 / x), 1.0)
    r = 1.0 / inverse
    scales = scales_at(r)
    built, explained, ch = sharpdp_charges(session, queries, 0.0, scales)
    per_query, counts = sharpdp_counts(queries, built, explained, [scales[q.kind] for q in queries])
    mine = System(
        f"sharpdp dominating {peer.name}",
        "sdp.compose of the explain() charges",
        r,
        sdp.compose(ch).epsilon(delta),
        per_query,
        counts,
        held_etas(queries, explained),
    )
    return r, mine


# -- classical helpers ----------------------------------------------------------------------------


def zcdp_classic_epsilon(rho: float, delta: float) -> float:
    """Bun–Steinke 2016 Lemma 3.5 (the classical conversion): ρ + 2√(ρ ln(1/δ))."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def classical_round_epsilon(eps: float, delta: float, rounds: int) -> tuple[float, str, float]:
    """The largest per-round ε (η) of ``rounds`` ε-DP mechanisms meeting (eps, delta) by the best
    classical analysis: basic (R·η), advanced (Dwork–Rothblum–Vadhan 2010: √(2R ln(1/δ))·η +
    R·η·(e^η − 1)), or zCDP with η²/2 per round and Lemma 3.5. Returns (η, analysis, δ used)."""
    basic = eps / rounds

    def adv(x: float) -> bool:
        return (
            math.sqrt(2.0 * rounds * math.log(1.0 / delta)) * x + rounds * x * math.expm1(x) <= eps
        )

    def zc(x: float) -> bool:
        return zcdp_classic_epsilon(rounds * x * x / 2.0, delta) <= eps

    options = [(basic, "basic", 0.0)]
    if delta > 0.0:
        options += [
            (largest(adv, basic), "advanced", delta),
            (largest(zc, basic), "zCDP ε²/2", delta),
        ]
    return max(options, key=lambda o: o[0])


def analytic_gaussian_sigma(eps: float, delta: float, l2: float) -> float:
    """The least σ whose Gaussian (ℓ2 sensitivity ``l2``) is (eps, delta)-DP: Balle–Wang 2018
    Thm 8, δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)."""

    def d(sigma: float) -> float:
        a, c = l2 / (2.0 * sigma), eps * sigma / l2
        return float(special.ndtr(a - c) - math.exp(eps) * special.ndtr(-a - c))

    # smallest σ with d(σ) ≤ δ: d decreases in σ; search on 1/σ with `largest`
    inv = largest(lambda x: d(1.0 / x) <= delta, eps / l2)
    return 1.0 / inv


def laplace_tau(b: float, m: int, kappa: int, delta: float) -> float:
    """Least threshold τ with 1 − (1 − P[Z ≥ τ − m])^κ ≤ δ, Z continuous Laplace of scale b
    (P[Z ≥ x] = e^{−x/b}/2 for x ≥ 0)."""
    p = -math.expm1(math.log1p(-delta) / kappa)
    return m + b * math.log(1.0 / (2.0 * p))


def gaussian_tau(sigma: float, m: int, kappa: int, delta: float) -> float:
    p = -math.expm1(math.log1p(-delta) / kappa)
    return m - sigma * float(special.ndtri(p))


# -- OpenDP 0.16 (zCDP) and Tumult 0.21 (ρ-zCDP): one plan, two rule books ------------------------


def _opendp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib", "honest-but-curious")
    return dp


class OpenDPRules:
    """Privacy numbers from OpenDP's own constructors and privacy maps."""

    name = "OpenDP 0.16, zCDP"

    def __init__(self) -> None:
        self.dp = _opendp()

    def topk_rho(self, scale: float, q: DemoQuery) -> tuple[float, float]:
        """(ρ of the query's copies·k rounds, pure ε per round) at noise scale ``scale``."""
        dp = self.dp
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int, monotonic=True)
        one = dp.m.make_noisy_top_k(*space, dp.zero_concentrated_divergence(), k=q.k, scale=scale)
        rho = dp.c.make_composition([one] * q.copies).map(q.m)
        eta = dp.m.make_noisy_top_k(*space, dp.max_divergence(), k=1, scale=scale).map(q.m)
        return float(rho), float(eta)

    def epsilon(self, rho: float, delta_pre: float, delta: float) -> float:
        """ε at total δ of Approximate-zCDP (ρ, δ_pre): OpenDP's make_zCDP_to_approxDP."""
        dp = self.dp
        space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
        if delta_pre > 0.0:
            meas = dp.m.make_user_measurement(
                *space,
                dp.approximate(dp.zero_concentrated_divergence()),
                function=lambda x: x,
                privacy_map=lambda d_in: (rho, delta_pre),
            )
            profile, pre = dp.c.make_zCDP_to_approxDP(meas).map(1)
            return float(profile.epsilon(delta - pre))
        meas = dp.m.make_user_measurement(
            *space,
            dp.zero_concentrated_divergence(),
            function=lambda x: x,
            privacy_map=lambda d_in: rho,
        )
        return float(dp.c.make_zCDP_to_approxDP(meas).map(1).epsilon(delta))

    def pure_rho(self, eps: float, l1: int) -> tuple[float, float]:
        """(ρ, scale) of OpenDP's Laplace meeting pure ε on ℓ1, cast by make_pureDP_to_zCDP."""
        dp = self.dp
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
        b = l1 / eps
        while dp.m.make_laplace(*space, scale=b).map(l1) > eps:
            b = math.nextafter(b, math.inf)
        return float(dp.c.make_pureDP_to_zCDP(dp.m.make_laplace(*space, scale=b)).map(l1)), b

    def gaussian_sigma(self, rho: float, q: DemoQuery) -> float:
        """The least σ whose OpenDP Gaussian map on the query's ℓ2 is ≤ ρ."""
        dp = self.dp
        if float(q.l2).is_integer():
            space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
            d_in: Any = int(q.l2)
        else:
            space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
            d_in = q.l2
        sigma = q.l2 / math.sqrt(2.0 * rho)
        while dp.m.make_gaussian(*space, scale=sigma).map(d_in) > rho:
            sigma = math.nextafter(sigma, math.inf)
        return sigma

    def quantile_rho(self, eps: float, q: DemoQuery) -> tuple[float, float]:
        """(ρ, pure ε) of make_private_quantile at the scale whose pure map is ≤ eps."""
        dp = self.dp
        lo, hi = q.kwargs.get("bounds", q.args[2] if len(q.args) > 2 else None)
        cand = list(range(int(lo), int(hi) + 1))
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
        alpha = float(q.args[1] if len(q.args) > 1 else q.kwargs["q"])

        def meas(measure: Any, scale: float) -> Any:
            return dp.m.make_private_quantile(
                *space, measure, candidates=cand, alpha=alpha, scale=scale
            )

        scale = float(meas(dp.max_divergence(), 1.0).map(q.m)) / eps
        while meas(dp.max_divergence(), scale).map(q.m) > eps:
            scale = math.nextafter(scale, math.inf)
        pure = float(meas(dp.max_divergence(), scale).map(q.m))
        return float(meas(dp.zero_concentrated_divergence(), scale).map(q.m)), pure

    def threshold(self, noise: str, scale: float, q: DemoQuery, delta: float) -> tuple[int, float]:
        """Least integer threshold whose map δ ≤ delta; (τ, ρ or ε of the map)."""
        dp = self.dp
        dom = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
        if noise == "gaussian":
            metric = dp.l02inf_distance(dp.absolute_distance(T=int))
            make = dp.m.make_gaussian_threshold
        else:
            metric = dp.l01inf_distance(dp.absolute_distance(T=int))
            make = dp.m.make_laplace_threshold
        d_in = (q.copies, q.l1, q.m)

        def at(tau: int) -> tuple[float, float]:
            e, d = make(dom, metric, scale=scale, threshold=tau).map(d_in)
            return float(e), float(d)

        tau = q.m + 1
        while at(tau)[1] > delta:
            tau *= 2
        lo, hi = tau // 2, tau
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if at(mid)[1] <= delta:
                hi = mid
            else:
                lo = mid
        return hi, at(hi)[0]


class TumultRules(OpenDPRules):
    """Tumult Analytics 0.21's documented formulas (tmlt.core source), OpenDP where it has none."""

    name = "Tumult 0.21, RhoZCDPBudget"

    def pure_rho(self, eps: float, l1: int) -> tuple[float, float]:
        return eps * eps / 2.0, l1 / eps  # PureDPToRhoZCDP: ρ = ε²/2 (geometric noise, b = Δ/ε)

    def gaussian_sigma(self, rho: float, q: DemoQuery) -> float:
        return q.l2 / math.sqrt(2.0 * rho)  # ρ = Δ₂²/(2σ²), Δ₂ = √κ·m (its ℓ2 stability)

    def quantile_rho(self, eps: float, q: DemoQuery) -> tuple[float, float]:
        return eps * eps / 8.0, eps  # create_quantile_measurement: ε = √(8ρ)/d_mid


def run_zcdp(rules: OpenDPRules, queries: list[DemoQuery]) -> System:
    delta_total = BUDGET.delta_

    def plan(t: float) -> dict[str, Any]:
        rho, delta_pre, texts, counts = 0.0, 0.0, [], {}
        selections: dict[str, float] = {}
        for q in queries:
            eps = t * q.epsilon
            tgt = f"ε {_f(eps)}" + (f", δ {q.delta:g}" if q.delta else "")
            if q.kind == "top_k":
                # the query meets its (ε, δ_i) through its own zCDP, converted at δ_i
                inv = largest(
                    lambda x, q=q, eps=eps: (
                        rules.epsilon(rules.topk_rho(1.0 / x, q)[0], 0.0, q.delta) <= eps
                    ),
                    eps / q.rounds,
                )
                r, eta = rules.topk_rho(1.0 / inv, q)
                selections["top_k"] = eta
                rho += r
                texts.append(
                    f"{tgt} (own zCDP at δ_i) → ρ {_f(r)}: η {_f(eta)}/round × {q.rounds} "
                    "(η²/8 each)"
                )
            elif q.kind == "quantile":
                r, pure = rules.quantile_rho(eps, q)
                selections["quantile"] = pure
                rho += r
                texts.append(f"{tgt} → ρ {_f(r)} (η²/8): EM η {_f(pure)}")
            elif q.kind in ("count", "mean"):
                share = eps / 2.0 if q.kind == "mean" else eps
                r_count, b = rules.pure_rho(share, q.l1)
                if q.kind == "mean":
                    rho += rules.pure_rho(share, q.l1)[0]  # the centred sum's pure ε/2, cast
                rho += r_count
                sigma = rules.gaussian_sigma(r_count, q)
                lap = Noise(f"discrete Laplace b {_f(b)}", e_abs_discrete_laplace(b))
                gau = Noise(f"discrete Gaussian σ {_f(sigma)}", e_abs_discrete_gaussian(sigma))
                best = min((lap, gau), key=lambda n: n.e_abs)
                counts[COUNTS[0] if q.kind == "count" else COUNTS[1]] = best
                pre = "ε/2 sum + ε/2 count, each " if q.kind == "mean" else ""
                texts.append(f"{tgt}: {pre}ρ {_f(r_count)} (ε²/2) → {best.law}")
            else:  # partition: ρ of the pure share, Gaussian or Laplace threshold at δ_i
                r, b = rules.pure_rho(eps, q.l1)
                sigma = rules.gaussian_sigma(r, q)
                tau_g, r_g = rules.threshold("gaussian", sigma, q, q.delta)
                tau_l, _ = rules.threshold("laplace", b, q, q.delta)
                assert r_g <= r * (1 + 1e-9), (r_g, r)
                gau = Noise(
                    f"discrete Gaussian σ {_f(sigma)}", e_abs_discrete_gaussian(sigma), f"τ {tau_g}"
                )
                lap = Noise(f"discrete Laplace b {_f(b)}", e_abs_discrete_laplace(b), f"τ {tau_l}")
                best = min((lap, gau), key=lambda n: n.e_abs)
                counts[COUNTS[2]] = best
                rho += r
                delta_pre += q.delta
                texts.append(
                    f"{tgt}: ρ {_f(r)} (ε²/2) + threshold δ {q.delta:g} → {best.law} "
                    f"(ℓ2 √{q.copies}·{q.m}), {best.extra}"
                )
        return {
            "rho": rho,
            "delta_pre": delta_pre,
            "texts": texts,
            "counts": counts,
            "selections": selections,
        }

    def eps_at(t: float) -> float:
        p = plan(t)
        return rules.epsilon(p["rho"], p["delta_pre"], delta_total)

    t = largest(lambda x: eps_at(x) <= BUDGET.epsilon_, 0.5)
    p = plan(t)
    return System(
        rules.name,
        f"Σρ = {_f(p['rho'])} + Σδ = {p['delta_pre']:g}, make_zCDP_to_approxDP",
        t,
        rules.epsilon(p["rho"], p["delta_pre"], delta_total),
        p["texts"],
        p["counts"],
        p["selections"],
    )


# -- basic composition (PipelineDP naive, SmartNoise; Tumult under ApproxDPBudget) --------------


def run_basic(queries: list[DemoQuery], tumult: bool = False) -> System:
    selections: dict[str, float] = {}

    def plan(t: float) -> tuple[float, float, list[str], dict[str, Noise]]:
        eps_sum, delta_sum, texts, counts = 0.0, 0.0, [], {}
        for q in queries:
            eps = t * q.epsilon
            tgt = f"ε {_f(eps)}" + (f", δ {q.delta:g}" if q.delta else "")
            if q.kind == "top_k":
                eta, how, used = classical_round_epsilon(eps, q.delta, q.rounds)
                selections["top_k"] = eta
                eps_sum += eps if used else eta * q.rounds
                delta_sum += used
                texts.append(f"{tgt}: η {_f(eta)}/round × {q.rounds} ({how}, ε-DP rounds)")
            elif q.kind == "quantile":
                eps_sum += eps
                selections["quantile"] = eps
                texts.append(f"{tgt}: EM η {_f(eps)} (ε-DP)")
            elif q.kind in ("count", "mean"):
                eps_sum += eps
                share = eps / 2.0 if q.kind == "mean" else eps
                b = q.l1 / share
                noise = (
                    Noise(f"discrete Laplace b {_f(b)}", e_abs_discrete_laplace(b))
                    if tumult
                    else Noise(f"Laplace b {_f(b)}", e_abs_laplace(b))
                )
                counts[COUNTS[0] if q.kind == "count" else COUNTS[1]] = noise
                pre = "ε/2 sum + ε/2 count: " if q.kind == "mean" else ""
                texts.append(f"{tgt}: {pre}{noise.law}")
            else:
                eps_sum += eps
                delta_sum += q.delta
                if tumult:  # auto partition selection: ε/2 and δ select, ε/2 to the counts
                    b = q.l1 / (eps / 2.0)
                    noise = Noise(
                        f"discrete Laplace b {_f(b)}",
                        e_abs_discrete_laplace(b),
                        "keys by a separate selection (ε/2, δ)",
                    )
                else:
                    b = q.l1 / eps
                    lap = Noise(
                        f"Laplace b {_f(b)}",
                        e_abs_laplace(b),
                        f"τ {laplace_tau(b, q.m, q.copies, q.delta):.1f}",
                    )
                    sigma = analytic_gaussian_sigma(eps, q.delta / 2.0, q.l2)
                    gau = Noise(
                        f"Gaussian σ {_f(sigma)} at (ε, δ/2)",
                        e_abs_gaussian(sigma),
                        f"τ {gaussian_tau(sigma, q.m, q.copies, q.delta / 2.0):.1f}",
                    )
                    noise = min((lap, gau), key=lambda n: n.e_abs)
                    other = gau if noise is lap else lap
                    noise.extra += f"; {other.law.split(' at')[0]} would give {other.e_abs:.3g}"
                counts[COUNTS[2]] = noise
                texts.append(f"{tgt}: {noise.law}, {noise.extra}")
        return eps_sum, delta_sum, texts, counts

    def fits(t: float) -> bool:
        e, d, _, _ = plan(t)
        return e <= BUDGET.epsilon_ and d <= BUDGET.delta_

    t = largest(fits, 0.5)
    e, d, texts, counts = plan(t)
    name = (
        "Tumult 0.21, ApproxDPBudget"
        if tumult
        else "basic composition (PipelineDP naive, SmartNoise)"
    )
    return System(
        name, f"Σε, Σδ = {d:g} (Dwork–Roth Thm 3.16)", t, e, texts, counts, dict(selections)
    )


# -- PipelineDP's PLD accountant (dp_accounting PLD) ---------------------------------------------


def run_pld(queries: list[DemoQuery]) -> System:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    def pure(eps: float) -> Any:
        return pldlib.from_privacy_parameters(common.DifferentialPrivacyParameters(eps, 0.0))

    cache: dict[tuple[float, int, float], float] = {}

    def topk_eta(eps: float, q: DemoQuery) -> float:
        key = (eps, q.rounds, q.delta)
        if key not in cache:
            cache[key] = largest(
                lambda x: pure(x).self_compose(q.rounds).get_epsilon_for_delta(q.delta) <= eps,
                eps / q.rounds,
            )
        return cache[key]

    selections: dict[str, float] = {}

    def plan(t: float) -> tuple[Any, float, list[str], dict[str, Noise]]:
        composed, delta_thr, texts, counts = None, 0.0, [], {}
        for q in queries:
            eps = t * q.epsilon
            tgt = f"ε {_f(eps)}" + (f", δ {q.delta:g}" if q.delta else "")
            if q.kind == "top_k":
                eta = topk_eta(eps, q)
                selections["top_k"] = eta
                pld = pure(eta).self_compose(q.rounds)
                texts.append(f"{tgt}: η {_f(eta)}/round × {q.rounds} (pure pairs, PLD)")
            elif q.kind == "quantile":
                pld = pure(eps)
                selections["quantile"] = eps
                texts.append(f"{tgt}: EM η {_f(eps)} (pure pair)")
            elif q.kind in ("count", "mean"):
                share = eps / 2.0 if q.kind == "mean" else eps
                b = q.l1 / share
                pld = pldlib.from_laplace_mechanism(b, sensitivity=q.l1)
                if q.kind == "mean":
                    pld = pld.compose(pldlib.from_laplace_mechanism(1.0 / share))
                noise = Noise(f"Laplace b {_f(b)}", e_abs_laplace(b))
                counts[COUNTS[0] if q.kind == "count" else COUNTS[1]] = noise
                pre = "ε/2 sum + ε/2 count: " if q.kind == "mean" else ""
                texts.append(f"{tgt}: {pre}{noise.law}")
            else:
                b = q.l1 / eps
                pld = pldlib.from_laplace_mechanism(b, sensitivity=q.l1)
                delta_thr += q.delta
                noise = Noise(
                    f"Laplace b {_f(b)}",
                    e_abs_laplace(b),
                    f"τ {laplace_tau(b, q.m, q.copies, q.delta):.1f}",
                )
                counts[COUNTS[2]] = noise
                texts.append(f"{tgt}: {noise.law} (ℓ1 {q.l1}), threshold δ {q.delta:g}")
            composed = pld if composed is None else composed.compose(pld)
        return composed, delta_thr, texts, counts

    def eps_at(t: float) -> float:
        composed, delta_thr, _, _ = plan(t)
        return float(composed.get_epsilon_for_delta(BUDGET.delta_ - delta_thr))

    t = largest(lambda x: eps_at(x) <= BUDGET.epsilon_, 0.9)
    _, delta_thr, texts, counts = plan(t)
    return System(
        "PipelineDP PLD accountant (dp_accounting 0.6)",
        f"PLD, ε at δ − {delta_thr:g} (threshold δ)",
        t,
        eps_at(t),
        texts,
        counts,
        dict(selections),
    )


def ceiling(queries: list[DemoQuery]) -> float:
    """The largest t at which the count queries' own noise alone fits (1, 1e-6): the selections
    (top-k, median) free, the routes' threshold δ ignored, each count query's discrete Laplace
    (the demo's pure-ε shares, as sharpdp calibrates them: copies runs of sensitivity m) and the
    mean's sum (a Laplace at ε/2) composed as exact dp_accounting PLDs with the *optimistic*
    discretisation. Every simplification errs towards a larger t, so no accountant can give these
    mechanisms a larger scale."""

    def eps_at(t: float) -> float:
        return float(count_noise_pld(queries, t).get_epsilon_for_delta(BUDGET.delta_))

    return largest(lambda x: eps_at(x) <= BUDGET.epsilon_, 1.0)


def count_noise_pld(queries: list[DemoQuery], t: float) -> Any:
    """The optimistic dp_accounting PLD of the count queries' own noise at scale t: each count
    query's discrete Laplace (the demo's pure-ε share, copies runs of sensitivity m, as sharpdp
    calibrates it) and the mean's sum (a Laplace at ε/2), composed."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    composed = None
    for q in queries:
        if q.kind not in ("count", "mean", "partition"):
            continue
        share = t * q.epsilon / (2.0 if q.kind == "mean" else 1.0)
        pld = pldlib.from_discrete_laplace_mechanism(
            share / q.l1, sensitivity=q.m, pessimistic_estimate=False
        ).self_compose(q.copies)
        if q.kind == "mean":
            pld = pld.compose(
                pldlib.from_laplace_mechanism(
                    1.0 / share, pessimistic_estimate=False, use_connect_dots=False
                )
            )
        composed = pld if composed is None else composed.compose(pld)
    assert composed is not None
    return composed


def br_pair_pld(eta: float, split: float) -> Any:
    """The optimistic dp_accounting PLD of a two-outcome η-BR pair (P, P'): outcome 1 has privacy
    loss a = split·η, outcome 2 has a − η (a range of exactly η), with P(1) = p, P'(1) = p·e^{−a},
    P(2) = 1 − p, P'(2) = (1 − p)·e^{η−a} and p = (e^{η−a} − 1)/(e^{η−a} − e^{−a}), so that P' sums
    to 1. It is the exponential mechanism over two candidates whose monotone scores move apart by
    one, so every η-BR accounting must cover it."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    a = split * eta
    p = math.expm1(eta - a) / (math.exp(eta - a) - math.exp(-a))
    upper = {1: math.log(p), 2: math.log1p(-p)}
    lower = {1: math.log(p) - a, 2: math.log1p(-p) + eta - a}
    return pldlib.from_two_probability_mass_functions(lower, upper, pessimistic_estimate=False)


BR_SPLITS = tuple(i / 20 for i in range(1, 20))


def scaled_alike_bound(
    queries: list[DemoQuery], session: Any, sharp_t: float
) -> tuple[float, float]:
    """The largest t at which a *lower* bound on the demo's composition fits (1, 1e-6), every
    query at t·ε_i as in the first comparison; and that lower bound at sharpdp's own t.

    The lower bound composes, as exact dp_accounting PLDs with the optimistic discretisation
    (which never overstates δ): each count query's discrete Laplace and the mean's sum (as in
    :func:`ceiling`); the top-k's rounds and the median as two-outcome η-BR pairs
    (:func:`br_pair_pld`, the split a/η maximised over a grid), at the η sharpdp calibrates for
    the query's target at t. That η is certified to meet the target, so the least-noise top-k
    meeting it has at least this η, and a larger η only costs more. The routes' threshold δ is
    ignored. So any accounting that treats the selections' rounds as η-BR (as the issue asks:
    "accounted as bounded range") composes these queries at t to at least this ε: none can give
    every query a larger scale than the returned t."""

    def eps_at(t: float) -> float:
        _, explained, _ = sharpdp_charges(session, queries, t, None)
        eta = held_etas(queries, explained)
        counts = count_noise_pld(queries, t)
        worst = 0.0
        for split in BR_SPLITS:
            composed = counts
            for q in queries:
                if q.kind == "top_k":
                    composed = composed.compose(
                        br_pair_pld(eta["top_k"], split).self_compose(q.rounds)
                    )
                elif q.kind == "quantile":
                    composed = composed.compose(br_pair_pld(eta["quantile"], split))
            worst = max(worst, float(composed.get_epsilon_for_delta(BUDGET.delta_)))
        return worst

    return largest(lambda x: eps_at(x) <= BUDGET.epsilon_, sharp_t), eps_at(sharp_t)


# -- output ---------------------------------------------------------------------------------------


MISSING = {
    "sharpdp": "—",
    "OpenDP 0.16, zCDP": "— (all five native)",
    "Tumult 0.21, RhoZCDPBudget": "top-k (modelled as OpenDP's); routes: no partition "
    "selection under ρ (modelled: OpenDP's Gaussian threshold); no ρ→(ε, δ) (OpenDP's used)",
    "Tumult 0.21, ApproxDPBudget": "top-k (modelled: best classical, as basic)",
    "basic composition (PipelineDP naive, SmartNoise)": "top-k, EM median (modelled: ε-DP "
    "exponential mechanisms)",
    "PipelineDP PLD accountant (dp_accounting 0.6)": "top-k, EM median (modelled: pure ε pairs; "
    "dp_accounting has no EM)",
}


def matched_comparison(queries: list[DemoQuery], session: Any, peers: list[System]) -> str:
    """Second comparison: against each peer, sharpdp's selections held to that peer's η (so
    sharpdp's top-k and median are no less accurate than the peer's), the rest of the budget to
    the count queries at their demo shares. Prints the table; returns the verdict line."""
    rows, ratios = [], dict.fromkeys(COUNTS, 0.0)
    worst: dict[str, str] = {}
    runs: dict[tuple[tuple[str, float], ...], System] = {}
    held: dict[tuple[tuple[str, float], ...], dict[str, float]] = {}
    dominating: dict[tuple[Any, ...], tuple[float, System]] = {}
    for peer in peers:
        key = tuple(sorted(peer.selections.items()))
        if key not in runs:  # peers with the same selections (OpenDP and Tumult ρ) share a run
            held[key] = held_selection_scales(queries, session, peer)
            runs[key] = run_sharpdp_matched(queries, session, peer, held[key])
        mine = runs[key]
        dkey = (key, tuple(peer.counts[c].e_abs for c in COUNTS))
        if dkey not in dominating:
            dominating[dkey] = run_sharpdp_dominating(queries, session, peer, held[key])
        sel = "; ".join(
            f"{kind} η {_f(peer.selections[kind])} → {_f(mine.selections[kind])}"
            for kind in SELECTIONS
        )
        cells = []
        for c in COUNTS:
            r = mine.counts[c].e_abs / peer.counts[c].e_abs
            if r > ratios[c]:
                ratios[c], worst[c] = r, peer.name
            cells.append(f"{mine.counts[c].e_abs:,.2f} vs {peer.counts[c].e_abs:,.2f}: **{r:.3f}**")
        rows.append([peer.name, sel, f"{mine.t:.4f} (peer {peer.t:.4f})", *cells])
    print_table(
        "Selections held to each peer's accuracy: sharpdp's top-k and median get at least the "
        "peer's η, the count queries the rest (sharpdp E|err| vs the peer's, ratio)",
        ["peer", "selection η: peer → sharpdp", "count scale t", *COUNTS],
        rows,
    )
    met = all(r <= TARGET_RATIO for r in ratios.values())
    verdict = (
        f"Verdict with selections held equal, at the demo's shares: the target (every count's "
        f"E|err| ≤ {TARGET_RATIO}× every peer's) is {'MET' if met else 'NOT met'}: worst ratios "
        + ", ".join(f"{c} {ratios[c]:.3f} (against {worst[c]})" for c in COUNTS)
        + "."
    )
    rows = []
    worst_r, worst_peer = 0.0, ""
    for peer in peers:
        key = tuple(sorted(peer.selections.items()))
        r, mine = dominating[(key, tuple(peer.counts[c].e_abs for c in COUNTS))]
        if r > worst_r:
            worst_r, worst_peer = r, peer.name
        rows.append(
            [
                peer.name,
                f"**{r:.3f}**",
                *[
                    f"{mine.counts[c].law} ({mine.counts[c].e_abs:,.2f}"
                    + (f", {mine.counts[c].extra}" if mine.counts[c].extra else "")
                    + f") vs {peer.counts[c].law} ({peer.counts[c].e_abs:,.2f}"
                    + (f", {peer.counts[c].extra}" if peer.counts[c].extra else "")
                    + ")"
                    for c in COUNTS
                ],
            ]
        )
    print_table(
        "Dominance: the least r such that sharpdp, selections held to the peer's η and each "
        "count query at its own share, gives every count ≤ r × the peer's E|err| within "
        "(1, 1e-6)",
        ["peer", "r", *COUNTS],
        rows,
    )
    dominated = worst_r <= TARGET_RATIO
    return (
        verdict
        + f"\nVerdict by dominance (shares free): r ≤ {worst_r:.3f} against every peer (worst: "
        f"{worst_peer}): the target is {'MET' if dominated else 'NOT met'} in this sense — "
        "sharpdp can release every count with at most that fraction of the peer's expected "
        "error, and no selection less accurate, under the same (1, 1e-6)."
    )


def ratios_at(queries: list[DemoQuery], t: float, best: dict[str, System]) -> dict[str, float]:
    """Each count's E|err| with its discrete Laplace at scale t (the demo's pure-ε share), over
    the best peer's for that count."""
    out = {}
    labels = {"count": COUNTS[0], "mean": COUNTS[1], "partition": COUNTS[2]}
    for q in queries:
        if q.kind in labels:
            label = labels[q.kind]
            share = t * q.epsilon / (2.0 if q.kind == "mean" else 1.0)
            out[label] = e_abs_discrete_laplace(q.l1 / share) / best[label].counts[label].e_abs
    return out


def main() -> None:
    import argparse

    argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0]).parse_args()
    import importlib.util

    missing = [m for m in ("opendp", "dp_accounting") if importlib.util.find_spec(m) is None]
    if missing:  # (checked first: the run takes a minute before it needs them)
        raise SystemExit(
            f"demo_utility: {', '.join(missing)} not installed; the peers' privacy numbers come "
            "from their own code: pip install -e '.[bench]'"
        )
    start = time.perf_counter()
    print(f"# sharpdp demo utility benchmark — {time.strftime('%Y-%m-%d %H:%M')}, {load_note()}")
    print(f"# {check_formulas()}")
    flights = sdp.data.datasets.flights()
    queries = demo_queries(flights.dropna(subset=["tailnum"]))
    shares = "; ".join(
        f"{q.label}: {q.kwargs['privacy']!r} (≤ {q.m} row(s)/key, {q.copies} key(s) or group(s) "
        f"per aircraft" + (f", {q.rounds} rounds" if q.kind == "top_k" else "") + ")"
        for q in queries
    )
    print(f"# the demo's queries (read from src/sharpdp/cli/demo.py): {shares}")
    print(
        "# each system gives query i the privacy t·ε_i (δ_i kept) and composes the five with its "
        "own accounting within (ε, δ) = (1, 1e-6); t is the largest scale that fits"
    )

    systems: list[System] = []
    session = sharpdp_session()
    sharp, check = run_sharpdp(queries, session)
    systems.append(sharp)
    print(f"# sharpdp: t = {sharp.t:.4f}", file=sys.stderr, flush=True)
    systems.append(run_zcdp(OpenDPRules(), queries))
    systems.append(run_zcdp(TumultRules(), queries))
    systems.append(run_basic(queries, tumult=True))
    systems.append(run_basic(queries))
    systems.append(run_pld(queries))
    for s in systems:
        s.missing = MISSING[s.name]

    print_table(
        "Budget scale reached (t: every query gets t·ε_i; composed ε at δ = 1e-6 by the "
        "system's own accounting)",
        ["system", "accounting", "t", "ε at δ=1e-6", "cannot run natively"],
        [[s.name, s.accounting, f"{s.t:.4f}", f"{s.epsilon:.5f}", s.missing] for s in systems],
    )
    print(f"\n{check}.")
    print_table(
        "Per-query privacy and mechanism at t",
        ["system", *[q.label for q in queries]],
        [[s.name, *s.per_query] for s in systems],
    )

    peers = systems[1:]
    lines = []
    for s in systems:
        lines.append(
            [
                s.name,
                *[
                    f"{s.counts[c].e_abs:,.2f} ({s.counts[c].law}"
                    + (f"; {s.counts[c].extra}" if s.counts[c].extra else "")
                    + ")"
                    for c in COUNTS
                ],
            ]
        )
    best = {c: min(peers, key=lambda p, c=c: p.counts[c].e_abs) for c in COUNTS}
    ratios = {c: sharp.counts[c].e_abs / best[c].counts[c].e_abs for c in COUNTS}
    lines.append(["**best peer**", *[f"{best[c].name}" for c in COUNTS]])
    lines.append(["**sharpdp / best peer**", *[f"**{ratios[c]:.3f}**" for c in COUNTS]])
    lines.append(
        [
            f"target ≤ {TARGET_RATIO}",
            *["met" if ratios[c] <= TARGET_RATIO else "NOT met" for c in COUNTS],
        ]
    )
    print_table(
        "Expected absolute error per released count, E|noise| (noise law at t)",
        ["system", *COUNTS],
        lines,
    )
    met = all(r <= TARGET_RATIO for r in ratios.values())
    print(
        f"\nVerdict: the target (every count's E|err| ≤ {TARGET_RATIO}× the best peer's) is "
        f"{'MET' if met else 'NOT met'}: ratios "
        + ", ".join(f"{c} {ratios[c]:.3f}" for c in COUNTS)
        + f". sharpdp's t = {sharp.t:.4f} vs the best peer's t = "
        f"{max(p.t for p in peers):.4f} ({max(peers, key=lambda p: p.t).name})."
    )
    matched_verdict = matched_comparison(queries, session, peers)
    t_max = ceiling(queries)
    floor = ratios_at(queries, t_max, best)
    print(
        f"\nCeiling: with both selections free and the routes' threshold δ ignored, the count "
        f"queries' own discrete-Laplace noise (the demo's pure-ε shares; exact PLDs by "
        f"dp_accounting, optimistic discretisation) composes to (1, 1e-6) at t = {t_max:.4f}: "
        "no valid accounting of these count mechanisms at the demo's relative shares reaches a "
        "larger t, so sharpdp's count ratios can be no better than "
        + ", ".join(f"{c} {floor[c]:.3f}" for c in COUNTS)
        + " against the best peers above."
    )
    t_low, at_sharp = scaled_alike_bound(queries, session, sharp.t)
    bound = ratios_at(queries, t_low, best)
    reachable = all(r <= TARGET_RATIO for r in bound.values())
    print(
        f"\nLower bound, every query scaled alike: a lower bound on the demo's composition at "
        f"scale t (exact PLDs with the optimistic discretisation of the count mechanisms, and of "
        f"the top-k's rounds and the median as two-outcome η-BR pairs at the η sharpdp "
        f"calibrates for their targets at t; the routes' threshold δ ignored) reads ε = "
        f"{at_sharp:.4f} at sharpdp's t = {sharp.t:.4f}, and reaches 1 at t = {t_low:.4f}. No "
        "accounting that treats the selections' rounds as bounded range can give every query "
        "a larger scale, so with every query scaled alike the count ratios can be no better than "
        + ", ".join(f"{c} {bound[c]:.3f}" for c in COUNTS)
        + f" against the best peers above: the ≤ {TARGET_RATIO} target is "
        + ("not excluded by this bound." if reachable else "out of reach of any such accounting.")
    )
    print(
        "\nNotes: δ_i are kept fixed as t scales (1e-7 for the top-k's calibration and the "
        "routes' threshold); the zCDP peers' counts use the Gaussian of the same ρ as the "
        "pure-ε Laplace the query asks for (same cost in their accountant), whereas sharpdp is "
        "held to the demo's targets (PureDP ⇒ discrete Laplace; unknown keys ⇒ discrete Laplace "
        "on the pure part). A mean's sum noise is not a count and is not compared."
    )
    print(f"\n{matched_verdict}")
    print(f"\n# done in {time.perf_counter() - start:.1f} s — {load_note()}")


if __name__ == "__main__":
    main()
