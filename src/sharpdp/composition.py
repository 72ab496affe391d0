"""Composition: the sharpest valid (ε, δ) of a sequence of mechanisms, with provenance.

``compose(items, adaptive=True)`` evaluates *every* analysis that is valid for the items and reports
the minimum (design principle 2); ``.explain(delta=...)`` lists each analysis, its value and the
theorem. Each analysis is a valid upper bound on its own, so the minimum is one too. Analyses:

* ``gdp``: Gaussian differential privacy composes exactly, μ = √(Σ μ_i²) [Dong–Roth–Su 2019,
  Cor 3.3] (exact for Gaussians; valid for every item with a GDP conversion, adaptively);
* ``pld``: privacy-loss-distribution (FFT) composition of dominating pairs, pessimistically
  discretised (:mod:`sharpdp.loss`), valid adaptively;
* ``kov``: the optimal composition of k (ε0, δ0)-DP mechanisms [Kairouz–Oh–Viswanath 2015,
  Thm 3.3; Murtagh–Vadhan 2016], valid adaptively, computed in log space;
* ``ddr20``: the optimal composition of k η-bounded-range mechanisms [Dong–Durfee–Rogers 2020,
  Thm 3] — only with ``adaptive=False``, since it is the non-adaptive optimum (FORMULAS §3b);
* ``rdp``: the sum of the items' exact Rényi curves (Mironov 2017, Prop 1), converted by CKS20
  Prop 12 over continuous α (``Guarantee``'s generic routes);
* ``zcdp``: zCDP additivity (BS16 Lemma 2.3) with the CKS20 conversion;
* ``basic`` and ``advanced``: (Σε_i, Σδ_i) [Dwork–Roth Thm 3.16] and Dwork–Rothblum–Vadhan 2010.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, TypeGuard

import numpy as np

from sharpdp import _math, _validate
from sharpdp.errors import InvalidParameter, NotImplied, NumericalError
from sharpdp.guarantees import GDP, ZCDP, ApproxDP, BoundedRange, Guarantee

if TYPE_CHECKING:
    from sharpdp._inversion import Inversion
    from sharpdp._pld_pairs import DominatingPair
    from sharpdp.clt import CLTEstimate
    from sharpdp.loss import PLDResult
    from sharpdp.mechanisms.additive import Gaussian

__all__ = ["Analysis", "Composition", "Explanation", "compose", "max_compositions"]

Item = Guarantee | tuple[Guarantee, int]
Items = tuple[tuple[Guarantee, int], ...]


def _normalise(items: Iterable[Item]) -> Items:
    if isinstance(items, Guarantee):
        raise InvalidParameter(
            "items must be a sequence of guarantees; wrap a single one in a list"
        )
    out: list[tuple[Guarantee, int]] = []
    try:
        entries = list(items)
    except TypeError:
        raise InvalidParameter(
            f"items must be a sequence of guarantees or (guarantee, count) pairs, got {items!r}"
        ) from None
    for entry in entries:
        if isinstance(entry, Composition):
            out.extend(entry.items)
            continue
        if isinstance(entry, Guarantee):
            out.append((entry, 1))
            continue
        if not (isinstance(entry, tuple) and len(entry) == 2):
            raise InvalidParameter(
                f"items must be guarantees or (guarantee, count) pairs, got {entry!r}"
            )
        item, count = entry
        if not isinstance(item, Guarantee):
            raise InvalidParameter(f"item must be a sharpdp guarantee or mechanism, got {item!r}")
        n = _validate.integer("count", count, minimum=0)
        if isinstance(item, Composition):
            out.extend((g, c * n) for g, c in item.items)
        else:
            out.append((item, n))
    merged: dict[Guarantee, int] = {}
    for g, c in out:
        if c > 0:
            merged[g] = merged.get(g, 0) + c
    return tuple(merged.items())


# -- analyses --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Analysis:
    """One composition theorem: when it applies, and ε(δ) / δ(ε) under it.

    ``prepare(items, adaptive)`` returns a guarantee-like object answering ``epsilon``/``delta``
    for the composition, or raises :class:`NotImplied` when the theorem does not apply.
    ``exact_for(items)`` is true when the analysis is provably the exact optimum for those items
    (no valid bound can be smaller), so ε/δ queries need no other analysis. ``dominated_by``
    names an analysis that is provably never worse whenever it applies; ε/δ queries then skip
    this one (``explain`` still lists every analysis).
    """

    name: str
    theorem: str
    prepare: Callable[[Items, bool], Guarantee]
    exact_for: Callable[[Items], bool] | None = None
    dominated_by: str | None = None


_ANALYSES: list[Analysis] = []


Prepare = Callable[[Items, bool], Guarantee]


def analysis(
    name: str,
    theorem: str,
    *,
    exact_for: Callable[[Items], bool] | None = None,
    dominated_by: str | None = None,
) -> Callable[[Prepare], Prepare]:
    """Register a composition analysis (decorator); see :class:`Analysis` for the options."""

    def deco(fn: Prepare) -> Prepare:
        _ANALYSES.append(Analysis(name, theorem, fn, exact_for, dominated_by))
        return fn

    return deco


@functools.lru_cache(maxsize=4096)
def _convert(g: Guarantee, target: type[Guarantee]) -> Guarantee:
    from sharpdp.conversions import convert

    return convert(g, target)


def _convert_all(items: Items, target: type[Guarantee]) -> list[tuple[Guarantee, int]]:
    return [(_convert(g, target), c) for g, c in items]  # type: ignore[arg-type]


def _all_gaussian(items: Items) -> bool:
    # Gaussians compose to exactly a Gaussian; for μ-GDP guarantees, the Gaussian pair attains
    # the composed bound, so no analysis of the same items can certify less.
    return bool(items) and all(_is_gaussian(g) for g, _ in items)


@analysis(
    "gdp",
    "Dong–Roth–Su 2019 Cor 3.3: μ-GDP composes to √(Σμ_i²)-GDP (exact)",
    exact_for=_all_gaussian,
)
def _gdp(items: Items, adaptive: bool) -> Guarantee:
    from sharpdp.mechanisms.additive import Gaussian

    mus = []
    for g, c in items:
        if not isinstance(g, GDP | Gaussian):
            raise NotImplied(f"{g!r} is not a Gaussian/GDP item")
        mus.append((g.mu, c))
    return GDP(_math.up(math.sqrt(math.fsum(c * m * m for m, c in mus))))


def _tight_with_density(items: Items) -> bool:
    # The inversion is exact for the items' dominating pairs; these pairs are attained by the
    # items themselves (Laplace, Gaussian, randomized response) or by the worst (ε0, δ0)-DP
    # mechanism (KOV), so no valid analysis can certify less. A Laplace or Gaussian item gives
    # the loss law the density the inversion needs. Randomized response: the pair of two
    # different true values is the mechanism's own worst case.
    from sharpdp.guarantees import PureDP
    from sharpdp.mechanisms.additive import Laplace
    from sharpdp.mechanisms.randomized_response import RandomizedResponse

    tight = (Laplace, RandomizedResponse, PureDP, ApproxDP)
    if not items or _all_gaussian(items):
        return False  # the closed form (gdp) is exact and cheaper
    if not all(type(g) in tight or _is_gaussian(g) for g, _ in items):
        return False
    return any(type(g) is Laplace or _is_gaussian(g) for g, _ in items)


@analysis(
    "mgf",
    "Zhu–Dong–Wang 2022 (δ from the characteristic function) + Abate–Whitt 1992 (Fourier-series "
    "inversion; aliasing errs upward): certified MGF inversion, exact to ~1e-11",
    exact_for=_tight_with_density,
)
def _mgf(items: Items, adaptive: bool) -> Guarantee:
    from sharpdp import loss

    if _all_gaussian(items):
        raise NotImplied("all items are Gaussian: their closed form (gdp) is exact")
    if not _tight_with_density(items):
        # valid for any pairs with closed-form characteristic functions, but only exact (and
        # worth its cost) when the pairs are attained; elsewhere the PLD covers the same ground
        raise NotImplied(
            "run for Laplace, Gaussian, randomized response and (ε0, δ0)-DP items with a "
            "Laplace or Gaussian among them"
        )
    return _InversionGuarantee(loss._normalise_items(items))


@dataclass(frozen=True)
class _InversionGuarantee(Guarantee):
    pairs: tuple[tuple[DominatingPair, int], ...]
    notion: ClassVar[str] = "composition by MGF inversion"

    @functools.cached_property
    def _inversion(self) -> Inversion:
        from sharpdp._inversion import Inversion

        return Inversion(self.pairs)

    def _epsilon(self, delta: float) -> float:
        return float(self._inversion.epsilon(delta))

    def _delta(self, epsilon: float) -> float:
        return float(self._inversion.delta(epsilon))


def _approx_pair(g: Guarantee) -> tuple[float, float]:
    """(ε0, δ0) with g (ε0, δ0)-DP, from its exact characterisation (ε0 = D_∞ or ApproxDP)."""
    if isinstance(g, ApproxDP):
        return g.epsilon_, g.delta_
    eps = g.renyi(math.inf)
    if math.isinf(eps):
        raise NotImplied(f"{g!r} is not (ε, δ0)-DP with a known δ0")
    return eps, 0.0


def _log_ratio(value: float, target: float) -> float:
    """log(value/target), decreasing with value; −∞ at value 0 (valid for a positive target)."""
    if value <= 0.0:
        return -math.inf if target > 0.0 else 0.0
    if target <= 0.0:
        return math.inf
    return math.log(value) - math.log(target)


@dataclass(frozen=True)
class _KOV(Guarantee):
    """k-fold (ε0, δ0)-DP, optimal [KOV15 Thm 3.3]: δ = 1 − (1 − δ0)^k (1 − δ_RR^k(ε))."""

    epsilon0: float
    delta0: float
    k: int
    notion: ClassVar[str] = "optimal composition (KOV)"

    def _log_delta_rr(self, epsilon: float) -> float:
        # δ_RR = (1+e^ε0)^{−k} Σ_i C(k,i) (e^{(k−i)ε0} − e^{ε} e^{iε0})_+  (FORMULAS §3a), log space.
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
            lambda e: _log_ratio(self._delta(e), delta), 0.0, hi, what="KOV ε(δ)"
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
    pairs = {_approx_pair(g) for g, _ in items}
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


@dataclass(frozen=True)
class _DDR(Guarantee):
    """k-fold η-BR, non-adaptive optimum [DDR20 Thm 3], FORMULAS §3b.

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
            lambda e: _log_ratio(self._delta(e), delta), 0.0, hi, what="DDR20 ε(δ)"
        )


