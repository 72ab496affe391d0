"""The ``approx_rdp`` analysis: Rényi curves composed with δ-parts (approximate RDP).

A mechanism is δ-approximately RDP with curve ε(α) [Bun–Steinke 2016, Def 1.12, with an RDP
curve in place of ξ + ρα] when, for all neighbours x, x′, there are events E, E′ of probability at
least 1 − δ under M(x), M(x′) whose conditional laws satisfy D_α ≤ ε(α) in both orders.
Writing P = (1 − δ)P′ + δP″ with P′ = P|E (valid because P(E) ≥ 1 − δ), and likewise Q:

* **composition**: conditioning on both steps' events, the events of an adaptive composition have
  probability ≥ Π(1 − δ_i) and the conditional laws compose as RDP does [Mironov 2017, Prop 1];
  so the composition is δ_tot-approximately RDP with δ_tot = 1 − Π(1 − δ_i) and the summed curve;
* **conversion**: P(S) ≤ (1 − δ)P′(S) + δ ≤ (1 − δ)(e^ε Q′(S) + f(ε)) + δ ≤ e^ε Q(S) + δ + (1 − δ)f(ε),
  where f(ε) is the (ε, ·) profile certified by the curve [Canonne–Kamath–Steinke 2020, Prop 12].

Items: an (ε, δ)-DP item is δ-approximately ε-DP: every (ε, δ)-DP pair is a post-processing of
the worst-case pair of Kairouz–Oh–Viswanath 2015 (Thm 2.5 and §3), itself (1 − δ)·(ε-randomized
response) + δ·(disjoint atoms), so the mixture's 1 − δ parts stay within e^{±ε} (the decomposition
behind Bun–Steinke 2016, Prop 1.13); ε-DP laws have the Rényi curve of randomized response at most
[Bun–Steinke 2016, Prop 3.3]; a
δ-approximate zCDP item contributes its zCDP line; every other item with a Rényi curve has δ = 0.
Mechanisms whose privacy is declared as items (e.g. thresholded releases: the noise mechanism and an
``ApproxDP(0, δ)``) are composed through those items. The analysis applies only when some δ > 0 (the
``rdp`` analysis covers the rest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from sharpdp import _math
from sharpdp.accounting._items import Items, mass_at_infinity, normalise
from sharpdp.accounting.analyses.rdp import _LOWEST_ORDER, RDPSum
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied
from sharpdp.guarantees import ZCDP, ApproxDP, ApproxZCDP, Guarantee, PureDP


def split_delta(g: Guarantee) -> tuple[Guarantee, float]:
    """(the item's conditional Rényi part, its δ): see the module docstring."""
    if isinstance(g, ApproxDP):
        return PureDP(g.epsilon_), g.delta_
    if isinstance(g, ApproxZCDP):
        return ZCDP(g.rho, g.xi), g.delta_
    return g, 0.0


@dataclass(frozen=True)
class ApproxRDPSum(Guarantee):
    """δ_tot-approximate RDP: the summed curve of the conditional parts and δ_tot = 1 − Π(1 − δ_i)."""

    curve: RDPSum
    delta_total: float
    notion: ClassVar[str] = "approximate RDP composition"

    def _renyi(self, alpha: float) -> float:
        return math.inf if self.delta_total > 0.0 else self.curve.renyi(alpha)

    def _delta(self, epsilon: float) -> float:
        f = self.curve.delta(epsilon)
        # δ_tot + (1 − δ_tot)·f, increasing in both: each rounded up
        return min(1.0, _math.up(self.delta_total + _math.up((1.0 - self.delta_total) * f)))

    def _epsilon(self, delta: float) -> float:
        if delta < self.delta_total:
            return math.inf
        # f(ε) ≤ (δ − δ_tot)/(1 − δ_tot) is enough; the quotient is rounded down (exactly)
        exact = (Fraction(delta) - Fraction(self.delta_total)) / (1 - Fraction(self.delta_total))
        target = float(exact)
        if Fraction(target) > exact:
            target = math.nextafter(target, 0.0)
        return self.curve.epsilon(max(0.0, target))


@analysis(
    "approx_rdp",
    "Bun–Steinke 2016 Def 1.12 (approximate zCDP, with an RDP curve): δ_tot = 1 − Π(1 − δ_i) "
    "+ Mironov 2017 Prop 1 + CKS20 Prop 12",
)
def _approx_rdp(items: Items, adaptive: bool) -> Guarantee:
    parts: list[tuple[Guarantee, int]] = []
    deltas: list[tuple[float, int]] = []
    for g, c in items:
        inner, delta = split_delta(g)
        deltas.append((delta, c))
        parts.append((inner, c))
    if all(d == 0.0 for d, _ in deltas):
        raise NotImplied("no item has a δ part (the rdp analysis covers this case)")
    curve = RDPSum(normalise(parts))
    if curve.renyi(_LOWEST_ORDER) == math.inf:
        raise NotImplied("an item has no Rényi curve beyond its δ part")
    delta_total = mass_at_infinity(deltas)
    if delta_total >= 1.0:
        raise NotImplied("the δ parts add up to 1")
    return ApproxRDPSum(curve, delta_total)
