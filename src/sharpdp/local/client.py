"""The client side: each user randomizes its own value before anything leaves its device.

Every randomizer here is sampled *exactly* (no floating-point probability decides a draw; see
:mod:`sharpdp.mechanisms._samplers`): each biased coin is an exact comparison of a random word
with the digits of its probability (:mod:`sharpdp.mechanisms._logistic`, through
:meth:`~sharpdp.mechanisms.RandomizedResponse.keeps`), k-RR is
:class:`~sharpdp.mechanisms.RandomizedResponse`'s exact release, and each uniform choice is an
exact uniform integer. So the realised law of a report is the stated one for the double ε given,
and the report is exactly ε-DP (checked by :mod:`sharpdp.audit` on the laws of
:mod:`sharpdp.local.laws`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sharpdp.guarantees import PureDP
from sharpdp.local import _params, _schemes
from sharpdp.local.reports import Reports, report_dtype
from sharpdp.mechanisms._samplers import RNGLike, as_generator, uniform_int
from sharpdp.mechanisms.randomized_response import RandomizedResponse

__all__ = ["Randomizer", "choose_scheme", "guarantee", "randomize"]

IntArray = npt.NDArray[np.int64]

#: Bits drawn per batch of the OUE sampler (bounds its working memory to a few hundred MiB).
_OUE_BATCH_BITS = 2**22


def choose_scheme(epsilon: float, categories: int) -> str:
    """The scheme ``"auto"`` picks: the least exact variance of f̂_j for a category absent from the
    data (f_j = 0, the typical category when k is large; Wang et al. 2017's criterion).

    Per report, n·Var f̂_j at f_j = 0 is t(1 + (k−2)t)/(1−t)² for k-RR, 4t/(1−t)² for OUE and
    (1+t)²/(1−t)² for Hadamard response (t = e^{−ε}). So k-RR wins iff k < 3e^ε + 2, and OUE
    always beats Hadamard response, by the factor cosh²(ε/2) (≈ 1 for small ε): ``auto`` never
    picks ``"hadamard"``; choose it explicitly when k is large and the report size matters
    (log₂ K ≤ ⌈log₂ k⌉ + 1 bits instead of OUE's k). Ties go to the scheme with fewer bits.

    Args:
        epsilon: ε > 0, finite.
        categories: k ≥ 2.

    Returns:
        ``"rr"``, ``"oue"`` or ``"hadamard"``.

    Examples:
        >>> choose_scheme(1.0, 10), choose_scheme(1.0, 11)  # 3e + 2 = 10.15
        ('rr', 'oue')
    """
    return _schemes.choose(_params.epsilon_of(epsilon), _params.k_of(categories))


def guarantee(epsilon: float) -> PureDP:
    """The privacy of every local randomizer at ``epsilon``: each report is ε-DP in its client's
    value, whatever the other clients do (ε-local differential privacy).

    Examples:
        >>> guarantee(1.0)
        PureDP(epsilon=1.0)
    """
    return PureDP(_params.epsilon_of(epsilon))


@dataclass(frozen=True, slots=True)
class Randomizer:
    """One client's ε-LDP randomizer over k categories (a frozen, validated value).

    * ``rr`` — k-ary (generalized) randomized response [Warner 1965; Kairouz–Bonawitz–Ramage
      2016]: report the true value with probability e^ε/(e^ε + k − 1), else a uniform one of the
      k − 1 others.
    * ``oue`` — optimized unary encoding [Wang, Blocki, Li, Jha, USENIX Security 2017]: a k-bit
      vector whose bit j is 1 with probability 1/2 if j is the true value, else 1/(e^ε + 1),
      independently.
    * ``hadamard`` — Hadamard response [Acharya–Sun–Zhang, AISTATS 2019], the construction of
      their §4: with K the smallest power of two > k and C_x = {y ∈ [K] : H_K(x + 1, y) = +1}
      (row x + 1 of the Sylvester–Hadamard matrix, |C_x| = K/2), report y ∈ [K] with probability
      2e^ε/(K(e^ε + 1)) if y ∈ C_x, else 2/(K(e^ε + 1)).

    Each is exactly ε-DP, no more (the ratio e^ε is attained), on any two inputs.

    Args:
        scheme: ``"rr"``, ``"oue"`` or ``"hadamard"`` (``"auto"`` resolves with
            :func:`choose_scheme`).
        epsilon: ε > 0, finite.
        categories: k ≥ 2.
    """

    scheme: str
    epsilon: float
    categories: int

    def __init__(self, scheme: str, epsilon: float, categories: int) -> None:
        s = _params.scheme_of(scheme, allow_auto=True)
        eps = _params.epsilon_of(epsilon)
        k = _params.k_of(categories)
        object.__setattr__(self, "scheme", _schemes.choose(eps, k) if s == "auto" else s)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "categories", k)

    @property
    def guarantee(self) -> PureDP:
        """PureDP(ε): the report is ε-DP in the client's value."""
        return PureDP(self.epsilon)

    def randomize(self, values: object, rng: RNGLike = None) -> Reports:
        """Randomize each value independently (one client each).

        Args:
            values: integer categories in [0, k) (a 1-D array-like, or one integer).
            rng: ``None``, an int seed, or a :class:`numpy.random.Generator` (see
                :func:`~sharpdp.mechanisms._samplers.as_generator`).

        Returns:
            The :class:`~sharpdp.local.Reports`.

        Raises:
            InvalidParameter: for values that are not integers in [0, k), or a bad ``rng``.
        """
        v = _params.categories_of(values, self.categories)
        gen = as_generator(rng)
        k, eps = self.categories, self.epsilon
        if self.scheme == "rr":
            data = RandomizedResponse(eps, k).release(v, rng=gen)
        elif self.scheme == "oue":
            data = _oue(v, eps, k, gen)
        else:
            data = _hadamard(v, eps, k, gen)
        return Reports(self.scheme, eps, k, data.astype(report_dtype(self.scheme, k)), v.size)


def _coins(eps: float, size: tuple[int, ...], heads: int, gen: np.random.Generator) -> IntArray:
    """Exact coins: 1 with probability e^ε/(e^ε + 1) if ``heads`` else 1/(e^ε + 1): binary
    randomized response's keep coins (:meth:`RandomizedResponse.keeps`), or their negation."""
    keep = RandomizedResponse(eps, 2).keeps(int(np.prod(size)), gen).reshape(size)
    return (keep if heads else ~keep).astype(np.int64)


def _oue(v: IntArray, eps: float, k: int, gen: np.random.Generator) -> npt.NDArray[np.uint8]:
    rows = max(1, _OUE_BATCH_BITS // k)
    packed = []
    for start in range(0, v.size, rows):
        chunk = v[start : start + rows]
        bits = _coins(eps, (chunk.size, k), 0, gen)  # off bits: 1 w.p. 1/(e^ε + 1)
        bits[np.arange(chunk.size), chunk] = uniform_int(2, chunk.size, gen)  # on bit: 1/2
        packed.append(np.packbits(bits.astype(np.uint8), axis=1))
    return np.concatenate(packed, axis=0)


def _hadamard(v: IntArray, eps: float, k: int, gen: np.random.Generator) -> IntArray:
    # In C_x with probability (K/2)·2e^ε/(K(e^ε + 1)) = e^ε/(e^ε + 1); then uniform on C_x or on
    # its complement: y uniform on [K], moved across by flipping the lowest set bit of the row
    # r = x + 1 if it is on the wrong side. That flip is a bijection between C_x and its
    # complement (it changes the parity of popcount(r & y)), so y stays uniform on its side.
    size = _schemes.hadamard_size(k)
    inside = _coins(eps, (v.size,), 1, gen).astype(np.bool_)
    y = uniform_int(size, v.size, gen)
    r = v + 1
    in_c = (np.bitwise_count(r & y) & 1) == 0
    return np.where(in_c == inside, y, y ^ (r & -r))


def randomize(
    values: object,
    epsilon: float,
    categories: int,
    *,
    scheme: str = "auto",
    rng: RNGLike = None,
) -> Reports:
    """Client side: randomize each value with an ε-LDP randomizer (one report per value).

    Args:
        values: integer categories in [0, categories) (1-D array-like, or one integer).
        epsilon: ε > 0, finite: each report is ε-DP in its own value.
        categories: k ≥ 2.
        scheme: ``"auto"`` (default: :func:`choose_scheme`), ``"rr"``, ``"oue"`` or
            ``"hadamard"`` (see :class:`Randomizer`). The scheme used is ``reports.scheme``.
        rng: ``None``, an int seed, or a :class:`numpy.random.Generator`.

    Returns:
        :class:`~sharpdp.local.Reports` for :func:`sharpdp.local.estimate`.

    Raises:
        InvalidParameter: naming the parameter that is out of its domain.

    Examples:
        >>> import sharpdp as sdp
        >>> r = sdp.local.randomize([0, 3, 3, 19], epsilon=1.0, categories=20, rng=0)
        >>> r.scheme, r.n, r.guarantee, r.data.shape  # 20 bits per report, packed in 3 bytes
        ('oue', 4, PureDP(epsilon=1.0), (4, 3))
    """
    return Randomizer(scheme, epsilon, categories).randomize(values, rng)
