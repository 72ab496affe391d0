"""Private partition selection by thresholding noisy counts (unknown keys), with exact δ.

Each key present in the bounded data gets its noisy count c + Z; it is released iff
c + Z ≥ τ (mass exactly at τ included: keys *at* the threshold are released, and δ counts them —
the off-by-one of OpenDP issue #2922 under-reported δ by missing that atom).

Validity (add/remove one person; ≤ κ keys per person, ≤ m rows per key). Let D′ = D plus one
person. Keys of D′ split into *shared* keys (present in D) and at most κ *new* keys, each with
bounded count ≤ m in D′. The release is a post-processing (thresholding) of the pair
(A, B): A = noisy counts of shared keys, B = the noisy counts of new keys that pass τ (nothing on D).
A is the noise mechanism with ≤ κ keys moved by ≤ m (charged as κ runs); B is a (0, δ_new)-pair:
its laws on D and D′ differ only on the event that some new key passes, of probability

    δ_new = 1 − Π_{new keys} (1 − P[c_k + Z ≥ τ]) ≤ 1 − (1 − P[Z ≥ τ − m])^κ,

since c_k ≤ m and the tail is increasing in c_k; the noise is independent across keys. So the
release costs the adaptive composition of A and ApproxDP(0, δ_new) — charged exactly so, and the
accountant composes them (e.g. basic composition gives (ε_A, δ_A + δ_new)). This is the thresholding
argument of Korolova–Kenthapadi–Mishra–Ntoulas 2009 (WWW) and Wilson et al. 2020 (PoPETs,
"Differentially private SQL with bounded user contribution"), with the tail computed exactly.
For κ = 1 it is thresholding with two-sided geometric noise; Desfontaines–Voss–Gipson–Mandayam 2022
(PoPETs 2022(1), Thm 5) show the optimal *selection-only* rule is thresholding with truncated
geometric noise, which does not release counts; here the counts come with the keys.
"""

from __future__ import annotations

import math

from sharpdp.data._noise import IntegerNoise, least_integer, upper_tail
from sharpdp.errors import InvalidParameter

__all__ = ["new_key_delta", "threshold"]


def new_key_delta(noise: IntegerNoise, max_rows: int, copies: int, tau: int) -> float:
    """δ_new = 1 − (1 − P[Z ≥ τ − m])^κ, an upper bound (P from :func:`upper_tail`, rounded up).

    Example:
        >>> import sharpdp as sdp
        >>> d = new_key_delta(sdp.DiscreteLaplace(1), 1, 1, 3)   # P[Z ≥ 2] = q²/(1 + q), q = 1/e
        >>> round(d, 6)
        0.098938
    """
    p = upper_tail(noise, tau - max_rows)
    if p >= 1.0:
        return 1.0
    value = -math.expm1(copies * math.log1p(-p)) if copies > 1 else p
    return min(1.0, math.nextafter(value * (1.0 + 1e-12), math.inf))


def threshold(noise: IntegerNoise, max_rows: int, copies: int, delta: float) -> tuple[int, float]:
    """The least integer τ whose δ_new ≤ ``delta``, and that δ_new.

    Raises:
        InvalidParameter: ``delta`` is 0 (no threshold can hide a new key with certainty).

    Example:
        >>> import sharpdp as sdp
        >>> threshold(sdp.DiscreteLaplace(1), 1, 1, 0.1)[0]
        3
    """
    if delta <= 0.0:
        raise InvalidParameter("privacy: releasing unknown keys needs delta > 0")
    tau = least_integer(lambda t: new_key_delta(noise, max_rows, copies, t) <= delta, max_rows + 1)
    return tau, new_key_delta(noise, max_rows, copies, tau)
