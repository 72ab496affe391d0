"""Pessimistic and optimistic discretisations of a privacy loss law onto the grid t_i = i·h.

Notation: x = e^t, and f(x) = δ(log x) = E_P[(1 − xe^{−L})_+] + P[L = ∞], a convex non-increasing
function of x ∈ [0, ∞) with f(0) = 1 (the profile "in e^ε"). A measure with P-masses M_i at t_i and
M_∞ at +∞ has the profile f̃(x) = M_∞ + Σ_i M_i (1 − x/x_i)_+: piecewise linear in x, with kinks at
the grid points only.

**Order lemma** (why per-component bounds compose). For measures A, B on [−∞, ∞] let
δ_A(t) = ∫(1 − e^{t − l})_+ dA(l) (with (1 − e^{t−∞})_+ = 1). The composition (product of pairs)
has δ_{A⊗B}(ε) = ∫ δ_A(ε − l) dB(l). Hence if Ã, B̃ are non-negative measures with δ_Ã ≥ δ_A and
δ_B̃ ≥ δ_B at *every* real t (and at t = −∞, i.e. total mass), then δ_{Ã⊗B̃} ≥ δ_{Ã⊗B} ≥ δ_{A⊗B}
everywhere; likewise with ≤. No pair structure (Q-mass ≤ 1) is needed, so adding mass is always a
pessimistic move and removing mass an optimistic one.

**Pessimistic: connect the dots** [Doroshenko–Ghazi–Kamath–Kumar–Manurangsi 2022, arXiv
2207.04380]. f̃ interpolates f linearly (in x) between the grid points, starting from (0, 1) and
constant beyond the last point. f is convex, so every chord lies above it: δ̃ ≥ δ at every t, with
equality at the grid points. In mass terms each cell's content is split between its two endpoints
preserving both its P- and its Q-mass: P-mass D/(1 − e^{−h}) up, U/(e^h − 1) down; the low tail goes
to t_lo, the high tail is split between t_hi and +∞. The error is local to each cell (O(h²) per
unit of loss density), which is why the discretisation is much sharper than rounding up.

**Optimistic.** f̃_opt = f̃_ctd − C where C ≥ 0 interpolates "deficits" c_i at the grid points. On a
cell with contents D, U the chord excess of f̃_ctd over f is at most the triangle height
E = DU/(D + U) (f lies above both one-sided tangents at the endpoints, whose slopes differ by the
cell's Q-mass), and C dominates it on the cell iff c_a/D + c_b/U ≥ 1 (a linear condition, so upper
bounds of D, U are safe). Deficits are produced by a forward recursion c_{i+1} = max(E_i,
U_i(1 − c_i/D_i)_+) from the bottom (exact below an isolated atom), a backward one from the top
(forced: beyond the grid f̃_opt must not exceed P[L = ∞]), joined at a node between the two ends.
Negative masses of the result (concave kinks) are then removed by splitting them between their
neighbours preserving P- and Q-mass, which replaces a concave kink by a chord below it and so only
lowers f̃_opt. Every step lowers or keeps the profile below the true one, so δ̃_opt ≤ δ at every t.
Fallback (if the construction fails its own checks): rounding every loss down, tails dropped.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from sharpdp._pld_pairs import GridContents

__all__ = ["optimistic_masses", "pessimistic_masses", "rounded_down_masses"]

FloatArray = npt.NDArray[np.float64]
U = 2.0**-53


def pessimistic_masses(c: GridContents) -> tuple[FloatArray, float]:
    """Connect-the-dots masses on nodes lo..hi and the mass at +∞, from upper bounds of contents.

    Every content enters with a non-negative coefficient, so using upper bounds (value + error)
    only adds mass (pessimistic); the sums of non-negative terms are rounded up by a relative 8u.
    """
    h = c.h
    f_up = 1.0 / -math.expm1(-h)
    f_dn = 1.0 / math.expm1(h)
    m = c.atoms + c.atoms_err
    m[1:] += (c.d + c.d_err) * f_up
    m[:-1] += (c.u + c.u_err) * f_dn
    m[0] += c.p_low + c.p_low_err
    m[-1] += c.eq_up + c.eq_up_err
    m *= 1.0 + 16 * U
    inf = (c.p_inf + c.d_up + c.d_up_err) * (1.0 + 8 * U)
    return m, min(inf, 1.0)


def rounded_down_masses(c: GridContents) -> tuple[FloatArray, float]:
    """Every finite loss rounded down to the grid, the low tail dropped (lower bounds of contents)."""
    h = c.h
    dl = np.maximum(c.d - c.d_err, 0.0)
    ul = np.maximum(c.u - c.u_err, 0.0)
    cell_p = (dl + ul * math.exp(-h)) / -math.expm1(-h)
    m = np.maximum(c.atoms - c.atoms_err, 0.0)
    m[:-1] += cell_p
    m[-1] += max(c.eq_up - c.eq_up_err, 0.0) + max(c.d_up - c.d_up_err, 0.0)
    m *= 1.0 - 16 * U
    return np.maximum(m, 0.0), c.p_inf


def _forward(e: FloatArray, d: FloatArray, u: FloatArray, start: float) -> FloatArray:
    """c_lo = start, c_{i+1} = max(E_i, U_i (1 − c_i/D_i)_+): the cell conditions hold with equality
    or slack. Jacobi sweeps (each fixes one more link of every dependency chain), then a loop."""
    n = e.size
    ratio = np.where(d > 0.0, u / np.where(d > 0.0, d, 1.0), 0.0)
    c = np.empty(n + 1)
    c[0] = start
    c[1:] = e
    for _ in range(64):
        nxt = np.maximum(e, np.maximum(u - ratio * c[:-1], 0.0))
        nxt = np.where(d > 0.0, nxt, e)
        if np.array_equal(nxt, c[1:]):
            return c
        c[1:] = nxt
    for i in range(n):  # pragma: no cover - long dependency chains are rare
        c[i + 1] = e[i] if d[i] <= 0.0 else max(e[i], u[i] - ratio[i] * c[i], 0.0)
    return c


def _backward(e: FloatArray, d: FloatArray, u: FloatArray, end: float) -> FloatArray:
    """c_hi = end, c_i = max(E_i, D_i (1 − c_{i+1}/U_i)_+) (mirror of :func:`_forward`)."""
    rev = _forward(e[::-1], u[::-1], d[::-1], end)
    return rev[::-1].copy()


def optimistic_masses(c: GridContents, pivot: int | None = None) -> tuple[FloatArray, float]:
    """Optimistic masses on nodes lo..hi and at +∞ (see the module docstring): δ̃ ≤ δ everywhere.

    Args:
        c: the grid contents (with error bounds).
        pivot: a node index (absolute) where the forward and backward deficits are joined; by
            default the node nearest to the mean loss.
    """
    h = c.h
    n = c.hi - c.lo + 1
    eh = math.exp(h)
    emh = math.exp(-h)
    ehm1 = math.expm1(h)
    f_up = 1.0 / -math.expm1(-h)
    dbar = c.d + c.d_err
    ubar = c.u + c.u_err
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.where(dbar + ubar > 0.0, dbar * ubar / (dbar + ubar), 0.0)
    e = e * (1.0 + 8 * U)
    # lower-bound connect-the-dots masses (every coefficient non-negative)
    m = np.maximum(c.atoms - c.atoms_err, 0.0)
    m[1:] += np.maximum(c.d - c.d_err, 0.0) * f_up
    m[:-1] += np.maximum(c.u - c.u_err, 0.0) / ehm1
    m[0] += max(c.p_low - c.p_low_err, 0.0)
    m[-1] += max(c.eq_up - c.eq_up_err, 0.0)
    m *= 1.0 - 16 * U
    d_up_low = max(c.d_up - c.d_up_err, 0.0) * (1.0 - 4 * U)
    fwd = _forward(e, dbar, ubar, (c.u_low + c.u_low_err) * (1.0 + 4 * U))
    bwd = _backward(e, dbar, ubar, d_up_low)
    total = fwd + bwd
    if pivot is None:
        t = (np.arange(c.lo, c.hi + 1)) * h
        weight = m.sum()
        mean = float((m * t).sum() / weight) if weight > 0 else 0.0
        pivot_i = int(np.argmin(np.abs(t - mean)))
    else:
        pivot_i = min(max(pivot - c.lo, 0), n - 1)
    best = float(total.min())
    cand = np.nonzero(total <= best * (1.0 + 1e-9) + 1e-300)[0]
    j = int(cand[np.argmin(np.abs(cand - pivot_i))])
    dfc = np.empty(n)
    dfc[:j] = fwd[:j]
    dfc[j] = max(fwd[j], bwd[j])
    dfc[j + 1 :] = bwd[j + 1 :]
    dfc *= 1.0 + 1e-12  # the recursions' rounding (a few u, relative)
    # Pin the top: where the deficit reaches R_k = f̃_ctd(x_k) − P[L = ∞] the optimistic profile
    # is flat at P[L = ∞] from x_k on (masses above exactly 0). R_k = d_up + S_k with
    # S_k = (1 − e^{−h}) A_{k+1} + e^{−h} S_{k+1}, A_k = Σ_{j ≥ k} M_j.
    tail_sum = np.cumsum(m[::-1])[::-1]  # A_k
    r_rel = 1e-9  # relative error of the suffix sums and of the recursion below
    s_k = 0.0
    r = [d_up_low]  # R for k = n-1, n-2, ... (built from the top)
    k = n - 1
    while True:
        r_k = r[-1]
        if k == n - 1 or dfc[k] >= r_k * (1.0 - r_rel):
            dfc[k] = r_k
            if k == 0:
                break
        else:
            nxt = dfc[k + 1]  # pinned: its deficit is R_{k+1}
            lhs = _cell_slack(dfc[k], nxt * (1.0 - r_rel), dbar[k], ubar[k])
            if lhs >= 1.0:
                break
            dfc[k] = dbar[k] * max(0.0, 1.0 - nxt * (1.0 - r_rel) / ubar[k]) * (1.0 + 1e-12)
            if dfc[k] < r_k * (1.0 - r_rel):
                break
            dfc[k] = r_k
            if k == 0:
                break
        s_k = (1.0 - emh) * float(tail_sum[k]) + emh * s_k
        r.append(d_up_low + s_k)
        k -= 1
    top = k + 1 if dfc[k] < r[-1] * (1.0 - r_rel) or k > 0 else 0
    if top == 0:
        # everything pinned: the profile is the chord from (0, 1) to (x_lo, P[∞]), valid iff the
        # low tail's condition c_lo >= u_low holds
        if r[-1] * (1.0 - r_rel) < (c.u_low + c.u_low_err):
            return rounded_down_masses(c)
        w = np.zeros(n)
        w[0] = max(0.0, 1.0 - c.p_inf) * (1.0 - 1e-12)
        return w, c.p_inf
    r_top = r[n - 1 - top]  # R_top
    r_below = r[n - top]  # R_{top-1}
    dfc[top] = r_top * (1.0 + r_rel)  # used for the slope jump at top-1: rounds its mass down
    # M_opt = M_ctd − e^{t_i}γ_i, γ the slope jumps of C (C(0) = 0)
    corr = np.zeros(n)
    scale = np.zeros(n)
    diff = np.diff(dfc)  # c_{i+1} − c_i
    corr[1:-1] = (diff[1:] - eh * diff[:-1]) / ehm1
    corr[0] = diff[0] / ehm1 - dfc[0]
    scale[1:-1] = (np.abs(dfc[2:]) + (1.0 + eh) * np.abs(dfc[1:-1]) + eh * np.abs(dfc[:-2])) / ehm1
    scale[0] = (np.abs(dfc[1]) + np.abs(dfc[0])) / ehm1 + np.abs(dfc[0])
    w = m - corr - 16 * U * (scale + m)
    # node `top`: the slope jumps from −(R_{top-1} − c_{top-1})/Δx to 0
    w[top] = (r_below * (1.0 - r_rel) - dfc[top - 1]) * f_up * (1.0 - 16 * U)
    w[top + 1 :] = 0.0
    if w[top] < 0.0:
        return rounded_down_masses(c)
    head, ok = _remove_negatives(w[: top + 1], h)
    if not ok or not np.all(np.isfinite(head)):
        return rounded_down_masses(c)
    w[: top + 1] = head
    return w, c.p_inf


def _cell_slack(ca: float, cb: float, d: float, u: float) -> float:
    """c_a/D + c_b/U (>= 1: the deficits dominate the cell's chord excess; empty cells: inf)."""
    if d <= 0.0 or u <= 0.0:
        return math.inf
    return ca / d + cb / u


def _remove_negatives(w: FloatArray, h: float) -> tuple[FloatArray, bool]:
    """Split negative masses between neighbours preserving P- and Q-mass (each split replaces a
    concave kink of the profile by the chord below it: lowering), then carry what remains upward
    (moving a negative mass to a larger loss also lowers the profile). The last node must end
    non-negative (above it the profile is pinned); returns (masses rounded down, success)."""
    eh = math.exp(h)
    to_left = 1.0 / (1.0 + eh)
    to_right = eh / (1.0 + eh)
    w = w.copy()
    n = w.size
    if n == 1:
        return np.maximum(w, 0.0), bool(w[0] >= 0.0)
    for _ in range(400):
        neg = np.minimum(w[:-1], 0.0)
        if not neg.any():
            break
        w[:-1] -= neg
        # interior nodes: split; bottom node: everything to the next node (its left neighbour is
        # x = 0, loss −∞, which carries no P-mass)
        w[:-2] += neg[1:] * to_left
        w[2:] += neg[1:] * to_right
        w[1] += neg[0]
    neg_idx = np.nonzero(w[:-1] < 0.0)[0]
    if neg_idx.size:
        carry = 0.0
        for i in range(int(neg_idx[0]), n):
            v = w[i] + carry
            if v < 0.0 and i < n - 1:
                w[i] = 0.0
                carry = v
            else:
                w[i] = v
                carry = 0.0
    if w[-1] < 0.0:
        return w, False
    # the splits are exact up to a few ulps per step; round the result down
    return np.maximum(w * (1.0 - 1e-12) - 1e-300, 0.0), True