_DDR_MAX_K = 100_000  # O(k) binomial CDFs per δ evaluation, within their accuracy domain

_DDR_QUADRATIC_K = 2000  # the O(k²) term sums (used for δ below e^{−600}) up to here


@analysis("ddr20", "Dong–Durfee–Rogers 2020 Thm 3: optimal non-adaptive k-fold η-BR")
def _ddr(items: Items, adaptive: bool) -> Guarantee:
    if adaptive:
        raise NotImplied("DDR20 is the non-adaptive optimum: pass adaptive=False to use it")
    etas = set()
    for g, _ in items:
        br = _bounded_range(g)
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


def _bounded_range(g: Guarantee) -> BoundedRange:
    from sharpdp.mechanisms.base import Mechanism

    if isinstance(g, BoundedRange):
        return g
    if isinstance(g, Mechanism):
        try:
            char = g.characterisation()
        except NotImplementedError:
            char = None
        if isinstance(char, BoundedRange):
            return char
    raise NotImplied(f"{g!r} is not characterised as bounded range")


@dataclass(frozen=True)
class _RDPSum(Guarantee):
    items: Items
    notion: ClassVar[str] = "RDP composition"

    @functools.cached_property
    def _split(self) -> tuple[Fraction, Items]:
        """(ρ, the other items): ρ = Σ c·μ²/2 over the Gaussian/GDP items, exactly. A μ-GDP item
        has D_α = αμ²/2 at every α [Mironov 2017 Table II; BS16 Prop 1.6], so together they are
        one linear curve, evaluated once per order instead of once per item."""
        rho = Fraction(0)
        others = []
        for g, c in self.items:
            if _is_gaussian(g):
                rho += Fraction(g.mu) ** 2 * c / 2
            else:
                others.append((g, c))
        return rho, tuple(others)

    def _renyi(self, alpha: float) -> float:
        rho, others = self._split
        values = [(item.renyi(alpha), count) for item, count in others]
        if rho:  # α·ρ rounded up (Fraction(inf) is undefined: α = ∞ gives ∞)
            values.append(
                (math.inf if alpha == math.inf else _math.float_up(Fraction(alpha) * rho), 1)
            )
        if any(v == math.inf for v, _ in values):
            return math.inf
        if len(values) <= 64:  # the exact rational sum, rounded up to a float
            exact = sum((Fraction(v) * c for v, c in values), Fraction(0))
            total = float(exact)
            return math.nextafter(total, math.inf) if Fraction(total) < exact else total
        # many items: fsum is within an ulp of the sum of the products, each within half an ulp
        total = math.fsum(c * v for v, c in values)
        return total if total == 0.0 else _math.up(total, 2)


