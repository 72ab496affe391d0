"""Exact output laws of one client's report, for the exact auditor :mod:`sharpdp.audit`.

Importing :mod:`sharpdp.local` registers :class:`~sharpdp.local.Randomizer` with
:func:`sharpdp.audit.register_law`, so ``sdp.audit.exact(randomizer, x, x_prime)`` computes the
exact divergences between the laws of the reports on two values (any two categories are
neighbours in the local model). Laws are built in log space from t = e^{−ε}:

* ``rr``: log P[y | x] = −log(1 + (k−1)t) for y = x, and −ε − log(1 + (k−1)t) otherwise;
  outcomes 0, …, k − 1.
* ``oue``: the 2^k bit vectors b (outcome labels: tuples of k bits), log P[b | x] =
  log ½ + Σ_{j≠x} (b_j·(−ε) − log(1 + t)); at most 16 categories (65,536 outcomes).
* ``hadamard``: outcomes 0, …, K − 1; log P[y | x] = −log(K/2) − log(1 + t) for y ∈ C_x, and
  −log(K/2) − ε − log(1 + t) otherwise; at most 2^20 outcomes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from sharpdp import _validate
from sharpdp.audit._laws import FiniteLaw, register_law
from sharpdp.errors import InvalidParameter
from sharpdp.local._schemes import hadamard_size
from sharpdp.local.client import Randomizer

__all__ = ["MAX_OUE_AUDIT_CATEGORIES", "law"]

#: OUE's law has 2^k outcomes; the exact audit enumerates them for k up to this.
MAX_OUE_AUDIT_CATEGORIES = 16
#: Largest Hadamard size K whose law is enumerated.
_MAX_HADAMARD_OUTCOMES = 2**20


def _value(randomizer: Randomizer, name: str, value: object) -> int:
    v = _validate.integer(name, value, minimum=0)
    if v >= randomizer.categories:
        raise InvalidParameter(f"{name} must be < categories={randomizer.categories}, got {v}")
    return v


def law(randomizer: Randomizer, value: object) -> FiniteLaw:
    """The exact law of one report of ``randomizer`` on the true category ``value``.

    Raises:
        InvalidParameter: for a value outside [0, k), or a law too large to enumerate (oue with
            k > 16, hadamard with K > 2^20).
    """
    x = _value(randomizer, "x", value)
    k, eps = randomizer.categories, randomizer.epsilon
    t = math.exp(-eps)
    if randomizer.scheme == "rr":
        top = -math.log1p((k - 1) * t)
        lp = np.full(k, top - eps)
        lp[x] = top
        return FiniteLaw(lp)
    if randomizer.scheme == "oue":
        if k > MAX_OUE_AUDIT_CATEGORIES:
            raise InvalidParameter(
                f"the oue law has 2**{k} outcomes; the exact audit enumerates at most "
                f"2**{MAX_OUE_AUDIT_CATEGORIES}"
            )
        bits = np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int64)
        off = np.delete(bits, x, axis=1)
        lp = math.log(0.5) + (off * -eps).sum(axis=1) - (k - 1) * math.log1p(t)
        return FiniteLaw(np.asarray(lp, dtype=np.float64), tuple(map(tuple, bits.tolist())))
    size = hadamard_size(k)
    if size > _MAX_HADAMARD_OUTCOMES:
        raise InvalidParameter(
            f"the hadamard law has K={size} outcomes; the exact audit enumerates at most 2**20"
        )
    y = np.arange(size)
    inside = (np.bitwise_count((x + 1) & y) & 1) == 0
    base = -math.log(size / 2) - math.log1p(t)
    return FiniteLaw(np.where(inside, base, base - eps))


def _neighbours(randomizer: Randomizer, x: object, x_prime: object) -> bool:
    _value(randomizer, "x", x)
    _value(randomizer, "x_prime", x_prime)
    return True


register_law(Randomizer, neighbours=_neighbours, relation="any two categories (local DP)")(law)
