"""Exact, vectorised samplers for discrete noise (design principle 5).

Every sampler here realises its stated distribution *exactly*: the only source of randomness is
uniformly distributed machine words drawn from a caller-supplied :class:`numpy.random.Generator`
(through :meth:`~numpy.random.Generator.integers` over the full int64 range, uniform by numpy's
contract and in fact the bit generator's raw words), and every decision is an exact comparison of
integers. No floating-point
number is computed on the sampling path, so there is no rounding to make the realised law differ
from the claimed one (cf. Mironov 2012, "On significance of the least significant bits for
differential privacy", for what goes wrong otherwise).

The algorithms are those of Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020, arXiv 2004.00010 (CKS20), Algorithms 1–3, implemented twice: sequentially on
Python integers for small sizes (at most ``_SEQUENTIAL_MAX`` draws, where per-call overhead
dominates; class :class:`_Stream`), and on numpy arrays otherwise, with three changes that keep
them exact while making them fast:

* **Loops run on arrays.** Inner loops (the trials of Algorithm 1, the geometric count) run for
  all pending elements at once; an element leaves when its own loop would have stopped, and the
  others get *fresh* words in the next round. Which words an element consumes depends only on
  earlier outcomes, and words not yet drawn are independent of everything drawn before, so (the
  usual argument for adaptive consumption of an i.i.d. stream) the elements are independent and
  each has exactly the law of the sequential algorithm. Rejection samplers run a batch of
  independent trials and keep the first accepted values in trial order (:func:`_rejection_fill`):
  the accepted values of i.i.d. trials are i.i.d. with the target law, whatever the batch sizes,
  as long as those depend only on how many trials were accepted.
* **Bernoulli(x/(d·k)) is drawn as Bernoulli(1/k) AND Bernoulli(x/d)** (two independent draws whose
  conjunction has probability (1/k)·(x/d)), so the denominators never grow with ``k`` and stay
  within ``int64``.
* **Bernoulli of a rational is a comparison.** Bernoulli(a/b) is either ``U < a`` for ``U``
  uniform on ``{0, …, b−1}`` (rejection from masked words, no modulo bias), or the lexicographic
  comparison of the base-2^63 digits of a uniform ``V ∈ [0, 1)`` (one word per digit) with those
  of ``a/b``, digits being drawn lazily until they differ (one word with probability 1 − 2^−63).
  The second form is exact for numerators and denominators of any size (Python integers), which is
  how parameters given as floats (dyadic rationals with large denominators) are handled.

Arithmetic is done in ``int64`` arrays whenever a bound computed beforehand shows that it cannot
overflow, and in arrays of Python integers (``dtype=object``) otherwise.

Parameters may be given as ``int``, :class:`fractions.Fraction`, :class:`decimal.Decimal`, numpy
integers, or floats. A float is a dyadic rational and is converted *exactly* with
``Fraction(x)``: ``0.1`` means 3602879701896397/36028797018963968, not 1/10. Pass
``Fraction(1, 10)`` for one tenth.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any, TypeAlias, overload

import numpy as np
from numpy.typing import NDArray

from sharpdp.errors import InvalidParameter, NumericalError

__all__ = [
    "RNGLike",
    "RationalLike",
    "Size",
    "as_generator",
    "bernoulli",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "geometric",
    "uniform_int",
]

RationalLike: TypeAlias = int | float | Fraction | Decimal | np.integer[Any] | np.floating[Any]
"""A rational parameter; floats are converted exactly with ``Fraction(x)``."""

RNGLike: TypeAlias = (
    int
    | np.integer[Any]
    | np.random.SeedSequence
    | np.random.BitGenerator
    | np.random.Generator
    | None
)
"""What every sampler accepts as ``rng`` (see :func:`as_generator`)."""

Size: TypeAlias = int | tuple[int, ...] | None
"""Output shape: ``None`` for one Python ``int``, else the shape of an ``int64`` array."""

IntArray: TypeAlias = NDArray[np.int64]
BoolArray: TypeAlias = NDArray[np.bool_]
IndexArray: TypeAlias = NDArray[np.intp]

_INT64_MAX = 2**63 - 1
_WORD_BITS = 63  # a "word" is a uniform integer in [0, 2**63)
_MAX_SCALE = 2**52  # largest scale / sigma: samples then overflow int64 with probability < e^-2000
_G_CHUNK = 2**62  # integer parts of exponents larger than this are processed in chunks


# --------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------


def as_generator(rng: RNGLike = None) -> np.random.Generator:
    """Coerce ``rng`` to a :class:`numpy.random.Generator` (the single entry point for randomness).

    Args:
        rng: ``None`` (a fresh generator seeded from the operating system's entropy), a
            non-negative integer seed, a :class:`numpy.random.SeedSequence`, a
            :class:`numpy.random.BitGenerator`, or a :class:`numpy.random.Generator` (returned
            as is, so that successive calls continue its stream). Global state is never used.

    Returns:
        The generator.

    Raises:
        InvalidParameter: for any other type or a negative seed.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.BitGenerator):
        return np.random.Generator(rng)
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool | np.bool_):
        seed = operator.index(rng)
        if seed < 0:
            raise InvalidParameter(f"rng seed must be >= 0, got {seed}")
        return np.random.default_rng(seed)
    raise InvalidParameter(
        "rng must be None, an int seed, a SeedSequence, a BitGenerator or a Generator, "
        f"got {rng!r} ({type(rng).__name__})"
    )


