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

**Optimistic.** f̃_opt = f̃_ctd − C where f̃_ctd is connect the dots built from *lower* bounds of
the contents with the low tail (below the grid) dropped — on [0, x_lo] what is kept then has an
exactly linear profile, so no deficit is needed there — and C ≥ 0 interpolates "deficits" c_i at
the grid points (C(0) = 0, constant beyond the grid). On a cell with contents D, U the chord excess
of connect the dots over f is at most the triangle height E = DU/(D + U) (f lies above both
one-sided tangents at the cell's ends, whose slopes differ by the cell's Q-mass), and C dominates
it on the cell iff c_a/D + c_b/U ≥ 1 (linear in 1/D, 1/U: upper bounds of D, U are safe).

* Deficits: a forward recursion c_{i+1} = max(E_i, U_i(1 − c_i/D_i)_+) from c_lo = 0 (it merges an
  off-grid bottom atom upwards with the mass above it) and a backward one from the top, joined at a
  node near the mean loss. A cell whose content sits within 1e-6 of a node takes that node instead.
  With c_lo = 0 and C constant beyond the grid, C keeps the total P- and Q-mass of connect the
  dots, so like a contraction the construction is exact to first order: its error does not grow
  linearly with the number of compositions.
* The top is pinned: from the highest node whose deficit reaches f̃_ctd − P[L = ∞] on, the profile
  is flat at P[L = ∞] (masses exactly 0 above), as it must be where f is.
* Negative masses of the result (concave kinks) are removed by the lower convex hull: a negative
  mass is split between its nearest non-zero neighbours preserving P- and Q-mass, which replaces
  the kink by the chord below it (lowering).

