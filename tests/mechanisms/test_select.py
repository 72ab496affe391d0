"""Exact sampling of the selection mechanisms: empirical laws against independent exact laws.

Each goodness-of-fit test uses a fixed seed and is calibrated so that a *correct* sampler fails it
with probability at most 1e-6: Pearson's chi-square statistic against ``chi2.isf(1e-6, dof)``, with
outcomes of expected count < 20 merged into one bin. The laws are computed here, independently of
sharpdp: softmax in mpmath, permutation enumeration for permute-and-flip, peeling products for
top-k, and for report-noisy-max with Laplace noise a closed form (sums of exponentials between
the kinks, at 60 digits) and quadrature (scipy's adaptive quadrature, over every candidate or one
at a time, and a vectorised Gauss–Legendre rule between the kinks).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from scipy import integrate
from tests.mechanisms._gof import assert_law

import sharpdp as sdp
from sharpdp.mechanisms import _race
from stable_ids import stable_id


def softmax_law(logits: Sequence[float]) -> dict[object, float]:
    with mpmath.workdps(40):
        w = [mpmath.e ** mpmath.mpf(x) if x > -math.inf else mpmath.mpf(0) for x in logits]
        total = mpmath.fsum(w)
        return {i: float(x / total) for i, x in enumerate(w)}


def permute_and_flip_law(q: Sequence[float], c: float) -> dict[object, float]:
    top = max(q)
    p = [math.exp(c * (x - top)) if x > -math.inf else 0.0 for x in q]
    law = dict.fromkeys(range(len(q)), 0.0)
    for order in itertools.permutations(range(len(q))):
        survive = 1.0
        for r in order:
            law[r] += survive * p[r]
            survive *= 1.0 - p[r]
    return {r: v / math.factorial(len(q)) for r, v in law.items()}


def laplace_noisy_max_law(q: Sequence[float], scale: float) -> dict[object, float]:
    """P[r wins] = ∫ f(x − q_r) Π_{s≠r} F(x − q_s) dx for Laplace(scale) noise, by quadrature."""

    def cdf(z: float) -> float:
        return 0.5 * math.exp(z / scale) if z < 0 else 1.0 - 0.5 * math.exp(-z / scale)

    law: dict[object, float] = {}
    for r, qr in enumerate(q):

        def integrand(x: float, qr: float = qr, r: int = r) -> float:
            dens = math.exp(-abs(x - qr) / scale) / (2 * scale)
            return dens * math.prod(cdf(x - qs) for s, qs in enumerate(q) if s != r)

        law[r] = integrate.quad(
            integrand,
            min(q) - 60 * scale,
            max(q) + 60 * scale,
            points=sorted(q),
            limit=400,
            epsabs=1e-14,
        )[0]
    return law


def laplace_noisy_max_law_vectorised(q: Sequence[float], scale: float) -> list[float]:
    """The same integrals for many candidates at once: Gauss–Legendre (20 nodes) on pieces of
    length ≤ scale/2 between consecutive kinks q_s, over [min q − 60·scale, max q + 60·scale], in
    numpy log space. Each integrand is smooth on each piece (its kinks are piece ends), so the rule
    is accurate to rounding (the values sum to 1 within 1e-12, and agree with scipy's adaptive
    quadrature above to ~1e-14 relative: both are checked where it is used)."""
    qa = np.asarray(q, dtype=np.float64)
    kinks = np.unique(qa)
    ends = np.concatenate([[kinks[0] - 60 * scale], kinks, [kinks[-1] + 60 * scale]])
    edges = [float(ends[0])]
    for lo, hi in itertools.pairwise(ends.tolist()):
        pieces = max(1, math.ceil((hi - lo) / (scale / 2)))
        edges.extend(np.linspace(lo, hi, pieces + 1)[1:].tolist())
    e = np.asarray(edges)
    t, w = np.polynomial.legendre.leggauss(20)
    half, mid = np.diff(e) / 2, (e[:-1] + e[1:]) / 2
    x = (mid[:, None] + half[:, None] * t).ravel()
    weights = (half[:, None] * w).ravel()
    z = (x[:, None] - qa[None, :]) / scale
    with np.errstate(over="ignore"):
        log_cdf = np.where(z < 0, z - math.log(2), np.log1p(-0.5 * np.exp(-np.abs(z))))
    log_pdf = -np.abs(z) - math.log(2 * scale)
    rest = log_cdf.sum(axis=1, keepdims=True) - log_cdf  # Σ_{s≠r} log F(x − q_s)
    return [float(v) for v in (weights[:, None] * np.exp(log_pdf + rest)).sum(axis=0)]


def laplace_noisy_max_law_exact(q: Sequence[float], r: int, dps: int = 60) -> float:
    """P[r wins] for standard Laplace noise, in closed form at ``dps`` digits (mpmath).

    Between consecutive scores the integrand f(x − q_r) Π_{s≠r} F(x − q_s) is
    K·e^{m·x}·Π_{s∈A}(1 − ½e^{q_s}e^{−x}) (A: the s ≠ r with q_s below x; a factor ½e^{x − q_s}
    for each s above x, and r's density): expanding the product by the elementary symmetric
    polynomials of the e^{q_s} leaves sums of exponentials, integrated exactly on each gap and
    on the two infinite ends. For a handful of candidates (the expansion has |A| + 1 terms,
    with alternating signs: the digits lost to cancellation are far below ``dps``)."""
    with mpmath.workdps(dps):
        qs = [mpmath.mpf(v) for v in q]
        kinks = sorted(set(qs))
        ends = [-mpmath.inf, *kinks, mpmath.inf]
        total = mpmath.mpf(0)
        for lo, hi in itertools.pairwise(ends):
            inside = hi if lo == -mpmath.inf else lo  # a point of the gap's closure, to classify
            below = [v for s, v in enumerate(qs) if s != r and v <= inside and lo != -mpmath.inf]
            above = [v for s, v in enumerate(qs) if s != r and v not in below]
            # r's density: ½e^{x − q_r} below q_r, ½e^{q_r − x} above it
            rate = len(above) + (1 if qs[r] >= hi else -1)
            log_const = -len(above) * mpmath.log(2) - mpmath.fsum(above) - mpmath.log(2)
            log_const += -qs[r] if qs[r] >= hi else qs[r]
            coeffs = [mpmath.mpf(1)]  # Π (1 − ½e^{q_s}·y) as a polynomial in y = e^{−x}
            for v in below:
                a = -mpmath.exp(v) / 2
                coeffs = [
                    (coeffs[j] if j < len(coeffs) else 0) + (a * coeffs[j - 1] if j else 0)
                    for j in range(len(coeffs) + 1)
                ]
            for j, c in enumerate(coeffs):
                k = rate - j  # ∫ e^{k x} dx over (lo, hi)
                if k == 0:
                    piece = hi - lo
                else:
                    upper = mpmath.exp(k * hi) if hi != mpmath.inf else mpmath.mpf(0)
                    lower = mpmath.exp(k * lo) if lo != -mpmath.inf else mpmath.mpf(0)
                    piece = (upper - lower) / k
                total += c * mpmath.exp(log_const) * piece
        return float(total)


def peeling_law(q: Sequence[float], c: float, k: int) -> dict[object, float]:
    law: dict[object, float] = {}
    for outcome in itertools.permutations(range(len(q)), k):
        p, left = 1.0, set(range(len(q)))
        for i in outcome:
            p *= math.exp(c * q[i]) / sum(math.exp(c * q[j]) for j in left)
            left.remove(i)
        law[outcome] = p
    return law


SCORES = [0.0, 1.0, 2.0, 2.0, -1.5]


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_select_has_the_softmax_law(monotonic: bool) -> None:
    em = sdp.Exponential(1.2, sensitivity=0.8, monotonic=monotonic)
    c = 1.2 / (0.8 if monotonic else 1.6)
    draws = em.select(SCORES, rng=1, size=200_000)
    assert draws.shape == (200_000,)
    assert_law(list(draws), softmax_law([c * x for x in SCORES]))


def test_permute_and_flip_select_matches_enumeration() -> None:
    pf = sdp.PermuteAndFlip(1.5)
    assert_law(list(pf.select(SCORES, rng=2, size=200_000)), permute_and_flip_law(SCORES, 0.75))


def test_report_noisy_max_exponential_is_permute_and_flip() -> None:
    rnm = sdp.ReportNoisyMax(1.5, noise="exponential")
    assert_law(list(rnm.select(SCORES, rng=3, size=200_000)), permute_and_flip_law(SCORES, 0.75))


def test_report_noisy_max_gumbel_is_the_exponential_mechanism() -> None:
    rnm = sdp.ReportNoisyMax(0.9, noise="gumbel", monotonic=True)
    assert_law(
        list(rnm.select(SCORES, rng=4, size=200_000)), softmax_law([0.9 * x for x in SCORES])
    )


def test_report_noisy_max_laplace_matches_quadrature() -> None:
    rnm = sdp.ReportNoisyMax(1.0, noise="laplace")
    law = laplace_noisy_max_law(SCORES, scale=2.0)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-9)
    assert_law(list(rnm.select(SCORES, rng=5, size=200_000)), law)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_select_has_the_peeling_law(k: int) -> None:
    top = sdp.TopK(k, 1.0)
    draws = top.select(SCORES, rng=10 + k, size=150_000)
    assert draws.shape == (150_000, k)
    assert_law([tuple(int(i) for i in row) for row in draws], peeling_law(SCORES, 0.5, k))


def test_single_draws_have_the_law_too() -> None:
    """The streaming path (one draw per call) on a 5-candidate set.

    Sizes (each call costs ~0.5 ms): 10k single draws detect, with power ≥ 0.9998 at the 1e-6
    chi-square, each of: c doubled or halved, any one score off by ±1 (±c/2 in its logit), the
    permute-and-flip law, and the tied pair's mass given to one of them (the closest, a score
    −1.5 → −2.5, is at chi distance 0.092; the 99%-power distance is 0.079). 8k top-2 draws:
    power ≥ 0.99999 against c doubled or halved, any one score ±1 and the pair's order reversed
    (closest at 0.141; 99%-power distance 0.104)."""
    em, rng = sdp.Exponential(1.0), np.random.default_rng(21)
    draws = [em.select(SCORES, rng=rng) for _ in range(10_000)]
    assert all(isinstance(d, int) for d in draws)
    assert_law(draws, softmax_law([0.5 * x for x in SCORES]))
    top, rng = sdp.TopK(2, 1.0), np.random.default_rng(22)
    pairs = [top.select(SCORES, rng=rng) for _ in range(8_000)]
    assert all(isinstance(p, tuple) and len(p) == 2 for p in pairs)
    assert_law(pairs, peeling_law(SCORES, 0.5, 2))


@pytest.mark.parametrize("noise", ["gumbel", "exponential", "laplace"])
def test_decimal_resolution_path_keeps_the_law(
    noise: _race.Noise, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With absurdly wide float intervals every draw goes through the exact decimal refinement."""
    monkeypatch.setattr(_race, "_TAU", 0.25)
    rnm = sdp.ReportNoisyMax(1.0, noise=noise)
    q = [0.0, 0.5, 1.0]
    law = {
        "gumbel": softmax_law([0.5 * x for x in q]),
        "exponential": permute_and_flip_law(q, 0.5),
        "laplace": laplace_noisy_max_law(q, 2.0),
    }[noise]
    assert_law(list(rnm.select(q, rng=30, size=3_000)), law)


