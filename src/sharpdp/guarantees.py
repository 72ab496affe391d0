"""Privacy guarantees as frozen, validated value types.

Every guarantee ``g`` answers three questions with the tightest value it implies:

* ``g.epsilon(delta)``: the smallest ε with (ε, δ)-DP certified;
* ``g.delta(epsilon)``: the smallest δ certified at ε (ε ≥ 0, ``inf`` allowed);
* ``g.renyi(alpha)``: a bound on the Rényi divergence D_α for α ∈ [1, ∞] (α = 1 is the KL
  divergence, α = ∞ the max-divergence); ``inf`` where none is implied;

and ``g.group(k)``, the guarantee for groups of k individuals (or :class:`~sharpdp.NotImplied`).
All quantities are suprema over neighbouring inputs in both orders.

Subclassing contract (template methods, as in ``scipy.stats.rv_continuous``): the public methods
validate their argument and check the result is not NaN; a subclass implements the hooks
``_renyi(alpha)`` and, when it knows better than the generic route, ``_delta(epsilon)``,
``_epsilon(delta)`` and ``_group(k)``. The generic ``_delta``/``_epsilon`` convert the RDP curve
with Canonne–Kamath–Steinke 2020 Prop 12, optimised over continuous α.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Self

from sharpdp import _divergences, _math, _tails, _validate
from sharpdp._format import html_table
from sharpdp.errors import (
    InvalidParameter,
    NotImplied,
    NumericalError,
    SharpDPError,
)

__all__ = [
    "GDP",
    "MCDP",
    "RDP",
    "ZCDP",
    "ApproxDP",
    "ApproxZCDP",
    "BoundedRange",
    "Guarantee",
    "PureDP",
]


#: (rounds, quantity, at) → a valid bound on ε(δ) (``quantity="epsilon"``) or δ(ε) (``"delta"``)
#: of the *adaptive* composition of ``rounds`` ((guarantee, count) pairs), the least over every
#: analysis the accounting layer has. That layer sits above this one, so it is reached through
#: this slot, which the package facade fills when ``sharpdp`` is imported (loading the accounting
#: layer only on first use): a mechanism made of rounds (top-k's peeling) then answers its own
#: ε and δ as sharply as a composition of it does.
ComposedReader = Callable[[tuple[tuple["Guarantee", int], ...], str, float], float]
#: (rounds, epsilons) → valid upper bounds on δ at each ε at once (the composition's
#: :meth:`Guarantee.delta_bounds`, e.g. from the MGF inversion's plans), or ``None``.
ComposedBoundsReader = Callable[
    [tuple[tuple["Guarantee", int], ...], tuple[float, ...]], tuple[float, ...] | None
]
_composed_reader: list[ComposedReader] = []
_composed_bounds_reader: list[ComposedBoundsReader] = []


def install_composed_reader(reader: ComposedReader, bounds_reader: ComposedBoundsReader) -> None:
    """Fill the slots of :data:`ComposedReader` and :data:`ComposedBoundsReader` (the facade
    does, once)."""
    _composed_reader[:] = [reader]
    _composed_bounds_reader[:] = [bounds_reader]


def composed_bounds(rounds: tuple[tuple[Guarantee, int], ...], epsilons: Any) -> Any:
    """The installed reader's δ bounds at each of ``epsilons`` (a float array) for the adaptive
    composition of ``rounds`` (see :data:`ComposedBoundsReader`), or ``None``."""
    if not _composed_bounds_reader:
        return None
    import numpy as np

    out = _composed_bounds_reader[0](rounds, tuple(float(e) for e in epsilons.ravel()))
    return None if out is None else np.asarray(out, dtype=np.float64).reshape(epsilons.shape)


def composed_bound(rounds: tuple[tuple[Guarantee, int], ...], quantity: str, at: float) -> float:
    """The installed reader's bound on the adaptive composition of ``rounds`` (see
    :data:`ComposedReader`); the trivial bound (∞ for ε, 1 for δ) when none is installed."""
    if not _composed_reader:
        return math.inf if quantity == "epsilon" else 1.0
    return _composed_reader[0](rounds, quantity, at)


#: Largest group size accepted by :meth:`Guarantee.group` (beyond it, k·x would overflow Python's
#: int-to-float conversion; no data set has that many records anyway).
_MAX_GROUP = 2**53


def _evaluate(hook: Callable[[float], float], arg: float, what: str, owner: object) -> float:
    """Run a hook; floating-point failures become the library's NumericalError, NaN too."""
    try:
        value = hook(arg)
    except (ArithmeticError, ValueError) as err:
        if isinstance(err, SharpDPError):
            raise
        raise NumericalError(
            f"{what} of {owner!r} at {arg!r} failed: {err} (please report it)"
        ) from err
    return _checked(value, what, owner)


