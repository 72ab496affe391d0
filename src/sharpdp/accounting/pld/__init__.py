"""Privacy loss distributions (PLDs): dominating pairs, discretisation, FFT composition, δ(ε), ε(δ).

Every mechanism or guarantee with a known *dominating pair* (P, Q) is described by the law of its
privacy loss L = log(P/Q)(Y), Y ~ P, including a mass at +∞. Composition multiplies pairs, i.e.
convolves loss laws (the +∞ masses compose as 1 − Π(1 − p_i)); the composed mechanism is then
(ε, δ(ε))-DP with δ(ε) = E[(1 − e^{ε − L})_+] + P[L = ∞] [Zhu–Dong–Wang 2022 (arXiv 2106.08567),
Thm 10, valid for adaptive composition; Koskela–Jälkö–Honkela 2020; Gopi–Lee–Wutschitz 2021].

Pipeline and why each step errs against the user:

1. :func:`dominating_pairs` maps an item to symmetric pairs through a registry keyed by type
   (:func:`register_pair`). Symmetric pairs dominate both orders of every neighbouring pair.
2. :func:`discretise` puts a pair on the grid i·h: pessimistically by *connect the dots*
   [Doroshenko–Ghazi–Kamath–Kumar–Manurangsi 2022, arXiv 2207.04380] (the profile is the chord
   interpolation in e^ε of the exact one, hence above it), or optimistically (a profile below the
   exact one at every ε; see :mod:`sharpdp.accounting.pld.grid`). Per-component order is preserved by
   composition (order lemma in :mod:`sharpdp.accounting.pld.grid`), so the two composed results bracket the
   exact value: δ_opt(ε) ≤ δ(ε) ≤ δ_pess(ε).
3. Composition (:meth:`DiscretePLD.compose`, :meth:`DiscretePLD.self_compose`) uses numpy's FFT on
   *exponentially tilted* masses m_j e^{λ l_j}, so that the float error, which is absolute and
   uniform per bin, is *relative* to the tail mass that δ(ε) depends on. Every result carries
   rigorous bounds of its float error by norms — an L1 part (errors proportional to the masses),
   an L2 part (the FFTs' rounding, normwise FFT error analysis, see :data:`FFT_ULPS`) and a per-bin
   part — whose effect on δ(ε) is bounded in closed form (:meth:`DiscretePLD._extra_delta`);
   reported values add it (pessimistic) or subtract it (optimistic). (A per-bin bound summed over
   a fine grid's millions of empty bins grows with the grid: finer grids got looser.) Tails of
   composed laws are truncated where Chernoff bounds (from the moment generating function, tracked
   exactly) certify them below ``tail``: pessimistically the upper tail goes to +∞ and the lower
   tail to the lowest kept loss; optimistically both are dropped.
4. δ(ε) and ε(δ) are computed exactly on the discrete law (closed form between grid points) in
   log space, then rounded against the user.

:func:`compose_pld` wraps it all with automatic accuracy: it refines h until the optimistic and
pessimistic ε (or δ) agree to a relative ``target_relative_error``; the reported value is the
pessimistic one, so it is always a valid bound, certified to be within the target of the exact
value when :meth:`PLDResult.epsilon_bracket` is that narrow. Identical pairs are grouped and
self-composed by one FFT power; a group whose atoms sit on a lattice incommensurate with the grid
is composed on its own aligned grid (where its discretisation is exact) and regridded once.

Accuracy, measured by ``python bench/pld_accuracy.py`` (ε at δ = 1e-6, fixed grid spacing h):
connect the dots errs by O(h²) per unit of loss density and, since it keeps the P- and Q-mass of
every cell, its error does not accumulate to first order over k compositions. For Laplace(b = 10)
× 100 and Gaussian(σ = 10) × 100 the bracket width falls 4× each time h halves, from 7.0e-4 and
1.4e-2 at h = 1e-2 to 1.6e-6 and 3.5e-5 at h = 5e-4, and the pessimistic value exceeds the exact ε
by about a third of the width. The optimistic construction is of the same order except for
*isolated atoms off the grid* (randomized response or pure DP with many different ε in one
composition), where the best grid-kinked lower bound is O(h) per atom. There the bracket shrinks
like h (for randomized response with ε = √2/10 × 100, 0.3 × 30, 0.7 × 20: from 1.4e-3 at
h = 1e-2 to 7.1e-5 at h = 5e-4), refinement may stop at :data:`MAX_BINS`, and the bracket says
how sharp the (still valid) pessimistic value is; that value is far closer (there: 1.3e-8 above
the exact ε at h = 5e-3, then the float-error floor, ~5e-10 relative).
"""

from sharpdp.accounting.pld.composition import PLDResult, clear_cache, compose_pld
from sharpdp.accounting.pld.discrete import DiscretePLD, discretise
from sharpdp.accounting.pld.registry import dominating_pairs, register_pair, supports

__all__ = [
    "DiscretePLD",
    "PLDResult",
    "clear_cache",
    "compose_pld",
    "discretise",
    "dominating_pairs",
    "register_pair",
    "supports",
]
