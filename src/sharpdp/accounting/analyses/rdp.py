"""The ``rdp`` analysis: the sum of the items' exact Rényi curves [Mironov 2017, Prop 1], converted
to (ε, δ) by Canonne–Kamath–Steinke 2020, Prop 12, over continuous α."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from sharpdp import _math
from sharpdp._divergences import rr_renyi_many
from sharpdp.accounting._items import (
    Items,
    is_gaussian,
)
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied
from sharpdp.guarantees import Guarantee

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RDPSum(Guarantee):
    items: Items
    notion: ClassVar[str] = "RDP composition"

    @functools.cached_property
    def _split(self) -> tuple[Fraction, Items, dict[int, tuple[FloatArray, tuple[int, ...]]]]:
        """(ρ, the other items, randomized response by k): ρ = Σ c·μ²/2 over the Gaussian/GDP
        items, exactly. A μ-GDP item has D_α = αμ²/2 at every α [Mironov 2017 Table II; BS16
        Prop 1.6], so together they are one linear curve, evaluated once per order instead of
        once per item. Items whose curve is k-ary randomized response's (pure ε-DP's is binary
        RR's, Steinke 2024 Thm 4) are evaluated together per k — (their ε, their counts) — when
        there are at least :data:`_VECTORISED` of them (below, numpy's per-call overhead costs
        more than the scalar evaluations)."""
        rho = Fraction(0)
        others = []
        shaped = []
        rr: dict[int, list[tuple[float, int]]] = {}
        for g, c in self.items:
            if is_gaussian(g):
                rho += Fraction(g.mu) ** 2 * c / 2
            elif (shape := g._randomized_response()) is not None:
                rr.setdefault(shape[1], []).append((shape[0], c))
                shaped.append((g, c))
            else:
                others.append((g, c))
        if len(shaped) < _VECTORISED:
            return rho, (*others, *shaped), {}
        arrays = {k: (np.array([e for e, _ in v]), tuple(c for _, c in v)) for k, v in rr.items()}
        return rho, tuple(others), arrays

    def _renyi(self, alpha: float) -> float:
        rho, others, rr = self._split
        values = [(item.renyi(alpha), count) for item, count in others]
        for k, (eps, counts) in rr.items():
            # each value an upper bound (rr_renyi_many), summed below like the others
            values.extend(zip(rr_renyi_many(eps, alpha, k).tolist(), counts, strict=True))
        if rho:  # α·ρ rounded up (Fraction(inf) is undefined: α = ∞ gives ∞)
            values.append(
                (math.inf if alpha == math.inf else _math.float_up(Fraction(alpha) * rho), 1)
            )
        if any(v == math.inf for v, _ in values):
            return math.inf
        if len(values) <= 64:  # the exact rational sum, rounded up to a float
            exact = sum((Fraction(v) * c for v, c in values), Fraction(0))
            total = float(exact)
            return math.nextafter(total, math.inf) if Fraction(total) < exact else total
        # many items: fsum is within an ulp of the sum of the products, each within half an ulp
        total = math.fsum(c * v for v, c in values)
        return total if total == 0.0 else _math.up(total, 2)


#: The order at which a curve must be finite for the RDP analyses to run (near 1: see _rdp).
_LOWEST_ORDER = 1.0 + 2.0**-10

#: Fewest randomized-response/pure-DP items for which RDP sums evaluate their curves together.
_VECTORISED = 16


@analysis("rdp", "Mironov 2017 Prop 1 (RDP adds) + CKS20 Prop 12 over continuous α")
def _rdp(items: Items, adaptive: bool) -> Guarantee:
    rdp = RDPSum(items)
    # (D_α is non-decreasing in α: a curve finite only below α = 2, such as RDP([1.5], …),
    # still bounds the composition there, and α = 2 alone declined it)
    if rdp.renyi(_LOWEST_ORDER) == math.inf:
        raise NotImplied("an item has no Rényi bound (e.g. (ε, δ>0)-DP)")
    return rdp
