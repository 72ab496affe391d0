"""The mechanism base class: a guarantee that can also run.

A mechanism is an immutable, validated description of a randomised algorithm together with its exact
privacy characterisation (principle 4: describe, then run). It *is* a :class:`~sharpdp.Guarantee`:
``epsilon(delta)``, ``delta(epsilon)`` and ``renyi(alpha)`` answer for one run of the mechanism on
neighbouring inputs (add/remove one record, with ``sensitivity`` measured under that relation).
Sampling methods take an explicit ``rng`` (a seed or a ``numpy.random.Generator``).
"""

from __future__ import annotations

from sharpdp.guarantees import Guarantee

__all__ = ["Mechanism"]


class Mechanism(Guarantee):
    """Base class of mechanisms. Subclasses are frozen dataclasses implementing the guarantee hooks."""

    __slots__ = ()