def _is_gaussian(g: Guarantee) -> TypeGuard[GDP | Gaussian]:
    """Whether ``g`` is a μ-GDP item (a GDP guarantee or a Gaussian mechanism)."""
    from sharpdp.mechanisms.additive import Gaussian

    return isinstance(g, GDP | Gaussian)


@analysis("rdp", "Mironov 2017 Prop 1 (RDP adds) + CKS20 Prop 12 over continuous α")
def _rdp(items: Items, adaptive: bool) -> Guarantee:
    rdp = _RDPSum(items)
    if rdp.renyi(2.0) == math.inf:
        raise NotImplied("an item has no Rényi bound (e.g. (ε, δ>0)-DP)")
    return rdp


@analysis(
    "zcdp",
    "Bun–Steinke 2016 Lemma 2.3 (zCDP adds) + CKS20 conversion",
    dominated_by="rdp",
)
def _zcdp(items: Items, adaptive: bool) -> Guarantee:
    """ρ_i-zCDP means D_α ≤ ξ_i + ρ_i·α for every α, so when every item has a Rényi curve (the
    ``rdp`` analysis applies) the summed curve lies below Σ(ξ_i + ρ_i·α) pointwise, and the
    CKS20 conversion, monotone in the curve, can only give less: ``zcdp`` never wins then."""
    zs = _convert_all(items, ZCDP)
    rho = math.fsum(c * z.rho for z, c in zs if isinstance(z, ZCDP))
    xi = math.fsum(c * z.xi for z, c in zs if isinstance(z, ZCDP))
    return ZCDP(_math.up(rho), _math.up(xi) if xi > 0 else xi)


