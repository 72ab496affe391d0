"""The ``zcdp`` analysis: zCDP adds [Bun–Steinke 2016, Lemma 2.3]; dominated by ``rdp`` when that
applies."""

from __future__ import annotations

import math

from sharpdp import _math
from sharpdp.accounting._items import Composed, Items
from sharpdp.accounting.registry import analysis, convert_all
from sharpdp.conversions import register
from sharpdp.errors import NotImplied, NumericalError
from sharpdp.guarantees import ZCDP, Guarantee


@analysis(
    "zcdp",
    "Bun–Steinke 2016 Lemma 2.3 (zCDP adds) + CKS20 conversion",
    dominated_by="rdp",
)
def _zcdp(items: Items, adaptive: bool) -> Guarantee:
    """ρ_i-zCDP means D_α ≤ ξ_i + ρ_i·α for every α, so when every item has a Rényi curve (the
    ``rdp`` analysis applies) the summed curve lies below Σ(ξ_i + ρ_i·α) pointwise, and the
    CKS20 conversion, monotone in the curve, can only give less: ``zcdp`` never wins then.

    Items without a finite Rényi bound at α = 2 (e.g. (ε, δ > 0)-DP, which implies no zCDP
    guarantee) are converted first: their conversion usually fails at once, and the analysis then
    declines before the certified conversions of the other items (up to ~0.1 s each, see
    ``sharpdp.conversions.guarantee_to_zcdp_certified``) are spent. The order does not change the
    result: the sum is over every item either way.
    """
    return _summed(items)


def _summed(items: Items) -> ZCDP:
    """(Σ c_i ξ_i, Σ c_i ρ_i)-zCDP of the items' own sharpest zCDP conversions, rounded up."""
    zs = convert_all(tuple(sorted(items, key=_has_renyi_curve)), ZCDP)
    rho = math.fsum(c * z.rho for z, c in zs if isinstance(z, ZCDP))
    xi = math.fsum(c * z.xi for z, c in zs if isinstance(z, ZCDP))
    return ZCDP(_math.up(rho), _math.up(xi))  # (up: towards +∞, a negative ξ too)


def _has_renyi_curve(item: tuple[Guarantee, int]) -> bool:
    """Whether the item bounds D_2 (sort key: items without a bound go first, see ``_zcdp``)."""
    try:
        return math.isfinite(item[0].renyi(2.0))
    except (NotImplied, NumericalError):
        return False


@register(
    Composed,
    ZCDP,
    name="zcdp-of-items",
    theorem="each item's own (ξ_i, ρ_i)-zCDP (its sharpest conversion), added (Bun–Steinke 2016 "
    "Lemma 2.3, adaptively)",
)
def composed_to_zcdp(g: Composed) -> ZCDP:
    """A composition's (ξ, ρ)-zCDP from its items': ρ = Σ c_i ρ_i and ξ = Σ c_i ξ_i, rounded up,
    with (ξ_i, ρ_i) each item's sharpest zCDP conversion (valid adaptively, BS16 Lemma 2.3).
    Exact for Gaussians; for two ε-DP items 2ε·tanh(ε/2), where the composed pure 2ε-DP reads
    2ε·tanh(ε).

    Raises:
        NotImplied: an item has no zCDP guarantee (the message names it).
    """
    exact = g.exact_zcdp()
    if exact is not None:  # rationals, rounded up once
        return ZCDP(_math.float_up(exact[0]), _math.float_up(exact[1]))
    return _summed(g.items)
