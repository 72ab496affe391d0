"""Sums and means: exact at a huge ε against an independent clamp-round-bound computation; the
mean's conservative interval covers at (at least) its level."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sharpdp as sdp
from sharpdp.data.sums import MeanQuery

FRUITS = ["apple", "banana", "cherry"]


def _kept_values(
    df: pd.DataFrame,
    reference: type,
    keys: list[str],
    lo: float,
    hi: float,
    step: float,
    max_rows: int,
    max_groups: int,
    salt: str,
) -> pd.DataFrame:
    """Independent bounding of summed rows: grid values, rows ranked by hash(unit|key|v|salt).

    Values are clamped to the grid's bounds rounded inwards, ⌈lo/step⌉·step and ⌊hi/step⌋·step,
    then rounded to the nearest step (halves up)."""
    d = df[df["amount"].notna()].copy()
    glo, ghi = math.ceil(lo / step) * step, math.floor(hi / step) * step
    d["v"] = np.floor(d["amount"].clip(glo, ghi) / step + 0.5).astype(np.int64)
    d["digest"] = [
        reference.rank_hash([r["person"], *(r[k] for k in keys), r["v"]], salt)
        for _, r in d.iterrows()
    ]
    d = d.sort_values(["person", *keys, "digest", "v"], kind="mergesort")
    d["r"] = d.groupby(["person", *keys]).cumcount()
    d = d[d["r"] < max_rows]
    if keys:
        pairs = d.groupby(["person", *keys]).size().reset_index(name="n")
        pairs["digest"] = [
            reference.rank_hash([r["person"], *(r[k] for k in keys)], salt)
            for _, r in pairs.iterrows()
        ]
        pairs = pairs.sort_values(["person", "digest"], kind="mergesort")
        pairs = pairs[pairs.groupby("person").cumcount() < max_groups]
        d = d.merge(pairs[["person", *keys]], on=["person", *keys])
    return d


def _fruit_mean(
    small: pd.DataFrame,
    reference: type,
    budget: sdp.Guarantee,
    seed: int,
    privacy: sdp.Guarantee,
    max_rows: int,
    max_groups: int,
) -> tuple[MeanQuery, pd.DataFrame]:
    """A mean of ``amount`` in (0, 100) by fruit over ``FRUITS``, and its independently kept rows."""
    s = sdp.data.Session(small, "person", budget, seed=seed)
    q = s.mean(
        "amount",
        bounds=(0, 100),
        privacy=privacy,
        max_rows=max_rows,
        by="fruit",
        keys=FRUITS,
        max_groups=max_groups,
    )
    kept = _kept_values(
        small[small["fruit"].isin(FRUITS)],
        reference,
        ["fruit"],
        0,
        100,
        q.bounding.step,
        max_rows,
        max_groups,
        q.bounding.salt,
    )
    return q, kept


def test_huge_epsilon_sum_is_bounded_truth(small: pd.DataFrame, reference: type) -> None:
    # grid step 2^-4 (the power of two below 110/2^10) for bounds (−10.3, 99.7); Δ = 2·⌊99.7·2^4⌋
    # = 3190 steps; scale 3190/1e11: P[Z ≠ 0] < 1e-1000
    s = sdp.data.Session(small, "person", sdp.PureDP(1e12), seed=3)
    q = s.sum("amount", bounds=(-10.3, 99.7), privacy=sdp.PureDP(1e11), max_rows=2)
    step = q.bounding.step
    assert step == 2.0**-4
    kept = _kept_values(small, reference, [], -10.3, 99.7, step, 2, 1, q.bounding.salt)
    r = q.run(rng=0).to_pandas(level=0.99)
    assert r["sum"].iloc[0] == kept["v"].sum() * step
    assert r["lower"].iloc[0] <= r["sum"].iloc[0] <= r["upper"].iloc[0]


def test_huge_epsilon_mean_by_key_is_bounded_truth(small: pd.DataFrame, reference: type) -> None:
    # step 2^-4; the centred sum moves by 3·(100·2^4) doubled steps; scale ≤ 2·3·1600/5e11 (half
    # of ε per part): P[Z ≠ 0] < 1e-1000
    q, kept = _fruit_mean(small, reference, sdp.PureDP(1e13), 4, sdp.PureDP(1e12), 3, 2)
    assert q.bounding.step == 2.0 ** math.floor(math.log2(100 / 2**10))
    want = (kept.groupby("fruit")["v"].mean() * q.bounding.step).to_dict()
    got = q.run(rng=0).to_pandas()
    for fruit, mean, lo, hi in zip(
        got["fruit"], got["mean"], got["lower"], got["upper"], strict=True
    ):
        assert mean == want[fruit] or abs(mean - want[fruit]) < 1e-9
        assert lo <= want[fruit] <= hi


def test_mean_interval_covers_at_level(small: pd.DataFrame, reference: type) -> None:
    # 60 runs × 3 keys of a ≥ 90% interval (union bound over two exact intervals): misses are
    # stochastically ≤ Binomial(180, 0.1); fail above its 1 − 1e-6 quantile (false-failure
    # rate < 1e-6).
    q, kept = _fruit_mean(small, reference, sdp.ZCDP(1e9), 5, sdp.ZCDP(0.5), 2, 1)
    truth = (kept.groupby("fruit")["v"].mean() * q.bounding.step).reindex(FRUITS).to_numpy()
    rng = np.random.default_rng(99)
    misses = 0
    for _ in range(60):
        r = q.run(rng=rng).to_pandas(level=0.9)
        misses += int(np.sum((truth < r["lower"].to_numpy()) | (truth > r["upper"].to_numpy())))
    assert misses <= stats.binom.ppf(1 - 1e-6, 180, 0.1)


def test_mean_explain_splits_privacy(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(1.0), seed=5)
    q = s.mean("amount", bounds=(0, 100), privacy=sdp.PureDP(0.5), max_rows=1)
    e = q.explain()
    assert [st.copies for st in e.statistics] == [1, 1]
    # the centred doubled sum moves by (U − L)/step grid steps, scale 4·that for ε/2 = 0.25
    steps = 100 / q.bounding.step
    assert e.statistics[0].mechanism == sdp.DiscreteLaplace(4 * steps, sensitivity=int(steps))
    assert e.statistics[1].mechanism == sdp.DiscreteLaplace(4.0, sensitivity=1)
    assert e.cost <= 0.5


def _person_totals(
    df: pd.DataFrame, reference: type, lo: float, hi: float, step: float, kappa: int, salt: str
) -> dict[str, float]:
    """Independent per-person clamping: t = Σ⌊x/step + ½⌋ per (person, fruit), clamped to the
    rounded bounds; each person's fruits ranked by hash(unit|fruit|salt), ``kappa`` kept."""
    d = df[df["amount"].notna()].copy()
    d["v"] = np.floor(d["amount"] / step + 0.5).astype(np.int64)
    t = d.groupby(["person", "fruit"])["v"].sum().reset_index()
    lo_g, hi_g = math.floor(lo / step + 0.5), math.floor(hi / step + 0.5)
    t["v"] = t["v"].clip(lo_g, hi_g)
    t["digest"] = [
        reference.rank_hash([p, f], salt) for p, f in zip(t["person"], t["fruit"], strict=True)
    ]
    t = t.sort_values(["person", "digest"], kind="mergesort")
    t = t[t.groupby("person").cumcount() < kappa]
    return (t.groupby("fruit")["v"].sum() * step).to_dict()