def test_decimal_resolution_of_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_race, "_TAU", 0.25)
    q = [0.0, 0.5, 1.0, 1.0]
    draws = sdp.TopK(2, 1.0).select(q, rng=31, size=3_000)
    assert_law([tuple(int(i) for i in row) for row in draws], peeling_law(q, 0.5, 2))


def test_streaming_over_blocks_finds_the_law_across_block_boundaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """n > one block: four live candidates straddle the block boundary, the rest are excluded.

    Excluded (−inf) candidates are dropped before the race, so at the real block size (2²⁰) the
    race sees the four live ones in a single block, and each draw costs ~10 ms of validating the
    2²⁰ scores. A few draws at that size check the index map over the long input; the law is
    checked with the block monkeypatched to 2, where the race does stream the four over two blocks
    ({0, B − 1} | {B, n − 1}, the excluded index B + 1 in between) and carries its pool across."""

    def case() -> tuple[npt.NDArray[np.float64], list[int]]:
        n = _race._BLOCK + 3
        q = np.full(n, -np.inf)
        live = [0, _race._BLOCK - 1, _race._BLOCK, n - 1]
        q[live] = [0.0, 1.0, 2.0, 0.5]
        return q, live

    q, live = case()
    em, rng = sdp.Exponential(2.0), np.random.default_rng(41)
    assert {em.select(q, rng=rng) for _ in range(20)} <= set(live)
    monkeypatch.setattr(_race, "_BLOCK", 2)
    q, live = case()
    em, rng = sdp.Exponential(2.0), np.random.default_rng(40)
    draws = [em.select(q, rng=rng) for _ in range(400)]
    law = softmax_law([1.0 * x for x in q[live]])
    assert_law(draws, {live[i]: p for i, p in law.items()})