@analysis("basic", "Dwork–Roth 2014 Thm 3.16: (Σε_i, Σδ_i)")
def _basic(items: Items, adaptive: bool) -> Guarantee:
    pairs = [(_approx_pair(g), c) for g, c in items]
    eps = _math.up(math.fsum(c * e for (e, _), c in pairs))
    delta = _math.up(math.fsum(c * d for (_, d), c in pairs))
    if delta >= 1.0:
        raise NotImplied("Σδ_i ≥ 1")
    return ApproxDP(eps, delta)


@dataclass(frozen=True)
class _Advanced(Guarantee):
    epsilon0: float
    delta0: float
    k: int
    notion: ClassVar[str] = "advanced composition"

    def _epsilon(self, delta: float) -> float:
        slack = delta - self.k * self.delta0
        if slack <= 0.0:
            return math.inf
        k, e0 = self.k, self.epsilon0
        return _math.up(math.sqrt(2.0 * k * math.log(1.0 / slack)) * e0 + k * e0 * math.expm1(e0))

    def _delta(self, epsilon: float) -> float:
        # invert: smallest δ with ε(δ) ≤ ε (ε(δ) decreasing in δ)
        k, e0 = self.k, self.epsilon0
        rest = epsilon - k * e0 * math.expm1(e0)
        if rest <= 0.0 or e0 == 0.0:
            return 1.0 if e0 > 0.0 else min(1.0, k * self.delta0)
        slack = _math.exp_up(-((rest / e0) ** 2) / (2.0 * k))
        return min(1.0, _math.up(k * self.delta0 + slack))


@analysis("advanced", "Dwork–Rothblum–Vadhan 2010 (Dwork–Roth Thm 3.20): advanced composition")
def _advanced(items: Items, adaptive: bool) -> Guarantee:
    pairs = {_approx_pair(g) for g, _ in items}
    if len(pairs) != 1:
        raise NotImplied("advanced composition needs identical (ε0, δ0) items")
    ((e0, d0),) = pairs
    return _Advanced(e0, d0, sum(c for _, c in items))


# -- the composition -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of an explanation: the analysis, its value (or why it does not apply)."""

    name: str
    theorem: str
    value: float | None
    note: str = ""


