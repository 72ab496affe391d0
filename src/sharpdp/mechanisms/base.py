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
    """Base class of mechanisms: frozen dataclasses that are guarantees.

    Subclassing contract: either implement the guarantee hooks (``_renyi``, ``_delta``,
    ``_epsilon``) directly, or return from :meth:`characterisation` a guarantee whose answers are
    exactly this mechanism's (e.g. ``BoundedRange(ε)`` for the exponential mechanism); the hooks then
    delegate to it.
    """

    __slots__ = ()

    def privacy_items(self) -> list[tuple[Guarantee, int] | Guarantee] | None:
        """The items whose composition dominates this mechanism, when that is how its privacy is
        known (e.g. :class:`~sharpdp.mechanisms.LimitDom`: k bounded-range rounds and a (0, δ)
        pair); ``None`` otherwise. Accountants compose these items in its place."""
        return None

    def rounds(self) -> tuple[tuple[Guarantee, int], ...] | None:
        """The items whose *adaptive* composition this mechanism is, when it is made of rounds
        (top-k's k peeling rounds; LimitDom's rounds and its ⊥ part), else ``None``. Its own
        ε and δ then read that composition from the accounting layer
        (:func:`sharpdp.guarantees.composed_bound`), and a composition of it does not read them
        back (it composes the same rounds itself)."""
        return None

    def characterisation(self) -> Guarantee:
        """The guarantee that characterises this mechanism (its worst case over neighbours)."""
        raise NotImplementedError(f"{type(self).__name__} implements the guarantee hooks directly")

    def _renyi(self, alpha: float) -> float:
        return self.characterisation()._renyi(alpha)

    def _delta(self, epsilon: float) -> float:
        return self.characterisation()._delta(epsilon)

    def _epsilon(self, delta: float) -> float:
        return self.characterisation()._epsilon(delta)

    def _group(self, k: int) -> Guarantee:
        # A mechanism satisfies every guarantee its characterisation implies, group privacy
        # included (e.g. ε-BR ⇒ kε-BR, ε-DP ⇒ kε-DP for groups of k).
        try:
            characterisation = self.characterisation()
        except NotImplementedError:
            return super()._group(k)
        return characterisation.group(k)
