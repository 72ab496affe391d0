"""The server's frequency estimate: values, exact variances, intervals and counting queries."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from sharpdp import _math, _validate
from sharpdp.errors import InvalidParameter
from sharpdp.local import _params, _schemes

__all__ = ["INTERVAL_METHODS", "Estimate", "QueryEstimate"]

FloatArray = npt.NDArray[np.float64]

#: ``"bernstein"`` (default): valid for every n; ``"normal"``: the normal approximation.
INTERVAL_METHODS: Final[tuple[str, ...]] = ("bernstein", "normal")


def _level(level: object) -> float:
    x = _validate.real("level", level)
    if not 0.0 < x < 1.0:
        raise InvalidParameter(f"level must be in (0, 1), got {x!r}")
    return x


def _method(method: object) -> str:
    if not isinstance(method, str) or method not in INTERVAL_METHODS:
        raise InvalidParameter(f"method must be one of {INTERVAL_METHODS}, got {method!r}")
    return method


def _radius(
    method: str, level: float, n: int, variance: float, bounds: tuple[float, float]
) -> float:
    """Half-width of a two-sided interval for a mean of n independent bounded contributions.

    ``normal``: z_{(1+level)/2}·√variance. ``bernstein``: the smaller of Hoeffding's radius
    w√(L/(2n)) and Bernstein's (2wL/3 + √((2wL/3)² + 8nσ²L))/(2n), L = ln(2/(1 − level)), where
    w is the width of one contribution's range and σ² the largest variance one contribution can
    have; both radii are deterministic and each holds with probability ≥ level, for every n.
    """
    alpha = 1.0 - level
    if method == "normal":
        return _math.two_sided_normal_quantile(level) * math.sqrt(variance)
    sigma2, width = bounds
    log_term = math.log(2.0 / alpha)
    hoeffding = width * math.sqrt(log_term / (2.0 * n))
    b = 2.0 * width * log_term / 3.0
    bernstein = (b + math.sqrt(b * b + 8.0 * n * sigma2 * log_term)) / (2.0 * n)
    return min(hoeffding, bernstein)


def _frequencies(name: str, value: object, k: int) -> FloatArray:
    try:
        f = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be an array of {k} frequencies") from None
    if f.shape != (k,):
        raise InvalidParameter(f"{name} must have shape ({k},), got {f.shape}")
    if not np.all(np.isfinite(f)) or np.any(f < 0.0) or np.any(f > 1.0):
        raise InvalidParameter(f"{name} must lie in [0, 1] (no NaN)")
    return f


@dataclass(frozen=True, slots=True, eq=False)
class QueryEstimate:
    """The estimate of a counting query: the fraction of users whose value lies in a set S.

    Attributes:
        subset: the categories S, sorted.
        frequency: Σ_{j∈S} f̂_j (unbiased; may fall outside [0, 1]).
        variance: its exact variance, evaluated plug-in at the estimates clipped to [0, 1].
        n: the number of reports.
    """

    subset: tuple[int, ...]
    frequency: float
    variance: float
    n: int
    _bounds: tuple[float, float]
    _rounding: float = 0.0  # a bound on the float error of ``frequency``

    @property
    def count(self) -> float:
        """n·frequency: the estimated number of users in S."""
        return self.n * self.frequency

    def interval(self, level: float = 0.95, method: str = "bernstein") -> tuple[float, float]:
        """A two-sided interval for the true fraction, intersected with [0, 1].

        Args:
            level: the coverage, in (0, 1).
            method: ``"bernstein"`` (default): covers with probability ≥ ``level`` for every n
                (a valid finite-sample bound, errs wide); ``"normal"``: the normal approximation
                f̂ ± z·√variance, coverage ≈ ``level`` for large n (may err either way).
        """
        r = _radius(_method(method), _level(level), self.n, self.variance, self._bounds)
        r += self._rounding  # the estimate's own rounding (all of the width for a sure value)
        # both ends clipped into [0, 1] (an estimate far outside would otherwise invert it)
        return min(1.0, max(0.0, self.frequency - r)), max(0.0, min(1.0, self.frequency + r))


@dataclass(frozen=True, slots=True, eq=False)
class Estimate:
    """Unbiased frequency estimates from ε-LDP reports, with their exact variances.

    Every variance is exact for fixed user values (the randomness is the clients' coins only) and
    linear in the true frequencies f: see :mod:`sharpdp.local._schemes` for the formulas.

    Attributes:
        scheme: the randomizer of the reports.
        epsilon: their ε.
        categories: k.
        n: the number of reports.
        frequencies: f̂, read-only, shape (k,): E f̂ = f exactly. Estimates are *not* clipped or
            projected, so they may be negative or above 1 and (for oue and hadamard) need not sum
            to 1; clipping would bias them.
    """

    scheme: str
    epsilon: float
    categories: int
    n: int
    frequencies: FloatArray

    def __post_init__(self) -> None:
        f = np.array(self.frequencies, dtype=np.float64)
        f.setflags(write=False)
        object.__setattr__(self, "frequencies", f)

    @property
    def counts(self) -> FloatArray:
        """n·f̂: estimated numbers of users per category (unbiased, possibly negative)."""
        return np.asarray(self.n * self.frequencies)

    @property
    def _plug_in(self) -> FloatArray:
        return np.clip(self.frequencies, 0.0, 1.0)

    @property
    def variance(self) -> FloatArray:
        """Var f̂_j, exact formula evaluated plug-in at f̂ clipped to [0, 1] (an estimate: it
        errs either way, by at most the formula's slope in f times the error of f̂ — for rr
        (k−2)t/((1−t)² n)·|Δf|, for oue and hadamard |Δf|/n)."""
        return self.variance_at(self._plug_in)

    def variance_at(self, true_frequencies: object) -> FloatArray:
        """The exact Var f̂_j at the given true frequencies f ∈ [0, 1]^k (Σ f = 1 for a true
        frequency vector; rr uses 1 − f_j as the fraction of other users)."""
        f = _frequencies("true_frequencies", true_frequencies, self.categories)
        return _schemes.variance_at(self.scheme, self.epsilon, self.categories, f, self.n)

    def covariance_at(self, true_frequencies: object) -> FloatArray:
        """The exact k×k covariance matrix of f̂ at true frequencies f (k ≤ 4096).

        rr: negative off the diagonal (one report supports one category); oue: diagonal (bits are
        independent); hadamard: Cov(f̂_j, f̂_l) = f_m/(nτ) where row(m) = row(j) ⊕ row(l).
        """
        f = _frequencies("true_frequencies", true_frequencies, self.categories)
        if self.categories > _schemes.MAX_COVARIANCE_CATEGORIES:
            raise InvalidParameter(
                f"covariance_at builds a k×k matrix; k={self.categories} exceeds "
                f"{_schemes.MAX_COVARIANCE_CATEGORIES} (use query_variance_at)"
            )
        return _schemes.covariance_at(self.scheme, self.epsilon, self.categories, f, self.n)

    def interval(
        self, level: float = 0.95, method: str = "bernstein"
    ) -> tuple[FloatArray, FloatArray]:
        """Per-category two-sided intervals (lower, upper), intersected with [0, 1].

        Each interval covers its own f_j with the stated probability; they are not simultaneous
        (for all k at once use level 1 − (1 − level)/k, a union bound).

        Args:
            level: the coverage, in (0, 1).
            method: ``"bernstein"`` (default): a valid finite-sample bound for every n — the
                smaller of the Hoeffding and Bernstein radii for the bounded per-report
                contributions (errs wide: coverage ≥ level); ``"normal"``: the normal
                approximation f̂ ± z·√variance with the plug-in variance (coverage ≈ level for
                large n, errs either way for small n or f near 0).
        """
        method, level = _method(method), _level(level)
        k = self.categories
        if method == "normal":
            z = _math.two_sided_normal_quantile(level)
            r = z * np.sqrt(self.variance)
        else:
            single = np.zeros(k, dtype=np.bool_)
            single[0] = True  # the per-report bounds of a singleton are the same for every j
            bounds = _schemes.report_bounds(self.scheme, self.epsilon, k, single)
            r = np.full(k, _radius(method, level, self.n, 0.0, bounds))
        r = r + _schemes.decode_error(self.scheme, self.epsilon, k, 1)
        f = self.frequencies
        return np.clip(f - r, 0.0, 1.0), np.clip(f + r, 0.0, 1.0)

    def query(self, subset: Any) -> QueryEstimate:
        """The counting query Σ_{j∈S} f̂_j: the fraction of users with a value in ``subset``.

        Its variance counts the covariances (negative for rr, zero for oue, f_m/(nτ) terms for
        hadamard); see :meth:`query_variance_at`.

        Args:
            subset: distinct categories in [0, k) (a non-empty 1-D array-like).
        """
        mask = _params.category_set(subset, self.categories)
        variance = self.query_variance_at(mask.nonzero()[0], self._plug_in)
        return QueryEstimate(
            tuple(int(j) for j in mask.nonzero()[0]),
            float(self.frequencies[mask].sum()),
            variance,
            self.n,
            _schemes.report_bounds(self.scheme, self.epsilon, self.categories, mask),
            _schemes.decode_error(self.scheme, self.epsilon, self.categories, int(mask.sum())),
        )

    def query_variance_at(self, subset: Any, true_frequencies: object) -> float:
        """The exact Var Σ_{j∈S} f̂_j at the given true frequencies."""
        mask = _params.category_set(subset, self.categories)
        f = _frequencies("true_frequencies", true_frequencies, self.categories)
        return _schemes.query_variance_at(
            self.scheme, self.epsilon, self.categories, mask, f, self.n
        )

    def __repr__(self) -> str:
        return (
            f"Estimate(scheme={self.scheme!r}, epsilon={self.epsilon!r}, "
            f"categories={self.categories}, n={self.n})"
        )
