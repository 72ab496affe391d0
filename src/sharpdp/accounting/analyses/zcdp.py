"""The ``zcdp`` analysis: zCDP adds [Bun–Steinke 2016, Lemma 2.3]; dominated by ``rdp`` when that
applies."""

from __future__ import annotations

import math

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
)
from sharpdp.accounting.registry import analysis, convert_all
from sharpdp.guarantees import ZCDP, Guarantee


@analysis(
    "zcdp",
    "Bun–Steinke 2016 Lemma 2.3 (zCDP adds) + CKS20 conversion",
    dominated_by="rdp",
)
def _zcdp(items: Items, adaptive: bool) -> Guarantee:
    """ρ_i-zCDP means D_α ≤ ξ_i + ρ_i·α for every α, so when every item has a Rényi curve (the
    ``rdp`` analysis applies) the summed curve lies below Σ(ξ_i + ρ_i·α) pointwise, and the
    CKS20 conversion, monotone in the curve, can only give less: ``zcdp`` never wins then."""
    zs = convert_all(items, ZCDP)
    rho = math.fsum(c * z.rho for z, c in zs if isinstance(z, ZCDP))
    xi = math.fsum(c * z.xi for z, c in zs if isinstance(z, ZCDP))
    return ZCDP(_math.up(rho), _math.up(xi) if xi > 0 else xi)
