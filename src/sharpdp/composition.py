"""Composition of guarantees and mechanisms (provisional: RDP additivity only; analyses to come)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from sharpdp import _validate
from sharpdp.errors import InvalidParameter
from sharpdp.guarantees import Guarantee

__all__ = ["Composition", "compose"]

Item = Guarantee | tuple[Guarantee, int]


def _normalise(items: Iterable[Item]) -> tuple[tuple[Guarantee, int], ...]:
    out: list[tuple[Guarantee, int]] = []
    for entry in items:
        if isinstance(entry, Guarantee):
            out.append((entry, 1))
            continue
        if not (isinstance(entry, tuple) and len(entry) == 2):
            raise InvalidParameter(
                f"items must be guarantees or (guarantee, count) pairs, got {entry!r}"
            )
        item, count = entry
        if not isinstance(item, Guarantee):
            raise InvalidParameter(f"item must be a sharpdp guarantee or mechanism, got {item!r}")
        out.append((item, _validate.integer("count", count, minimum=0)))
    return tuple((g, c) for g, c in out if c > 0)


@dataclass(frozen=True, slots=True)
class Composition(Guarantee):
    """The composition of ``items`` (each a guarantee with a count)."""

    items: tuple[tuple[Guarantee, int], ...]
    adaptive: bool = True
    notion: ClassVar[str] = "composition"

    def _renyi(self, alpha: float) -> float:
        total = 0.0
        for item, count in self.items:
            total += count * item.renyi(alpha)
            if total == math.inf:
                return math.inf
        return total


def compose(items: Iterable[Item], adaptive: bool = True) -> Composition:
    """Compose ``items`` (guarantees, mechanisms or ``(item, count)`` pairs)."""
    return Composition(_normalise(items), bool(adaptive))
