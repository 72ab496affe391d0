"""The server side: unbiased frequency estimates from the clients' randomized reports."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sharpdp.errors import InvalidParameter
from sharpdp.local import _params, _schemes
from sharpdp.local.reports import Reports
from sharpdp.local.result import Estimate

__all__ = ["estimate", "support_counts"]

#: Reports unpacked per batch when counting OUE bits.
_OUE_BATCH_BITS = 2**24


def support_counts(reports: Reports) -> npt.NDArray[np.int64]:
    """C_j = #{i : report i supports j} for every category j.

    rr: the reports equal to j; oue: the reports with bit j set; hadamard: the reports y in
    C_j = {y : H_K(j + 1, y) = +1}, all k at once from the histogram h of y by one Walsh–Hadamard
    transform: C_j = (n + (H_K h)_{j+1})/2, in O(K log K).
    """
    if not isinstance(reports, Reports):  # (a list raised AttributeError)
        raise InvalidParameter(f"reports must be Reports (from a Randomizer), got {reports!r}")
    k, data = reports.categories, reports.data
    if reports.scheme == "rr":
        return np.bincount(data, minlength=k).astype(np.int64)
    if reports.scheme == "oue":
        rows = max(1, _OUE_BATCH_BITS // k)
        total = np.zeros(k, dtype=np.int64)
        for start in range(0, reports.n, rows):
            bits = np.unpackbits(data[start : start + rows], axis=1, count=k)
            total += bits.sum(axis=0, dtype=np.int64)
        return total
    size = _schemes.hadamard_size(k)
    h = np.bincount(data, minlength=size).astype(np.int64)
    w = np.asarray(_schemes.fwht(h), dtype=np.int64)
    return np.asarray((reports.n + w[1 : k + 1]) // 2, dtype=np.int64)


def estimate(reports: Reports, epsilon: float, categories: int) -> Estimate:
    """Server side: the unbiased frequency estimate f̂_j = (C_j/n − q*)/(p* − q*).

    C_j counts the reports that support category j (:func:`support_counts`); p* and q* are the
    probabilities that a report supports j when the user's value is, resp. is not, j:
    k-RR p* = e^ε/(e^ε + k − 1), q* = 1/(e^ε + k − 1) [Kairouz–Bonawitz–Ramage 2016]; OUE
    p* = 1/2, q* = 1/(e^ε + 1) [Wang et al. 2017]; Hadamard response p* = e^ε/(e^ε + 1),
    q* = 1/2 [Acharya–Sun–Zhang 2019]. All are computed from t = e^{−ε}, so no ε overflows.

    ``epsilon`` and ``categories`` are the server's own record of what it asked the clients for;
    they must match the reports' (a mismatch would silently mis-scale every estimate).

    Args:
        reports: the clients' :class:`~sharpdp.local.Reports`.
        epsilon: ε the reports were made with.
        categories: k.

    Returns:
        An :class:`~sharpdp.local.Estimate` (``frequencies``, ``counts``, ``variance``,
        ``variance_at``, ``interval``, ``query``).

    Raises:
        InvalidParameter: for reports that are not :class:`Reports`, or whose ε or k differ
            from ``epsilon`` or ``categories`` (naming both).

    Examples:
        >>> import sharpdp as sdp
        >>> r = sdp.local.randomize([1] * 500 + [2] * 500, epsilon=2.0, categories=3, rng=1)
        >>> est = sdp.local.estimate(r, epsilon=2.0, categories=3)
        >>> est.frequencies.round(2).tolist()  # truth: [0, 0.5, 0.5]; sd ≈ 0.03 each
        [-0.0, 0.5, 0.5]
    """
    if not isinstance(reports, Reports):
        raise InvalidParameter(
            f"reports must be sharpdp.local.Reports, got {type(reports).__name__}"
        )
    eps = _params.epsilon_of(epsilon)
    k = _params.k_of(categories)
    if eps != reports.epsilon:
        raise InvalidParameter(
            f"epsilon={eps!r} does not match the reports' epsilon={reports.epsilon!r}"
        )
    if k != reports.categories:
        raise InvalidParameter(
            f"categories={k} does not match the reports' categories={reports.categories}"
        )
    support = support_counts(reports).astype(np.float64)
    f = _schemes.decode(reports.scheme, eps, k, support, reports.n)
    return Estimate(reports.scheme, eps, k, reports.n, f)