def _mix(delta: float, inner: float) -> float:
    """δ + (1 − δ)·δ′, rounded up by one ulp when both parts are positive (a sum may round down)."""
    value = delta + (1.0 - delta) * inner
    return math.nextafter(value, math.inf) if delta > 0.0 and inner > 0.0 else value


_REQUIRED = object()
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


_REPR_PARAMETERS: dict[type, tuple[tuple[str, str, object], ...]] = {}


def _repr_parameters(cls: type) -> tuple[tuple[str, str, object], ...]:
    """(parameter, attribute, default or ``_REQUIRED``) for each constructor parameter ``repr``
    shows: a parameter ``x`` is stored as the dataclass field ``x`` or ``x_`` (``epsilon_``);
    fields declared with ``repr=False`` and private parameters are left out. Cached per class."""
    if cls not in _REPR_PARAMETERS:
        _REPR_PARAMETERS[cls] = _find_repr_parameters(cls)
    return _REPR_PARAMETERS[cls]


def _find_repr_parameters(cls: type) -> tuple[tuple[str, str, object], ...]:
    if not dataclasses.is_dataclass(cls):
        return ()
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.name.startswith("_") or p.kind in _VARIADIC:
            continue
        attribute = p.name if p.name in fields else f"{p.name}_"
        if attribute not in fields or not fields[attribute].repr:
            continue
        out.append((p.name, attribute, _REQUIRED if p.default is p.empty else p.default))
    return tuple(out)


def _same(value: object, default: object) -> bool:
    """Whether a stored value equals a default (``False`` is not ``0``, nor ``True`` ``1``)."""
    if isinstance(value, bool) != isinstance(default, bool):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # e.g. an array compared elementwise
        return False


def _checked(value: float, what: str, owner: object) -> float:
    if math.isnan(value):
        raise NumericalError(f"{what} of {owner!r} evaluated to NaN (a bug: please report it)")
    return value + 0.0


