"""Which dominating pairs describe each item: a registry keyed by type (:func:`register_pair`).

A symmetric dominating pair (P, Q) dominates both orders of every neighbouring pair of the item's
mechanism, so the privacy loss L = log(P/Q)(Y), Y ~ P, describes it for composition
[Zhu–Dong–Wang 2022, arXiv 2106.08567, Def 7 and Thm 10].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from sharpdp.accounting.pld.pairs import (
    BoundedRangePair,
    DominatingPair,
    FinitePair,
    GaussianPair,
    LaplacePair,
    approx_dp_pair,
    discrete_gaussian_pair,
    discrete_laplace_pair,
    randomized_response_pair,
)
from sharpdp.errors import NotImplied

T = TypeVar("T")

# =================================================================================================
# registry of dominating pairs

Decomposition = tuple[tuple[DominatingPair, int], ...]
_REGISTRY: dict[type, Callable[[Any], Decomposition | DominatingPair]] = {}
_LAZY: dict[tuple[str, str], Callable[[Any], Decomposition | DominatingPair]] = {}


def register_pair(
    kind: type,
) -> Callable[
    [Callable[[T], Decomposition | DominatingPair]], Callable[[T], Decomposition | DominatingPair]
]:
    """Decorator registering ``function(item) -> DominatingPair`` (or ``((pair, count), ...)``).

    The function must return a pair dominating the item's mechanism *in both orders* of every
    neighbouring pair (a symmetric pair does), or several pairs whose composition does (e.g. the
    k rounds of one-shot top-k). Lookup walks the item type's MRO.
    """

    def decorate(
        function: Callable[[T], Decomposition | DominatingPair],
    ) -> Callable[[T], Decomposition | DominatingPair]:
        _REGISTRY[kind] = function
        return function

    return decorate


def _lookup(item: object) -> Callable[[Any], Decomposition | DominatingPair] | None:
    for klass in type(item).__mro__:
        fn = _REGISTRY.get(klass)
        if fn is not None:
            return fn
        fn = _LAZY.get((klass.__module__, klass.__qualname__))
        if fn is not None:
            return fn
    return _by_characterisation(item)


def _by_characterisation(item: object) -> Callable[[Any], Decomposition | DominatingPair] | None:
    """A mechanism without a pair of its own takes its characterisation's: the characterisation is
    the mechanism's worst case over neighbours (``Mechanism.characterisation``), so a pair that
    dominates the guarantee dominates the mechanism (e.g. the interval quantile, exactly ε-BR,
    takes the ε-RR pair)."""
    characterise = getattr(item, "characterisation", None)
    if not callable(characterise):
        return None
    try:
        guarantee = characterise()
    except NotImplementedError:
        return None
    if guarantee is item or type(guarantee) is type(item):
        return None
    fn = _lookup(guarantee)
    if fn is None:
        return None
    return lambda _item: fn(guarantee)


def supports(item: object) -> bool:
    """Whether a dominating pair is registered for ``item``'s type and describes it (a zCDP
    guarantee has one only at ρ = 0)."""
    fn = _lookup(item)
    if fn is None:
        return False
    try:
        fn(item)
    except NotImplied:
        return False
    return True


def dominating_pairs(item: object) -> Decomposition:
    """The dominating pair(s) of ``item``, as ``((pair, count), ...)``.

    Raises:
        NotImplied: no pair is registered for the item's type (the message names the item).
    """
    fn = _lookup(item)
    if fn is None:
        raise NotImplied(
            f"no privacy loss distribution is known for {item!r} ({type(item).__name__}); "
            "supported: "
            + ", ".join(sorted({k.__name__ for k in _REGISTRY} | {q for _, q in _LAZY}))
        )
    out = fn(item)
    if isinstance(out, DominatingPair):
        return ((out, 1),)
    return tuple(out)


#: The η for which bounded-range items take :class:`BoundedRangePair` (outside: the η-RR pair).
BR_PAIR_RANGE = (1e-5, 30.0)


def _register_builtin() -> None:
    from sharpdp.guarantees import GDP, ZCDP, ApproxDP, ApproxZCDP, BoundedRange, PureDP
    from sharpdp.mechanisms.additive import Gaussian, Laplace
    from sharpdp.mechanisms.randomized_response import RandomizedResponse
    from sharpdp.mechanisms.selection import TopK

    def gaussian(mu: float) -> DominatingPair:
        if mu == 0.0:
            return FinitePair((0.0,), (1.0,), name="perfect privacy")
        if math.isinf(mu):
            return FinitePair((), (), 1.0, name="no privacy")
        if mu < 1e-10:
            # below the resolution of any grid (and μ²/2 may underflow): μ-GDP is (ε, δ)-DP at
            # ε = 40μ with δ ≤ Φ(−40 + μ/2) < 1e-340 < 5e-324 [DRS Cor 2.13], so the KOV pair of
            # (40μ, 5e-324)-DP dominates it.
            return approx_dp_pair(40.0 * mu, 5e-324)
        return GaussianPair(mu)

    @register_pair(GDP)
    def _gdp(g: GDP) -> DominatingPair:
        """μ-GDP: the pair (N(0,1), N(μ,1)) [Dong–Roth–Su 2019, Def 2.6]; symmetric."""
        return gaussian(g.mu)

    @register_pair(Gaussian)
    def _gauss(m: Gaussian) -> DominatingPair:
        """The Gaussian mechanism is exactly (Δ/σ)-GDP [Dong–Roth–Su 2019, Thm 2.7]."""
        return gaussian(m.mu)

    @register_pair(Laplace)
    def _laplace(m: Laplace) -> DominatingPair:
        """(Lap(0, b), Lap(Δ, b)) [Koskela et al. 2020]; symmetric (y ↦ Δ − y)."""
        e0 = m.epsilon0
        if e0 == 0.0:
            return FinitePair((0.0,), (1.0,), name="perfect privacy")
        return LaplacePair(e0)

    @register_pair(RandomizedResponse)
    def _rr(m: RandomizedResponse) -> DominatingPair:
        """The k-RR pair itself (two different true values); symmetric."""
        return randomized_response_pair(m.epsilon_, m.categories)

    @register_pair(PureDP)
    def _pure(g: PureDP) -> DominatingPair:
        """ε-RR dominates every ε-DP mechanism [Kairouz–Oh–Viswanath 2015, Thm 2.4]."""
        return randomized_response_pair(g.epsilon_, 2)

    @register_pair(ApproxDP)
    def _approx(g: ApproxDP) -> DominatingPair:
        """The four-point KOV pair dominates every (ε, δ)-DP mechanism [KOV15, Thm 2.4]."""
        return approx_dp_pair(g.epsilon_, g.delta_)

    @register_pair(ZCDP)
    def _zcdp(g: ZCDP) -> DominatingPair:
        """(ξ, 0)-zCDP is ξ-DP [Bun–Steinke 2016, Def 1.1 at α = ∞]: the ξ-RR pair. No single
        pair dominates every ρ-zCDP mechanism with ρ > 0 (declined: other analyses answer)."""
        if g.rho == 0.0 and g.xi >= 0.0:
            return randomized_response_pair(g.xi, 2)
        raise NotImplied(f"no dominating pair is known for {g!r} (ρ > 0)")

    @register_pair(ApproxZCDP)
    def _approx_zcdp(g: ApproxZCDP) -> DominatingPair:
        """δ-approximate (ξ, 0)-zCDP is (ξ, δ)-DP (its profile is δ + (1 − δ)·δ_RR(ξ) = δ at ξ):
        the KOV pair; with ρ > 0, declined as for zCDP."""
        if g.rho == 0.0 and g.xi >= 0.0:
            return approx_dp_pair(g.xi, g.delta_)
        raise NotImplied(f"no dominating pair is known for {g!r} (ρ > 0)")

    def bounded_range_pair(eta: float) -> DominatingPair:
        """The η-BR pair (the trivial pairs at η = 0 and ∞; the η-RR pair outside BR_PAIR_RANGE)."""
        if eta == 0.0:
            return FinitePair((0.0,), (1.0,), name="perfect privacy")
        if math.isinf(eta):
            return FinitePair((), (), 1.0, name="no privacy")
        if not BR_PAIR_RANGE[0] <= eta <= BR_PAIR_RANGE[1]:
            # read as η-DP (η-BR ⇒ η-DP), whose atoms compose exactly: below the range the
            # continuous law is too fine for the grids and the inversion, above it both pairs'
            # profiles are within e^{−η/4} of each other's (δ(0) = tanh(η/4) against tanh(η/2))
            return randomized_response_pair(eta, 2)
        return BoundedRangePair(eta)

    @register_pair(BoundedRange)
    def _br(g: BoundedRange) -> DominatingPair:
        """η-BR: the pair of the BR profile's supremum (:class:`BoundedRangePair`), dominated by
        η-RR's (η-BR ⇒ η-DP) and much smaller in composition."""
        return bounded_range_pair(g.eta)

    # Exponential and report-noisy-max with Gumbel noise are characterised as ε-BR, permute-and-
    # flip and the other noises as ε-DP: their pairs come from the characterisation.

    @register_pair(TopK)
    def _topk(m: TopK) -> Decomposition:
        """One-shot top-k ≡ k adaptive ε-BR rounds [Durfee–Rogers 2019]: k copies of the
        ε-BR pair."""
        return ((bounded_range_pair(m.epsilon_), m.k),)

    # The discrete mechanisms (sharpdp.mechanisms.discrete) are registered by name, lazily: the
    # pairs only read the documented attributes scale/sigma and sensitivity.
    def _dlap(m: Any) -> DominatingPair:
        """Discrete Laplace P(z) ∝ exp(−|z|/scale), integer sensitivity: (Z, Z + Δ)."""
        return discrete_laplace_pair(float(m.scale), int(m.sensitivity))

    def _dgauss(m: Any) -> DominatingPair:
        """Discrete Gaussian P(z) ∝ exp(−z²/(2σ²)), integer sensitivity: (Z, Z + Δ)."""
        return discrete_gaussian_pair(float(m.sigma), int(m.sensitivity))

    _LAZY[("sharpdp.mechanisms.discrete", "DiscreteLaplace")] = _dlap
    _LAZY[("sharpdp.mechanisms.discrete", "DiscreteGaussian")] = _dgauss


_register_builtin()
