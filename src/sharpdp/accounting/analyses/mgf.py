"""The ``mgf`` analysis: certified numerical inversion of a composed privacy loss's moment
generating function (exact composition of Laplace, Gaussian, randomized response and (ε0, δ0)-DP
items).

For a composition with loss L = Σ L_i (independent, each L_i from a dominating pair; laws under P),
the privacy profile is δ(ε) = P[L = ∞] + E[(1 − e^{ε − L})_+; L < ∞]. For any tilt a > 0 write
K(a) = Σ log E[e^{a L_i}; L_i < ∞] and ν_a for the finite part of the law tilted by e^{aL} and
normalised. Then, with G(l) = (1 − e^{ε − l})_+ e^{−a l},

    δ(ε) − P[L = ∞] = e^{K(a)} ∫ G dν_a = e^{K(a) − aε} (1/2π) ∫ Ĝ(ω) φ(ω) dω,

where φ(ω) = Π φ_i(ω) is the characteristic function of ν_a (a product over the items, known in
closed form for Gaussian, Laplace and finite pairs) and e^{−aε}Ĝ(ω) = ∫ G(l) e^{−iωl} dl with
Ĝ(ω) = 1/((a + iω)(a + 1 + iω)) [Parseval; the characteristic-function view of PLD accounting is
Zhu–Dong–Wang 2022, arXiv 2106.08567].

**The trapezoid rule errs only upwards.** With step Δω = 2π/T, Poisson summation gives
(Δω/2π) Σ_n Ĝ(nΔω) φ(nΔω) = ∫ Σ_j G(l + jT) dν_a(l) ≥ ∫ G dν_a, because G ≥ 0: the rule computes
the expectation of the T-periodised G, whose extra terms are non-negative (the aliasing identity
behind Fourier-series inversion, Abate–Whitt 1992). T is chosen by Chernoff bounds so that the
excess is negligible, but no bound on it is needed for validity.

**Truncation.** The terms with |n| > N are bounded by |Ĝ(ω)| ≤ 1/ω² and an envelope
Φ(ω) ≥ sup_{ω′ ≥ ω} |φ(ω′)| (a product of per-pair envelopes; a density part makes them < 1, a
Gaussian makes them vanish): Σ_{n>N} ≤ Φ((N + 1)Δω)/(Δω² N). Laws that are almost purely atomic
do not decay; N is then too large and the inversion declines (:class:`NotImplied`).

**Rounding.** Each factor φ_i comes with an absolute error bound e_i (see
:meth:`~sharpdp.accounting.pld.pairs.DominatingPair.tilted_cf`); a product of powers then errs by at most
Π(|φ̃_i| + 2e_i)^{c_i} − Π(|φ̃_i| − e_i)_+^{c_i}, and exp/sum roundings are bounded by standard
error analysis (a few ulps per operation, with generous factors). All bounds are added to the
upper value and subtracted from the lower one, so :meth:`Inversion.delta_bracket` brackets the
exact δ(ε) of the composition, and the upper end is reported.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
    all_gaussian,
    exact_mass_at_infinity,
    is_gaussian,
    mass_at_infinity_with,
)
from sharpdp.accounting.pld.pairs import (
    BoundedRangePair,
    DominatingPair,
    FinitePair,
    LaplacePair,
    br_cf_envelopes,
    br_log_mgfs,
    br_tilted_cfs,
    finite_log_mgfs,
    finite_tilted_cfs,
    laplace_log_mgfs,
    laplace_tilted_cfs,
)
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied, NumericalError
from sharpdp.guarantees import ApproxDP, Guarantee

FloatArray = npt.NDArray[np.float64]
ComplexArray = npt.NDArray[np.complex128]

U = 2.0**-53
#: Relative accuracy (in δ) to which the inversion is carried out.
DEFAULT_TOLERANCE = 1e-11
#: Most trapezoid nodes evaluated for one δ(ε); beyond, the inversion declines.
MAX_NODES = 1 << 16
#: Largest finite |loss| of a pair the inversion accepts.
_MAX_LOSS = 1e6
#: Most leading terms (in the number of density factors) summed in closed form for one Laplace
#: group whose law is too atomic to invert whole.
_MAX_SPLIT = 4
#: log of a Chernoff bound e^{K(a) − aε} below which δ's finite part is that bound (< 1e-304).
_NEGLIGIBLE = -700.0
#: The widest relative bracket with which the analysis answers by default (else it declines,
#: and the PLD runs); a composition sets a tenth of its own accuracy (``with_accuracy``), so that
#: superseding the PLD never breaks the promise exact ≤ value ≤ exact·(1 + accuracy).
_ANSWER_RTOL = 1e-7

#: Most entries of the phase matrix e^{−iωε} that :meth:`Inversion.delta_uppers` forms at once.
_PHASE_ENTRIES = 1 << 20

#: Where :meth:`_InversionGuarantee.delta_bounds` makes plans, as quantiles of the points asked.
_BOUND_ANCHORS = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875)

#: Relative precision of ε(δ) (far below the inversion's own accuracy in δ).
_EPS_RTOL = 1e-12
#: A root search re-plans when ε moves by more than this (relative) from the planned ε.
_REPLAN = 5e-2
#: A plan with at most this many nodes is taken without trying further splits.
_SMALL_PLAN = 2048


def invertible(items: tuple[tuple[DominatingPair, int], ...]) -> bool:
    """Whether every pair has a closed-form characteristic function and some part of the law
    is not atomic (a density, whose characteristic function decays)."""
    if not items:
        return False
    probe = np.array([1.0])
    decays = False
    for pair, _ in items:
        if not pair.loss_bound() <= _MAX_LOSS:
            return False  # not private in any useful sense; e^{a·loss} would leave the floats
        if pair.tilted_cf(0.5, probe) is None:
            return False
        decays = decays or pair.cf_envelope(0.5, math.inf) < 1.0
    return decays


@dataclass(frozen=True)
class _Plan:
    """One δ(ε) evaluation: the tilt a, K(a), the period T and the number of nodes N."""

    a: float
    k_a: float  # K(a), as computed
    period: float
    nodes: int


class Inversion:
    """δ(ε) and ε(δ) of a composition by certified inversion of its moment generating function.

    Args:
        items: ``((pair, count), ...)``; every pair must have a closed-form
            :meth:`~sharpdp.accounting.pld.pairs.DominatingPair.tilted_cf`.
        tolerance: relative accuracy aimed at for δ (the bracket's width is certified anyway).
    """

    #: Most trapezoid nodes of one plan (:data:`MAX_NODES`; subclasses may allow more).
    max_nodes: int = MAX_NODES

    def __init__(
        self, items: tuple[tuple[DominatingPair, int], ...], tolerance: float = DEFAULT_TOLERANCE
    ) -> None:
        if not invertible(items):
            raise NotImplied(
                "the inversion needs closed-form characteristic functions and a density part"
            )
        from sharpdp.accounting.pld.composition import _merge_gaussians

        # μ-GDP pairs compose exactly (Dong–Roth–Su 2019 Cor 3.3): one group, μ rounded up
        self.items = _merge_gaussians(items, up=True)
        self.tolerance = tolerance
        p_fin = sum(c * math.log1p(-p.inf_mass) for p, c in self.items if p.inf_mass > 0.0)
        # P[L = ∞] = 1 − Π(1 − p_i)^{c_i}, rounded up (exactly so for a few δ parts: a lone δ
        # is itself) and down for the lower bracket end
        deltas = [(p.inf_mass, c) for p, c in self.items]
        exact = exact_mass_at_infinity(deltas)
        self.inf_mass_hi = mass_at_infinity_with(exact, deltas)
        #: whether inf_mass_hi is the mass at infinity itself (not only a bound on it)
        self.inf_mass_exact = exact is not None and Fraction(self.inf_mass_hi) == exact
        self.inf_mass_lo = max(0.0, -math.expm1(p_fin) * (1.0 - 1e-13))
        self.slack = sum(c * p.mgf_slack() for p, c in self.items)
        self._phi_cache: dict[tuple[int, _Plan], tuple[ComplexArray, FloatArray]] = {}
        # φ on the nodes of the plans that :meth:`delta_uppers` evaluated, and those plans
        self._bound_phi: dict[tuple[int, _Plan], tuple[ComplexArray, FloatArray]] = {}
        # the plans that certified the ε(δ) answers (any plan gives a valid bound at any ε):
        # δ(ε) at such an ε also tries its plan, so that δ(ε(δ)) ≤ δ exactly
        self._plans: dict[float, tuple[int, _Plan]] = {}
        # the largest finite loss, Σ c·(each pair's), summed exactly and rounded up: from it on,
        # δ(ε) is the mass at infinity alone
        finite = all(p.gdp_mu() is None for p, _ in self.items)
        self.max_loss = (
            _math.float_up(sum((c * Fraction(p.loss_bound()) for p, c in self.items), Fraction(0)))
            if finite
            else math.inf
        )

    # -- the cumulant generating function ------------------------------------------------------

    def _k(self, a: FloatArray) -> FloatArray:
        """K(a) = Σ c·log-MGF(a), summed in the items' order. The Laplace items' terms come from
        one vectorised call (:func:`~sharpdp.accounting.pld.pairs.laplace_log_mgfs`, of which
        :meth:`LaplacePair.log_mgf` is the one-row case: the same values as computed per pair)."""
        out = np.zeros_like(a)
        for row, (_, c) in zip(self._k_rows(a), self.items, strict=True):
            out += c * row
        return out

    def _k_abs(self, a: float) -> float:
        """Σ c |log-MGF| at a (scales the rounding error of K(a))."""
        rows = self._k_rows(np.array([a]))
        return float(
            sum(c * abs(float(row[0])) for row, (_, c) in zip(rows, self.items, strict=True))
        )

    def _k_rows(self, a: FloatArray) -> list[FloatArray]:
        """Each item's log-MGF at ``a`` (the Laplace items' from one vectorised call)."""
        laplace = [i for i, (p, _) in enumerate(self.items) if type(p) is LaplacePair]
        rows: dict[int, FloatArray] = {}
        if laplace:
            eps0 = np.array([cast(LaplacePair, self.items[i][0]).epsilon0 for i in laplace])
            values = laplace_log_mgfs(eps0, np.asarray(a, dtype=np.float64).reshape(-1))
            rows = {i: values[j].reshape(np.shape(a)) for j, i in enumerate(laplace)}
        bounded = [i for i, (p, _) in enumerate(self.items) if type(p) is BoundedRangePair]
        if len(bounded) > 1:
            etas = np.array([cast(BoundedRangePair, self.items[i][0]).eta for i in bounded])
            values = br_log_mgfs(etas, np.asarray(a, dtype=np.float64).reshape(-1))
            rows.update({i: values[j].reshape(np.shape(a)) for j, i in enumerate(bounded)})
        finite = [i for i, (p, _) in enumerate(self.items) if _small_finite(p)]
        if len(finite) > 1:
            pairs = [cast(FinitePair, self.items[i][0]) for i in finite]
            values = finite_log_mgfs(pairs, np.asarray(a, dtype=np.float64).reshape(-1))
            rows.update({i: values[j].reshape(np.shape(a)) for j, i in enumerate(finite)})
        return [rows[i] if i in rows else p.log_mgf(a) for i, (p, _) in enumerate(self.items)]

    def _saddle(self, epsilon: float) -> tuple[float, float, float]:
        """(a, K(a), K''(a)) minimising K(a) − aε − log(a(a + 1)) (a convex function), found on
        nested logarithmic grids. Any a > 0 gives a valid bound; this one makes it cheap."""
        lo, hi = -8.0, 6.0
        best = 0.0
        for _ in range(3):
            la = np.linspace(lo, hi, 57)
            a = np.exp(la)
            with np.errstate(over="ignore", invalid="ignore"):
                f = self._k(a) - a * epsilon - np.log(a) - np.log1p(a)
            f = np.where(np.isfinite(f), f, np.inf)
            i = int(np.argmin(f))
            if not math.isfinite(float(f[i])):
                raise NumericalError(f"no finite saddle point at ε = {epsilon!r}")
            best = float(a[i])
            step = la[1] - la[0]
            lo, hi = la[i] - step, la[i] + step
        eta = 1e-3
        kk = self._k(np.array([best * (1 - eta), best, best * (1 + eta)]))
        k2 = float((kk[0] - 2 * kk[1] + kk[2]) / (best * eta) ** 2)
        return best, float(kk[1]), max(k2, 1e-300)

    # -- one evaluation -----------------------------------------------------------------------

    def _plan_any(self, epsilon: float) -> tuple[int, _Plan]:
        """The plan for the whole law, or (one Laplace group only) the cheapest plan for its part
        with at least r0 density factors, the rest being summed in closed form (r0 = 1..4)."""
        saddle = self._saddle(epsilon)
        first = self.items[0][0]
        # the closed form's e^{±s/2} over s ∈ (−rε0, rε0) must stay in the float range
        split = len(self.items) == 1 and isinstance(first, LaplacePair) and first.epsilon0 < 100.0
        best: tuple[int, _Plan] | None = None
        for r0 in range(_MAX_SPLIT + 1 if split else 1):
            if r0 > self.items[0][1]:
                return r0, _Plan(saddle[0], saddle[1], 1.0, 1)  # all in closed form
            try:
                plan = self._plan(epsilon, saddle, r0)
            except NotImplied:
                if r0 == _MAX_SPLIT or not split:
                    if best is not None:
                        return best
                    raise
                continue
            if best is None or plan.nodes < best[1].nodes:
                best = (r0, plan)
            if plan.nodes <= _SMALL_PLAN:
                break
        assert best is not None
        return best

    def _plan(self, epsilon: float, saddle: tuple[float, float, float], r0: int) -> _Plan:
        a, k_a, k2 = saddle
        if k_a - a * epsilon < _NEGLIGIBLE:
            return _Plan(a, k_a, 1.0, 1)  # answered by Chernoff in _evaluate
        scale = 1.0 / (a * (a + 1.0) * math.sqrt(2.0 * math.pi * k2))
        log_target = k_a - a * epsilon + math.log(scale) + math.log(1e-3 * self.tolerance)
        # aliasing from below: Σ_j e^{−ajT} ≤ 2e^{−aT}; from above: Σ_j e^{ajT} δ(ε + jT) ≤
        # 2e^{K(θ) − θε − (θ − a)T} (Chernoff, θ > a). Both are pushed under tol·δ/1000.
        period = 16.0 * math.sqrt(k2)
        period = max(period, (math.log(2.0) - log_target) / a)
        thetas = a * np.array([1.25, 1.5, 2.0, 3.0, 5.0])
        with np.errstate(over="ignore", invalid="ignore"):
            kt = self._k(thetas)
        need = (kt - thetas * epsilon + math.log(2.0) - log_target) / (thetas - a)
        need = need[np.isfinite(need)]
        if need.size:
            period = max(period, float(need.min()))
        d_omega = 2.0 * math.pi / period
        # truncation: Φ((N+1)Δω)/(π Δω N) ≤ tol·scale/100 (in units of e^{K(a) − aε})
        goal = 1e-2 * self.tolerance * scale * math.pi * d_omega
        n = max(16, int(math.sqrt(2.0 * math.log(1e3 / self.tolerance) / k2) / d_omega) + 1)

        def enough(m: int) -> bool:
            return self._envelope(a, (m + 1) * d_omega, r0) / m <= goal

        if not enough(self.max_nodes):
            raise NotImplied(
                "the loss law is too close to atomic for the inversion (its characteristic "
                f"function does not decay within {self.max_nodes} nodes)"
            )
        lo = n // 2
        while not enough(n):
            lo = n
            n *= 2
            if n > self.max_nodes:
                raise NotImplied(
                    "the loss law is too close to atomic for the inversion (its characteristic "
                    f"function does not decay within {self.max_nodes} nodes)"
                )
        while n - lo > max(16, n // 16):  # the bound is decreasing in N: bisect (to ~6%)
            mid = (lo + n) // 2
            if enough(mid):
                n = mid
            else:
                lo = mid
        return _Plan(a, k_a, period, n)

    def _envelope(self, a: float, omega: float, r0: int = 0) -> float:
        """A bound on |φ(ω′)| for all ω′ ≥ ω (of the r ≥ r0 part when r0 > 0)."""
        if r0 > 0:
            pair, count = self.items[0]
            assert isinstance(pair, LaplacePair)
            atoms, dens = pair.density_envelope(a, omega)
            return float(_binomial_tail(count, r0, np.array([atoms]), np.array([dens]))[0])
        log_env = _log_envelope(self.items, a, omega)
        return math.exp(log_env) if log_env < 700.0 else math.inf

    def delta_bracket(self, epsilon: float) -> tuple[float, float]:
        """(lower, upper) bounds on the exact δ(ε) of the composition (ε ≥ 0).

        Any tilt and nodes give valid bounds, so besides the plan made for ε, the plan that
        certified an earlier ε(δ) answer near ε is evaluated too (the best ends are kept): the
        answers then agree (δ(ε(δ)) ≤ δ), and δ is answered wherever ε was, even where the plan
        made for ε alone would decline (a loss law close to atomic)."""
        brackets = []
        declined: NotImplied | None = None
        try:
            brackets.append(self._evaluate(epsilon)[:2])
        except NotImplied as err:
            declined = err
        if self._plans:
            near = min(self._plans, key=lambda e: abs(e - epsilon))
            if abs(near - epsilon) <= _REPLAN * max(near, 1.0):
                with contextlib.suppress(NotImplied, NumericalError):
                    brackets.append(self._evaluate(epsilon, self._plans[near])[:2])
        if not brackets:
            assert declined is not None
            raise declined
        return max(b[0] for b in brackets), min(b[1] for b in brackets)

    def _phi(self, a: float, om: FloatArray, r0: int) -> tuple[ComplexArray, FloatArray]:
        """φ(ω) of ν_a (or of its part with r ≥ r0 density factors, see :func:`_split_terms`)
        and a bound on the error of the computed values."""
        if r0 > 0:
            pair, count = self.items[0]
            assert isinstance(pair, LaplacePair)
            return _split_terms(pair, count, r0, a, om)
        return _finish(_log_cf_terms(self.items, a, om), len(self.items))

    def _evaluate(
        self, epsilon: float, planned: tuple[int, _Plan] | None = None
    ) -> tuple[float, float, float]:
        """(lower, upper, a): the bracket and the tilt used (d log δ/dε ≈ −a).

        ``planned`` reuses the plan made for a nearby ε (any tilt and nodes give valid bounds;
        the plan only makes them sharp and cheap), so φ on its nodes is computed once.
        """
        if epsilon >= self.max_loss:
            return self.inf_mass_lo, self.inf_mass_hi, math.inf
        r0, plan = planned if planned is not None else self._plan_any(epsilon)
        a = plan.a
        k_err = 16.0 * U * (self._k_abs(a) + a * epsilon + 4.0) + self.slack
        log_pre = plan.k_a - a * epsilon
        if log_pre < _NEGLIGIBLE:
            # far in the tail: Chernoff, (1 − e^{ε−l})_+ ≤ e^{a(l−ε)}, so the finite part is at
            # most e^{K(a) − aε} (< 1e-304; never reported as 0: at least the least float)
            chernoff = max(math.exp(log_pre + k_err), 5e-324)
            return self.inf_mass_lo, min(1.0, self.inf_mass_hi + chernoff), a
        closed, closed_err = 0.0, 0.0
        if r0 > 0:
            pair, count = self.items[0]
            assert isinstance(pair, LaplacePair)
            closed, closed_err = _lattice_spline_delta(pair.epsilon0, count, r0, epsilon)
            if r0 > count:  # every term is in closed form
                lo = max(0.0, closed - closed_err)
                return lo, min(1.0, closed + closed_err), a
        d_omega = 2.0 * math.pi / plan.period
        om = d_omega * np.arange(plan.nodes + 1, dtype=np.float64)
        key = (r0, plan)
        if key not in self._phi_cache:
            self._phi_cache.clear()  # one plan at a time: that of the current root search
            self._phi_cache[key] = self._phi(a, om, r0)
        phi, phi_err = self._phi_cache[key]
        g_hat = 1.0 / ((a + 1j * om) * (a + 1.0 + 1j * om))
        g_abs = np.abs(g_hat)
        terms = g_hat * phi * np.exp(-1j * om * epsilon)
        mag_terms = np.abs(terms)
        # the phase ωε is rounded to ~u·ωε; Ĝ and the products add a few ulps
        err_terms = g_abs * phi_err + mag_terms * 8.0 * U * (4.0 + om * (epsilon + 2.0 * a + 2.0))
        w = d_omega / (2.0 * math.pi)
        total = w * (terms[0].real + 2.0 * float(np.sum(terms[1:].real)))
        rounding = w * (
            2.0 * float(np.sum(err_terms)) + 4.0 * (om.size + 2) * U * float(np.sum(mag_terms))
        )
        tail = self._envelope(a, (plan.nodes + 1) * d_omega, r0) / (math.pi * d_omega * plan.nodes)
        tail *= 1.0 + 1e-9
        if not (math.isfinite(total) and math.isfinite(rounding)):
            raise NumericalError(f"the inversion at ε = {epsilon!r} is not finite (a bug)")
        upper = self.inf_mass_hi + closed + closed_err
        upper += math.exp(log_pre + k_err) * (total + tail + rounding)
        # the periodisation's excess (for the lower end only), by the Chernoff bounds of _plan
        alias = 2.0 * math.exp(-a * plan.period - log_pre)
        thetas = a * np.array([1.25, 1.5, 2.0, 3.0, 5.0])
        with np.errstate(over="ignore", invalid="ignore"):
            kt = self._k(thetas) - thetas * epsilon - (thetas - a) * plan.period - log_pre
        kt = kt[np.isfinite(kt)]
        alias += 2.0 * math.exp(min(float(kt.min()), 700.0)) if kt.size else math.inf
        core_lo = total - tail - rounding - alias
        lower = self.inf_mass_lo + max(0.0, closed - closed_err)
        if core_lo > 0.0:  # (a negative core would only overflow the product: no lower end)
            lower += math.exp(log_pre - k_err - self.slack) * float(core_lo)
        return lower, min(1.0, upper * (1.0 + 4.0 * U)), a

    def delta_uppers(self, epsilons: FloatArray, planned: tuple[int, _Plan]) -> FloatArray:
        """The upper end of :meth:`_evaluate` at every ε ≥ 0 of ``epsilons`` with one plan.

        Any tilt and nodes give a valid upper bound at every ε (the periodisation errs upwards,
        and the truncation and rounding bounds hold at each ε), so φ is computed once on the
        plan's nodes and the sum Σ Ĝ(ω)φ(ω)e^{−iωε} is formed for all ε at once: cheap, and as
        sharp as :meth:`delta` near the ε the plan was made for, looser far from it. The terms
        are those of :meth:`_evaluate`; the one change is that |Ĝφe^{−iωε}| is taken as
        |Ĝφ|·(1 + 4u), which bounds every computed phase factor's modulus."""
        eps = np.asarray(epsilons, dtype=np.float64).ravel()
        r0, plan = planned
        a = plan.a
        out = np.ones(eps.size)
        k_abs = self._k_abs(a)
        k_err = 16.0 * U * (k_abs + a * eps + 4.0) + self.slack
        log_pre = plan.k_a - a * eps
        beyond = eps >= self.max_loss
        chernoff = log_pre < _NEGLIGIBLE
        with np.errstate(over="ignore", under="ignore"):
            far = np.maximum(np.exp(np.minimum(log_pre + k_err, 700.0)), 5e-324)
        out = np.where(chernoff, np.minimum(1.0, self.inf_mass_hi + far), out)
        out = np.where(beyond, self.inf_mass_hi, out)
        live = np.flatnonzero(~beyond & ~chernoff)
        if live.size == 0:
            return out
        closed = np.zeros(live.size)
        if r0 > 0:
            pair, count = self.items[0]
            assert isinstance(pair, LaplacePair)
            parts = [_lattice_spline_delta(pair.epsilon0, count, r0, float(e)) for e in eps[live]]
            closed = np.array([c + err for c, err in parts])
            if r0 > count:  # every term is in closed form
                out[live] = np.minimum(1.0, closed)
                return out
        d_omega = 2.0 * math.pi / plan.period
        om = d_omega * np.arange(plan.nodes + 1, dtype=np.float64)
        if planned not in self._bound_phi:  # (the few plans of the bounds, kept apart)
            if len(self._bound_phi) >= 16:
                self._bound_phi.pop(next(iter(self._bound_phi)))
            self._bound_phi[planned] = self._phi(a, om, r0)
        phi, phi_err = self._bound_phi[planned]
        g_hat = 1.0 / ((a + 1j * om) * (a + 1.0 + 1j * om))
        g_abs = np.abs(g_hat)
        coef = g_hat * phi
        mag = np.abs(coef) * (1.0 + 4.0 * U)
        w = d_omega / (2.0 * math.pi)
        # Σ err_terms = Σ g_abs·φ_err + 8u Σ mag·(4 + ω(2a + 2)) + 8u·ε Σ mag·ω (linear in ε)
        err_fixed = float(np.sum(g_abs * phi_err)) + 8.0 * U * float(
            np.sum(mag * (4.0 + om * (2.0 * a + 2.0)))
        )
        err_slope = 8.0 * U * float(np.sum(mag * om))
        mag_sum = float(np.sum(mag))
        weights = np.full(om.size, 2.0)
        weights[0] = 1.0
        totals = np.empty(live.size)
        rows = max(1, _PHASE_ENTRIES // om.size)  # ε per block: the phase matrix stays small
        for start in range(0, live.size, rows):
            block = eps[live[start : start + rows]]
            phase = np.exp(-1j * np.outer(block, om))
            totals[start : start + rows] = w * ((phase * coef).real @ weights)
        at = eps[live]
        rounding = w * (2.0 * (err_fixed + err_slope * at) + 4.0 * (om.size + 2) * U * mag_sum)
        tail = self._envelope(a, (plan.nodes + 1) * d_omega, r0) / (math.pi * d_omega * plan.nodes)
        tail *= 1.0 + 1e-9
        with np.errstate(over="ignore", invalid="ignore"):
            upper = self.inf_mass_hi + closed
            upper = upper + np.exp(log_pre[live] + k_err[live]) * (totals + tail + rounding)
            upper = np.minimum(1.0, upper * (1.0 + 4.0 * U))
        out[live] = np.where(np.isfinite(upper), upper, 1.0)
        return out

    def delta(self, epsilon: float) -> float:
        """A certified upper bound on δ(ε), within about the tolerance of the exact value."""
        return self.delta_bracket(epsilon)[1]

    def epsilon(self, delta: float, start: float | None = None) -> float:
        """A certified ε with δ(ε) ≤ ``delta``: the root of the upper bound, found by Newton
        steps on log δ (d log δ/dε ≈ −a at the saddle point), then checked. The steps start at
        ``start`` if given (a better guess saves re-planning), else at a saddle-point estimate."""
        if delta <= self.inf_mass_hi:
            raise NotImplied(
                f"δ = {delta!r} is not above the mass at infinity {self.inf_mass_hi!r}"
            )
        if delta >= 1.0:
            return 0.0
        target = math.log(delta - self.inf_mass_hi)
        # Newton steps on the upper bound, kept inside a bracket [lo, hi] (δ_hi(lo) > δ ≥ δ_hi(hi))
        lo, hi = 0.0, self.max_loss
        eps = min(self._guess(delta) if start is None else max(start, 0.0), hi)
        prev: tuple[float, float] | None = None
        planned: tuple[int, _Plan] | None = None
        hi_plan: tuple[int, _Plan] | None = None
        planned_at = math.nan
        for _ in range(80):
            if planned is None or abs(eps - planned_at) > _REPLAN * max(eps, 1.0):
                planned, planned_at = self._plan_any(eps), eps
            _, upper, a = self._evaluate(eps, planned)
            if upper <= delta:
                hi, hi_plan = eps, planned
                if eps == 0.0:
                    return 0.0
            else:
                lo = eps
            excess = upper - self.inf_mass_hi
            if excess > 0.0 and a < math.inf:
                log_ex = math.log(excess)
                slope = -a  # the saddle point's estimate of d log δ/dε, then secants
                if prev is not None and prev[0] != eps:
                    secant = (log_ex - prev[1]) / (eps - prev[0])
                    if secant < 0.0:
                        slope = secant
                step = (target - log_ex) / slope
                prev = (eps, log_ex)
            else:
                step = -math.inf
            if upper <= delta and -step <= _EPS_RTOL * max(eps, 1.0):
                # certified; a step down would gain nothing visible
                return self._settle(eps, planned, planned_at, delta)
            new = eps + step
            if upper > delta and step <= _EPS_RTOL * max(eps, 1.0):
                new = eps + 2.0 * _EPS_RTOL * max(eps, 1.0)  # just below the root: step past it
            if not lo < new < hi:  # Newton left the bracket: bisect
                new = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * max(eps, 1.0)
            if hi - lo <= _EPS_RTOL * max(hi, 1.0) and math.isfinite(hi):
                if hi_plan is None:  # hi is the largest finite loss: δ(hi) is the mass at ∞
                    return hi
                return self._settle(hi, hi_plan, math.nan, delta)
            eps = new
        raise NumericalError(f"the inversion did not certify an ε at δ = {delta!r}")

    def _settle(
        self, eps: float, plan: tuple[int, _Plan], planned_at: float, delta: float
    ) -> float:
        """The certified ``eps``, raised by a few relative 1e-13 if need be so that the plan a
        fresh composition makes at ``eps`` (:meth:`delta_bracket`) certifies it too: any plan gives
        a valid bound, but two plans' bounds differ by rounding, and δ(ε(δ)) ≤ δ should not depend
        on which composition object answers. (A raise lowers δ by about a·ε·1e-13 relative, far
        more than that rounding; after 8 tries the plan's own certificate is kept.)"""
        self._remember(eps, plan)
        if planned_at == eps:
            return eps
        step = 1e-13 * max(eps, 1e-300)
        for _ in range(8):
            try:
                upper = self._evaluate(eps)[1]
            except (NotImplied, NumericalError):
                return eps
            if upper <= delta:
                return eps
            # (any plan gives a valid bound: the one that certified eps is kept as a hint)
            eps += step
            step *= 4.0
            self._remember(eps, plan)
        return eps

    def _remember(self, eps: float, plan: tuple[int, _Plan] | None) -> None:
        if plan is not None:
            if len(self._plans) >= 64:
                self._plans.pop(next(iter(self._plans)))
            self._plans[eps] = plan

    def _guess(self, delta: float) -> float:
        """ε where the saddle-point estimate of δ first reaches ``delta`` (scan over a grid of a)."""
        la = np.linspace(-8.0, 6.0, 141)
        a = np.exp(la)
        eta = 1e-4
        with np.errstate(over="ignore", invalid="ignore"):
            k0 = self._k(a)
            kp = self._k(a * (1 + eta))
            km = self._k(a * (1 - eta))
        d1 = (kp - km) / (2 * a * eta)
        d2 = np.maximum((kp - 2 * k0 + km) / (a * eta) ** 2, 1e-300)
        eps = d1 - 1.0 / a - 1.0 / (a + 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            log_d = k0 - a * eps - np.log(a * (a + 1.0)) - 0.5 * np.log(2 * math.pi * d2)
        target = math.log(delta - self.inf_mass_hi)
        ok = np.isfinite(log_d) & np.isfinite(eps) & (eps >= 0.0)
        below = np.nonzero(ok & (log_d <= target))[0]
        if below.size == 0:
            return max(0.0, float(np.nanmax(np.where(ok, eps, 0.0))))
        return max(0.0, float(eps[below[0]]))


def _log_envelope(items: Sequence[tuple[DominatingPair, int]], a: float, omega: float) -> float:
    """Σ c·log of the pairs' bounds on |φ_i(ω′)| for all ω′ ≥ ω (−inf when one vanishes)."""
    log_env = 0.0
    bounded = [(p, c) for p, c in items if type(p) is BoundedRangePair]
    if len(bounded) > 1:  # one vectorised evaluation (the same values as the method)
        etas = np.array([p.eta for p, _ in bounded])
        env = br_cf_envelopes(etas, a, omega)
        if np.any(env <= 0.0):
            return -math.inf
        log_env += float(np.dot([float(c) for _, c in bounded], np.log(env)))
        items = [(p, c) for p, c in items if type(p) is not BoundedRangePair]
    for p, c in items:
        e = p.cf_envelope(a, omega)
        if e <= 0.0:
            return -math.inf
        log_env += c * math.log(e)
    return log_env


def _log_cf_terms(
    items: tuple[tuple[DominatingPair, int], ...], a: float, om: FloatArray
) -> tuple[ComplexArray, FloatArray, FloatArray, FloatArray]:
    """Σ c·log φ_i(ω) of the tilted pairs, with what its error bound needs: Σ c·log(|φ̃_i| + 2e_i),
    Σ c·log(|φ̃_i| − e_i)_+ and Σ c·|log φ̃_i| (see :func:`_finish`).

    Every node is computed on its own, so large evaluations are split by nodes across
    :data:`_WORKERS` threads (numpy's array operations release the GIL)."""
    if _WORKERS > 1 and om.size * len(items) >= _PARALLEL_WORK and om.size >= 2 * _WORKERS:
        chunks = np.array_split(om, _WORKERS)
        parts = list(_pool().map(lambda chunk: _log_cf_terms_serial(items, a, chunk), chunks))
        log_phi = np.concatenate([part[0] for part in parts])
        return (
            log_phi,
            np.concatenate([part[1] for part in parts]),
            np.concatenate([part[2] for part in parts]),
            np.concatenate([part[3] for part in parts]),
        )
    return _log_cf_terms_serial(items, a, om)


#: Threads that share large characteristic-function evaluations (the machine's cores, up to 4).
_WORKERS = min(os.cpu_count() or 1, 4)
#: Nodes × pairs from which an evaluation is split across threads (below, threads cost more).
_PARALLEL_WORK = 1 << 17


@functools.cache
def _pool() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(_WORKERS, thread_name_prefix="sharpdp-cf")


def _log_cf_terms_serial(
    items: tuple[tuple[DominatingPair, int], ...], a: float, om: FloatArray
) -> tuple[ComplexArray, FloatArray, FloatArray, FloatArray]:
    """:func:`_log_cf_terms` in the calling thread."""
    log_phi = np.zeros(om.size, dtype=np.complex128)
    log_hi = np.zeros(om.size)
    log_lo = np.zeros(om.size)
    abs_log = np.zeros(om.size)
    out = (log_phi, log_hi, log_lo, abs_log)
    laplace = [(p, c) for p, c in items if type(p) is LaplacePair]
    if len(laplace) > 1:
        _block_terms(laplace, _laplace_cfs, 1, a, om, out)
        items = tuple((p, c) for p, c in items if type(p) is not LaplacePair)
    bounded = [(p, c) for p, c in items if type(p) is BoundedRangePair]
    if len(bounded) > 1:
        _block_terms(bounded, _br_cfs, 1, a, om, out)
        items = tuple((p, c) for p, c in items if type(p) is not BoundedRangePair)
    finite = [(p, c) for p, c in items if _small_finite(p)]
    if len(finite) > 1:
        width = max(len(cast(FinitePair, p).losses) for p, _ in finite)
        _block_terms(finite, _finite_cfs, width, a, om, out)
        items = tuple((p, c) for p, c in items if not _small_finite(p))
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, c in items:
            cf = p.tilted_cf(a, om)
            if cf is None:  # pragma: no cover - checked by invertible()
                raise NotImplied(f"{p!r} has no closed-form characteristic function")
            phi, err = cf
            mag = np.abs(phi)
            lp = np.log(phi)
            log_phi += c * lp
            abs_log += c * np.abs(lp)
            log_hi += c * np.log(mag + 2.0 * err)
            log_lo += c * np.log(np.maximum(mag - err, 0.0))
    return log_phi, log_hi, log_lo, abs_log


def _laplace_cfs(
    pairs: Sequence[DominatingPair], a: float, om: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    eps0 = np.array([cast(LaplacePair, p).epsilon0 for p in pairs])
    return laplace_tilted_cfs(eps0, a, om)


def _br_cfs(
    pairs: Sequence[DominatingPair], a: float, om: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    etas = np.array([cast(BoundedRangePair, p).eta for p in pairs])
    return br_tilted_cfs(etas, a, om)


def _finite_cfs(
    pairs: Sequence[DominatingPair], a: float, om: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    return finite_tilted_cfs([cast(FinitePair, p) for p in pairs], a, om)


def _small_finite(pair: DominatingPair) -> bool:
    """A finite pair of at most 16 atoms and no unlisted tails (vectorised with its likes)."""
    return (
        type(pair) is FinitePair
        and pair.tail_low == 0.0
        and pair.tail_high == 0.0
        and len(pair.losses) <= 16
    )


def _block_terms(
    pairs: Sequence[tuple[DominatingPair, int]],
    cfs: Callable[
        [Sequence[DominatingPair], float, FloatArray], tuple[FloatArray, FloatArray, FloatArray]
    ],
    width: int,
    a: float,
    om: FloatArray,
    out: tuple[ComplexArray, FloatArray, FloatArray, FloatArray],
) -> None:
    """Add the pairs' terms to the accumulators ``out`` of :func:`_log_cf_terms`: ``cfs`` (one
    vectorised evaluation, :func:`~sharpdp.accounting.pld.pairs.laplace_tilted_cfs` or
    :func:`~sharpdp.accounting.pld.pairs.finite_tilted_cfs`) per block of pairs, each block's
    arrays (``width`` entries per pair and node) near 2^20 entries."""
    rows = max(1, (1 << 20) // max(om.size * width, 1))
    for start in range(0, len(pairs), rows):
        block = pairs[start : start + rows]
        re, im, err = cfs([p for p, _ in block], a, om)
        counts = np.array([float(c) for _, c in block])[:, None]
        _accumulate(re, im, err, counts, out)


def _accumulate(
    re: FloatArray,
    im: FloatArray,
    err: FloatArray,
    counts: FloatArray,
    out: tuple[ComplexArray, FloatArray, FloatArray, FloatArray],
) -> None:
    """Add Σ_rows c·log φ (φ = re + i·im, each row one pair) and its bound terms to ``out``.
    With r = e/|φ̃| the bounds use log(|φ̃| + 2e) ≤ log|φ̃| + 2r and log(|φ̃| − e) ≥
    log|φ̃| − r/(1 − r) (r < 1), and |log φ̃| ≤ |log|φ̃|| + |arg φ̃|: no logarithm of the perturbed
    magnitudes."""
    log_phi, log_hi, log_lo, abs_log = out
    c = counts[:, 0]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mag = np.hypot(re, im)
        log_mag = np.log(mag)
        angle = np.arctan2(im, re)
        r = err / mag
        # weighted sums over the rows, without (rows × nodes) temporaries: Σ c(log|φ̃| + 2r) =
        # Σ c·log|φ̃| + 2Σ c·r, and likewise for the lower end (einsum's own loops, not BLAS,
        # whose spinning threads would take the cores of _log_cf_terms's threads)
        total = _weighted(c, log_mag)
        log_phi += total + 1j * _weighted(c, angle)
        np.abs(log_mag, out=log_mag)
        np.abs(angle, out=angle)
        abs_log += _weighted(c, log_mag + angle)
        if mag.all():
            log_hi += total + 2.0 * _weighted(c, r)
        else:  # a zero magnitude: log(|φ̃| + 2e) = log(2e) there
            log_mag = np.log(mag)
            log_hi += _weighted(c, np.where(mag > 0.0, log_mag + 2.0 * r, np.log(2.0 * err)))
        if (r < 1.0).all():
            log_lo += total - _weighted(c, r / (1.0 - r))
        else:  # the error may reach |φ̃|: no lower magnitude there
            log_lo += _weighted(c, np.where(r < 1.0, np.log(mag) - r / (1.0 - r), -np.inf))


def _weighted(c: FloatArray, rows: FloatArray) -> FloatArray:
    """Σ_i c_i·rows[i] (one entry per node)."""
    return np.asarray(np.einsum("k,kn->n", c, rows), dtype=np.float64)


def _finish(
    terms: tuple[ComplexArray, FloatArray, FloatArray, FloatArray], groups: int
) -> tuple[ComplexArray, FloatArray]:
    """φ = exp(Σ c·log φ_i) and a bound on its error, from :func:`_log_cf_terms` over ``groups``
    pairs."""
    log_phi, log_hi, log_lo, abs_log = terms
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        phi = np.where(np.isfinite(log_phi.real), np.exp(log_phi), 0.0)
        # Π(|φ̃_i| + 2e_i)^{c_i} − Π(|φ̃_i| − e_i)_+^{c_i} bounds the propagated input error;
        # the sum of c_i log φ̃_i and its exp add ~u per unit of |exponent| per group
        spread = np.exp(log_hi) - np.exp(log_lo)
        rel = 8.0 * U * (groups + 4.0) * (1.0 + abs_log)
        mag = np.abs(phi)
        # φ computed as 0 (a log of −inf, or an underflow): the spread already bounds |φ|
        rounding = np.where(mag > 0.0, mag * rel, 0.0)
    return phi, spread + rounding


# -- one Laplace group: the binomial split ------------------------------------------------------
#
# The Laplace loss law is α + γ: atoms (α: ε0 with mass 1/2, −ε0 with mass e^{−ε0}/2) and a density
# (γ(l) = (1/4)e^{−ε0/2}e^{l/2} on (−ε0, ε0)). Its c-fold law is Σ_r C(c, r) α^{*(c−r)} * γ^{*r}.
# The terms with few density factors are nearly atomic (their characteristic functions do not
# decay), so those with r < r0 are summed exactly below and only the rest, whose characteristic
# function Σ_{r≥r0} C(c, r) α̂^{c−r} γ̂^r decays like ω^{−r0}, is inverted.


def _binomial_tail(
    count: int, r0: int, x: FloatArray, y: FloatArray, up: bool = True
) -> FloatArray:
    """Σ_{r≥r0} C(c, r) x^{c−r} y^r = (x + y)^c · P[Bin(c, y/(x + y)) ≥ r0] for x, y ≥ 0
    (increasing in x and y), moved up (or down) by a 1e-9 relative margin for the incomplete beta
    function."""
    from scipy.special import bdtrc

    tot = x + y
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.where(tot > 0.0, y / tot, 0.0)
        tail = bdtrc(r0 - 1, count, q)
        out = np.exp(count * np.log(tot)) * tail
    margin = 1.0 + 1e-9 if up else 1.0 - 1e-9
    return np.asarray(np.where(tot > 0.0, out, 0.0) * margin, dtype=np.float64)


def _split_terms(
    pair: LaplacePair, count: int, r0: int, a: float, om: FloatArray
) -> tuple[ComplexArray, FloatArray]:
    """Σ_{r≥r0} C(c, r) α̂^{c−r} γ̂^r (tilted, normalised) = (α̂ + γ̂)^c − Σ_{r<r0}(…), with a bound
    on its error: the inputs' errors propagate through the increasing majorant
    :func:`_binomial_tail`; the subtraction's rounding is relative to (|α̂| + |γ̂|)^c."""
    from scipy.special import comb

    atoms, dens, e_atoms, e_dens = pair.cf_parts(a, om)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        la, lg = np.log(atoms), np.log(dens)
        value = np.exp(count * np.log(atoms + dens))
        for r in range(r0):
            value = value - comb(count, r, exact=False) * np.exp((count - r) * la + r * lg)
        ma, mg = np.abs(atoms), np.abs(dens)
        spread = _binomial_tail(count, r0, ma + 2 * e_atoms, mg + 2 * e_dens) - _binomial_tail(
            count, r0, np.maximum(ma - e_atoms, 0.0), np.maximum(mg - e_dens, 0.0), up=False
        )
        scale = np.exp(count * np.log(ma + mg))
    ok = np.isfinite(value)
    value = np.where(ok, value, 0.0)
    rel = 16.0 * U * (r0 + 8.0) * (1.0 + count * (2.0 + np.abs(np.log(ma + mg)) + math.pi))
    err = spread + 2.0 * scale * rel + np.where(ok, 0.0, scale)
    return np.asarray(value, dtype=np.complex128), np.asarray(err, dtype=np.float64)


def _integral_y_pow_exp(n: int, lam: float, y: float) -> tuple[float, float]:
    """E(Y) = ∫_0^Y t^n e^{λt} dt (Y ≥ 0) and a bound on its absolute float error: the power
    series Y^{n+1} Σ_m (λY)^m/(m!(n+m+1)) for |λY| ≤ 1, else the closed form
    n!/(−λ)^{n+1}·(1 − e^{λY} Σ_{m≤n} (−λY)^m/m!)."""
    z = lam * y
    if abs(z) <= 1.0:
        series, term = 0.0, 1.0
        for m in range(24):  # |z| ≤ 1: the terms fall below 2^-60 of the first by m = 20
            series += term / (n + m + 1)
            term *= z / (m + 1)
        return y ** (n + 1) * series, 64.0 * U * (n + 4.0) * y ** (n + 1) * math.exp(abs(z))
    poly, poly_abs, term = 0.0, 0.0, 1.0
    for m in range(n + 1):
        poly += term
        poly_abs += abs(term)
        term *= -z / (m + 1)
    ez = math.exp(min(z, 700.0))
    fact = math.factorial(n) / (-lam) ** (n + 1)
    return fact * (1.0 - ez * poly), 64.0 * U * (n + 4.0) * abs(fact) * (1.0 + ez * poly_abs)


@functools.lru_cache(maxsize=8192)  # (the same ε recurs across plans and between callers)
def _lattice_spline_delta(eps0: float, count: int, r0: int, epsilon: float) -> tuple[float, float]:
    """Σ_{r<r0} of the δ(ε) contributions of C(c, r) α^{*(c−r)} * γ^{*r}, and an error bound.

    α^{*(c−r)} has the atoms x_j = (c − r − 2j)ε0 with masses C(c−r, j)(1/2)^{c−r−j}(e^{−ε0}/2)^j;
    γ^{*r}(s) = ((1/4)e^{−ε0/2})^r e^{s/2} IH_r(s), IH_r the r-fold convolution of the indicator of
    (−ε0, ε0): Σ_i (−1)^i C(r, i)(s − c_i)_+^{r−1}/(r − 1)!, c_i = (2i − r)ε0 (a B-spline). With
    t = ε − x_j the contribution is the integral of (e^{s/2} − e^{t}e^{−s/2}) IH_r(s) over
    s ∈ (t, rε0), i.e. of polynomials times exponentials on the B-spline's pieces.
    """
    from scipy.special import comb, gammaln

    value = 0.0
    err = 0.0
    for r in range(min(r0, count + 1)):
        j = np.arange(count - r + 1, dtype=np.float64)
        m = count - r
        log_w = (
            gammaln(count + 1.0) - gammaln(r + 1.0) - gammaln(m + 1.0)
            + gammaln(m + 1.0) - gammaln(j + 1.0) - gammaln(m - j + 1.0)
            + (m - j) * math.log(0.5) + j * (-eps0 - math.log(2.0))
            + r * (math.log(0.25) - 0.5 * eps0)
        )  # fmt: skip
        weight = np.exp(log_w)
        # each lgamma errs by a few ulps of its value (up to lgamma(c + 1)), the rest by ~u·c·ε0
        w_err = (
            weight
            * 64.0
            * U
            * (4.0 + np.abs(log_w) + 6.0 * gammaln(count + 1.0) + count * (1.0 + eps0))
        )
        t = epsilon - (m - 2.0 * j) * eps0
        if r == 0:
            live = t < 0.0
            part = np.where(live, -np.expm1(np.minimum(t, 0.0)), 0.0)
            value += float(np.sum(weight * part))
            err += float(np.sum(w_err * part + weight * 4.0 * U * (1.0 + np.abs(t)) * part))
            continue
        live = t < r * eps0
        integral = np.zeros_like(t)
        mag = np.zeros_like(t)
        for i in range(r):
            c_i = (2 * i - r) * eps0
            coef = comb(r, i, exact=True) / math.factorial(r - 1)
            y_top = 2.0 * (r - i) * eps0
            y_lo = np.clip(t - c_i, 0.0, y_top)
            # E(0) = 0 and E(y_top) is one number: only the (at most r) atoms whose t falls
            # inside this piece need the integral at another point
            inner = np.nonzero((y_lo > 0.0) & (y_lo < y_top))[0]
            top = y_lo >= y_top
            p_hi, pe_hi = _integral_y_pow_exp(r - 1, 0.5, y_top)
            q_hi, qe_hi = _integral_y_pow_exp(r - 1, -0.5, y_top)
            p_lo = np.where(top, p_hi, 0.0)
            pe_lo = np.where(top, pe_hi, 0.0)
            q_lo = np.where(top, q_hi, 0.0)
            qe_lo = np.where(top, qe_hi, 0.0)
            for idx in inner:
                y = float(y_lo[idx])
                p_lo[idx], pe_lo[idx] = _integral_y_pow_exp(r - 1, 0.5, y)
                q_lo[idx], qe_lo[idx] = _integral_y_pow_exp(r - 1, -0.5, y)
            with np.errstate(over="ignore"):
                e_plus = math.exp(0.5 * c_i)
                e_minus = np.exp(np.minimum(t - 0.5 * c_i, 700.0))
            piece = e_plus * (p_hi - p_lo) - e_minus * (q_hi - q_lo)
            integral += (-1) ** i * coef * piece
            mag += coef * (
                e_plus * (np.abs(p_hi) + np.abs(p_lo) + pe_hi + pe_lo)
                + e_minus * (np.abs(q_hi) + np.abs(q_lo) + qe_hi + qe_lo)
            )
        integral = np.where(live, integral, 0.0)
        mag = np.where(live, mag, 0.0)
        value += float(np.sum(weight * integral))
        err += float(np.sum(w_err * np.abs(integral) + weight * mag * 64.0 * U * (8.0 + np.abs(t))))
    return value, err * (1.0 + 1e-6)


# -- the analysis ---------------------------------------------------------------------------------


def _tight_with_density(items: Items) -> bool:
    # The inversion is exact for the items' dominating pairs; these pairs are attained by the
    # items themselves (Laplace, Gaussian, randomized response) or by the worst (ε0, δ0)-DP
    # mechanism (KOV), so no valid analysis can certify less. A Laplace or Gaussian item gives
    # the loss law the density the inversion needs. Randomized response: the pair of two
    # different true values is the mechanism's own worst case.
    from sharpdp.guarantees import PureDP
    from sharpdp.mechanisms.additive import Laplace
    from sharpdp.mechanisms.randomized_response import RandomizedResponse

    tight = (Laplace, RandomizedResponse, PureDP, ApproxDP)
    if not items or all_gaussian(items):
        return False  # the closed form (gdp) is exact and cheaper
    if not all(type(g) in tight or is_gaussian(g) for g, _ in items):
        return False
    return any(type(g) is Laplace or is_gaussian(g) for g, _ in items)


@analysis(
    "mgf",
    "Zhu–Dong–Wang 2022 (δ from the characteristic function) + Abate–Whitt 1992 (Fourier-series "
    "inversion; aliasing errs upward): certified MGF inversion, exact to ~1e-11",
    exact_for=_tight_with_density,
    supersedes=("pld",),
)
def _mgf(items: Items, adaptive: bool) -> Guarantee:
    from sharpdp.accounting import pld

    if all_gaussian(items):
        raise NotImplied("all items are Gaussian: their closed form (gdp) is exact")
    pairs = pld.composition._normalise_items(items)  # NotImplied names an item without a pair
    # The inversion brackets the exact composition of the items' dominating pairs — the value
    # the PLD analysis approaches from above — to ~1e-11 wherever it answers; it is exact for
    # the items themselves when their pairs are attained (_tight_with_density). Otherwise
    # (e.g. selection mechanisms, represented by the bounded-range pair, which no single
    # mechanism attains) the other analyses still run.
    if not invertible(pairs):
        raise NotImplied(
            "the inversion needs closed-form characteristic functions and a density part "
            "(a Laplace or Gaussian item)"
        )
    return _InversionGuarantee(pairs)


@dataclass(frozen=True)
class _InversionGuarantee(Guarantee):
    """The inversion's answers, each only when its bracket is within ``accuracy`` (relative):
    otherwise the analysis declines for that query (NotImplied) and the PLD, which it would
    have superseded, answers. The inversion usually brackets to ~1e-11; extreme scales (a tilt
    capped at its limit, a law nearly atomic at the grid's scale) do not."""

    pairs: tuple[tuple[DominatingPair, int], ...]
    accuracy: float = _ANSWER_RTOL
    notion: ClassVar[str] = "composition by MGF inversion"

    def with_accuracy(self, accuracy: float) -> _InversionGuarantee:
        """The same analysis answering only within the relative ``accuracy`` (:func:`compose`'s;
        a tenth of it, so the promise exact ≤ value ≤ exact·(1 + accuracy) keeps a margin)."""
        return _InversionGuarantee(self.pairs, 0.1 * accuracy)

    @functools.cached_property
    def _inversion(self) -> Inversion:
        return Inversion(self.pairs)

    def _delta_bounds(self, epsilons: Any) -> Any:
        """Valid upper bounds on δ at every ε of ``epsilons`` from a few plans
        (:meth:`Inversion.delta_uppers`): those made for ε at the quantiles
        :data:`_BOUND_ANCHORS` of the (finite, non-negative) points of the first call, and
        those that certified ε(δ) answers, the least bound kept at each ε. ``None`` when no plan
        could be made (the law is too close to atomic: :meth:`delta` then declines too)."""
        eps = epsilons
        inversion = self._inversion
        finite = np.sort(eps[np.isfinite(eps)].ravel())
        # the plans of earlier calls serve again (points refined between them, say)
        plans = [*inversion._plans.values(), *inversion._bound_phi]
        for q in _BOUND_ANCHORS if finite.size and not inversion._bound_phi else ():
            with contextlib.suppress(NotImplied, NumericalError):
                plans.append(inversion._plan_any(float(finite[int(q * (finite.size - 1))])))
        out = None
        for plan in dict.fromkeys(plans):  # (distinct plans, in order)
            try:
                values = inversion.delta_uppers(eps, plan).reshape(eps.shape)
            except (NotImplied, NumericalError):
                continue
            out = values if out is None else np.minimum(out, values)
        return out

    def _epsilon(self, delta: float) -> float:
        inversion = self._inversion
        exact_mass = delta == inversion.inf_mass_hi and inversion.inf_mass_exact
        if exact_mass and inversion.max_loss < math.inf:
            # exact: from the largest loss on δ is the mass at infinity, and below it more (the
            # loss law has mass, or density, up to its top); with a mass only bounded, the exact
            # ε may lie far below (200 × (0.01, 1e-6) and a Laplace: 3 against 2.2), and the
            # check below decides
            return inversion.max_loss
        eps = float(inversion.epsilon(delta))
        below = eps * (1.0 - self.accuracy)
        if eps > 0.0 and below > 0.0:
            try:
                lower = inversion.delta_bracket(below)[0]
            except (NotImplied, NumericalError):
                lower = -math.inf
            if not lower > delta:
                raise NotImplied(
                    f"the inversion certified ε = {eps!r} at δ = {delta!r} but cannot show the "
                    f"exact ε above {below!r} (a bracket wider than {self.accuracy:g})"
                )
        return eps

    def _delta(self, epsilon: float) -> float:
        lower, upper = (float(v) for v in self._inversion.delta_bracket(epsilon))
        if not upper - max(lower, 0.0) <= self.accuracy * upper:
            raise NotImplied(
                f"the inversion's bracket of δ({epsilon!r}), [{lower!r}, {upper!r}], is wider "
                f"than {self.accuracy:g} relative (a law too close to atomic at this scale)"
            )
        return upper