def test_many_candidates_with_a_planted_winner() -> None:
    q = np.zeros(3 * _race._BLOCK + 17)
    q[2 * _race._BLOCK + 5] = 200.0  # c·gap = 100: every other candidate has weight < e^-85
    assert sdp.Exponential(1.0).select(q, rng=7) == 2 * _race._BLOCK + 5
    top = sdp.TopK(1, 1.0).select(q, rng=8, size=2)
    assert top.tolist() == [[2 * _race._BLOCK + 5]] * 2


def test_ties_and_excluded_candidates() -> None:
    q = [1.0, -math.inf, 1.0, -math.inf]
    draws = sdp.Exponential(1.0).select(q, rng=50, size=40_000)
    assert set(draws.tolist()) == {0, 2}
    assert_law(list(draws), {0: 0.5, 2: 0.5})


def test_zero_sensitivity_is_a_uniform_choice_among_the_maxima() -> None:
    q = [3.0, 1.0, 3.0, 2.0]
    draws = sdp.Exponential(1.0, sensitivity=0.0).select(q, rng=51, size=40_000)
    assert_law(list(draws), {0: 0.5, 2: 0.5})
    top = sdp.TopK(3, 1.0, sensitivity=0.0).select(q, rng=52, size=40_000)
    assert_law([tuple(r) for r in top.tolist()], {(0, 2, 3): 0.5, (2, 0, 3): 0.5})


