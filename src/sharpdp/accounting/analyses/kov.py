"""The ``kov`` analysis: optimal composition of k (ε0, δ0)-DP items [Kairouz–Oh–Viswanath 2015,
Thm 3.3; Murtagh–Vadhan 2016], in log space."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from sharpdp import _math
from sharpdp.accounting._items import (
    Items,
    approx_pair,
    log_ratio,
)
from sharpdp.accounting.registry import analysis
from sharpdp.errors import NotImplied
from sharpdp.guarantees import ApproxDP, Guarantee


@dataclass(frozen=True)
class _KOV(Guarantee):
    """k-fold (ε0, δ0)-DP, optimal [KOV15 Thm 3.3]: δ = 1 − (1 − δ0)^k (1 − δ_RR^k(ε))."""

    epsilon0: float
    delta0: float
    k: int
    notion: ClassVar[str] = "optimal composition (KOV)"

    def _log_delta_rr(self, epsilon: float) -> float:
        # δ_RR = (1+e^ε0)^{−k} Σ_i C(k,i) (e^{(k−i)ε0} − e^{ε} e^{iε0})_+  (KOV15 Thm 3.3 in
        # Murtagh–Vadhan 2016 Thm 1.5's form), log space.
        k, e0 = self.k, self.epsilon0
        if e0 == 0.0:
            return -math.inf
        # terms with (k−2i)ε0 > ε, decided exactly (k·ε0 may round onto ε in floats)
        i_max = math.ceil((k * Fraction(e0) - Fraction(epsilon)) / (2 * Fraction(e0))) - 1
        if i_max < 0:
            return -math.inf
        i = np.arange(min(i_max, k) + 1, dtype=np.float64)
        from scipy.special import gammaln

        log_binom = gammaln(k + 1.0) - gammaln(i + 1.0) - gammaln(k - i + 1.0)
        # the float gap errs by a few ulps of its terms; rounding it *up* by that keeps every
        # positive term (a larger gap only enlarges δ: valid)
        gap = (k - 2.0 * i) * e0 - epsilon
        gap = gap + 2.0**-50 * (np.abs(k - 2.0 * i) * e0 + epsilon) + 5e-324
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = log_binom + (k - i) * e0 + np.log(-np.expm1(-gap))
        terms = terms[gap > 0.0]
        if terms.size == 0:
            return -math.inf
        top = float(np.max(terms))
        log_sum = top + math.log(float(np.sum(np.exp(terms - top))))
        log_norm = k * (e0 + math.log1p(math.exp(-e0)))  # k·log(1 + e^ε0)
        return log_sum - log_norm

    def _delta(self, epsilon: float) -> float:
        if epsilon == math.inf:
            return -math.expm1(self.k * math.log1p(-self.delta0)) if self.delta0 > 0 else 0.0
        # lgamma and the sums err by far less than 1e-9 relative; round up by that.
        # exp_up: a positive δ that underflows is reported as 5e-324, never 0 (which is pure DP)
        rr = min(1.0, _math.exp_up(self._log_delta_rr(epsilon) + 1e-9))
        if self.delta0 == 0.0:
            return rr
        # δ = a + (1 − a)·δ_RR with a = 1 − (1 − δ0)^k, increasing in a: round a up (log1p,
        # the product and expm1 err by a few ulps each, far below the 1e-12 allowed).
        a = min(1.0, -math.expm1(self.k * math.log1p(-self.delta0)) * (1.0 + 1e-12))
        return min(1.0, _math.up(a + (1.0 - a) * rr))

    def _epsilon(self, delta: float) -> float:
        if self._delta(math.inf) > delta:
            return math.inf
        if self._delta(0.0) <= delta:
            return 0.0
        if delta == 0.0:  # the loss reaches kε0 with positive probability: exactly kε0
            return _math.float_up(Fraction(self.epsilon0) * self.k)
        hi = max(_math.up(self.k * self.epsilon0), 1e-300)
        return _math.smallest_valid_smooth(
            lambda e: log_ratio(self._delta(e), delta), 0.0, hi, what="KOV ε(δ)"
        )


def _worst_case_dp(items: Items) -> bool:
    # KOV is the exact optimum over all (ε0, δ0)-DP mechanisms, so it is exact for items known
    # only as PureDP/ApproxDP guarantees, and binary randomized response attains it.
    from sharpdp.guarantees import PureDP
    from sharpdp.mechanisms.randomized_response import RandomizedResponse

    def worst(g: Guarantee) -> bool:
        if isinstance(g, RandomizedResponse):
            return g.categories == 2
        return type(g) in (PureDP, ApproxDP)

    return bool(items) and all(worst(g) for g, _ in items)


@analysis(
    "kov",
    "Kairouz–Oh–Viswanath 2015 Thm 3.3 / Murtagh–Vadhan 2016: optimal k-fold (ε0, δ0)-DP",
    exact_for=_worst_case_dp,
)
def _kov(items: Items, adaptive: bool) -> Guarantee:
    pairs = {approx_pair(g) for g, _ in items}
    if len(pairs) != 1:
        raise NotImplied("KOV needs every item (ε0, δ0)-DP with the same (ε0, δ0)")
    ((e0, d0),) = pairs
    k = sum(c for _, c in items)
    if k > _KOV_MAX_K:
        raise NotImplied(
            f"KOV is evaluated for at most {_KOV_MAX_K} items (O(k) work per evaluation); got {k}"
        )
    if not math.isfinite(2.0 * k * e0):
        raise NotImplied(f"k·ε0 = {k}·{e0!r} is beyond the float range")
    return _KOV(e0, d0, k)


_KOV_MAX_K = 10_000_000
