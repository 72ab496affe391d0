"""Durfee–Rogers LimitDom: exact law, exact sampling, and the δ of neighbouring tables.

Independent references: the law of "sort count + Gumbel, release until ⊥" is computed here (i) by
peeling products in mpmath and (ii) by Monte Carlo of a plain numpy float Gumbel implementation
(for the law formula itself), never from sharpdp's own law. The privacy check enumerates tiny
histograms and their neighbours (one person, ≤ Δ keys, +1 each), picks the true top-k̄ with ties
broken by key, and computes the hockey-stick divergence exactly (mpmath). Chi-square tests have
false-failure probability ≤ 1e-6 each; the Monte Carlo comparison uses a 6-sigma tolerance.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest

import sharpdp as sdp
from sharpdp.mechanisms import LimitDom

from ._gof import assert_law


def peeling_law(values: list[float], k: int, c: float) -> dict[tuple[object, ...], mpmath.mpf]:
    """Law of the released prefix for named candidates; values[-1] is ⊥ (named None)."""
    names: list[object] = [*range(len(values) - 1), None]
    out: dict[tuple[object, ...], mpmath.mpf] = {}
    with mpmath.workdps(40):
        w = {
            nm: mpmath.e ** (mpmath.mpf(c) * mpmath.mpf(v))
            for nm, v in zip(names, values, strict=True)
        }

        def walk(prefix: tuple[object, ...], p: mpmath.mpf) -> None:
            left = [nm for nm in names if nm not in prefix]
            total = mpmath.fsum(w[nm] for nm in left)
            if len(prefix) == k:
                out[prefix] = out.get(prefix, mpmath.mpf(0)) + p
                return
            for nm in left:
                q = p * w[nm] / total
                if nm is None:
                    out[prefix] = out.get(prefix, mpmath.mpf(0)) + q
                else:
                    walk((*prefix, nm), q)

        walk((), mpmath.mpf(1))
    return out


@pytest.mark.parametrize(
    ("counts", "nxt", "k", "k_bar", "eps", "delta", "draws"),
    [
        ([5, 4, 3], 2, 2, 3, 0.5, 0.2, 20_000),
        ([9, 9], 0, 2, 3, 1.0, 0.05, 5_000),
        ([7, 3, 3, 2], 1, 3, 4, 0.4, 0.3, 20_000),
    ],
)
def test_law_and_samples(
    counts: list[int], nxt: int, k: int, k_bar: int, eps: float, delta: float, draws: int
) -> None:
    """The law against the peeling reference, and single draws (~0.3 ms each) against it.

    ``draws`` is what detects, with power ≥ 0.98 at the 1e-6 chi-square, every one of: c doubled
    or halved, ⊥'s score off by ±Δ or missing next_count, and any one count off by ±1. That
    takes 20k draws for the first and third tables (closest: a count 3 → 2, resp. 2 → 1, at chi
    distance 0.071, resp. 0.060); on the second the closest (⊥'s score − Δ, at 0.158) is caught
    with power > 0.99999 by 5k draws (99%-power distance 0.112; 0.056 with 20k)."""
    m = LimitDom(k, k_bar, eps, delta)
    values = [*map(float, counts), nxt + m.threshold_offset]
    expected = {o: float(p) for o, p in peeling_law(values, k, eps).items()}
    got = m.law(counts, nxt)
    assert set(got) == set(expected)
    for o, p in expected.items():
        assert got[o] == pytest.approx(p, rel=1e-10)
    rng = np.random.default_rng(20)
    assert_law([m.select(counts, nxt, rng=rng) for _ in range(draws)], expected)


def test_peeling_law_equals_one_shot_gumbel_monte_carlo() -> None:
    """The reference law itself against a float numpy Gumbel simulation (6 sigma)."""
    values, k, c = [5.0, 4.0, 3.0, 4.5], 2, 0.7
    law = peeling_law(values, k, c)
    rng = np.random.default_rng(21)
    n = 200_000
    noisy = np.asarray(values) + rng.gumbel(scale=1 / c, size=(n, len(values)))
    order = np.argsort(-noisy, axis=1)
    counts: dict[tuple[object, ...], int] = {}
    for row in order[:, : k + 1].tolist():
        out: list[object] = []
        for i in row:
            if i == len(values) - 1 or len(out) == k:
                break
            out.append(i)
        counts[tuple(out)] = counts.get(tuple(out), 0) + 1
    for o, p in law.items():
        pf = float(p)
        assert abs(counts.get(o, 0) / n - pf) <= 6 * math.sqrt(pf * (1 - pf) / n) + 1e-9


def test_threshold_is_at_least_the_formula() -> None:
    for k, k_bar, eps, delta, sens, keys in [
        (3, 5, 1.0, 1e-6, 1.0, None),
        (10, 30, 0.2, 1e-9, 2.0, 3),
    ]:
        m = LimitDom(k, k_bar, eps, delta, sensitivity=sens, max_keys=keys)
        with mpmath.workdps(50):
            mm = k_bar if keys is None else min(keys, k_bar)
            beta = min(mpmath.tanh(k * mpmath.mpf(eps) / 2), mpmath.mpf(eps) * mpmath.sqrt(k) / 4)
            d_bot = mpmath.mpf(delta) * (1 - beta) / (1 + mpmath.e ** (-mpmath.mpf(eps)))
            exact = sens + sens / mpmath.mpf(eps) * mpmath.log(mm / d_bot)
        assert m.threshold_offset >= exact
        assert m.threshold_offset <= exact * (1 + 1e-12)


def top(hist: dict[str, int], k_bar: int) -> tuple[list[str], int]:
    ranked = sorted((key for key, v in hist.items() if v > 0), key=lambda key: (-hist[key], key))
    rest = [hist[key] for key in ranked[k_bar:]]
    return ranked[:k_bar], (rest[0] if rest else 0)


def named_law(m: LimitDom, hist: dict[str, int]) -> dict[tuple[str, ...], mpmath.mpf]:
    keys, nxt = top(hist, m.k_bar)
    values = [*(float(hist[key]) for key in keys), nxt + m.threshold_offset]
    law = peeling_law(values, m.k, m.epsilon_ / m.sensitivity)
    return {tuple(keys[i] for i in o): p for o, p in law.items()}  # type: ignore[index]


def hockey(
    p: dict[tuple[str, ...], mpmath.mpf], q: dict[tuple[str, ...], mpmath.mpf], eps: float
) -> mpmath.mpf:
    with mpmath.workdps(40):
        e = mpmath.e ** mpmath.mpf(eps)
        return mpmath.fsum(
            max(mpmath.mpf(0), pv - e * q.get(o, mpmath.mpf(0))) for o, pv in p.items()
        )


@pytest.mark.parametrize(
    ("k", "k_bar", "eps", "delta", "max_keys"),
    [(1, 1, 0.5, 0.3, 1), (2, 2, 0.4, 0.2, 2), (1, 2, 1.0, 0.25, None)],
)
def test_neighbouring_tables_meet_the_spent_guarantee(
    k: int, k_bar: int, eps: float, delta: float, max_keys: int | None
) -> None:
    """δ(kε) ≤ δ (the BR part is kε-DP) and δ(0) ≤ (1 − δ)β + δ, both directions, by enumeration."""
    m = LimitDom(k, k_bar, eps, delta, max_keys=max_keys)
    universe = ["a", "b", "c", "d"]
    touch = len(universe) if max_keys is None else max_keys
    worst = mpmath.mpf(0)
    for counts in itertools.product(range(3), repeat=len(universe)):
        hist = dict(zip(universe, counts, strict=True))
        for size in range(1, touch + 1):
            for keys in itertools.combinations(universe, size):
                other = {key: v + (key in keys) for key, v in hist.items()}
                p, q = named_law(m, hist), named_law(m, other)
                for a, b in ((p, q), (q, p)):
                    h = hockey(a, b, k * eps)
                    worst = max(worst, h)
                    assert h <= delta * (1 + 1e-12)
                    assert hockey(a, b, 0.0) <= (1 - delta) * m.tv_bound + delta
    assert worst > 0  # the threshold's δ is exercised


def test_privacy_items_and_profile() -> None:
    m = LimitDom(4, 10, 0.3, 1e-7, max_keys=2)
    assert m.privacy_items() == [(sdp.BoundedRange(0.3), 4), sdp.ApproxDP(0.0, 1e-7)]
    # accountants compose the declared items in the mechanism's place
    assert sdp.compose([m]).items == sdp.compose(m.privacy_items()).items
    # the stand-alone answer uses the same Rényi route (f + δ(1 − f)), up to its float rounding
    assert m.epsilon(1e-6) == pytest.approx(sdp.compose(m.privacy_items()).epsilon(1e-6), rel=1e-12)
    assert m.epsilon(1e-6) <= 4 * 0.3


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"k": 0}, "k"),
        ({"k_bar": 1}, "k_bar"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"sensitivity": -1.0}, "sensitivity"),
        ({"max_keys": 0}, "max_keys"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, object], name: str) -> None:
    args: dict[str, object] = {"k": 2, "k_bar": 3, "epsilon": 1.0, "delta": 1e-6}
    args.update(kwargs)
    with pytest.raises(sdp.InvalidParameter, match=name):
        LimitDom(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("counts", "nxt", "name"),
    [
        ([5, 4, 3, 2], 1, "counts"),
        ([5, 4], 1, "next_count"),
        ([5, 4, 3], 4, "next_count"),
        ([5.5, 4, 3], 1, "counts"),
        ([5, 4, 3], -1, "next_count"),
    ],
)
def test_bad_data_is_named(counts: list[float], nxt: int, name: str) -> None:
    m = LimitDom(2, 3, 1.0, 1e-6)
    with pytest.raises(sdp.InvalidParameter, match=name):
        m.select(counts, nxt, rng=0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("k", "eps"), [(10, 4.0), (4, 10.0), (1, 40.0), (3, 0.7)])
def test_threshold_is_finite_where_tanh_rounds_to_one(k: int, eps: float) -> None:
    """h⊥ − h₍ₖ̄₊₁₎ = Δ + (Δ/ε)(ln(m/δ) + ln(1 + e^{−ε}) − ln(1 − β)), β = min(tanh(kε/2),
    ε√k/4), at 50 digits: kε/2 ≥ 19 makes tanh round to 1 in floats, and the mechanism was
    refused ("infinite threshold") though −ln(1 − tanh x) ≈ 2x − ln 2 is finite."""
    m = sdp.LimitDom(k=k, k_bar=k, epsilon=eps, delta=1e-6)
    with mpmath.workdps(50):
        e = mpmath.mpf(eps)
        beta = min(mpmath.tanh(k * e / 2), e * mpmath.sqrt(k) / 4)
        log_ratio = mpmath.log(k) - mpmath.log(mpmath.mpf(1e-6)) + mpmath.log1p(mpmath.exp(-e))
        want = 1 + (log_ratio - mpmath.log1p(-beta)) / e
    assert float(want) <= m.threshold_offset <= float(want) * (1 + 1e-12)


def test_its_own_epsilon_and_delta_are_the_composition_of_its_items() -> None:
    # δ(ε) of [(1-BR, 3), (0, 1e-6)]: the accounting layer's adaptive composition (the MGF
    # inversion) gives 0.2420; the stand-alone route through the rounds' Rényi curve 0.3090
    m = LimitDom(3, 10, 1.0, 1e-6)
    composed = sdp.compose(m.privacy_items())
    assert m.delta(0.5) == composed.delta(0.5) < 0.25
    assert m.epsilon(1e-3) == composed.epsilon(1e-3)
    # at δ = the mechanism's own δ, nothing is left for the rounds: their largest loss, 3ε
    assert m.epsilon(1e-6) == 3.0
    assert m.epsilon(9.9e-7) == math.inf