class Guarantee:
    """Base class of every privacy guarantee (and of every mechanism, which is one).

    See the module docstring for the subclassing contract.

    Representation: every subclass that does not define ``__repr__`` in its own body gets
    :meth:`__repr__` below (installed by ``__init_subclass__``, so a ``@dataclass`` decorator does
    not replace it). It shows the constructor's required parameters and only those optional ones
    whose value differs from their default, e.g. ``Laplace(scale=2.0)``; a subclass whose default
    is resolved at construction (the release grid of ``Laplace``) says so in :meth:`_repr_default`.
    In Jupyter, :meth:`_repr_html_` shows the same parameters as a small table.
    """

    __slots__ = ()

    #: A short human name of the notion, used in tables.
    notion: ClassVar[str] = "guarantee"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = Guarantee.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        shown = ", ".join(f"{parameter}={value!r}" for parameter, value in self._shown())
        return f"{type(self).__name__}({shown})"

    def _shown(self) -> list[tuple[str, object]]:
        """(parameter, value) of each parameter :meth:`__repr__` shows."""
        shown = []
        for parameter, attribute, default in _repr_parameters(type(self)):
            value = getattr(self, attribute)
            if default is not _REQUIRED and _same(value, self._repr_default(parameter, default)):
                continue
            shown.append((parameter, value))
        return shown

    def _repr_html_(self) -> str:
        """Jupyter: the content of ``str()`` (the ``repr``) as a small table, one parameter per
        row, each value exactly as ``repr`` shows it (parameters are not bounds: no rounding)."""
        caption = f"{type(self).__name__} ({self.notion})"
        if type(self).__repr__ is not Guarantee.__repr__:  # a class with its own repr
            return html_table([[repr(self)]], caption=caption)
        rows = [[parameter, repr(value)] for parameter, value in self._shown()]
        return html_table(rows, header=("parameter", "value"), caption=caption, right=(1,))

    def _repr_default(self, parameter: str, default: object) -> object:
        """The value a parameter left at ``default`` is stored as (hook for :meth:`__repr__`)."""
        return default

    # -- public template methods ------------------------------------------------------------------
    def epsilon(self, delta: float) -> float:
        """Smallest ε such that the guarantee certifies (ε, δ)-DP.

        Args:
            delta: δ in [0, 1].

        Returns:
            ε ≥ 0, possibly ``inf`` (no finite ε is certified at this δ).
        """
        d = _validate.real("delta", delta)
        if not 0.0 <= d <= 1.0:
            raise InvalidParameter(f"delta must be in [0, 1], got {d!r}")
        if d == 1.0:
            return 0.0
        return _evaluate(self._epsilon, d, "epsilon(delta)", self)

    def delta(self, epsilon: float) -> float:
        """Smallest δ such that the guarantee certifies (ε, δ)-DP.

        Args:
            epsilon: ε ≥ 0 (``inf`` allowed: δ(∞) is the probability of an infinite privacy loss).

        Returns:
            δ in [0, 1].
        """
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        return min(1.0, max(0.0, _evaluate(self._delta, e, "delta(epsilon)", self)))

    def delta_bounds(self, epsilons: Any) -> Any:
        """Valid upper bounds on δ(ε) at every ε ≥ 0 of the array ``epsilons``, computed at once
        and more cheaply than :meth:`delta` point by point, but possibly looser; or ``None``
        when the guarantee has no cheaper way than :meth:`delta` (the default). Callers that
        need many points of the profile (the conversion to GDP) take these as a first pass and
        ask :meth:`delta` only where the value matters.

        Raises:
            InvalidParameter: an ε that is negative, NaN or not a real number.
        """
        return self._delta_bounds(_validate.nonnegative_array("epsilons", epsilons))

    def renyi(self, alpha: float) -> float:
        """Upper bound on the Rényi divergence of order α (α = 1: KL, α = ∞: max-divergence)."""
        a = _validate.order("alpha", alpha)
        return max(0.0, _evaluate(self._renyi, a, "renyi(alpha)", self))

    def exact_pair(self) -> tuple[Fraction, Fraction] | None:
        """(ε, δ) as exact rationals when the guarantee is exactly (ε, δ)-DP for known rationals
        (an ``ApproxDP``, a ``PureDP``, a discrete Laplace's Δ/t), else ``None``. Lets basic
        composition sum before rounding: 3 × (1/3) is 1, where the rounded-up floats of 1/3 sum
        to just over 1."""
        return None

    def exact_zcdp(self) -> tuple[Fraction, Fraction] | None:
        """(ρ, ξ) as exact rationals when the guarantee is exactly (ξ, ρ)-zCDP for known
        rationals (a ``ZCDP``, a Gaussian's Δ²/(2σ²)), else ``None``: zCDP budgets add these
        before rounding (50 × (1/50) is 1; the rounded-up floats of 1/50 sum past it)."""
        return None

    def group(self, k: int) -> Guarantee:
        """The guarantee for groups of ``k`` individuals (inputs differing in up to k records)."""
        kk = _validate.integer("k", k, minimum=1)
        if kk > _MAX_GROUP:  # k·x must stay a float operation (int → float overflows past 1e308)
            raise InvalidParameter(f"k must be <= 2**53, got {kk}")
        if kk == 1:
            return self
        return self._group(kk)

    # -- hooks ------------------------------------------------------------------------------------
    def _renyi(self, alpha: float) -> float:
        return math.inf

    def _delta_bounds(self, epsilons: Any) -> Any:
        # (validated float64 array; None: no cheaper way than delta point by point)
        return None

    def _randomized_response(self) -> tuple[float, int] | None:
        """(ε, k) when this guarantee's Rényi curve is exactly that of k-ary randomized response
        with parameter ε (RDP sums then evaluate many such items at once), else None."""
        return None

    def _delta(self, epsilon: float) -> float:
        # Generic route: the tight pure-DP profile if D_∞ is finite, the Pinsker and
        # Bretagnolle–Huber bounds on δ(0) = TV from the KL divergence, and CKS20 Prop 12
        # minimised over continuous α.
        pure, kl = self._renyi(math.inf), self._renyi(1.0)
        best = _divergences.rr_delta(pure, epsilon) if pure < math.inf else 1.0
        if epsilon == math.inf:  # δ(∞) = P[Z = ∞], which is 0 when the KL divergence is finite
            return min(best, 0.0 if kl < math.inf else 1.0)
        best = min(best, _tails.kl_tv_delta(kl))
        if best == 0.0 or self._renyi(1.0 + 1e-6) == math.inf:
            return best
        log_value = _tails.optimise_over_orders(
            lambda a: _tails.cks20_log_delta(a, self._renyi(a), epsilon)
        )
        return min(best, _math.exp_up(log_value))

    def _epsilon(self, delta: float) -> float:
        # The same analyses as _delta, inverted.
        pure, kl = self._renyi(math.inf), self._renyi(1.0)
        best = _divergences.rr_epsilon(pure, delta) if pure < math.inf else math.inf
        if delta >= _tails.kl_tv_delta(kl):
            return 0.0
        if delta == 0.0 or best == 0.0 or self._renyi(1.0 + 1e-6) == math.inf:
            return best
        value = _tails.optimise_over_orders(
            lambda a: _tails.cks20_epsilon(a, self._renyi(a), delta)
        )
        return min(best, value)

    def _group(self, k: int) -> Guarantee:
        raise NotImplied(f"no group-privacy bound is implemented for {type(self).__name__}")


# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PureDP(Guarantee):
    """Pure ε-differential privacy: P[M(x) ∈ S] ≤ e^ε P[M(x′) ∈ S] for all neighbours and events.

    Every ε-DP mechanism is a post-processing of ε-randomized response (Kairouz–Oh–Viswanath 2015),
    so its tight profile is δ(ε′) = (e^ε − e^{ε′})_+/(1 + e^ε) and its tight RDP curve is
    randomized response's [Steinke 2024, Thm 4].

    Args:
        epsilon: ε ≥ 0 (``inf`` allowed: no guarantee).
    """

    epsilon_: float
    notion: ClassVar[str] = "pure DP"

    def __init__(self, epsilon: float) -> None:
        object.__setattr__(
            self, "epsilon_", _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        )

    def _renyi(self, alpha: float) -> float:
        return _divergences.rr_renyi(self.epsilon_, alpha)

    def _randomized_response(self) -> tuple[float, int] | None:
        return self.epsilon_, 2

    def _delta(self, epsilon: float) -> float:
        return _divergences.rr_delta(self.epsilon_, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _divergences.rr_epsilon(self.epsilon_, delta)

    def _group(self, k: int) -> PureDP:
        return PureDP(_math.times_up(self.epsilon_, k))  # Dwork–Roth 2014, Thm 2.2

    def exact_pair(self) -> tuple[Fraction, Fraction] | None:
        return None if math.isinf(self.epsilon_) else (Fraction(self.epsilon_), Fraction(0))


@dataclass(frozen=True, slots=True)
class ApproxDP(Guarantee):
    """Approximate (ε, δ)-DP: P[M(x) ∈ S] ≤ e^ε P[M(x′) ∈ S] + δ.

    Its tight profile is that of the four-point dominating pair of Kairouz–Oh–Viswanath 2015
    (an event of mass δ with infinite loss, then ε-randomized response):
    δ(ε′) = δ + (1 − δ)(e^ε − e^{ε′})_+/(1 + e^ε). It implies no Rényi bound when δ > 0.

    Args:
        epsilon: ε ≥ 0 (``inf`` allowed).
        delta: δ in [0, 1).
    """

    epsilon_: float
    delta_: float
    notion: ClassVar[str] = "approximate DP"

    def __init__(self, epsilon: float, delta: float) -> None:
        object.__setattr__(
            self, "epsilon_", _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        )
        object.__setattr__(self, "delta_", _validate.probability("delta", delta))

    def exact_pair(self) -> tuple[Fraction, Fraction] | None:
        if math.isinf(self.epsilon_):
            return None
        return Fraction(self.epsilon_), Fraction(self.delta_)

    def _renyi(self, alpha: float) -> float:
        return math.inf if self.delta_ > 0 else _divergences.rr_renyi(self.epsilon_, alpha)

    def _delta(self, epsilon: float) -> float:
        return _mix(self.delta_, _divergences.rr_delta(self.epsilon_, epsilon))

    def _epsilon(self, delta: float) -> float:
        if delta < self.delta_:
            return math.inf
        return _divergences.rr_epsilon(self.epsilon_, (delta - self.delta_) / (1.0 - self.delta_))

    def _group(self, k: int) -> ApproxDP:
        # Along a path x0, ..., xk of neighbours, P[M(x0) ∈ S] ≤ e^ε P[M(x1) ∈ S] + δ, applied k
        # times: (kε, δ·Σ_{i<k} e^{iε})-DP, Σ_{i<k} e^{iε} = (e^{kε} − 1)/(e^ε − 1) [Vadhan 2017,
        # Lemma 2.2 proof; Dwork–Roth 2014, Thm 2.2 states the looser k·e^{(k−1)ε}·δ].
        e = self.epsilon_
        if math.isinf(e):  # (∞, δ)-DP constrains nothing; neither does its group version
            return ApproxDP(math.inf, self.delta_)
        if self.delta_ == 0.0:
            return ApproxDP(_math.float_up(Fraction(e) * k), 0.0)
        # log Σ_{i<k} e^{iε} = (k − 1)ε + log((1 − e^{−kε})/(1 − e^{−ε})) (= log k at ε = 0)
        log_sum = (
            math.log(k) if e == 0.0 else (k - 1) * e + math.log(math.expm1(-k * e) / math.expm1(-e))
        )
        log_d = math.log(self.delta_) + log_sum
        # log, expm1 and the products err by a few ulps each: rounded up by 1e-12 absolute
        delta = _math.exp_up(log_d + 1e-12)
        if delta >= 1.0:
            raise NotImplied(
                f"group privacy of {self!r} for k={k} is vacuous: δ·(e^(kε) − 1)/(e^ε − 1) ≥ 1"
            )
        return ApproxDP(_math.float_up(Fraction(e) * k), delta)


@dataclass(frozen=True, slots=True)
class ZCDP(Guarantee):
    """(ξ, ρ)-zero-concentrated DP [Bun–Steinke 2016, Def 1.1]: D_α ≤ ξ + ρα for every α > 1.

    ``ZCDP(rho)`` is ρ-zCDP (ξ = 0). (ε, δ) conversions take the minimum of Canonne–Kamath–Steinke
    2020 Cor 13 (continuous optimum over α; never worse than BS16 Lemma 3.5), BS16 Lemma 3.6 and the
    Pinsker and Bretagnolle–Huber total-variation bounds; ρ = 0 is pure ξ-DP (BS16 Lemma 3.2),
    answered exactly.

    Args:
        rho: ρ ≥ 0 (``inf`` allowed: no guarantee).
        xi: ξ ≥ −ρ (a negative ξ arises from mean-concentrated DP; D_α ≥ 0 forces ξ + ρ ≥ 0).
    """

    rho: float
    xi: float = 0.0
    notion: ClassVar[str] = "zCDP"

    def __post_init__(self) -> None:
        rho = _validate.nonnegative("rho", self.rho, allow_inf=True)
        xi = _validate.real("xi", self.xi)
        if xi < -rho:
            raise InvalidParameter(f"xi must be >= -rho (= {-rho!r}), got {xi!r}")
        object.__setattr__(self, "rho", rho)
        object.__setattr__(self, "xi", xi)

    def exact_zcdp(self) -> tuple[Fraction, Fraction] | None:
        return None if math.isinf(self.rho) else (Fraction(self.rho), Fraction(self.xi))

    def _renyi(self, alpha: float) -> float:
        if self.rho == 0.0 and self.xi >= 0.0:
            # (ξ, 0)-zCDP is D_∞ ≤ ξ, i.e. ξ-DP [Bun–Steinke 2016, Def 1.1], whose sharp Rényi
            # curve is binary randomized response's [Steinke 2024, Thm 4] (≤ ξ; the flat ξ made
            # 100 such items compose 2× looser than 100 PureDP(ξ))
            return _divergences.rr_renyi(self.xi, alpha)
        if alpha == math.inf or math.isinf(self.rho):
            return self.xi if self.rho == 0.0 else math.inf
        if math.isinf(self.xi):
            return math.inf
        # ξ + ρα rounded up (to nearest, a third of the values fell an ulp below). With ξ ≥ 0
        # both terms are non-negative: two roundings, a relative error ≤ 2u + u², covered by 3
        # ulps (one ulp of c exceeds u·c) while c stays normal; else exactly, in rationals
        value = self.xi + self.rho * alpha
        if self.xi >= 0.0 and _math.SAFE_LOW <= value < math.inf:
            return _math.up(value, 3)
        return _math.float_up(Fraction(self.xi) + Fraction(self.rho) * Fraction(alpha))

    def _randomized_response(self) -> tuple[float, int] | None:
        return (self.xi, 2) if self.rho == 0.0 and self.xi >= 0.0 else None

    def _delta(self, epsilon: float) -> float:
        return _tails.zcdp_delta(self.rho, self.xi, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _tails.zcdp_epsilon(self.rho, self.xi, delta)

    def _group(self, k: int) -> ZCDP:
        if self.xi == 0.0:
            # BS16 Prop 1.9 (tight for the Gaussian mechanism)
            return ZCDP(_math.times_up(self.rho, k * k))
        if self.rho == 0.0 and self.xi > 0.0:
            # pure ξ-DP (BS16 Lemma 3.2), and pure DP's group
            return ZCDP(0.0, _math.times_up(self.xi, k))
        # D_α ≤ ξ + ρα ≤ max(ξ, 0)·α + ρα for α ≥ 1: (ρ + max(ξ, 0))-zCDP, whose group of k is
        # k²(ρ + max(ξ, 0))-zCDP [BS16 Prop 1.9] (valid; a sharper bound keeping ξ apart exists)
        rho = Fraction(self.rho) + max(Fraction(self.xi), Fraction(0))
        return ZCDP(_math.float_up(rho * k * k))


@dataclass(frozen=True, slots=True)
class ApproxZCDP(Guarantee):
    """δ-approximate (ξ, ρ)-zCDP [Bun–Steinke 2016, Def 1.12].

    Neighbouring output laws decompose as P = (1−δ)P′ + δP″, Q = (1−δ)Q′ + δQ″ with P′, Q′ satisfying
    (ξ, ρ)-zCDP in both orders (the conditioning events of Def 1.12 give this decomposition). Hence
    P(S) ≤ (1−δ)(e^ε Q′(S) + δ′) + δ ≤ e^ε Q(S) + δ + (1−δ)δ′, where δ′ is the zCDP profile:
    ``delta(ε) = δ + (1−δ)·ZCDP(ρ, ξ).delta(ε)``.

    Args:
        rho: ρ ≥ 0.
        delta: δ in [0, 1).
        xi: ξ ≥ −ρ.
    """

    rho: float
    delta_: float
    xi: float = 0.0
    notion: ClassVar[str] = "approximate zCDP"

    def __init__(self, rho: float, delta: float, xi: float = 0.0) -> None:
        inner = ZCDP(rho, xi)
        object.__setattr__(self, "rho", inner.rho)
        object.__setattr__(self, "delta_", _validate.probability("delta", delta))
        object.__setattr__(self, "xi", inner.xi)

    @property
    def zcdp_part(self) -> ZCDP:
        """The (ξ, ρ)-zCDP guarantee of the 1 − δ part."""
        return ZCDP(self.rho, self.xi)

    def _renyi(self, alpha: float) -> float:
        return math.inf if self.delta_ > 0 else self.zcdp_part._renyi(alpha)

    def _delta(self, epsilon: float) -> float:
        return _mix(self.delta_, self.zcdp_part._delta(epsilon))

    def _epsilon(self, delta: float) -> float:
        if delta < self.delta_:
            return math.inf
        return self.zcdp_part._epsilon((delta - self.delta_) / (1.0 - self.delta_))


@dataclass(frozen=True, slots=True)
class MCDP(Guarantee):
    """(μ, τ)-mean-concentrated DP [Dwork–Rothblum 2016; BS16 Def 4.1].

    E[Z] ≤ μ and E[e^{λ(Z − E[Z])}] ≤ e^{λ²τ²/2} for all λ. Answers through BS16 Lemma 4.2:
    (μ, τ)-mCDP ⇒ (μ − τ²/2, τ²/2)-zCDP.
    """

    mu: float
    tau: float
    notion: ClassVar[str] = "mCDP"

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", _validate.nonnegative("mu", self.mu))
        object.__setattr__(self, "tau", _validate.nonnegative("tau", self.tau))

    @property
    def zcdp(self) -> ZCDP:
        """The zCDP guarantee of BS16 Lemma 4.2, rounded against the user: ρ ≥ τ²/2 (never 0
        for τ > 0) and ξ ≥ μ − ρ, with ξ + ρ ≥ μ in floating point too (ξ = μ − ρ rounded to
        nearest lost μ when μ ≪ ρ: MCDP(1e-20, 1) read as perfectly private)."""
        rho = _math.float_up(Fraction(self.tau) ** 2 / 2)
        if math.isinf(rho):  # (τ²/2 past the floats: no finite zCDP bound)
            return ZCDP(math.inf)
        if rho == 0.0 and self.tau > 0.0:
            rho = 5e-324
        xi = _math.float_up(Fraction(self.mu) - Fraction(rho))  # ≥ −ρ since μ ≥ 0
        while xi + rho < self.mu:
            xi = math.nextafter(xi, math.inf)
        return ZCDP(rho, xi)

    def _renyi(self, alpha: float) -> float:
        if alpha == math.inf or self.tau == 0.0:  # (μ and τ are finite: validated)
            return self.zcdp._renyi(alpha)
        # D_α ≤ μ + (τ²/2)(α − 1), exactly (through ξ = μ − τ²/2 it cancelled)
        excess = Fraction(self.tau) ** 2 / 2 * (Fraction(alpha) - 1)
        return _math.float_up(Fraction(self.mu) + excess)

    def _delta(self, epsilon: float) -> float:
        return self.zcdp._delta(epsilon)

    def _epsilon(self, delta: float) -> float:
        return self.zcdp._epsilon(delta)


@dataclass(frozen=True, slots=True)
class BoundedRange(Guarantee):
    """η-bounded range [Durfee–Rogers 2019; Rogers–Steinke 2021, Def 1].

    For every neighbouring pair the privacy loss takes values in an interval [t − η, t]. The
    exponential mechanism with parameter ε is ε-BR. Implies η-DP; its profile, RDP curve and
    group guarantee are exact (two-point pairs GRR_t, see :mod:`sharpdp._divergences`).

    Args:
        eta: η ≥ 0 (``inf`` allowed).
    """

    eta: float
    notion: ClassVar[str] = "bounded range"

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", _validate.nonnegative("eta", self.eta, allow_inf=True))

    def _renyi(self, alpha: float) -> float:
        return _divergences.br_renyi(self.eta, alpha)

    def _delta(self, epsilon: float) -> float:
        return _divergences.br_delta(self.eta, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _divergences.br_epsilon(self.eta, delta)

    def _group(self, k: int) -> BoundedRange:
        # The loss between inputs k apart is a sum of k losses, each confined to a width-η interval.
        return BoundedRange(_math.times_up(self.eta, k))


@dataclass(frozen=True, slots=True)
class GDP(Guarantee):
    """μ-Gaussian DP [Dong–Roth–Su 2019]: the trade-off curve is at least that of N(0,1) vs N(μ,1).

    Exact profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) [DRS Cor 2.13]; D_α = αμ²/2 (the
    Gaussian pair dominates and Rényi divergence obeys post-processing).

    Args:
        mu: μ ≥ 0 (``inf`` allowed).
    """

    mu: float
    notion: ClassVar[str] = "Gaussian DP"

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", _validate.nonnegative("mu", self.mu, allow_inf=True))

    def _renyi(self, alpha: float) -> float:
        if self.mu == 0.0:
            return 0.0
        if alpha == math.inf or math.isinf(self.mu):
            return math.inf
        # αμ²/2 rounded up: never an ulp below, never 0 for μ > 0 (GDP(1e-200) gave 0). Three
        # roundings (≤ 3u + O(u²), covered by 4 ulps) while normal; else exactly, in rationals
        value = 0.5 * alpha * self.mu * self.mu
        if _math.SAFE_LOW <= value < math.inf:
            return _math.up(value, 4)
        return _math.float_up(Fraction(alpha) * Fraction(self.mu) ** 2 / 2)

    def _delta(self, epsilon: float) -> float:
        return _divergences.gaussian_delta(self.mu, epsilon)

    def _epsilon(self, delta: float) -> float:
        return _divergences.gaussian_epsilon(self.mu, delta)

    def _group(self, k: int) -> GDP:
        return GDP(_math.times_up(self.mu, k))  # DRS 2019, Thm 2.14


@dataclass(frozen=True, slots=True)
class RDP(Guarantee):
    """Rényi DP [Mironov 2017]: D_α ≤ ε(α) at the given orders (or for all α, from a function).

    ``RDP(orders, epsilons)`` certifies the curve only at the listed orders; between them
    ``renyi(α)`` uses that D_α is non-decreasing in α and that (α − 1)D_α is convex in α (both
    theorems, van Erven–Harremoës 2014), so the interpolated value is still a valid bound.
    ``RDP.from_function(f)`` trusts f(α) for every α ∈ [1, ∞].

    Args:
        orders: orders α ≥ 1 (``inf`` allowed).
        epsilons: the bounds ε(α) ≥ 0 (``inf`` allowed), one per order.
    """

    orders: tuple[float, ...]
    epsilons: tuple[float, ...]
    function: Callable[[float], float] | None = None
    notion: ClassVar[str] = "Rényi DP"

    def __post_init__(self) -> None:
        if self.function is not None:
            if not callable(self.function):
                raise InvalidParameter(f"function must be callable, got {self.function!r}")
            return
        orders = _as_tuple("orders", self.orders)
        epsilons = _as_tuple("epsilons", self.epsilons)
        if len(orders) != len(epsilons):
            raise InvalidParameter(
                f"orders and epsilons must have the same length, got {len(orders)} and {len(epsilons)}"
            )
        if not orders:
            raise InvalidParameter("orders must not be empty")
        best: dict[float, float] = {}
        for a, e in zip(orders, epsilons, strict=True):
            a = _validate.order("orders[i]", a)
            e = _validate.nonnegative("epsilons[i]", e, allow_inf=True)
            best[a] = min(e, best.get(a, math.inf))
        ordered = sorted(best.items())
        object.__setattr__(self, "orders", tuple(a for a, _ in ordered))
        object.__setattr__(self, "epsilons", tuple(e for _, e in ordered))

    def __repr__(self) -> str:
        if self.function is not None:
            return f"RDP.from_function({self.function!r})"
        return f"RDP(orders={self.orders!r}, epsilons={self.epsilons!r})"

    @classmethod
    def from_function(cls, function: Callable[[float], float]) -> Self:
        """An RDP guarantee given by a function α ↦ ε(α), trusted for every α ∈ [1, ∞]."""
        if not callable(function):
            raise InvalidParameter(f"function must be callable, got {function!r}")
        return cls((), (), function)

    def points(self) -> Iterable[tuple[float, float]]:
        """The (α, ε(α)) pairs given at construction (empty for a function curve)."""
        return zip(self.orders, self.epsilons, strict=True)

    def _renyi(self, alpha: float) -> float:
        if self.function is not None:
            limit = alpha == 1.0 or alpha == math.inf
            try:
                value = self.function(alpha)
            except SharpDPError:
                raise
            except Exception as err:
                # a formula with 1/(α − 1) at α = 1, or e^{(α−1)·} past the float range: no bound
                # there (∞ is always a valid one); any other error is the function's
                if limit or isinstance(err, ArithmeticError):
                    return math.inf
                raise InvalidParameter(
                    f"the RDP function raised {type(err).__name__} at alpha={alpha!r}: {err}"
                ) from err
            real = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if real:
                try:
                    value = float(value)
                except OverflowError:  # (an int past the float range: no finite bound)
                    return math.inf
            if limit and real and math.isnan(value):  # (Mironov's Laplace formula at α = ∞)
                return math.inf
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or math.isnan(value)
                or value < 0
            ):
                raise InvalidParameter(
                    f"the RDP function returned {value!r} at alpha={alpha!r}; expected a float >= 0"
                )
            return float(value)
        best = math.inf
        prev: tuple[float, float] | None = None
        for a, e in self.points():
            if a >= alpha:
                best = min(best, e)  # monotonicity of D_α in α
                if prev is not None and a < math.inf and e < math.inf and prev[1] < math.inf:
                    # convexity of (α − 1)D_α between the neighbouring orders
                    # w and 1 − w each as a quotient of differences of exact floats (1 − w
                    # from a rounded w cancelled: with a = 1e20 it was 0, and D_10 read below
                    # D_2). Every step is one rounding of non-negative terms: ≤ 9u in all,
                    # covered by 10 ulps while normal; else exactly, in rationals
                    a0, e0 = prev
                    if alpha > 1.0:
                        w, v = (a - alpha) / (a - a0), (alpha - a0) / (a - a0)
                        chord = (w * (a0 - 1.0) * e0 + v * (a - 1.0) * e) / (alpha - 1.0)
                        if not _math.SAFE_LOW <= chord < math.inf:
                            fa, fa0, fal = Fraction(a), Fraction(a0), Fraction(alpha)
                            fw = (fa - fal) / (fa - fa0)
                            h = fw * (fa0 - 1) * Fraction(e0) + (1 - fw) * (fa - 1) * Fraction(e)
                            best = min(best, _math.float_up(h / (fal - 1)))
                        else:
                            best = min(best, _math.up(chord, 10))
                break
            prev = (a, e)
        if alpha < math.inf:
            # later orders also bound D_α by monotonicity
            for a, e in self.points():
                if a > alpha:
                    best = min(best, e)
        return best

    def _delta(self, epsilon: float) -> float:
        if self.function is not None:
            return Guarantee._delta(self, epsilon)
        if epsilon == math.inf and any(math.isfinite(t) for _, t in self.points()):
            return 0.0  # a finite D_α (α ≥ 1) makes P ≪ Q: no mass at infinite loss
        # the listed points, and the orders between them through the interpolated curve
        # (_renyi: convexity of (α − 1)D_α), which the points alone left out
        return min(_tails.rdp_curve_delta(self.points(), epsilon), Guarantee._delta(self, epsilon))

    def _epsilon(self, delta: float) -> float:
        if self.function is not None:
            return Guarantee._epsilon(self, delta)
        return min(_tails.rdp_curve_epsilon(self.points(), delta), Guarantee._epsilon(self, delta))


def _as_tuple(name: str, values: object) -> tuple[float, ...]:
    if isinstance(values, str | bytes):
        raise InvalidParameter(f"{name} must be a sequence of numbers, got {values!r}")
    if not isinstance(values, Iterable):
        raise InvalidParameter(f"{name} must be a sequence of numbers, got {values!r}")
    return tuple(values)
