"""Top-k over unknown keys: Durfee–Rogers' limited-domain mechanism (LimitDom), sampled exactly.

**The mechanism** [Durfee–Rogers, NeurIPS 2019, arXiv 1905.04273, Algorithm 1 (LimitDom_{k,k̄});
google-research ``dp_mm_domain/limited_domain.py``]. Counts h over an unknown domain of keys; the
engine reads only the true top-k̄ keys T (k̄ ≥ k; ties broken by a data-independent order, e.g.
by key) and the (k̄ + 1)-th largest count h₍ₖ̄₊₁₎ (0 if there are at most k̄ keys). With
b = Δ∞/ε, a threshold

    h⊥ = h₍ₖ̄₊₁₎ + Δ∞ + b·ln(min(Δ, k̄)/δ_⊥)

is added as a pseudo-key ⊥; every value in T ∪ {⊥} gets independent Gumbel(b) noise and the keys
are released in decreasing noisy order until ⊥ comes or k keys are out. Neighbours: add/remove one
person, who changes each count by at most Δ∞ (``sensitivity``) and at most Δ counts
(``max_keys``; ``None`` = unrestricted, min(Δ, k̄) = k̄). DR19 and Google's code use Δ∞ = 1 and
δ_⊥ = δ; we calibrate δ_⊥ so that the δ *spent* is exactly the δ asked for (below).

**Theorem** (our statement and proof; DR19's Thm 1 states an (ε′, δ + δ′) bound of this kind, which
we could not check line by line here). Write m = min(Δ, k̄), T(D) the top-k̄ keys of D, and
δ_⊥ = δ·(1 − β)/(1 + e^{−ε}) with β = min(tanh(kε/2), ε√k/4). Then for every neighbouring pair,
(LimitDom(D), LimitDom(D′)) is a post-processing (Blackwell) of the pair of a k-fold adaptive
composition of ε-bounded-range mechanisms taken together with a (0, δ)-DP mechanism. Hence an
accountant may spend ``[(BoundedRange(ε), k), ApproxDP(0, δ)]`` (:meth:`LimitDom.privacy_items`).

*Proof.* Let D′ = D + one person, C = T(D) ∩ T(D′), E = T(D′) ∖ T(D), F = T(D) ∖ T(D′).
(i) A key the person does not touch keeps its count while the others only grow, so it cannot
enter the top-k̄: E ⊆ touched keys, |E| ≤ m; and |F| ≤ |E| (if |T(D′)| = k̄ both sets have the
same complement C in sets of size ≤ k̄; otherwise T(D′) holds every key, so F = ∅). (ii) Counts
outside the top-k̄ are ≤ the (k̄ + 1)-th, and order statistics move by at most Δ∞:
h₍ₖ̄₊₁₎(D) ≤ h₍ₖ̄₊₁₎(D′) ≤ h₍ₖ̄₊₁₎(D) + Δ∞. So for j ∈ E: h_j(D) ≤ h₍ₖ̄₊₁₎(D) and
h_j(D′) ≤ h₍ₖ̄₊₁₎(D′) + Δ∞; for j ∈ F: h_j(D′) ≤ h₍ₖ̄₊₁₎(D′) and h_j(D) ≤ h_j(D′) ≤
h₍ₖ̄₊₁₎(D) + Δ∞. (iii) Let M_Z be the same algorithm run on the *fixed* key set Z = C ∪ E ∪ F. By
the Gumbel-max identity its output is peeling: at most k rounds, each an exponential mechanism over
the remaining keys and ⊥ with coefficient 1/b = ε/Δ∞ [DR19, one-shot ≡ peeling]; from D to D′
every score (counts, and h⊥ through h₍ₖ̄₊₁₎) moves up by at most Δ∞, so each round is ε-BR, and
(M_Z(D), M_Z(D′)) is a k-fold adaptive ε-BR pair; its total variation is at most
β (kε-DP gives tanh(kε/2) [Kairouz–Oh–Viswanath 2015]; KL ≤ kε²/8 [BR ⇒ ε²/8-zCDP, Cesar–Rogers
2021] and Pinsker give ε√k/4). (iv) Couple LimitDom(D) = M_{C∪F}(D) with M_Z(D) through the same
Gumbels: they coincide unless M_Z(D) outputs a key of E ∪ F, an event Γ of the output. A key is
output only if its noisy value beats ⊥'s; the difference of two Gumbel(b) is logistic, so a gap g
is beaten with probability 1/(1 + e^{g/b}) < e^{−g/b}. By (ii) the gaps in D are ≥ Δ∞ + b ln(m/δ_⊥)
for E and ≥ b ln(m/δ_⊥) for F, so P[Γ] ≤ (|E|e^{−ε} + |F|)·δ_⊥/m ≤ (1 + e^{−ε})δ_⊥ =: δ₀; the
same bound holds in D′ (E and F swap roles). (v) Hence for every S and ε* ≥ 0,
P[LimitDom(D) ∈ S] ≤ P[M_Z(D) ∈ S ∖ Γ] + P[Γ] and P[LimitDom(D′) ∈ S] ≥ P[M_Z(D′) ∈ S ∖ Γ], so
H_{e^{ε*}}(LimitDom(D) ‖ LimitDom(D′)) ≤ f(ε*) + δ₀ ≤ f(ε*) + δ(1 − f(ε*)), where f is the
hockey-stick curve of the BR pair and f(ε*) ≤ f(0) = TV ≤ β; likewise with D, D′ exchanged. The
right side is the curve of the product of the BR pair with the (0, δ) pair [(1 − δ)f + δ]; both
directions for every ε* ≥ 0 give dominance for every real ε*, which is Blackwell dominance
[Dong–Roth–Su 2022, Thm 2.10; Zhu–Dong–Wang 2022, dominating pairs, Thm 10 for adaptive
composition]. ∎

The price of spending exactly δ is a threshold higher by b·ln((1 + e^{−ε})/(1 − β)) than at
δ_⊥ = δ (≤ b·ln 4 when β ≤ ½).

**Exact sampling.** The k̄ + 1 values race in :mod:`sharpdp.mechanisms._race` (exact uniforms,
certified intervals, decimal fallback). The threshold constant Δ∞ + b·ln(m/δ_⊥) is transcendental;
it is computed in float and rounded *up* (by 64 ulps after each step). That is the pessimistic
direction: the constant is data-independent, so h⊥ keeps sensitivity Δ∞ and (iii) is unchanged,
while a larger constant only enlarges the gaps in (iv). The realised mechanism is then exactly the
one analysed, with this (slightly larger) constant; h⊥ itself enters the race as an exact rational.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from sharpdp import _math, _validate
from sharpdp.errors import InvalidParameter
from sharpdp.guarantees import RDP, ApproxDP, BoundedRange, Guarantee, composed_bound
from sharpdp.mechanisms import _race
from sharpdp.mechanisms._samplers import RNGLike, as_generator
from sharpdp.mechanisms.base import Mechanism

__all__ = ["LimitDom"]

IntArray = npt.NDArray[np.int64]
Outcome = tuple[int, ...]


def _up(x: float) -> float:
    return _math.up(x, 64)


@dataclass(frozen=True, slots=True, init=False)
class LimitDom(Mechanism):
    """Top-k over unknown keys with a noisy threshold ⊥ [Durfee–Rogers 2019, Algorithm 1].

    Output: up to k indices into the given top-k̄ counts, in decreasing order of count + Gumbel(b),
    b = Δ∞/ε, stopping at the pseudo-key ⊥ whose value is h₍ₖ̄₊₁₎ + :attr:`threshold_offset`.
    Guarantee (module docstring): dominated by k adaptive ε-BR mechanisms and one (0, δ)-DP
    mechanism; spend :meth:`privacy_items`.

    Args:
        k: the most keys released (≥ 1).
        k_bar: k̄ ≥ k, how many top keys the engine reads.
        epsilon: ε > 0 per released key (stored as ``epsilon_``).
        delta: δ in (0, 1), the δ spent (stored as ``delta_``).
        sensitivity: Δ∞ > 0, the most one person changes one count.
        max_keys: Δ ≥ 1, the most counts one person changes (``None``: unrestricted).

    Examples:
        >>> from sharpdp.mechanisms import LimitDom
        >>> m = LimitDom(k=3, k_bar=5, epsilon=1.0, delta=1e-6)
        >>> m.select([900, 850, 40, 30, 12], next_count=11, rng=0)
        (0, 1, 2)
        >>> m.privacy_items()
        [(BoundedRange(eta=1.0), 3), ApproxDP(epsilon=0.0, delta=1e-06)]
    """

    k: int
    k_bar: int
    epsilon_: float
    delta_: float
    sensitivity: float
    max_keys: int | None
    # threshold_offset, computed once (every draw reads it; ~40% of a draw when recomputed)
    _offset: float = field(repr=False, compare=False)
    notion: ClassVar[str] = "limited-domain top-k"

    def __init__(
        self,
        k: int,
        k_bar: int,
        epsilon: float,
        delta: float,
        sensitivity: float = 1.0,
        max_keys: int | None = None,
    ) -> None:
        kk = _validate.integer("k", k, minimum=1)
        kb = _validate.integer("k_bar", k_bar, minimum=1)
        if kb < kk:
            raise InvalidParameter(f"k_bar must be >= k={kk}, got {kb}")
        eps = _validate.positive("epsilon", epsilon)
        d = _validate.probability("delta", delta)
        if d == 0.0:
            raise InvalidParameter("delta must be > 0 (unknown keys need a δ), got 0.0")
        object.__setattr__(self, "k", kk)
        object.__setattr__(self, "k_bar", kb)
        object.__setattr__(self, "epsilon_", eps)
        object.__setattr__(self, "delta_", d)
        object.__setattr__(self, "sensitivity", _validate.positive("sensitivity", sensitivity))
        object.__setattr__(
            self,
            "max_keys",
            None if max_keys is None else _validate.integer("max_keys", max_keys, minimum=1),
        )
        object.__setattr__(self, "_offset", self._threshold_offset())
        if not math.isfinite(self._offset):
            raise InvalidParameter(
                f"epsilon={eps!r}, delta={d!r}, k={kk} give an infinite threshold"
            )

    # -- the threshold -----------------------------------------------------------------------------

    @property
    def restricted(self) -> int:
        """m = min(Δ, k̄): how many keys one person can move into or out of the top k̄."""
        return self.k_bar if self.max_keys is None else min(self.max_keys, self.k_bar)

    @property
    def tv_bound(self) -> float:
        """β ≥ the total variation of a k-fold adaptive ε-BR pair: min(tanh(kε/2), ε√k/4), up."""
        tanh = math.tanh(0.5 * self.k * self.epsilon_)
        pinsker = 0.25 * self.epsilon_ * math.sqrt(self.k)
        return min(1.0, _up(min(tanh, pinsker)))

    def _log_inverse_gap(self) -> float:
        """−ln(1 − β) for β = min(tanh(x), ε√k/4), x = kε/2, rounded up, without forming 1 − β
        where it cancels: −ln(1 − tanh x) = 2x − ln 2 + ln(1 + e^{−2x}) once tanh x ≥ ½ (tanh
        rounds to 1 from x ≈ 19, where the threshold is still finite: 14.9 at k = 10, ε = 4)."""
        x = 0.5 * self.k * self.epsilon_
        tanh = math.tanh(x)
        if tanh < 0.5:
            by_tanh = _up(-math.log1p(-_up(tanh)))
        else:
            by_tanh = _up(_up(2.0 * x) - math.log(2.0) + _up(math.log1p(math.exp(-2.0 * x))))
        pinsker = _up(0.25 * self.epsilon_ * math.sqrt(self.k))
        by_pinsker = _up(-math.log1p(-pinsker)) if pinsker < 1.0 else math.inf
        return min(by_tanh, by_pinsker)

    @property
    def threshold_offset(self) -> float:
        """h⊥ − h₍ₖ̄₊₁₎ = Δ∞ + (Δ∞/ε)·ln(m/δ_⊥), δ_⊥ = δ(1 − β)/(1 + e^{−ε}), rounded up.

        ln(m/δ_⊥) = ln m − ln δ + ln(1 + e^{−ε}) − ln(1 − β), each term within a few ulps;
        every step is moved up by 64 ulps (the pessimistic direction, see the module docstring).
        """
        return self._offset

    def _threshold_offset(self) -> float:
        """:attr:`threshold_offset`, computed."""
        log_ratio = _up(
            _up(math.log(self.restricted) - math.log(self.delta_))
            + _up(math.log1p(math.exp(-self.epsilon_)))
            + self._log_inverse_gap()
        )
        scale = _up(self.sensitivity / self.epsilon_)
        return _up(self.sensitivity + _up(scale * log_ratio))

    # -- privacy -----------------------------------------------------------------------------------

    def privacy_items(self) -> list[tuple[Guarantee, int] | Guarantee]:
        """What to spend: ``[(BoundedRange(ε), k), ApproxDP(0, δ)]`` (see the module theorem).

        Adaptive-composition safe: LimitDom is dominated by this product for every neighbouring
        pair, so any valid accounting of the list (PLD, RDP after splitting δ, DDR20 only when the
        whole batch is fixed in advance) is valid for the mechanism.
        """
        return [(BoundedRange(self.epsilon_), self.k), ApproxDP(0.0, self.delta_)]

    def _rounds_curve(self) -> RDP:
        """The k adaptive ε-BR rounds as one Rényi curve: k·D_α(BR(ε)) (RDP adds, Mironov 2017
        Prop 1; the exact BR curve, an upper bound at every α)."""
        br, k = BoundedRange(self.epsilon_), self.k
        return RDP.from_function(lambda alpha: _up(k * br.renyi(alpha)))

    def _renyi(self, alpha: float) -> float:
        return math.inf  # δ > 0: no Rényi bound

    # Its own ε/δ: the accounting layer's adaptive composition of :meth:`rounds`, with every
    # analysis it has (the MGF inversion; approx_rdp, which is the stand-alone route below) —
    # the same as ``sdp.compose([m])``. The stand-alone route answers only when that one does
    # not: δ(ε) ≤ f(ε) + δ·(1 − f(ε)), f bounded through the rounds' Rényi curve.
    def _delta(self, epsilon: float) -> float:
        composed = composed_bound(self.rounds(), "delta", epsilon)
        if composed < 1.0:
            return composed
        f = self._rounds_curve().delta(epsilon)
        return min(1.0, _up(f + self.delta_ * (1.0 - f)))

    def _epsilon(self, delta: float) -> float:
        if delta < self.delta_:
            return math.inf
        composed = composed_bound(self.rounds(), "epsilon", delta)
        if composed < math.inf:
            return composed
        # f(ε) ≤ (δ' − δ)/(1 − δ) makes f + δ(1 − f) ≤ δ'; the subtraction is rounded down
        target = (delta - self.delta_) / (1.0 - self.delta_)
        target = max(0.0, target * (1.0 - 2.0**-50))
        return self._rounds_curve().epsilon(target)

    def rounds(self) -> tuple[tuple[Guarantee, int], ...]:
        """The items of :meth:`privacy_items`: k ε-BR rounds and ApproxDP(0, δ)."""
        return ((BoundedRange(self.epsilon_), self.k), (ApproxDP(0.0, self.delta_), 1))

    # -- data --------------------------------------------------------------------------------------

    def _validated(self, counts: object, next_count: object) -> tuple[IntArray, int]:
        try:
            arr = np.asarray(counts)
        except (TypeError, ValueError, OverflowError):
            raise InvalidParameter(
                f"counts must be a 1-D array of integers, got {counts!r}"
            ) from None
        if arr.ndim != 1:
            raise InvalidParameter(f"counts must be 1-D, got shape {arr.shape}")
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise InvalidParameter(f"counts must be integers, got dtype {arr.dtype}")
        h = arr.astype(np.int64)
        nxt = _validate.integer("next_count", next_count, minimum=0)
        if h.size > self.k_bar:
            raise InvalidParameter(
                f"counts must hold at most k_bar={self.k_bar} keys, got {h.size}"
            )
        if h.size and int(h.min()) < max(nxt, 1):
            raise InvalidParameter(
                f"counts must be positive and >= next_count={nxt} (the top k̄ keys), "
                f"got min {int(h.min())}"
            )
        if h.size < self.k_bar and nxt != 0:
            raise InvalidParameter(
                f"next_count must be 0 when fewer than k_bar={self.k_bar} keys exist, got {nxt}"
            )
        if h.size and int(h.max()) >= 2**53:
            raise InvalidParameter("counts must be below 2**53")
        return h, nxt

    def _offsets(self, h: IntArray, nxt: int) -> _race.Offsets:
        """Offsets c·(s_r − max s) over [counts…, ⊥], c = ε/Δ∞, s⊥ = next + offset (exact).

        Float error: counts and next are exact; s⊥ = fl(next + t) and each difference and the
        product with fl(c) round once (relative 2⁻⁵³), so |â − a| ≤ c·2⁻⁵¹·(|s|max + |s⊥|)·2 +
        (the τ model's relative part); ``slack`` is that bound doubled.
        """
        c = Fraction(self.epsilon_) / Fraction(self.sensitivity)
        t = Fraction(self.threshold_offset)
        s_bot = nxt + t
        exact_scores = [Fraction(int(x)) for x in h] + [s_bot]
        top = max(exact_scores)
        scores = np.append(h.astype(np.float64), float(s_bot))
        c_float = float(c)
        approx = c_float * (scores - float(top))
        big = float(max(abs(top), abs(s_bot))) + 1.0
        slack = 4.0 * c_float * 2.0**-51 * big * (1.0 + 2.0**-40)

        def exact(i: int) -> Fraction:
            return c * (exact_scores[i] - top)

        return _race.Offsets(np.asarray(approx, dtype=np.float64), None, exact, slack)

    # -- law and sampling --------------------------------------------------------------------------

    def probability(
        self, counts: Sequence[int] | IntArray, next_count: int, outcome: Sequence[int]
    ) -> float:
        """Exact probability of the released sequence ``outcome`` (indices into ``counts``).

        Peeling: each key in turn is the exponential mechanism's choice among the keys left and ⊥
        (weights e^{c·s}), then ⊥ if fewer than k keys are out.
        """
        h, nxt = self._validated(counts, next_count)
        items = [int(i) for i in outcome]
        if len(set(items)) != len(items) or any(not 0 <= i < h.size for i in items):
            raise InvalidParameter(f"outcome must be distinct indices < {h.size}, got {items}")
        if len(items) > self.k:
            raise InvalidParameter(f"outcome has more than k={self.k} keys")
        c = self.epsilon_ / self.sensitivity
        logits = c * (np.append(h.astype(np.float64), nxt + self.threshold_offset))
        logits -= logits.max()
        alive = np.ones(h.size + 1, dtype=bool)
        log_p = 0.0
        for i in [*items, *([h.size] if len(items) < self.k else [])]:
            log_p += float(logits[i]) - math.log(float(np.exp(logits[alive]).sum()))
            alive[i] = False
        return math.exp(log_p)

    def law(self, counts: Sequence[int] | IntArray, next_count: int) -> dict[Outcome, float]:
        """The whole output law {outcome: probability} (enumerates; for small k̄ only)."""
        h, _ = self._validated(counts, next_count)
        if math.perm(h.size, min(self.k, h.size)) > 200_000:
            raise InvalidParameter("the output law is enumerated for small k_bar and k only")
        out: dict[Outcome, float] = {}

        def walk(prefix: tuple[int, ...]) -> None:
            out[prefix] = self.probability(h, next_count, prefix)
            if len(prefix) < min(self.k, h.size):
                for i in range(h.size):
                    if i not in prefix:
                        walk((*prefix, i))

        walk(())
        return out

    def select(
        self, counts: Sequence[int] | IntArray, next_count: int, rng: RNGLike = None
    ) -> Outcome:
        """Sample the released keys exactly (law: :meth:`probability`).

        Args:
            counts: the counts of the true top-k̄ keys (any order; all ≥ ``next_count``, ≥ 1).
            next_count: h₍ₖ̄₊₁₎, the (k̄ + 1)-th largest count (0 if at most k̄ keys exist).
            rng: a seed or a ``numpy.random.Generator``.

        Returns:
            Indices into ``counts`` of the released keys, best first (possibly empty).
        """
        h, nxt = self._validated(counts, next_count)
        gen = as_generator(rng)
        depth = min(self.k + 1, h.size + 1)
        order = _race.race(self._offsets(h, nxt), depth, "gumbel", gen, None)
        released: list[int] = []
        for i in order.tolist():
            if i == h.size or len(released) == self.k:
                break
            released.append(int(i))
        return tuple(released)
