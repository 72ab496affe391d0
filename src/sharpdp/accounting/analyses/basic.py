"""The ``basic`` and ``advanced`` analyses: (Σε_i, Σδ_i) [Dwork–Roth 2014, Thm 3.16] and advanced
composition [Dwork–Rothblum–Vadhan 2010; Dwork–Roth 2014, Thm 3.20]."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
    approx_pair,
    bounded_range,
    is_gaussian,
)
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied
from sharpdp.guarantees import ApproxDP, Guarantee, PureDP
from sharpdp.mechanisms.base import Mechanism


def _own_profile(g: Guarantee) -> Guarantee | None:
    """The guarantee whose ε(δ)/δ(ε) is ``g``'s exact profile as a lone release, or ``None``.

    An η-BR item: :class:`BoundedRange`'s profile, the supremum over its dominating pairs
    (Rogers–Steinke 2021); Laplace and randomized response: their closed-form profiles, those of
    the mechanisms' own worst-case pairs (Laplace's dominating pair is its pair of neighbouring
    outputs, Koskela et al. 2020; k-ary randomized response's, its two true values); the discrete
    Laplace and Gaussian: their profiles summed exactly over the integers (rounded up), those of
    their pairs of neighbouring outputs (Canonne–Kamath–Steinke 2020)."""
    from sharpdp.mechanisms.additive import Laplace
    from sharpdp.mechanisms.discrete import DiscreteGaussian, DiscreteLaplace
    from sharpdp.mechanisms.randomized_response import RandomizedResponse

    if type(g) in (
        Laplace,
        RandomizedResponse,
        DiscreteLaplace,
        DiscreteGaussian,
        PureDP,
        ApproxDP,
    ):
        return g  # (PureDP's is randomized response's, ApproxDP's the KOV pair's: tight)
    try:
        return bounded_range(g)
    except NotImplied:
        return None


def _lone_with_own_profile(items: Items) -> bool:
    return len(items) == 1 and items[0][1] == 1 and _own_profile(items[0][0]) is not None


@analysis(
    "single",
    "one release: its own profile (exact for bounded range: Rogers–Steinke 2021; Laplace, "
    "randomized response, pure and approximate DP: closed form; discrete Laplace and Gaussian: "
    "summed exactly; nothing is composed)",
    exact_for=_lone_with_own_profile,
    composes=False,
)
def _single(items: Items, adaptive: bool) -> Guarantee:
    """A lone item (count 1) with an exact profile of its own is its own composition: one
    exponential mechanism is ε-BR, δ(0) = 0.2449 at ε = 1; one Laplace mechanism has
    δ(ε) = 1 − e^{(ε − ε0)/2}. (The MGF inversion and the PLD read the same profiles from the
    dominating pairs, up to their accuracy; this reads them exactly and cheaply, also at the top
    of the range, where the inversion's bracket is wide and the PLD refined for tens of seconds.)
    Exact (no valid bound is smaller), so no other analysis runs."""
    if len(items) != 1 or items[0][1] != 1:
        raise NotImplied("more than one release: a composition theorem is needed")
    item = items[0][0]
    own = _own_profile(item)
    if own is None and is_gaussian(item):
        raise NotImplied("a lone Gaussian is read exactly by the gdp analysis")
    if own is None and isinstance(item, Mechanism) and item.rounds() is not None:
        # its own ε/δ are the composition of its rounds, which the other analyses compute
        raise NotImplied(f"{item!r} is made of rounds: the composition analyses read them")
    # any other lone item is still its own composition: its ε(δ) competes with the analyses'
    # (a lone ZCDP(1e-13) read 8.3e-6 at δ = 1e-10 through the RDP search, 1.6e-6 by itself)
    return items[0][0] if own is None else own


@analysis("basic", "Dwork–Roth 2014 Thm 3.16: (Σε_i, Σδ_i)")
def _basic(items: Items, adaptive: bool) -> Guarantee:
    # rational sums of each item's exact pair, or of its valid float pair, rounded up once (a
    # float sum rounded up read ApproxDP(0, 1e-6) with three 1-BR rounds as δ = 1e-6 + 1 ulp,
    # and ε(1e-6) as infinite)
    pairs = []
    unbounded = False  # an item with ε = ∞ (e.g. ApproxDP(inf, δ)): Σε is ∞, Σδ still counts
    for g, c in items:
        pair = g.exact_pair()
        if pair is None:
            e, d = approx_pair(g)
            unbounded |= math.isinf(e)
            pair = (Fraction(0) if math.isinf(e) else Fraction(e), Fraction(d))
        pairs.append((pair, c))
    eps = _math.float_up(sum((c * e for (e, _), c in pairs), Fraction(0)))
    eps = math.inf if unbounded else eps
    delta = _math.float_up(sum((c * d for (_, d), c in pairs), Fraction(0)))
    if delta >= 1.0:
        raise NotImplied("Σδ_i ≥ 1")
    return ApproxDP(eps, delta)


@dataclass(frozen=True)
class _Advanced(Guarantee):
    epsilon0: float
    delta0: float
    k: int
    notion: ClassVar[str] = "advanced composition"

    def _epsilon(self, delta: float) -> float:
        slack = delta - self.k * self.delta0
        if slack <= 0.0:
            return math.inf
        k, e0 = self.k, self.epsilon0
        return _math.up(math.sqrt(2.0 * k * math.log(1.0 / slack)) * e0 + k * e0 * math.expm1(e0))

    def _delta(self, epsilon: float) -> float:
        # invert: smallest δ with ε(δ) ≤ ε (ε(δ) decreasing in δ)
        k, e0 = self.k, self.epsilon0
        rest = epsilon - k * e0 * math.expm1(e0)
        if rest <= 0.0 or e0 == 0.0:
            return 1.0 if e0 > 0.0 else min(1.0, k * self.delta0)
        slack = _math.exp_up(-((rest / e0) ** 2) / (2.0 * k))
        return min(1.0, _math.up(k * self.delta0 + slack))


@analysis("advanced", "Dwork–Rothblum–Vadhan 2010 (Dwork–Roth Thm 3.20): advanced composition")
def _advanced(items: Items, adaptive: bool) -> Guarantee:
    pairs = {approx_pair(g) for g, _ in items}
    if len(pairs) != 1:
        raise NotImplied("advanced composition needs identical (ε0, δ0) items")
    ((e0, d0),) = pairs
    return _Advanced(e0, d0, sum(c for _, c in items))
