"""The ``gdp`` analysis: exact composition of Gaussian / μ-GDP items [Dong–Roth–Su 2019, Cor 3.3]."""

from __future__ import annotations

import math

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
    all_gaussian,
)
from sharpdp.accounting.registry import analysis
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
    return GDP(_math.up(math.sqrt(math.fsum(c * m * m for m, c in mus))))