def _rational(name: str, value: object) -> Fraction:
    """``value`` as an exact Fraction (floats converted exactly), rejecting bools, NaN, ±inf."""
    if isinstance(value, bool | np.bool_):
        raise InvalidParameter(f"{name} must be a rational number, got {value!r}")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Rational):  # int, numpy integers
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, float | np.floating | Decimal):
        try:  # exact: as_integer_ratio is exact for every binary float, including long doubles
            return Fraction(*value.as_integer_ratio())
        except (ValueError, OverflowError, TypeError):
            raise InvalidParameter(f"{name} must be finite, got {value!r}") from None
    raise InvalidParameter(
        f"{name} must be an int, float, Fraction or Decimal, got {value!r} ({type(value).__name__})"
    )


def _positive(name: str, value: object, *, maximum: int | None = None) -> Fraction:
    x = _rational(name, value)
    if x <= 0:
        raise InvalidParameter(f"{name} must be > 0, got {value!r}")
    if maximum is not None and x > maximum:
        raise InvalidParameter(
            f"{name} must be <= 2**{maximum.bit_length() - 1} so that samples fit in int64, "
            f"got {value!r}"
        )
    return x


def _shape(size: object) -> tuple[int, ...] | None:
    if size is None:
        return None
    dims = size if isinstance(size, tuple | list) else (size,)
    shape: list[int] = []
    for d in dims:
        if isinstance(d, bool | np.bool_):
            raise InvalidParameter(f"size must be None, an int or a tuple of ints, got {size!r}")
        try:
            k = operator.index(d)
        except TypeError:
            raise InvalidParameter(
                f"size must be None, an int or a tuple of ints, got {size!r}"
            ) from None
        if k < 0:
            raise InvalidParameter(f"size must be non-negative, got {size!r}")
        shape.append(k)
    return tuple(shape)


def _finish(flat: IntArray, shape: tuple[int, ...] | None) -> int | IntArray:
    if shape is None:
        return int(flat[0])
    return flat.reshape(shape)


def _count(shape: tuple[int, ...] | None) -> int:
    return 1 if shape is None else math.prod(shape)


# --------------------------------------------------------------------------------------------------
# Random words and the rational Bernoulli primitives
# --------------------------------------------------------------------------------------------------


def _words(rng: np.random.Generator, m: int) -> IntArray:
    """``m`` independent uniform integers in [0, 2**63).

    ``integers`` over the whole int64 range is uniform on it (numpy returns the bit generator's
    64-bit words unchanged: no rejection, no floating point); clearing the sign bit leaves 63
    uniform bits.
    """
    return rng.integers(-(2**63), 2**63, size=m, dtype=np.int64) & _INT64_MAX


