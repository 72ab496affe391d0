"""The compositions of many distinct items named by the speed target (40 and 100 distinct items),
checked against an independent computation: every value is valid (never below the exact one) and
within the default accuracy (1e-4 relative) of it, for ε(δ) and δ(ε).

Speed is not asserted here (``python bench/accounting.py --only small`` measures it).

**The independent reference** never calls sharpdp. For a product of pairs (P, Q) with privacy
loss L = Σ L_i, δ(ε) = P[L = ∞] + E_Q[(e^L − e^ε)_+; L < ∞], where under Q the L_i are independent
and f(l) = (e^l − e^ε)_+ is convex. Every item's atoms lie on the lattice g·ℤ, g = 2⁻¹⁰, hence on
the nodes of the grid of spacing h = g/M:

* Laplace with ε0 = m·g (``Laplace(scale=1, sensitivity=ε0)``; y ~ Lap(0, 1) under Q, loss
  ε0 − 2y on y ∈ (0, ε0)): Q-masses e^{−ε0}/2 at ε0 and 1/2 at −ε0, and the Q-density
  (1/4)e^{−(l + ε0)/2} on (−ε0, ε0), which holds (1/2)e^{−(c + ε0)/2}(1 − e^{−h/2}) on a cell
  (c, c + h), with its conditional mean at c + θ, θ = 2 − h/(e^{h/2} − 1), the same for every
  cell and every Laplace item;
* binary randomized response and ε0-DP (whose worst-case pair is ε0-randomized response,
  Kairouz–Oh–Viswanath 2015, Thm 2.5): Q-masses 1/(1 + e^{ε0}) at ε0, e^{ε0}/(1 + e^{ε0}) at −ε0;
* (ε0, δ0)-DP: that pair with probability 1 − δ0, and else an infinite loss under P (a loss of
  −∞, which f ignores, under Q).

The two ends of the bracket (both second order in h):

* **upper**: each cell's Q-mass split between the cell's ends preserving its mass and mean (a
  mean-preserving spread: E f can only grow, f being convex);
* **lower**: each cell's Q-mass moved to its conditional mean c + θ (conditional Jensen, given
  every item's cell, f of the sum being convex in each term). The composed law then lives on
  {j·h + n·θ}, n the number of Laplace items whose loss fell in a cell: it is composed in layers
  by n (layers beyond ``LAYERS`` are dropped, which only lowers E f, and checked negligible).

Each law is composed by FFT of its exponentially tilted masses (tilting commutes with
convolution; the tilt centres the law at the ε asked for, so the bins δ(ε) sums are the largest
and the FFT's float error is relative there: a second tilt checks it to 1e-9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.fft import next_fast_len

import sharpdp as sdp
from sharpdp.accounting import pld

G = 2.0**-10  # the lattice of every atom
ACCURACY = 1e-4  # compose's default accuracy
DELTA = 1e-6
FLOAT = 1e-9  # relative float slack of the reference (checked by a second tilt)
LAYERS = 48  # most Laplace items with a loss inside a cell tracked by the lower end


@dataclass(frozen=True)
class Law:
    """A discretised Q-law of the loss on the grid i·h: Q-masses at indices offset, offset + 1, …
    (``on``: on the nodes; ``shifted``: at the nodes + θ, lower end only), and δ0."""

    offset: int
    on: np.ndarray
    shifted: np.ndarray | None
    delta0: float


def theta(h: float) -> float:
    """The conditional mean, within a cell of width h, of the density ∝ e^{−l/2}."""
    return 2.0 - h / math.expm1(h / 2.0)


def laplace_law(m: int, per_unit: int, lower: bool) -> Law:
    eps0 = m * G
    n = m * per_unit  # ε0 = n·h exactly
    h = G / per_unit
    on = np.zeros(2 * n + 1)  # indices −n..n
    on[0] = 0.5
    on[-1] = 0.5 * math.exp(-eps0)
    c = np.arange(-n, n) * h  # cell lower ends
    cells = 0.5 * np.exp(-(c + eps0) / 2.0) * -math.expm1(-h / 2.0)
    if lower:
        shifted = np.zeros(2 * n + 1)
        shifted[:-1] = cells
        return Law(-n, on, shifted, 0.0)
    share = theta(h) / h  # of each cell's mass to its upper end (the mean is kept)
    on[1:] += cells * share
    on[:-1] += cells * (1.0 - share)
    return Law(-n, on, None, 0.0)


def rr_law(m: int, per_unit: int, delta0: float = 0.0) -> Law:
    eps0 = m * G
    n = m * per_unit
    on = np.zeros(2 * n + 1)
    on[-1] = 1.0 / (1.0 + math.exp(eps0))
    on[0] = 1.0 / (1.0 + math.exp(-eps0))
    return Law(-n, on, None, delta0)


class Composed:
    """The composition of the finite parts of the laws (normalised), by FFT at one tilt."""

    def __init__(self, laws: list[Law], h: float, tilt: float) -> None:
        finite = 1.0
        for law in laws:
            finite *= 1.0 - law.delta0
        self.inf = 1.0 - finite
        size = sum(law.on.size - 1 for law in laws) + 1
        big = next_fast_len(size, real=True)  # any length ≥ size: the convolution does not wrap
        layers = 1 + min(LAYERS, sum(law.shifted is not None for law in laws))
        spectra = np.zeros((layers, big // 2 + 1), dtype=np.complex128)
        spectra[0] = 1.0
        active = 1  # layer n is 0 until n laws with a shifted part are in: those are not updated
        carry = np.empty(big // 2 + 1, dtype=np.complex128)
        log_scale = 0.0
        # the laws without a shifted part first (they then multiply one layer): the product
        # does not depend on the order
        for law in sorted(laws, key=lambda law: law.shifted is not None):
            losses = (law.offset + np.arange(law.on.size)) * h
            weight = np.exp(tilt * (losses - losses[-1]))  # ≤ 1
            log_scale += tilt * float(losses[-1])
            on = np.fft.rfft(law.on * weight, big)
            if law.shifted is None:
                spectra[:active] *= on
                continue
            shifted = np.fft.rfft(law.shifted * weight * math.exp(tilt * theta(h)), big)
            # layer n ← layer n · on + layer n − 1 · shifted (n ≥ 1), layer 0 ← layer 0 · on (a
            # layer beyond the last kept is dropped): from the top down, one layer at a time (in
            # cache), each reading the layer below before it is updated
            top = min(active, layers - 1)
            for n in range(top, 0, -1):
                np.multiply(spectra[n - 1], shifted, out=carry)
                if n < active:
                    spectra[n] *= on
                    spectra[n] += carry
                else:  # layer n was 0
                    spectra[n] = carry
            spectra[0] *= on
            active = top + 1
        tilted = np.fft.irfft(spectra, big, axis=1)[:, :size]
        if layers <= sum(law.shifted is not None for law in laws):  # layers were dropped:
            # the last one kept must be negligible, and those beyond it decay faster
            assert np.abs(tilted[-1]).sum() <= 1e-12 * np.abs(tilted).sum()
        base = (sum(law.offset for law in laws) + np.arange(size)) * h
        positions, log_mass = [], []
        for n in range(layers):
            keep = tilted[n] > 0.0
            loss = base[keep] + n * theta(h)
            positions.append(loss)
            log_mass.append(np.log(tilted[n][keep]) + log_scale - tilt * loss)
        order = np.argsort(np.concatenate(positions), kind="stable")
        self.losses = np.concatenate(positions)[order]
        self.log_mass = np.concatenate(log_mass)[order]

    def delta(self, epsilon: float) -> float:
        above = self.losses > epsilon
        terms = np.exp(self.log_mass[above] + self.losses[above]) * -np.expm1(
            epsilon - self.losses[above]
        )
        return self.inf + (1.0 - self.inf) * float(np.sum(terms))

    def epsilon(self, delta: float) -> float:
        """The least ε with δ(ε) ≤ ``delta``: between consecutive losses δ(ε) = S_1 − e^ε·S_0
        (S_1 = Σ q e^l, S_0 = Σ q over the atoms above), inverted in closed form."""
        target = (delta - self.inf) / (1.0 - self.inf)
        s_1 = np.cumsum(np.exp(self.log_mass + self.losses)[::-1])[::-1]  # Σ_{j ≥ k}
        s_0 = np.cumsum(np.exp(self.log_mass)[::-1])[::-1]
        # δ at ε = l_k counts the atoms above k: D_k = S_1(k+1) − e^{l_k} S_0(k+1)
        d_at = np.append(s_1[1:] - np.exp(self.losses[:-1]) * s_0[1:], 0.0)
        k = int(np.nonzero(d_at <= target)[0][0])  # D is non-increasing in k
        if k == 0:
            return float(self.losses[0])
        # on (l_{k−1}, l_k]: δ(ε) = S_1(k) − e^ε S_0(k)
        return math.log((s_1[k] - target) / s_0[k])


def tilt_at(laws: list[Law], h: float, epsilon: float) -> float:
    """The tilt whose tilted composed Q-law has mean ε (bisection; the mean increases with it):
    the sum of the laws' tilted means (the laws' masses laid end to end, summed law by law)."""
    losses = np.concatenate([(law.offset + np.arange(law.on.size)) * h for law in laws])
    masses = np.concatenate(
        [law.on + (0.0 if law.shifted is None else law.shifted) for law in laws]
    )
    sizes = np.array([law.on.size for law in laws])
    starts = np.cumsum(sizes) - sizes
    tops = np.repeat(losses[starts + sizes - 1], sizes)  # each law's largest loss

    def mean(lam: float) -> float:
        w = masses * np.exp(lam * (losses - tops))  # ≤ the masses
        return float(np.sum(np.add.reduceat(w * losses, starts) / np.add.reduceat(w, starts)))

    lo, hi = 0.0, 400.0
    if mean(hi) < epsilon:
        raise AssertionError("no tilt centres the law at ε")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mean(mid) < epsilon else (lo, mid)
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Reference:
    eps_lo: float
    eps_hi: float
    delta_lo: float
    delta_hi: float


def reference(spec: list[tuple[str, int, float]], per_unit: int, epsilon: float) -> Reference:
    """Brackets of the exact ε(DELTA) and δ(``epsilon``) of the composition ``spec``."""
    h = G / per_unit
    sides = []
    for lower in (True, False):
        laws = [
            laplace_law(m, per_unit, lower) if kind == "laplace" else rr_law(m, per_unit, d0)
            for kind, m, d0 in spec
        ]
        lam = tilt_at(laws, h, epsilon)
        values = []
        for t in (lam, lam + 2.0):  # the second tilt checks the FFT's float error
            c = Composed(laws, h, t)
            values.append((c.epsilon(DELTA), c.delta(epsilon)))
        (e1, d1), (e2, d2) = values
        assert abs(e1 - e2) <= FLOAT * e1, values
        assert abs(d1 - d2) <= FLOAT * d1, values
        sides.append(values[0])
    (e_lo, d_lo), (e_hi, d_hi) = sides
    return Reference(e_lo * (1 - FLOAT), e_hi * (1 + FLOAT), d_lo * (1 - FLOAT), d_hi * (1 + FLOAT))


def items(spec: list[tuple[str, int, float]]) -> list[sdp.Guarantee]:
    out: list[sdp.Guarantee] = []
    for kind, m, d0 in spec:
        eps0 = m * G
        if kind == "laplace":
            out.append(sdp.Laplace(scale=1.0, sensitivity=eps0))
        elif kind == "rr":
            out.append(sdp.RandomizedResponse(epsilon=eps0, categories=2))
        elif kind == "pure":
            out.append(sdp.PureDP(eps0))
        else:
            out.append(sdp.ApproxDP(eps0, d0))
    return out


LAPLACE_40 = [("laplace", m, 0.0) for m in range(10, 50)]
LAPLACE_100 = [("laplace", m, 0.0) for m in range(10, 110)]
# 100 distinct items: 40 Laplace, 20 randomized response, 20 ε0-DP, 20 (ε0, δ0)-DP
MIX_100 = (
    [("laplace", 10 + 2 * i, 0.0) for i in range(40)]
    + [("rr", 5 + 2 * i, 0.0) for i in range(20)]
    + [("pure", 6 + 2 * i, 0.0) for i in range(20)]
    + [("approx", 7 + 2 * i, 1e-9 * (i + 1)) for i in range(20)]
)
CASES = {"40 Laplace": (LAPLACE_40, 8), "100 Laplace": (LAPLACE_100, 4), "100 mix": (MIX_100, 8)}


@pytest.fixture(scope="module", params=list(CASES))
def case(request: pytest.FixtureRequest) -> tuple[list[sdp.Guarantee], Reference, float]:
    spec, per_unit = CASES[request.param]
    pld.clear_cache()
    eps = sdp.compose(items(spec)).epsilon(DELTA)
    return items(spec), reference(spec, per_unit, eps), eps


def test_the_reference_bracket_is_narrow(
    case: tuple[list[sdp.Guarantee], Reference, float],
) -> None:
    _, ref, _ = case
    # so that "within 1e-4 of the reference's lower end" is essentially "within 1e-4 of exact"
    assert ref.eps_hi - ref.eps_lo <= 1e-6 * ref.eps_hi
    assert ref.delta_hi - ref.delta_lo <= 1e-5 * ref.delta_hi


def test_epsilon_is_valid_and_within_the_accuracy(
    case: tuple[list[sdp.Guarantee], Reference, float],
) -> None:
    its, ref, eps = case
    assert eps >= ref.eps_lo  # never below the exact value (which is ≥ eps_lo)
    assert eps <= ref.eps_lo * (1.0 + ACCURACY)  # hence within 1e-4 of the exact value
    c = sdp.compose(its)
    assert c.delta(c.epsilon(DELTA)) <= DELTA


def test_delta_is_valid_and_within_the_accuracy(
    case: tuple[list[sdp.Guarantee], Reference, float],
) -> None:
    its, ref, eps = case
    pld.clear_cache()
    c = sdp.compose(its)  # a fresh composition: δ(ε) on its own, not after ε(δ)
    d = c.delta(eps)
    assert d >= ref.delta_lo
    assert d <= ref.delta_lo * (1.0 + ACCURACY)
    assert c.epsilon(d) <= eps


# -- the short cuts behind the speed -------------------------------------------------------------


def test_an_optimistic_side_composed_alone_is_the_one_plds_returns() -> None:
    """The refinement composes a finer grid's optimistic side first (``_optimistic_half``);
    completing the grid reuses it: one law per side and grid, whichever way it was built."""
    its = items(LAPLACE_40[:12])
    r = pld.compose_pld(its)
    fresh = pld.compose_pld(its)
    h, tilt = 2.0**-12, 8.0
    half = r._optimistic_half(h, tilt)
    pess, opt = r.plds(h, tilt)
    assert opt is half
    ref_pess, ref_opt = fresh.plds(h, tilt)
    for eps in (0.0, 0.1, 0.3):
        assert opt.delta(eps) == ref_opt.delta(eps)
        assert pess.delta(eps) == ref_pess.delta(eps)
        assert opt.delta(eps) <= pess.delta(eps)


def test_refinement_brackets_stay_certified_and_within_the_target() -> None:
    """Brackets paired across grids (a finer optimistic end, an earlier pessimistic one) are still
    brackets of the exact value, at the target width."""
    spec = LAPLACE_40
    r = pld.compose_pld(items(spec))
    lo, hi = r.epsilon_bracket(DELTA)
    ref = reference(spec, 8, hi)
    assert lo <= ref.eps_hi
    assert hi >= ref.eps_lo
    assert hi - lo <= ACCURACY * hi
    d_lo, d_hi = pld.compose_pld(items(spec)).delta_bracket(hi)
    assert d_lo <= ref.delta_hi
    assert d_hi >= ref.delta_lo
    assert d_hi - d_lo <= ACCURACY * d_hi


def test_zcdp_declines_on_an_approx_item_among_many_others() -> None:
    """(ε, δ > 0)-DP implies no zCDP bound: the analysis declines (before the certified
    conversions of the other items, which it tries last)."""
    its = [(sdp.Exponential(epsilon=0.01 + 0.001 * i), 2) for i in range(30)]
    its.append((sdp.ApproxDP(0.1, 1e-9), 1))
    rows = {row.name: row for row in sdp.compose(its).explain(delta=DELTA).rows}
    assert rows["zcdp"].value is None
    assert "ApproxDP" in rows["zcdp"].note


def test_planning_estimates_are_finite_and_near_the_value() -> None:
    r = pld.compose_pld(items(MIX_100))
    eps = r.epsilon(DELTA)
    assert 0.9 * eps <= r.saddle_epsilon(DELTA) <= 1.1 * eps
    assert 0.5 * DELTA <= r.saddle_delta(eps) <= 2.0 * DELTA


@settings(max_examples=200)
@given(data=st.data())
def test_the_windowed_lower_hull_is_the_whole_loop(data: st.DataObject) -> None:
    """The optimistic construction's lower-hull loop runs on a window of nodes around the
    negative masses, widened until the cascade of removals stays inside: the same masses as the
    loop over every node."""
    from sharpdp.accounting.pld import grid

    n = data.draw(st.integers(2, 300))
    w = np.array(data.draw(st.lists(st.floats(1e-9, 1.0), min_size=n, max_size=n)))
    for i in data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5)):
        w[i] = -data.draw(st.floats(1e-9, 5.0))
    for i in data.draw(st.lists(st.integers(0, n - 1), max_size=n // 3)):
        if w[i] > 0.0:
            w[i] = 0.0
    h = data.draw(st.sampled_from([1e-4, 1e-2, 0.5]))
    nz = np.nonzero(w != 0.0)[0]
    if nz[-1] != n - 1:
        nz = np.append(nz, n - 1)
    original = grid._remove_isolated_negatives
    try:
        grid._remove_isolated_negatives = lambda *args: None  # type: ignore[assignment]
        windowed = grid._remove_negatives(w.copy(), h)
    finally:
        grid._remove_isolated_negatives = original
    whole = grid._hull_loop(w.copy(), nz.tolist(), h, whole=True)
    assert whole is not None
    assert windowed[1] == whole[1]
    if whole[1]:
        np.testing.assert_array_equal(windowed[0], whole[0])


def _plain_forward(e: np.ndarray, d: np.ndarray, u: np.ndarray, start: float) -> np.ndarray:
    """The deficit recursion of the optimistic construction, step by step over every cell."""
    out = [start]
    c = start
    for i in range(e.size):
        di, ui = float(d[i]), float(u[i])
        if di <= 1e-6 * ui and di > c:
            c = di
            out[i] = c
        ei = float(e[i])
        if di > 0.0:
            ei = max(ei, ui - ui / di * c, 0.0)
        c = ei
        out.append(c)
    return np.array(out)


@settings(max_examples=300)
@given(data=st.data())
def test_the_deficit_recursion_skips_only_forced_steps(data: st.DataObject) -> None:
    """Where the triangle heights E do not rise the recursion's next deficit is E itself; filling
    those without the loop gives exactly the loop's deficits."""
    from sharpdp.accounting.pld import grid

    n = data.draw(st.integers(1, 60))
    mags = st.floats(1e-12, 1.0)
    d = np.array(data.draw(st.lists(st.one_of(st.just(0.0), mags), min_size=n, max_size=n)))
    u = np.array(data.draw(st.lists(st.one_of(st.just(0.0), mags), min_size=n, max_size=n)))
    if data.draw(st.booleans()):  # a smooth stretch: D and U move together
        d = np.sort(d)[:: data.draw(st.sampled_from([1, -1]))].copy()
        u = d * 1.01
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.where(d + u > 0.0, d * u / (d + u), 0.0) * (1.0 + 8 * 2.0**-53)
    start = data.draw(st.one_of(st.just(0.0), mags))
    np.testing.assert_array_equal(grid._forward(e, d, u, start), _plain_forward(e, d, u, start))