def test_sum_clamped_per_person_is_bounded_truth(small: pd.DataFrame, reference: type) -> None:
    """clamp='person': every row counts and each person's total per key is clamped; the
    sensitivity is max(|L|, |U|) (not max_rows times it), shown by explain()."""
    s = sdp.data.Session(small, "person", sdp.PureDP(1e12), seed=8)
    q = s.sum(
        "amount",
        bounds=(-20, 150),
        privacy=sdp.PureDP(1e7),
        by="fruit",
        keys=FRUITS,
        max_groups=2,
        granularity=1.0,
        clamp="person",
    )
    assert q.bounding.max_rows is None
    (stat,) = q.statistics
    assert stat.sensitivity == 150.0  # step 1: Δ∞ = max(|−20|, |150|) steps
    assert "total per key clamped to [-20, 150]" in str(q.bounding)
    want = _person_totals(
        small[small["fruit"].isin(FRUITS)], reference, -20, 150, 1.0, 2, q.bounding.salt
    )
    got = q.run(rng=0).to_pandas()
    assert dict(zip(got["fruit"], got["sum"], strict=True)) == want
    # some person's total was clamped (the table has persons with several large amounts)
    raw = small.groupby(["person", "fruit"])["amount"].sum()
    assert (raw > 150).any()


def test_sum_clamp_argument_is_checked(small: pd.DataFrame) -> None:
    s = sdp.data.Session(small, "person", sdp.PureDP(10), seed=8)
    with pytest.raises(sdp.InvalidParameter, match="clamp must be"):
        s.sum("amount", bounds=(0, 10), privacy=sdp.PureDP(1), clamp="group")
    with pytest.raises(sdp.InvalidParameter, match="max_rows does not apply"):
        s.sum("amount", bounds=(0, 10), privacy=sdp.PureDP(1), clamp="person", max_rows=2)


