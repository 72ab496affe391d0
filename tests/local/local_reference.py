"""Independent reference laws of one client's report, in mpmath, written from the papers'
definitions (not from sharpdp.local): k-RR [Warner 1965; Kairouz et al. 2016], OUE [Wang et al.
2017], Hadamard response [Acharya–Sun–Zhang 2019, §4]."""

from __future__ import annotations

import itertools
from collections.abc import Hashable

import mpmath as mp
import numpy as np

#: Working precision (set locally with mp.workdps: the global precision is other tests' too).
DPS = 40


def hadamard_matrix(k: int) -> np.ndarray:
    """Sylvester's H_K (K the smallest power of two exceeding k), by Kronecker products."""
    h = np.array([[1]])
    while h.shape[0] <= k:
        h = np.kron(h, np.array([[1, 1], [1, -1]]))
    return h


def outcomes(scheme: str, k: int) -> list[Hashable]:
    if scheme == "rr":
        return list(range(k))
    if scheme == "oue":
        return list(itertools.product((0, 1), repeat=k))
    return list(range(hadamard_matrix(k).shape[0]))


def law(scheme: str, eps: float, k: int, x: int) -> dict[Hashable, mp.mpf]:
    """P[report = o | value = x] for every outcome o (mpf at :data:`DPS` digits)."""
    with mp.workdps(DPS):
        return _law(scheme, eps, k, x)


def _law(scheme: str, eps: float, k: int, x: int) -> dict[Hashable, mp.mpf]:
    e = mp.exp(mp.mpf(eps))
    if scheme == "rr":
        return {y: (e if y == x else mp.mpf(1)) / (e + k - 1) for y in range(k)}
    if scheme == "oue":
        q = 1 / (e + 1)
        out: dict[Hashable, mp.mpf] = {}
        for b in itertools.product((0, 1), repeat=k):
            p = mp.mpf(1)
            for j, bit in enumerate(b):
                p *= mp.mpf(1) / 2 if j == x else (q if bit else 1 - q)
            out[b] = p
        return out
    h = hadamard_matrix(k)
    size = h.shape[0]
    return {
        y: (2 * e if h[x + 1, y] == 1 else mp.mpf(2)) / (size * (e + 1)) for y in range(size)
    }


def encode(scheme: str, k: int, reports: list[Hashable]) -> np.ndarray:
    """The reports as the data array of sharpdp.local.Reports (OUE: bits packed by numpy)."""
    if scheme == "oue":
        return np.packbits(np.array(reports, dtype=np.uint8).reshape(len(reports), k), axis=1)
    return np.array(reports, dtype=np.int64)