@dataclass(frozen=True)
class Explanation:
    """Every analysis tried, its value, and the winner (smallest value)."""

    quantity: str  # "epsilon" or "delta"
    at: float
    rows: tuple[Row, ...]

    @property
    def winner(self) -> Row:
        valid = [r for r in self.rows if r.value is not None]
        if not valid:
            raise NotImplied("no analysis applies")
        return min(valid, key=lambda r: r.value if r.value is not None else math.inf)

    @property
    def runner_up(self) -> Row | None:
        valid = sorted(
            (r for r in self.rows if r.value is not None and r is not self.winner),
            key=lambda r: r.value if r.value is not None else math.inf,
        )
        return valid[0] if valid else None

    def __str__(self) -> str:
        given = "δ" if self.quantity == "epsilon" else "ε"
        lines = [f"{self.quantity} at {given} = {self.at:g}:"]
        win = self.winner if any(r.value is not None for r in self.rows) else None
        for r in self.rows:
            mark = "*" if r is win else " "
            val = f"{r.value:.6g}" if r.value is not None else "n/a"
            extra = f"  ({r.note})" if r.note else ""
            lines.append(f" {mark} {r.name:<9} {val:>12}  {r.theorem}{extra}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Composition(Guarantee):
    """The composition of ``items`` (each a guarantee with a count), adaptive unless declared."""

    items: Items
    adaptive: bool = True
    accuracy: float = 1e-4
    _cache: dict[str, Guarantee | str] = field(default_factory=dict, compare=False, repr=False)
    notion: ClassVar[str] = "composition"

    def _prepare(self, a: Analysis) -> Guarantee | str:
        if a.name not in self._cache:
            try:
                g = a.prepare(self.items, self.adaptive)
                # refinable analyses (the PLD) take the requested accuracy
                refine = getattr(g, "with_accuracy", None)
                self._cache[a.name] = refine(self.accuracy) if refine is not None else g
            except NotImplied as err:
                self._cache[a.name] = str(err)
        return self._cache[a.name]

    def _prepared(self) -> list[tuple[Analysis, Guarantee | str]]:
        return [(a, self._prepare(a)) for a in _all_analyses()]

    def _exact(self) -> list[tuple[Analysis, Guarantee]]:
        """The analyses exact for these items that could be prepared (tried first by queries;
        one may still decline a particular query, which then falls back to :meth:`_needed`)."""
        out = []
        for a in _all_analyses():
            if a.exact_for is not None and a.exact_for(self.items):
                g = self._prepare(a)
                if not isinstance(g, str):
                    out.append((a, g))
        return out

    def _needed(self) -> list[tuple[Analysis, Guarantee | str]]:
        """The analyses an ε/δ query must evaluate when no exact one answers: all but those
        dominated by one that applies (see :class:`Analysis`)."""
        out = []
        for a in _all_analyses():
            if a.dominated_by is not None:
                other = next(b for b in _all_analyses() if b.name == a.dominated_by)
                if not isinstance(self._prepare(other), str):
                    continue
            out.append((a, self._prepare(a)))
        return out

    def _rows(
        self, quantity: str, at: float, prepared: list[tuple[Analysis, Guarantee | str]]
    ) -> tuple[Row, ...]:
        rows = []
        for a, g in prepared:
            if isinstance(g, str):
                rows.append(Row(a.name, a.theorem, None, g))
                continue
            try:
                value = g.epsilon(at) if quantity == "epsilon" else g.delta(at)
            except (NotImplied, NumericalError) as err:
                rows.append(Row(a.name, a.theorem, None, str(err)))
                continue
            rows.append(Row(a.name, a.theorem, value))
        return tuple(rows)

    def explain(self, delta: float | None = None, epsilon: float | None = None) -> Explanation:
        """Every analysis with its ε at ``delta`` (or δ at ``epsilon``), and the winner."""
        if (delta is None) == (epsilon is None):
            raise InvalidParameter("give exactly one of delta and epsilon")
        if delta is not None:
            self.epsilon(delta)  # validates
            d = _validate.probability("delta", delta)
            return Explanation("epsilon", d, self._rows("epsilon", d, self._prepared()))
        assert epsilon is not None
        self.delta(epsilon)
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        return Explanation("delta", e, self._rows("delta", e, self._prepared()))

    def certifies(self, epsilon: float, delta: float) -> bool:
        """Whether some valid analysis certifies (ε, δ)-DP (stops at the first that does)."""
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        d = _validate.probability("delta", delta)
        if not self.items:
            return True
        for _, exact in self._exact():
            try:
                return exact.delta(e) <= d
            except (NotImplied, NumericalError):
                continue
        for _, g in self._needed():
            if isinstance(g, str):
                continue
            try:
                if g.delta(e) <= d:
                    return True
            except (NotImplied, NumericalError):
                continue
        return False

    def _minimum(self, quantity: str, at: float, worst: float) -> float:
        """The least value over the needed analyses; costly refinable ones (the PLD) go last and
        are told the best value so far, so they stop refining once they provably cannot win.
        An exact analysis that answers is the minimum by definition."""
        for _, g in self._exact():
            try:
                return g.epsilon(at) if quantity == "epsilon" else g.delta(at)
            except (NotImplied, NumericalError):
                continue
        needed = self._needed()
        cheap = [(a, g) for a, g in needed if not isinstance(g, _PLDGuarantee)]
        costly = [(a, g) for a, g in needed if isinstance(g, _PLDGuarantee)]
        values = [r.value for r in self._rows(quantity, at, cheap) if r.value is not None]
        best = min(values, default=worst)
        for _, g in costly:
            assert isinstance(g, _PLDGuarantee)
            try:
                best = min(best, g.value_unless_beaten(quantity, at, best))
            except (NotImplied, NumericalError):
                continue
        return best

    def _epsilon(self, delta: float) -> float:
        if not self.items:
            return 0.0
        return self._minimum("epsilon", delta, math.inf)

    def _delta(self, epsilon: float) -> float:
        if not self.items:
            return 0.0
        return self._minimum("delta", epsilon, 1.0)

    def _renyi(self, alpha: float) -> float:
        return _RDPSum(self.items)._renyi(alpha)

    def clt_estimate(self) -> CLTEstimate:
        """The central-limit μ-GDP *estimate* of this composition (not a guarantee; see
        :func:`sharpdp.clt.clt_estimate`). Its ``epsilon(delta)`` is an approximation that may
        be below the true value."""
        from sharpdp.clt import clt_estimate

        return clt_estimate(self.items)


def _all_analyses() -> list[Analysis]:
    return _ANALYSES


def compose(items: Iterable[Item], adaptive: bool = True, *, accuracy: float = 1e-4) -> Composition:
    """Compose ``items`` (guarantees, mechanisms or ``(item, count)`` pairs).

    Args:
        items: what was (or will be) run; equal items are grouped.
        adaptive: ``True`` (default) if later items may depend on earlier outputs. Analyses that
            hold only for batches fixed in advance (DDR20) are used only when ``False``.
        accuracy: the relative accuracy to which refinable analyses (the PLD) are certified
            (default 1e-4: their value is within it of their exact optimum). Smaller values give
            sharper bounds at a higher cost (the grid spacing shrinks like √accuracy); every
            value reported is a valid bound whatever the accuracy.

    Returns:
        A :class:`Composition` answering ``epsilon``, ``delta``, ``renyi`` and ``explain``.

    Example:
        >>> import sharpdp as sdp
        >>> c = sdp.compose([(sdp.Gaussian(5.0), 100)])
        >>> round(c.epsilon(1e-5), 6)  # exactly σ = 0.5 (FORMULAS §5)
        9.997256
    """
    if not isinstance(adaptive, bool):
        raise InvalidParameter(f"adaptive must be a bool, got {adaptive!r}")
    acc = _validate.positive("accuracy", accuracy)
    if not acc < 1.0:
        raise InvalidParameter(f"accuracy must be in (0, 1), got {accuracy!r}")
    return Composition(_normalise(items), adaptive, acc)


def max_compositions(item: Guarantee, budget: Guarantee, adaptive: bool = True) -> int:
    """The largest k such that k copies of ``item`` fit ``budget`` (``ApproxDP`` or ``PureDP``).

    Example: exponential mechanisms at ε0 = 0.025 within (1, 1e-6): 359 non-adaptively (DDR20)
    against 26 by the classical 2ε0-DP analysis (FORMULAS §8).
    """
    if not isinstance(item, Guarantee):
        raise InvalidParameter(f"item must be a sharpdp guarantee or mechanism, got {item!r}")
    if not isinstance(budget, ApproxDP):
        from sharpdp.guarantees import PureDP

        if isinstance(budget, PureDP):
            budget = ApproxDP(budget.epsilon_, 0.0)
        else:
            raise InvalidParameter(f"budget must be ApproxDP or PureDP, got {budget!r}")

    def fits(k: int) -> bool:
        # (ε, δ)-DP holds iff some valid analysis certifies δ(ε) ≤ δ: one evaluation, no inversion
        return compose([(item, k)], adaptive).certifies(budget.epsilon_, budget.delta_)

    if not fits(1):
        return 0
    hi = 1
    while fits(2 * hi):
        hi *= 2
        if hi > 2**40:
            raise NumericalError("more than 2**40 compositions fit: the item is (nearly) free")
    lo, hi = hi, 2 * hi  # fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


@analysis(
    "pld",
    "Privacy loss distributions: connect-the-dots discretisation + FFT (Doroshenko et al. 2022)",
)
def _pld(items: Items, adaptive: bool) -> Guarantee:
    from sharpdp import loss

    for g, _ in items:
        if not loss.supports(g):
            raise NotImplied(f"no dominating pair is registered for {g!r}")
    k = sum(c for _, c in items)
    if k > _PLD_MAX_K:
        # the composed loss spans ~k·(range) and the grid grows with it; skipping an analysis
        # never affects validity, and at such k the RDP/zCDP analyses are close to tight
        raise NotImplied(f"the PLD analysis is run for at most {_PLD_MAX_K} items; got {k}")
    return _PLDGuarantee(items)


_PLD_MAX_K = 10_000_000


@dataclass(frozen=True)
class _PLDGuarantee(Guarantee):
    items: Items
    accuracy: float = 1e-4
    notion: ClassVar[str] = "PLD composition"

    def with_accuracy(self, accuracy: float) -> _PLDGuarantee:
        """The same analysis refined to the relative ``accuracy`` (see :func:`compose`)."""
        return self if accuracy == self.accuracy else _PLDGuarantee(self.items, accuracy)

    @functools.cached_property
    def _result(self) -> PLDResult:
        # one FFT composition per Composition, reused by every ε/δ query
        from sharpdp import loss

        return loss.compose_pld(list(self.items), target_relative_error=self.accuracy)

    @functools.cached_property
    def _coarse(self) -> PLDResult:
        from sharpdp import loss

        return loss.compose_pld(list(self.items), target_relative_error=_COARSE)

    def value_unless_beaten(self, quantity: str, at: float, rival: float) -> float:
        """ε(δ) (or δ(ε)) of the PLD composition, or ``inf`` when a coarse optimistic pass — a
        lower bound on the exact value of this analysis, hence on anything it could report —
        already reaches ``rival``: refining could then never produce a value under ``rival``."""
        coarse = self._coarse
        # Skipping the check is always valid; it only costs time when the PLD then loses. It is
        # skipped (a) for one or two groups: the check would cost about half of the answer, and
        # the PLD, near-exact there, almost always beats the non-exact rivals (exact analyses
        # run alone, see Analysis.exact_for); (b) when the central-limit estimate of the PLD's ε
        # is already below the rival: the PLD then almost surely wins.
        if coarse.group_count > 2 and (quantity != "epsilon" or coarse.clt_epsilon(at) >= rival):
            # many groups (after the exact merge of Gaussian pairs): merge dominated pairs onto a
            # 10% grid first; few: the exact pairs are cheaper
            step = 0.1 if coarse.group_count > _MERGE_GROUPS else 0.0
            if quantity == "epsilon":
                lower = coarse.lower_epsilon(at, coarsen=step)
            else:
                lower = coarse.lower_delta(at, coarsen=step)
            if lower >= rival:
                return math.inf
        return self._epsilon(at) if quantity == "epsilon" else self._delta(at)

    def _epsilon(self, delta: float) -> float:
        return self._result.epsilon(delta)

    def _delta(self, epsilon: float) -> float:
        return self._result.delta(epsilon)


#: Relative accuracy of the coarse PLD pass that decides whether refining can pay off.
_COARSE = 1e-2
#: The coarse pass merges dominated pairs only for compositions of more distinct items than this.
_MERGE_GROUPS = 8
