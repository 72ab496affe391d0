"""Exact output laws for the exact audit, and the registry mechanism type → law function.

A *law* is the exact distribution of a mechanism's output on one input, in log space:

* :class:`FiniteLaw`: finitely many outcomes and their log-probabilities (``-inf`` for outcomes of
  probability zero);
* :class:`ShiftLaw`: the law of ``shift + Z`` on the integers, for integer noise ``Z`` of one of the
  two families sharpdp samples exactly (:class:`DiscreteLaplaceNoise`,
  :class:`DiscreteGaussianNoise`). Its support is infinite; the audit enumerates a window and bounds
  the rest rigorously (:mod:`sharpdp.audit._pairs`). The noise parameter is used as a float: a
  mechanism whose scale is an exact rational (e.g. ``Fraction(1, 3)``) is audited at the nearest
  double, a relative change of at most 1.1e-16.

The registry maps a mechanism type to ``law(mechanism, x) -> Law`` and, optionally, to a test of
whether two inputs are neighbours under the mechanism's relation. Built in: the selection
mechanisms (``Exponential``, ``PermuteAndFlip``, ``ReportNoisyMax``, ``TopK``), randomized response,
and the discrete Laplace and Gaussian mechanisms (registered by class name, so their module is not
imported here). Register more with :func:`register_law`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, TypeAlias

import numpy as np
import numpy.typing as npt

from sharpdp import _validate
from sharpdp.errors import InvalidParameter

__all__ = [
    "MAX_OUTCOMES",
    "DiscreteGaussianNoise",
    "DiscreteLaplaceNoise",
    "FiniteLaw",
    "IntegerNoise",
    "Law",
    "ShiftLaw",
    "law_of",
    "lookup",
    "register_law",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]

#: Largest number of outcomes the exact audit enumerates for one law (or one truncation window).
MAX_OUTCOMES = 4_000_000

#: How far a probability vector may sum from 1 before it is rejected (it is then renormalised
#: exactly in log space; laws computed by quadrature are normalised to about 1e-15).
_SUM_TOLERANCE = 1e-9


def _readonly(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.setflags(write=False)
    return a


def _log_sum_exp(v: FloatArray) -> float:
    top = float(np.max(v))
    if top == -math.inf:
        return -math.inf
    return top + math.log(float(np.sum(np.exp(v - top))))


@dataclass(frozen=True, slots=True, eq=False)
class FiniteLaw:
    """A law on finitely many outcomes, given by log-probabilities.

    Attributes:
        log_probabilities: 1-D float64 array (read-only), ``-inf`` for probability zero; normalised
            (its log-sum-exp is 0 up to rounding).
        outcomes: labels of the outcomes (hashable, distinct), or ``None`` for the indices
            ``0, …, m − 1``. Two laws are compared outcome by outcome: by label when both have
            labels, by position otherwise.
    """

    log_probabilities: FloatArray
    outcomes: tuple[Hashable, ...] | None = None

    def __post_init__(self) -> None:
        lp = np.array(self.log_probabilities, dtype=np.float64)
        if lp.ndim != 1 or lp.size == 0:
            raise InvalidParameter(
                f"log_probabilities must be a non-empty 1-D array, got shape {lp.shape}"
            )
        if np.isnan(lp).any() or np.isposinf(lp).any():
            raise InvalidParameter("log_probabilities must not contain NaN or +inf")
        total = _log_sum_exp(lp)
        # (|total| ≤ 1 first: expm1 and exp overflow for the log of a huge sum)
        if not (abs(total) <= 1.0 and abs(math.expm1(total)) <= _SUM_TOLERANCE):
            shown = math.exp(total) if total < 700.0 else f"e^{total!r}"
            raise InvalidParameter(
                f"probabilities must sum to 1 (within {_SUM_TOLERANCE}), got {shown}"
            )
        object.__setattr__(self, "log_probabilities", _readonly(lp - total))
        if self.outcomes is not None:
            labels = tuple(self.outcomes)
            if len(labels) != lp.size:
                raise InvalidParameter(
                    f"outcomes has {len(labels)} labels for {lp.size} probabilities"
                )
            if len(set(labels)) != len(labels):
                raise InvalidParameter("outcomes must be distinct")
            object.__setattr__(self, "outcomes", labels)

    @classmethod
    def from_probabilities(
        cls, probabilities: object, outcomes: Sequence[Hashable] | None = None
    ) -> FiniteLaw:
        """The law with the given probabilities (non-negative, finite, summing to 1).

        ``probabilities`` may also be a mapping outcome → probability.
        """
        if isinstance(probabilities, Mapping):
            if outcomes is not None:
                raise InvalidParameter("outcomes must not be given with a mapping")
            outcomes = tuple(probabilities.keys())
            probabilities = list(probabilities.values())
        try:
            p = np.asarray(probabilities, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameter(
                f"probabilities must be a 1-D array of numbers, got {probabilities!r}"
            ) from None
        if p.ndim != 1:
            raise InvalidParameter(f"probabilities must be 1-D, got shape {p.shape}")
        if np.isnan(p).any() or np.isinf(p).any() or (p < 0).any():
            raise InvalidParameter(
                f"probabilities must be finite and >= 0, got {probabilities!r}"[:200]
            )
        with np.errstate(divide="ignore"):
            lp = np.log(p)
        return cls(lp, None if outcomes is None else tuple(outcomes))

    def labels(self) -> tuple[Hashable, ...]:
        """The outcome labels (the indices when none were given)."""
        if self.outcomes is None:
            return tuple(range(self.log_probabilities.size))
        return self.outcomes


# -- integer noise families --------------------------------------------------------------------------


#: Smallest noise parameter of the integer laws (the tail sums divide by it in floating point).
_MIN_NOISE = 2.0**-60


class IntegerNoise:
    """A symmetric, log-concave law on the integers (the noise Z of a :class:`ShiftLaw`).

    Subclass contract (used by :class:`sharpdp.audit._pairs.ShiftPair`): ``log_pmf`` is the
    normalised log-probability; ``log_ratio(y, a, b) = log p(y − a) − log p(y − b)`` computed
    accurately; ``ratio_limit(d) = lim_{y→+∞} log p(y − d) − log p(y)``; ``width`` a half-width
    beyond which the mass is negligible (below 1e-60). The tail bounds of the audit rely on every
    sequence it sums being log-concave on each side beyond the window: true for the two families
    below (their log-pmfs are linear, resp. quadratic, there).
    """

    __slots__ = ()

    name: ClassVar[str] = "integer noise"

    def log_pmf(self, z: IntArray) -> FloatArray:  # pragma: no cover - abstract
        raise NotImplementedError

    def log_ratio(self, y: IntArray, a: int, b: int) -> FloatArray:  # pragma: no cover
        raise NotImplementedError

    def ratio_limit(self, d: int) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def width(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class DiscreteLaplaceNoise(IntegerNoise):
    """P(Z = z) ∝ exp(−|z|/scale) on the integers.

    Normaliser N = Σ_z e^{−|z|/s} = (1 + e^{−1/s})/(1 − e^{−1/s}) (two geometric series).
    """

    scale: float
    name: ClassVar[str] = "discrete Laplace"

    def __post_init__(self) -> None:
        scale = _validate.positive("scale", self.scale)
        if scale < _MIN_NOISE:  # 1/scale would leave the float range in the tail sums
            raise InvalidParameter(
                f"the exact audit needs scale >= 2**-60 (below, the law is the point mass at 0 "
                f"to within e^(-2**60)), got {scale!r}"
            )
        object.__setattr__(self, "scale", scale)

    @property
    def _log_norm(self) -> float:
        t = 1.0 / self.scale
        return math.log1p(math.exp(-t)) - math.log(-math.expm1(-t))

    def log_pmf(self, z: IntArray) -> FloatArray:
        with np.errstate(over="ignore"):  # a subnormal scale: −inf off 0 is the exact limit
            return np.asarray(-np.abs(z).astype(np.float64) / self.scale - self._log_norm)

    def log_ratio(self, y: IntArray, a: int, b: int) -> FloatArray:
        # (|y − b| − |y − a|)/s with an exact integer numerator (±inf past the float range).
        with np.errstate(over="ignore"):
            return np.asarray((np.abs(y - b) - np.abs(y - a)).astype(np.float64) / self.scale)

    def ratio_limit(self, d: int) -> float:
        return d / self.scale

    @property
    def width(self) -> int:
        # Beyond both centres every summed sequence is geometric, and the tail bound is exact.
        return 2


@dataclass(frozen=True, slots=True)
class DiscreteGaussianNoise(IntegerNoise):
    """P(Z = z) ∝ exp(−z²/(2σ²)) on the integers [Canonne–Kamath–Steinke 2020].

    Normaliser N = Σ_z e^{−z²/(2σ²)}: summed directly for σ < 1 (terms beyond |z| = 40 are below
    e^{−800}), otherwise by Poisson summation N = σ√(2π)·Σ_k e^{−2π²σ²k²} (four terms: the fifth is
    below e^{−490}).
    """

    sigma: float
    name: ClassVar[str] = "discrete Gaussian"

    def __post_init__(self) -> None:
        sigma = _validate.positive("sigma", self.sigma)
        if sigma < _MIN_NOISE:  # 1/σ² would leave the float range in the tail sums
            raise InvalidParameter(
                f"the exact audit needs sigma >= 2**-60 (below, the law is the point mass at 0 "
                f"to within e^(-2**119)), got {sigma!r}"
            )
        object.__setattr__(self, "sigma", sigma)

    @property
    def _log_norm(self) -> float:
        s = self.sigma
        if s < 1.0:
            z = np.arange(1, 41, dtype=np.float64)
            return math.log1p(2.0 * float(np.sum(np.exp(-(z * z) / (2.0 * s * s)))))
        k = np.arange(1, 5, dtype=np.float64)
        theta = 2.0 * float(np.sum(np.exp(-2.0 * math.pi**2 * s * s * k * k)))
        return math.log(s) + 0.5 * math.log(2.0 * math.pi) + math.log1p(theta)

    def log_pmf(self, z: IntArray) -> FloatArray:
        zf = z.astype(np.float64)
        return np.asarray(-(zf * zf) / (2.0 * self.sigma**2) - self._log_norm)

    def log_ratio(self, y: IntArray, a: int, b: int) -> FloatArray:
        # ((y − b)² − (y − a)²)/(2σ²) = (a − b)(2y − a − b)/(2σ²), integer factors exact.
        return np.asarray(float(a - b) * (2 * y - a - b).astype(np.float64) / (2.0 * self.sigma**2))

    def ratio_limit(self, d: int) -> float:
        return 0.0 if d == 0 else math.copysign(math.inf, d)

    @property
    def width(self) -> int:
        # e^{−w²/(2σ²)} ≤ 1e-60 for w ≥ σ√(2·60·ln 10).
        return math.ceil(self.sigma * math.sqrt(120.0 * math.log(10.0))) + 2


@dataclass(frozen=True, slots=True)
class ShiftLaw:
    """The law of ``shift + Z`` on the integers, Z ~ ``noise``.

    Attributes:
        noise: the noise family.
        shift: the integer shift (the mechanism's input).
    """

    noise: IntegerNoise
    shift: int

    def __post_init__(self) -> None:
        if not isinstance(self.noise, IntegerNoise):
            raise InvalidParameter(f"noise must be an IntegerNoise, got {self.noise!r}")
        object.__setattr__(self, "shift", _integer("shift", self.shift))


Law: TypeAlias = FiniteLaw | ShiftLaw
"""What a law function returns."""

LawFunction: TypeAlias = Callable[[Any, Any], Law]
NeighbourTest: TypeAlias = Callable[[Any, Any, Any], bool]


def _integer(name: str, value: object) -> int:
    return _validate.integer(name, value, minimum=-(2**62))


# -- the registry ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LawEntry:
    """A registered law function and the neighbour test of its mechanism type (or None)."""

    law: LawFunction
    neighbours: NeighbourTest | None
    relation: str


_BY_TYPE: dict[type, LawEntry] = {}
# Classes of sharpdp itself registered by name, so their modules need not be imported here.
_BY_NAME: dict[str, LawEntry] = {}


def register_law(
    mechanism_type: type | str,
    *,
    neighbours: NeighbourTest | None = None,
    relation: str = "",
) -> Callable[[LawFunction], LawFunction]:
    """Decorator registering ``law(mechanism, x) -> Law`` for a mechanism type.

    Args:
        mechanism_type: the type (subclasses inherit the entry), or the name of a class defined in
            a ``sharpdp`` module (matched without importing it).
        neighbours: ``neighbours(mechanism, x, x_prime) -> bool``, the mechanism's neighbouring
            relation; :func:`sharpdp.audit.exact` refuses other pairs unless told otherwise.
        relation: a short description of that relation, for error messages.
    """

    def decorate(function: LawFunction) -> LawFunction:
        entry = LawEntry(function, neighbours, relation)
        if isinstance(mechanism_type, str):
            _BY_NAME[mechanism_type] = entry
        else:
            _BY_TYPE[mechanism_type] = entry
        return function

    return decorate


def lookup(mechanism: object) -> LawEntry | None:
    """The law entry of ``mechanism``'s type (walking its MRO), or None."""
    for klass in type(mechanism).__mro__:
        entry = _BY_TYPE.get(klass)
        if entry is not None:
            return entry
        if klass.__module__.startswith("sharpdp."):
            entry = _BY_NAME.get(klass.__name__)
            if entry is not None:
                return entry
    return None


def law_of(mechanism: object, x: object) -> Law:
    """The exact output law of a registered mechanism on input ``x``."""
    entry = lookup(mechanism)
    if entry is None:
        raise InvalidParameter(
            f"no exact law is registered for {type(mechanism).__name__}; register one with "
            "sharpdp.audit.register_law, or pass a callable x -> probability vector"
        )
    return entry.law(mechanism, x)


# -- selection mechanisms -------------------------------------------------------------------------


def _log_softmax(logits: FloatArray) -> FloatArray:
    return np.asarray(logits - _log_sum_exp(logits))


def _logit(c: Fraction | None, score: float, top: float) -> float:
    """c·(score − top) for finite scores, from exact rationals (c = ``None`` is ∞: 0 for the
    maxima, −inf for the rest; c = 0: 0). Below the float range it is −inf, its limit (the
    weight e^{c(q − max q)} underflows to 0); no float difference or product is formed, so no
    overflow of q − max q or of c stands for a value that has none."""
    if c is None:
        return 0.0 if score == top else -math.inf
    try:
        return float(c * (Fraction(score) - Fraction(top)))
    except OverflowError:
        return -math.inf


def _logits(coefficient: Fraction | None, q: FloatArray) -> FloatArray:
    """c·(q − max q) with −inf kept (:func:`_logit` for each finite score); all −inf (nothing
    left) gives all −inf."""
    out = np.full(q.shape, -np.inf)
    live = np.flatnonzero(~np.isneginf(q))
    if live.size:
        top = float(np.max(q[live]))
        out[live] = [_logit(coefficient, float(q[i]), top) for i in live]
    return out


def _scores(name: str, value: object) -> FloatArray:
    from sharpdp.mechanisms.selection import as_scores

    return as_scores(value, name)


def _score_neighbours(mechanism: Any, x: object, x_prime: object) -> bool:
    """|q_i − q′_i| ≤ Δ for all i (same excluded candidates); one direction if monotonic."""
    q, qp = _scores("x", x), _scores("x_prime", x_prime)
    if q.shape != qp.shape:
        return False
    if not np.array_equal(np.isneginf(q), np.isneginf(qp)):
        return False
    live = np.isfinite(q)
    sens = float(mechanism.sensitivity)
    with np.errstate(over="ignore"):  # a difference beyond 1.8e308 is inf: compared as such
        diff = qp[live] - q[live]
    # Compared in rationals where the float difference comes near Δ, with a slack of 2⁻⁵⁰ of Δ
    # (1.1 − 0.1 exceeds 1 by 8e-17; the excess divergence is far inside the check's rtol). A
    # slack of 4 ulps of the scores' magnitude took scores 3 apart at 2⁵² for neighbours at
    # Δ = 1, and the audit then reported a violation of a correct mechanism.
    near = np.flatnonzero(~(np.abs(diff) < sens * (1.0 - 2.0**-50)))
    q_live, qp_live = q[live], qp[live]
    allowed = Fraction(sens) * (1 + Fraction(1, 2**50))
    for i in near:
        if abs(Fraction(float(qp_live[i])) - Fraction(float(q_live[i]))) > allowed:
            return False
    if mechanism.monotonic:  # (the sign of a float difference is exact)
        return bool(np.all(diff >= 0.0) or np.all(diff <= 0.0))
    return True


_SCORES_RELATION = "score vectors of one shape differing by at most the sensitivity in each entry"


def _exponential_law(mechanism: Any, x: object) -> FiniteLaw:
    # P[y] ∝ exp(c·q_y), computed as a log-softmax (the definition, in log space).
    return FiniteLaw(_log_softmax(_logits(mechanism.exact_coefficient, _scores("x", x))))


def _register_selection() -> None:
    from sharpdp.mechanisms.selection import Exponential, PermuteAndFlip, ReportNoisyMax, TopK

    register_law(Exponential, neighbours=_score_neighbours, relation=_SCORES_RELATION)(
        _exponential_law
    )

    @register_law(PermuteAndFlip, neighbours=_score_neighbours, relation=_SCORES_RELATION)
    def _permute_and_flip_law(mechanism: PermuteAndFlip, x: object) -> FiniteLaw:
        return FiniteLaw.from_probabilities(mechanism.probabilities(_scores("x", x)))

    @register_law(ReportNoisyMax, neighbours=_score_neighbours, relation=_SCORES_RELATION)
    def _noisy_max_law(mechanism: ReportNoisyMax, x: object) -> FiniteLaw:
        eq = mechanism.equivalent
        if isinstance(eq, Exponential):
            return _exponential_law(eq, x)
        return FiniteLaw.from_probabilities(mechanism.probabilities(_scores("x", x)))

    @register_law(TopK, neighbours=_score_neighbours, relation=_SCORES_RELATION)
    def _top_k_law(mechanism: TopK, x: object) -> FiniteLaw:
        q = _scores("x", x)
        k = mechanism.k
        live = int(np.isfinite(q).sum())
        if k > live:
            raise InvalidParameter(f"k={k} exceeds the {live} candidates with a finite score")
        count = math.perm(q.size, k)
        if count > MAX_OUTCOMES:
            raise InvalidParameter(
                f"top-{k} of {q.size} candidates has {count} ordered outcomes; the exact audit "
                f"enumerates at most {MAX_OUTCOMES}"
            )
        tuples = np.array(list(itertools.permutations(range(q.size), k)), dtype=np.intp)
        return FiniteLaw(
            _peeling_log_law(mechanism.exact_coefficient, q, tuples),
            tuple(map(tuple, tuples.tolist())),
        )


def _row_logits(coefficient: Fraction | None, scores: FloatArray, q: FloatArray) -> FloatArray:
    """:func:`_logits` of every row of a 2-D array whose rows are ``q`` with some entries set
    to −inf (rows with nothing left are all −inf). A row's best score is one of q's, so the
    exact logits are tabled once per best score that occurs."""
    dead = np.isneginf(scores)
    out = np.full(scores.shape, -np.inf)
    alive = ~dead.all(axis=1)
    best = np.argmax(np.where(dead, -np.inf, scores), axis=1)  # the column of the row's top
    finite = np.flatnonzero(~np.isneginf(q))
    for j in np.unique(best[alive]):
        top = float(q[j])
        column = np.full(q.shape, -np.inf)
        column[finite] = [_logit(coefficient, float(q[i]), top) for i in finite]
        rows = alive & (q[best] == top)
        out[rows] = np.where(dead[rows], -np.inf, column[None, :])
    return out


def _peeling_log_law(
    coefficient: Fraction | None, q: FloatArray, tuples: npt.NDArray[np.intp]
) -> FloatArray:
    """log P[(i1..ik)] = Σ_j log softmax of round j for every ordered tuple.

    Round j is the exponential mechanism P[i] ∝ e^{c·q_i} on the candidates not chosen yet; its
    logits are taken relative to the best remaining score, so that c = ∞ is the uniform choice
    among the remaining maxima (what the sampler does), not only among the overall maxima.
    """
    m, k = tuples.shape
    rows = np.arange(m)
    remaining = np.broadcast_to(q, (m, q.size)).copy()  # −inf: excluded or already chosen
    out = np.zeros(m)
    for j in range(k):
        chosen = tuples[:, j]
        logits = _row_logits(coefficient, remaining, q)
        with np.errstate(divide="ignore"):  # a row with nothing left has probability 0
            norm = np.log(np.sum(np.exp(logits), axis=1))  # logits ≤ 0 with max 0: stable
        pick = logits[rows, chosen]
        out += np.where(np.isneginf(pick), -np.inf, pick - norm)
        remaining[rows, chosen] = -np.inf
    return np.asarray(out)


# -- randomized response --------------------------------------------------------------------------


def _register_randomized_response() -> None:
    from sharpdp.mechanisms.randomized_response import RandomizedResponse

    def neighbours(mechanism: RandomizedResponse, x: object, x_prime: object) -> bool:
        _category(mechanism, "x", x)
        _category(mechanism, "x_prime", x_prime)
        return True

    @register_law(RandomizedResponse, neighbours=neighbours, relation="any two categories")
    def _rr_law(mechanism: RandomizedResponse, x: object) -> FiniteLaw:
        # true category: 1/(1 + (k−1)e^{−ε}); any other: e^{−ε} times that (the definition).
        v = _category(mechanism, "x", x)
        k, eps = mechanism.categories, mechanism.epsilon_
        if k > MAX_OUTCOMES:  # (2^40 categories asked for 8 TiB)
            raise InvalidParameter(
                f"randomized response over {k} categories has {k} outcomes; the exact audit "
                f"enumerates at most {MAX_OUTCOMES}"
            )
        log_top = -math.log1p((k - 1) * math.exp(-eps))
        lp = np.full(k, log_top - eps)
        lp[v] = log_top
        return FiniteLaw(lp)


def _category(mechanism: Any, name: str, value: object) -> int:
    v = _validate.integer(name, value, minimum=0)
    if v >= mechanism.categories:
        raise InvalidParameter(f"{name} must be < categories={mechanism.categories}, got {v}")
    return v


# -- discrete additive mechanisms (registered by name: their module may not be imported) ---------


def _integer_neighbours(mechanism: Any, x: object, x_prime: object) -> bool:
    a, b = _integer("x", x), _integer("x_prime", x_prime)
    return abs(a - b) <= float(mechanism.sensitivity)


@register_law(
    "DiscreteLaplace", neighbours=_integer_neighbours, relation="integers at most Δ apart"
)
def _discrete_laplace_law(mechanism: Any, x: object) -> ShiftLaw:
    return ShiftLaw(DiscreteLaplaceNoise(float(mechanism.scale)), _integer("x", x))


@register_law(
    "DiscreteGaussian", neighbours=_integer_neighbours, relation="integers at most Δ apart"
)
def _discrete_gaussian_law(mechanism: Any, x: object) -> ShiftLaw:
    return ShiftLaw(DiscreteGaussianNoise(float(mechanism.sigma)), _integer("x", x))


_register_selection()
_register_randomized_response()
