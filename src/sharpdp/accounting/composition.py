"""Composition: the sharpest valid (ε, δ) of a sequence of mechanisms, with provenance.

``compose(items, adaptive=True)`` evaluates *every* analysis that is valid for the items and reports
the minimum (design principle 2); ``.explain(delta=...)`` lists each analysis, its value and the
theorem. Each analysis is a valid upper bound on its own, so the minimum is one too. Analyses:

* ``gdp``: Gaussian differential privacy composes exactly, μ = √(Σ μ_i²) [Dong–Roth–Su 2019,
  Cor 3.3] (exact for Gaussians; valid for every item with a GDP conversion, adaptively);
* ``pld``: privacy-loss-distribution (FFT) composition of dominating pairs, pessimistically
  discretised (:mod:`sharpdp.accounting.pld`), valid adaptively;
* ``kov``: the optimal composition of (ε_i, δ_i)-DP mechanisms [Kairouz–Oh–Viswanath 2015,
  Thm 3.3; Murtagh–Vadhan 2016, Thm 1.5 for distinct ε_i], valid adaptively, in log space;
* ``ddr20``: the optimal composition of k η-bounded-range mechanisms [Dong–Durfee–Rogers 2020,
  Thm 3] — only with ``adaptive=False``, since it is the non-adaptive optimum (Dong–Durfee–Rogers
  2020 show that adaptivity can cost more);
* ``rdp``: the sum of the items' exact Rényi curves (Mironov 2017, Prop 1), converted by CKS20
  Prop 12 over continuous α (``Guarantee``'s generic routes);
* ``zcdp``: zCDP additivity (BS16 Lemma 2.3) with the CKS20 conversion;
* ``basic`` and ``advanced``: (Σε_i, Σδ_i) [Dwork–Roth Thm 3.16] and Dwork–Rothblum–Vadhan 2010.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, cast

from sharpdp import _validate
from sharpdp._explain import Explanation, Row
from sharpdp.accounting import analyses as _analyses  # noqa: F401  (registers every analysis)
from sharpdp.accounting._items import Composed, Item, Items, normalise
from sharpdp.accounting.analyses.rdp import RDPSum
from sharpdp.accounting.registry import Analysis, Refinable, all_analyses
from sharpdp.errors import AccuracyNotReached, InvalidParameter, NotImplied, NumericalError
from sharpdp.guarantees import ZCDP, ApproxDP, Guarantee

if TYPE_CHECKING:
    from sharpdp.accounting.clt import CLTEstimate

__all__ = ["Analysis", "Composition", "Explanation", "Row", "compose", "max_compositions"]


@dataclass(frozen=True)
class Composition(Composed):
    """The composition of ``items`` (each a guarantee with a count), adaptive unless declared."""

    items: Items
    adaptive: bool = True
    accuracy: float = 1e-4
    _cache: dict[str, Guarantee | str] = field(default_factory=dict, compare=False, repr=False)
    # certified points (ε, δ) of the profile answered so far (see _remembered)
    _points: list[tuple[float, float]] = field(default_factory=list, compare=False, repr=False)
    notion: ClassVar[str] = "composition"

    def exact_zcdp(self) -> tuple[Fraction, Fraction] | None:
        """(Σ c_i ρ_i, Σ c_i ξ_i) exactly when every item is exactly zCDP for known rationals
        (zCDP adds, Bun–Steinke 2016 Lemma 2.3), else ``None``."""
        parts = [(g.exact_zcdp(), c) for g, c in self.items]
        if not parts or any(p is None for p, _ in parts):
            return None
        exact = [(p, c) for p, c in parts if p is not None]
        rho = sum((c * p[0] for p, c in exact), Fraction(0))
        return rho, sum((c * p[1] for p, c in exact), Fraction(0))

    def _prepare(self, a: Analysis) -> Guarantee | str:
        if a.name not in self._cache:
            try:
                g = a.prepare(self.items, self.adaptive)
                # refinable analyses (the PLD) take the requested accuracy
                refine = getattr(g, "with_accuracy", None)
                self._cache[a.name] = refine(self.accuracy) if refine is not None else g
            except NotImplied as err:
                self._cache[a.name] = str(err)
            except AccuracyNotReached:
                raise
            except NumericalError as err:
                # an analysis that cannot represent an item (e.g. a discrete Gaussian too wide
                # for the PLD's atom table) declines; the others still bound the composition
                self._cache[a.name] = f"cannot represent the items: {err}"
        return self._cache[a.name]

    def _prepared(self) -> list[tuple[Analysis, Guarantee | str]]:
        return [(a, self._prepare(a)) for a in all_analyses()]

    def _exact(self) -> list[tuple[Analysis, Guarantee]]:
        """The analyses exact for these items that could be prepared (tried first by queries;
        one may still decline a particular query, which then falls back to :meth:`_needed`).
        A lone release's own profile (``composes=False``) comes first: a closed form, where the
        composing analyses are exact only to their accuracy (the MGF inversion read a
        calibrated Laplace's ε(δ) as 0.5 + 7e-14, over the 0.5 it was calibrated to, and the
        accountant refused it for that very budget)."""
        out = []
        for a in sorted(all_analyses(), key=lambda a: a.composes):
            if a.exact_for is not None and a.exact_for(self.items):
                g = self._prepare(a)
                if not isinstance(g, str):
                    out.append((a, g))
        return out

    def _needed(self) -> list[tuple[Analysis, Guarantee | str]]:
        """The analyses an ε/δ query must evaluate when no exact one answers: all but those
        dominated by one that applies (see :class:`Analysis`)."""
        out = []
        for a in all_analyses():
            if a.dominated_by is not None:
                other = next(b for b in all_analyses() if b.name == a.dominated_by)
                if not isinstance(self._prepare(other), str):
                    continue
            out.append((a, self._prepare(a)))
        return out

    def _rows(
        self, quantity: str, at: float, prepared: list[tuple[Analysis, Guarantee | str]]
    ) -> tuple[Row, ...]:
        rows = []
        superseded: dict[str, str] = {}  # name → the analysis that answered first (Analysis)
        for a, g in prepared:
            if isinstance(g, str):
                rows.append(Row(a.name, a.theorem, None, g))
                continue
            if a.name in superseded:
                note = (
                    f"not run: {superseded[a.name]} answered, bracketing the same exact "
                    "composition at least as narrowly"
                )
                rows.append(Row(a.name, a.theorem, None, note))
                continue
            try:
                value = g.epsilon(at) if quantity == "epsilon" else g.delta(at)
            except AccuracyNotReached as err:  # a valid value all the same: shown, and ranked
                note = f"not certified to the accuracy {err.accuracy:g}: exact ≥ {err.lower!r}"
                rows.append(Row(a.name, a.theorem, err.value, note))
                continue
            except (NotImplied, NumericalError) as err:
                rows.append(Row(a.name, a.theorem, None, str(err)))
                continue
            rows.append(Row(a.name, a.theorem, value))
            for name in a.supersedes:
                superseded.setdefault(name, a.name)
        return tuple(rows)

    def explain(self, delta: float | None = None, epsilon: float | None = None) -> Explanation:
        """Every analysis with its ε at ``delta`` (or δ at ``epsilon``), and the winner."""
        if (delta is None) == (epsilon is None):
            raise InvalidParameter("give exactly one of delta and epsilon")
        if delta is not None:
            with contextlib.suppress(AccuracyNotReached):  # the table shows the brackets
                self.epsilon(delta)  # validates
            d = _validate.probability("delta", delta)
            return Explanation("epsilon", d, self._rows("epsilon", d, self._prepared()))
        assert epsilon is not None
        with contextlib.suppress(AccuracyNotReached):
            self.delta(epsilon)
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        return Explanation("delta", e, self._rows("delta", e, self._prepared()))

    def certifies(self, epsilon: float, delta: float) -> bool:
        """Whether some valid analysis certifies (ε, δ)-DP (stops at the first that does)."""
        e = _validate.nonnegative("epsilon", epsilon, allow_inf=True)
        d = _validate.probability("delta", delta)
        if not self.items:
            return True
        if self._remembered("delta", e) <= d:  # an earlier answer certified it already
            return True
        for _, exact in self._exact():
            try:
                return exact.delta(e) <= d
            except (NotImplied, NumericalError):
                continue
        superseded: set[str] = set()
        for a, g in self._needed():
            if isinstance(g, str) or a.name in superseded:
                continue
            try:
                if g.delta(e) <= d:
                    return True
            except AccuracyNotReached as err:  # its value is valid: it certifies or it answered
                if err.value <= d:
                    return True
            except (NotImplied, NumericalError):
                continue
            superseded.update(a.supersedes)  # it answered (above d): those could only say more
        return False

    def _minimum(
        self, quantity: str, at: float, worst: float
    ) -> tuple[float, AccuracyNotReached | None]:
        """The least value over the needed analyses; costly refinable ones (the PLD) go last and
        are told the best value so far, so they stop refining once they provably cannot win.
        An exact analysis that answers is the minimum by definition. Also returns the refusal of
        a refinable analysis that could not meet the accuracy (its lower end decides whether the
        minimum meets it all the same), or None."""
        declined = set()
        for a, g in self._exact():
            try:
                return (g.epsilon(at) if quantity == "epsilon" else g.delta(at)), None
            except (NotImplied, NumericalError):
                declined.add(a.name)  # the same query would decline again: not asked twice
                continue
        needed = [(a, g) for a, g in self._needed() if a.name not in declined]
        cheap = [(a, g) for a, g in needed if not a.costly]
        costly = [(a, g) for a, g in needed if a.costly]
        rows = self._rows(quantity, at, cheap)
        values = [r.value for r in rows if r.value is not None]
        best = min(values, default=worst)
        # a costly analysis superseded by one that answered could only report more (Analysis)
        superseded = {
            name
            for (a, _), r in zip(cheap, rows, strict=True)
            if r.value is not None
            for name in a.supersedes
        }
        refused: AccuracyNotReached | None = None
        for a, prepared in costly:
            if isinstance(prepared, str) or a.name in superseded:
                continue
            refinable = cast(Refinable, prepared)
            try:
                best = min(best, refinable.value_unless_beaten(quantity, at, best))
            except AccuracyNotReached as err:
                best = min(best, err.value)
                if refused is None or err.lower > refused.lower:
                    refused = err
            except (NotImplied, NumericalError):
                continue
            # it answered, or showed that the exact composition of its pairs cannot beat the
            # best value: the analyses it supersedes bound that same composition
            superseded.update(a.supersedes)
        return best, refused

    def _epsilon(self, delta: float) -> float:
        if not self.items:
            return 0.0
        best, refused = self._minimum("epsilon", delta, math.inf)
        value = min(best, self._remembered("epsilon", delta))
        self._remember(value, delta)
        return self._promised("epsilon", delta, value, refused)

    def _delta(self, epsilon: float) -> float:
        if not self.items:
            return 0.0
        best, refused = self._minimum("delta", epsilon, 1.0)
        value = min(best, self._remembered("delta", epsilon))
        self._remember(epsilon, value)
        return self._promised("delta", epsilon, value, refused)

    def _delta_bounds(self, epsilons: Any) -> Any:
        """Valid upper bounds on δ at every ε at once (see :meth:`Guarantee.delta_bounds`): those
        of the exact analysis when one applies and offers them (the MGF inversion's, from a
        few plans); none when it offers none but answers (its points are cheap and sharp
        already); else the least of those the needed analyses offer (the PLD's, from the grids
        it composed); ``None`` when none does."""
        import numpy as np

        if not self.items:
            return np.zeros(epsilons.shape)
        top = np.isinf(epsilons)
        if top.any():  # δ(∞), the mass at infinity, is one number: asked once, exactly
            out = self._delta_bounds(np.where(top, 0.0, epsilons))
            return None if out is None else np.where(top, self.delta(math.inf), out)
        out = _least_bounds([g for _, g in self._exact()], epsilons)
        if out is not None or (epsilons.size and self._exact_answers(float(np.median(epsilons)))):
            return out
        return _least_bounds([g for _, g in self._needed()], epsilons)

    def _exact_answers(self, epsilon: float) -> bool:
        """Whether an exact analysis answers δ(``epsilon``) (else the needed ones run)."""
        for _, g in self._exact():
            try:
                g.delta(epsilon)
            except AccuracyNotReached:
                return True  # (it answered, not to the accuracy: delta() then raises as well)
            except (NotImplied, NumericalError):
                continue
            return True
        return False

    def epsilon_bound(self, delta: float) -> float:
        """ε(δ) as :meth:`epsilon`, but never refused for accuracy: where :meth:`epsilon` raises
        :class:`~sharpdp.AccuracyNotReached`, the valid bound it carries is returned (for
        callers that need a valid bound, not a sharp one: budgets, spends)."""
        try:
            return self.epsilon(delta)
        except AccuracyNotReached as err:
            return err.value

    def delta_bound(self, epsilon: float) -> float:
        """δ(ε) as :meth:`delta`, but never refused for accuracy (see :meth:`epsilon_bound`)."""
        try:
            return self.delta(epsilon)
        except AccuracyNotReached as err:
            return err.value

    def _promised(
        self, quantity: str, at: float, value: float, refused: AccuracyNotReached | None
    ) -> float:
        """``value``, unless a refinable analysis could not bracket the exact value within the
        accuracy and ``value`` is not within it of that bracket's certified lower end either:
        then :class:`AccuracyNotReached` (carrying ``value``, a valid bound all the same)."""
        if refused is None or refused.certifies(value):
            return value
        raise AccuracyNotReached(
            quantity, at, value, refused.lower, self.accuracy, refused.slack
        ) from refused

    def _remembered(self, quantity: str, at: float) -> float:
        """The best value implied by the points (ε′, δ′) certified by earlier answers: the exact
        profile is non-increasing, so (ε′, δ′) certifies δ(ε) ≤ δ′ for every ε ≥ ε′ and
        ε(δ) ≤ ε′ for every δ ≥ δ′. Hence ε(δ) and δ(ε) agree exactly on one composition:
        δ(ε(δ)) ≤ δ and ε(δ(ε)) ≤ ε, whichever analyses answered (they may differ by their
        accuracy otherwise, e.g. the PLD's grids for an ε and for a δ query)."""
        if quantity == "epsilon":
            return min((e for e, d in self._points if d <= at), default=math.inf)
        return min((d for e, d in self._points if e <= at), default=1.0)

    def _remember(self, epsilon: float, delta: float) -> None:
        if math.isfinite(epsilon) and delta < 1.0:
            if len(self._points) >= _MAX_POINTS:
                del self._points[0]
            self._points.append((epsilon, delta))

    def _renyi(self, alpha: float) -> float:
        return RDPSum(self.items)._renyi(alpha)

    def _group(self, k: int) -> Composition:
        # Each item's group guarantee bounds it on inputs k apart; every analysis composes bounds
        # that hold for one pair of inputs, so the composition of the groups is valid for the pair.
        # Raises NotImplied (naming the item) when an item has no group bound.
        grouped = tuple((g.group(k), n) for g, n in self.items)
        return Composition(normalise(grouped), self.adaptive, self.accuracy)

    def clt_estimate(self) -> CLTEstimate:
        """The central-limit μ-GDP *estimate* of this composition (not a guarantee; see
        :func:`sharpdp.accounting.clt.clt_estimate`). Its ``epsilon(delta)`` is an approximation that may
        be below the true value."""
        from sharpdp.accounting.clt import clt_estimate

        return clt_estimate(self.items)

    def _repr_html_(self) -> str:
        """Jupyter: the items and their counts, as ``repr`` lists them (nothing is computed;
        ``explain(delta=...)`` shows every analysis with its value)."""
        from sharpdp._format import html_table

        mode = "adaptive" if self.adaptive else "non-adaptive (a batch fixed in advance)"
        shown = dict(self._shown())  # as in repr: the accuracy only when not the default
        accuracy = f", accuracy={shown['accuracy']!r}" if "accuracy" in shown else ""
        return html_table(
            [(repr(g), f"{n:,}") for g, n in self.items],
            header=("item", "count"),
            caption=f"Composition, {mode}{accuracy}",
            right=(1,),
        )


#: The finest ``accuracy`` offered by :func:`compose`.
MIN_ACCURACY = 1e-6
#: Certified points a composition keeps (the oldest go first); lookups scan them linearly.
_MAX_POINTS = 256


def _least_bounds(analyses: list[Guarantee | str], epsilons: Any) -> Any:
    """The least of the δ bounds that ``analyses`` offer at ``epsilons`` (those that could be
    prepared), or ``None`` when none offers any."""
    import numpy as np

    out = None
    for g in analyses:
        if isinstance(g, str):
            continue
        try:
            values = g.delta_bounds(epsilons)
        except (NotImplied, NumericalError, AccuracyNotReached):
            continue
        if values is not None:
            out = values if out is None else np.minimum(out, values)
    return out


def compose(items: Iterable[Item], adaptive: bool = True, *, accuracy: float = 1e-4) -> Composition:
    """Compose ``items`` (guarantees, mechanisms or ``(item, count)`` pairs).

    Args:
        items: what was (or will be) run; equal items are grouped.
        adaptive: ``True`` (default) if later items may depend on earlier outputs. Analyses that
            hold only for batches fixed in advance (DDR20) are used only when ``False``.
        accuracy: the relative accuracy promised, in [1e-6, 1) (default 1e-4): whenever an
            analysis that computes the exact composition of the items' dominating pairs applies
            (the PLD, the MGF inversions), the value reported satisfies
            exact ≤ value ≤ exact·(1 + accuracy) + s — certified by that analysis's bracket,
            with an absolute slack s of 1e-12 on ε and 1e-21 on δ (the PLD's truncated tails,
            each ≤ 1e-24, bound how finely a tiny δ can be certified). When no
            bracket gets that narrow (the PLD's grids are capped at 2^22 bins; atoms off the grid
            converge slowly), ``epsilon``/``delta`` raise :class:`~sharpdp.AccuracyNotReached`,
            which carries the valid bound found and the bracket's lower end
            (``epsilon_bound``/``delta_bound`` return that bound instead of raising). Smaller
            values give sharper bounds at a higher cost; every value reported is a valid bound
            whatever the accuracy. Finer settings are refused: the rigorous float-error bound
            of the FFTs (about 1e-9 relative, added to the reported value) is no longer
            negligible there.

    Returns:
        A :class:`Composition` answering ``epsilon``, ``delta``, ``renyi`` and ``explain``.

    Example:
        >>> import sharpdp as sdp
        >>> c = sdp.compose([(sdp.Gaussian(5.0), 100)])
        >>> round(c.epsilon(1e-5), 6)  # exactly σ = 0.5: √k·μ-GDP (Dong–Roth–Su 2019, Cor 3.3)
        9.997256
    """
    if not isinstance(adaptive, bool):
        raise InvalidParameter(f"adaptive must be a bool, got {adaptive!r}")
    acc = _validate.positive("accuracy", accuracy)
    if not MIN_ACCURACY <= acc < 1.0:
        raise InvalidParameter(
            f"accuracy must be in [{MIN_ACCURACY:g}, 1), got {accuracy!r} (finer accuracy "
            "cannot be certified by the PLD's grids)"
        )
    return Composition(normalise(items), adaptive, acc)


def max_compositions(item: Guarantee, budget: Guarantee, adaptive: bool = True) -> int:
    """The largest k such that k copies of ``item`` fit ``budget`` (``ApproxDP``, ``PureDP`` or
    ``ZCDP``).

    Example: exponential mechanisms at ε0 = 0.025 within (1, 1e-6): 359 non-adaptively (DDR20)
    against 26 by the classical 2ε0-DP analysis (Kairouz–Oh–Viswanath 2015, Thm 3.3, on
    2ε0-DP items) — the gain Dong–Durfee–Rogers 2020 (Thm 3) make possible. A zCDP budget
    (ρ, ξ) holds k items of (ρ_i, ξ_i) iff kρ_i ≤ ρ and k(ξ_i + ρ_i) ≤ ξ + ρ (zCDP composes by
    addition, Bun–Steinke 2016 Lemma 2.3, adaptively), with ρ_i the item's sharpest zCDP
    parameter summed exactly, as an :class:`~sharpdp.accounting.Accountant` with that budget
    sums it.

    Raises:
        NumericalError: more than 2⁴⁰ copies fit (the item is free or nearly so).
    """
    if not isinstance(item, Guarantee):
        raise InvalidParameter(f"item must be a sharpdp guarantee or mechanism, got {item!r}")
    if isinstance(budget, ZCDP):
        return _max_zcdp_compositions(item, budget)
    if not isinstance(budget, ApproxDP):
        from sharpdp.guarantees import PureDP

        if isinstance(budget, PureDP):
            budget = ApproxDP(budget.epsilon_, 0.0)
        else:
            raise InvalidParameter(f"budget must be ApproxDP, PureDP or ZCDP, got {budget!r}")

    def fits(k: int) -> bool:
        # (ε, δ)-DP holds iff some valid analysis certifies δ(ε) ≤ δ: one evaluation, no inversion
        return compose([(item, k)], adaptive).certifies(budget.epsilon_, budget.delta_)

    return _largest_fitting(fits, 0)


def _largest_fitting(fits: Callable[[int], bool], known: int) -> int:
    """The largest k ≥ ``known`` with ``fits(k)``, for a predicate that holds up to some k and
    fails beyond (``fits(known)`` is taken as given; 0 always fits): doubling, then bisection.

    Raises:
        NumericalError: more than 2⁴⁰ fit.
    """
    lo, hi = known, max(2 * known, known + 1)
    while fits(hi):
        lo, hi = hi, 2 * hi
        if hi > 2**41:
            raise NumericalError("more than 2**40 compositions fit: the item is (nearly) free")
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _max_zcdp_compositions(item: Guarantee, budget: ZCDP) -> int:
    """:func:`max_compositions` for a zCDP budget: exact rational division."""
    from fractions import Fraction

    from sharpdp.conversions import convert

    exact = item.exact_zcdp()
    if exact is None:
        z = convert(item, ZCDP)
        if z.rho == math.inf:
            return 0
        exact = (Fraction(z.rho), Fraction(z.xi))
    rho, xi = exact
    if budget.rho == math.inf:
        raise NumericalError("more than 2**40 compositions fit: the budget is unbounded")
    limits = [
        Fraction(budget.rho) / rho if rho > 0 else None,
        (Fraction(budget.xi) + Fraction(budget.rho)) / (xi + rho) if xi + rho > 0 else None,
    ]
    finite = [math.floor(x) for x in limits if x is not None]
    if not finite or min(finite) > 2**40:
        raise NumericalError("more than 2**40 compositions fit: the item is (nearly) free")
    k = min(finite)
    if budget.xi > 0.0:
        # the budget's slack ξ: k copies may lie under ξ + ρα by their summed Rényi curve, as
        # the accountant also reads it (its _ZCDPRule), though not by their summed (ρᵢ, ξᵢ)
        from sharpdp.accounting.analyses.rdp import RDPSum
        from sharpdp.conversions import renyi_under_zcdp_line

        def fits(n: int) -> bool:
            return renyi_under_zcdp_line(RDPSum(((item, n),)), budget.rho, budget.xi)

        k = _largest_fitting(fits, k)
    return k


@functools.lru_cache(maxsize=256)
def _adaptive_composition(rounds: Items) -> Composition:
    return compose(rounds)


@functools.lru_cache(maxsize=4096)
def read_composed(rounds: Items, quantity: str, at: float) -> float:
    """A mechanism's rounds read as their adaptive composition: ε(δ) for ``quantity="epsilon"``,
    δ(ε) for ``"delta"`` (the reader of :data:`sharpdp.guarantees.ComposedReader`, through which
    mechanisms made of rounds, a layer below, answer their own ε and δ). Never refused for
    accuracy: a valid bound is what the mechanism needs."""
    composition = _adaptive_composition(rounds)
    try:
        if quantity == "epsilon":
            return composition.epsilon_bound(at)
        return composition.delta_bound(at)
    except (NotImplied, NumericalError):
        return math.inf if quantity == "epsilon" else 1.0


@functools.lru_cache(maxsize=256)
def read_composed_bounds(rounds: Items, epsilons: tuple[float, ...]) -> tuple[float, ...] | None:
    """The δ bounds at each ε of ``epsilons`` at once for the rounds' adaptive composition
    (:meth:`Composition.delta_bounds`), or ``None`` when it has no cheaper way than point by
    point (the reader of :data:`sharpdp.guarantees.ComposedBoundsReader`)."""
    import numpy as np

    try:
        out = _adaptive_composition(rounds).delta_bounds(np.array(epsilons, dtype=np.float64))
    except (NotImplied, NumericalError):
        return None
    return None if out is None else tuple(float(v) for v in out)
