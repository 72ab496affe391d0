"""Items of a composition and the classifications analyses share (one place, no isinstance ladders
spread over the analyses): normalisation of ``(item, count)`` sequences, and which items are
Gaussian, (ε0, δ0)-DP or bounded range."""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING, TypeGuard

from sharpdp import _math, _validate
from sharpdp.errors import InvalidParameter, NotImplied
from sharpdp.guarantees import GDP, ApproxDP, ApproxZCDP, BoundedRange, Guarantee
from sharpdp.mechanisms.base import Mechanism

if TYPE_CHECKING:
    from sharpdp.mechanisms.additive import Gaussian

__all__ = [
    "Composed",
    "Item",
    "Items",
    "all_gaussian",
    "approx_pair",
    "bounded_range",
    "exact_mass_at_infinity",
    "is_gaussian",
    "log_ratio",
    "mass_at_infinity",
    "mass_at_infinity_with",
    "normalise",
]

Item = Guarantee | tuple[Guarantee, int]
Items = tuple[tuple[Guarantee, int], ...]


class Composed(Guarantee):
    """A guarantee made of items (a composition): :func:`normalise` expands it into its items."""

    items: Items


def _components(item: Guarantee) -> Items | None:
    """What ``item`` stands for when it is itself a composition: a :class:`Composed` guarantee's
    items, or a mechanism's declared ``privacy_items()``; ``None`` for a single item."""
    if isinstance(item, Composed):
        return item.items
    if isinstance(item, Mechanism):
        declared = item.privacy_items()
        if declared is not None:
            return normalise(declared)
    return None


def normalise(items: Iterable[Item]) -> Items:
    """``items`` as ``((item, count), ...)``: compositions expanded, equal items merged, zero counts
    dropped. Raises :class:`~sharpdp.InvalidParameter` naming a malformed entry."""
    if isinstance(items, Guarantee):
        raise InvalidParameter(
            "items must be a sequence of guarantees; wrap a single one in a list"
        )
    out: list[tuple[Guarantee, int]] = []
    try:
        entries = list(items)
    except TypeError:
        raise InvalidParameter(
            f"items must be a sequence of guarantees or (guarantee, count) pairs, got {items!r}"
        ) from None
    for entry in entries:
        if isinstance(entry, Guarantee):
            entry = (entry, 1)
        if not (isinstance(entry, tuple) and len(entry) == 2):
            raise InvalidParameter(
                f"items must be guarantees or (guarantee, count) pairs, got {entry!r}"
            )
        item, count = entry
        if not isinstance(item, Guarantee):
            raise InvalidParameter(f"item must be a sharpdp guarantee or mechanism, got {item!r}")
        n = _validate.integer("count", count, minimum=0)
        parts = _components(item)
        if parts is None:
            out.append((item, n))
        else:
            out.extend((g, c * n) for g, c in parts)
    merged: dict[Guarantee, int] = {}
    for g, c in out:
        if c > 0:
            merged[g] = merged.get(g, 0) + c
    return tuple(merged.items())


def is_gaussian(g: Guarantee) -> TypeGuard[GDP | Gaussian]:
    """Whether ``g`` is a μ-GDP item (a GDP guarantee or a Gaussian mechanism)."""
    from sharpdp.mechanisms.additive import Gaussian

    return isinstance(g, GDP | Gaussian)


def all_gaussian(items: Items) -> bool:
    # Gaussians compose to exactly a Gaussian; for μ-GDP guarantees, the Gaussian pair attains
    # the composed bound, so no analysis of the same items can certify less.
    return bool(items) and all(is_gaussian(g) for g, _ in items)