def test_zero_epsilon_is_a_uniform_choice_among_live_candidates() -> None:
    q = [5.0, -math.inf, -3.0, 0.0]
    draws = sdp.PermuteAndFlip(0.0).select(q, rng=53, size=60_000)
    assert_law(list(draws), {0: 1 / 3, 2: 1 / 3, 3: 1 / 3})


def test_integer_scores_and_seeds_are_reproducible() -> None:
    q = np.array([3, 1, 4, 1, 5], dtype=np.int64)
    a = sdp.TopK(3, 1.0).select(q, rng=123)
    assert a == sdp.TopK(3, 1.0).select(q, rng=123)
    assert len(set(a)) == 3


def test_overflowing_offsets_stay_live() -> None:
    """c·(q − max q) overflows float64, yet the candidate is live and its exact weight tiny."""
    q = [1e308, -1e308]
    em = sdp.Exponential(1.0, sensitivity=1e-300)
    assert em.select(q, rng=60) == 0
    top = sdp.TopK(2, 1.0, sensitivity=1e-300).select(q, rng=61)
    assert top == (0, 1)


@pytest.mark.parametrize(
    "scores",
    [[], [math.nan, 1.0], [math.inf, 0.0], [-math.inf, -math.inf], [[1.0, 2.0]], ["a"]],
)
def test_bad_scores_raise(scores: object) -> None:
    for mech in (sdp.Exponential(1.0), sdp.PermuteAndFlip(1.0), sdp.ReportNoisyMax(1.0)):
        with pytest.raises(sdp.InvalidParameter):
            mech.select(scores)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter):
        sdp.TopK(1, 1.0).select(scores)  # type: ignore[arg-type]


def test_bad_k_size_and_rng_raise() -> None:
    with pytest.raises(sdp.InvalidParameter, match="k=3"):
        sdp.TopK(3, 1.0).select([1.0, 2.0, -math.inf])
    with pytest.raises(sdp.InvalidParameter, match="size"):
        sdp.Exponential(1.0).select([1.0, 2.0], size=-1)
    with pytest.raises(sdp.InvalidParameter, match="rng"):
        sdp.Exponential(1.0).select([1.0, 2.0], rng="seed")  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "outcome",
    [np.array(0.5), np.array(1), np.array([[0, 1]]), "01", [[0], [0, 1]], [0, 0.5], 3, None],
    ids=stable_id,
)
def test_top_k_probability_refuses_what_is_not_k_indices(outcome: object) -> None:
    """A 0-d array (from a fuzz run) raised numpy's TypeError instead of InvalidParameter."""
    with pytest.raises(sdp.InvalidParameter, match="outcome"):
        sdp.TopK(2, 1.0).probability([1.0, 2.0, 3.0], outcome)  # type: ignore[arg-type]
    assert sdp.TopK(2, 1.0).probability([1.0, 2.0, 3.0], np.array([2, 1])) > 0.0


