"""Exact coins of probability p = 1/(1 + c·e^{−s}) (randomized response's coins), one word each.

Binary randomized response keeps a bit with probability e^ε/(e^ε + 1) (s = ε, c = 1) and sets an
unary-encoding bit with 1/(e^ε + 1) (s = −ε, c = 1); k-ary randomized response keeps the value with
e^ε/(e^ε + k − 1) (s = ε, c = k − 1). Drawing such a coin through the exponential mechanism's race
(two candidates, four logarithms) costs ~100 ns; here it costs one random word and one integer
comparison, and is exact by the argument of :func:`sharpdp.mechanisms._samplers._bernoulli_const`:

A uniform V ∈ [0, 1) has i.i.d. uniform base-2^63 digits (the random words), and the coin is
[V < p], decided at the first digit where V and p differ. p is irrational for s ≠ 0 (e^{−s} is
transcendental for rational s ≠ 0, Lindemann–Weierstrass), so P[V = p] = 0 and each of p's digits
is determined by a fine enough bracket of p: Python's ``Decimal.exp`` is correctly rounded, so at
P significant digits the true e^{−s} is within a relative 10^{1−P} of the computed one, and p is
decreasing in e^{−s}, which gives a rational interval [p_lo, p_hi] ∋ p. A digit is used only when
p_lo and p_hi agree on it; otherwise P grows. No float is computed on the sampling path. A second
digit is needed with probability 2^−63 per coin. (s = 0 makes p = 1/(1 + c) rational: then the
rational digits are exact.)

Only |s| ≤ :data:`MAX_ABS_S` is taken (e^{±s} then stays inside Decimal's exponent range with room);
callers draw larger |s| another way.
"""

from __future__ import annotations

import functools
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from sharpdp.mechanisms._samplers import _bernoulli_const, _words

__all__ = ["MAX_ABS_S", "coins"]

BoolArray = npt.NDArray[np.bool_]

#: Largest |s| accepted (e^{10^6} has ~434,000 decimal digits of exponent: far inside Decimal's).
MAX_ABS_S = 1e6

_DIGIT_BITS = 63
_BASE = 1 << _DIGIT_BITS


@functools.lru_cache(maxsize=256)
def digit(s: float, c: int, j: int) -> int:
    """The j-th base-2^63 digit after the point (j = 0 first) of p = 1/(1 + c·e^{−s}), s ≠ 0.

    Exact: computed from a rational bracket of p (module docstring), refined until both ends
    share the digit.
    """
    scale = _BASE ** (j + 1)
    precision = 40 + 20 * j  # ~19 decimal digits per base-2^63 digit, and a margin
    x = Decimal(-s)  # exact: a float is a dyadic rational
    while True:
        e = Fraction(Context(prec=precision, Emax=MAX_EMAX, Emin=MIN_EMIN).exp(x))
        slack = e / 10 ** (precision - 1)  # the correctly rounded exp is within half of this
        p_lo = 1 / (1 + c * (e + slack))
        p_hi = 1 / (1 + c * (e - slack))
        lo = p_lo.numerator * scale // p_lo.denominator
        hi = p_hi.numerator * scale // p_hi.denominator
        if lo == hi:
            return int(lo % _BASE)
        precision += 20


def coins(rng: np.random.Generator, s: float, c: int, m: int) -> BoolArray:
    """``m`` independent exact Bernoulli(1/(1 + c·e^{−s})) coins.

    Args:
        rng: the generator the words come from.
        s: a finite float with |s| ≤ :data:`MAX_ABS_S`.
        c: an integer ≥ 1.
        m: the number of coins.

    Raises:
        ValueError: ``s`` or ``c`` out of range (an internal misuse).
    """
    if not abs(s) <= MAX_ABS_S or c < 1:
        raise ValueError(f"coins need |s| <= {MAX_ABS_S:g} and c >= 1, got s={s!r}, c={c!r}")
    if s == 0:
        return _bernoulli_const(rng, 1, 1 + c, m)
    first = digit(s, c, 0)
    w = _words(rng, m)
    out: BoolArray = w < first
    tie = np.flatnonzero(w == first)
    j = 0
    while tie.size:  # V and p agree on digits 0..j: compare the next ones
        j += 1
        d = digit(s, c, j)
        w = _words(rng, tie.size)
        out[tie] = w < d
        tie = tie[w == d]
    return out
