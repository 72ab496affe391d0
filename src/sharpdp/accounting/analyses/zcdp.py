"""The ``zcdp`` analysis: zCDP adds [Bun–Steinke 2016, Lemma 2.3]; dominated by ``rdp`` when that
applies."""

from __future__ import annotations

import math

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
)
from sharpdp.accounting.registry import analysis, convert_all
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
    zs = convert_all(tuple(sorted(items, key=_has_renyi_curve)), ZCDP)
    rho = math.fsum(c * z.rho for z, c in zs if isinstance(z, ZCDP))
    xi = math.fsum(c * z.xi for z, c in zs if isinstance(z, ZCDP))
    return ZCDP(_math.up(rho), _math.up(xi) if xi > 0 else xi)


def _has_renyi_curve(item: tuple[Guarantee, int]) -> bool:
    """Whether the item bounds D_2 (sort key: items without a bound go first, see ``_zcdp``)."""
    try:
        return math.isfinite(item[0].renyi(2.0))
    except (NotImplied, NumericalError):
        return False