def _softmax_at_50_digits(c: mpmath.mpf, scores: Sequence[float]) -> list[float]:
    """P[r] ∝ e^{c·q_r}, in 50-digit arithmetic from the exact scores (no float difference)."""
    with mpmath.workdps(50):
        q = [mpmath.mpf(x) for x in scores]
        top = max(q)
        w = [mpmath.e ** (c * (x - top)) for x in q]
        total = mpmath.fsum(w)
        return [float(x / total) for x in w]


@pytest.mark.parametrize(
    ("sensitivity", "scores"),
    [
        (1e308, [-1.7e308, 1.7e308]),  # q − max q overflows, c = 5e-309 < 1: offset −1.7
        (1e308, [-0.7e308, 0.7e308]),  # its neighbour (each score moved by 1e308 = Δ)
        (5e-324, [0.0, 5e-324]),  # c = 1e323 beyond the float range: offset −0.5
    ],
)
def test_selection_at_the_ends_of_the_float_range_keeps_its_law(
    sensitivity: float, scores: list[float]
) -> None:
    """The exponential mechanism, top-k and report-noisy-max (exponential and Laplace noise) draw
    from their exact laws where the float offset c·(q − max q) used to overflow to −inf (so that
    a candidate of moderate offset was never drawn and the privacy loss was infinite): draws
    against 50-digit softmax values, chi-square at false-failure 1e-6 each."""
    c = mpmath.mpf(1) / (2 * mpmath.mpf(sensitivity))
    law = _softmax_at_50_digits(c, scores)
    assert 0.05 < law[0] < 0.5  # the loser is not negligible
    em = sdp.Exponential(1.0, sensitivity=sensitivity)
    np.testing.assert_allclose(em.probabilities(scores), law, rtol=1e-12)
    assert_law(list(em.select(scores, rng=11, size=20_000)), dict(enumerate(law)))
    top = sdp.TopK(1, 1.0, sensitivity)
    assert_law([int(r[0]) for r in top.select(scores, rng=12, size=20_000)], dict(enumerate(law)))
    for noise in ("exponential", "laplace"):
        rnm = sdp.ReportNoisyMax(1.0, noise, sensitivity)
        p = rnm.probabilities(scores)
        assert p[0] > 0.05
        assert_law(list(rnm.select(scores, rng=13, size=20_000)), dict(enumerate(p)))


def test_the_exact_audit_sees_the_law_at_the_ends_of_the_float_range() -> None:
    """The audit's law is computed from exact rationals: on the neighbours above its max
    divergence is the 50-digit value (≤ ε = 1), where a coefficient 2Δ that overflowed had made
    both laws uniform (divergence 0) and float offsets had made it infinite."""
    em = sdp.Exponential(1.0, sensitivity=1e308)
    q, q2 = [-1.7e308, 1.7e308], [-0.7e308, 0.7e308]
    c = mpmath.mpf(1) / (2 * mpmath.mpf(1e308))
    p, p2 = _softmax_at_50_digits(c, q), _softmax_at_50_digits(c, q2)
    want = max(abs(math.log(a / b)) for a, b in zip(p, p2, strict=True))
    got = sdp.audit.exact(em, q, q2).max_divergence()
    assert got == pytest.approx(want, rel=1e-9)
    assert got <= 1.0
    assert em.coefficient == pytest.approx(5e-309, rel=1e-15)