def approx_pair(g: Guarantee) -> tuple[float, float]:
    """(ε0, δ0) with g (ε0, δ0)-DP, from its exact characterisation (ε0 = D_∞ or ApproxDP)."""
    if isinstance(g, ApproxDP):
        return g.epsilon_, g.delta_
    if isinstance(g, ApproxZCDP) and g.rho == 0.0 and g.xi >= 0.0:
        return g.xi, g.delta_  # (ξ, 0, δ)-approximate zCDP is (ξ, δ)-DP (its own delta(ξ) = δ)
    eps = g.renyi(math.inf)
    if math.isinf(eps):
        raise NotImplied(f"{g!r} is not (ε, δ0)-DP with a known δ0")
    return eps, 0.0


def log_ratio(value: float, target: float) -> float:
    """log(value/target), decreasing with value; −∞ at value 0 (valid for a positive target)."""
    if value <= 0.0:
        return -math.inf if target > 0.0 else 0.0
    if target <= 0.0:
        return math.inf
    return math.log(value) - math.log(target)


#: Most δ parts (counted with multiplicity) whose product is taken exactly in rationals.
_EXACT_MASS_TERMS = 256


def exact_mass_at_infinity(deltas: Iterable[tuple[float, int]]) -> Fraction | None:
    """1 − Π_i (1 − δ_i)^{c_i} exactly, as a rational of the floats δ_i, while the product has
    at most 256 factors (δ_i ≥ 1 gives 1); ``None`` beyond (see :func:`mass_at_infinity`)."""
    parts = [(d, c) for d, c in deltas if d > 0.0]
    if any(d >= 1.0 for d, _ in parts):
        return Fraction(1)
    if sum(c for _, c in parts) > _EXACT_MASS_TERMS:
        return None
    keep = Fraction(1)
    for d, c in parts:
        keep *= (1 - Fraction(d)) ** c
    return 1 - keep


def mass_at_infinity(deltas: Iterable[tuple[float, int]]) -> float:
    """An upper bound on 1 − Π_i (1 − δ_i)^{c_i}, the probability that some δ part fails.

    Exact, rounded up once, while the product has at most 256 factors (the rationals stay a few
    thousand bits): a lone δ is then reported as itself, so a budget whose δ is exactly the items'
    is met at their ε (rounded in floats, 1e-6 read 1.0000000000001e-6 and ε was infinite).
    Beyond that, in log space: −expm1(Σ c_i·log1p(−δ_i)), the sum moved down by 8u before
    ``expm1`` (u = 2⁻⁵³; each term is within 1.5u — ``log1p`` within an ulp as glibc documents,
    the product half of one — and the correctly rounded ``fsum`` of same-signed terms adds half
    an ulp: 2u in all), and the result rounded up by 4 ulps (``expm1`` errs by one; 1 − e^x has
    condition number ≤ 1 in x < 0).

    Args:
        deltas: (δ_i, c_i) pairs, δ_i ∈ [0, 1], c_i ≥ 1.

    Returns:
        The bound, in [0, 1].
    """
    parts = list(deltas)
    return mass_at_infinity_with(exact_mass_at_infinity(parts), parts)


def mass_at_infinity_with(exact: Fraction | None, deltas: Iterable[tuple[float, int]]) -> float:
    """:func:`mass_at_infinity` for a caller that computed :func:`exact_mass_at_infinity`
    already (``exact``, or ``None`` beyond 256 factors)."""
    if exact is not None:
        return min(1.0, _math.float_up(exact))
    parts = [(d, c) for d, c in deltas if d > 0.0]
    log_keep = math.fsum(c * math.log1p(-d) for d, c in parts)
    log_keep = log_keep * (1.0 + 2.0**-50) - 1e-300
    return min(1.0, _math.up(-math.expm1(log_keep)))


def bounded_range(g: Guarantee) -> BoundedRange:
    """``g`` as an η-BR guarantee: itself, or a mechanism's bounded-range characterisation
    (the exponential mechanism's, one-round top-k's); :class:`NotImplied` otherwise."""
    if isinstance(g, BoundedRange):
        return g
    if isinstance(g, Mechanism):
        try:
            char = g.characterisation()
        except NotImplementedError:
            char = None
        if isinstance(char, BoundedRange):
            return char
    raise NotImplied(f"{g!r} is not characterised as bounded range")