Every step lowers the profile or keeps it below the true one, so δ̃_opt ≤ δ at every t. Float
errors are tracked and subtracted. Fallback (when a check fails): every loss rounded down, tails
dropped. An atom off the grid with no mass nearby (randomized response with an ε incommensurate
with h) cannot be lowered locally: there the optimistic error is O(h) per atom.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from sharpdp.accounting.pld.pairs import GridContents
from sharpdp.errors import NumericalError

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
    f_dn = math.exp(-h) / -math.expm1(-h)  # 1/(e^h − 1), without overflow for h > 709
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
    or slack, by a plain loop over Python floats (the recursion is sequential: measured faster
    than vectorised Jacobi sweeps, whose dependency chains run as long as the grid).

    A cell whose content sits essentially on its lower node (D_i ≤ 1e-6·U_i) instead takes the
    deficit D_i at that node (rounding it down by a negligible amount) rather than forcing U_i at
    the next node (moving it up a whole cell): deficits may always be raised.

    Forced steps are filled without the loop: every step gives c_{i+1} ≥ E_i, and from c_i ≥ E_i
    the step gives exactly E_i (U_i(1 − c_i/D_i) = E_i − (U_i/D_i)(c_i − E_i) with E = DU/(D + U)
    before the 8u pad, which exceeds the few ulps of U_i by which the float step can err), so
    wherever E_i ≤ E_{i−1}, c_{i+1} = E_i whatever came before. The loop runs over the other
    cells only (those where E rises: half a bell-shaped density, none of the backward recursion
    over a Laplace pair's rising density), with the same float operations as over all of them.
    """
    forced = np.zeros(e.size, dtype=bool)
    forced[1:] = e[1:] <= e[:-1]
    out = np.empty(e.size + 1)
    out[0] = start
    idx = np.nonzero(forced)[0]
    out[idx + 1] = e[idx]
    ee, dd, uu = e.tolist(), d.tolist(), u.tolist()
    values = out.tolist()
    for i in np.nonzero(~forced)[0].tolist():
        di, ui = dd[i], uu[i]
        ci = values[i]
        if di <= 1e-6 * ui and di > ci:
            ci = di
            values[i] = ci
        ei = ee[i]
        if di > 0.0:
            v = ui - ui / di * ci
            if v > ei:
                ei = v
            if ei < 0.0:
                ei = 0.0
        values[i + 1] = ei
    out = np.array(values)
    # the raise of a forced cell's own deficit does not change the next one (c_{i+1} = E_i)
    raise_ = forced & (d <= 1e-6 * u) & (d > out[:-1])
    out[:-1][raise_] = d[raise_]
    return out


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
    if h > 700.0:  # e^h below overflows; such a grid says nothing optimistic anyway
        raise NumericalError(f"the grid step {h!r} is too coarse for the optimistic PLD")
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
    # the low tail (L < t_lo) is dropped: then on [0, x_lo] the profile of what is kept is linear
    # and exact, so no deficit is needed there (C(0) = 0 and c_lo = 0)
    m[-1] += max(c.eq_up - c.eq_up_err, 0.0)
    m *= 1.0 - 16 * U
    d_up_low = max(c.d_up - c.d_up_err, 0.0) * (1.0 - 4 * U)
    fwd = _forward(e, dbar, ubar, 0.0)
    bwd = _backward(e, dbar, ubar, d_up_low)
    total = fwd + bwd
    if pivot is None:
        t = (np.arange(c.lo, c.hi + 1)) * h + c.phase
        weight = m.sum()
        mean = float((m * t).sum() / weight) if weight > 0 else 0.0
        pivot_i = int(np.argmin(np.abs(t - mean)))
    else:
        pivot_i = min(max(pivot - c.lo, 0), n - 1)
    # The junction must be strictly inside: then C(0) = 0, C'(0) = c_lo/x_lo with c_lo = u_low
    # (the forward start) and C = d_up beyond the grid, so the optimistic law keeps the P- and
    # Q-mass of connect-the-dots up to the tails (first-order exactness, like a contraction).
    j = min(max(pivot_i, 1), n - 2) if n > 2 else n - 1
    del total
    dfc = np.empty(n)
    dfc[:j] = fwd[:j]
    dfc[j] = max(fwd[j], bwd[j])
    dfc[j + 1 :] = bwd[j + 1 :]
    dfc *= 1.0 + 1e-12  # the recursions' rounding (a few u, relative)
    # Pin the top: where the deficit reaches R_k = f̃_ctd(x_k) − P[L = ∞] the optimistic profile
    # is flat at P[L = ∞] from x_k on (masses above exactly 0). R_k = d_up + S_k with
    # S_k = (1 − e^{−h}) A_{k+1} + e^{−h} S_{k+1}, A_k = Σ_{j ≥ k} M_j.
    tail_sum = np.cumsum(m[::-1])[::-1]  # A_k
    # 1 − e^{−h} by expm1: as 1.0 − e^{−h} it lost its digits on fine grids (relative error
    # u/h: 1e-3 at h = 1e-13), which the top node's mass, R/(1 − e^{−h}), carried in full
    one_minus_emh = -math.expm1(-h)
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
        s_k = one_minus_emh * float(tail_sum[k]) + emh * s_k
        r.append(d_up_low + s_k)
        k -= 1
    top = k + 1 if dfc[k] < r[-1] * (1.0 - r_rel) or k > 0 else 0
    if top == 0:
        # everything pinned: the profile would be a chord from (0, ·) to (x_lo, P[∞]) with a
        # deficit at x_lo, which the low-tail-free start does not allow
        return rounded_down_masses(c)
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


def _remove_isolated_negatives(
    w: FloatArray, nz: npt.NDArray[np.int64], h: float
) -> tuple[FloatArray, bool] | None:
    """:func:`_remove_negatives` in numpy when every negative node has non-negative non-zero
    neighbours that stay non-negative after its transfers (the common case): the same
    transfers, shares and error terms. None when that does not hold (the loop then runs)."""
    vals = w[nz]
    neg = np.nonzero(vals < 0.0)[0]
    m = nz.size
    if neg[-1] == m - 1:
        return w, False
    if neg.size > 1 and np.any(np.diff(neg) == 1):
        return None
    v = vals[neg]
    right = neg + 1
    left = neg - 1
    b = (nz[right] - nz[neg]) * h
    has_left = left >= 0
    a = np.where(has_left, (nz[neg] - nz[np.maximum(left, 0)]) * h, 1.0)
    denom = -np.expm1(-(a + b))
    share_l = np.where(has_left, np.exp(-a) * -np.expm1(-b) / denom, 0.0)
    share_r = np.where(has_left, -np.expm1(-a) / denom, 1.0)
    new = vals.copy()
    err = np.zeros(m)
    new[neg] = 0.0
    np.add.at(new, right, v * share_r)
    np.add.at(err, right, 8 * U * np.abs(v) * share_r)
    np.add.at(new, left[has_left], (v * share_l)[has_left])
    np.add.at(err, left[has_left], (8 * U * np.abs(v) * share_l)[has_left])
    if np.any(new[right] < 0.0) or np.any(new[left[has_left]] < 0.0):
        return None
    alive = np.ones(m, dtype=bool)
    alive[neg] = False
    out = np.zeros(w.size)
    out[nz[alive]] = np.maximum(new[alive] - err[alive], 0.0)
    return out * (1.0 - 1e-12), True


def _remove_negatives(w: FloatArray, h: float) -> tuple[FloatArray, bool]:
    """The greatest convex minorant (lower hull) of the profile, computed on the masses.

    A node with a negative mass (a concave kink of the profile) is removed by splitting its mass
    between its nearest non-zero neighbours preserving P- and Q-mass, which replaces the kink by
    the chord below it (lowering); neighbours that turn negative are removed in turn (a stack
    over a linked list, each node removed at most once). For nodes at losses t_L < t_p < t_R with
    a = t_p − t_L, b = t_R − t_p the shares of P-mass are expm1(b)/expm1(a + b) to the left and
    e^b·expm1(a)/expm1(a + b) to the right; the bottom node's left neighbour is x = 0 (loss −∞,
    no P-mass): all to the right. The last node must end non-negative (the profile is pinned
    above it). Float error of every transfer is tracked and subtracted; returns (masses, ok).
    """
    w = w.copy()
    n = w.size
    if not (w < 0.0).any():
        return w, True
    nz = np.nonzero(w != 0.0)[0]
    if nz[-1] != n - 1:
        nz = np.append(nz, n - 1)
    quick = _remove_isolated_negatives(w, nz, h)
    if quick is not None:
        return quick
    # The removals cascade outwards from the negative nodes, usually over a few dozen to a few
    # hundred nodes of grids up to 10^5: run the loop on the non-zero nodes up to the last
    # negative one and a margin, widened (×4) until the cascade stays inside. Nodes beyond the
    # window are untouched then (no removal reached them), so the result is the same.
    m = nz.size
    last_negative = int(np.nonzero(w[nz] < 0.0)[0][-1])
    width = min(m, last_negative + 1 + _HULL_MARGIN)
    while True:
        done = _hull_loop(w, nz[:width].tolist(), h, whole=width == m)
        if done is not None:
            return done
        width = min(m, 4 * width)


#: Non-zero nodes beyond the last negative one given to the lower-hull loop at first.
_HULL_MARGIN = 64


def _hull_loop(
    w: FloatArray, pos: list[int], h: float, whole: bool
) -> tuple[FloatArray, bool] | None:
    """The loop of :func:`_remove_negatives` on the non-zero nodes ``pos`` (every negative node
    among them): all of them (``whole``), or a leading window of them, whose last node must then
    stay non-negative — None when it would be removed (its right neighbour lies outside). Values
    only decrease (every transfer is a negative mass times a positive share), so a node that
    turns negative stays so until removed."""
    n = w.size
    m = len(pos)
    prev = list(range(-1, m - 1))
    nxt = list(range(1, m + 1))
    alive = [True] * m
    val = [float(w[i]) for i in pos]
    err = [0.0] * m
    stack = [k for k in range(m) if val[k] < 0.0]
    stack.reverse()
    while stack:
        k = stack.pop()
        if not alive[k] or val[k] >= 0.0:
            continue
        if k == m - 1:
            return (w, False) if whole else None
        v = val[k]
        right = nxt[k]
        left = prev[k]
        b = (pos[right] - pos[k]) * h
        if left < 0:
            share_r = 1.0
        else:
            a = (pos[k] - pos[left]) * h
            denom = -math.expm1(-(a + b))
            share_l = math.exp(-a) * -math.expm1(-b) / denom
            share_r = -math.expm1(-a) / denom
            val[left] += v * share_l
            err[left] += 8 * U * abs(v) * share_l + err[k] * share_l
            nxt[left] = right
            if val[left] < 0.0:
                stack.append(left)
        val[right] += v * share_r
        err[right] += 8 * U * abs(v) * share_r + err[k] * share_r
        prev[right] = left
        alive[k] = False
        if val[right] < 0.0:
            stack.append(right)
    # beyond a window: the masses as they are (all non-negative, no transfer reached them)
    out = np.zeros(n) if whole else np.array(w, dtype=np.float64)
    for k in range(m):
        out[pos[k]] = max(val[k] - err[k], 0.0) if alive[k] else 0.0
    # the remaining transfers' rounding is covered by the error terms; round down once more
    return out * (1.0 - 1e-12), bool(val[m - 1] >= 0.0) if whole else True