def test_report_noisy_max_laplace_law_matches_the_closed_form() -> None:
    """Every probability of the Laplace law, tiny ones included, to 1e-12 relative against the
    closed form at 60 digits: ties, gaps shorter and longer than the rule's pieces, and a
    candidate 600 noise scales down (probability ~6e-262; the shared nodes keep its relative
    accuracy). The closed form itself is checked on two candidates, where the lower one wins
    with P[L₁ − L₂ > 1] = (2 + 1)e^{−1}/4 (the difference of two standard Laplace variables)."""
    assert laplace_noisy_max_law_exact([0.0, -1.0], 1) == pytest.approx(
        0.75 * math.exp(-1.0), rel=1e-15
    )
    scores = [0.0, -0.01, -0.3, -0.3, -1.7, -2.45, -6.0, -13.2, -600.0]
    rnm = sdp.ReportNoisyMax(1.0, "laplace", 1.0, True)  # monotonic: Laplace scale Δ/ε = 1
    law = rnm.probabilities(scores)
    expected = [laplace_noisy_max_law_exact(scores, r) for r in range(len(scores))]
    assert 1e-262 < expected[-1] < 1e-255
    np.testing.assert_allclose(law, expected, rtol=1e-12, atol=0.0)
    assert law[2] == law[3]


def laplace_noisy_max_one(q: npt.NDArray[np.float64], r: int) -> float:
    """P[r wins] for standard Laplace noise by scipy's adaptive quadrature with every kink a break
    point (a numpy integrand over all candidates): for one candidate among many."""
    others = np.delete(q, r)

    def integrand(x: float) -> float:
        d = x - others
        log_cdf = np.where(d < 0, d - math.log(2), np.log1p(-0.5 * np.exp(-np.abs(d))))
        return 0.5 * math.exp(-abs(x - q[r]) + float(log_cdf.sum()))

    kinks = np.unique(q)
    result = integrate.quad(
        integrand,
        float(kinks[0]) - 60.0,
        float(kinks[-1]) + 60.0,
        points=kinks,
        limit=4 * kinks.size + 100,
        epsabs=0.0,
        epsrel=1e-13,
    )
    return float(result[0])


def test_report_noisy_max_laplace_law_of_many_candidates() -> None:
    """600 candidates (the law once took one adaptive quadrature per candidate, each summing
    over all the others: half a minute at 200). It sums to 1, is equivariant under a permutation
    of the scores, ranks the candidates as their scores do, and its entries at three candidates
    (the top one, one in the bulk, the lowest one) match scipy's adaptive quadrature."""
    rng = np.random.default_rng(31)
    scores = np.round(rng.normal(0.0, 4.0, 600), 3)
    rnm = sdp.ReportNoisyMax(2.0, "laplace", 1.0, True)  # Laplace scale 1/2
    law = rnm.probabilities(scores)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    perm = rng.permutation(scores.size)
    np.testing.assert_allclose(rnm.probabilities(scores[perm]), law[perm], rtol=1e-12)
    order = np.argsort(scores, kind="stable")
    assert np.all(np.diff(law[order]) >= -1e-15 * law[order][1:])
    scaled = 2.0 * scores  # the standard Laplace on the scores ×2
    for r in (int(np.argmax(scores)), int(order[300]), int(np.argmin(scores))):
        assert law[r] == pytest.approx(laplace_noisy_max_one(scaled, r), rel=1e-11)


def test_report_noisy_max_laplace_law_over_many_spread_scores() -> None:
    """More than 50 spread kinks, the top ones above the lowest 50: the law's quadrature had only
    the lowest 50 kinks as break points and failed (NumericalError), first seen on 160 scores
    spread over [0, 100]. Here 50 scores over [0, 49] take those 50 places and 14 scores over
    [69, 70], where the mass is, had none: the old quadrature failed on five of them (on two of
    the 160; this input takes about a fifth of the time, the quadrature's cost growing as the
    square of the number of candidates). The law matches the independent vectorised quadrature
    and sums to 1, and the exact sampler's draws fit the independent law (chi-square, false
    failure 1e-6)."""
    scores = np.concatenate([np.linspace(0.0, 49.0, 50), np.linspace(69.0, 70.0, 14)])
    rnm = sdp.ReportNoisyMax(1.0, "laplace", 1.0, True)  # monotonic: Laplace scale Δ/ε = 1
    small = laplace_noisy_max_law(SCORES, 2.0)  # the two references agree on a small case
    assert laplace_noisy_max_law_vectorised(SCORES, 2.0) == pytest.approx(
        list(small.values()), rel=1e-12
    )
    expected = laplace_noisy_max_law_vectorised(scores.tolist(), 1.0)
    assert math.fsum(expected) == pytest.approx(1.0, abs=1e-12)
    law = rnm.probabilities(scores)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(law, expected, rtol=1e-9, atol=0.0)
    assert_law(list(rnm.select(scores, rng=21, size=30_000)), dict(enumerate(expected)))
