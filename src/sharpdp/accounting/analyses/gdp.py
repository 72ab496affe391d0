"""The ``gdp`` analysis: exact composition of Gaussian / μ-GDP items [Dong–Roth–Su 2019, Cor 3.3]."""

from __future__ import annotations

import math

from sharpdp import _math
from sharpdp.accounting._items import (
    Composed,
    Items,
    all_gaussian,
)
from sharpdp.accounting.registry import analysis
from sharpdp.conversions import register
from sharpdp.errors import NotImplied
from sharpdp.guarantees import GDP, Guarantee


@analysis(
    "gdp",
    "Dong–Roth–Su 2019 Cor 3.3: μ-GDP composes to √(Σμ_i²)-GDP (exact)",
    exact_for=all_gaussian,
)
def _gdp(items: Items, adaptive: bool) -> Guarantee:
    from sharpdp.mechanisms.additive import Gaussian

    mus = []
    for g, c in items:
        if not isinstance(g, GDP | Gaussian):
            raise NotImplied(f"{g!r} is not a Gaussian/GDP item")
        mus.append((g.mu, c))
    # √(Σ c μ²) as M·√(Σ c (μ/M)²), M the largest μ: c·μ² underflowed to 0 for μ ≲ 1e-162
    # (two GDP(1e-300) composed to δ(0) = 0) and overflows for μ ≳ 1e154
    top = max((m for m, _ in mus), default=0.0)
    if top == 0.0 or math.isinf(top):
        return GDP(top)
    return GDP(_math.up(top * math.sqrt(math.fsum(c * (m / top) ** 2 for m, c in mus))))


@register(
    Composed,
    GDP,
    name="gdp-of-items",
    theorem=(
        "each item's own μ_i-GDP (its sharpest conversion), composed: √(Σ c_i μ_i²)-GDP, "
        "adaptively (Dong–Roth–Su 2019 Cor 3.3)"
    ),
)
def composed_to_gdp(g: Composed) -> GDP:
    """A composition's μ-GDP from its items': μ = √(Σ c_i μ_i²), rounded up, with μ_i each item's
    sharpest GDP conversion (valid adaptively, Dong–Roth–Su 2019 Cor 3.3). For a composition
    whose privacy loss is bounded the profile route certifies the least μ of the composed
    profile itself, which this can never beat (up to that profile's accuracy), so this route
    answers only where that one cannot: an item with an unbounded loss, e.g. a Gaussian.

    Raises:
        NotImplied: the loss is bounded (the profile route answers), or an item has no GDP
            guarantee (the message names it).
    """
    from sharpdp.conversions import convert

    if math.isfinite(g.renyi(math.inf)):
        raise NotImplied("the privacy loss is bounded: the profile route gives the least μ")
    total = []
    for item, count in g.items:
        try:
            mu = convert(item, GDP).mu
        except NotImplied as err:
            raise NotImplied(f"{item!r} has no GDP guarantee ({err})") from None
        total.append(count * _math.up(mu * mu))
    return GDP(_math.up(math.sqrt(_math.up(math.fsum(total)))))