def _bits(rng: np.random.Generator, m: int) -> BoolArray:
    """``m`` independent fair bits (all 64 bits of each word are used)."""
    words = rng.integers(-(2**63), 2**63, size=-(-m // 64), dtype=np.int64)
    return np.unpackbits(words.view(np.uint8), count=m).astype(np.bool_)


def _uniform_below(rng: np.random.Generator, n: int, m: int) -> IntArray:
    """``m`` independent uniform integers in [0, n), for 1 <= n <= 2**63 - 1.

    Exactness: with ``b = bit_length(n - 1)``, the top ``b`` bits of a word are uniform on
    [0, 2**b) ⊇ [0, n); conditioned on landing below ``n`` they are uniform on [0, n). Rejected
    slots redraw fresh words. Since 2**(b-1) <= n - 1, each try succeeds with probability > 1/2.
    """
    if n == 1:
        return np.zeros(m, dtype=np.int64)
    shift = _WORD_BITS - (n - 1).bit_length()
    out = _words(rng, m) >> shift
    bad = np.flatnonzero(out >= n)
    while bad.size:
        draw = _words(rng, bad.size) >> shift
        out[bad] = draw
        bad = bad[draw >= n]
    return out


def _bernoulli_const(rng: np.random.Generator, a: int, b: int, m: int) -> BoolArray:
    """``m`` independent Bernoulli(a/b) for integers 0 <= a <= b, b >= 1.

    Exactness: a uniform ``V ∈ [0, 1)`` has i.i.d. uniform base-2^63 digits (the words); ``V < a/b``
    iff at the first digit where they differ, V's digit is smaller. Digits of ``a/b`` are
    computed exactly (``d = (r << 63) // b``, ``r ← (r << 63) - d·b``), and further words are drawn
    only for slots whose digits have tied so far (probability 2^-63 per digit). ``P[V = a/b] = 0``.
    A denominator 2^j needs one digit: ``V < a/2^j`` iff the top ``j`` bits of the word are < a.
    """
    if a == 0:
        return np.zeros(m, dtype=np.bool_)
    if a == b:
        return np.ones(m, dtype=np.bool_)
    if b == 2:
        return _bits(rng, m)
    if b & (b - 1) == 0 and b <= 2**_WORD_BITS:
        return (_words(rng, m) >> (_WORD_BITS - (b.bit_length() - 1))) < a
    num = a << _WORD_BITS
    digit = num // b
    rem = num - digit * b
    w = _words(rng, m)
    out = w < digit
    tie = np.flatnonzero(w == digit)
    while tie.size:
        num = rem << _WORD_BITS
        digit = num // b
        rem = num - digit * b
        w = _words(rng, tie.size)
        out[tie] = w < digit
        tie = tie[w == digit]
    return out


def _bernoulli_digits(rng: np.random.Generator, r: NDArray[Any], den: int) -> BoolArray:
    """Bernoulli(r_i / den) for an array ``r`` of integers with 0 <= r_i < den (any size).

    The digit comparison of :func:`_bernoulli_const`, element-wise on Python integers.
    """
    num = r.astype(object) << _WORD_BITS
    digit = num // den
    rem = num - digit * den
    d64 = digit.astype(np.int64)  # r_i < den, so each digit is < 2**63
    w = _words(rng, r.size)
    out = w < d64
    tie = np.flatnonzero(w == d64)
    rem = rem[tie]
    while tie.size:
        num = rem << _WORD_BITS
        digit = num // den
        rem = num - digit * den
        d64 = digit.astype(np.int64)
        w = _words(rng, tie.size)
        out[tie] = w < d64
        still = w == d64
        tie = tie[still]
        rem = rem[still]
    return out


def _bernoulli_ratio(
    rng: np.random.Generator, r: int | NDArray[Any], den: int, m: int
) -> BoolArray:
    """``m`` independent Bernoulli(r/den) (``r`` a scalar or an array of ``m`` values < den)."""
    if isinstance(r, int):
        return _bernoulli_const(rng, r, den, m)
    if r.dtype != np.object_ and den <= _INT64_MAX:
        # U uniform on {0, ..., den - 1}: P[U < r] = r/den exactly.
        return _uniform_below(rng, den, m) < r
    return _bernoulli_digits(rng, r, den)


# --------------------------------------------------------------------------------------------------
# Bernoulli(exp(-gamma)), CKS20 Algorithm 1
# --------------------------------------------------------------------------------------------------


def _bern_exp_frac(rng: np.random.Generator, r: int | NDArray[Any], den: int, m: int) -> BoolArray:
    """Bernoulli(exp(-r/den)) for 0 <= r < den (scalar ``r`` or an array of ``m`` values).

    CKS20 Algorithm 1 for γ = r/den ∈ [0, 1): draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the
    first failure, at index K; return [K odd]. Since P[K > k] = γ^k/k!,
    P[K odd] = Σ_{j>=0} (-1)^j γ^j/j! = exp(-γ). Bernoulli(γ/k) is drawn as Bernoulli(1/k) AND
    Bernoulli(r/den).
    """
    out = np.ones(m, dtype=np.bool_)
    if isinstance(r, int):
        if r == 0:
            return out
        active: IndexArray = np.arange(m)
    else:
        active = np.flatnonzero(r > 0)  # exp(-0) = 1
    k = 1
    while active.size:
        odd = bool(k & 1)
        if k > 1:
            passed = _bernoulli_const(rng, 1, k, active.size)
            out[active[~passed]] = odd
            active = active[passed]
        sub = r if isinstance(r, int) else r[active]
        passed = _bernoulli_ratio(rng, sub, den, active.size)
        out[active[~passed]] = odd
        active = active[passed]
        k += 1
    return out


def _bern_exp_one(rng: np.random.Generator, m: int) -> BoolArray:
    """``m`` independent Bernoulli(exp(-1)): CKS20 Algorithm 1 with γ = 1.

    The trial k = 1 is Bernoulli(1/1), always a success, so K >= 2 and the trials are
    Bernoulli(1/k), k = 2, 3, …; P[K odd] = exp(-1) as in :func:`_bern_exp_frac`.
    """
    out = np.empty(m, dtype=np.bool_)
    active: IndexArray = np.arange(m)
    k = 2
    while active.size:
        passed = _bernoulli_const(rng, 1, k, active.size)
        out[active[~passed]] = bool(k & 1)
        active = active[passed]
        k += 1
    return out


def _bern_exp_int(rng: np.random.Generator, g: IntArray) -> BoolArray:
    """Bernoulli(exp(-g_i)) for int64 g_i >= 0: the AND of g_i independent Bernoulli(exp(-1)).

    CKS20 Algorithm 1 for γ > 1, integer part; stops at the first failure.
    """
    out = np.ones(g.size, dtype=np.bool_)
    active = np.flatnonzero(g > 0)
    left = g[active]
    while active.size:
        ok = _bern_exp_one(rng, active.size)
        out[active[~ok]] = False
        left = left[ok] - 1
        active = active[ok]
        more = left > 0
        active = active[more]
        left = left[more]
    return out


def _bern_exp_int_any(rng: np.random.Generator, g: NDArray[Any]) -> BoolArray:
    """Bernoulli(exp(-g_i)) for integers g_i >= 0 of any size (int64 or Python ints).

    exp(-g) = Π exp(-c_j) over a split of g into int64 chunks c_j; the chunks are independent.
    """
    if g.dtype != np.object_:
        return _bern_exp_int(rng, g)
    if g.size == 0 or int(g.max()) <= _INT64_MAX:
        return _bern_exp_int(rng, g.astype(np.int64))
    out = np.ones(g.size, dtype=np.bool_)
    active: IndexArray = np.arange(g.size)
    left = g
    while active.size:
        chunk = np.minimum(left, _G_CHUNK).astype(np.int64)
        ok = _bern_exp_int(rng, chunk)
        out[active[~ok]] = False
        left = (left - chunk)[ok]
        active = active[ok]
        more = np.asarray(left > 0, dtype=np.bool_)
        active = active[more]
        left = left[more]
    return out


def _bern_exp(rng: np.random.Generator, num: NDArray[Any], den: int) -> BoolArray:
    """Bernoulli(exp(-num_i/den)) for integers num_i >= 0 (int64 or Python ints), den >= 1.

    CKS20 Algorithm 1: with g = ⌊γ⌋ and γ - g = r/den, exp(-γ) = exp(-1)^g · exp(-r/den), a product
    of independent Bernoulli draws (the fractional part is drawn only where the integer part
    succeeded, which does not change the conjunction's law).
    """
    if num.dtype == np.object_ or den > _INT64_MAX:
        big = num.astype(object)
        g: NDArray[Any] = big // den
        r: NDArray[Any] = big - g * den
        if den <= _INT64_MAX:
            r = r.astype(np.int64)
    else:
        g = num // den
        r = num - g * den
    out = _bern_exp_int_any(rng, g)
    todo = np.flatnonzero(out & np.asarray(r > 0, dtype=np.bool_))
    if todo.size:
        out[todo] = _bern_exp_frac(rng, r[todo], den, todo.size)
    return out


# --------------------------------------------------------------------------------------------------
# Geometric, discrete Laplace (CKS20 Algorithm 2), discrete Gaussian (CKS20 Algorithm 3)
# --------------------------------------------------------------------------------------------------


def _geometric_exp_one(rng: np.random.Generator, m: int) -> IntArray:
    """V with P[V >= v] = exp(-v): the number of Bernoulli(exp(-1)) successes before a failure."""
    v = np.zeros(m, dtype=np.int64)
    active: IndexArray = np.arange(m)
    while active.size:
        active = active[_bern_exp_one(rng, active.size)]
        v[active] += 1
    return v


def _floor_div_combined(u: IntArray, t: int, v: IntArray, s: int) -> IntArray:
    """⌊(u + t·v)/s⌋ exactly, in int64 when no intermediate can overflow."""
    if u.size == 0:
        return u
    bound = t * (int(v.max()) + 1)  # > u + t·v
    if bound <= s:
        return np.zeros(u.size, dtype=np.int64)
    if bound <= _INT64_MAX + 1 and s <= _INT64_MAX:
        y64: IntArray = (u + t * v) // s
        return y64
    y: NDArray[np.object_] = (u.astype(object) + v.astype(object) * t) // s
    if int(y.max()) > _INT64_MAX:
        raise NumericalError("a sample exceeded the int64 range (probability < e^-2000)")
    return y.astype(np.int64)


def _rejection_fill(m: int, propose: Callable[[int], IntArray]) -> IntArray:
    """``m`` values: the first ``m`` accepted candidates of an i.i.d. sequence of proposals.

    ``propose(c)`` runs ``c`` independent trials of a rejection sampler and returns the accepted
    values in trial order. The accepted values of an i.i.d. sequence of trials are i.i.d. with the
    sampler's target law and independent of which trials were accepted; the number of trials run
    depends only on the acceptance *counts* (the first batch has ``m`` trials, later ones are sized
    in integer arithmetic from the acceptance rate seen so far, so that one more batch almost
    always suffices). Taking the first ``m`` accepted values therefore gives ``m`` i.i.d. draws of
    the target law, as the sequential algorithm would.
    """
    out = np.empty(m, dtype=np.int64)
    filled = tried = accepted = 0
    batch = m
    while filled < m:
        values = propose(batch)
        take = values[: m - filled]
        out[filled : filled + take.size] = take
        filled += take.size
        tried += batch
        accepted += values.size
        est = -(-(m - filled) * (tried + 1) // (accepted + 1))
        batch = est + 3 * math.isqrt(est) + 4
    return out


def _geometric_trials(rng: np.random.Generator, t: int, s: int, c: int) -> IntArray:
    """Run ``c`` trials of the geometric sampler; return the accepted values in trial order.

    First part of CKS20 Algorithm 2, one trial: U uniform on {0, …, t-1}, accepted with probability
    exp(-U/t) (so P[U = u | accepted] ∝ exp(-u/t)); then V independent with P[V = v] ∝ exp(-v).
    X = U + t·V has P[X = x] ∝ exp(-x/t) over x >= 0 (each x has one (u, v)), and Y = ⌊X/s⌋ has
    P[Y = y] = Σ_{x = ys}^{ys+s-1} P[X = x] ∝ exp(-y·s/t).
    """
    if t == 1:  # U = 0, always accepted
        u = np.zeros(c, dtype=np.int64)
    else:
        u = _uniform_below(rng, t, c)
        u = u[_bern_exp_frac(rng, u, t, c)]
    return _floor_div_combined(u, t, _geometric_exp_one(rng, u.size), s)


def _laplace_trials(rng: np.random.Generator, t: int, s: int, c: int) -> IntArray:
    """Run ``c`` trials of CKS20 Algorithm 2's loop; return the accepted values in trial order.

    A trial draws Y as in :func:`_geometric_trials` (failing if U is rejected) and a fair sign,
    and fails on (-, 0) so that 0 is not counted twice: P[Z = z | accepted] ∝ ½·P[Y = |z|] for every
    z ∈ ℤ (including 0) ∝ exp(-|z|·s/t).
    """
    y = _geometric_trials(rng, t, s, c)
    negative = _bits(rng, y.size)
    np.negative(y, out=y, where=negative)
    kept: IntArray = y[~(negative & (y == 0))]
    return kept


def _gaussian_trials(
    rng: np.random.Generator, p: int, q: int, t: int, den: int, c: int
) -> IntArray:
    """Run ``c`` trials of CKS20 Algorithm 3's loop (σ² = p/q); return the accepted values.

    A trial is a trial of the discrete Laplace sampler with scale t = ⌊σ⌋ + 1 (restarting on its
    rejection is restarting Algorithm 3, whose loop begins with that draw) followed, if it
    accepts Y, by a Bernoulli(exp(-(|Y| - σ²/t)²/(2σ²))) draw. The accepted law is proportional to
    exp(-|y|/t - (|y| - σ²/t)²/(2σ²)) = exp(-y²/(2σ²)) · exp(-σ²/(2t²)) ∝ exp(-y²/(2σ²)).
    The exponent is the rational (|Y|·q·t - p)² / den with den = 2·p·q·t².
    """
    y = _laplace_trials(rng, t, 1, c)
    if y.size == 0:
        return y
    x = np.abs(y)
    qt = q * t
    top = max(int(x.max()) * qt, p)  # |x·q·t - p| <= top
    num: NDArray[Any]
    if den <= _INT64_MAX and top * top <= _INT64_MAX:
        a = x * qt - p
        num = a * a
    else:
        b = x.astype(object) * qt - p
        num = b * b
    kept: IntArray = y[_bern_exp(rng, num, den)]
    return kept


def _geometric_flat(rng: np.random.Generator, t: int, s: int, m: int) -> IntArray:
    """``m`` samples with P[Y = y] ∝ exp(-y·s/t), y = 0, 1, …  (1 <= t <= 2**62, s >= 1)."""
    return _rejection_fill(m, lambda c: _geometric_trials(rng, t, s, c))


def _laplace_flat(rng: np.random.Generator, t: int, s: int, m: int) -> IntArray:
    """``m`` samples with P[Z = z] ∝ exp(-|z|·s/t), z ∈ ℤ: CKS20 Algorithm 2."""
    return _rejection_fill(m, lambda c: _laplace_trials(rng, t, s, c))


def _gaussian_flat(rng: np.random.Generator, p: int, q: int, m: int) -> IntArray:
    """``m`` samples with P[Z = z] ∝ exp(-z²/(2σ²)), σ² = p/q: CKS20 Algorithm 3."""
    t = math.isqrt(p // q) + 1  # ⌊√(p/q)⌋ = ⌊√⌊p/q⌋⌋
    den = 2 * p * q * t * t
    return _rejection_fill(m, lambda c: _gaussian_trials(rng, p, q, t, den, c))


# --------------------------------------------------------------------------------------------------
# Sequential versions for small sizes (Python integers; same algorithms, less per-call overhead)
# --------------------------------------------------------------------------------------------------

_SEQUENTIAL_MAX = 200  # sizes up to this run the sequential code (measured: faster up to ~250)


class _Stream:
    """The samplers run sequentially on Python integers, one draw at a time.

    Words are uniform 63-bit integers fetched from ``rng`` 64 at a time (see :func:`_words`; words
    left in the buffer are discarded, which does not affect the law of those used). Each method
    is the sequential form of the array function named in its docstring, with the same exactness
    argument; Python integers never overflow.
    """

    __slots__ = ("_buffer", "_rng")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buffer: list[int] = []

    def word(self) -> int:
        if not self._buffer:
            self._buffer = _words(self._rng, 64).tolist()
        return self._buffer.pop()

    def below(self, n: int) -> int:
        """Uniform on [0, n), 1 <= n <= 2**63 - 1, by rejection as in :func:`_uniform_below`."""
        shift = _WORD_BITS - (n - 1).bit_length()
        while True:
            u = self.word() >> shift
            if u < n:
                return u

    def bernoulli(self, a: int, b: int) -> bool:
        """Bernoulli(a/b), 0 <= a <= b: digit comparison as in :func:`_bernoulli_const`."""
        if a == b:
            return True
        rem = a
        while True:
            digit, rem = divmod(rem << _WORD_BITS, b)
            w = self.word()
            if w != digit:
                return w < digit

    def exp_frac(self, r: int, den: int) -> bool:
        """Bernoulli(exp(-r/den)), 0 <= r < den: CKS20 Algorithm 1 as in :func:`_bern_exp_frac`."""
        k = 1
        while (k == 1 or self.bernoulli(1, k)) and self.bernoulli(r, den):
            k += 1
        return bool(k & 1)

    def exp_one(self) -> bool:
        """Bernoulli(exp(-1)) as in :func:`_bern_exp_one`."""
        k = 2
        while self.bernoulli(1, k):
            k += 1
        return bool(k & 1)

    def exp(self, num: int, den: int) -> bool:
        """Bernoulli(exp(-num/den)), num >= 0, den >= 1, as in :func:`_bern_exp`."""
        g, r = divmod(num, den)
        while g:
            if not self.exp_one():
                return False
            g -= 1
        return self.exp_frac(r, den)

    def geometric(self, t: int, s: int) -> int:
        """P[Y = y] ∝ exp(-y·s/t), y >= 0, as in :func:`_geometric_flat`."""
        while True:
            u = self.below(t)
            if self.exp_frac(u, t):
                break
        v = 0
        while self.exp_one():
            v += 1
        return (u + t * v) // s

    def laplace(self, t: int, s: int) -> int:
        """P[Z = z] ∝ exp(-|z|·s/t), z ∈ ℤ, as in :func:`_laplace_flat`."""
        while True:
            y = self.geometric(t, s)
            if self.word() & 1:
                if y:
                    return -y
            else:
                return y

    def gaussian(self, p: int, q: int) -> int:
        """P[Z = z] ∝ exp(-z²/(2σ²)), σ² = p/q, as in :func:`_gaussian_flat`."""
        t = math.isqrt(p // q) + 1
        qt = q * t
        den = 2 * p * q * t * t
        while True:
            y = self.laplace(t, 1)
            if self.exp((abs(y) * qt - p) ** 2, den):
                return y


def _sequential(draw: Callable[[], int], m: int) -> IntArray:
    values = [draw() for _ in range(m)]
    if values and max(abs(v) for v in values) > _INT64_MAX:
        raise NumericalError("a sample exceeded the int64 range (probability < e^-2000)")
    return np.array(values, dtype=np.int64)


def _geometric_any(rng: np.random.Generator, t: int, s: int, m: int) -> IntArray:
    if m <= _SEQUENTIAL_MAX:
        stream = _Stream(rng)
        return _sequential(lambda: stream.geometric(t, s), m)
    return _geometric_flat(rng, t, s, m)


def _laplace_any(rng: np.random.Generator, t: int, s: int, m: int) -> IntArray:
    if m <= _SEQUENTIAL_MAX:
        stream = _Stream(rng)
        return _sequential(lambda: stream.laplace(t, s), m)
    return _laplace_flat(rng, t, s, m)


def _gaussian_any(rng: np.random.Generator, p: int, q: int, m: int) -> IntArray:
    if m <= _SEQUENTIAL_MAX:
        stream = _Stream(rng)
        return _sequential(lambda: stream.gaussian(p, q), m)
    return _gaussian_flat(rng, p, q, m)


# --------------------------------------------------------------------------------------------------
# Public samplers
# --------------------------------------------------------------------------------------------------


@overload
def uniform_int(n: int, size: None = None, rng: RNGLike = None) -> int: ...
@overload
def uniform_int(n: int, size: int | tuple[int, ...], rng: RNGLike = None) -> IntArray: ...
def uniform_int(n: int, size: Size = None, rng: RNGLike = None) -> int | IntArray:
    """Uniform integers on {0, 1, …, n - 1}.

    Exactness: the top ``b = bit_length(n - 1)`` bits of a uniform 63-bit word are uniform on
    [0, 2**b); values >= n are rejected and redrawn, so accepted values are uniform on [0, n)
    (no modulo bias). Each try succeeds with probability > 1/2.

    Args:
        n: number of outcomes, an integer with 1 <= n <= 2**63 - 1.
        size: ``None`` for one Python ``int``, or the shape of the ``int64`` array returned.
        rng: see :func:`as_generator`.

    Raises:
        InvalidParameter: if ``n`` is not an integer in range, or ``size`` is invalid.
    """
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer):
        raise InvalidParameter(f"n must be an integer, got {n!r} ({type(n).__name__})")
    k = operator.index(n)
    if not 1 <= k <= _INT64_MAX:
        raise InvalidParameter(f"n must be in [1, 2**63 - 1], got {k}")
    shape = _shape(size)
    return _finish(_uniform_below(as_generator(rng), k, _count(shape)), shape)


@overload
def bernoulli(p: RationalLike, size: None = None, rng: RNGLike = None) -> int: ...
@overload
def bernoulli(p: RationalLike, size: int | tuple[int, ...], rng: RNGLike = None) -> IntArray: ...
def bernoulli(p: RationalLike, size: Size = None, rng: RNGLike = None) -> int | IntArray:
    """Bernoulli(p) draws (1 with probability p, else 0) for a rational p ∈ [0, 1].

    Exactness: with p = a/b in lowest terms, the draw is [V < a/b] for V uniform on [0, 1), decided
    by comparing the base-2^63 digits of V (the random words) with the exactly computed digits of
    a/b until they differ; one word suffices with probability 1 - 2^-63, and the comparison is
    exact for any a, b.

    Args:
        p: the success probability (floats are converted exactly, see the module docstring).
        size: ``None`` for one Python ``int``, or the shape of the ``int64`` array returned.
        rng: see :func:`as_generator`.

    Raises:
        InvalidParameter: if ``p`` is not a rational in [0, 1] or ``size`` is invalid.
    """
    x = _rational("p", p)
    if not 0 <= x <= 1:
        raise InvalidParameter(f"p must be in [0, 1], got {p!r}")
    shape = _shape(size)
    bits = _bernoulli_const(as_generator(rng), x.numerator, x.denominator, _count(shape))
    return _finish(bits.astype(np.int64), shape)


@overload
def bernoulli_exp(gamma: RationalLike, size: None = None, rng: RNGLike = None) -> int: ...
@overload
def bernoulli_exp(
    gamma: RationalLike, size: int | tuple[int, ...], rng: RNGLike = None
) -> IntArray: ...
def bernoulli_exp(gamma: RationalLike, size: Size = None, rng: RNGLike = None) -> int | IntArray:
    """Bernoulli(exp(-γ)) draws for a rational γ >= 0 (CKS20 Algorithm 1).

    Exactness (CKS20, arXiv 2004.00010, Algorithm 1, after von Neumann 1951): for γ ∈ [0, 1],
    drawing Bernoulli(γ/k) for k = 1, 2, … until the first failure at index K gives
    P[K > k] = γ^k/k!, hence P[K odd] = Σ_j (-1)^j γ^j/j! = exp(-γ). For γ > 1,
    exp(-γ) = exp(-1)^⌊γ⌋ · exp(-(γ - ⌊γ⌋)), the conjunction of independent such draws.
    Bernoulli(γ/k) with γ = r/d is the conjunction of exact draws Bernoulli(1/k) and Bernoulli(r/d)
    (see :func:`bernoulli`). Only integer arithmetic is used.

    Args:
        gamma: γ >= 0; pass ``Fraction(num, den)`` for γ = num/den (floats are exact dyadics).
        size: ``None`` for one Python ``int``, or the shape of the ``int64`` array returned.
        rng: see :func:`as_generator`.

    Raises:
        InvalidParameter: if ``gamma`` is negative, NaN, infinite or not a number.
    """
    x = _rational("gamma", gamma)
    if x < 0:
        raise InvalidParameter(f"gamma must be >= 0, got {gamma!r}")
    shape = _shape(size)
    m = _count(shape)
    gen = as_generator(rng)
    g, r = divmod(x.numerator, x.denominator)
    whole = np.full(m, g, dtype=np.int64 if g <= _INT64_MAX else object)
    out = _bern_exp_int_any(gen, whole)
    todo = np.flatnonzero(out)
    if r and todo.size:
        out[todo] = _bern_exp_frac(gen, r, x.denominator, todo.size)
    return _finish(out.astype(np.int64), shape)


def _scale_terms(name: str, value: object) -> tuple[int, int]:
    """(t, s) with value = t/s in lowest terms, validated for the int64 samplers."""
    x = _positive(name, value, maximum=_MAX_SCALE)
    if x.numerator > 2**62:
        raise InvalidParameter(
            f"{name} = {value!r} has a numerator above 2**62 in lowest terms; "
            "use a float or a Fraction with smaller terms"
        )
    return x.numerator, x.denominator


@overload
def geometric(scale: RationalLike, size: None = None, rng: RNGLike = None) -> int: ...
@overload
def geometric(
    scale: RationalLike, size: int | tuple[int, ...], rng: RNGLike = None
) -> IntArray: ...
def geometric(scale: RationalLike, size: Size = None, rng: RNGLike = None) -> int | IntArray:
    """One-sided geometric noise: P[X = k] = (1 - e^{-1/scale})·e^{-k/scale}, k = 0, 1, 2, …

    Exactness (the first half of CKS20 Algorithm 2): write scale = t/s in lowest terms. Draw U
    uniform on {0, …, t-1} and accept it with probability exp(-U/t) (exact Bernoulli(exp(-γ)), see
    :func:`bernoulli_exp`), otherwise redraw; then P[U = u] ∝ exp(-u/t). Draw V with
    P[V >= v] = exp(-v) (count Bernoulli(exp(-1)) successes before the first failure). X = U + t·V
    then has P[X = x] ∝ exp(-x/t), and X = ⌊(U + tV)/s⌋ has P[X = k] ∝ exp(-k·s/t).

    Args:
        scale: the scale (mean ≈ scale for large scales), a rational in (0, 2**52]; its numerator
            in lowest terms must be at most 2**62 (always true for floats).
        size: ``None`` for one Python ``int``, or the shape of the ``int64`` array returned.
        rng: see :func:`as_generator`.

    Raises:
        InvalidParameter: if ``scale`` is not a positive rational in range.
    """
    t, s = _scale_terms("scale", scale)
    shape = _shape(size)
    return _finish(_geometric_any(as_generator(rng), t, s, _count(shape)), shape)


@overload
def discrete_laplace(scale: RationalLike, size: None = None, rng: RNGLike = None) -> int: ...
@overload
def discrete_laplace(
    scale: RationalLike, size: int | tuple[int, ...], rng: RNGLike = None
) -> IntArray: ...
def discrete_laplace(scale: RationalLike, size: Size = None, rng: RNGLike = None) -> int | IntArray:
    """Discrete Laplace noise: P[X = x] = (1 - e^{-1/t})/(1 + e^{-1/t}) · e^{-|x|/t}, x ∈ ℤ, t = scale.

    Exactness (CKS20, arXiv 2004.00010, Algorithm 2): draw Y from :func:`geometric` (law
    ∝ e^{-y/t} on y >= 0) and a fair sign B; reject (B = -, Y = 0) and redraw, else return ±Y.
    Each z ≠ 0 arises from one (sign, |z|) pair and 0 from one pair after the rejection, so
    P[X = z] ∝ ½·e^{-|z|/t} for all z ∈ ℤ. All steps are exact integer comparisons.

    Args:
        scale: t, a rational in (0, 2**52] (floats converted exactly); its numerator in lowest
            terms must be at most 2**62 (always true for floats).
        size: ``None`` for one Python ``int``, or the shape of the ``int64`` array returned.
        rng: see :func:`as_generator`.

    Raises:
        InvalidParameter: if ``scale`` is not a positive rational in range or ``size`` is invalid.
    """
    t, s = _scale_terms("scale", scale)
    shape = _shape(size)
    return _finish(_laplace_any(as_generator(rng), t, s, _count(shape)), shape)


@overload
def discrete_gaussian(
    sigma: RationalLike | None = None,
    size: None = None,
    rng: RNGLike = None,
    *,
    sigma_squared: RationalLike | None = None,
) -> int: ...
@overload
def discrete_gaussian(
    sigma: RationalLike | None,
    size: int | tuple[int, ...],
    rng: RNGLike = None,
    *,
    sigma_squared: RationalLike | None = None,
) -> IntArray: ...
@overload
def discrete_gaussian(
    sigma: RationalLike | None = None,
    *,
    size: int | tuple[int, ...],
    rng: RNGLike = None,
    sigma_squared: RationalLike | None = None,
) -> IntArray: ...
def discrete_gaussian(
    sigma: RationalLike | None = None,
    size: Size = None,
    rng: RNGLike = None,
    *,
    sigma_squared: RationalLike | None = None,
) -> int | IntArray:
    """Discrete Gaussian noise: P[X = x] = e^{-x²/(2σ²)} / Σ_{y∈ℤ} e^{-y²/(2σ²)}, x ∈ ℤ.

    Exactness (CKS20, arXiv 2004.00010, Algorithm 3): with t = ⌊σ⌋ + 1, propose Y from the
    discrete Laplace law ∝ e^{-|y|/t} (:func:`discrete_laplace`) and accept it with probability
    exp(-(|Y| - σ²/t)²/(2σ²)) (an exact Bernoulli(exp(-γ)), γ rational, see
    :func:`bernoulli_exp`), else redraw. The accepted law is
    ∝ e^{-|y|/t} · e^{-(|y| - σ²/t)²/(2σ²)} = e^{-y²/(2σ²)} · e^{-σ²/(2t²)} ∝ e^{-y²/(2σ²)}.
    σ² enters only as an exact rational, computed as ``Fraction(sigma)**2`` (or given directly as
    ``sigma_squared``), so the realised law is exactly the discrete Gaussian with that σ².

    Args:
        sigma: σ, a positive rational <= 2**52 (a float is converted exactly, so ``sigma=0.1``
            means σ = 3602879701896397/2**55 and σ² is its exact square).
        size: ``None`` for one Python ``int``, or the shape of the ``int64`` array returned.
        rng: see :func:`as_generator`.
        sigma_squared: alternatively σ² itself, a positive rational (e.g. ``2`` for σ = √2).
            Give exactly one of ``sigma`` and ``sigma_squared``.

    Raises:
        InvalidParameter: if neither or both of ``sigma`` and ``sigma_squared`` are given, or the
            one given is not a positive rational in range, or ``size`` is invalid.

    Examples:
        >>> x = discrete_gaussian(3, size=4, rng=0)
        >>> x.shape, x.dtype
        ((4,), dtype('int64'))
        >>> type(discrete_gaussian(Fraction(1, 2), rng=0))
        <class 'int'>
    """
    if (sigma is None) == (sigma_squared is None):
        raise InvalidParameter(
            f"give exactly one of sigma and sigma_squared, got sigma={sigma!r}, "
            f"sigma_squared={sigma_squared!r}"
        )
    if sigma is not None:
        var = _positive("sigma", sigma, maximum=_MAX_SCALE) ** 2
    else:
        var = _positive("sigma_squared", sigma_squared, maximum=_MAX_SCALE**2)
    shape = _shape(size)
    flat = _gaussian_any(as_generator(rng), var.numerator, var.denominator, _count(shape))
    return _finish(flat, shape)
