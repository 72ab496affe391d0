"""Private selection: the exponential mechanism, permute-and-flip, report-noisy-max and one-shot top-k.

Each mechanism is a frozen description with its exact output law (``probabilities``) and its sharpest
privacy characterisation. Scores are a 1-D array of finite floats or ints; ``-inf`` excludes a
candidate. Neighbouring score vectors differ by at most ``sensitivity`` in every coordinate; with
``monotonic=True`` they moreover move in the same direction (e.g. counts under add/remove one
record), so the score *range* is Δ rather than 2Δ (Rogers–Steinke 2021, "A better privacy
analysis of the exponential mechanism", differentialprivacy.org, Lemma 3 and footnote 3; Dong 2020,
"forget sensitivity, use range").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Literal, overload

import numpy as np
import numpy.typing as npt

from sharpdp import _divergences, _math, _validate
from sharpdp.conversions import register
from sharpdp.errors import InvalidParameter, NotImplied, NumericalError
from sharpdp.guarantees import (
    ZCDP,
    BoundedRange,
    Guarantee,
    PureDP,
    composed_bound,
    composed_bounds,
)
from sharpdp.mechanisms import _race
from sharpdp.mechanisms._samplers import RNGLike, as_generator
from sharpdp.mechanisms.base import Mechanism

__all__ = ["Exponential", "PermuteAndFlip", "ReportNoisyMax", "TopK", "as_scores"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Largest candidate set for which permute-and-flip's exact law is computed (O(n²) work).
PF_EXACT_LIMIT = 20_000


def as_scores(scores: object, name: str = "scores") -> FloatArray:
    """Validate a score vector: 1-D, non-empty, numbers (not booleans or text), no NaN or +inf,
    at least one finite entry, and integers of magnitude at most 2⁵³.

    An integer past 2⁵³ rounds to a float, and rounding can move two neighbouring score vectors
    apart by more than Δ: (2⁵³ + 1, 2⁵³) and (2⁵³ + 2, 2⁵³ − 1) rounded to (2⁵³, 2⁵³) and
    (2⁵³ + 2, 2⁵³ − 1), a log-ratio of 5.3 for the exponential mechanism at ε = 4.
    """
    try:
        raw = np.asarray(scores)
        if raw.dtype.kind in "bUSVM" or (
            raw.dtype.kind == "O"
            and any(isinstance(x, bool | np.bool_ | str | bytes) for x in raw.flat)
        ):
            raise TypeError
        q = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond the float range
        raise InvalidParameter(f"{name} must be a 1-D array of numbers, got {scores!r}") from None
    given_floats = isinstance(scores, np.ndarray) and scores.dtype == np.float64
    big = np.empty(0, dtype=np.intp) if given_floats else np.flatnonzero(np.abs(q) >= 2.0**53)
    if big.size:
        # Only float64 values are taken as given: any other number (an int, a Fraction, a
        # Decimal, a long double, also inside a list that numpy made float64) is rounded here
        items = scores if isinstance(scores, list | tuple) else None
        for i in big:
            given = items[i] if items is not None and q.ndim == 1 else raw.flat[i]
            if type(given) is float or (isinstance(given, np.floating) and given.dtype == q.dtype):
                continue
            if abs(given) > 2**53:
                raise InvalidParameter(
                    f"{name}[{i}] = {given}: scores other than float64 must be at most 2**53 "
                    "in magnitude (past it they round to floats, which can move neighbouring "
                    "scores apart by more than the sensitivity); subtract a common offset first"
                )
    if q.ndim != 1:
        raise InvalidParameter(f"{name} must be 1-D, got shape {q.shape}")
    if q.size == 0:
        raise InvalidParameter(f"{name} must not be empty")
    if np.isnan(q).any():
        raise InvalidParameter(f"{name} must not contain NaN (index {int(np.argmax(np.isnan(q)))})")
    if np.isposinf(q).any():
        raise InvalidParameter(
            f"{name} must not contain +inf (index {int(np.argmax(np.isposinf(q)))})"
        )
    if not np.isfinite(q).any():
        raise InvalidParameter(f"{name} must have at least one finite score (all are -inf)")
    return q


def _exact_coefficient(epsilon: float, sensitivity: float, monotonic: bool) -> Fraction | None:
    """c in P[y] ∝ exp(c·q_y) as an exact rational: ε/(2Δ), or ε/Δ for monotonic scores
    (``None``: c = ∞, Δ = 0 with ε > 0; c = 0 for Δ = ε = 0, no information)."""
    if sensitivity == 0.0:
        return None if epsilon > 0 else Fraction(0)
    return Fraction(epsilon) / (Fraction(sensitivity) * (1 if monotonic else 2))


def _coefficient(epsilon: float, sensitivity: float, monotonic: bool) -> float:
    """c in P[y] ∝ exp(c·q_y): ε/(2Δ), or ε/Δ for monotonic scores, rounded to a float (inf
    beyond the float range; 2Δ is not formed, so Δ = 1e308 gives 5e-309, not 0)."""
    c = _exact_coefficient(epsilon, sensitivity, monotonic)
    if c is None:
        return math.inf
    try:
        return float(c)
    except OverflowError:
        return math.inf


def _softmax(logits: FloatArray) -> FloatArray:
    top = np.max(logits)
    w = np.exp(logits - top)
    return np.asarray(w / w.sum(), dtype=np.float64)


def _scaled(c: Fraction | None, q: FloatArray) -> FloatArray:
    """c·(q − max q) with −inf kept and c = ∞ (``None``) a uniform choice among the maxima,
    without spurious overflows (:func:`~sharpdp.mechanisms._race.scaled_gaps`)."""
    if np.all(np.isneginf(q)):
        return np.full(q.shape, -np.inf)
    return _race.scaled_gaps(q, c)


def _check_monotonic(monotonic: object) -> bool:
    if not isinstance(monotonic, bool):
        raise InvalidParameter(f"monotonic must be a bool, got {monotonic!r}")
    return monotonic


def _size(size: object) -> int | None:
    if size is None:
        return None
    return _validate.integer("size", size, minimum=0)


def _sample(
    scores: object,
    epsilon: float,
    sensitivity: float,
    monotonic: bool,
    noise: _race.Noise,
    k: int,
    rng: RNGLike,
    size: object,
) -> IntArray:
    """Exact draws of the ordered top-k of c·q + noise (see :mod:`sharpdp.mechanisms._race`).

    Returns an array of shape (k,) for ``size=None``, else (size, k).
    """
    q = as_scores(scores)
    m = _size(size)
    live = int(np.count_nonzero(~np.isneginf(q)))
    if k > live:
        raise InvalidParameter(f"k={k} exceeds the {live} candidates with a finite score")
    gen = as_generator(rng)
    c = _exact_coefficient(epsilon, sensitivity, monotonic)
    if c is None:
        return _sort_select(q, k, gen, m)  # c = ∞: the top scores, ties broken uniformly
    return _race.race(_race.offsets(q, c), k, noise, gen, m)


def _sort_select(q: FloatArray, k: int, rng: np.random.Generator, size: int | None) -> IntArray:
    """The k highest scores in order, ties broken by a uniformly random permutation (exact)."""

    def once() -> IntArray:
        tiebreak = rng.permutation(q.size)
        return np.lexsort((tiebreak, -q))[:k].astype(np.int64)

    if size is None:
        return once()
    return np.array([once() for _ in range(size)], dtype=np.int64).reshape(size, k)


class _SelectsOne:
    """``select`` for mechanisms that release one index: an exact noisy-max race.

    Each mechanism is argmax_r c·q_r + N_r for its noise N (Gumbel: the exponential mechanism by the
    Gumbel-max identity; exponential: permute-and-flip [Ding et al. 2021]; Laplace: report-noisy-max),
    decided on exact uniforms with certified interval arithmetic (:mod:`sharpdp.mechanisms._race`),
    so no floating-point rounding enters the released index.
    """

    __slots__ = ()
    epsilon_: float
    sensitivity: float
    monotonic: bool

    def _race_noise(self) -> _race.Noise:
        raise NotImplementedError

    @overload
    def select(self, scores: Sequence[float] | FloatArray, rng: RNGLike = None) -> int: ...
    @overload
    def select(
        self, scores: Sequence[float] | FloatArray, rng: RNGLike = None, *, size: int
    ) -> IntArray: ...
    def select(
        self, scores: Sequence[float] | FloatArray, rng: RNGLike = None, *, size: int | None = None
    ) -> int | IntArray:
        """Sample the mechanism's output law (``probabilities(scores)``) exactly.

        Args:
            scores: 1-D scores (ints or floats; ``-inf`` excludes a candidate).
            rng: a seed or a ``numpy.random.Generator``.
            size: number of independent draws (``None``: one draw, returned as an int).

        Returns:
            The selected index, or an int64 array of ``size`` indices.
        """
        noise = self._race_noise()
        out = _sample(scores, self.epsilon_, self.sensitivity, self.monotonic, noise, 1, rng, size)
        return int(out[0]) if size is None else out[:, 0]


@dataclass(frozen=True, slots=True, init=False)
class _ScoreSelection(Mechanism):
    """Shared parameters of selection by scores: ε, the score sensitivity Δ, monotonicity."""

    epsilon_: float
    sensitivity: float
    monotonic: bool

    def __init__(self, epsilon: float, sensitivity: float = 1.0, monotonic: bool = False) -> None:
        object.__setattr__(self, "epsilon_", _validate.nonnegative("epsilon", epsilon))
        object.__setattr__(self, "sensitivity", _validate.nonnegative("sensitivity", sensitivity))
        object.__setattr__(self, "monotonic", _check_monotonic(monotonic))

    @property
    def coefficient(self) -> float:
        """c in P[y] ∝ exp(c·q_y) (or the acceptance probability exp(c(q_y − q*)))."""
        return _coefficient(self.epsilon_, self.sensitivity, self.monotonic)

    @property
    def exact_coefficient(self) -> Fraction | None:
        """:attr:`coefficient` as an exact rational (``None``: c = ∞)."""
        return _exact_coefficient(self.epsilon_, self.sensitivity, self.monotonic)


@dataclass(frozen=True, slots=True, init=False, repr=False)
class Exponential(_SelectsOne, _ScoreSelection):
    """The exponential mechanism [McSherry–Talwar 2007]: P[y] ∝ exp(ε·q_y/(2Δ)), or exp(ε·q_y/Δ)
    when the scores are monotonic.

    It is ε-bounded-range [Durfee–Rogers 2019; Rogers–Steinke 2021, Lemma 3]: the log-ratio of the
    two output laws on neighbours is c(q′_y − q_y) − (a constant), and q′ − q spans a range ≤ 2Δ
    (≤ Δ when monotonic). Hence ε-DP, the exact BR Rényi curve, and ≈ ε²/8-zCDP (not ε²/2).

    Args:
        epsilon: ε ≥ 0 (stored as ``epsilon_``).
        sensitivity: Δ ≥ 0, the largest change of any score between neighbours.
        monotonic: scores move in one direction between neighbours.
    """

    notion: ClassVar[str] = "exponential mechanism"

    def probabilities(self, scores: Sequence[float] | FloatArray) -> FloatArray:
        """The exact output law (softmax of c·q, evaluated in float64 with the max subtracted)."""
        return _softmax(_scaled(self.exact_coefficient, as_scores(scores)))

    def _race_noise(self) -> _race.Noise:
        return "gumbel"

    def utility_bound(self, n_candidates: int, beta: float) -> float:
        """The loss ℓ with P[q(output) ≤ OPT − ℓ] ≤ β [Dwork–Roth 2014, Thm 3.11].

        ℓ = 2Δ(ln n + ln 1/β)/ε, halved for monotonic scores (the coefficient doubles). E.g. 1,000
        classes, ε = 0.5, β = 0.01: ℓ ≈ 46.1 votes.
        """
        n = _validate.integer("n_candidates", n_candidates, minimum=1)
        b = _validate.real("beta", beta)
        if not 0.0 < b < 1.0:
            raise InvalidParameter(f"beta must be in (0, 1), got {b!r}")
        if self.epsilon_ == 0.0 or self.coefficient == 0.0:  # c = ε/(2Δ) may underflow to 0
            return math.inf
        return (math.log(n) + math.log(1.0 / b)) / self.coefficient

    def characterisation(self) -> BoundedRange:
        """ε-bounded range, exactly (two candidates attain it)."""
        return BoundedRange(self.epsilon_)


@register(
    Exponential,
    BoundedRange,
    name="rs21-lemma3",
    theorem="Rogers–Steinke 2021 Lemma 3: EM is ε-BR",
    tight=True,
)
def exponential_to_bounded_range(m: Exponential) -> BoundedRange:
    """The exponential mechanism is ε-BR [Rogers–Steinke 2021, Lemma 3]; tight (two candidates)."""
    return BoundedRange(m.epsilon_)


@register(
    Exponential,
    ZCDP,
    name="via-bounded-range",
    theorem="ε-BR, then the certified BR zCDP bound (≤ ε²/8, Cesar–Rogers 2021)",
)
def exponential_to_zcdp(m: Exponential) -> ZCDP:
    """ε-BR ⇒ the certified zCDP constant of bounded range (≤ ε²/8) [Rogers–Steinke 2021 Cor 7]."""
    from sharpdp.conversions import convert

    return convert(BoundedRange(m.epsilon_), ZCDP)


@dataclass(frozen=True, slots=True, init=False, repr=False)
class PermuteAndFlip(_SelectsOne, _ScoreSelection):
    """Permute-and-flip [McKenna–Sheldon 2020]: visit candidates in a uniformly random order and
    accept r with probability exp(c(q_r − q*)), c = ε/(2Δ) (ε/Δ monotonic), q* = max q.

    Exact law: P[r] = p_r ∫₀¹ Π_{s≠r}(1 − u p_s) du with p_s = exp(c(q_s − q*)) (a uniformly random
    order is the same as i.i.d. uniform arrival times; McKenna–Sheldon 2020 define the mechanism), a
    polynomial of degree n − 1 in u, integrated exactly by ⌈n/2⌉-point Gauss–Legendre. It is ε-DP,
    but *not* ε-BR: q = (0, 0), q′ = (0, 1) gives a log-ratio spread of ε + ln(2 − e^{−ε})
    [Durfee–Rogers 2021 blog]; the valid BR parameter is 2ε (from ε-DP).
    """

    notion: ClassVar[str] = "permute-and-flip"

    def probabilities(self, scores: Sequence[float] | FloatArray) -> FloatArray:
        """The exact output law by Gauss–Legendre quadrature of a polynomial (exact up to rounding)."""
        q = as_scores(scores)
        if q.size > PF_EXACT_LIMIT:
            raise InvalidParameter(
                f"permute-and-flip's exact law is computed for at most {PF_EXACT_LIMIT} candidates, "
                f"got {q.size}"
            )
        p = np.exp(_scaled(self.exact_coefficient, q))
        return _permute_and_flip_law(p)

    def _race_noise(self) -> _race.Noise:
        return "exponential"

    def characterisation(self) -> PureDP:
        """ε-DP (tight: two candidates make it randomized response)."""
        return PureDP(self.epsilon_)


def _permute_and_flip_law(p: FloatArray) -> FloatArray:
    from scipy.special import roots_legendre

    n = p.size
    nodes, weights = roots_legendre(max(1, (n + 1) // 2))
    u = 0.5 * (nodes + 1.0)  # map [-1, 1] → [0, 1]
    w = 0.5 * weights
    out = np.zeros(n)
    live = p > 0.0
    pl = p[live]
    # log Π_s (1 − u p_s) for every node, then divide out each r's own factor.
    logs = np.log1p(-np.outer(u, pl))  # (nodes, candidates)
    total = logs.sum(axis=1, keepdims=True)
    integrand = np.exp(total - logs)
    out[live] = pl * (w @ integrand)
    return np.asarray(out / out.sum(), dtype=np.float64)


NoiseKind = Literal["gumbel", "exponential", "laplace"]


@dataclass(frozen=True, slots=True, init=False)
class ReportNoisyMax(_SelectsOne, Mechanism):
    """Report-noisy-max: argmax_y q_y + noise_y with i.i.d. noise of scale 2Δ/ε (Δ/ε monotonic).

    * ``noise="gumbel"``: the exponential mechanism (Gumbel-max identity), ε-BR;
    * ``noise="exponential"``: permute-and-flip [Ding et al. 2021], ε-DP but not ε-BR;
    * ``noise="laplace"``: ε-DP [Dwork–Roth 2014, Claim 3.9].
    """

    epsilon_: float
    noise: NoiseKind
    sensitivity: float
    monotonic: bool
    notion: ClassVar[str] = "report noisy max"

    def __init__(
        self,
        epsilon: float,
        noise: NoiseKind = "gumbel",
        sensitivity: float = 1.0,
        monotonic: bool = False,
    ) -> None:
        if not isinstance(noise, str) or noise not in ("gumbel", "exponential", "laplace"):
            raise InvalidParameter(
                f"noise must be 'gumbel', 'exponential' or 'laplace', got {noise!r}"
            )
        object.__setattr__(self, "epsilon_", _validate.nonnegative("epsilon", epsilon))
        object.__setattr__(self, "noise", noise)
        object.__setattr__(self, "sensitivity", _validate.nonnegative("sensitivity", sensitivity))
        object.__setattr__(self, "monotonic", _check_monotonic(monotonic))

    @property
    def equivalent(self) -> Exponential | PermuteAndFlip | None:
        """The mechanism with the same output law (None for Laplace noise)."""
        if self.noise == "gumbel":
            return Exponential(self.epsilon_, self.sensitivity, self.monotonic)
        if self.noise == "exponential":
            return PermuteAndFlip(self.epsilon_, self.sensitivity, self.monotonic)
        return None

    def probabilities(self, scores: Sequence[float] | FloatArray) -> FloatArray:
        """The exact output law (Laplace noise: 1-D quadrature of ∫ f(x − q_r) Π_{s≠r} F(x − q_s))."""
        eq = self.equivalent
        if eq is not None:
            return eq.probabilities(scores)
        q = as_scores(scores)
        c = _exact_coefficient(self.epsilon_, self.sensitivity, self.monotonic)
        return _laplace_noisy_max_law(q, c)

    def _race_noise(self) -> _race.Noise:
        return self.noise

    def characterisation(self) -> BoundedRange | PureDP:
        """ε-BR with Gumbel noise (it is the exponential mechanism), ε-DP otherwise."""
        if self.noise == "gumbel":
            return BoundedRange(self.epsilon_)
        return PureDP(self.epsilon_)


@register(
    ReportNoisyMax,
    BoundedRange,
    name="gumbel-is-em",
    theorem="Gumbel noise: the exponential mechanism (Gumbel-max identity), ε-BR (RS21 Lemma 3)",
    tight=True,
)
def report_noisy_max_to_bounded_range(m: ReportNoisyMax) -> BoundedRange:
    """With Gumbel noise, report-noisy-max *is* the exponential mechanism: ε-BR, tight.

    Other noises are not ε-BR (exponential noise is permute-and-flip, whose spread exceeds ε);
    they get the generic route from ε-DP.
    """
    if m.noise != "gumbel":
        raise NotImplied(f"{m.noise} noise is not the exponential mechanism")
    return BoundedRange(m.epsilon_)


@register(
    ReportNoisyMax,
    ZCDP,
    name="via-bounded-range",
    theorem="Gumbel noise: ε-BR, then the certified BR zCDP bound (≤ ε²/8, Cesar–Rogers 2021)",
)
def report_noisy_max_to_zcdp(m: ReportNoisyMax) -> ZCDP:
    """With Gumbel noise, the exponential mechanism's zCDP bound (via ε-BR)."""
    from sharpdp.conversions import convert

    return convert(report_noisy_max_to_bounded_range(m), ZCDP)


