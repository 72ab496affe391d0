"""Exact audit: the divergences of a mechanism's exact output laws on given inputs.

For a pair of inputs (x, x′) with output laws P and Q, :func:`exact` computes, in log space,

* ``renyi(α)``: max(D_α(P‖Q), D_α(Q‖P)) for α ∈ [1, ∞] (α = 1 is KL, ∞ the max-divergence);
* ``delta(ε)``: the hockey-stick divergence, max(δ_{P‖Q}(ε), δ_{Q‖P}(ε));
* ``epsilon(δ)``: the smallest ε with ``delta(ε) ≤ δ``;
* ``bounded_range()``: max Z − min Z of the privacy loss Z = log P/Q over the common support
  (``inf`` if the supports differ);
* ``max_divergence()``: max over both orders of sup Z (``inf`` if the supports differ);

and ``check(claim)`` compares them with a claimed guarantee (by default the mechanism itself).

Both orders are always taken, as for a mechanism's guarantee (``docs/conventions.md``). A report is
itself a :class:`~sharpdp.Guarantee`: the exact guarantee of that one pair of inputs. Values are
exact up to floating-point rounding (a few ulps; permute-and-flip and report-noisy-max with
Laplace noise carry their quadrature's ≈1e-14), except for infinite integer supports (discrete
Laplace/Gaussian), where δ and D_α are upper bounds exceeding the truth by at most the tail mass
outside the enumerated window (≤ 1e-60 relative; exactly 0 for the discrete Laplace, whose tails
are geometric and summed in closed form).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from sharpdp import _math, _validate
from sharpdp.audit._check import ATOL, RTOL, CheckResult, check_claim
from sharpdp.audit._laws import FiniteLaw, Law, ShiftLaw, lookup
from sharpdp.audit._pairs import Pair, make_pair
from sharpdp.errors import InvalidParameter, NumericalError
from sharpdp.guarantees import Guarantee

__all__ = [
    "ExactReport",
    "WorstCaseReport",
    "exact",
    "exact_many",
    "exact_pair",
    "score_neighbours",
]

#: Most scores :func:`score_neighbours` enumerates the 3^n − 1 offsets for.
_MAX_NEIGHBOUR_SCORES = 10


def _short(value: object, limit: int = 60) -> str:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _ReportBase(Guarantee):
    """Shared queries of the exact reports (template methods of :class:`Guarantee`)."""

    __slots__ = ()

    def bounded_range(self) -> float:
        """The spread max Z − min Z of the privacy loss over the common support (inf if supports
        differ); the smallest η for which the pair is η-bounded-range."""
        raise NotImplementedError

    def max_divergence(self) -> float:
        """max(D_∞(P‖Q), D_∞(Q‖P)): the smallest ε for which the pair is ε-DP."""
        return self.renyi(math.inf)

    def epsilon_grid(self) -> list[float]:
        """Loss values at which the profile δ(ε) bends (a sample, used by :meth:`check`)."""
        raise NotImplementedError

    def where(self, quantity: str, argument: float | None) -> str:
        """Which input pair a measured value comes from (for violation messages)."""
        raise NotImplementedError

    def default_claim(self) -> Guarantee:
        raise NotImplementedError

    def check(
        self, claim: Guarantee | None = None, *, rtol: float = RTOL, atol: float = ATOL
    ) -> CheckResult:
        """Compare with a claimed guarantee and name every violation.

        Args:
            claim: a guarantee or mechanism; default: the audited mechanism itself (its own
                epsilon/delta/renyi, and the bounded range it implies).
            rtol: relative tolerance (see :mod:`sharpdp.audit._check`; default 1e-12).
            atol: absolute tolerance (default 1e-15).

        Returns:
            A :class:`~sharpdp.audit.CheckResult` (``.ok``, ``.violations``, ``.assert_ok()``).
        """
        return check_claim(
            self, self.default_claim() if claim is None else claim, rtol=rtol, atol=atol
        )

    def _epsilon(self, delta: float) -> float:
        # Smallest ε with δ(ε) ≤ δ: δ(ε) is non-increasing; bisection returns a checked point.
        if self._delta(math.inf) > delta:
            return math.inf
        top = self.max_divergence()
        hi = top if math.isfinite(top) else max(self.epsilon_grid(), default=1.0) + 1.0
        try:
            return _math.smallest_valid(
                lambda e: self._delta(e) <= delta, 0.0, hi, what="audit epsilon(delta)"
            )
        except NumericalError:
            # δ(ε) > δ at every ε tried (to 2^200 past the losses): a law whose unbounded tail is
            # summed as a bound (the discrete Gaussian's) has no ε there, as the mechanism's own
            # epsilon(0) = inf says (this raised)
            return math.inf


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ExactReport(_ReportBase):
    """Exact divergences between the output laws of one pair of inputs (both orders).

    Attributes:
        mechanism: what was audited (a mechanism, a callable, or None for :func:`exact_pair`).
        x: the first input.
        x_prime: the second input.
        size: number of outcomes enumerated.
    """

    mechanism: object
    x: object
    x_prime: object
    _pair: Pair
    notion: ClassVar[str] = "exact audit"

    @property
    def size(self) -> int:
        """Number of outcomes enumerated."""
        return self._pair.size

    def __repr__(self) -> str:
        return (
            f"ExactReport(mechanism={_short(self.mechanism)}, x={_short(self.x)}, "
            f"x_prime={_short(self.x_prime)}, max_divergence={self.max_divergence():.6g}, "
            f"bounded_range={self.bounded_range():.6g})"
        )

    def _renyi(self, alpha: float) -> float:
        return max(self._pair.renyi_one(alpha, True), self._pair.renyi_one(alpha, False))

    def _delta(self, epsilon: float) -> float:
        return max(self._pair.delta_one(epsilon, True), self._pair.delta_one(epsilon, False))

    def bounded_range(self) -> float:
        lo, hi = self._pair.loss_range()
        if math.isinf(lo) or math.isinf(hi):
            return math.inf
        return max(0.0, hi - lo)

    def losses(self) -> tuple[float, float]:
        """(min Z, max Z) of the privacy loss Z = log P/Q (±inf where the supports differ)."""
        return self._pair.loss_range()

    def epsilon_grid(self) -> list[float]:
        return [float(v) for v in self._pair.loss_values()]

    def where(self, quantity: str, argument: float | None) -> str:
        if self.mechanism is None:
            return ""
        return f"x={_short(self.x)}, x_prime={_short(self.x_prime)}"

    def default_claim(self) -> Guarantee:
        return _claim_of(self.mechanism, f" ({_short(self.mechanism)})")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class WorstCaseReport(_ReportBase):
    """The worst case over several input pairs: every quantity is the maximum over the pairs.

    Attributes:
        mechanism: what was audited.
        reports: one :class:`ExactReport` per pair.
    """

    mechanism: object
    reports: tuple[ExactReport, ...]
    notion: ClassVar[str] = "exact audit (worst case)"

    def __repr__(self) -> str:
        return (
            f"WorstCaseReport(mechanism={_short(self.mechanism)}, pairs={len(self.reports)}, "
            f"max_divergence={self.max_divergence():.6g}, "
            f"bounded_range={self.bounded_range():.6g})"
        )

    def _renyi(self, alpha: float) -> float:
        return max(r._renyi(alpha) for r in self.reports)

    def _delta(self, epsilon: float) -> float:
        return max(r._delta(epsilon) for r in self.reports)

    def bounded_range(self) -> float:
        return max(r.bounded_range() for r in self.reports)

    def epsilon_grid(self) -> list[float]:
        values = sorted({v for r in self.reports for v in r.epsilon_grid()})
        if len(values) > 200:
            values = [values[i] for i in np.linspace(0, len(values) - 1, 200).round().astype(int)]
        return values

    def worst(self, quantity: str, argument: float | None = None) -> int:
        """Index of the pair attaining the maximum of ``quantity`` ("renyi", "delta",
        "bounded_range" or "max_divergence") at ``argument``."""
        if quantity == "renyi":
            values = [r.renyi(_validate.order("alpha", argument)) for r in self.reports]
        elif quantity == "delta":
            values = [
                r.delta(_validate.real("epsilon", argument, allow_inf=True)) for r in self.reports
            ]
        elif quantity == "bounded_range":
            values = [r.bounded_range() for r in self.reports]
        elif quantity == "max_divergence":
            values = [r.max_divergence() for r in self.reports]
        else:
            raise InvalidParameter(f"unknown quantity {quantity!r}")
        return int(np.argmax(values))

    def where(self, quantity: str, argument: float | None) -> str:
        i = self.worst(quantity, argument)
        r = self.reports[i]
        return f"pair #{i} (x={_short(r.x)}, x_prime={_short(r.x_prime)})"

    def default_claim(self) -> Guarantee:
        return _claim_of(self.mechanism, "")


def _claim_of(audited: object, shown: str) -> Guarantee:
    """What an audited object claims: itself when it is a guarantee (a mechanism), else the
    guarantee it states (a local randomizer's ``guarantee``, ε-LDP)."""
    if isinstance(audited, Guarantee):
        return audited
    stated = getattr(audited, "guarantee", None)
    if isinstance(stated, Guarantee):
        return stated
    raise InvalidParameter(
        f"check() needs a claim: the audited object is not a sharpdp mechanism{shown}"
    )


# -- entry points ---------------------------------------------------------------------------------


def _as_law(value: object, what: str) -> Law:
    if isinstance(value, FiniteLaw | ShiftLaw):
        return value
    try:
        return FiniteLaw.from_probabilities(value)
    except InvalidParameter as err:
        raise InvalidParameter(f"{what}: {err}") from None


def _laws(
    mechanism: object, x: object, x_prime: object, require_neighbours: bool
) -> tuple[Law, Law]:
    entry = lookup(mechanism)
    if entry is not None:
        if (
            require_neighbours
            and entry.neighbours is not None
            and not entry.neighbours(mechanism, x, x_prime)
        ):
            raise InvalidParameter(
                f"x={_short(x)} and x_prime={_short(x_prime)} are not neighbours for "
                f"{mechanism!r} ({entry.relation}); its guarantee says nothing about them "
                "(pass require_neighbours=False to audit them anyway)"
            )
        return entry.law(mechanism, x), entry.law(mechanism, x_prime)
    if callable(mechanism) and not isinstance(mechanism, Guarantee):
        return _as_law(mechanism(x), "mechanism(x)"), _as_law(mechanism(x_prime), "mechanism(x')")
    raise InvalidParameter(
        f"no exact law is registered for {type(mechanism).__name__}: register one with "
        "sharpdp.audit.register_law, or pass a callable x -> probability vector"
    )


def exact(
    mechanism: object, x: object, x_prime: object, *, require_neighbours: bool = True
) -> ExactReport:
    """Exact audit of a mechanism on the neighbouring inputs ``x`` and ``x_prime``.

    Args:
        mechanism: a mechanism with a registered exact law (``Exponential``, ``PermuteAndFlip``,
            ``ReportNoisyMax``, ``TopK`` on score vectors; ``RandomizedResponse`` on categories;
            ``DiscreteLaplace``/``DiscreteGaussian`` on integers), or a callable mapping an input
            to its output law (a probability vector, a mapping outcome → probability, or a
            :class:`~sharpdp.audit.FiniteLaw`).
        x: the first input.
        x_prime: the second input.
        require_neighbours: refuse inputs that are not neighbours under the mechanism's relation
            (the claim says nothing about them).

    Returns:
        An :class:`ExactReport`.

    Examples:
        >>> import sharpdp as sdp
        >>> r = sdp.audit.exact(sdp.Exponential(1.0), [0.0, 0.0], [0.0, 1.0])
        >>> round(r.bounded_range(), 12)  # the EM is ε-BR, attained on two candidates
        0.5
        >>> r.check().ok
        True
    """
    if not isinstance(require_neighbours, bool):
        raise InvalidParameter(f"require_neighbours must be a bool, got {require_neighbours!r}")
    p, q = _laws(mechanism, x, x_prime, require_neighbours)
    return ExactReport(mechanism, x, x_prime, make_pair(p, q))


def exact_pair(p: object, q: object, *, log: bool = False) -> ExactReport:
    """Exact audit of two given laws P and Q (both orders).

    Args:
        p: probabilities (a 1-D array, a mapping outcome → probability) or a law object.
        q: the same for Q; arrays are matched by position, mappings by outcome.
        log: the arrays (or mapping values) are log-probabilities.

    Returns:
        An :class:`ExactReport` (``check`` needs an explicit claim).

    Examples:
        >>> import math, sharpdp as sdp
        >>> e = math.e
        >>> r = sdp.audit.exact_pair([e / (1 + e), 1 / (1 + e)], [1 / (1 + e), e / (1 + e)])
        >>> round(r.max_divergence(), 12), round(r.delta(0.0), 12)  # RR: ε, tanh(ε/2)
        (1.0, 0.46211715726)
    """
    if not isinstance(log, bool):
        raise InvalidParameter(f"log must be a bool, got {log!r}")
    return ExactReport(None, None, None, make_pair(_law_arg("p", p, log), _law_arg("q", q, log)))


def _law_arg(name: str, value: object, log: bool) -> Law:
    if isinstance(value, FiniteLaw | ShiftLaw):
        return value
    if not log:
        try:
            return FiniteLaw.from_probabilities(value)
        except InvalidParameter as err:
            raise InvalidParameter(f"{name}: {err}") from None
    outcomes: tuple[Hashable, ...] | None = None
    if isinstance(value, Mapping):
        outcomes = tuple(value.keys())
        value = list(value.values())
    try:
        lp = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be an array of log-probabilities") from None
    try:
        return FiniteLaw(lp, outcomes)
    except InvalidParameter as err:
        raise InvalidParameter(f"{name}: {err}") from None


def exact_many(
    mechanism: object,
    pairs: Iterable[tuple[object, object]],
    *,
    require_neighbours: bool = True,
) -> WorstCaseReport:
    """Exact audit over many input pairs; every quantity is the worst (largest) over the pairs.

    Args:
        mechanism: as for :func:`exact`.
        pairs: (x, x_prime) pairs, e.g. from :func:`score_neighbours`.
        require_neighbours: as for :func:`exact`.

    Returns:
        A :class:`WorstCaseReport`; its ``check`` names the pair of each violation.
    """
    reports = []
    for item in pairs:
        try:
            x, x_prime = item
        except (TypeError, ValueError):
            raise InvalidParameter(
                f"pairs must hold (x, x_prime) pairs, got {_short(item)}"
            ) from None
        reports.append(exact(mechanism, x, x_prime, require_neighbours=require_neighbours))
    if not reports:
        raise InvalidParameter("pairs must not be empty")
    return WorstCaseReport(mechanism, tuple(reports))


def score_neighbours(
    scores: Sequence[float] | npt.NDArray[np.float64],
    sensitivity: float = 1.0,
    monotonic: bool = False,
) -> list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
    """The extreme neighbours of a score vector: (q, q + Δ·s) for every sign vector s ≠ 0.

    s ranges over {−1, 0, 1}^n (over {0, 1}^n and {−1, 0}^n when ``monotonic``): the vertices of
    the box of score vectors within Δ of q. For the exponential mechanism the privacy loss is
    linear in q′ − q, so its bounded range and max-divergence are attained at these vertices. At
    most 10 scores (3^10 − 1 = 59,048 pairs).

    Args:
        scores: the base score vector q (finite scores; ``-inf`` entries are kept fixed).
        sensitivity: Δ.
        monotonic: only offsets in one direction.
    """
    from sharpdp.mechanisms.selection import as_scores

    q = as_scores(scores)
    delta = _validate.nonnegative("sensitivity", sensitivity)
    if not isinstance(monotonic, bool):
        raise InvalidParameter(f"monotonic must be a bool, got {monotonic!r}")
    live = np.flatnonzero(np.isfinite(q))
    if live.size > _MAX_NEIGHBOUR_SCORES:
        raise InvalidParameter(
            f"scores has {live.size} finite entries; at most {_MAX_NEIGHBOUR_SCORES} are enumerated"
        )
    if monotonic:
        signs = [s for s in itertools.product((0, 1), repeat=live.size) if any(s)]
        signs += [tuple(-v for v in s) for s in signs]
    else:
        signs = [s for s in itertools.product((-1, 0, 1), repeat=live.size) if any(s)]
    out = []
    for s in signs:
        qp = q.copy()
        qp[live] += delta * np.asarray(s, dtype=np.float64)
        out.append((q.copy(), qp))
    return out
