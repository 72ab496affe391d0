"""The ``pld`` analysis: privacy loss distributions of dominating pairs, pessimistically discretised
and composed by FFT (:mod:`sharpdp.accounting.pld`) [Doroshenko–Ghazi–Kamath–Kumar–Manurangsi 2022]."""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from sharpdp.accounting._items import (
    Items,
)
from sharpdp.accounting.registry import analysis
from sharpdp.errors import AccuracyNotReached, NotImplied, NumericalError
from sharpdp.guarantees import Guarantee

if TYPE_CHECKING:
    from sharpdp.accounting.pld.composition import PLDResult


@analysis(
    "pld",
    "Privacy loss distributions: connect-the-dots discretisation + FFT (Doroshenko et al. 2022)",
    costly=True,
)
def _pld(items: Items, adaptive: bool) -> Guarantee:
    from sharpdp.accounting import pld

    for g, _ in items:
        if not pld.supports(g):
            raise NotImplied(f"no dominating pair is registered for {g!r}")
    k = sum(c for _, c in items)
    if k > _PLD_MAX_K:
        # the composed loss spans ~k·(range) and the grid grows with it; skipping an analysis
        # never affects validity, and at such k the RDP/zCDP analyses are close to tight
        raise NotImplied(f"the PLD analysis is run for at most {_PLD_MAX_K} items; got {k}")
    return _PLDGuarantee(items)


_PLD_MAX_K = 10_000_000


@dataclass(frozen=True)
class _PLDGuarantee(Guarantee):
    items: Items
    accuracy: float = 1e-4
    notion: ClassVar[str] = "PLD composition"

    def with_accuracy(self, accuracy: float) -> _PLDGuarantee:
        """The same analysis refined to the relative ``accuracy`` (see :func:`compose`)."""
        return self if accuracy == self.accuracy else _PLDGuarantee(self.items, accuracy)

    @functools.cached_property
    def _result(self) -> PLDResult:
        # one FFT composition per Composition, reused by every ε/δ query
        from sharpdp.accounting import pld

        return pld.compose_pld(list(self.items), target_relative_error=self.accuracy)

    @functools.cached_property
    def _coarse(self) -> PLDResult:
        from sharpdp.accounting import pld

        return pld.compose_pld(list(self.items), target_relative_error=_COARSE)

    def value_unless_beaten(self, quantity: str, at: float, rival: float) -> float:
        """ε(δ) (or δ(ε)) of the PLD composition, or ``inf`` when a coarse optimistic pass — a
        lower bound on the exact value of this analysis, hence on anything it could report —
        already reaches ``rival``: refining could then never produce a value under ``rival``."""
        coarse = self._coarse
        # Skipping the check is always valid; it only costs time when the PLD then loses. It is
        # skipped (a) for one or two groups: the check would cost about half of the answer, and
        # the PLD, near-exact there, almost always beats the non-exact rivals (exact analyses
        # run alone, see Analysis.exact_for); (b) when an estimate of the PLD's ε (or δ) — the
        # smaller of the central-limit and the saddle-point ones, which err upwards by a few
        # percent — is already below the rival: the PLD then almost surely wins. (Should it
        # lose after all, its refinement still stops once its optimistic end reaches the rival.)
        if quantity == "epsilon":
            likely_loses = min(coarse.clt_epsilon(at), coarse.saddle_epsilon(at)) >= rival
        else:
            likely_loses = coarse.saddle_delta(at) >= rival
        if coarse.group_count > 2 and likely_loses:
            # many groups (after the exact merge of Gaussian pairs): merge dominated pairs onto a
            # 10% grid first; few: the exact pairs are cheaper
            step = 0.1 if coarse.group_count > _MERGE_GROUPS else 0.0
            if quantity == "epsilon":
                lower = coarse.lower_epsilon(at, coarsen=step)
            else:
                lower = coarse.lower_delta(at, coarsen=step)
            if lower >= rival:
                return math.inf
        # refinement stops once its optimistic end reaches the rival: the PLD cannot win then
        if quantity == "epsilon":
            lo, hi = self._result.epsilon_bracket(at, rival)
        else:
            lo, hi = self._result.delta_bracket(at, rival)
        return math.inf if lo >= rival else self._certified(quantity, at, lo, hi)

    def _delta_bounds(self, epsilons: Any) -> Any:
        """Valid upper bounds on δ at every ε of ``epsilons`` from the composed grids
        (:meth:`~sharpdp.accounting.pld.PLDResult.delta_upper_bounds`). When none was composed
        yet, δ is first certified at a few ε spread over the (finite, non-negative) points
        asked, so that grids tilted for each part of the range exist."""
        import numpy as np

        result = self._result
        if not result._cache:
            finite = np.sort(epsilons[np.isfinite(epsilons)].ravel())
            top = result._top_loss()
            if top is not None:  # (at the top loss δ needs no grid: delta_upper_bounds has it)
                finite = finite[finite < top[0]]
            for q in _ANCHORS if finite.size else ():
                with contextlib.suppress(AccuracyNotReached, NotImplied, NumericalError):
                    result.delta_bracket(float(finite[int(q * (finite.size - 1))]))
        return result.delta_upper_bounds(epsilons)

    def _certified(self, quantity: str, at: float, lo: float, hi: float) -> float:
        """``hi`` when the bracket [lo, hi] meets the accuracy (the slack the refinement allows:
        1e-12 on ε, the truncated tails' 1e3·tail on δ); else :class:`AccuracyNotReached`,
        which carries ``hi`` (a valid bound all the same)."""
        slack = 1e-12 if quantity == "epsilon" else 1e3 * self._result.tail
        if hi == 0.0 or math.isinf(hi) or hi - lo <= self.accuracy * hi + slack:
            return hi
        raise AccuracyNotReached(quantity, at, hi, lo, self.accuracy, slack)

    def _epsilon(self, delta: float) -> float:
        return self._certified("epsilon", delta, *self._result.epsilon_bracket(delta))

    def _delta(self, epsilon: float) -> float:
        return self._certified("delta", epsilon, *self._result.delta_bracket(epsilon))


#: Where :meth:`_PLDGuarantee.delta_bounds` first certifies δ, as quantiles of the points asked.
_ANCHORS = (0.0, 0.25, 0.5, 0.75)
#: Relative accuracy of the coarse PLD pass that decides whether refining can pay off.
_COARSE = 1e-2
#: The coarse pass merges dominated pairs only for compositions of more distinct items than this
#: (merging onto a 10% grid makes the check cheaper but much weaker: it then rarely rejects a PLD
#: within a few tens of percent of its rival).
_MERGE_GROUPS = 128
