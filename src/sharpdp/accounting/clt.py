"""The GDP central-limit *estimate* of a composition — an approximation, never a guarantee.

Dong–Roth–Su 2019 (Thms 3.4–3.5): as the number of composed mechanisms grows, with each one's
privacy loss small, the composition's trade-off function approaches that of μ-GDP with

    μ = 2·Σ_i KL_i / √(Σ_i Var_i),

where KL_i = E_P[L_i] and Var_i = Var_P(L_i) are the mean and variance of item i's privacy loss
L_i = log(dP_i/dQ_i) under the dominating pair (P_i, Q_i). It is a *limit* statement: at finite k
the true ε(δ) can be larger or smaller (compared with the exact optima of Kairouz–Oh–Viswanath
2015 and Dong–Durfee–Rogers 2020 in ``tests/test_clt.py``, it is conservative for pure DP at
small k and very accurate for bounded range). So sharpdp offers it as :class:`CLTEstimate`, which
is not a :class:`~sharpdp.Guarantee`: it cannot be spent, composed or compared as one.

Moments per item (closed forms; ε0 the item's pure-DP parameter):

* Gaussian / μ-GDP: L ~ N(μ²/2, μ²) under P: KL = μ²/2, Var = μ² (then μ_CLT is exact);
* ε0-DP guarantees and binary randomized response (the RR pair, loss ±ε0):
  KL = ε0·tanh(ε0/2), Var = ε0²/cosh²(ε0/2);
* Laplace (loss ε0 w.p. ½, −ε0 w.p. ½e^{−ε0}, ε0 − 2u for u ~ Exp(1) on [0, ε0]):
  KL = ε0 + e^{−ε0} − 1, Var by quadrature;
* η-bounded range (exponential mechanisms): the worst two-point pair GRR_t (loss t w.p. p_t,
  t − η otherwise, p_t = e^t(e^{−t} − e^{−η})/(1 − e^{−η})): KL_t = t − η(1 − p_t),
  Var_t = η²p_t(1 − p_t), with the t ∈ [0, η] that maximises μ (one t shared by all items of the
  same η, the worst case of the estimate).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from sharpdp import _divergences, _validate
from sharpdp.accounting._items import bounded_range, normalise
from sharpdp.errors import NotImplied
from sharpdp.guarantees import GDP, ApproxDP, BoundedRange, Guarantee, PureDP

__all__ = ["CLTEstimate", "clt_estimate", "register_moments"]

Moments = tuple[float, float]  # (KL, Var) of the privacy loss under P
_MOMENTS: dict[type, Callable[[Guarantee], Moments]] = {}


def register_moments(
    cls: type,
) -> Callable[[Callable[[Guarantee], Moments]], Callable[[Guarantee], Moments]]:
    """Register (KL, Var) of the privacy loss of a guarantee or mechanism type (decorator)."""

    def deco(fn: Callable[[Guarantee], Moments]) -> Callable[[Guarantee], Moments]:
        _MOMENTS[cls] = fn
        return fn

    return deco


@dataclass(frozen=True, slots=True)
class CLTEstimate:
    """μ-GDP *approximation* of a composition by the central limit theorem (not a guarantee).

    Attributes:
        mu: the estimated GDP parameter.
    """

    mu: float
    label: ClassVar[str] = "estimate (central limit theorem; NOT a privacy guarantee)"

    def epsilon(self, delta: float) -> float:
        """The ε at which μ-GDP has δ(ε) = ``delta`` (an estimate, see the class docstring)."""
        return _divergences.gaussian_epsilon(self.mu, _validate.probability("delta", delta))

    def delta(self, epsilon: float) -> float:
        """The δ of μ-GDP at ``epsilon`` (an estimate, see the class docstring)."""
        return _divergences.gaussian_delta(
            self.mu, _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        )

    def __str__(self) -> str:
        return f"μ ≈ {self.mu:.6g}-GDP ({self.label})"


def clt_estimate(items: Iterable[Guarantee | tuple[Guarantee, int]]) -> CLTEstimate:
    """The DRS19 central-limit estimate μ = 2ΣKL_i/√(ΣVar_i) of composing ``items``.

    Args:
        items: guarantees, mechanisms or ``(item, count)`` pairs, as for :func:`sharpdp.compose`.

    Returns:
        A :class:`CLTEstimate` (ε(δ), δ(ε) of the approximating Gaussian). It is labelled as an
        estimate everywhere because it is one: use :func:`sharpdp.compose` for a guarantee.

    Raises:
        NotImplied: an item has no known loss moments (e.g. (ε, δ>0)-DP, whose loss is
            unbounded), or bounded-range items of several different η.

    Example:
        >>> import sharpdp as sdp
        >>> round(sdp.clt_estimate([(sdp.Gaussian(2.0), 4)]).mu, 6)  # exact for Gaussians
        1.0
    """
    kl, var = 0.0, 0.0
    br: dict[float, int] = {}
    for g, count in normalise(items):
        eta = _bounded_range_eta(g)
        if eta is not None:
            br[eta] = br.get(eta, 0) + count
            continue
        m, v = _moments(g)
        kl += count * m
        var += count * v
    if len(br) > 1:
        raise NotImplied("the CLT estimate handles bounded-range items of one η only")
    if br:
        ((eta, count),) = br.items()
        return CLTEstimate(_worst_br_mu(eta, count, kl, var))
    return CLTEstimate(_mu(kl, var))


def _mu(kl: float, var: float) -> float:
    if var <= 0.0:
        return 0.0
    return 2.0 * kl / math.sqrt(var)


def _moments(g: Guarantee) -> Moments:
    for cls in type(g).__mro__:
        fn = _MOMENTS.get(cls)
        if fn is not None:
            return fn(g)
    raise NotImplied(f"no loss moments are known for {g!r}; the CLT estimate does not apply")


def _bounded_range_eta(g: Guarantee) -> float | None:
    from sharpdp.mechanisms.base import Mechanism

    if not isinstance(g, BoundedRange | Mechanism) or type(g) in _MOMENTS:
        return None
    try:
        return bounded_range(g).eta
    except NotImplied:
        return None


def _br_moments(eta: float, t: float) -> Moments:
    if eta == 0.0:
        return 0.0, 0.0
    p = math.expm1(t - eta) / math.expm1(-eta)  # e^t·(e^{−t} − e^{−η})/(1 − e^{−η})
    p = min(max(p, 0.0), 1.0)
    return t - eta * (1.0 - p), eta * eta * p * (1.0 - p)


def _worst_br_mu(eta: float, count: int, kl: float, var: float) -> float:
    from scipy.optimize import minimize_scalar

    def neg_mu(t: float) -> float:
        m, v = _br_moments(eta, t)
        return -_mu(kl + count * m, var + count * v)

    grid = [eta * j / 64 for j in range(1, 64)]
    best = min(grid, key=neg_mu)
    res = minimize_scalar(
        neg_mu, bounds=(max(best - eta / 64, 0.0), min(best + eta / 64, eta)), method="bounded"
    )
    return max(-neg_mu(best), -float(res.fun))


def _pure_moments(eps0: float) -> Moments:
    return eps0 * math.tanh(0.5 * eps0), (eps0 / math.cosh(0.5 * eps0)) ** 2


@register_moments(GDP)
def _gdp_moments(g: Guarantee) -> Moments:
    mu = g.mu  # type: ignore[attr-defined]
    return 0.5 * mu * mu, mu * mu


@register_moments(PureDP)
def _puredp_moments(g: Guarantee) -> Moments:
    return _pure_moments(g.epsilon_)  # type: ignore[attr-defined]


@register_moments(ApproxDP)
def _approx_moments(g: Guarantee) -> Moments:
    if g.delta_ > 0.0:  # type: ignore[attr-defined]
        raise NotImplied(f"{g!r}: (ε, δ>0)-DP has no bounded loss moments")
    return _pure_moments(g.epsilon_)  # type: ignore[attr-defined]


def _register_mechanisms() -> None:
    from sharpdp.mechanisms.additive import Gaussian, Laplace
    from sharpdp.mechanisms.randomized_response import RandomizedResponse

    @register_moments(Gaussian)
    def _gaussian(g: Guarantee) -> Moments:
        mu = g.mu  # type: ignore[attr-defined]
        return 0.5 * mu * mu, mu * mu

    @register_moments(RandomizedResponse)
    def _rr(g: Guarantee) -> Moments:
        if g.categories != 2:  # type: ignore[attr-defined]
            raise NotImplied("loss moments are implemented for binary randomized response")
        return _pure_moments(g.epsilon_)  # type: ignore[attr-defined]

    @register_moments(Laplace)
    def _laplace(g: Guarantee) -> Moments:
        from scipy.integrate import quad

        e0 = g.epsilon0  # type: ignore[attr-defined]
        kl = e0 + math.expm1(-e0)
        middle, _ = quad(lambda u: (e0 - 2.0 * u) ** 2 * math.exp(-u) / 2.0, 0.0, e0)
        second = 0.5 * e0 * e0 * (1.0 + math.exp(-e0)) + middle
        return kl, max(second - kl * kl, 0.0)


_register_mechanisms()