def test_zcdp_mean_with_a_wide_discrete_gaussian_is_priced_and_spent(small: pd.DataFrame) -> None:
    """A zCDP mean's sum noise is a discrete Gaussian with σ of ~10⁶ grid steps: too many atoms for
    the PLD and MGF analyses, which decline; RDP prices it (it used to raise NumericalError)."""
    s = sdp.data.Session(small, "person", sdp.ApproxDP(1.0, 1e-6), seed=5)
    q = s.mean("amount", bounds=(-30, 150), privacy=sdp.ZCDP(0.01), max_rows=100)
    e = q.explain()
    sum_noise = e.statistics[0].mechanism
    assert isinstance(sum_noise, sdp.DiscreteGaussian)
    assert sum_noise.sigma > 1e5
    # ρ = 0.01 in zCDP: the classical conversion ρ + 2√(ρ log(1/δ)) [Bun–Steinke 2016, Lemma 3.5]
    # is a valid upper bound, and the spend may not exceed it
    classical = 0.01 + 2 * math.sqrt(0.01 * math.log(1e6))
    assert 0.0 < e.cost <= classical
    q.run(rng=0)
    assert s.accountant.epsilon(1e-6) <= classical


def test_bounds_far_from_zero_get_a_coarser_grid(small: pd.DataFrame, reference: type) -> None:
    """Bounds far from 0 take the least power of two that keeps both within 2^31 steps of 0
    (bounds (10^15 − 2^22, 10^15): the (U − L)/2^10 grid would be step 2^12, but 10^15/2^31 needs
    2^ceil(log2(10^15/2^31)) = 2^19). A granularity given too fine says which is the finest."""
    lo, hi = 10**15 - 2**22, 10**15
    # Δ = 2·⌊10^15/2^19⌋ ≈ 3.8e9 steps; ε = 1e14: scale 4e-5, P[Z ≠ 0] < 1e-1000
    s = sdp.data.Session(small, "person", sdp.PureDP(1e15), seed=3)
    q = s.sum("amount", bounds=(lo, hi), privacy=sdp.PureDP(1e14), max_rows=2)
    assert q.bounding.step == 2.0**19
    kept = _kept_values(small, reference, [], lo, hi, 2.0**19, 2, 1, q.bounding.salt)
    assert q.run(rng=0).to_pandas()["sum"].iloc[0] == kept["v"].sum() * 2.0**19
    with pytest.raises(sdp.InvalidParameter, match=r"granularity >= 524288\.0"):
        s.sum("amount", bounds=(lo, hi), privacy=sdp.PureDP(1.0), granularity=1.0)


def test_mean_interval_at_a_level_within_an_ulp_of_one(small: pd.DataFrame) -> None:
    """Each noise's share of the miss, (1 − level)/2, was subtracted from 1, which rounds to 1 at
    level = nextafter(1, 0): a ZeroDivisionError after the spend. Each half-width is now the least
    w with 2·P[Z ≥ w + 1] ≤ (1 − level)/2, P[Z ≥ a] = q^a/(1 + q) for the discrete Laplace."""
    from sharpdp.data._noise import half_width_missing

    level = math.nextafter(1.0, 0.0)
    s = sdp.data.Session(small, "person", sdp.PureDP(1.0), seed=5)
    r = s.mean("amount", bounds=(0, 100), privacy=sdp.PureDP(0.5), max_rows=1).run(rng=0)
    frame = r.to_pandas(level=level)
    assert frame["lower"].iloc[0] <= frame["mean"].iloc[0] <= frame["upper"].iloc[0]
    wide, narrow = r.to_pandas(level=0.999), frame
    assert narrow["lower"].iloc[0] <= wide["lower"].iloc[0]
    assert narrow["upper"].iloc[0] >= wide["upper"].iloc[0]
    miss = (1 - level) / 2  # 2^-54
    for noise in r.noise.values():
        q = math.exp(-1 / noise.scale)
        w = 0
        while 2 * q ** (w + 1) / (1 + q) > miss:
            w += 1
        assert half_width_missing(noise, miss) == w


def test_released_rows_keeps_the_values_when_an_interval_fails(
    small: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI and the service show a release after paying for it: should its intervals fail,
    the values still come back, with the reason (the mean's ZeroDivisionError lost them)."""
    import sharpdp.data.release as release_module

    s = sdp.data.Session(small, "person", sdp.PureDP(1.0), seed=5)
    r = s.mean("amount", bounds=(0, 100), privacy=sdp.PureDP(0.5), max_rows=1).run(rng=0)
    whole, failure = r.released_rows(0.9)
    assert failure is None
    assert list(whole.columns) == ["mean", "lower", "upper"]

    def broken(*_: object) -> int:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(release_module, "half_width_missing", broken)
    values, failure = r.released_rows(0.9)
    assert failure == "no intervals (ZeroDivisionError: float division by zero)"
    assert list(values.columns) == ["mean"]
    assert values["mean"].iloc[0] == whole["mean"].iloc[0]