#: Gauss–Legendre nodes per piece, and the longest piece (in units of the Laplace scale), of the
#: quadrature of report-noisy-max's Laplace law.
_RNM_NODES = 12
_RNM_PIECE = 0.5
#: Matrix entries (nodes × candidates) evaluated at once: ~64 MiB of float64 per temporary.
_RNM_CHUNK = 1 << 23


def _laplace_noisy_max_law(q: FloatArray, c: Fraction | None) -> FloatArray:
    """Law of argmax_r c·q_r + L_r, with L_r i.i.d. standard Laplace (density f(x) = e^{−|x|}/2).

    Computed on z = c·(q − max q) ≤ 0 (the argmax is invariant under the shift and the scaling by
    the noise scale 1/c): P[r] = ∫ f(x − z_r) Π_{s≠r} F(x − z_s) dx, F the Laplace CDF. Between
    consecutive kinks z_s every factor is an entire function of x (½e^{x−z_s} on one side,
    1 − ½e^{−(x−z_s)} on the other), so the integrand is smooth on each gap and Gauss–Legendre
    rules converge fast there: 12 nodes on pieces of length ≤ ½ between the kinks. This is a
    numerical rule, not a bound: the tests check it against the closed form (sums of
    exponentials, at 60 digits) to 1e-12 relative, tiny probabilities included, and against
    adaptive quadrature for 600 candidates. All candidates share the nodes: log F(x − z_s) is
    summed once per node, and each candidate's integrand is that sum with its own factor swapped
    for its density — O(nodes · n) work in numpy, where an adaptive quadrature per candidate
    evaluates all n factors at every point of each of n integrals. Every term is non-negative, so tiny
    probabilities keep their relative accuracy. No reported privacy bound is computed from this
    law (the exact audits compare it with the claimed guarantee).

    The range is [min z − 40, 40]: beyond it each candidate loses at most a fraction ~e^{−40} of
    its probability. The values are normalised by their sum (which differs from 1 by about that,
    plus rounding). c = 0 gives the uniform law on the candidates with a finite score, c = ∞ the
    uniform law on the maxima. A candidate with z_r < −745 wins with probability at most
    P[L_r − L_top > 745] = e^{−745}(2 + 745)/4 < 2.5e-321 and gets 0 (below the float range but
    for subnormals).
    """
    z = _scaled(c, q)
    live = z > -745.0
    zl = z[live]
    out = np.zeros(q.size)
    if np.all(zl == zl[0]):  # symmetric: every live candidate equally likely
        out[live] = 1.0 / zl.size
        return out
    kinks = np.unique(zl)
    ends = np.concatenate(([kinks[0] - 40.0], kinks, [kinks[-1] + 40.0]))
    gaps = np.diff(ends)
    pieces = np.maximum(1, np.ceil(gaps / _RNM_PIECE)).astype(np.int64)
    first = np.repeat(np.cumsum(pieces) - pieces, pieces)
    index = np.arange(int(pieces.sum())) - first  # the piece's rank within its gap
    width = np.repeat(gaps / pieces, pieces)
    a = np.repeat(ends[:-1], pieces) + index * width
    last = index == np.repeat(pieces - 1, pieces)
    b = np.where(last, np.repeat(ends[1:], pieces), a + width)  # kinks stay exact piece ends
    t, w = np.polynomial.legendre.leggauss(_RNM_NODES)
    half, mid = 0.5 * (b - a), 0.5 * (a + b)
    x = (mid[:, None] + half[:, None] * t).ravel()
    weights = (half[:, None] * w).ravel()
    probs = np.zeros(zl.size)
    step = max(1, _RNM_CHUNK // zl.size)
    log_half = math.log(0.5)
    for i in range(0, x.size, step):
        d = x[i : i + step, None] - zl[None, :]
        with np.errstate(under="ignore"):
            above = d >= 0.0
            log_cdf = np.where(above, np.log1p(-0.5 * np.exp(-np.abs(d))), log_half + d)
            # log f − log F: 0 below the candidate's score, log ½ − d − log F(d) above it
            swap = np.where(above, log_half - d - log_cdf, 0.0)
            total = log_cdf.sum(axis=1, keepdims=True)
            probs += weights[i : i + step] @ np.exp(total + swap)
    total_mass = float(probs.sum())
    if not math.isfinite(total_mass) or total_mass <= 0.0:
        raise NumericalError(f"report-noisy-max's Laplace law: total mass {total_mass!r}")
    out[live] = probs / total_mass
    return out


@dataclass(frozen=True, slots=True, init=False, repr=False)
class TopK(_ScoreSelection):
    """One-shot top-k with Gumbel noise ≡ k rounds of peeling exponential mechanisms
    [Durfee–Rogers 2019; Durfee–Rogers 2021, "One-shot DP top-k mechanisms", differentialprivacy.org,
    Thm 1]: P[(i1..ik)] = Π_j e^{c q_{ij}} / Σ_{l∉{i1..i_{j−1}}} e^{c q_l}.

    Each round is an ε-BR selection, composed adaptively: the RDP curve is k times the exact BR curve
    (RDP composition, Mironov 2017 Prop 1), pure DP kε. (DDR20's non-adaptive optimum does not apply
    to peeling.) Its own ``epsilon``/``delta`` are the accounting layer's adaptive composition of
    the k rounds, whose analyses include CKS20 Prop 12 on that curve — the same numbers as
    ``sdp.compose([t])``: δ(0.5) = 0.242 for k = 3, ε = 1, where the curve alone gives 0.309.

    Args:
        k: number of items released (≥ 1).
        epsilon: ε per round (stored as ``epsilon_``).
        sensitivity: Δ.
        monotonic: scores move in one direction between neighbours.
    """

    k: int
    notion: ClassVar[str] = "one-shot top-k"

    def __init__(
        self, k: int, epsilon: float, sensitivity: float = 1.0, monotonic: bool = False
    ) -> None:
        object.__setattr__(self, "k", _validate.integer("k", k, minimum=1))
        _ScoreSelection.__init__(self, epsilon, sensitivity, monotonic)

    def probability(self, scores: Sequence[float] | FloatArray, outcome: Sequence[int]) -> float:
        """Exact probability of the ordered outcome (i1, …, ik) (product of peeling softmaxes)."""
        q = as_scores(scores)
        given = _validate.sequence("outcome", outcome, "a sequence of k indices")
        items = [_validate.integer("outcome[i]", i, minimum=0) for i in given]
        if len(items) != self.k:
            raise InvalidParameter(f"outcome must have k={self.k} items, got {len(items)}")
        if self.k > int(np.isfinite(q).sum()):
            raise InvalidParameter(f"k={self.k} exceeds the {int(np.isfinite(q).sum())} candidates")
        if len(set(items)) != len(items) or max(items) >= q.size:
            raise InvalidParameter(f"outcome must be distinct indices < {q.size}, got {items}")
        # Each round is the exponential mechanism on the candidates left, its logits taken
        # relative to the best score left (so c = ∞ picks uniformly among the remaining maxima,
        # as the sampler does); the largest logit is 0, so the normaliser is ≥ 1.
        rest = q.copy()
        log_p = 0.0
        for i in items:
            logits = _scaled(self.exact_coefficient, rest)
            if not math.isfinite(logits[i]):
                return 0.0
            log_p += float(logits[i]) - math.log(float(np.exp(logits).sum()))
            rest[i] = -np.inf
        return math.exp(log_p)

    @overload
    def select(
        self, scores: Sequence[float] | FloatArray, rng: RNGLike = None
    ) -> tuple[int, ...]: ...
    @overload
    def select(
        self, scores: Sequence[float] | FloatArray, rng: RNGLike = None, *, size: int
    ) -> IntArray: ...
    def select(
        self, scores: Sequence[float] | FloatArray, rng: RNGLike = None, *, size: int | None = None
    ) -> tuple[int, ...] | IntArray:
        """The k largest of c·q_r + Gumbel noise, in order: exactly peeling EM's law.

        One-shot Gumbel top-k has the law of :meth:`probability` [Durfee–Rogers 2019]; the order
        is decided on exact uniforms (:mod:`sharpdp.mechanisms._race`).

        Returns:
            A tuple of k indices (best first), or an int64 array of shape (size, k).
        """
        out = _sample(
            scores, self.epsilon_, self.sensitivity, self.monotonic, "gumbel", self.k, rng, size
        )
        return tuple(int(i) for i in out) if size is None else out

    def characterisation(self) -> BoundedRange:
        """For k = 1, ε-BR exactly: one round is the exponential mechanism (its law, Thm 1 of
        Durfee–Rogers 2021). k > 1 rounds have no single characterising guarantee."""
        if self.k == 1:
            return BoundedRange(self.epsilon_)
        raise NotImplementedError("TopK with k > 1 implements the guarantee hooks directly")

    def _renyi(self, alpha: float) -> float:
        return _math.times_up(_divergences.br_renyi(self.epsilon_, alpha), self.k)

    # k > 1 adaptively composed ε-BR rounds: no single characterising guarantee. The accounting
    # layer's adaptive composition of the k rounds (the least of its analyses: the MGF inversion
    # of their dominating pairs, CKS20 on the exact k-fold BR curve, the kε-DP profile...;
    # DDR20's non-adaptive optimum never applies to peeling); one round is the exponential
    # mechanism, whose profile is ε-BR's.
    def rounds(self) -> tuple[tuple[Guarantee, int], ...] | None:
        """k > 1: the k adaptive ε-BR rounds; one round is the exponential mechanism (``None``)."""
        return ((BoundedRange(self.epsilon_), self.k),) if self.k > 1 else None

    # (the composition's analyses include the generic routes of Guarantee on the same k-fold
    # curve, so those run only when it answers nothing: computing both doubled the cost of a
    # conversion to GDP, which asks hundreds of points)
    def _delta(self, epsilon: float) -> float:
        rounds = self.rounds()
        if rounds is None:
            return self.characterisation()._delta(epsilon)
        composed = composed_bound(rounds, "delta", epsilon)
        return composed if composed < 1.0 else Guarantee._delta(self, epsilon)

    def _epsilon(self, delta: float) -> float:
        rounds = self.rounds()
        if rounds is None:
            return self.characterisation()._epsilon(delta)
        composed = composed_bound(rounds, "epsilon", delta)
        return composed if composed < math.inf else Guarantee._epsilon(self, delta)

    def _delta_bounds(self, epsilons: Any) -> Any:
        # many points of the profile at once (the conversion to GDP asks ~100 per candidate μ):
        # the composition's own bounds, e.g. from the MGF inversion's plans
        rounds = self.rounds()
        if rounds is None:
            return self.characterisation()._delta_bounds(epsilons)
        return composed_bounds(rounds, epsilons)

    def _group(self, k: int) -> Mechanism:
        return TopK(self.k, _math.times_up(self.epsilon_, k), self.sensitivity, self.monotonic)


@register(
    TopK,
    BoundedRange,
    name="one-round-is-em",
    theorem="k = 1: one peeling round is the exponential mechanism, ε-BR (RS21 Lemma 3)",
    tight=True,
)
def top_one_to_bounded_range(m: TopK) -> BoundedRange:
    """TopK with k = 1 is the exponential mechanism, hence ε-BR (tight); k > 1 rounds are not
    one BR selection (their composition is handled by the accountant)."""
    if m.k != 1:
        raise NotImplied(f"{m!r}: k = {m.k} rounds are a composition, not one ε-BR selection")
    return BoundedRange(m.epsilon_)
