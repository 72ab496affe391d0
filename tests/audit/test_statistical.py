"""The statistical audit: Clopper–Pearson bounds, validity on correct mechanisms, interface.

Validity tests run at confidence 1 − 1e-6: by the audit's guarantee (module docstring of
``sharpdp.audit._statistical``) each lower bound exceeds the true ε with probability ≤ 1e-6, so
each such assertion fails falsely with probability ≤ 1e-6 (seeds are fixed, so in practice never).
"""

from __future__ import annotations

import math
import sys

import mpmath as mp
import numpy as np
import pytest

import sharpdp as sdp
from sharpdp.audit import clopper_pearson, exact, sample, sample_bounded_range

STRICT = 1 - 1e-6


def em_sampler(m: sdp.Exponential):  # type: ignore[no-untyped-def]
    return lambda q, size, rng: m.select(q, rng, size=size)


def rr_sampler(eps: float, k: int = 2):  # type: ignore[no-untyped-def]
    law = sdp.RandomizedResponse(eps, k)
    return lambda x, size, rng: rng.choice(k, size=size, p=law.probabilities(x))


# -- Clopper–Pearson --------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (57, 1000), (999, 1000)])
@pytest.mark.parametrize("level", [0.025, 1e-6])
def test_clopper_pearson_against_binomial_tails(k: int, n: int, level: float) -> None:
    # The lower bound p_lo solves P(Bin(n, p_lo) ≥ k) = level, i.e. I_{p_lo}(k, n − k + 1) = level;
    # the upper bound solves P(Bin(n, p_hi) ≤ k) = level. The widening makes both conservative.
    lo, hi = (float(v[0]) for v in clopper_pearson([k], n, level))
    with mp.workdps(40):
        if k == 0:
            assert lo == 0.0
        else:
            tail = mp.betainc(k, n - k + 1, 0, lo, regularized=True)
            assert tail <= level
            assert tail >= level * (1 - 1e-6)
        if k == n:
            assert hi == 1.0
        else:
            tail = mp.betainc(n - k, k + 1, 0, 1 - hi, regularized=True)
            assert tail <= level
            assert tail >= level * (1 - 1e-6)


# -- validity on correct mechanisms -----------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_lower_bounds_never_exceed_the_truth(seed: int) -> None:
    # False-failure rate ≤ 1e-6 per assertion (confidence 1 − 1e-6), 4 assertions per seed.
    em = sdp.Exponential(1.0)
    q, qp = [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]
    truth = exact(em, q, qp).max_divergence()
    r = sample(em_sampler(em), q, qp, 20_000, confidence=STRICT, rng=seed, claim=em)
    assert 0.0 < r.epsilon_lower <= truth
    assert r.refuted is False

    rr = rr_sampler(1.5, 3)
    r = sample(rr, 0, 2, 20_000, confidence=STRICT, rng=seed)
    assert 0.5 < r.epsilon_lower <= 1.5

    lap = sdp.Laplace(1.0)
    r = sample(
        lambda x, size, rng: lap.release(np.full(size, x), rng), 0.0, 1.0, 20_000,
        confidence=STRICT, rng=seed, bins=30, claim=lap,
    )  # fmt: skip
    assert r.epsilon_lower <= lap.epsilon(0.0)

    pf = sdp.PermuteAndFlip(1.0, monotonic=True)
    spread = exact(pf, [0.0, 0.0], [0.0, 1.0]).bounded_range()
    rb = sample_bounded_range(
        em_sampler(pf), [0.0, 0.0], [0.0, 1.0], 20_000, confidence=STRICT, rng=seed
    )
    assert 0.5 < rb.spread_lower <= spread


