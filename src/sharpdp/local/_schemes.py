"""The closed forms of the three local randomizers: decoding, exact variances and covariances.

Every scheme here reports, for each user i and category j, whether the report *supports* j
(X_ij ∈ {0, 1}) with

    P[X_ij = 1 | v_i = j] = p*,    P[X_ij = 1 | v_i ≠ j] = q*,

so that f̂_j = (C_j/n − q*)/(p* − q*), C_j = Σ_i X_ij, is unbiased for the true fraction f_j of users
with value j. The inputs v_1, …, v_n are fixed (the data set); the only randomness is the clients'
coins, the reports are independent, and every variance below is exact for that model. If the users
are themselves a random sample of a population and f means the population's frequencies, add the
sampling variance f_j(1 − f_j)/n.

With t = e^{−ε} (never e^ε: no overflow for large ε) and τ = tanh(ε/2) = (1 − t)/(1 + t):

* ``rr`` (k-RR): p* = 1/(1 + (k−1)t), q* = t/(1 + (k−1)t); support = the reported category.
  n·Var f̂_j = [f_j (k−1) t + (1 − f_j) t (1 + (k−2) t)]/(1 − t)²,
  n·Cov(f̂_j, f̂_l) = −[(f_j + f_l) t + (1 − f_j − f_l) t²]/(1 − t)²   (j ≠ l).
* ``oue``: p* = 1/2, q* = t/(1 + t); bits are independent, so
  n·Var f̂_j = 4t/(1 − t)² + f_j = 1/sinh²(ε/2) + f_j,   Cov = 0.
* ``hadamard``: q* = 1/2, p* = 1/(1 + t) (so p* − q* = τ/2);
  n·Var f̂_j = 1/τ² − f_j,   n·Cov(f̂_j, f̂_l) = f_m/τ with m the category whose Hadamard row is
  the XOR of those of j and l (0 if there is none).

All are linear in f (per-user variances add), which :func:`query_variance_at` uses.
"""

from __future__ import annotations

import math
from typing import TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from sharpdp.local._params import SCHEMES, Scheme

