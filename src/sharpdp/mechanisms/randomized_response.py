"""k-ary randomized response (its exact privacy characterisation)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from sharpdp import _divergences, _validate
from sharpdp.conversions import pure_dp_to_zcdp, register
from sharpdp.errors import InvalidParameter, NotImplied
from sharpdp.guarantees import ZCDP, PureDP
from sharpdp.mechanisms.base import Mechanism

__all__ = ["RandomizedResponse"]


@dataclass(frozen=True, slots=True)
class RandomizedResponse(Mechanism):
    """k-ary randomized response: report the true category with probability e^ε/(e^ε + k − 1),
    each other category with probability 1/(e^ε + k − 1).

    Neighbouring inputs are two different true categories. It is ε-DP; its exact profile is
    δ(ε′) = (e^ε − e^{ε′})_+/(e^ε + k − 1) and its Rényi divergences are those of the explicit
    three-point pair (FORMULAS §7). For k = 2 it is the worst case of ε-DP.

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

    def __repr__(self) -> str:
        return f"RandomizedResponse(epsilon={self.epsilon_!r}, categories={self.categories!r})"

    def probabilities(self, value: int) -> list[float]:
        """The exact output law on true category ``value`` ∈ {0, …, k−1}."""
        v = _validate.integer("value", value, minimum=0)
        if v >= self.categories:
            raise InvalidParameter(f"value must be < categories={self.categories}, got {v}")
        other = 1.0 / (math.exp(self.epsilon_) + self.categories - 1)
        top = 1.0 / (1.0 + (self.categories - 1) * math.exp(-self.epsilon_))
        return [top if i == v else other for i in range(self.categories)]

    def _renyi(self, alpha: float) -> float:
        return _divergences.rr_renyi(self.epsilon_, alpha, self.categories)

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
