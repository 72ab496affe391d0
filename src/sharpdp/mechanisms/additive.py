"""Additive noise mechanisms: Laplace and Gaussian (their exact privacy characterisations).

Neighbouring relation: inputs whose query values differ by at most ``sensitivity`` (L1 for Laplace,
L2 for Gaussian). The characterisations are those of a scalar query; for the Gaussian they hold for
vector queries with L2 sensitivity too (rotation invariance reduces to one dimension).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from sharpdp import _divergences, _math, _validate
from sharpdp.conversions import register
from sharpdp.guarantees import GDP, ZCDP
from sharpdp.mechanisms.base import Mechanism

__all__ = ["Gaussian", "Laplace", "gaussian_to_gdp", "gaussian_to_zcdp", "laplace_to_zcdp"]


@dataclass(frozen=True, slots=True)
class Laplace(Mechanism):
    """The Laplace mechanism: releases f(x) + Lap(scale), density ∝ exp(−|y − f(x)|/scale).

    With ε0 = sensitivity/scale it is ε0-DP; its exact profile is δ(ε) = 1 − e^{(ε−ε0)/2} on
    [0, ε0] (FORMULAS §6), its RDP curve Mironov 2017 Prop 6, and its tight zCDP parameter
    ε0 + e^{−ε0} − 1 [Harrison–Manurangsi 2025, arXiv 2510.25746].

    Args:
        scale: the noise scale b > 0.
        sensitivity: the L1 sensitivity Δ ≥ 0 of the query.
    """

    scale: float
    sensitivity: float = 1.0
    notion: ClassVar[str] = "Laplace mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _validate.positive("scale", self.scale))
        object.__setattr__(
            self, "sensitivity", _validate.nonnegative("sensitivity", self.sensitivity)
        )

    @property
    def epsilon0(self) -> float:
        """ε0 = Δ/b, the mechanism's pure-DP parameter (tight)."""
        return self.sensitivity / self.scale

    def _renyi(self, alpha: float) -> float:
        return _divergences.laplace_renyi(self.epsilon0, alpha)

    def _delta(self, epsilon: float) -> float:
        return _divergences.laplace_delta(self.epsilon0, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _divergences.laplace_epsilon(self.epsilon0, delta)

    def _group(self, k: int) -> Laplace:
        # k records move the query by at most kΔ: the same mechanism with sensitivity kΔ.
        return Laplace(self.scale, k * self.sensitivity)


@dataclass(frozen=True, slots=True)
class Gaussian(Mechanism):
    """The Gaussian mechanism: releases f(x) + N(0, σ²).

    It is μ-GDP with μ = Δ/σ, exactly: δ(ε) by Balle–Wang 2018 Thm 8, D_α = αΔ²/(2σ²),
    ρ = Δ²/(2σ²)-zCDP (BS16 Prop 1.6), all tight.

    Args:
        sigma: the noise standard deviation σ > 0.
        sensitivity: the L2 sensitivity Δ ≥ 0 of the query.
    """

    sigma: float
    sensitivity: float = 1.0
    notion: ClassVar[str] = "Gaussian mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _validate.positive("sigma", self.sigma))
        object.__setattr__(
            self, "sensitivity", _validate.nonnegative("sensitivity", self.sensitivity)
        )

    @property
    def mu(self) -> float:
        """μ = Δ/σ, the GDP parameter."""
        return self.sensitivity / self.sigma

    @property
    def rho(self) -> float:
        """ρ = Δ²/(2σ²), the zCDP parameter."""
        return 0.5 * self.mu * self.mu

    def _renyi(self, alpha: float) -> float:
        if self.mu == 0.0:
            return 0.0
        return math.inf if alpha == math.inf else alpha * self.rho

    def _delta(self, epsilon: float) -> float:
        return _divergences.gaussian_delta(self.mu, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _divergences.gaussian_epsilon(self.mu, delta)

    def _group(self, k: int) -> Gaussian:
        # k records move the query by at most kΔ in L2: the same mechanism with sensitivity kΔ.
        return Gaussian(self.sigma, k * self.sensitivity)


@register(
    Laplace,
    ZCDP,
    name="hm25",
    theorem="Harrison–Manurangsi 2025: Laplace is (ε0 + e^{−ε0} − 1)-zCDP (tight)",
    tight=True,
)
def laplace_to_zcdp(m: Laplace) -> ZCDP:
    """The ε0-DP Laplace mechanism is exactly (ε0 + e^{−ε0} − 1)-zCDP.

    [Harrison–Manurangsi, "Exact zCDP characterizations for fundamental differentially private
    mechanisms", FORC 2026, arXiv 2510.25746; conjectured by Y.-X. Wang 2022.] Tight: it equals the
    KL divergence, the α → 1 limit of D_α/α. Much smaller than ε0·tanh(ε0/2) and ε0²/2.
    """
    return ZCDP(_math.expm1mx(-m.epsilon0))  # ε0 + e^{−ε0} − 1 without cancellation


@register(
    Gaussian,
    ZCDP,
    name="bs16-prop1.6",
    theorem="Bun–Steinke 2016 Prop 1.6: Δ²/(2σ²)-zCDP (tight)",
    tight=True,
)
def gaussian_to_zcdp(m: Gaussian) -> ZCDP:
    """The Gaussian mechanism is Δ²/(2σ²)-zCDP [BS16 Prop 1.6]; tight at every order."""
    return ZCDP(m.rho)


@register(
    Gaussian, GDP, name="drs19", theorem="Dong–Roth–Su 2019 Thm 2.7: Δ/σ-GDP (tight)", tight=True
)
def gaussian_to_gdp(m: Gaussian) -> GDP:
    """The Gaussian mechanism is exactly (Δ/σ)-GDP [Dong–Roth–Su 2019, Thm 2.7]."""
    return GDP(m.mu)