def test_coverage_on_identical_laws() -> None:
    # P = Q (uniform on 20 outcomes): the true ε is 0, so every positive lower bound is an error,
    # which the audit allows with probability ≤ 1 − confidence = 0.2. If the event were chosen and
    # estimated on the same data, the best of 40 threshold sets would look significant far more
    # often. Over 200 audits the count of errors is ≤ Bin(200, 0.2) in distribution; P(≥ 75) < 1e-8,
    # so this fails falsely with probability < 1e-8.
    def uniform(x: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, 20, size=size)

    rng = np.random.default_rng(7)
    errors = sum(
        sample(uniform, 0, 1, 400, confidence=0.8, rng=rng).epsilon_lower > 0.0 for _ in range(200)
    )
    assert errors < 75


def test_delta_aware_bound() -> None:
    # On x the output is 1 with probability 0.01, on x′ never: (0, 0.01)-DP, not ε-DP for any ε.
    def leak(x: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return (rng.random(size) < 0.01 * x).astype(np.int64)

    strict = sample(leak, 1, 0, 40_000, rng=3, claim=sdp.PureDP(3.0))
    # ε ≥ log(p_lo/p′_hi) ≈ log(0.0092/1.84e-4) ≈ 3.9 (no hit on x′: p′_hi = 1 − 0.025^{1/20000})
    assert strict.refuted
    assert strict.likelier == "x"
    assert strict.event == (1,)
    # With δ ≥ 0.01 no ε is forced (ε ≥ log((P(E) − δ)/P′(E)) is vacuous): the bound is 0
    # whenever the lower confidence bound on P(E) is below δ; at confidence 1 − 1e-6 it is (the
    # estimate is 0.01 ± 0.0009·3.4σ), so this fails falsely with probability ≤ 1e-6.
    loose = sample(leak, 1, 0, 40_000, rng=3, delta=0.02, confidence=STRICT)
    assert loose.epsilon_lower == 0.0
    assert loose.delta == 0.02


# -- interface ------------------------------------------------------------------------------------


def test_report_contents_and_reproducibility() -> None:
    em = sdp.Exponential(1.0)
    s = em_sampler(sdp.Exponential(2.0))  # broken: runs at 2ε
    a = sample(s, [0.0, 1.0], [1.0, 0.0], 2_001, rng=11, claim=em, progress=False)
    b = sample(s, [0.0, 1.0], [1.0, 0.0], 2_001, rng=11, claim=em, progress=True)
    assert (a.epsilon_lower, a.event, a.counts) == (b.epsilon_lower, b.event, b.counts)
    assert a.n == 2_001
    assert a.n_selection + a.n_estimation == 2_001
    assert a.n_selection == 1_000
    assert a.claimed_epsilon == 1.0
    assert a.confidence == 0.95
    assert a.seconds >= 0.0
    assert 0.0 < a.p_other_upper < 1.0
    assert 0.0 < a.p_lower < 1.0
    assert math.isclose(a.epsilon_lower, math.log(a.p_lower / a.p_other_upper))
    assert "ε ≥" in str(a)
    assert "refuted" in str(a).lower()
    plain = sample(s, [0.0, 1.0], [1.0, 0.0], 2_000, rng=11)
    assert plain.refuted is None
    assert "claim" not in str(plain)


def test_progress_bar_is_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    # rich is an optional dependency: without it the audit runs unchanged.
    monkeypatch.setitem(sys.modules, "rich.progress", None)
    r = sample(rr_sampler(1.0), 0, 1, 1_000, rng=1, progress=True)
    r2 = sample(rr_sampler(1.0), 0, 1, 1_000, rng=1, progress=False)
    assert r.epsilon_lower == r2.epsilon_lower


def test_output_kinds() -> None:
    em = sdp.Exponential(2.0)
    labels = np.array(["red", "green", "blue"])
    r = sample(
        lambda q, size, rng: labels[em.select(q, rng, size=size)],
        [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], 4_000, rng=5,
    )  # fmt: skip
    assert r.epsilon_lower > 0.5
    assert set(r.event) <= {"red", "green", "blue", "<outcomes not seen in the selection half>"}
    tk = sdp.TopK(2, 2.0)
    r = sample(
        lambda q, size, rng: tk.select(q, rng, size=size), [0.0, 1.0, 0.0], [1.0, 0.0, 0.0],
        4_000, rng=5,
    )  # fmt: skip
    assert r.epsilon_lower > 0.5
    unseen = "<outcomes not seen in the selection half>"
    assert all(isinstance(t, tuple) and len(t) == 2 for t in r.event if t != unseen)

    def objects(x: int, size: int, rng: np.random.Generator) -> list[object]:
        return [("yes",) if v else None for v in rng.random(size) < 0.3 + 0.4 * x]

    r = sample(objects, 1, 0, 4_000, rng=5)
    assert r.epsilon_lower > 0.5


def test_events_family_and_bins() -> None:
    lap = sdp.Laplace(0.5)

    def s(x: float, size: int, rng: np.random.Generator) -> np.ndarray:
        return lap.release(np.full(size, x), rng)

    family = [lambda y, t=t: y > t for t in np.linspace(-1.0, 2.0, 7)]
    r = sample(s, 1.0, 0.0, 8_000, rng=2, events=family, claim=sdp.Laplace(1.0))
    assert r.refuted
    assert r.event in family
    r = sample(s, 1.0, 0.0, 8_000, rng=2, bins=[-1.0, 0.0, 0.5, 1.0, 2.0], claim=sdp.Laplace(1.0))
    assert r.refuted
    assert all(lo < hi for lo, hi in r.event)  # type: ignore[attr-defined]
    rb = sample_bounded_range(s, 1.0, 0.0, 8_000, rng=2, events=family)
    assert rb.spread_lower > 1.0
    assert rb.event_high in family
    assert rb.event_low in family
    sets = sample(rr_sampler(2.0), 0, 1, 4_000, rng=2, events=[{0}, {1}])
    assert sets.event in ({0}, {1})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 3}, "n must be >= 4"),
        ({"confidence": 1.0}, "confidence"),
        ({"delta": 1.0}, "delta"),
        ({"claim": "PureDP(1)"}, "claim"),
        ({"bins": 5, "events": [{0}]}, "at most one"),
        ({"events": []}, "empty"),
        ({"events": "ab"}, "sequence"),
        ({"events": [3]}, "callable"),
        ({"progress": "yes"}, "progress"),
        ({"rng": -1}, "seed"),
        ({"bins": [1.0, 0.0]}, "increasing"),
        ({"bins": [[0.0]]}, "1-D"),
        ({"bins": "x"}, "bins"),
        ({"claim": sdp.BoundedRange(1.0), "delta": 0.1}, "bounded-range"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    args = {"n": 100, **kwargs}
    n = args.pop("n")
    with pytest.raises(sdp.InvalidParameter, match=match):
        sample(rr_sampler(1.0), 0, 1, n, **args)  # type: ignore[arg-type]


def test_bad_samplers() -> None:
    with pytest.raises(sdp.InvalidParameter, match="callable"):
        sample("sampler", 0, 1, 100)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="must return"):
        sample(lambda x, size, rng: np.zeros(size + 1, dtype=int), 0, 1, 100)
    with pytest.raises(sdp.InvalidParameter, match="bins="):
        sample(lambda x, size, rng: rng.random(size), 0, 1, 100)
    with pytest.raises(sdp.InvalidParameter, match="different shapes"):
        sample(lambda x, size, rng: np.zeros((size, 1 + x), dtype=int), 0, 1, 100)
    with pytest.raises(sdp.InvalidParameter, match="BoundedRange"):
        sample_bounded_range(rr_sampler(1.0), 0, 1, 100, claim=sdp.PureDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="one bool per output"):
        sample(rr_sampler(1.0), 0, 1, 100, events=[lambda y: True])
    with pytest.raises(sdp.InvalidParameter, match="real"):
        sample(lambda x, size, rng: np.array(["a"] * size), 0, 1, 100, bins=3)
