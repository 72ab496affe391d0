"""k-ary randomized response (its exact privacy characterisation)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sharpdp import _divergences, _validate
from sharpdp.conversions import pure_dp_to_zcdp, register
from sharpdp.errors import InvalidParameter, NotImplied
from sharpdp.guarantees import ZCDP, PureDP
from sharpdp.mechanisms import _logistic
from sharpdp.mechanisms._samplers import RNGLike, as_generator, uniform_int
from sharpdp.mechanisms.base import Mechanism

__all__ = ["RandomizedResponse"]

#: Most categories whose law :meth:`RandomizedResponse.probabilities` lists (2²⁰ floats, ~8 MB).
_LAW_LIMIT = 2**20


@dataclass(frozen=True, slots=True)
class RandomizedResponse(Mechanism):
    """k-ary randomized response: report the true category with probability e^ε/(e^ε + k − 1),
    each other category with probability 1/(e^ε + k − 1).

    Neighbouring inputs are two different true categories. It is ε-DP; its exact profile is
    δ(ε′) = (e^ε − e^{ε′})_+/(e^ε + k − 1) and its Rényi divergences are those of the explicit
    three-point pair (the hockey-stick and Rényi divergences of the pair, in closed form in
    :mod:`sharpdp._divergences`). For k = 2 it is the worst case of ε-DP.

    Args:
        epsilon: ε ≥ 0 (stored as ``epsilon_``; ``epsilon()`` is the query method).
        categories: k ≥ 2.
    """

    epsilon_: float
    categories: int = 2
    notion: ClassVar[str] = "randomized response"

    def __init__(self, epsilon: float, categories: int = 2) -> None:
        object.__setattr__(self, "epsilon_", _validate.nonnegative("epsilon", epsilon))
        object.__setattr__(
            self, "categories", _validate.integer("categories", categories, minimum=2)
        )

    def _group(self, k: int) -> PureDP:
        # ε-DP ⇒ kε-DP for groups of k (Dwork–Roth 2014, Thm 2.2), kε rounded up
        return PureDP(self.epsilon_).group(k)  # type: ignore[return-value]

    def probabilities(self, value: int) -> list[float]:
        """The exact output law on true category ``value`` ∈ {0, …, k−1}: 1/(1 + (k − 1)e^{−ε})
        at ``value``, e^{−ε}/(1 + (k − 1)e^{−ε}) at each other category.

        Raises:
            InvalidParameter: a bad ``value``, or k > 2²⁰ (a list of k floats; the two values
                above are the whole law).
        """
        v = _validate.integer("value", value, minimum=0)
        if v >= self.categories:
            raise InvalidParameter(f"value must be < categories={self.categories}, got {v}")
        if self.categories > _LAW_LIMIT:
            raise InvalidParameter(
                f"the law is listed for at most {_LAW_LIMIT} categories, got {self.categories}: "
                "it is 1/(1 + (k − 1)e^{−ε}) at the true category and e^{−ε}/(1 + (k − 1)e^{−ε}) "
                "at each other one"
            )
        e = math.exp(-self.epsilon_)  # in e^{−ε}: no overflow for large ε
        other = e / (1.0 + (self.categories - 1) * e)
        top = 1.0 / (1.0 + (self.categories - 1) * e)
        return [top if i == v else other for i in range(self.categories)]

    def release(self, value: Any, rng: RNGLike = None) -> Any:
        """Report each true category ``value`` through randomized response, exactly.

        The report is v + R (mod k) where R is the exponential mechanism's choice (monotonic,
        ε, Δ = 1) on the scores (1, 0, …, 0): P[R = 0] = e^ε/(e^ε + k − 1) and each r ≠ 0 has
        1/(e^ε + k − 1), so every other category is reported with that probability. R is drawn
        in two exact steps: first keep (R = 0) or move, a coin of probability
        1/(1 + (k − 1)·e^{−ε}) drawn by comparing one random word with the exact digits of that
        probability (:mod:`sharpdp.mechanisms._logistic`; for ε beyond its range, by the race of
        :mod:`sharpdp.mechanisms._race` between "keep", score 1, and "move", score 0 with
        multiplicity k − 1); then, given a move, R is an exact uniform integer in {1, …, k − 1}
        (the k − 1 equal scores are equally likely). No float decides a draw, and the work per
        report does not grow with k.

        Args:
            value: a category in {0, …, k−1}, or an integer array of them (each entry is one use
                of the mechanism).
            rng: a seed or a ``numpy.random.Generator``.

        Returns:
            An ``int`` for a scalar input, else an int64 array of the input's shape.

        Raises:
            InvalidParameter: for non-integer values or categories outside {0, …, k−1}.

        Examples:
            >>> import sharpdp as sdp
            >>> sdp.RandomizedResponse(1.0, categories=3).release([0, 2, 1], rng=0).shape
            (3,)
        """
        v = self._categories_of(value)
        gen = as_generator(rng)
        moved = ~self.keeps(v.size, gen)
        shift = np.zeros(v.size, dtype=np.int64)
        shift[moved] = 1 + uniform_int(self.categories - 1, int(moved.sum()), gen)
        flat = v.ravel()
        wraps = flat >= self.categories - shift  # (v + R) mod k without overflowing int64
        out = np.where(wraps, flat - (self.categories - shift), flat + shift)
        return int(out[0]) if v.ndim == 0 else out.reshape(v.shape).astype(np.int64)

    def keeps(self, size: int, rng: RNGLike = None) -> npt.NDArray[np.bool_]:
        """``size`` exact coins of the keep-or-move step of :meth:`release`: a boolean array, True
        with probability e^ε/(e^ε + k − 1) (for k = 2 these are binary randomized response's
        biased coins, drawn without the reports around them).

        Raises:
            InvalidParameter: ``size`` is not an integer ≥ 0, or ``rng`` is invalid.
        """
        size = _validate.integer("size", size, minimum=0)
        gen = as_generator(rng)
        if self.epsilon_ <= _logistic.MAX_ABS_S:
            return _logistic.coins(gen, self.epsilon_, self.categories - 1, size)
        from sharpdp.mechanisms import _race  # deferred: selection machinery is heavier

        keep_or_move = dataclasses.replace(
            _race.offsets(np.array([1.0, 0.0]), Fraction(self.epsilon_)),  # c = ε/Δ, Δ = 1
            counts=np.array([1, self.categories - 1], dtype=np.int64),
        )
        return np.asarray(_race.race(keep_or_move, 1, "gumbel", gen, size)[:, 0] == 0)

    def _categories_of(self, value: Any) -> Any:
        try:
            arr = np.asarray(value)
        except ValueError:  # ragged nested sequences
            raise InvalidParameter(f"value must be a rectangular array, got {value!r}") from None
        if arr.size == 0 and arr.dtype == np.float64:  # e.g. [] : no categories to report
            return arr.astype(np.int64)
        integral = arr.dtype != np.bool_ and np.issubdtype(arr.dtype, np.integer)
        if arr.dtype == object:  # Python ints too large for int64 (rejected by the range check)
            integral = all(isinstance(x, int) and not isinstance(x, bool) for x in arr.ravel())
        if not integral:
            raise InvalidParameter(
                f"value must be an integer category or an array of them, got {value!r}"
            )
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= self.categories):
            raise InvalidParameter(f"categories must lie in [0, {self.categories}), got {value!r}")
        return arr.astype(np.int64)

    def _renyi(self, alpha: float) -> float:
        return _divergences.rr_renyi(self.epsilon_, alpha, self.categories)

    def _randomized_response(self) -> tuple[float, int] | None:
        return self.epsilon_, self.categories

    def _delta(self, epsilon: float) -> float:
        return _divergences.rr_delta(self.epsilon_, epsilon, self.categories)

    def _epsilon(self, delta: float) -> float:
        return _divergences.rr_epsilon(self.epsilon_, delta, self.categories)


@register(
    RandomizedResponse,
    ZCDP,
    name="steinke24-thm5",
    theorem="binary RR is the worst case of ε-DP: ε·tanh(ε/2)-zCDP (tight)",
    tight=True,
)
def _binary_rr_to_zcdp(m: RandomizedResponse) -> ZCDP:
    if m.categories != 2:
        raise NotImplied("the closed form is tight only for k = 2")
    return pure_dp_to_zcdp(PureDP(m.epsilon_))
