"""The ``ddr20`` analysis: optimal *non-adaptive* composition of k η-bounded-range items
[Dong–Durfee–Rogers 2020, Thm 3]; used only with ``adaptive=False``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
    bounded_range,
    log_ratio,
)
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied, NumericalError
from sharpdp.guarantees import Guarantee


@dataclass(frozen=True)
class _DDR(Guarantee):
    """k-fold η-BR, non-adaptive optimum [Dong–Durfee–Rogers 2020, Thm 3].

    δ(ε) = max_t Σ_{i: kt − iη > ε} C(k,i) p^{k−i}(1−p)^i (e^{kt − iη} − e^ε) with
    p = (e^{−t} − e^{−η})/(1 − e^{−η}), the maximum attained at one of the candidates
    t*_l = clip((ε + (l+1)η)/(k+1), 0, η). Since p e^t = 1 − b and (1 − p)e^{t−η} = b with
    b = e^{−η}(e^t − 1)/(1 − e^{−η}), the sum at t is a difference of two binomial CDFs,

        F(t) = P[Bin(k, b) ≤ m] − e^ε P[Bin(k, 1 − p) ≤ m],  m = max{i : kt − iη > ε},

    so every candidate costs O(1) (:func:`scipy.special.bdtr`, the regularised incomplete beta)
    and δ(ε) costs O(k) instead of O(k²). Rounding (see :meth:`_log_delta`) is against the user.
    """

    eta: float
    k: int
    _memo: dict[float, float] = field(default_factory=dict, compare=False, repr=False)
    notion: ClassVar[str] = "optimal non-adaptive BR composition (DDR20)"

    #: Relative accuracy assumed for scipy's binomial CDF (``bdtr``, Cephes ``incbet``) with
    #: k ≤ :data:`_DDR_MAX_K` trials: 10× the peak error Cephes documents for parameters ≤ 10^5
    #: (8.7e-10); tests compare it with exact rational sums.
    CDF_REL: ClassVar[float] = 1e-8

    def _log_delta(self, epsilon: float) -> float:
        # ε(δ) evaluates the ends of its bracket several times: memoised per instance
        if epsilon not in self._memo:
            self._memo[epsilon] = self._log_delta_cdfs(epsilon)
        return self._memo[epsilon]

    def _log_delta_cdfs(self, epsilon: float) -> float:
        """log of an upper bound on δ(ε) (−inf if δ(ε) = 0), from the binomial CDFs.

        Each float candidate t̃ is within 4u·t of the exact t*_l, and b̃, q̃ = 1 − p̃ are within
        a relative 5u of b(t̃), q(t̃); so b, q at the exact candidate lie within a relative
        r = 16u(1 + η) of b̃, q̃ (|d log b/dt| ≤ 1/t + 1, |d log q/dt| ≤ 1/t). A binomial CDF at
        m falls as the success probability grows, so A = P[Bin(k, b) ≤ m] is evaluated at
        b̃(1 − r) and B = P[Bin(k, 1 − p) ≤ m] at q̃(1 + r), then moved by ``CDF_REL``. The index
        m is taken as large as it can be for any t within 4u·t̃ of t̃ for A, and as small for B:
        a boundary term counted in A only (not subtracted) adds at most its positive part.
        """
        from scipy.special import bdtr

        k, eta = self.k, self.eta
        steps = np.arange(k + 1, dtype=np.float64)
        t = np.unique(np.clip((epsilon + (steps + 1.0) * eta) / (k + 1.0), 0.0, eta))
        # F vanishes at t = 0 (no i has kt − iη > ε ≥ 0) and at t = η (Bin(k, 1) = k > m)
        t = t[(t > 0.0) & (t < eta)]
        if t.size == 0:
            return -math.inf
        u = 2.0**-53
        # m(t) = ⌈(kt − ε)/η⌉ − 1 over all t within 4u·t̃ of t̃, float error of x included
        x = (k * t - epsilon) / eta
        slack = 16.0 * u * (k * t + abs(epsilon)) / eta
        m_hi = np.ceil(x + slack) - 1.0
        m_lo = np.ceil(x - slack) - 1.0
        m_hi, m_lo = np.minimum(m_hi, k - 1.0), np.minimum(m_lo, k - 1.0)
        live = m_hi >= 0.0
        if not live.any():
            return -math.inf
        t, m_hi, m_lo = t[live], m_hi[live], m_lo[live]
        den = -math.expm1(-eta)
        b = math.exp(-eta) * np.expm1(t) / den
        q = -np.expm1(-t) / den
        r = 16.0 * u * (1.0 + eta)
        # the CDF at m falls as the success probability grows: evaluate at the ends of its range
        a_up = bdtr(m_hi.astype(np.int64), k, b * (1.0 - r)) * (1.0 + self.CDF_REL)
        b_dn = bdtr(np.maximum(m_lo, 0.0).astype(np.int64), k, np.minimum(q * (1.0 + r), 1.0))
        b_dn = np.where(m_lo >= 0.0, b_dn * (1.0 - self.CDF_REL), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_a = np.log(a_up)
            log_b = np.log(b_dn)
            gap = epsilon + log_b - log_a  # log(e^ε B / A) <= 0 for a positive candidate
            rows = log_a + np.log(-np.expm1(np.minimum(gap, 0.0)))
        rows = np.where(log_a == -np.inf, -np.inf, rows)  # A underflowed (or is 0): F ≤ A
        if np.isnan(rows).any():
            raise NumericalError(f"DDR20: NaN in the binomial CDFs at epsilon={epsilon!r}")
        top = float(np.max(rows))
        if top < -600.0:
            if k <= _DDR_QUADRATIC_K:
                # far tails: the exact-sum evaluation keeps relative accuracy below float range
                return self._log_delta_terms(epsilon)
            # the CDFs (A ≤ e^{−600} or underflowed to 0) only show that δ is below e^{−600}
            return -599.9
        return top

    def _log_delta_terms(self, epsilon: float) -> float:
        """The same maximum from the individual terms in log space (O(k²); the reference)."""
        from scipy.special import gammaln

        k, eta = self.k, self.eta
        steps = np.arange(k + 1, dtype=np.float64)
        # clipped candidates repeat the end points 0 and η: evaluate each distinct t once
        t = np.unique(np.clip((epsilon + (steps + 1.0) * eta) / (k + 1.0), 0.0, eta))[:, None]
        i = steps[None, :]
        log_den = _math.log1mexp(eta)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # p = (e^{−t} − e^{−η})/(1 − e^{−η}),  1 − p = (1 − e^{−t})/(1 − e^{−η})
            log_p = -t + np.log(-np.expm1(t - eta)) - log_den
            log_q = np.log(-np.expm1(-t)) - log_den
            lp = np.where(k - i > 0, (k - i) * log_p, 0.0)
            lq = np.where(i > 0, i * log_q, 0.0)
            gap = k * t - i * eta - epsilon
            log_binom = gammaln(k + 1.0) - gammaln(i + 1.0) - gammaln(k - i + 1.0)
            terms = log_binom + lp + lq + k * t - i * eta + np.log(-np.expm1(-gap))
        terms = np.where(gap > 0.0, terms, -np.inf)
        top = np.max(terms, axis=1, keepdims=True)
        finite = np.isfinite(top[:, 0])
        if not finite.any():
            return -math.inf
        shifted = np.exp(terms[finite] - top[finite])
        rows = top[finite, 0] + np.log(np.sum(shifted, axis=1))
        return float(np.max(rows))

    def _delta(self, epsilon: float) -> float:
        if epsilon == math.inf:
            return 0.0
        # the logs, lgamma and the log-sum-exp err by far less than 1e-9 relative; round up by that
        return min(1.0, _math.exp_up(self._log_delta(epsilon) + 1e-9))

    def _epsilon(self, delta: float) -> float:
        if self._delta(0.0) <= delta:
            return 0.0
        hi = self.k * self.eta  # k η-BR items are kη-DP
        if delta > 0.0:
            # the (valid) zCDP bound kη²/8 + BS16 brackets the optimum far more tightly
            rho = self.k * self.eta * self.eta / 8.0
            hi = min(hi, 1.01 * (rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))) + 1e-9)
            if self._delta(hi) > delta:
                hi = self.k * self.eta
        return _math.smallest_valid_smooth(
            lambda e: log_ratio(self._delta(e), delta), 0.0, hi, what="DDR20 ε(δ)"
        )


_DDR_MAX_K = 100_000  # O(k) binomial CDFs per δ evaluation, within their accuracy domain

_DDR_QUADRATIC_K = 2000  # the O(k²) term sums (used for δ below e^{−600}) up to here


@analysis("ddr20", "Dong–Durfee–Rogers 2020 Thm 3: optimal non-adaptive k-fold η-BR")
def _ddr(items: Items, adaptive: bool) -> Guarantee:
    if adaptive:
        raise NotImplied("DDR20 is the non-adaptive optimum: pass adaptive=False to use it")
    etas = set()
    for g, _ in items:
        br = bounded_range(g)
        etas.add(br.eta)
    if len(etas) != 1:
        raise NotImplied("DDR20 needs every item η-BR with the same η")
    k = sum(c for _, c in items)
    if k > _DDR_MAX_K:
        raise NotImplied(f"DDR20 is evaluated for at most {_DDR_MAX_K} items; got {k}")
    eta = etas.pop()
    if not math.isfinite(2.0 * k * eta):
        raise NotImplied(f"k·η = {k}·{eta!r} is beyond the float range")
    return _DDR(eta, k)
