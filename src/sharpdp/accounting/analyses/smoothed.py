"""The ``mgf-smoothed`` analysis: certified MGF inversion for laws that are (nearly) atomic, by
composing with a tiny Gaussian and bounding what that adds.

The inversion of :mod:`sharpdp.accounting.analyses.mgf` needs a characteristic function that
decays. Compositions of Laplace, randomized-response and (ε0, δ0)-DP items alone keep an atomic
part (mass Π(1/2 + e^{−ε0}/2) for Laplace items), so theirs does not, and the PLD then has to
certify a bracket whose optimistic end is only first order in its grid (at atoms off the grid).
This analysis brackets the same exact composition differently.

**Upper end.** Add one μ-GDP pair: its loss W ~ N(μ²/2, μ²) under P, independent of L. Composing
with another mechanism never lowers the profile, so δ_W(ε) = E[(1 − e^{ε − L − W})_+] ≥ δ(ε);
δ_W is inverted with certified error bounds by :class:`~sharpdp.accounting.analyses.mgf.Inversion`
(the Gaussian factor makes the characteristic function decay like e^{−μ²ω²/2}).

**Lower end.** With v = ε − L, δ_W(ε) − δ(ε) = E[Gap(v)], Gap(v) = E_W[(1 − e^{v − W})_+] − (1 − e^v)_+
≥ 0 (Jensen; E[e^{−W}] = 1). Writing ψ(z) = E[(Z + z)_+] = φ(z) + zΦ(z) (Z standard normal):

* v ≥ 0: Gap = E[(1 − e^{−(W − v)})_+] ≤ E[(W − v)_+] = μψ((μ²/2 − v)/μ), since 1 − e^{−y} ≤ y;
* v < 0: Gap = E[(e^{v − W} − 1)_+] ≤ e^v·E[(v − W)_+e^{−W}] = e^v·μψ((v + μ²/2)/μ), since
  e^y − 1 ≤ ye^y for y ≥ 0 and W ~ N(−μ²/2, μ²) under e^{−W}dP;

so Gap(v) ≤ μψ(μ/2 − |v|/μ) everywhere. For |v| ≥ μ²/2, ψ(z) ≤ φ(z) (z ≤ 0) and
(x − c)² ≥ (1 − θ)x² − (1/θ − 1)c² give ψ ≤ φ(0)e^{(1/θ − 1)μ²/8}e^{−(1 − θ)v²/(2μ²)}; for
|v| < μ²/2, ψ ≤ φ(0) + μ/2 and (1 − θ)v²/μ² < (1 − θ)μ²/4. Hence the Gaussian majorant

    Gap(v) ≤ M(v) = μA·e^{−v²/(2τ²)},  τ² = μ²/(1 − θ),  A = (φ(0) + μ/2)e^{max(1/θ − 1, 1 − θ)μ²/8},

and δ(ε) ≥ δ_W(ε) − E[M(ε − L)]. The expectation is inverted on the same nodes as δ_W, from the
characteristic function of L alone: M's transform is Gaussian, so its truncated terms are bounded
in closed form (|φ| ≤ 1 on the tilted law), and the trapezoid rule errs only upwards (M ≥ 0; the
aliasing identity of the mgf module). Nothing here assumes a density: atoms only make E[M]
larger. Where L has a density p near ε, E[M] ≈ √(2π)·φ(0)·μ²p(ε)/√(1 − θ) — second order in μ —
so μ is chosen from the saddle point (p(ε) ≈ δ·a(a + 1) at tilt a) to fit the requested relative
accuracy, and reduced (up to twice, from the measured width) until the bracket is that narrow;
otherwise the analysis declines and the PLD answers. An ε(δ) query is certified when the lower
profile exceeds δ at ε/(1 + accuracy), which tolerates a δ-bracket about aε times wider, hence a
larger μ and fewer nodes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from sharpdp.accounting._items import Items, all_gaussian
from sharpdp.accounting.analyses.mgf import (
    _NEGLIGIBLE,
    ComplexArray,
    FloatArray,
    Inversion,
    U,
    _finish,
    _log_cf_terms,
    _log_envelope,
    _Plan,
)
from sharpdp.accounting.pld.pairs import DominatingPair, FinitePair, GaussianPair
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied, NumericalError
from sharpdp.guarantees import Guarantee

#: θ of the majorant's width τ = μ/√(1 − θ) (module docstring).
_THETA = 0.1
#: Share of the requested accuracy given to E[M] when μ is chosen (the rest is slack).
_SHARE = 0.8
#: μ of the coarse smoothing that plans the fine one.
_PROBE_MU = 1e-2
#: The inversion of the smoothed law is carried to this share of the requested accuracy.
_TOLERANCE = 1e-2
#: Most (nodes × characteristic-function terms) evaluated per plan (~0.5 s); beyond, decline.
_MAX_WORK = 1 << 25
#: Fewest distinct pairs for which the analysis runs: below, the PLD (atoms summed exactly around
#: it) and KOV answer faster (measured: 5–11 ms against 12–22 ms per accountant spend for 2–8
#: distinct Laplace, EM, pure and approximate-DP items; 23/70 ms against 9/6 ms for ε/δ of 10
#: distinct Laplace items, cold).
_MIN_GROUPS = 8
#: Most characteristic-function terms per node (finite pairs with more atoms are left to the PLD,
#: which discretises them once, rather than evaluated at every node).
_MAX_WIDTH = 1 << 12
#: Most halvings of μ tried before declining.
_HALVINGS = 2
_PHI0 = 1.0 / math.sqrt(2.0 * math.pi)


def smoothable(pairs: tuple[tuple[DominatingPair, int], ...]) -> bool:
    """Whether there are at least :data:`_MIN_GROUPS` groups, every pair has a closed-form
    characteristic function and none is Gaussian (a Gaussian factor makes the plain inversion work
    already; a few groups are answered exactly or cheaply by the other analyses)."""
    if len(pairs) < _MIN_GROUPS or _width(pairs) > _MAX_WIDTH:
        return False
    probe = np.array([1.0])
    for pair, _ in pairs:
        if pair.gdp_mu() is not None or not pair.loss_bound() <= 1e6:
            return False
        if pair.tilted_cf(0.5, probe) is None:
            return False
    return True


def _width(pairs: tuple[tuple[DominatingPair, int], ...]) -> int:
    """Characteristic-function terms per node: one per atom of a finite pair, one otherwise."""
    return sum(len(p.losses) if isinstance(p, FinitePair) else 1 for p, _ in pairs)


class SmoothedInversion(Inversion):
    """δ(ε) of a composition bracketed through its composition with one μ-GDP pair (module
    docstring): the upper end is that of the smoothed law, the lower end subtracts E[M(ε − L)].

    Args:
        pairs: ``((pair, count), ...)``, none Gaussian, each with a closed-form characteristic
            function.
        mu: the smoothing pair's μ > 0.
    """

    #: The Gaussian factor bounds the nodes (about 5/(μΔω)); the work is capped by _MAX_WORK.
    max_nodes = 1 << 18

    def __init__(
        self, pairs: tuple[tuple[DominatingPair, int], ...], mu: float, tolerance: float = 1e-7
    ) -> None:
        if not mu > 0.0:
            raise NotImplied(f"the smoothing needs μ > 0, got {mu!r}")
        self.base = pairs
        self.mu = mu
        # characteristic-function terms per node: one per atom of a finite pair, one otherwise
        self.width = _width(pairs)
        super().__init__((*pairs, (GaussianPair(mu), 1)), tolerance)
        self._base_phi: dict[tuple[float, float, int], tuple[ComplexArray, FloatArray]] = {}
        # P[L = ∞] is unchanged by the Gaussian: the inherited ends stay those of L + W

    def _phi(self, a: float, om: FloatArray, r0: int) -> tuple[ComplexArray, FloatArray]:
        key = (a, float(om[-1]), om.size)
        if om.size * self.width > _MAX_WORK:
            raise NotImplied(
                f"the smoothed inversion would evaluate {om.size} nodes × {self.width} atoms "
                f"(limit {_MAX_WORK})"
            )
        terms = _log_cf_terms(self.base, a, om)
        self._base_phi.clear()  # one plan at a time, like the parent's cache
        self._base_phi[key] = _finish(terms, len(self.base))
        if not np.all(np.isfinite(self._base_phi[key][1])):
            raise NotImplied("the characteristic function's error bound leaves the float range")
        lp, hi, lo, ab = terms
        glp, ghi, glo, gab = _log_cf_terms(((GaussianPair(self.mu), 1),), a, om)
        return _finish((lp + glp, hi + ghi, lo + glo, ab + gab), len(self.base) + 1)

    def _evaluate(
        self, epsilon: float, planned: tuple[int, _Plan] | None = None
    ) -> tuple[float, float, float]:
        """(lower, upper, a) for the exact δ(ε) of the pairs (without the smoothing pair)."""
        r0, plan = planned if planned is not None else self._plan_any(epsilon)
        lower, upper, a = super()._evaluate(epsilon, (r0, plan))
        if not math.isfinite(a) or plan.k_a - a * epsilon < _NEGLIGIBLE:
            return self.inf_mass_lo, upper, a  # the far tail: no lower end beyond P[L = ∞]
        majorant = self._majorant(epsilon, plan)
        return max(self.inf_mass_lo, lower - majorant), upper, a

    def _base_envelope(self, a: float, omega: float) -> float:
        """A bound on |φ(ω′)| of the law of L (without the smoothing pair) for all ω′ ≥ ω: the
        product of the pairs' envelopes, and at most 1 (ν_a is a probability law)."""
        return math.exp(min(_log_envelope(self.base, a, omega), 0.0))

    def _majorant(self, epsilon: float, plan: _Plan) -> float:
        """An upper bound on E_P[M(ε − L); L < ∞] (module docstring), on the plan's nodes."""
        a, mu = plan.a, self.mu
        d_omega = 2.0 * math.pi / plan.period
        om = d_omega * np.arange(plan.nodes + 1, dtype=np.float64)
        key = (a, float(om[-1]), om.size)
        if key not in self._base_phi:
            self._phi(a, om, 0)
        phi, phi_err = self._base_phi[key]
        tau2 = mu * mu / (1.0 - _THETA)
        tau = math.sqrt(tau2)
        amp = (_PHI0 + mu / 2.0) * math.exp(max(1.0 / _THETA - 1.0, 1.0 - _THETA) * mu * mu / 8.0)
        # Ĥ(ω)e^{aε} = τ√(2π)·exp(τ²(a² − ω²)/2 + i(τ²a − ε)ω), the transform of e^{−al}H(l)
        log_mag = math.log(tau * math.sqrt(2.0 * math.pi)) + tau2 * (a * a - om * om) / 2.0
        h_abs = np.exp(log_mag)
        h_hat = h_abs * np.exp(1j * (tau2 * a - epsilon) * om)
        terms = h_hat * phi
        mag_terms = np.abs(terms)
        # a term whose |Ĥ| underflows is 0 and so errs by less than the least float (|φ| ≤ 1)
        err_terms = np.where(h_abs > 0.0, h_abs * phi_err, 5e-324) + mag_terms * 8.0 * U * (
            4.0 + np.abs(log_mag) + om * (epsilon + tau2 * a + 2.0)
        )
        w = d_omega / (2.0 * math.pi)
        total = w * (terms[0].real + 2.0 * float(np.sum(terms[1:].real)))
        rounding = w * (
            2.0 * float(np.sum(err_terms)) + 4.0 * (om.size + 2) * U * float(np.sum(mag_terms))
        )
        # Σ_{|n|>N} |Ĥ(nΔω)φ(nΔω)| ≤ Φ·2τ√(2π)e^{τ²a²/2}·e^{−cN²}/(2cN), c = τ²Δω²/2, with
        # Φ ≥ |φ(ω′)| for every ω′ > NΔω (the pairs' envelopes; at most 1)
        c = tau2 * d_omega * d_omega / 2.0
        n = plan.nodes
        log_tail = (
            math.log(2.0 * tau * math.sqrt(2.0 * math.pi))
            + tau2 * a * a / 2.0
            - c * n * n
            - math.log(2.0 * c * n)
        )
        envelope = self._base_envelope(a, (n + 1) * d_omega)
        tail = w * envelope * math.exp(min(log_tail, 700.0))
        if not (math.isfinite(total) and math.isfinite(rounding)):
            raise NumericalError(f"the smoothing bound at ε = {epsilon!r} is not finite (a bug)")
        # K(a)'s rounding, and e^{slack}: listed masses may be below the true ones by their
        # relative error
        k_err = 16.0 * U * (self._k_abs(a) + a * epsilon + 4.0) + self.slack
        log_pre = plan.k_a - a * epsilon + k_err
        core = max(total, 0.0) + tail + rounding
        return float(mu * amp * math.exp(log_pre) * core * (1.0 + 1e-9))


