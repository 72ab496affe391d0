"""Additive noise mechanisms: Laplace and Gaussian (their exact privacy characterisations).

Neighbouring relation: inputs whose query values differ by at most ``sensitivity`` (L1 for Laplace,
L2 for Gaussian). The characterisations are those of a scalar query; for the Gaussian they hold for
vector queries with L2 sensitivity too (rotation invariance reduces to one dimension).

Both release on a power-of-two grid (:mod:`sharpdp.mechanisms._grid`): the query is rounded to
the grid, whose step ``granularity`` is part of the description, and the accounting uses the rounded
query's sensitivity Δ_eff = γ⌈Δ/γ⌉ (equal to Δ whenever γ divides Δ, e.g. Δ = 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sharpdp import _divergences, _math, _validate
from sharpdp.conversions import register
from sharpdp.errors import InvalidParameter
from sharpdp.guarantees import GDP, ZCDP
from sharpdp.mechanisms import _grid, _samplers
from sharpdp.mechanisms._rounded_gaussian import rounded_gaussian
from sharpdp.mechanisms._samplers import RNGLike
from sharpdp.mechanisms.base import Mechanism

__all__ = ["Gaussian", "Laplace", "gaussian_to_gdp", "gaussian_to_zcdp", "laplace_to_zcdp"]

#: Integer grid noise: (scale in grid units, size, generator) → int64 draws.
_GridNoise = Callable[[Fraction, int, np.random.Generator], npt.NDArray[np.int64]]


class _OnGrid:
    """What Laplace and Gaussian share: the release grid γℤ and its effective sensitivity."""

    __slots__ = ()
    sensitivity: float
    granularity: float | None

    @property
    def effective_sensitivity(self) -> float:
        """Δ_eff = γ⌈Δ/γ⌉, the sensitivity of the query rounded to the release grid."""
        return _grid.effective_sensitivity(self.sensitivity, self._step)

    def _noise_scale(self) -> float:
        raise NotImplementedError

    def _repr_default(self, parameter: str, default: object) -> object:
        # granularity=None is stored as the automatic grid it resolves to: omit that one from reprs
        if parameter == "granularity" and default is None:
            return _grid.auto_granularity(self._noise_scale(), self.sensitivity)
        return default

    @property
    def _step(self) -> float:
        assert self.granularity is not None  # resolved in __post_init__
        return self.granularity

    def _ratio_up(self, noise_scale: float) -> float:
        """Δ_eff/noise_scale, computed exactly and rounded up."""
        return _math.float_up(Fraction(self.effective_sensitivity) / Fraction(noise_scale))

    def _release(self, value: Any, noise_scale: float, draw: _GridNoise, rng: RNGLike) -> Any:
        """γ·(round(x/γ) + K), with K drawn by ``draw(noise_scale/γ, size, generator)``."""
        units, scalar = _grid.to_grid(value, self._step)
        t = Fraction(noise_scale) / Fraction(self._step)  # exact: the step is a power of two
        noise = draw(t, units.size, _samplers.as_generator(rng))
        return _grid.from_grid(units + noise.reshape(units.shape), self._step, scalar)


@dataclass(frozen=True, slots=True)
class Laplace(_OnGrid, Mechanism):
    """The Laplace mechanism: releases f(x) + Lap(scale), density ∝ exp(−|y − f(x)|/scale).

    With ε0 = Δ_eff/scale it is ε0-DP; its exact profile is δ(ε) = 1 − e^{(ε−ε0)/2} on
    [0, ε0] (the hockey-stick divergence of Lap(0, b) and Lap(Δ_eff, b) in closed form, derived in
    :func:`sharpdp._divergences.laplace_delta`), its RDP curve Mironov 2017 Prop 6, and its tight
    zCDP parameter ε0 + e^{−ε0} − 1 [Harrison–Manurangsi 2025, arXiv 2510.25746]. Δ_eff = γ⌈Δ/γ⌉ is the
    sensitivity of the query rounded to the release grid γℤ (Δ_eff = Δ when γ divides Δ). With the
    default grid Δ_eff/Δ − 1 ≤ 2⁻³⁰ whenever b ≤ 2^(⌊log₂ Δ⌋ + 20) (b/Δ ≤ 2¹⁹ suffices); for
    noisier mechanisms only Δ_eff − Δ < 2⁻⁴⁹·b holds (:mod:`sharpdp.mechanisms._grid`).

    :meth:`release` outputs γ·(round(x/γ) + K) with K = round(L/γ) drawn exactly: a deterministic
    function of x_γ + L, the continuous Laplace mechanism on the rounded query. So every number
    above holds for what is actually released, by post-processing.

    Args:
        scale: the noise scale b > 0.
        sensitivity: the L1 sensitivity Δ ≥ 0 of the query.
        granularity: the grid step γ, a power of two; default ≈ 2⁻³⁰·min(b, Δ), but at least
            b·2⁻⁵⁰ (see :func:`sharpdp.mechanisms._grid.auto_granularity`).
    """

    scale: float
    sensitivity: float = 1.0
    granularity: float | None = None
    _epsilon0: float = field(init=False, repr=False, compare=False)
    notion: ClassVar[str] = "Laplace mechanism"

    def __post_init__(self) -> None:
        scale = _validate.positive("scale", self.scale)
        sensitivity = _validate.nonnegative("sensitivity", self.sensitivity)
        step = _resolve_granularity(self.granularity, scale, sensitivity)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "granularity", step)
        # exact rational arithmetic once, not on every privacy query
        object.__setattr__(self, "_epsilon0", self._ratio_up(scale))

    def _noise_scale(self) -> float:
        return self.scale

    @property
    def epsilon0(self) -> float:
        """ε0 = Δ_eff/b, the mechanism's pure-DP parameter (tight; rounded up)."""
        return self._epsilon0

    def exact_pair(self) -> tuple[Fraction, Fraction] | None:
        """(Δ_eff/b, 0), exactly: the pure ε of the Laplace mechanism on its grid."""
        return Fraction(self.effective_sensitivity) / Fraction(self.scale), Fraction(0)

    def release(self, value: Any, rng: RNGLike = None) -> Any:
        """Release value + Laplace(scale) noise on the grid, exactly (see the class docstring).

        Args:
            value: a number or an array of numbers. Each entry of an array is released
                independently by this mechanism (each is one use of it).
            rng: a seed or a ``numpy.random.Generator``.

        Returns:
            A float for a scalar input, else a float64 array of the same shape.

        Raises:
            InvalidParameter: a value that is not a finite number, or one 2⁶² grid steps or
                more from 0 (|x| ≥ 2³² at the default grid of scale ≥ Δ = 1: pass a coarser
                ``granularity``).
        """
        return self._release(value, self.scale, _grid.rounded_laplace, rng)

    def _renyi(self, alpha: float) -> float:
        return _divergences.laplace_renyi(self.epsilon0, alpha)

    def _delta(self, epsilon: float) -> float:
        return _divergences.laplace_delta(self.epsilon0, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _divergences.laplace_epsilon(self.epsilon0, delta)

    def _group(self, k: int) -> Laplace:
        # k records move the rounded query by at most k·Δ_eff (rounded up: to nearest it fell
        # below k·Δ_eff from k ~ 10⁷)
        return Laplace(self.scale, _math.times_up(self.effective_sensitivity, k), self.granularity)


@dataclass(frozen=True, slots=True)
class Gaussian(_OnGrid, Mechanism):
    """The Gaussian mechanism: releases f(x) + N(0, σ²).

    With μ = Δ_eff/σ it is μ-GDP, exactly: δ(ε) by Balle–Wang 2018 Thm 8, D_α = αμ²/2,
    ρ = μ²/2-zCDP (BS16 Prop 1.6), all tight. Δ_eff = γ⌈Δ/γ⌉ is the sensitivity of the query
    rounded to the release grid γℤ (Δ_eff = Δ when γ divides Δ, e.g. Δ = 1). With the default grid
    Δ_eff/Δ − 1 ≤ 2⁻³⁰ whenever σ ≤ 2^(⌊log₂ Δ⌋ + 20) (σ/Δ ≤ 2¹⁹ suffices); for noisier
    mechanisms only Δ_eff − Δ < 2⁻⁴⁹·σ holds (:mod:`sharpdp.mechanisms._grid` derives both).

    :meth:`release` outputs γ·(round(x/γ) + K) with K = round(N/γ) drawn exactly
    (:mod:`sharpdp.mechanisms._rounded_gaussian`): a deterministic function of x_γ + N, the
    continuous Gaussian mechanism on the rounded query. So every number above holds for what is
    actually released, by post-processing.

    Args:
        sigma: the noise standard deviation σ > 0.
        sensitivity: the L2 sensitivity Δ ≥ 0 of the query (for a scalar query, |f(x) − f(x′)|).
        granularity: the grid step γ, a power of two not above σ; default ≈ 2⁻³⁰·min(σ, Δ),
            but at least σ·2⁻⁵⁰ (see :func:`sharpdp.mechanisms._grid.auto_granularity`).
    """

    sigma: float
    sensitivity: float = 1.0
    granularity: float | None = None
    _mu: float = field(init=False, repr=False, compare=False)
    notion: ClassVar[str] = "Gaussian mechanism"

    def __post_init__(self) -> None:
        sigma = _validate.positive("sigma", self.sigma)
        sensitivity = _validate.nonnegative("sensitivity", self.sensitivity)
        granularity = _resolve_granularity(self.granularity, sigma, sensitivity)
        if granularity > sigma:
            raise InvalidParameter(
                f"granularity={granularity!r} must not exceed sigma={sigma!r} (the exact "
                "rounded-Gaussian sampler needs at least one grid step per standard deviation)"
            )
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "granularity", granularity)
        object.__setattr__(self, "_mu", self._ratio_up(sigma))

    def _noise_scale(self) -> float:
        return self.sigma

    @property
    def mu(self) -> float:
        """μ = Δ_eff/σ, the GDP parameter (rounded up)."""
        return self._mu

    @property
    def rho(self) -> float:
        """ρ = μ²/2, the zCDP parameter (rounded up; ``inf`` when μ is)."""
        if math.isinf(self.mu):
            return math.inf
        return _math.float_up(Fraction(self.mu) ** 2 / 2)

    def exact_zcdp(self) -> tuple[Fraction, Fraction] | None:
        """(Δ_eff²/(2σ²), 0), exactly (Bun–Steinke 2016 Prop 1.6); ``None`` when μ overflows."""
        if math.isinf(self.mu):
            return None
        delta_eff, sigma = Fraction(self.effective_sensitivity), Fraction(self.sigma)
        return delta_eff**2 / (2 * sigma**2), Fraction(0)

    def release(self, value: Any, rng: RNGLike = None) -> Any:
        """Release value + N(0, σ²) noise on the grid, exactly (see the class docstring).

        Args:
            value: a number or an array of numbers. Each entry of an array is released
                independently by this mechanism (each is one use of it, a scalar query with
                sensitivity Δ).
            rng: a seed or a ``numpy.random.Generator``.

        Returns:
            A float for a scalar input, else a float64 array of the same shape.

        Raises:
            InvalidParameter: a value that is not a finite number, or one 2⁶² grid steps or
                more from 0 (|x| ≥ 2³² at the default grid of σ ≥ Δ = 1: pass a coarser
                ``granularity``).

        Examples:
            >>> import sharpdp as sdp
            >>> x = sdp.Gaussian(sigma=2.0).release([10.0, 20.0], rng=0)
            >>> x.shape
            (2,)
        """
        return self._release(value, self.sigma, rounded_gaussian, rng)

    def _renyi(self, alpha: float) -> float:
        mu = self._mu
        if mu == 0.0:
            return 0.0
        # αμ²/2 with three roundings (≤ 1.5 ulp): two ulps up covers them
        return math.inf if alpha == math.inf else _math.up(0.5 * alpha * mu * mu, 2)

    def _delta(self, epsilon: float) -> float:
        return _divergences.gaussian_delta(self.mu, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _divergences.gaussian_epsilon(self.mu, delta)

    def _group(self, k: int) -> Gaussian:
        # k records move the rounded query by at most k·Δ_eff (rounded up: to nearest it fell
        # below k·Δ_eff from k ~ 10⁷)
        return Gaussian(self.sigma, _math.times_up(self.effective_sensitivity, k), self.granularity)


def _resolve_granularity(granularity: object, noise_scale: float, sensitivity: float) -> float:
    if granularity is None:
        return _grid.auto_granularity(noise_scale, sensitivity)
    return _grid.check_granularity("granularity", granularity, noise_scale)


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
    # ε0 + e^{−ε0} − 1 without cancellation, moved up against its rounding (to nearest it fell
    # an ulp below at ε0 = 20)
    return ZCDP(_divergences.laplace_kl(m.epsilon0))


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
