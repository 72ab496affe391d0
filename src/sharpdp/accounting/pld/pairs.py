"""Dominating pairs of privacy loss and their exact contents on a grid of loss values.

A dominating pair (P, Q) is described by the law of its privacy loss L = log(P/Q)(Y), Y ~ P: a
finite part (atoms and/or a density) and a mass ``inf_mass`` at L = +∞. Every pair here is
*symmetric*: the law of L under P equals the law of −L under Q (a measure-preserving relabelling of
the outcomes swaps P and Q), so the pair dominates a mechanism in both orders of a neighbouring pair
at once, and its profile obeys δ(−ε) = 1 − e^{−ε} + e^{−ε} δ(ε).

The discretisations (:mod:`sharpdp.accounting.pld.grid`) need, for a grid of nodes t_i = i·h + φ,
i = lo..hi (the phase φ puts a pair's heaviest atom on a node), the following exact functionals of
the law of L under P ("grid contents"):

* ``atoms[i]``: P[L = t_i];
* for each open cell (t_i, t_{i+1}): D_i = E_P[1 − e^{t_i − L}; cell] and U_i = E_P[e^{t_{i+1} − L} − 1;
  cell] (both ≥ 0; P[cell] = (D_i + e^{−h} U_i)/(1 − e^{−h}));
* below the grid: p_low = P[L < t_lo] and u_low = E_P[e^{t_lo − L} − 1; L < t_lo];
* above the grid: eq_up = e^{t_hi} Q[t_hi < L < ∞] and d_up = E_P[1 − e^{t_hi − L}; t_hi < L < ∞];
* p_inf = P[L = ∞].

Each functional comes with an absolute error bound covering floating-point evaluation, assuming
scipy's normal CDF/log-CDF are accurate to :data:`SPECIAL_ULPS` ulps (Cephes-based ``ndtr`` and
``log_ndtr`` are accurate to a few ulps; the margin is deliberately generous). Narrow Gaussian
cells are integrated by Gauss–Legendre quadrature with a Cauchy-estimate remainder instead (no
cancellation). The loss values of atoms are the float ones computed from the (float) parameters;
atoms within a few ulps of a node are put on it, and the discretised PLD carries a ``loss_margin``
(8u·(max|L| + h) per pair) by which its reported ε is raised, covering both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from sharpdp import _divergences, _math
from sharpdp.errors import InvalidParameter, NumericalError

__all__ = [
    "SPECIAL_ULPS",
    "BoundedRangePair",
    "DominatingPair",
    "FinitePair",
    "GaussianPair",
    "GridContents",
    "LaplacePair",
    "approx_dp_pair",
    "discrete_gaussian_pair",
    "discrete_laplace_pair",
    "randomized_response_pair",
]

FloatArray = npt.NDArray[np.float64]
ComplexArray = npt.NDArray[np.complex128]

U = 2.0**-53
#: Accuracy assumed for scipy's special functions, in ulps (relative).
SPECIAL_ULPS = 64.0
_KAPPA = SPECIAL_ULPS * U
#: Largest number of atoms materialised for a discrete Laplace pair (Δ + 1 of them). Measured: Δ =
#: 5·10⁶ took 3.7 s and 1.4 GiB per composition, so the old limit of 2·10⁷ meant about 6 GiB. Past
#: it the PLD and MGF analyses decline, and RDP and KOV bound the item.
MAX_ATOMS = 2**22


@dataclass(slots=True)
class GridContents:
    """Exact functionals of the loss law on the grid t_i = i·h + phase, i = lo..hi (see the module
    docstring; the node value is the float sum fl(i·h) + phase).

    Every ``x`` has an ``x_err``: the true value lies in [x − x_err, x + x_err].
    """

    h: float
    lo: int
    hi: int
    phase: float
    atoms: FloatArray
    atoms_err: FloatArray
    d: FloatArray
    d_err: FloatArray
    u: FloatArray
    u_err: FloatArray
    p_low: float
    p_low_err: float
    u_low: float
    u_low_err: float
    eq_up: float
    eq_up_err: float
    d_up: float
    d_up_err: float
    p_inf: float

    @classmethod
    def empty(cls, h: float, lo: int, hi: int, phase: float, p_inf: float) -> GridContents:
        """Contents with nothing in them (to be accumulated into)."""
        n = hi - lo
        z = np.zeros
        return cls(
            h, lo, hi, phase, z(n + 1), z(n + 1), z(n), z(n), z(n), z(n),
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, p_inf,
        )  # fmt: skip


class DominatingPair:
    """Base class of symmetric dominating pairs, described by the law of the privacy loss.

    Subclassing contract: implement :meth:`delta` (the exact profile for every real ε),
    :meth:`log_mgf` (log E_P[e^{βL}; L < ∞]), :meth:`_range` (a loss interval holding all finite
    mass but ≤ ``tail`` on each side) and :meth:`_contents` (the grid contents, with error bounds).
    """

    __slots__ = ()

    #: Spacing of a lattice holding every atom of the loss law (grids aligned with it discretise
    #: the atoms exactly), or None.
    def lattice(self) -> float | None:
        return None

    def atom_count(self) -> int:
        """How many atoms the pair lists (0 for closed forms): the cost of discretising it."""
        return 0

    @property
    def inf_mass(self) -> float:
        """P[L = ∞]."""
        return 0.0

    def delta(self, epsilon: float) -> float:  # pragma: no cover - abstract
        """Exact privacy profile δ(ε) = E_P[(1 − e^{ε − L})_+] + P[L = ∞], any real ε (or ±inf)."""
        raise NotImplementedError

    def log_mgf(self, beta: FloatArray) -> FloatArray:  # pragma: no cover - abstract
        """log E_P[e^{βL}; L < ∞] for each β (``inf`` where infinite)."""
        raise NotImplementedError

    def tilted_cf(self, a: float, omega: FloatArray) -> tuple[ComplexArray, FloatArray] | None:
        """The characteristic function of the loss law tilted by e^{aL} (a > 0), with error bounds.

        φ(ω) = E_P[e^{(a+iω)L}; L < ∞] / e^{m}, where m is :meth:`log_mgf` at a *as computed in
        floating point* (so φ(0) ≈ 1 and the normalisation cancels exactly in
        :mod:`sharpdp.accounting.analyses.mgf`). Returns (φ(ω), e(ω)) with |φ̃ − φ| ≤ e for the computed φ̃,
        or None when this pair has no closed form (the inversion analysis then does not apply).
        """
        return None

    def cf_envelope(self, a: float, omega: float) -> float:
        """A bound on |φ(ω′)| (see :meth:`tilted_cf`) for every ω′ ≥ ω ≥ 0, non-increasing in ω.

        Pairs whose law has a density part bound it below 1 for large ω (the Gaussian's decays
        to 0); purely atomic laws are periodic or almost periodic, so their envelope is their
        total tilted mass, about 1.
        """
        return 1.0 + 64.0 * U

    def mgf_slack(self) -> float:
        """A bound on log(true MGF / MGF of the listed masses) at every real argument, for masses
        known only to a relative error (0 for closed forms)."""
        return 0.0

    def gdp_mu(self) -> float | None:
        """μ if this is the μ-GDP pair (N(0,1), N(μ,1)) — such pairs compose exactly, to the
        pair with μ = √(Σ μ_i²) — else None."""
        return None

    def weaker(self, step: float) -> DominatingPair:
        """A pair dominated by this one (its profile is lower at every ε), taken from a geometric
        grid of relative ``step`` in the parameter of an ordered family, so that nearby pairs
        merge; for lower bounds only. By default the pair itself."""
        return self

    def top_loss(self) -> float | None:
        """The essential supremum of the finite loss (the least ε with δ(ε) = P[L = ∞]), as
        computed from the float parameters (within ``8u·loss_bound`` of the exact one), or None
        when it is not known in closed form."""
        return None

    def loss_bound(self) -> float:
        """A bound on |L| over the finite atoms/support used (for rounding margins)."""
        lo, hi = self._range(1e-300)
        return max(abs(lo), abs(hi))

    def mean(self) -> float:
        """E_P[L | L < ∞] (the KL divergence when there is no mass at ∞)."""
        b = np.array([-1e-4, 1e-4])
        m = self.log_mgf(b)
        return float((m[1] - m[0]) / 2e-4)

    def variance(self) -> float:
        """Var_P[L | L < ∞] (from a symmetric second difference of the log-MGF)."""
        b = np.array([-1e-3, 0.0, 1e-3])
        m = self.log_mgf(b)
        return max(0.0, float((m[0] - 2.0 * m[1] + m[2]) / 1e-6))

    def _range(self, tail: float) -> tuple[float, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _contents(
        self, h: float, lo: int, hi: int, phase: float
    ) -> GridContents:  # pragma: no cover
        raise NotImplementedError

    def anchor(self) -> float | None:
        """The loss of the heaviest atom (aligned with a grid node by :meth:`phase`), or None."""
        return None

    def phase(self, h: float) -> float:
        """The grid phase φ for spacing h: the anchor atom then lies exactly on the node
        fl(i·h) + φ (φ = anchor − fl(i·h) with i = ⌊anchor/h⌋, a float in about [0, h))."""
        a = self.anchor()
        if a is None:
            return 0.0
        return a - math.floor(a / h) * h

    def grid_range(self, h: float, tail: float, phase: float = 0.0) -> tuple[int, int]:
        """Node indices lo < hi such that the grid covers the loss range of :meth:`_range`."""
        a, b = self._range(tail)
        lo = math.floor((a - phase) / h)
        hi = math.ceil((b - phase) / h)
        # make the float nodes fl(i·h) + φ really enclose [a, b] (the end atoms must not fall
        # outside the grid by an ulp: the optimistic discretisation drops what lies below it)
        while lo * h + phase > a:
            lo -= 1
        while hi * h + phase < b:
            hi += 1
        if hi <= lo:
            hi = lo + 1
        return lo, hi

    def contents(self, h: float, lo: int, hi: int, phase: float = 0.0) -> GridContents:
        """Grid contents on nodes lo..hi (validated: finite, non-negative values)."""
        if not (h > 0.0 and math.isfinite(h)):
            raise InvalidParameter(f"value_discretization must be > 0 and finite, got {h!r}")
        c = self._contents(h, lo, hi, phase)
        for name in ("atoms", "d", "u"):
            arr = getattr(c, name)
            if not np.all(np.isfinite(arr)):
                raise NumericalError(f"grid contents {name} of {self!r} are not finite (a bug)")
        return c


def round_down_geometric(x: float, step: float) -> float:
    """The largest (1 + step)^j ≤ x (j an integer), for 0 < x < ∞ and step > 0; else x."""
    if step <= 0.0 or not (0.0 < x < math.inf):
        return x
    g = math.log1p(step)
    y = math.exp(math.floor(math.log(x) / g) * g)
    while y > x:  # the float exp may land a hair above x
        y *= 1.0 - 4 * U
    return y


# -------------------------------------------------------------------------------------------------
# atoms


def _check_cell_width(h: float) -> None:
    """Refuse a grid whose cells reach e^700: the contents' weights e^{t − l} − 1 overflow there
    (two discrete Gaussians at σ = 0.05 asked ε(0) of a grid 1,000 wide per cell, and an
    OverflowError escaped); the PLD then declines and the other analyses answer."""
    if h > 700.0:
        raise NumericalError(f"a grid cell of width {h:g} is too wide for the PLD's weights")


def _add_atom(acc: GridContents, loss: float, m: float, rel_err: float) -> None:
    """One atom, in scalar arithmetic: the same computation as :func:`_add_atoms` (faster for the
    two or three atoms of randomized response and the Laplace mechanism)."""
    h, lo, hi, ph = acc.h, acc.lo, acc.hi, acc.phase
    t_lo, t_hi = lo * h + ph, hi * h + ph
    _check_cell_width(h)
    ae = U * (abs(loss) + 2 * max(abs(t_lo), abs(t_hi))) + 4 * U * h
    me = m * rel_err
    if loss < t_lo:
        # (u_low, which this feeds, may be huge and is not used by the masses: no overflow)
        term = math.expm1(t_lo - loss) if t_lo - loss < 709.0 else math.inf
        acc.p_low += m
        acc.p_low_err += me + 4 * U * m
        acc.u_low += m * term
        acc.u_low_err += m * (term + 1.0) * (ae + 8 * U) + me * term
        return
    if loss > t_hi:
        x = t_hi - loss
        e = math.exp(x)
        dterm = -math.expm1(x)
        acc.eq_up += m * e
        acc.eq_up_err += m * e * (ae + 8 * U) + me * e
        acc.d_up += m * dterm
        acc.d_up_err += m * (ae + 8 * U * dterm) + me * dterm
        return
    i = math.floor((loss - ph) / h)
    if i * h + ph > loss:
        i -= 1
    if (i + 1) * h + ph <= loss:
        i += 1
    i = min(max(i, lo), hi)
    snap = 4 * U * (abs(loss) + max(abs(t_lo), abs(t_hi)) + h)
    if i < hi and ((i + 1) * h + ph) - loss <= snap:
        i += 1
    if abs((i * h + ph) - loss) <= snap:
        acc.atoms[i - lo] += m
        acc.atoms_err[i - lo] += me + 2 * U * m
        return
    if i >= hi:  # pragma: no cover - guarded by the on-node test at t_hi
        raise NumericalError("atom above the grid in a cell (a bug)")
    dterm = -math.expm1((i * h + ph) - loss)
    uterm = math.expm1(((i + 1) * h + ph) - loss)
    j = i - lo
    acc.d[j] += m * dterm
    acc.d_err[j] += m * (ae * (1.0 - dterm) + 4 * U * dterm) + me * dterm
    acc.u[j] += m * uterm
    acc.u_err[j] += m * (ae * (1.0 + uterm) + 4 * U * uterm) + me * uterm


def _add_atoms(acc: GridContents, losses: FloatArray, masses: FloatArray, rel_err: float) -> None:
    """Accumulate the contents of atoms (loss l, P-mass m) into ``acc`` (vectorised, exact).

    The terms 1 − e^{t − l} and e^{t − l} − 1 are evaluated with ``expm1`` on arguments in (−h, h)
    for in-grid atoms; their error comes from the float node value t = i·h (half an ulp of |t|) and
    from ``expm1`` itself, both included with the masses' own relative error ``rel_err``.
    """
    h, lo, hi, ph = acc.h, acc.lo, acc.hi, acc.phase
    keep = masses > 0.0
    losses, masses = losses[keep], masses[keep]
    if losses.size == 0:
        return
    if losses.size <= 8:
        for loss_, mass in zip(losses.tolist(), masses.tolist(), strict=True):
            _add_atom(acc, loss_, mass, rel_err)
        return
    t_lo, t_hi = lo * h + ph, hi * h + ph
    _check_cell_width(h)
    arg_err = U * (np.abs(losses) + 2 * max(abs(t_lo), abs(t_hi))) + 4 * U * h
    merr = masses * rel_err
    low = losses < t_lo
    up = losses > t_hi
    mid = ~(low | up)
    if low.any():
        m, lo_l = masses[low], losses[low]
        x = t_lo - lo_l
        term = np.expm1(x)
        acc.p_low += float(m.sum())
        acc.p_low_err += float(merr[low].sum()) + 4 * U * float(m.sum())
        acc.u_low += float((m * term).sum())
        acc.u_low_err += float((m * (term + 1.0) * (arg_err[low] + 8 * U) + merr[low] * term).sum())
    if up.any():
        m, up_l = masses[up], losses[up]
        x = t_hi - up_l
        e = np.exp(x)
        dterm = -np.expm1(x)
        acc.eq_up += float((m * e).sum())
        acc.eq_up_err += float((m * e * (arg_err[up] + 8 * U) + merr[up] * e).sum())
        acc.d_up += float((m * dterm).sum())
        acc.d_up_err += float((m * (arg_err[up] + 8 * U * dterm) + merr[up] * dterm).sum())
    if mid.any():
        m, l_mid, ae, me = masses[mid], losses[mid], arg_err[mid], merr[mid]
        idx = np.floor((l_mid - ph) / h).astype(np.int64)
        # make t_idx <= l < t_{idx+1} hold for the float node values t_i = fl(i·h) + phase
        idx = np.where(idx * h + ph > l_mid, idx - 1, idx)
        idx = np.where((idx + 1) * h + ph <= l_mid, idx + 1, idx)
        idx = np.clip(idx, lo, hi)
        # Atoms within a few ulps of a node are put on it (the float parameters define them only
        # to that accuracy); the loss margin of the discretised PLD (8u(|L| + h)) covers the move
        # in both directions.
        snap = 4 * U * (np.abs(l_mid) + max(abs(t_lo), abs(t_hi)) + h)
        near_up = (idx < hi) & (((idx + 1) * h + ph) - l_mid <= snap)
        idx = np.where(near_up, idx + 1, idx)
        on_node = np.abs((idx * h + ph) - l_mid) <= snap
        if on_node.any():
            j = idx[on_node] - lo
            n_nodes = acc.atoms.size
            acc.atoms += np.bincount(j, weights=m[on_node], minlength=n_nodes)
            acc.atoms_err += np.bincount(
                j, weights=me[on_node] + 2 * U * m[on_node], minlength=n_nodes
            )
        cell = ~on_node
        if cell.any():
            c = idx[cell]
            if np.any(c >= hi):  # pragma: no cover - guarded by the on_node test at t_hi
                raise NumericalError("atom above the grid in a cell (a bug)")
            j = c - lo
            mc, lc = m[cell], l_mid[cell]
            dterm = -np.expm1((c * h + ph) - lc)
            uterm = np.expm1(((c + 1) * h + ph) - lc)
            derr = mc * (ae[cell] * (1.0 - dterm) + 4 * U * dterm) + me[cell] * dterm
            uerr = mc * (ae[cell] * (1.0 + uterm) + 4 * U * uterm) + me[cell] * uterm
            n_cells = acc.d.size
            acc.d += np.bincount(j, weights=mc * dterm, minlength=n_cells)
            acc.d_err += np.bincount(j, weights=derr, minlength=n_cells)
            acc.u += np.bincount(j, weights=mc * uterm, minlength=n_cells)
            acc.u_err += np.bincount(j, weights=uerr, minlength=n_cells)


@dataclass(frozen=True, slots=True)
class FinitePair(DominatingPair):
    """A pair whose loss law has finitely many atoms (plus mass at +∞).

    Args:
        losses: the finite loss values of the atoms.
        masses: their P-masses (> 0).
        inf_mass_: P[L = ∞].
        rel_err: a relative error bound on each listed mass.
        tail_low: a bound on the P-mass of *unlisted* atoms below every listed loss, and
            ``tail_low_q`` on their Q-mass; ``tail_high`` bounds the P-mass of unlisted atoms above
            every listed loss (infinite lattices such as the discrete Gaussian are truncated).
        lattice_: the atoms' lattice spacing, if any.
        name: a label for ``repr``.
    """

    losses: tuple[float, ...]
    masses: tuple[float, ...]
    inf_mass_: float = 0.0
    rel_err: float = 8 * U
    tail_low: float = 0.0
    tail_low_q: float = 0.0
    tail_high: float = 0.0
    lattice_: float | None = None
    name: str = "finite pair"
    #: an upper bound on the true |loss| when the listed losses are rounded values of it
    loss_cap: float = 0.0
    _arrays: tuple[FloatArray, FloatArray] = field(init=False, repr=False, compare=False)

    def weaker(self, step: float) -> DominatingPair:
        """Binary ε-RR (losses ±ε with the RR masses, nothing else) becomes RR at the largest
        (1 + step)^j ≤ ε: the RR family's profiles are ordered in ε. Other pairs: unchanged."""
        if (
            step > 0.0
            and len(self.losses) == 2
            and self.losses[0] > 0.0
            and self.losses[1] == -self.losses[0]
            and self.inf_mass_ == 0.0
            and self.tail_low == self.tail_high == 0.0
            and abs(self.masses[0] - 1.0 / (1.0 + math.exp(-self.losses[0]))) <= 1e-12
        ):
            return randomized_response_pair(round_down_geometric(self.losses[0], step), 2)
        return self

    def __post_init__(self) -> None:
        ls = np.asarray(self.losses, dtype=np.float64)
        ms = np.asarray(self.masses, dtype=np.float64)
        if ls.shape != ms.shape or ls.ndim != 1:
            raise InvalidParameter("losses and masses must be 1-D sequences of the same length")
        if not (np.all(np.isfinite(ls)) and np.all(np.isfinite(ms)) and np.all(ms >= 0.0)):
            raise InvalidParameter("losses must be finite and masses finite and >= 0")
        object.__setattr__(self, "_arrays", (ls, ms))

    def __repr__(self) -> str:
        return f"FinitePair({self.name}, {len(self.losses)} atoms, inf_mass={self.inf_mass_!r})"

    def __hash__(self) -> int:
        # Pairs key the composition caches; the generated hash read every atom (a wide discrete
        # Laplace lists millions, ~13 ms a lookup). Equal pairs agree on everything hashed here,
        # so this is consistent with the field-wise equality, which still decides.
        n = len(self.losses)
        return hash(
            (type(self), self.name, n, self.losses[:4], self.masses[:4], self.losses[n // 2])
            if n
            else (type(self), self.name, 0)
        ) ^ hash((self.inf_mass_, self.rel_err, self.tail_low, self.tail_high, self.lattice_))

    def lattice(self) -> float | None:
        return self.lattice_

    def atom_count(self) -> int:
        return len(self.losses)

    def top_loss(self) -> float | None:
        if self.tail_high > 0.0:  # unlisted atoms above the listed ones
            return None
        ls, ms = self._arrays
        finite = ls[ms > 0.0]
        return float(finite.max()) if finite.size else -math.inf

    @property
    def inf_mass(self) -> float:
        return self.inf_mass_

    def delta(self, epsilon: float) -> float:
        if epsilon == math.inf:
            return self.inf_mass_
        ls, ms = self._arrays
        if epsilon == -math.inf:
            return float(ms.sum()) + self.inf_mass_
        above = ls > epsilon
        value = float((ms[above] * -np.expm1(epsilon - ls[above])).sum()) + self.inf_mass_
        return min(1.0, value)

    def log_mgf(self, beta: FloatArray) -> FloatArray:
        ls, ms = self._arrays
        keep = ms > 0
        if not keep.any():
            return np.full(np.shape(beta), -np.inf)
        logm = np.log(ms[keep])
        b = np.asarray(beta, dtype=np.float64).reshape(-1, 1)
        with np.errstate(over="ignore"):  # β·L beyond the float range: the MGF is +inf there
            z = logm[None, :] + b * ls[keep][None, :]
        top = z.max(axis=1, keepdims=True)
        shift = np.where(np.isfinite(top), top, 0.0)  # a row with top = ±inf sums to ±inf
        with np.errstate(over="ignore", divide="ignore"):
            out = top[:, 0] + np.log(np.exp(z - shift).sum(axis=1))
        return np.asarray(out.reshape(np.shape(beta)), dtype=np.float64)

    def loss_bound(self) -> float:
        ls, _ = self._arrays
        return max(float(np.abs(ls).max()) if ls.size else 0.0, self.loss_cap)

    def tilted_cf(self, a: float, omega: FloatArray) -> tuple[ComplexArray, FloatArray] | None:
        """Σ_j w_j e^{iω l_j} with w_j = m_j e^{a l_j − m}; None when unlisted tail atoms exist
        (their tilted mass is not bounded by the listed data)."""
        if self.tail_low > 0.0 or self.tail_high > 0.0:
            return None
        ls, ms = self._arrays
        keep = ms > 0
        ls, ms = ls[keep], ms[keep]
        lm = float(self.log_mgf(np.array([a]))[0])
        if not math.isfinite(lm):
            return None
        w = np.exp(np.log(ms) + a * ls - lm)
        om = np.asarray(omega, dtype=np.float64).reshape(-1)
        arg = 4.0 + ls.size + np.abs(a * ls) + abs(lm)
        phi = np.empty(om.size, dtype=np.complex128)
        err = np.empty(om.size)
        step = max(1, (1 << 20) // max(ls.size, 1))  # nodes per block: ~2^20 phases at a time
        for i in range(0, om.size, step):
            phase = np.outer(om[i : i + step], ls)
            phi[i : i + step] = (np.cos(phase) + 1j * np.sin(phase)) @ w
            # each term: exp of an argument with absolute error ~u·|arg|, cos/sin of a phase
            # with absolute error ~u·|ω l|; the sum adds ~n·u relative
            err[i : i + step] = 16.0 * U * (np.abs(phase) + arg[None, :]) @ w
        shape = np.shape(omega)
        return phi.reshape(shape), err.reshape(shape)

    def cf_envelope(self, a: float, omega: float) -> float:
        """Σ_j w_j (the tilted mass, ≈ 1) with its rounding: |φ| never exceeds it (any ω)."""
        return _finite_envelope(self, a)

    def _cf_envelope_uncached(self, a: float) -> float:
        ls, ms = self._arrays
        keep = ms > 0
        lm = float(self.log_mgf(np.array([a]))[0])
        total = float(np.exp(np.log(ms[keep]) + a * ls[keep] - lm).sum())
        return total * (1.0 + 16.0 * U * (4.0 + ls.size + abs(lm) + a * self.loss_bound()))

    def mgf_slack(self) -> float:
        return math.log1p(self.rel_err)

    def _range(self, tail: float) -> tuple[float, float]:
        ls, ms = self._arrays
        if not (ms > 0).any():
            return 0.0, 0.0
        live = ls[ms > 0]
        return float(live.min()), float(live.max())

    def anchor(self) -> float | None:
        ls, ms = self._arrays
        if ls.size == 0:
            return None
        return float(ls[int(np.argmax(ms))])

    def _contents(self, h: float, lo: int, hi: int, phase: float) -> GridContents:
        acc = GridContents.empty(h, lo, hi, phase, self.inf_mass_)
        ls, ms = self._arrays
        _add_atoms(acc, ls, ms, self.rel_err)
        t_lo = lo * h + phase
        acc.p_low_err += self.tail_low
        acc.u_low_err += math.exp(min(t_lo, 700.0)) * self.tail_low_q
        acc.eq_up_err += self.tail_high
        acc.d_up_err += self.tail_high
        return acc


def randomized_response_pair(epsilon: float, categories: int = 2) -> DominatingPair:
    """The pair of k-ary randomized response on two different true values.

    Losses ε (P-mass e^ε/(e^ε + k − 1)), −ε (1/(e^ε + k − 1)) and 0 ((k − 2)/(e^ε + k − 1)).
    Symmetric (swap the two true values). For k = 2 it dominates every ε-DP mechanism
    [Kairouz–Oh–Viswanath 2015, Thm 2.4]: the PureDP pair.
    """
    if epsilon == math.inf:
        return FinitePair((), (), 1.0, name="no privacy")
    if epsilon == 0.0:
        return FinitePair((0.0,), (1.0,), name="perfect privacy", lattice_=None)
    k = categories
    e = math.exp(-epsilon)
    norm = 1.0 + (k - 1) * e
    losses = [epsilon, -epsilon]
    masses = [1.0 / norm, e / norm]
    if k > 2:
        losses.append(0.0)
        masses.append((k - 2) * e / norm)
    return FinitePair(
        tuple(losses), tuple(masses), lattice_=epsilon, name=f"RR(ε={epsilon!r}, k={k})"
    )


def approx_dp_pair(epsilon: float, delta: float) -> DominatingPair:
    """The four-point pair of (ε, δ)-DP [Kairouz–Oh–Viswanath 2015, Thm 2.4; Murtagh–Vadhan 2016].

    P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0), Q = (0, (1−δ)/(1+e^ε), (1−δ)e^ε/(1+e^ε), δ): mass δ
    at loss +∞, then ε-randomized response with weight 1 − δ. Symmetric (reverse the outcomes); it
    dominates every (ε, δ)-DP mechanism in both orders.
    """
    if epsilon == math.inf:
        return FinitePair((), (), 1.0, name="no privacy")
    if epsilon == 0.0:
        return FinitePair((0.0,), (1.0 - delta,), delta, name=f"ApproxDP(0, {delta!r})")
    e = math.exp(-epsilon)
    w = 1.0 - delta
    return FinitePair(
        (epsilon, -epsilon),
        (w / (1.0 + e), w * e / (1.0 + e)),
        delta,
        lattice_=epsilon,
        name=f"ApproxDP(ε={epsilon!r}, δ={delta!r})",
    )


# Pairs are immutable, and one composition asks for the same pair several times; the cache is
# small because a wide pair lists millions of atoms (up to MAX_ATOMS, ~200 MB).
@functools.lru_cache(maxsize=4)
def discrete_laplace_pair(scale: float, sensitivity: int) -> DominatingPair:
    """The pair (Z, Z + Δ) of discrete Laplace noise, P(z) ∝ exp(−|z|/scale), integer Δ ≥ 0.

    Loss L(z) = (|z − Δ| − |z|)/scale: Δ/scale for z ≤ 0 (P-mass 1/(1 + e^{−1/scale})), −Δ/scale for
    z ≥ Δ (P-mass e^{−Δ/scale}/(1 + e^{−1/scale})) and (Δ − 2z)/scale for 0 < z < Δ. Symmetric
    (z ↦ Δ − z). The shift Δ is the worst case over shifts |d| ≤ Δ: for log-concave noise the loss
    law of shift d is a post-processing of that of shift Δ (monotone likelihood ratio).
    """
    d = sensitivity
    if d == 0:
        return FinitePair((0.0,), (1.0,), name="perfect privacy")
    if d + 1 > MAX_ATOMS:
        raise NumericalError(
            f"discrete Laplace with sensitivity={d} has too many atoms for the PLD accountant "
            f"(> {MAX_ATOMS})"
        )
    a = 1.0 / scale
    norm_top = 1.0 / (1.0 + math.exp(-a))
    losses = [d * a, -d * a]
    masses = [norm_top, math.exp(-d * a) * norm_top]
    if d > 1:
        z = np.arange(1, d, dtype=np.float64)
        c = -math.expm1(-a) * norm_top  # (1 − e^{−a})/(1 + e^{−a})
        losses.extend(((d - 2.0 * z) * a).tolist())
        masses.extend((c * np.exp(-z * a)).tolist())
    kind = DiscreteLaplacePair if d >= _GEOMETRIC_MIN_SHIFT else FinitePair
    return kind(
        tuple(losses),
        tuple(masses),
        rel_err=16 * U * (1.0 + d * a),
        lattice_=a,
        name=f"DiscreteLaplace(scale={scale!r}, sensitivity={d})",
        # the listed d·(1/scale) is rounded: the largest loss beyond which δ(ε) is the mass at
        # infinity alone is d/scale itself, rounded up (the MGF read δ(2.6666666666666665) = 0
        # for a Laplace(1) and a discrete Laplace of scale 3, Δ = 5, whose largest loss is 8/3)
        loss_cap=_math.float_up(Fraction(d) / Fraction(scale)),
    )


#: From this sensitivity on, the discrete Laplace pair's log-MGF is taken in closed form (its
#: d + 1 atoms made every evaluation O(d); the PLD's saddle table evaluates hundreds of orders).
_GEOMETRIC_MIN_SHIFT = 64


@dataclass(frozen=True, slots=True)
class DiscreteLaplacePair(FinitePair):
    """:func:`discrete_laplace_pair` for a large sensitivity d: the same atoms (every other use
    reads them), and the log-MGF summed in closed form, in O(1) per order instead of O(d).

    With A = 1/scale, m = 1/(1 + e^{−A}) and c = (1 − e^{−A})·m, the P-masses are m at loss dA,
    m·e^{−dA} at −dA and c·e^{−zA} at (d − 2z)A for 0 < z < d, so

        E_P[e^{βL}] = m·e^{βdA} + m·e^{−dA(1+β)} + c·e^{βdA}·Σ_{z=1}^{d−1} e^{xz},  x = −A(1 + 2β),

    a geometric sum, Σ_{z=1}^{n} e^{xz} = e^{x}(1 − e^{xn})/(1 − e^{x}) (x < 0; mirrored for x > 0,
    n at x = 0), evaluated with ``expm1`` and combined in log space. It sums every atom, including
    those whose P-mass underflows to 0 in the listed table: at β < −½ they carry most of the sum,
    which the listed atoms alone understate (by hundreds in log space for a small scale).
    """

    __hash__ = FinitePair.__hash__  # the dataclass would generate a field-wise one

    def log_mgf(self, beta: FloatArray) -> FloatArray:
        a = float(self.lattice_)  # type: ignore[arg-type]
        d = round(self.losses[0] / a)
        n = d - 1
        b = np.asarray(beta, dtype=np.float64)
        log_m = -math.log1p(math.exp(-a))
        log_c = math.log(-math.expm1(-a)) + log_m
        x = -a * (1.0 + 2.0 * b)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            neg = x + np.log(-np.expm1(x * n)) - np.log(-np.expm1(x))
            pos = x * n + np.log(-np.expm1(-x * n)) - np.log(-np.expm1(-x))
            log_sum = np.where(x < 0.0, neg, np.where(x > 0.0, pos, math.log(n)))
            terms = np.stack(
                [
                    log_m + b * (d * a),
                    log_m - d * a * (1.0 + b),
                    log_c + b * (d * a) + log_sum,
                ]
            )
            top = terms.max(axis=0)
            shift = np.where(np.isfinite(top), top, 0.0)
            out = top + np.log(np.exp(terms - shift).sum(axis=0))
        return np.asarray(out, dtype=np.float64)

    def tilted_cf(self, a: float, omega: FloatArray) -> tuple[ComplexArray, FloatArray] | None:
        """Σ_j w_j e^{iωl_j}, w_j = p_j e^{a·l_j − m} (see :meth:`FinitePair.tilted_cf`), in
        O(log d) per node instead of O(d), for a tilt a > 0 (others: the atom sum).

        The two end atoms (losses ±dA) are summed directly. The middle atoms z = 1 … n = d − 1
        have w_z e^{iωl_z} = e^{E + (z−1)x} with E = log c − A + a(d − 2)A − m + iω(d − 2)A and
        x = r + iθ, r = −A(1 + 2a) < 0, θ = −2Aω: a geometric sum e^{E}·T_n(ρ), ρ = e^{x},
        T_k = Σ_{j<k} ρ^j. T_n is formed by binary doubling (T_{2k} = T_k(1 + ρ^k),
        T_{k+1} = 1 + ρT_k, ρ^k alongside), never by (1 − ρ^n)/(1 − ρ), which loses all
        accuracy where ρ nears 1. **Error bound** (running, per node): with majorants
        P̄_k = |ρ|^k and T̄_k = Σ_{j<k} |ρ|^j, the computed P̂_k, T̂_k satisfy |P̂_k − ρ^k| ≤ p_k·P̄_k
        and |T̂_k − T_k| ≤ t_k·T̄_k, where p_1 = ε₀ bounds the relative error of ρ̂ and each step
        adds what its operations can: a complex product errs by ≤ 4u of its magnitude, a sum by
        ≤ 2u (u = 2⁻⁵³), so

            doubling:   σ = p + 2u(1 + p),  t ← t(1 + σ) + σ + 4u(1 + t)(1 + σ),
                        p ← p(2 + p) + 4u(1 + p)²;
            increment:  τ = ε₀ + t + ε₀t + 4u(1 + ε₀)(1 + t),  t ← τ + 2u(1 + τ),
                        p ← ε₀ + p + ε₀p + 4u(1 + ε₀)(1 + p)

        (T̄_{2k} = T̄_k(1 + P̄_k) and T̄_{k+1} = 1 + |ρ|T̄_k make the majorants exact). The middle
        sum then errs by ≤ W·(ε_E(1 + t) + t + 4u(1 + ε_E)(1 + t)), W ≥ |e^{E}|·T̄_n its tilted
        mass (T̄_n = expm1(nr)/expm1(r), rounded up) and ε_E the relative error of e^{Ê}. The
        bound's own float arithmetic (sums of non-negative terms) is covered by a factor
        1 + 10⁻⁶; ``rel_err`` of the total mass covers the listed masses' distance to the law.
        """
        if not a > 0.0:
            return FinitePair.tilted_cf(self, a, omega)
        big_a = float(self.lattice_)  # type: ignore[arg-type]
        d = round(self.losses[0] / big_a)
        n = d - 1
        lm = float(self.log_mgf(np.array([a]))[0])
        if not math.isfinite(lm):
            return None
        om = np.asarray(omega, dtype=np.float64).reshape(-1)
        log_m = -math.log1p(math.exp(-big_a))
        log_c = math.log(-math.expm1(-big_a)) + log_m
        phi = np.zeros(om.size, dtype=np.complex128)
        err = np.zeros(om.size)
        mass = 0.0
        for loss, log_p in ((d * big_a, log_m), (-d * big_a, log_m - d * big_a)):
            w = math.exp(log_p + a * loss - lm)
            phase = om * loss
            phi += w * (np.cos(phase) + 1j * np.sin(phase))
            rounding = 16.0 * U * (4.0 + abs(log_p) + abs(a * loss) + abs(lm))
            err += w * (rounding + 4.0 * U * (1.0 + np.abs(phase)))
            mass += w
        r = -big_a * (1.0 + 2.0 * a)
        theta = -2.0 * big_a * om
        rho = math.exp(r) * (np.cos(theta) + 1j * np.sin(theta))
        eps0 = 8.0 * U * (1.0 + abs(r) + np.abs(theta))
        e_re = log_c - big_a + a * ((d - 2) * big_a) - lm
        e_im = om * ((d - 2) * big_a)
        pref = math.exp(e_re) * (np.cos(e_im) + 1j * np.sin(e_im))
        eps_re = 16.0 * U * (4.0 + abs(log_c) + big_a + abs(a * (d - 2) * big_a) + abs(lm))
        eps_e = eps_re + 4.0 * U * (1.0 + np.abs(e_im))
        total, t, power, p = np.ones(om.size, dtype=np.complex128), np.zeros(om.size), rho, eps0
        for bit in bin(n)[3:]:
            sigma = p + 2.0 * U * (1.0 + p)
            total = total * (1.0 + power)
            t = t * (1.0 + sigma) + sigma + 4.0 * U * (1.0 + t) * (1.0 + sigma)
            p = p * (2.0 + p) + 4.0 * U * (1.0 + p) ** 2
            power = power * power
            if bit == "1":
                tau = eps0 + t + eps0 * t + 4.0 * U * (1.0 + eps0) * (1.0 + t)
                total = 1.0 + rho * total
                t = tau + 2.0 * U * (1.0 + tau)
                p = eps0 + p + eps0 * p + 4.0 * U * (1.0 + eps0) * (1.0 + p)
                power = rho * power
        t = t * (1.0 + 1e-6)
        # T̄_n's relative sensitivity to r is the geometric mean of k, ≤ 1/(1 − e^r) ≤ (1 + |r|)/|r|,
        # so r's rounding (≤ 2.01u|r|) and the three roundings here move it by < 16u(4 + |r|)
        majorant = math.expm1(n * r) / math.expm1(r) * (1.0 + 16.0 * U * (4.0 + abs(r)))
        middle = math.exp(e_re) * majorant * (1.0 + eps_e)
        phi += pref * total
        err += middle * (eps_e * (1.0 + t) + t + 4.0 * U * (1.0 + eps_e) * (1.0 + t)) * (1.0 + 1e-6)
        mass_all = mass + np.max(middle)
        err += 4.0 * U * (mass + middle * (1.0 + t)) + self.rel_err * mass_all
        shape = np.shape(omega)
        return phi.reshape(shape), err.reshape(shape)

    def _contents(self, h: float, lo: int, hi: int, phase: float) -> GridContents:
        """The grid contents with each run of middle atoms strictly inside one cell (or beyond
        one end of the grid) summed in closed form: O(grid) instead of O(d).

        The atoms z = z₀ … z₀ + n − 1 of a run have losses l₀ − 2kA and P-masses M·e^{−kA}
        (M = c·e^{−z₀A}, k = 0 … n − 1), so with S₊ = Σ_k e^{kA} = e^{(n−1)A/2}·s and
        S₋ = Σ_k e^{−kA} = e^{−(n−1)A/2}·s, s = sinh(nA/2)/sinh(A/2), and
        S₊ − S₋ = 2·sinh((n − 1)A/2)·s, a cell (t, t′) with x = t − l₀ < 0 < y = t′ − l₀ holds

            D = M·Σ_k e^{−kA}(1 − e^{x + 2kA}) = M·(−expm1(x)·S₊ − (S₊ − S₋)),
            U = M·Σ_k e^{−kA}(e^{y + 2kA} − 1) = M·(expm1(y)·S₊ + (S₊ − S₋)),

        and the ends of the grid likewise. Atoms within two lattice steps of a node are added one
        by one (:func:`_add_atoms`, which also decides which lie on a node), so every run lies at
        least 2A inside its cell. Errors: the masses' ``rel_err`` (M is computed as the listed
        masses are); the argument error of x or y (one shift for the whole run: the offsets 2kA
        are exact in the closed form), through |∂D/∂x| = M·e^x·S₊ and |∂U/∂y| = M·e^y·S₊; and
        64u(1 + nA) relative for ``expm1``, ``exp``, ``sinh`` and their float arguments, on the
        sum of the two terms (so the cancellation in D is covered). Narrow cells (h < 16A), or
        losses beyond e^{±600}, use the atom-by-atom sum.
        """
        a = float(self.lattice_)  # type: ignore[arg-type]
        d = round(self.losses[0] / a)
        t = np.arange(lo, hi + 1, dtype=np.int64) * h + phase  # the float node values
        with np.errstate(over="ignore", invalid="ignore"):
            zc = (d - t / a) / 2.0  # the (real) z whose loss (d − 2z)A is the node's
        if h < 16.0 * a or d * a > 600.0 or not np.all(np.abs(zc) < 2.0**52):
            return FinitePair._contents(self, h, lo, hi, phase)
        acc = GridContents.empty(h, lo, hi, phase, self.inf_mass_)
        ls, ms = self._arrays
        # Windows [⌊zc⌋ − 1, ⌈zc⌉ + 1] around each node (disjoint: nodes are h/2A ≥ 8 apart in z);
        # the runs between them lie 2A inside a cell, below the grid or above it.
        w_lo = np.floor(zc).astype(np.int64) - 1
        w_hi = np.ceil(zc).astype(np.int64) + 1
        z = (w_lo[:, None] + np.arange(4, dtype=np.int64)[None, :]).ravel()
        z = z[(z <= np.repeat(w_hi, 4)) & (z >= 1) & (z <= d - 1)]
        listed = np.concatenate([np.array([0, 1], dtype=np.int64), z + 1])  # ls[z + 1] is atom z
        _add_atoms(acc, ls[listed], ms[listed], self.rel_err)
        # runs: above the grid, in each cell j (nodes j and j + 1 in increasing t), below the grid
        start = np.concatenate([[1], w_hi[1:] + 1, [w_hi[0] + 1]])
        end = np.concatenate([[w_lo[-1] - 1], w_lo[:-1] - 1, [d - 1]])
        start, end = np.maximum(start, 1), np.minimum(end, d - 1)
        n = np.maximum(end - start + 1, 0)
        if int(n.sum()) + z.size != d - 1:  # pragma: no cover - the windows and runs tile 1..d−1
            raise NumericalError("discrete Laplace runs do not tile the atoms (a bug)")
        log_m = -math.log1p(math.exp(-a))
        c = -math.expm1(-a) * math.exp(log_m)
        nf = n.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            big_m = c * np.exp(-start.astype(np.float64) * a)
            l0 = (d - 2.0 * start.astype(np.float64)) * a  # the run's largest loss
            s = np.sinh(nf * a / 2.0) / math.sinh(a / 2.0)
            s_plus = np.exp((nf - 1.0) * a / 2.0) * s
            s_minus = np.exp(-(nf - 1.0) * a / 2.0) * s
            gap = 2.0 * np.sinh(np.maximum(nf - 1.0, 0.0) * a / 2.0) * s  # S₊ − S₋
        gamma = 64.0 * U * (1.0 + nf * a) + self.rel_err
        t_edge = max(abs(float(t[0])), abs(float(t[-1])))
        arg_err = 2.0 * (U * (np.abs(l0) + 2.0 * t_edge) + 4.0 * U * h)
        t_low = np.concatenate([[t[-1]], t[:-1], [t[0]]])  # the node below each run's losses…
        t_up = np.concatenate([[np.inf], t[1:], [np.inf]])  # …and above (cells only)
        live = n > 0
        with np.errstate(over="ignore", invalid="ignore"):
            x = t_low - l0
            ex = np.exp(x)
            down = -np.expm1(x) * s_plus  # cells and above: x < 0
            up_lo = np.expm1(x) * s_plus  # below the grid: x > 0
            y = t_up - l0
            up = np.expm1(y) * s_plus
            ey = np.exp(y)
        k = len(n) - 1
        cells = np.arange(1, k)
        with np.errstate(over="ignore", invalid="ignore"):  # the two ends' y is +inf
            vals = {
                "d": np.maximum(big_m * (down - gap), 0.0)[cells],
                "d_err": (big_m * (gamma * (down + gap) + arg_err * ex * s_plus))[cells],
                "u": (big_m * (up + gap))[cells],
                "u_err": (big_m * (gamma * (up + gap) + arg_err * ey * s_plus))[cells],
            }
        cell_live = live[cells]
        for name, v in vals.items():
            v = np.where(cell_live, v, 0.0)
            if not np.all(np.isfinite(v)):
                return FinitePair._contents(self, h, lo, hi, phase)
            getattr(acc, name)[:] += v
        if live[0]:  # above the grid: l > t_hi
            m0, e0 = float(big_m[0]), float(ex[0] * s_plus[0])
            terms = [m0 * e0, m0 * max(float(down[0] - gap[0]), 0.0)]
            errs = [
                m0 * e0 * (float(gamma[0]) + float(arg_err[0]) + 8 * U),
                m0 * (float(gamma[0]) * float(down[0] + gap[0]) + float(arg_err[0]) * e0)
                + 8 * U * terms[1],
            ]
            if not all(math.isfinite(v) for v in terms + errs):
                return FinitePair._contents(self, h, lo, hi, phase)
            acc.eq_up += terms[0]
            acc.eq_up_err += errs[0]
            acc.d_up += terms[1]
            acc.d_up_err += errs[1]
        if live[k]:  # below the grid: l < t_lo
            mk = float(big_m[k])
            p = mk * float(s_minus[k])
            u_low = mk * float(up_lo[k] + gap[k])
            e_k, g_k = float(ex[k] * s_plus[k]), float(gamma[k])
            errs = [
                p * (g_k + 4 * U),
                mk * (g_k * float(up_lo[k] + gap[k]) + e_k * (float(arg_err[k]) + 8 * U)),
            ]
            if not all(math.isfinite(v) for v in [p, u_low, *errs]):
                return FinitePair._contents(self, h, lo, hi, phase)
            acc.p_low += p
            acc.p_low_err += errs[0]
            acc.u_low += u_low
            acc.u_low_err += errs[1]
        return acc


#: Most atoms of a discrete Gaussian pair (about 27σ + Δ of them, σ up to about 38,000). Its
#: log-MGF is in closed form (:class:`DiscreteGaussianPair`), but the table itself is built and
#: binned: at 2²⁰ atoms a composition takes about 0.7 s, and σ = 2·10⁵ (5·10⁶ atoms) exhausted
#: 24 GiB before the limit existed. Wider ones are left to the analyses that need no atoms (RDP,
#: zCDP), which bound them validly.
MAX_GAUSSIAN_ATOMS = 2**20


@functools.lru_cache(maxsize=4)  # as discrete_laplace_pair's: immutable, and possibly wide
def discrete_gaussian_pair(sigma: float, sensitivity: int, tail: float = 1e-40) -> DominatingPair:
    """The pair (Z, Z + Δ) of discrete Gaussian noise, P(z) ∝ exp(−z²/(2σ²)), integer Δ ≥ 0.

    Loss L(z) = ((z − Δ)² − z²)/(2σ²) = (Δ² − 2zΔ)/(2σ²), an atom for every integer z (truncated to
    the z whose P-mass can exceed ``tail``; the rest is carried as an error bound). Symmetric
    (z ↦ Δ − z); the shift Δ is the worst case over |d| ≤ Δ (log-concave noise, as for the
    discrete Laplace).
    """
    d = sensitivity
    if d == 0:
        return FinitePair((0.0,), (1.0,), name="perfect privacy")
    s2 = sigma * sigma
    zmax = math.ceil(sigma * math.sqrt(2.0 * math.log(1.0 / tail)) + d + 1)
    if 2 * zmax + d + 1 > MAX_GAUSSIAN_ATOMS:
        raise NumericalError(
            f"discrete Gaussian with sigma={sigma!r} has too many atoms for the PLD accountant "
            f"(> {MAX_GAUSSIAN_ATOMS}); compositions bound it by its Rényi curve instead (that of "
            "the continuous Gaussian, Canonne–Kamath–Steinke 2020)"
        )
    # z ∈ [−zmax, zmax + Δ]: closed under the reflection z ↦ Δ − z, so the listed atoms form a
    # symmetric pair themselves
    z = np.arange(-zmax, zmax + d + 1, dtype=np.float64)
    logw = -(z * z) / (2.0 * s2)
    top = logw.max()
    w = np.exp(logw - top)
    # Unlisted atoms |z| > zmax: ratio of consecutive weights <= e^{-zmax/σ²}.
    r = math.exp(-zmax / s2) if zmax / s2 < 700 else 0.0
    # (never 0: at σ = 0.1 the bound e^{−1250} underflowed, the unlisted atoms vanished, and two
    # such discrete Gaussians composed to ε(0) = 700, a pure-DP claim for an unbounded loss)
    log_tail = -((zmax + 1) ** 2) / (2.0 * s2) - top - math.log1p(-r)
    tail_w = _math.exp_up(log_tail) if r < 1.0 else math.inf
    norm = float(w.sum())
    masses = w / norm
    losses = (d * d - 2.0 * z * d) / (2.0 * s2)
    # Unlisted z > zmax + Δ (low losses): P-mass <= tail_w (z >= zmax + 1); their Q-mass (weights
    # e^{−(z−Δ)²/2σ²}, z − Δ >= zmax + 1) also <= tail_w. Unlisted z < −zmax: P-mass <= tail_w.
    tail_q = tail_w / norm
    tail_p = tail_w / norm
    kind = DiscreteGaussianPair if sigma >= _THETA_MIN_SIGMA else FinitePair
    return kind(
        tuple(losses.tolist()),
        tuple(masses.tolist()),
        # exp of an argument known to |logw|·u, and a pairwise sum for the normaliser
        rel_err=16 * U * (4.0 + float(np.max(-logw))) + 32 * U * math.log2(2 * zmax + 2),
        tail_low=tail_p,
        tail_low_q=tail_q,
        tail_high=tail_p,
        lattice_=d / (2.0 * s2),
        name=f"DiscreteGaussian(sigma={sigma!r}, sensitivity={d})",
        **({"half_mu2": d * d / (2.0 * s2)} if kind is DiscreteGaussianPair else {}),
    )


#: From this σ on, the discrete Gaussian pair's log-MGF is taken in closed form (below, its
#: ~27σ atoms are few enough to sum).
_THETA_MIN_SIGMA = 64.0


@dataclass(frozen=True, slots=True)
class DiscreteGaussianPair(FinitePair):
    """:func:`discrete_gaussian_pair` for a large σ: the same atoms (every other use reads them),
    and the log-MGF of the whole law in closed form, O(1) per order instead of O(σ).

    With L(z) = (Δ² − 2zΔ)/(2σ²) and P(z) ∝ e^{−z²/(2σ²)}, completing the square gives
    Σ_z e^{−z²/(2σ²) − βzΔ/σ²} = e^{β²Δ²/(2σ²)}·Θ(βΔ), Θ(a) = Σ_z e^{−(z + a)²/(2σ²)}, and by
    Poisson summation Θ(a) = √(2π)σ·(1 + 2Σ_{k≥1} q^{k²} cos(2πka)), q = e^{−2π²σ²}. So

        log E_P[e^{βL}] = (β + β²)·Δ²/(2σ²) + log(1 + 2Σ q^{k²} cos(2πkβΔ)) − log(1 + 2Σ q^{k²}),

    the Gaussian's (Δ/σ)-GDP log-MGF plus a correction below 4q in absolute value (q < 10⁻³⁵⁰⁰⁰
    from σ = 64 on: 0 in double precision). It is the MGF of the untruncated law; the listed atoms'
    (renormalised over the table) differ from it by at most their tail bound, ~1e-40 relative.
    """

    __hash__ = FinitePair.__hash__  # the dataclass would generate a field-wise one

    half_mu2: float = 0.0  # Δ²/(2σ²)

    def log_mgf(self, beta: FloatArray) -> FloatArray:
        b = np.asarray(beta, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            out = (b + b * b) * self.half_mu2
        return np.asarray(np.where(np.isnan(out), np.inf, out), dtype=np.float64)


# -------------------------------------------------------------------------------------------------
# Laplace


def _finite_table(pairs: Sequence[FinitePair]) -> tuple[FloatArray, FloatArray]:
    """(losses, log-masses) of small finite pairs as (k, m) arrays, padded with log-mass −inf
    (memoised: planning asks it of the same pairs many times; the arrays are read-only)."""
    return _finite_table_cached(tuple(pairs))


@functools.lru_cache(maxsize=64)
def _finite_table_cached(pairs: tuple[FinitePair, ...]) -> tuple[FloatArray, FloatArray]:
    width = max(len(p.losses) for p in pairs)
    ls = np.zeros((len(pairs), width))
    logm = np.full((len(pairs), width), -np.inf)
    for i, p in enumerate(pairs):
        l_i, m_i = p._arrays
        keep = m_i > 0
        n = int(keep.sum())
        ls[i, :n] = l_i[keep]
        with np.errstate(divide="ignore"):
            logm[i, :n] = np.log(m_i[keep])
    ls.setflags(write=False)
    logm.setflags(write=False)
    return ls, logm


def finite_log_mgfs(pairs: Sequence[FinitePair], beta: FloatArray) -> FloatArray:
    """:meth:`FinitePair.log_mgf` of several finite pairs (listed atoms only) at the orders
    ``beta`` (1-D): an array of shape (len(pairs), beta.size), from one vectorised evaluation
    (the same log-sum-exp, padded atoms contributing e^{−∞} = 0)."""
    ls, logm = _finite_table(pairs)
    b = np.asarray(beta, dtype=np.float64).reshape(1, -1, 1)
    with np.errstate(over="ignore", invalid="ignore"):
        z = logm[:, None, :] + b * ls[:, None, :]
        z = np.where(np.isneginf(logm)[:, None, :], -np.inf, z)
    top = z.max(axis=2, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out = top[:, :, 0] + np.log(np.exp(z - shift).sum(axis=2))
    return np.asarray(out, dtype=np.float64)


def finite_tilted_cfs(
    pairs: Sequence[FinitePair], a: float, omega: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:meth:`FinitePair.tilted_cf` of several small finite pairs without unlisted tails:
    (real part, imaginary part, error bound), arrays of shape (len(pairs), omega.size) — the same
    sums and error bounds, vectorised."""
    ls, logm = _finite_table(pairs)
    lm = finite_log_mgfs(pairs, np.array([a]))  # (k, 1)
    with np.errstate(invalid="ignore"):
        w = np.where(np.isneginf(logm), 0.0, np.exp(logm + a * ls - lm))  # (k, m)
    count = np.array([float(len(p._arrays[0][p._arrays[1] > 0])) for p in pairs])[:, None]
    arg = 4.0 + count + np.abs(a * ls) + np.abs(lm)  # (k, m)
    if ls.shape[1] == 2 and np.array_equal(ls[:, 1], -ls[:, 0]):
        # atoms ±l (randomized response, pure DP): cos and sin of ωl once for both atoms
        theta = np.asarray(omega, dtype=np.float64)[None, :] * ls[:, :1]  # (k, n)
        w0, w1 = w[:, :1], w[:, 1:]
        re = (w0 + w1) * np.cos(theta)
        im = (w0 - w1) * np.sin(theta)
        np.abs(theta, out=theta)
        err = 16.0 * U * (theta * (w0 + w1) + (arg[:, :1] * w0 + arg[:, 1:] * w1))
        return re, im, err
    om = np.asarray(omega, dtype=np.float64).reshape(1, -1, 1)
    phase = om * ls[:, None, :]  # (k, n, m)
    re = (np.cos(phase) * w[:, None, :]).sum(axis=2)
    im = (np.sin(phase) * w[:, None, :]).sum(axis=2)
    err = (16.0 * U * (np.abs(phase) + arg[:, None, :]) * w[:, None, :]).sum(axis=2)
    return re, im, err


def laplace_log_mgfs(eps0: FloatArray, beta: FloatArray) -> FloatArray:
    """log E_P[e^{βL}] of the Laplace pairs of ε0 = ``eps0`` (a 1-D array) at the orders ``beta``
    (1-D): an array of shape (eps0.size, beta.size), row i for ε0_i. One vectorised evaluation for
    many pairs (:meth:`LaplacePair.log_mgf` is its one-row case, so a pair's values are the same
    whichever way they are computed). Closed form of the law in :class:`LaplacePair`: the atoms
    give (1/2)e^{βε0} and (1/2)e^{−ε0 − βε0}, the density (1/4)e^{−ε0/2}·2 sinh(cε0)/c with
    c = β + 1/2, summed in log space."""
    e0 = np.asarray(eps0, dtype=np.float64)[:, None]
    b = np.asarray(beta, dtype=np.float64)[None, :]
    t1 = math.log(0.5) + b * e0
    t2 = math.log(0.5) - e0 - b * e0
    c = b + 0.5
    x = np.abs(c) * e0
    # (1/4)e^{−ε0/2}·2 sinh(c ε0)/c = (1/2) e^{−ε0/2} ε0 · sinh(x)/x, sinh(x)/x in log form
    xs = np.maximum(x, 1e-300)
    with np.errstate(divide="ignore"):
        # log(sinh(x)/x) = x + log(1 − e^{−2x}) − log 2 − log x
        log_shc = np.where(
            x < 1e-8, 0.0, xs + np.log(-np.expm1(-2.0 * xs)) - math.log(2.0) - np.log(xs)
        )
        t3 = math.log(0.5) - 0.5 * e0 + np.log(e0) + log_shc
    top = np.maximum(np.maximum(t1, t2), t3)
    out = top + np.log(np.exp(t1 - top) + np.exp(t2 - top) + np.exp(t3 - top))
    return np.asarray(out, dtype=np.float64)


def laplace_tilted_cfs(
    eps0: FloatArray, a: float, omega: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:meth:`LaplacePair.tilted_cf` of the Laplace pairs of ε0 = ``eps0`` (1-D) at the tilt a
    and the frequencies ``omega`` (1-D): (real part, imaginary part, error bound), arrays of
    shape (eps0.size, omega.size) — one vectorised evaluation for many pairs, in real arithmetic.

    The same closed form regrouped: with c + is = e^{iωε0}, σ = 1/(2z) (z = a + 1/2 + iω) and
    β = e^{−(2a + 1)ε0}, the density part pref·σ·(e^{iωε0} − β e^{−iωε0}) joins the atoms, so
    φ = c(P + Qσ) + is(R + Sσ) with P = w1 + w2, Q = pref(1 − β), R = w1 − w2, S = pref(1 + β).
    The error bound is :meth:`LaplacePair.cf_parts`'s (whose ωε0 term covers the phase)."""
    e0 = np.asarray(eps0, dtype=np.float64)[:, None]
    om = np.asarray(omega, dtype=np.float64)[None, :]
    x = a + 0.5
    m = laplace_log_mgfs(e0[:, 0], np.array([a]))  # (k, 1)
    w1 = np.exp(math.log(0.5) + a * e0 - m)
    w2 = np.exp(math.log(0.5) - e0 - a * e0 - m)
    pref = np.exp(-0.5 * e0 + x * e0 - math.log(2.0) - m)
    back = np.exp(-2.0 * x * e0)
    p_, q_, r_, s_ = w1 + w2, pref * (1.0 - back), w1 - w2, pref * (1.0 + back)
    norm = 2.0 * (x * x + om * om)
    sig_r, sig_i = x / norm, -om / norm  # σ = 1/(2z)
    theta = om * e0
    c, s = np.cos(theta), np.sin(theta)
    re = c * (p_ + q_ * sig_r) - s * (s_ * sig_i)
    im = c * (q_ * sig_i) + s * (r_ + s_ * sig_r)
    arg = 4.0 + np.abs(om) * e0 + (a + 1.0) * e0 + np.abs(m)
    err = 16.0 * U * arg * (p_ + s_ / np.sqrt(2.0 * norm))
    return re, im, err + 2.0 * U * np.hypot(re, im)


@dataclass(frozen=True, slots=True)
class LaplacePair(DominatingPair):
    """The pair (Lap(0, b), Lap(Δ, b)), described by ε0 = Δ/b.

    Loss law under P: an atom ε0 of mass 1/2 (y ≤ 0), an atom −ε0 of mass e^{−ε0}/2 (y ≥ Δ) and the
    density (1/4)e^{(l − ε0)/2} on (−ε0, ε0) (y ∈ (0, Δ), l = (Δ − 2y)/b). Symmetric (y ↦ Δ − y);
    profile δ(ε) = 1 − e^{(ε − ε0)/2} on [−ε0, ε0] (:func:`sharpdp._divergences.laplace_delta`).
    On a cell (a, b) the density integrates in closed form, without cancellation:
    D = 2e^{(a − ε0)/2} sinh((a′ + b′ − 2a)/4) sinh((b′ − a′)/4) and
    U = 2e^{(b − ε0)/2} sinh((2b − a′ − b′)/4) sinh((b′ − a′)/4), where (a′, b′) = (a, b) ∩ (−ε0, ε0).
    """

    epsilon0: float

    def lattice(self) -> float | None:
        return self.epsilon0

    def top_loss(self) -> float | None:
        return self.epsilon0

    def weaker(self, step: float) -> DominatingPair:
        """Laplace at the largest ε0′ = (1 + step)^j ≤ ε0: the profiles 1 − e^{(ε − ε0)/2} (ε ≥ 0)
        are increasing in ε0, and for symmetric pairs the profile on ε ≥ 0 orders the pairs."""
        return LaplacePair(round_down_geometric(self.epsilon0, step)) if step > 0.0 else self

    def delta(self, epsilon: float) -> float:
        e0 = self.epsilon0
        if epsilon >= e0:
            return 0.0
        if epsilon <= -e0:
            return -math.expm1(epsilon) if epsilon > -math.inf else 1.0
        return -math.expm1(0.5 * (epsilon - e0))

    def log_mgf(self, beta: FloatArray) -> FloatArray:
        b = np.asarray(beta, dtype=np.float64)
        row = laplace_log_mgfs(np.array([self.epsilon0]), b.reshape(-1))[0]
        return np.asarray(row.reshape(b.shape), dtype=np.float64)

    def loss_bound(self) -> float:
        return self.epsilon0

    def _tilted_parts(self, a: float) -> tuple[float, float, float, float, float]:
        """(w1, w2, c0, pref, m) at the tilt a > 0 (:func:`_laplace_tilted_parts`, memoised)."""
        return _laplace_tilted_parts(self.epsilon0, a)

    def cf_parts(
        self, a: float, omega: FloatArray
    ) -> tuple[ComplexArray, ComplexArray, FloatArray, FloatArray]:
        """The atoms' and the density's parts of :meth:`tilted_cf`, with their error bounds:
        w1 e^{iωε0} + w2 e^{−iωε0} and C(a + iω)/e^m (see :meth:`_tilted_parts`)."""
        e0 = self.epsilon0
        w1, w2, _, pref, m = self._tilted_parts(a)
        x = a + 0.5
        om = np.asarray(omega, dtype=np.float64)
        rot = np.exp(1j * (om * e0))
        z = x + 1j * om
        dens = pref * rot * (1.0 - np.exp(-2.0 * e0 * z)) / (2.0 * z)
        atoms = w1 * rot + w2 * np.conj(rot)
        # exponent arguments carry absolute errors ~u·|arg| (relative errors of the weights),
        # the phase ωε0 one of ~u·ωε0; 1 − e^{−2zε0} is computed to ~4u·(1 + e^{−2xε0})
        arg = 4.0 + np.abs(om) * e0 + (a + 1.0) * e0 + abs(m)
        err_atoms = 16.0 * U * (w1 + w2) * arg
        err_dens = 16.0 * U * pref * (1.0 + math.exp(-2.0 * x * e0)) / (2.0 * np.abs(z)) * arg
        return atoms, dens, err_atoms, err_dens

    def tilted_cf(self, a: float, omega: FloatArray) -> tuple[ComplexArray, FloatArray] | None:
        """w1 e^{iωε0} + w2 e^{−iωε0} + C(a + iω)/e^m (closed form; see :meth:`cf_parts`)."""
        atoms, dens, err_atoms, err_dens = self.cf_parts(a, omega)
        phi = atoms + dens
        return np.asarray(phi, dtype=np.complex128), err_atoms + err_dens + 2.0 * U * np.abs(phi)

    def density_envelope(self, a: float, omega: float) -> tuple[float, float]:
        """(w1 + w2, g): bounds on |atoms part| (any ω) and on |density part| at every ω′ ≥ ω
        (g non-increasing): |sinh(zε0)| ≤ cosh(xε0) gives |C(a + iω)| ≤
        (1/2)e^{−ε0/2} cosh(xε0)/|z|, and |C(a + iω)| ≤ C(a) always."""
        e0 = self.epsilon0
        w1, w2, c0, _, m = self._tilted_parts(a)
        x = a + 0.5
        log_cosh = x * e0 + math.log1p(math.exp(-2.0 * x * e0)) - math.log(2.0)
        cb = math.exp(-0.5 * e0 + log_cosh - math.log(2.0) - m) / math.hypot(x, omega)
        fudge = 1.0 + 64.0 * U * (4.0 + (a + 1.0) * e0 + abs(m))
        return (w1 + w2) * fudge, min(c0, cb) * fudge

    def cf_envelope(self, a: float, omega: float) -> float:
        """The sum of the two bounds of :meth:`density_envelope`."""
        atoms, dens = self.density_envelope(a, omega)
        return atoms + dens

    def anchor(self) -> float | None:
        return self.epsilon0

    def _range(self, tail: float) -> tuple[float, float]:
        return -self.epsilon0, self.epsilon0

    def _contents(self, h: float, lo: int, hi: int, phase: float) -> GridContents:
        e0 = self.epsilon0
        acc = GridContents.empty(h, lo, hi, phase, 0.0)
        _add_atoms(acc, np.array([e0, -e0]), np.array([0.5, 0.5 * math.exp(-e0)]), 4 * U)
        d, u, rel = _half_exp_cells(h, lo, hi, phase, e0)
        acc.d += d
        acc.d_err += d * rel
        acc.u += u
        acc.u_err += u * rel
        return acc


def _half_exp_cells(
    h: float, lo: int, hi: int, phase: float, e0: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(D, U, relative error) on the cells of the grid t_i = i·h + φ (i = lo..hi − 1) of the
    density (1/4)e^{(l − ε0)/2} on (−ε0, ε0) (the Laplace pair's; see :class:`LaplacePair` for
    the closed forms, which involve no cancellation)."""
    i = np.arange(lo, hi, dtype=np.float64)
    a = i * h + phase
    b = (i + 1.0) * h + phase
    a2 = np.maximum(a, -e0)
    b2 = np.minimum(b, e0)
    live = b2 > a2
    width = np.where(live, b2 - a2, 0.0)
    s_w = np.sinh(width / 4.0)
    # 2e^{x}·sinh(y) = e^{x + y}·(1 − e^{−2y}) (y ≥ 0): no sinh overflow on wide cells, whose
    # e^{x} underflows (0·inf would be NaN). D's exponent (a′ + b′)/4 − ε0/2 is ≤ 0; U's,
    # b − ε0/2 − (a′ + b′)/4, may exceed the float range on a wide cell: U = inf there.
    y_d = np.where(live, (a2 + b2 - 2.0 * a) / 4.0, 0.0)
    y_u = np.where(live, (2.0 * b - a2 - b2) / 4.0, 0.0)
    d = np.exp((a2 + b2) / 4.0 - e0 / 2.0) * -np.expm1(-2.0 * y_d) * s_w
    with np.errstate(over="ignore"):
        u = np.exp(b - e0 / 2.0 - (a2 + b2) / 4.0) * -np.expm1(-2.0 * y_u) * s_w
    d = np.where(live, d, 0.0)
    u = np.where(live, u, 0.0)
    # Relative error: a few ulps per elementary function, plus the node rounding (|t|·u, an
    # absolute error in the exponents and in the sinh arguments, relative to width/4).
    rel = 16 * U + U * (np.abs(a) + np.abs(b) + e0) * (1.0 + 4.0 / np.maximum(width, h))
    return d, u, rel


# -------------------------------------------------------------------------------------------------
# bounded range

#: Taylor coefficients 1/(2k + 1)! of sinh(y)/y − 1 = Σ_{k≥1} y^{2k}/(2k + 1)!, k = 1..13: for
#: y < 2 the first omitted term is below 2^{28}/29! < 4e-23 of the sum (≥ y²/6).
_SHC_COEFFS = tuple(1.0 / math.factorial(2 * k + 1) for k in range(13, 0, -1))


def _log_shc(y: FloatArray) -> FloatArray:
    """log(sinh(y)/y) for y ≥ 0, to a relative error of at most 8u.

    y < 2: log1p of the Taylor series of sinh(y)/y − 1 (positive terms, Horner: ~2u, then log1p);
    y ≥ 2: y − log(2y) + log1p(−e^{−2y}), whose terms' rounding is ≤ 4u·(y + log 2y) while the
    value is ≥ y − log(2y) ≥ 0.59, a relative ≤ 8u.
    """
    y = np.asarray(y, dtype=np.float64)
    small = y < 2.0
    ys = np.where(small, y, 0.0)
    y2 = ys * ys
    poly = np.zeros_like(ys)
    for c in _SHC_COEFFS:
        poly = poly * y2 + c
    out_small = np.log1p(poly * y2)
    yl = np.where(small, 2.0, y)
    out_large = yl - np.log(2.0 * yl) + np.log1p(-np.exp(-2.0 * yl))
    return np.asarray(np.where(small, out_small, out_large), dtype=np.float64)


#: Taylor coefficients (−1)^n/(n + 1)! of g(w) = (1 − e^{−w})/w, n = 0..17 (|w| < 1/2: the first
#: omitted term is below 2^{−18}/19! < 4e-23).
_G_COEFFS = tuple((-1.0) ** n / math.factorial(n + 1) for n in range(17, -1, -1))


def _one_minus_exp_ratio(w: ComplexArray) -> tuple[ComplexArray, FloatArray]:
    """g(w) = (1 − e^{−w})/w for complex w with Re w ≥ 0, and a bound on its absolute error.

    |w| < 1/2: the Taylor series (|g| ≥ 0.78 there; Horner's rounding ≤ 8u|g|, and w's own
    rounding, a relative u, moves g by at most u|w|·|g′| ≤ u); else the quotient, whose numerator
    1 − e^{−w} is off by ≤ 8u from its own rounding plus |e^{−w}|·4u|w| from w's (the phase of a
    large Im w is known only to an absolute u|w|), divided by |w| ≥ 1/2.
    """
    w = np.asarray(w, dtype=np.complex128)
    small = np.abs(w) < 0.5
    ws = np.where(small, w, 0.0)
    series = np.zeros_like(ws)
    for c in _G_COEFFS:
        series = series * ws + c
    wl = np.where(small, 1.0, w)
    quotient = -np.expm1(-wl) / wl
    g = np.where(small, series, quotient)
    num_err = 8.0 * U + 4.0 * U * np.abs(wl) * np.exp(-wl.real)
    err = np.where(small, 8.0 * U * np.abs(series) + U, num_err / np.abs(wl) + 2.0 * U * np.abs(g))
    return np.asarray(g, dtype=np.complex128), np.asarray(err, dtype=np.float64)


def br_log_mgfs(etas: FloatArray, beta: FloatArray) -> FloatArray:
    """log E_P[e^{βL}] of the bounded-range pairs of η = ``etas`` (1-D) at the orders ``beta``
    (1-D): shape (etas.size, beta.size); :meth:`BoundedRangePair.log_mgf` is its one-row case.
    log(sinh(xη)/(2x sinh(η/2))) = log shc(|x|η) − log shc(η/2), x = β + 1/2, shc(y) = sinh(y)/y."""
    e = np.asarray(etas, dtype=np.float64)[:, None]
    y = np.abs(np.asarray(beta, dtype=np.float64)[None, :] + 0.5) * e
    with np.errstate(over="ignore"):
        return np.asarray(_log_shc(y) - _log_shc(0.5 * e), dtype=np.float64)


def br_tilted_cfs(
    etas: FloatArray, a: float, omega: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:meth:`BoundedRangePair.tilted_cf` of the pairs of η = ``etas`` (1-D) at the tilt a and the
    frequencies ``omega`` (1-D): (real part, imaginary part, error bound), shape
    (etas.size, omega.size), with the same values and bounds as the method."""
    e = np.asarray(etas, dtype=np.float64)[:, None]
    om = np.asarray(omega, dtype=np.float64)[None, :]
    m = br_log_mgfs(e[:, 0], np.array([a]))
    pref = np.exp((a + 0.5) * e - m - _log_shc(0.5 * e))
    g, g_err = _one_minus_exp_ratio(np.asarray(2.0 * e * ((a + 0.5) + 1j * om), np.complex128))
    phi = pref * np.exp(1j * (om * e)) * g
    arg = 4.0 + np.abs(om) * e + (a + 1.0) * e + np.abs(m)
    err = pref * (g_err + 16.0 * U * arg * np.abs(g)) + 2.0 * U * np.abs(phi)
    return phi.real, phi.imag, np.asarray(err, dtype=np.float64)


def br_cf_envelopes(etas: FloatArray, a: float, omega: float) -> FloatArray:
    """:meth:`BoundedRangePair.cf_envelope` of the pairs of η = ``etas`` (1-D), vectorised."""
    e = np.asarray(etas, dtype=np.float64)
    m = br_log_mgfs(e, np.array([a]))[:, 0]
    x = a + 0.5
    log_pref = x * e - m - _log_shc(0.5 * e)
    log_cb = log_pref + np.log1p(np.exp(-2.0 * x * e)) - np.log(2.0 * e)
    log_cb -= math.log(math.hypot(x, omega))
    g0, _ = _one_minus_exp_ratio(np.asarray(2.0 * e * x + 0j, np.complex128))
    log_c0 = log_pref + np.log(np.abs(g0))
    fudge = 1.0 + 64.0 * U * (4.0 + (a + 1.0) * e + np.abs(m))
    return np.asarray(np.exp(np.minimum(np.minimum(log_c0, log_cb), 700.0)) * fudge)


@dataclass(frozen=True, slots=True)
class BoundedRangePair(DominatingPair):
    """A pair dominating every η-bounded-range mechanism (the exponential mechanism, one-shot
    top-k's rounds) in both orders, hence their adaptive compositions.

    Law of L under P: the density p(l) = e^{(η + l)/2} / (2(e^η − 1)) on (−η, η), no atoms; under
    Q the density is e^{−l}p(l), which is p(−l), so the pair is symmetric. Its profile is exactly
    the supremum over η-BR mechanisms,

        δ(ε) = ∫_ε^η (1 − e^{ε − l}) p(l) dl = (1 − e^{(ε − η)/2})² / (1 − e^{−η}),  0 ≤ ε ≤ η,

    attained for each ε by the two-point pair GRR_t with t = (ε + η)/2 (the k = 1 case of
    Dong–Durfee–Rogers 2020, Thm 3; :func:`sharpdp._divergences.br_delta`): a mechanism whose loss
    lies in [t − η, t] has E_Q[(e^L − e^ε)_+] at most that of the two-point law on the interval's
    ends with E_Q[e^L] = 1, by convexity. Every η-BR mechanism, in either order of every
    neighbouring pair and after any history, thus has hockey-stick divergences no larger than this
    pair's for ε ≥ 0, and for ε < 0 by the identity δ(ε) = 1 − e^ε + e^ε δ_rev(−ε). That makes it a
    dominating pair [Zhu–Dong–Wang 2022, Def 7], and products of dominating pairs dominate adaptive
    compositions [ibid., Thm 10]. (The density is the derivative's construction: P[L > ε] =
    δ(ε) − δ′(ε).)

    The ε-randomized-response pair, which dominates every η-DP mechanism, has mean loss
    η·tanh(η/2) ≈ η²/2; this pair's is ≈ η²/6, so k exponential mechanisms compose far better
    (the zCDP bound η²/8 of Cesar–Rogers 2021 remains smaller in the mean, and the accountant takes
    the best of both). p is the Laplace pair's density part (:class:`LaplacePair` at ε0 = η)
    times 2/(1 − e^{−η}), so its cells reuse that closed form.
    """

    eta: float

    def __post_init__(self) -> None:
        if not (1e-300 <= self.eta < math.inf):  # (2/η must stay a float)
            raise InvalidParameter(f"BoundedRangePair needs 1e-300 <= eta < inf, got {self.eta!r}")

    def top_loss(self) -> float | None:
        return self.eta

    def weaker(self, step: float) -> DominatingPair:
        """The pair of the largest η′ = (1 + step)^j ≤ η: η′-BR mechanisms are η-BR, so the
        supremum profile grows with η."""
        return BoundedRangePair(round_down_geometric(self.eta, step)) if step > 0.0 else self

    def delta(self, epsilon: float) -> float:
        if epsilon >= self.eta:
            return 0.0
        if epsilon == -math.inf:
            return 1.0
        if epsilon < 0.0:
            # symmetric pair: δ(ε) = 1 − e^ε + e^ε δ(−ε), rounded up
            value = -math.expm1(epsilon) + math.exp(epsilon) * _divergences.br_delta(
                self.eta, -epsilon
            )
            return min(1.0, _math.up(value))
        return _divergences.br_delta(self.eta, epsilon)

    def log_mgf(self, beta: FloatArray) -> FloatArray:
        """log E_P[e^{βL}] = log(sinh(xη)/(2x sinh(η/2))), x = β + 1/2, written
        log(sinh(|x|η)/(|x|η)) − log(sinh(η/2)/(η/2)) (no cancellation between large terms;
        :func:`br_log_mgfs`)."""
        b = np.asarray(beta, dtype=np.float64)
        row = br_log_mgfs(np.array([self.eta]), b.reshape(-1))[0]
        return np.asarray(row.reshape(b.shape), dtype=np.float64)

    def mgf_slack(self) -> float:
        """Each log(sinh(y)/y) is within 8u of itself, so the log-MGF at any β is within
        9u·|value| + 16u·log(sinh(η/2)/(η/2)); the analysis allows 16u·|value|, this the rest."""
        return 64.0 * U * float(_log_shc(np.array([0.5 * self.eta]))[0])

    def loss_bound(self) -> float:
        return self.eta

    def tilted_cf(self, a: float, omega: FloatArray) -> tuple[ComplexArray, FloatArray] | None:
        """E_P[e^{(a + iω)L}]/e^m = e^{iωη}·e^{(a + 1/2)η − m}·g(2ηz)/shc(η/2), with
        z = a + 1/2 + iω, g(w) = (1 − e^{−w})/w and shc(y) = sinh(y)/y (sinh(zη) =
        e^{zη}(1 − e^{−2zη})/2; no 1/η that could overflow); :func:`br_tilted_cfs`."""
        om = np.asarray(omega, dtype=np.float64)
        re, im, err = br_tilted_cfs(np.array([self.eta]), a, om.reshape(-1))
        phi = (re[0] + 1j * im[0]).reshape(om.shape)
        return np.asarray(phi, dtype=np.complex128), np.asarray(err[0].reshape(om.shape))

    def cf_envelope(self, a: float, omega: float) -> float:
        """|1 − e^{−w}| ≤ 1 + e^{−2xη} bounds |φ(ω′)| by prefactor·(1 + e^{−2xη})/(2η|z|),
        non-increasing in ω′ ≥ ω; and |g| ≤ g(2xη) = φ(0)/prefactor always
        (:func:`br_cf_envelopes`)."""
        return float(br_cf_envelopes(np.array([self.eta]), a, omega)[0])

    def _range(self, tail: float) -> tuple[float, float]:
        return -self.eta, self.eta

    def _contents(self, h: float, lo: int, hi: int, phase: float) -> GridContents:
        acc = GridContents.empty(h, lo, hi, phase, 0.0)
        d, u, rel = _half_exp_cells(h, lo, hi, phase, self.eta)
        scale = 2.0 / -math.expm1(-self.eta)  # to total mass 1 (rounding: a relative 3u)
        acc.d = d * scale
        acc.u = u * scale
        acc.d_err = acc.d * (rel + 4 * U)
        acc.u_err = acc.u * (rel + 4 * U)
        return acc


# -------------------------------------------------------------------------------------------------
# Gaussian


@functools.lru_cache(maxsize=4096)
def _finite_envelope(pair: FinitePair, a: float) -> float:
    """:meth:`FinitePair.cf_envelope`, memoised (planning asks it many times per tilt)."""
    return pair._cf_envelope_uncached(a)


@functools.lru_cache(maxsize=4096)
def _laplace_tilted_parts(e0: float, a: float) -> tuple[float, float, float, float, float]:
    """(w1, w2, c0, pref, m) at the tilt a > 0: the atoms' tilted masses w1 (at ε0) and w2
    (at −ε0), the density part's c0 = C(a)/e^m, and pref with
    C(a + iω)/e^m = pref · e^{iωε0} (1 − e^{−2zε0})/(2z), z = a + 1/2 + iω, where
    C(s) = E_P[e^{sL}; density part] = (1/2)e^{−ε0/2} sinh((s + 1/2)ε0)/(s + 1/2).
    Memoised: planning asks it of every pair many times."""
    m = float(laplace_log_mgfs(np.array([e0]), np.array([a]))[0, 0])
    x = a + 0.5
    w1 = math.exp(math.log(0.5) + a * e0 - m)
    w2 = math.exp(math.log(0.5) - e0 - a * e0 - m)
    pref = math.exp(-0.5 * e0 + x * e0 - math.log(2.0) - m)
    c0 = pref * -math.expm1(-2.0 * x * e0) / (2.0 * x)
    return w1, w2, c0, pref, m


def _log_cell_mass(z1: FloatArray, z2: FloatArray) -> tuple[FloatArray, FloatArray]:
    """log(Φ(z2) − Φ(z1)) for z1 < z2 and a bound on its absolute error (vectorised).

    Tails use log Φ of the side away from the mode, so masses down to 1e-300 keep full relative
    accuracy; the error of log1mexp(d) is amplified by 1/(1 − e^{−d}), which is included.
    """
    from scipy.special import log_ndtr

    upper = z1 >= 0.0
    lower = z2 <= 0.0
    mid = ~(upper | lower)
    out = np.empty_like(z1)
    err = np.empty_like(z1)
    if upper.any():
        la = log_ndtr(-z1[upper])
        lb = log_ndtr(-z2[upper])
        dd = la - lb
        out[upper] = la + np.log(-np.expm1(-np.maximum(dd, 1e-300)))
        amp = 1.0 / -np.expm1(-np.maximum(dd, 1e-300))
        # ∂out/∂la = amp, ∂out/∂lb = −(amp − 1): each log-CDF has error κ(1 + |log Φ|)
        err[upper] = _KAPPA * (
            (1.0 + np.abs(la)) * amp + (1.0 + np.abs(lb)) * (amp - 1.0)
        ) + 4 * U * np.abs(out[upper])
    if lower.any():
        la = log_ndtr(z2[lower])
        lb = log_ndtr(z1[lower])
        dd = la - lb
        out[lower] = la + np.log(-np.expm1(-np.maximum(dd, 1e-300)))
        amp = 1.0 / -np.expm1(-np.maximum(dd, 1e-300))
        err[lower] = _KAPPA * (
            (1.0 + np.abs(la)) * amp + (1.0 + np.abs(lb)) * (amp - 1.0)
        ) + 4 * U * np.abs(out[lower])
    if mid.any():
        from scipy.special import ndtr

        pa = ndtr(z1[mid])
        pb = ndtr(z2[mid])
        val = pb - pa
        out[mid] = np.log(np.maximum(val, 1e-300))
        err[mid] = _KAPPA * (pa + pb) / np.maximum(val, 1e-300) * 2.0
    return out, err


#: Cells narrower than this many standard deviations use quadrature (see below).
_QUAD_WIDTH = 0.25
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)
#: Gauss–Legendre (n = 8) error constant (n!)^4/((2n + 1)((2n)!)^2), for the bound
#: |error| ≤ w^{2n+1}·const·M/r^{2n}, M = max|f| on the disk of radius r around the cell
#: (Cauchy's estimate |f^{(2n)}| ≤ (2n)!·M/r^{2n} in the classical remainder
#: w^{2n+1}(n!)^4 f^{(2n)}/((2n+1)((2n)!)^3)).
_GL_CONST = math.factorial(8) ** 4 / (17 * math.factorial(16) ** 2)


def _gauss_cells_quadrature(
    a: FloatArray, b: FloatArray, mu: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """D and U of the Gaussian loss law N(μ²/2, μ²) on cells (a, b), by 8-point Gauss–Legendre.

    In z = (l − μ²/2)/μ, with s = z − z_a ∈ [0, w], w = (b − a)/μ:
    D = ∫ φ(z_a + s)(1 − e^{−μs}) ds and U = ∫ φ(z_a + s)(e^{μ(w − s)} − 1) ds: integrals of
    positive analytic functions, so no cancellation. Error bound (Cauchy's estimate on the disk of
    radius r = min(1, 1/μ) around the cell): |φ| ≤ e^{r²/2}·e^{−d²/2}/√(2π) (d the distance from 0
    to [z_a − r, z_b + r]) and |1 − e^{−μζ}|, |e^{μζ} − 1| ≤ μ(w + r)e^{μ(w + r)}, so
    |error| ≤ w^{17}·const·M/r^{16}; plus 32 ulps for the float sums, plus the node rounding (half
    an ulp of |t|, relative |t|u/(μw) after scaling). Used for w ≤ 1/4 and μw = h ≤ 1/2.
    """
    m = 0.5 * mu * mu
    za = (a - m) / mu
    w = (b - a) / mu
    half = 0.5 * w
    s_k = half[:, None] * (_GL_NODES[None, :] + 1.0)
    phi = np.exp(-0.5 * (za[:, None] + s_k) ** 2) / math.sqrt(2.0 * math.pi)
    wk = _GL_WEIGHTS[None, :]
    d = half * (wk * phi * -np.expm1(-mu * s_k)).sum(axis=1)
    u = half * (wk * phi * np.expm1(mu * (w[:, None] - s_k))).sum(axis=1)
    zb = za + w
    r = min(1.0, 1.0 / mu)  # disk radius (in z), so that μ·r <= 1
    dist = np.where(
        (za - r <= 0.0) & (zb + r >= 0.0), 0.0, np.minimum(np.abs(za - r), np.abs(zb + r))
    )
    big_m = math.exp(0.5 * r * r) * np.exp(-0.5 * dist * dist) / math.sqrt(2.0 * math.pi)
    big_m = big_m * mu * (w + r) * np.exp(mu * (w + r))
    quad = w**17 * _GL_CONST * big_m / r**16
    node = U * (np.abs(a) + np.abs(b)) * (1.0 + 1.0 / np.maximum(mu * w, 1e-300))
    d_err = d * (32 * U + 4 * node) + quad
    u_err = u * (32 * U + 4 * node) + quad
    return d, d_err, u, u_err


@dataclass(frozen=True, slots=True)
class GaussianPair(DominatingPair):
    """The pair (N(0, 1), N(μ, 1)): μ-GDP, the Gaussian mechanism with μ = Δ/σ.

    Loss law: N(μ²/2, μ²) under P and N(−μ²/2, μ²) under Q [Balle–Wang 2018; Dong–Roth–Su 2019].
    Symmetric (y ↦ μ − y). Profile δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) [Balle–Wang 2018, Thm 8].
    """

    mu: float

    def gdp_mu(self) -> float | None:
        return self.mu

    def top_loss(self) -> float | None:
        return math.inf if self.mu > 0.0 else 0.0

    def weaker(self, step: float) -> DominatingPair:
        """μ′-GDP at the largest μ′ = (1 + step)^j ≤ μ: μ′-GDP is a post-processing of μ-GDP
        for μ′ ≤ μ [Dong–Roth–Su 2019, the tradeoff curves G_μ are ordered in μ]."""
        return GaussianPair(round_down_geometric(self.mu, step)) if step > 0.0 else self

    def delta(self, epsilon: float) -> float:
        if epsilon == math.inf:
            return 0.0
        if epsilon == -math.inf:
            return 1.0
        if epsilon < 0.0:
            # δ(ε) = 1 − e^ε + e^ε δ(−ε) (symmetric pair)
            return min(1.0, -math.expm1(epsilon) + math.exp(epsilon) * self.delta(-epsilon))
        return _math.exp_up(_divergences.gaussian_log_delta(self.mu, epsilon))

    def log_mgf(self, beta: FloatArray) -> FloatArray:
        b = np.asarray(beta, dtype=np.float64)
        return np.asarray(0.5 * b * (1.0 + b) * self.mu * self.mu, dtype=np.float64)

    def tilted_cf(self, a: float, omega: FloatArray) -> tuple[ComplexArray, FloatArray] | None:
        """exp((μ²/2)(iω(2a + 1) − ω²)): the loss is N(μ²/2, μ²) under P."""
        om = np.asarray(omega, dtype=np.float64)
        v = self.mu * self.mu
        z = 0.5 * v * (1j * om * (2.0 * a + 1.0) - om * om)
        phi = np.exp(z)
        err = 16.0 * U * np.abs(phi) * (4.0 + np.abs(z) + v * a * (a + 1.0))
        return np.asarray(phi, dtype=np.complex128), np.asarray(err, dtype=np.float64)

    def cf_envelope(self, a: float, omega: float) -> float:
        v = self.mu * self.mu
        return math.exp(-0.5 * v * omega * omega) * (1.0 + 64.0 * U * (4.0 + v * a * (a + 1.0)))

    def _range(self, tail: float) -> tuple[float, float]:
        from scipy.special import ndtri

        z = -float(ndtri(tail))
        m = 0.5 * self.mu * self.mu
        return m - z * self.mu, m + z * self.mu

    def _contents(self, h: float, lo: int, hi: int, phase: float) -> GridContents:
        mu = self.mu
        acc = GridContents.empty(h, lo, hi, phase, 0.0)
        i = np.arange(lo, hi, dtype=np.float64)
        a = i * h + phase
        b = (i + 1.0) * h + phase
        if h / mu <= _QUAD_WIDTH and h <= 0.5:
            d, d_err, u, u_err = _gauss_cells_quadrature(a, b, mu)
            acc.d, acc.d_err, acc.u, acc.u_err = d, d_err, u, u_err
        else:
            self._cells_by_differences(acc, a, b, h)
        self._tails(acc, lo * h + phase, hi * h + phase)
        return acc

    def _cells_by_differences(
        self, acc: GridContents, a: FloatArray, b: FloatArray, h: float
    ) -> None:
        """D = P[cell] − e^a Q[cell], U = e^b Q[cell] − P[cell] from normal CDF differences (wide
        cells: the cancellation costs at most a factor ~1/w² with w = h/μ ≥ 1/4)."""
        mu = self.mu
        m = 0.5 * mu * mu
        # P[cell] and e^a Q[cell], in logs
        lp, lp_err = _log_cell_mass((a - m) / mu, (b - m) / mu)
        lq, lq_err = _log_cell_mass((a + m) / mu, (b + m) / mu)
        node_err = U * (np.abs(a) + np.abs(b)) * (1.0 + 1.0 / mu)  # float node values
        p = np.exp(lp)
        eq = np.exp(a + lq)
        p_err = p * np.expm1(np.minimum(lp_err + node_err + 2 * U, 10.0))
        eq_err = eq * np.expm1(np.minimum(lq_err + node_err + 4 * U * (1.0 + np.abs(a)), 10.0))
        ehm1 = math.expm1(h)
        d = p - eq
        u = eq * ehm1 + (eq - p)
        d_err = p_err + eq_err + 2 * U * (p + eq)
        u_err = p_err + eq_err * (1.0 + ehm1) + 4 * U * (p + eq * (1.0 + ehm1))
        acc.d = np.maximum(d, 0.0)
        acc.u = np.maximum(u, 0.0)
        acc.d_err = d_err + np.maximum(-d, 0.0)
        acc.u_err = u_err + np.maximum(-u, 0.0)

    def _tails(self, acc: GridContents, t_lo: float, t_hi: float) -> None:
        """Contents below t_lo and above t_hi, from normal tail probabilities (log scale)."""
        from scipy.special import log_ndtr

        mu = self.mu
        m = 0.5 * mu * mu
        # below the grid: p_low = Φ((t_lo − m)/μ), u_low = e^{t_lo} Φ((t_lo + m)/μ) − p_low
        lpl = float(log_ndtr((t_lo - m) / mu))
        lql = float(log_ndtr((t_lo + m) / mu)) + t_lo
        p_low = math.exp(lpl)
        eq_low = math.exp(lql) if lql < 700.0 else math.inf  # (u_low may be huge; not used)
        acc.p_low = p_low
        acc.p_low_err = p_low * (_KAPPA * (2.0 + abs(lpl)) + U * abs(t_lo))
        acc.u_low = max(eq_low - p_low, 0.0)
        acc.u_low_err = (eq_low + p_low) * (
            _KAPPA * (2.0 + abs(lpl) + abs(lql)) + 2 * U * abs(t_lo)
        ) + max(p_low - eq_low, 0.0)
        # above the grid: P-tail and e^{t_hi} Q-tail
        lpu = float(log_ndtr(-(t_hi - m) / mu))
        lqu = float(log_ndtr(-(t_hi + m) / mu)) + t_hi
        p_up = math.exp(lpu)
        eq_up = math.exp(lqu)
        acc.eq_up = eq_up
        acc.eq_up_err = eq_up * (_KAPPA * (2.0 + abs(lqu)) + 2 * U * abs(t_hi))
        acc.d_up = max(p_up - eq_up, 0.0)
        acc.d_up_err = (p_up + eq_up) * (
            _KAPPA * (2.0 + abs(lpu) + abs(lqu)) + 2 * U * abs(t_hi)
        ) + max(eq_up - p_up, 0.0)