def _mu_for(probe: SmoothedInversion, epsilon: float, accuracy: float, in_epsilon: bool) -> float:
    """μ with E[M] ≈ ``_SHARE``·accuracy·δ where the law has an exponential tail of rate a at ε
    (p(ε) ≈ δ·a(a + 1)); a comes from the saddle point of a coarse smoothing (any μ serves).

    For an ε(δ) query the accuracy is relative to ε, and δ changes by a factor ≈ e^{−aε·r} when
    ε grows by a relative r: the δ-bracket may then be about aε times wider (the certificate is
    checked anyway, see :meth:`_SmoothedGuarantee._epsilon`), so μ is √(aε) times larger and the
    inversion needs about as many times fewer nodes."""
    a = probe._saddle(epsilon)[0]
    spread = math.sqrt(2.0 * math.pi) * _PHI0 / math.sqrt(1.0 - _THETA) * a * (a + 1.0)
    allowed = _SHARE * accuracy * (max(1.0, a * epsilon) if in_epsilon else 1.0)
    return math.sqrt(allowed / max(spread, 1e-12))


@dataclass(frozen=True)
class _SmoothedGuarantee(Guarantee):
    pairs: tuple[tuple[DominatingPair, int], ...]
    accuracy: float = 1e-4
    _by_mu: dict[float, SmoothedInversion] = field(default_factory=dict, compare=False, repr=False)
    notion: ClassVar[str] = "composition by smoothed MGF inversion"

    def with_accuracy(self, accuracy: float) -> _SmoothedGuarantee:
        """The same analysis with brackets at most ``accuracy`` wide (relative)."""
        return self if accuracy == self.accuracy else _SmoothedGuarantee(self.pairs, accuracy)

    def _inversion(self, mu: float) -> SmoothedInversion:
        # μ on the ladder 2^{j/4}: nearby queries share an inversion (and its nodes)
        mu = float(2.0 ** (math.floor(4.0 * math.log2(mu)) / 4.0))
        if mu not in self._by_mu:
            if len(self._by_mu) >= 8:
                self._by_mu.pop(next(iter(self._by_mu)))
            self._by_mu[mu] = SmoothedInversion(self.pairs, mu, _TOLERANCE * self.accuracy)
        return self._by_mu[mu]

    @functools.cached_property
    def _probe(self) -> SmoothedInversion:
        """A coarse smoothing (μ = 10⁻²): its saddle points choose μ, its root starts ε(δ)."""
        return SmoothedInversion(self.pairs, _PROBE_MU, _TOLERANCE * self.accuracy)

    def value_unless_beaten(self, quantity: str, at: float, rival: float) -> float:
        """ε(δ) or δ(ε), or ``inf`` when the coarse smoothing's certified lower profile shows
        that the exact composition of these pairs is at least ``rival``: no bound from them
        could then be below it (exponential mechanisms read as pure DP, for instance, lose to
        their Rényi curves, and the fine inversion would be wasted)."""
        if math.isfinite(rival) and rival > 0.0:
            # δ_lo(x) > y certifies exact δ(x) > y, i.e. exact ε(y) > x; the certificate costs an
            # inversion, so it is sought only where the saddle-point estimate of δ(x) (as the
            # PLD's planning uses) says it will be found
            point, level = (rival, at) if quantity == "epsilon" else (at, rival)
            likely = level > 0.0 and self._likely_above(point, level)
            if likely and self._probe._evaluate(point)[0] > level:
                return math.inf
        return self.epsilon(at) if quantity == "epsilon" else self.delta(at)

    def _likely_above(self, epsilon: float, level: float) -> bool:
        """Whether the saddle-point *estimate* of δ(ε) (not a bound) exceeds twice ``level``:
        log δ ≈ K(a) − aε − log(a(a + 1)) − ½log(2πK″(a)) at the saddle point a."""
        try:
            a, k, k2 = self._probe._saddle(epsilon)
        except NumericalError:
            return False
        estimate = k - a * epsilon - math.log(a * (a + 1.0)) - 0.5 * math.log(2.0 * math.pi * k2)
        return estimate > math.log(2.0 * level)

    def _delta(self, epsilon: float) -> float:
        mu = _mu_for(self._probe, epsilon, self.accuracy, in_epsilon=False)
        for _ in range(_HALVINGS + 1):
            inv = self._inversion(mu)
            lo, hi = inv.delta_bracket(epsilon)
            if hi <= lo * (1.0 + self.accuracy):
                return float(hi)
            if not lo > 0.0:
                break  # no positive lower end (δ may be 0 here): no relative bracket
            # the bracket's width grows like μ²: aim at 80% of the accuracy next (μ at least /1.25)
            mu *= min(0.8, math.sqrt(0.8 * self.accuracy / (hi / lo - 1.0)))
        raise NotImplied(
            f"the smoothed inversion could not certify δ({epsilon!r}) to a relative "
            f"{self.accuracy:g} (atoms near ε)"
        )

    def _epsilon(self, delta: float) -> float:
        # the coarse smoothing's root (a few hundred nodes) is within ~μ² of the answer: the
        # fine inversion then starts there and plans once
        guess = self._probe.epsilon(delta)
        mu = _mu_for(self._probe, guess, self.accuracy, in_epsilon=True)
        for _ in range(_HALVINGS + 1):
            # a μ at least the probe's: the probe's own root may already be certified
            inv = self._probe if mu >= _PROBE_MU else self._inversion(mu)
            eps = guess if inv is self._probe else inv.epsilon(delta, start=guess)
            # the exact ε exceeds eps/(1 + accuracy) when the lower profile there is above δ
            check = eps / (1.0 + self.accuracy)
            if eps == 0.0:
                return 0.0
            plan = inv._plans.get(eps)  # the plan that certified eps (any plan gives bounds)
            if inv._evaluate(check, plan)[0] > delta:
                return float(eps)
            mu = min(mu, _PROBE_MU) / 2.0
        raise NotImplied(
            f"the smoothed inversion could not certify ε({delta!r}) to a relative "
            f"{self.accuracy:g} (atoms near the answer)"
        )


@analysis(
    "mgf-smoothed",
    "Zhu–Dong–Wang 2022 + Abate–Whitt 1992 on the composition with a μ-GDP pair (an upper "
    "bound), minus a Gaussian majorant of what that pair adds: certified to the requested "
    "accuracy for (nearly) atomic laws",
    costly=True,
    supersedes=("pld",),
)
def _smoothed(items: Items, adaptive: bool) -> Guarantee:
    from sharpdp.accounting import pld

    if all_gaussian(items):
        raise NotImplied("all items are Gaussian: their closed form (gdp) is exact")
    pairs = pld.composition._normalise_items(items)
    if not smoothable(pairs):
        raise NotImplied(
            "the smoothed inversion needs closed-form characteristic functions and no Gaussian"
        )
    return _SmoothedGuarantee(pairs)