__all__ = [
    "choose",
    "covariance_at",
    "decode",
    "fwht",
    "hadamard_size",
    "null_variance",
    "query_variance_at",
    "report_bounds",
    "variance_at",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
ScalarT = TypeVar("ScalarT", np.int64, np.float64)

#: Largest k for which a full k×k covariance matrix is built.
MAX_COVARIANCE_CATEGORIES = 4096


def hadamard_size(k: int) -> int:
    """K: the smallest power of two > k (row 0 of H_K, all ones, is no category's)."""
    return 1 << k.bit_length()


def _t(eps: float) -> float:
    return math.exp(-eps)


def _one_minus_t(eps: float) -> float:
    return -math.expm1(-eps)


def _tau(eps: float) -> float:
    return _one_minus_t(eps) / (1.0 + _t(eps))


def null_variance(scheme: Scheme, eps: float, k: int) -> float:
    """n·Var f̂_j at f_j = 0 (a category absent from the data): the ``auto`` criterion.

    rr: t(1 + (k−2)t)/(1 − t)²;  oue: 4t/(1 − t)²;  hadamard: (1 + t)²/(1 − t)². Compared
    exactly, oue ≤ hadamard always (their ratio is cosh²(ε/2)), and rr < oue iff (k−2)t < 3, i.e.
    k < 3e^ε + 2 [Wang et al. 2017, §4.3].
    """
    t, d = _t(eps), _one_minus_t(eps) ** 2
    if scheme == "rr":
        return t * (1.0 + (k - 2) * t) / d
    if scheme == "oue":
        return 4.0 * t / d
    return (1.0 + t) ** 2 / d


def _scaled_null_variance(scheme: Scheme, eps: float, k: int) -> float:
    # null_variance × (1 − t)²/t: no division by a tiny t or (1 − t), so no overflow, ties exact.
    t = _t(eps)
    if scheme == "rr":
        return 1.0 + (k - 2) * t
    if scheme == "oue":
        return 4.0
    return math.inf if t == 0.0 else (1.0 + t) ** 2 / t


def choose(eps: float, k: int) -> Scheme:
    """The scheme of least :func:`null_variance`, ties broken by :data:`SCHEMES` order; never
    Hadamard response, which OUE beats exactly ((1 + t)²/t = 4 + (1 − t)²/t > 4), though in
    floats the two tie below ε ≈ 3e-8 (and the tie went to Hadamard, first in SCHEMES)."""
    candidates = [s for s in SCHEMES if s != "hadamard"]
    return min(candidates, key=lambda s: (_scaled_null_variance(s, eps, k), SCHEMES.index(s)))


def decode(scheme: Scheme, eps: float, k: int, support: FloatArray, n: int) -> FloatArray:
    """f̂ = (C/n − q*)/(p* − q*) from the support counts C, in forms without e^ε."""
    t, omt = _t(eps), _one_minus_t(eps)
    c = support / n
    if scheme == "rr":
        return np.asarray((c * (1.0 + (k - 1) * t) - t) / omt)
    if scheme == "oue":
        return np.asarray(2.0 * (c * (1.0 + t) - t) / omt)
    return np.asarray((2.0 * c - 1.0) / _tau(eps))


def decode_error(scheme: Scheme, eps: float, k: int, s: int) -> float:
    """A bound on the float rounding of Σ_{j∈S} f̂_j over s categories (|S| = s), as computed by
    :func:`decode` and summed: each f̂_j takes a few roundings of terms of size at most M (M =
    (1 + kt)/(1 − t) for rr, 2(1 + 2t)/(1 − t) for oue, 3/τ for hadamard, with their
    parameters each within a few ulps), and the sum adds s more; 32u·s·M covers both."""
    t, omt = _t(eps), _one_minus_t(eps)
    if scheme == "rr":
        size = (1.0 + k * t) / omt
    elif scheme == "oue":
        size = 2.0 * (1.0 + 2.0 * t) / omt
    else:
        size = 3.0 / _tau(eps)
    return 32.0 * 2.0**-53 * s * size


def variance_at(scheme: Scheme, eps: float, k: int, f: FloatArray, n: int) -> FloatArray:
    """Var f̂_j for every j at true frequencies f (see the module docstring)."""
    t, d = _t(eps), _one_minus_t(eps) ** 2
    if scheme == "rr":
        v = (f * (k - 1) * t + (1.0 - f) * t * (1.0 + (k - 2) * t)) / d
    elif scheme == "oue":
        v = 4.0 * t / d + f
    else:
        v = 1.0 / _tau(eps) ** 2 - f
    return np.asarray(v / n, dtype=np.float64)


def covariance_at(scheme: Scheme, eps: float, k: int, f: FloatArray, n: int) -> FloatArray:
    """The k×k covariance matrix of f̂ at true frequencies f."""
    t, d = _t(eps), _one_minus_t(eps) ** 2
    if scheme == "rr":
        pair = f[:, None] + f[None, :]
        cov = -(pair * t + (1.0 - pair) * t * t) / d / n
    elif scheme == "oue":
        cov = np.zeros((k, k))
    else:
        rows = np.arange(1, k + 1)
        m = (rows[:, None] ^ rows[None, :]) - 1  # the category whose row is the XOR (−1: none)
        fm = np.where((m >= 0) & (m < k), f[np.clip(m, 0, k - 1)], 0.0)
        cov = fm / _tau(eps) / n
    np.fill_diagonal(cov, variance_at(scheme, eps, k, f, n))
    return np.asarray(cov, dtype=np.float64)


def fwht(a: npt.NDArray[ScalarT]) -> npt.NDArray[ScalarT]:
    """The Walsh–Hadamard transform (Sylvester order): (Ha)_r = Σ_y (−1)^{popcount(r & y)} a_y."""
    out = np.array(a, copy=True)
    size = out.size
    h = 1
    while h < size:
        view = out.reshape(-1, 2, h)
        top = view[:, 0, :].copy()
        bottom = view[:, 1, :].copy()
        view[:, 0, :] = top + bottom
        view[:, 1, :] = top - bottom
        h *= 2
    return out


def _hadamard_pairs(k: int, mask: BoolArray) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """For S = mask: W(y) = Σ_{j∈S} H(r_j, y) over y ∈ [K], and N(x) = #{(j, l) ∈ S², j ≠ l :
    r_j ⊕ r_l = r_x} for x ∈ [k] (r_j = j + 1), the XOR autocorrelation WHT(W²)/K."""
    size = hadamard_size(k)
    g = np.zeros(size, dtype=np.int64)
    g[1 : k + 1] = mask
    w = fwht(g)
    # Exact in float64: every partial sum of the transform of W² is an integer bounded by
    # Σ_y W(y)² = K·|S| < 2^50 (Parseval), and dividing by K (a power of two) is exact.
    auto = fwht(np.square(w.astype(np.float64))) / size
    return w, np.asarray(auto[1 : k + 1], dtype=np.float64)


def query_variance_at(
    scheme: Scheme, eps: float, k: int, mask: BoolArray, f: FloatArray, n: int
) -> float:
    """Var Σ_{j∈S} f̂_j at true frequencies f (S = mask), covariances included.

    rr: the sum is (X_S (1 + (k−1)t) − |S| t)/(1 − t) in the fraction X_S of reports in S, so
    n·Var = [f_S (1 + (s−1)t)(k − s)t + (1 − f_S) s t (1 + (k−1−s)t)]/(1 − t)² (s = |S|);
    oue: n·Var = s·4t/(1 − t)² + f_S; hadamard: n·Var = s/τ² − f_S + Σ_x f_x N(x)/τ.
    """
    s = int(mask.sum())
    # a fraction of the users: Σ over S of frequencies each in [0, 1] (plug-in estimates clipped
    # one by one) may exceed 1, and rr's (1 − f_S) term would then make the variance negative
    f_s = min(1.0, float(f[mask].sum()))
    t, d = _t(eps), _one_minus_t(eps) ** 2
    if scheme == "rr":
        v_in, v_out = _rr_query_terms(t, k, s)
        v = (f_s * v_in + (1.0 - f_s) * v_out) / d
    elif scheme == "oue":
        v = s * 4.0 * t / d + f_s
    else:
        tau = _tau(eps)
        _, pairs = _hadamard_pairs(k, mask)
        v = s / tau**2 - f_s + float(np.dot(f, pairs)) / tau
    return v / n


def _rr_query_terms(t: float, k: int, s: int) -> tuple[float, float]:
    """(1 − t)²·Var of one report's contribution to the k-RR query, for a user in S and not in S."""
    return (1.0 + (s - 1) * t) * (k - s) * t, s * t * (1.0 + (k - 1 - s) * t)


def report_bounds(scheme: Scheme, eps: float, k: int, mask: BoolArray) -> tuple[float, float]:
    """(σ², w): the largest variance, over users' values, of one report's contribution
    Z = Σ_{j∈S} (X_j − q*)/(p* − q*) to the query (so n·Σ f̂_S = Σ_i Z_i), and the width
    max Z − min Z of its range. These feed the finite-sample (Hoeffding/Bernstein) intervals.
    """
    s = int(mask.sum())
    t, omt = _t(eps), _one_minus_t(eps)
    if scheme == "rr":
        v_in, v_out = _rr_query_terms(t, k, s)
        worst = max(v_in, v_out if s < k else 0.0)
        width = 0.0 if s == k else (1.0 + (k - 1) * t) / omt
        return worst / omt**2, width
    if scheme == "oue":
        return s * 4.0 * t / omt**2 + 1.0, s * 2.0 * (1.0 + t) / omt
    tau = _tau(eps)
    w, pairs = _hadamard_pairs(k, mask)
    per_user = s / tau**2 - mask.astype(np.float64) + pairs / tau
    return float(per_user.max()), float(w.max() - w.min()) / tau
