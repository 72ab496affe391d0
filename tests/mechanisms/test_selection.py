"""Selection mechanisms: exact laws against independent computations, and their privacy claims."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import sharpdp as sdp

RNG = np.random.default_rng(20261122)


def softmax_mp(logits: list[float]) -> list[float]:
    """Softmax in 50-digit arithmetic (independent of numpy)."""
    with mpmath.workdps(50):
        w = [mpmath.e ** mpmath.mpf(x) if x > -math.inf else mpmath.mpf(0) for x in logits]
        s = mpmath.fsum(w)
        return [float(x / s) for x in w]


def permute_and_flip_by_enumeration(q: list[float], c: float) -> list[float]:
    """Average over all n! visiting orders of the first-acceptance law (the best always accepts)."""
    top = max(q)
    p = [math.exp(c * (x - top)) for x in q]
    n = len(q)
    law = [0.0] * n
    for order in itertools.permutations(range(n)):
        survive = 1.0
        for r in order:
            law[r] += survive * p[r]
            survive *= 1.0 - p[r]
    return [x / math.factorial(n) for x in law]


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_law_is_the_softmax(monotonic: bool) -> None:
    q = RNG.normal(size=7) * 3
    em = sdp.Exponential(0.8, sensitivity=1.5, monotonic=monotonic)
    c = 0.8 / (1.5 if monotonic else 3.0)
    np.testing.assert_allclose(em.probabilities(q), softmax_mp([c * x for x in q]), rtol=1e-13)


def test_exponential_excludes_minus_inf_and_handles_ties() -> None:
    em = sdp.Exponential(1.0)
    p = em.probabilities([1.0, -math.inf, 1.0])
    assert p[1] == 0.0
    assert p[0] == pytest.approx(0.5, rel=1e-15)
    assert p[2] == pytest.approx(0.5, rel=1e-15)


@pytest.mark.parametrize("n", [2, 3, 5, 6])
def test_permute_and_flip_law_matches_enumeration(n: int) -> None:
    q = list(RNG.integers(0, 5, size=n).astype(float))
    pf = sdp.PermuteAndFlip(1.3)
    np.testing.assert_allclose(
        pf.probabilities(q), permute_and_flip_by_enumeration(q, 1.3 / 2), rtol=1e-12, atol=1e-15
    )


def test_report_noisy_max_equivalences() -> None:
    q = RNG.normal(size=5)
    for mono in (False, True):
        rg = sdp.ReportNoisyMax(0.9, "gumbel", monotonic=mono)
        re = sdp.ReportNoisyMax(0.9, "exponential", monotonic=mono)
        np.testing.assert_array_equal(
            rg.probabilities(q), sdp.Exponential(0.9, monotonic=mono).probabilities(q)
        )
        np.testing.assert_array_equal(
            re.probabilities(q), sdp.PermuteAndFlip(0.9, monotonic=mono).probabilities(q)
        )


def test_report_noisy_max_laplace_two_candidates_closed_form() -> None:
    # L1 − L2 for i.i.d. Laplace(b): P[L1 − L2 > d] = ½ e^{−d/b} (1 + d/(2b)) for d ≥ 0.
    eps, d = 1.0, 0.7
    b = 2.0 / eps
    expected_low = 0.5 * math.exp(-d / b) * (1 + d / (2 * b))
    p = sdp.ReportNoisyMax(eps, "laplace").probabilities([0.0, d])
    assert p[0] == pytest.approx(expected_low, rel=1e-9)
    assert p[1] == pytest.approx(1 - expected_low, rel=1e-9)


def test_topk_probability_is_the_peeling_product_and_sums_to_one() -> None:
    q = [0.0, 2.0, 1.0, 3.5]
    tk = sdp.TopK(2, 0.7)
    c = 0.7 / 2
    total = 0.0
    for outcome in itertools.permutations(range(4), 2):
        first = softmax_mp([c * x for x in q])[outcome[0]]
        rest = [x for i, x in enumerate(q) if i != outcome[0]]
        j = outcome[1] - (outcome[1] > outcome[0])
        second = softmax_mp([c * x for x in rest])[j]
        got = tk.probability(q, outcome)
        assert got == pytest.approx(first * second, rel=1e-12)
        total += got
    assert total == pytest.approx(1.0, rel=1e-12)


def log_ratio_spread(p: np.ndarray, p_prime: np.ndarray) -> tuple[float, float]:
    z = np.log(p) - np.log(p_prime)
    return float(np.max(np.abs(z))), float(np.max(z) - np.min(z))


@pytest.mark.parametrize("trial", range(20))
def test_exponential_is_epsilon_bounded_range_on_random_neighbours(trial: int) -> None:
    eps, sens = 0.9, 1.0
    q = RNG.normal(size=6) * 2
    q_prime = q + RNG.uniform(-sens, sens, size=6)
    em = sdp.Exponential(eps, sensitivity=sens)
    max_ratio, spread = log_ratio_spread(em.probabilities(q), em.probabilities(q_prime))
    assert max_ratio <= eps * (1 + 1e-12)
    assert spread <= eps * (1 + 1e-12)
    # monotone neighbours (add/remove one record on counts): the doubled coefficient is still ε-BR
    q_mono = q + RNG.uniform(0, sens, size=6)
    em_m = sdp.Exponential(eps, sensitivity=sens, monotonic=True)
    max_ratio, spread = log_ratio_spread(em_m.probabilities(q), em_m.probabilities(q_mono))
    assert spread <= eps * (1 + 1e-12)


@pytest.mark.parametrize("trial", range(10))
def test_permute_and_flip_is_epsilon_dp_on_random_neighbours(trial: int) -> None:
    eps = 0.8
    q = RNG.integers(0, 4, size=5).astype(float)
    q_prime = q + RNG.integers(-1, 2, size=5)
    pf = sdp.PermuteAndFlip(eps)
    max_ratio, _ = log_ratio_spread(pf.probabilities(q), pf.probabilities(q_prime))
    assert max_ratio <= eps * (1 + 1e-12)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_permute_and_flip_is_not_epsilon_bounded_range(eps: float) -> None:
    # Durfee–Rogers 2021 ("One-shot DP top-k mechanisms", differentialprivacy.org)'s pair,
    # acceptance exp(ε(q − q*)), i.e. c = ε: q = (0, 0), q′ = (0, 1).
    pf = sdp.PermuteAndFlip(eps, sensitivity=1.0, monotonic=True)
    _, spread = log_ratio_spread(pf.probabilities([0.0, 0.0]), pf.probabilities([0.0, 1.0]))
    assert spread == pytest.approx(eps + math.log(2 - math.exp(-eps)), rel=1e-12)
    assert spread > eps
    # ... so sharpdp claims the valid 2ε-BR, not ε-BR
    assert sdp.convert(pf, sdp.BoundedRange).eta == pytest.approx(2 * eps)
    assert sdp.convert(sdp.Exponential(eps), sdp.BoundedRange).eta == eps


def test_utility_bound_reproduces_the_seed_example() -> None:
    # Dwork–Roth 2014 Thm 3.11 as worked in Tramèr's ETH Zürich lecture notes
    # (Privacy Enhancing Technologies FS2025, Thm 5): 1,000 classes, ε = 0.5, 99% confidence
    # → OPT − 2(ln 1000 + ln 100)/0.5 ≈ OPT − 46.
    loss = sdp.Exponential(0.5).utility_bound(1000, 0.01)
    assert loss == pytest.approx(2 * (math.log(1000) + math.log(100)) / 0.5, rel=1e-14)
    assert round(loss) == 46
    assert sdp.Exponential(0.5, monotonic=True).utility_bound(1000, 0.01) == pytest.approx(loss / 2)


def test_selection_privacy_characterisations() -> None:
    eps = 1.0
    # EM's zCDP is the certified BR constant (≤ ε²/8, ≥ the max KL over the GRR_t family).
    rho = sdp.convert(sdp.Exponential(eps), sdp.ZCDP).rho
    y = eps / math.expm1(eps)
    assert y - 1 - math.log(y) <= rho <= eps * eps / 8
    # top-k: k adaptively composed ε-BR rounds ⇒ kε pure DP and k × the BR RDP curve.
    tk = sdp.TopK(3, eps)
    assert sdp.convert(tk, sdp.PureDP).epsilon_ == pytest.approx(3 * eps)
    assert tk.renyi(2.0) == pytest.approx(3 * sdp.BoundedRange(eps).renyi(2.0), rel=1e-15)


@pytest.mark.parametrize(
    "bad",
    [
        [],
        [math.nan, 1.0],
        [math.inf, 0.0],
        [-math.inf, -math.inf],
        [[1.0, 2.0]],
        "abc",
        [True, False],  # (booleans and numeric text were read as numbers)
        ["1", "2"],
        [2**53 + 1, 0],
        np.array([-(2**62), 0]),
        [2**53 + 1, 2**53, 0.0],  # (numpy makes this list float64, rounding the ints)
        [Fraction(2**53 + 1), Fraction(0)],
        [Decimal(2**53 + 1), Decimal(0)],
        np.array([2**53 + 1, 0], dtype=np.longdouble),
    ],
)
def test_bad_scores_raise(bad: object) -> None:
    for mech in (sdp.Exponential(1.0), sdp.PermuteAndFlip(1.0), sdp.ReportNoisyMax(1.0, "laplace")):
        with pytest.raises(sdp.InvalidParameter, match="scores"):
            mech.probabilities(bad)  # type: ignore[arg-type]


def test_bad_parameters_raise() -> None:
    with pytest.raises(sdp.InvalidParameter, match="epsilon"):
        sdp.Exponential(-1.0)
    with pytest.raises(sdp.InvalidParameter, match="monotonic"):
        sdp.Exponential(1.0, monotonic="yes")  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="noise"):
        sdp.ReportNoisyMax(1.0, "cauchy")  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="k"):
        sdp.TopK(0, 1.0)
    with pytest.raises(sdp.InvalidParameter, match="k=3"):
        sdp.TopK(3, 1.0).probability([1.0, 2.0], [0, 1, 2])
    with pytest.raises(sdp.InvalidParameter, match="beta"):
        sdp.Exponential(1.0).utility_bound(10, 1.5)


def test_integer_scores_past_2_to_the_53_are_refused_not_rounded() -> None:
    # Neighbours (each score moves by ≤ Δ = 1) whose rounded scores moved apart by 3: the
    # exponential mechanism at ε = 4 then had log-ratio 5.3 > ε. Exact law: P[1] = 1/(1 + e^{2c·d})
    # with c = ε/2 and d the score gap (1 and 3), a log-ratio of 3.88 ≤ ε.
    m = sdp.Exponential(4.0)
    for scores in ([2**53 + 1, 2**53], [2**53 + 2, 2**53 - 1]):
        with pytest.raises(sdp.InvalidParameter, match="at most 2\\*\\*53"):
            m.probabilities(scores)
    shifted = [m.probabilities([1, 0]), m.probabilities([2, -1])]  # the same, offset by 2**53
    ratio = math.log(shifted[0][1] / shifted[1][1])
    assert ratio == pytest.approx(math.log((1 + math.exp(6.0)) / (1 + math.exp(2.0))), rel=1e-12)
    assert ratio <= 4.0
    assert m.probabilities([2**53, 0]).tolist() == [1.0, 0.0]  # 2**53 itself is a float


def _peeling_law(scores: tuple[float, ...], k: int, c: float) -> dict[tuple[int, ...], float]:
    """P[(i1..ik)] = Π_j e^{c q_ij} / Σ_{l not yet drawn} e^{c q_l}, by enumeration."""
    law = {}
    for outcome in itertools.permutations(range(len(scores)), k):
        p, left = 1.0, list(range(len(scores)))
        for i in outcome:
            p *= math.exp(c * scores[i]) / math.fsum(math.exp(c * scores[j]) for j in left)
            left.remove(i)
        law[outcome] = p
    return law


@pytest.mark.parametrize(("k", "eps", "at"), [(2, 1.0, 0.5), (3, 1.0, 0.5), (2, 2.0, 1.0)])
def test_top_k_answers_as_sharply_as_the_composition_of_its_rounds(
    k: int, eps: float, at: float
) -> None:
    # Its own δ(ε) is the adaptive composition of its k ε-BR rounds (what compose reads), not
    # only CKS20 on their Rényi curve (0.309 against 0.242 for k = 3, ε = 1, at ε = 0.5) ...
    # (equal to the composition's accuracy, 1e-4: the PLD's answers depend on what it was asked
    # before, e.g. in another test)
    tk = sdp.TopK(k, eps)
    rounds = sdp.compose([(sdp.BoundedRange(eps), k)])
    assert tk.delta(at) == pytest.approx(rounds.delta(at), rel=1e-4)
    assert tk.delta(at) == pytest.approx(sdp.compose([tk]).delta(at), rel=1e-4)
    assert tk.delta(at) < 0.9 * sdp.RDP.from_function(tk.renyi).delta(at)
    target = tk.delta(at) * 1.5
    assert tk.epsilon(target) == pytest.approx(rounds.epsilon(target), rel=1e-4)
    assert tk.epsilon(target) < 0.95 * sdp.RDP.from_function(tk.renyi).epsilon(target)
    # ... and still valid: never below the δ(ε) of the mechanism's exact output laws on
    # neighbouring score vectors (every score moves by at most Δ = 1), enumerated here
    worst = 0.0
    for scores in itertools.product((0.0, 1.0), repeat=k + 1):
        for shift in itertools.product((-1.0, 0.0, 1.0), repeat=k + 1):
            p = _peeling_law(scores, k, eps / 2)
            q = _peeling_law(tuple(a + b for a, b in zip(scores, shift, strict=True)), k, eps / 2)
            hockey = math.fsum(max(0.0, p[o] - math.exp(at) * q[o]) for o in p)
            worst = max(worst, hockey)
    assert 0.1 < worst <= tk.delta(at)


def test_top_k_offers_its_profile_at_many_points_at_once() -> None:
    # the conversion to GDP asks hundreds of points per candidate μ: the rounds' composition
    # gives them at once — valid (never below the δ of the exact laws on neighbouring score
    # vectors, enumerated as above), possibly looser than the pointwise answers
    tk = sdp.TopK(2, 1.0)
    eps = np.linspace(0.0, 2.0, 9)
    bounds = tk.delta_bounds(eps)
    assert bounds is not None
    worst = np.zeros_like(eps)
    for scores in itertools.product((0.0, 1.0), repeat=3):
        for shift in itertools.product((-1.0, 0.0, 1.0), repeat=3):
            p = _peeling_law(scores, 2, 0.5)
            q = _peeling_law(tuple(a + b for a, b in zip(scores, shift, strict=True)), 2, 0.5)
            for i, e in enumerate(eps):
                hockey = math.fsum(max(0.0, p[o] - math.exp(e) * q[o]) for o in p)
                worst[i] = max(worst[i], hockey)
    assert np.all(bounds >= worst)
    pointwise = np.array([tk.delta(float(e)) for e in eps])
    assert np.all(bounds <= 1.5 * pointwise + 1e-12)
    assert bounds[0] == pytest.approx(pointwise[0], rel=1e-9)
