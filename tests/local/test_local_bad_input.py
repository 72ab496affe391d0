"""Bad input to sdp.local raises sdp.InvalidParameter naming the parameter (property tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sharpdp as sdp

SCHEMES = ["rr", "oue", "hadamard"]
schemes = st.sampled_from(SCHEMES)

bad_epsilons = st.one_of(
    st.floats(max_value=0.0),  # ≤ 0 (−0.0 and −inf included)
    st.floats(min_value=5e-324, max_value=9.99e-101),  # below MIN_EPSILON (underflows)
    st.just(math.inf),
    st.just(math.nan),
    st.just(True),
    st.text(max_size=3),
    st.none(),
    st.just(1j),
)
bad_categories = st.one_of(
    st.integers(max_value=1),
    st.floats(allow_nan=True),
    st.just(True),
    st.text(max_size=3),
    st.none(),
    st.just(2**24 + 1),
)


@settings(max_examples=60)
@given(eps=bad_epsilons, scheme=schemes)
def test_bad_epsilon(eps: object, scheme: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match="epsilon"):
        sdp.local.randomize([0, 1], eps, 3, scheme=scheme, rng=0)  # type: ignore[arg-type]
    reports = sdp.local.randomize([0, 1], 1.0, 3, scheme=scheme, rng=0)
    with pytest.raises(sdp.InvalidParameter, match="epsilon"):
        sdp.local.estimate(reports, epsilon=eps, categories=3)  # type: ignore[arg-type]


@settings(max_examples=60)
@given(k=bad_categories, scheme=schemes)
def test_bad_categories(k: object, scheme: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match="categories"):
        sdp.local.randomize([0, 1], 1.0, k, scheme=scheme, rng=0)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="categories"):
        sdp.local.choose_scheme(1.0, k)  # type: ignore[arg-type]


bad_values = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=5),
    st.lists(st.integers(min_value=4), min_size=1, max_size=5),  # ≥ k = 4
    st.lists(st.integers(max_value=-1), min_size=1, max_size=5),
    st.lists(st.booleans(), min_size=1, max_size=3),
    st.lists(st.text(max_size=2), min_size=1, max_size=3),
    st.just([]),
    st.just([[0, 1], [2]]),  # ragged
    st.just([[0, 1], [2, 3]]),  # 2-D
    st.just(np.array([0.0, 1.0])),  # integral floats are still floats
    st.just([0, 1, math.nan]),
    st.just([2**70]),
    st.none(),
)


@settings(max_examples=80)
@given(values=bad_values, scheme=schemes)
def test_bad_values(values: object, scheme: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match="values"):
        sdp.local.randomize(values, 1.0, 4, scheme=scheme, rng=0)


@given(scheme=st.one_of(st.text(max_size=8), st.none(), st.integers()))
def test_bad_scheme(scheme: object) -> None:
    if scheme in ("auto", "rr", "oue", "hadamard"):
        return
    with pytest.raises(sdp.InvalidParameter, match="scheme"):
        sdp.local.randomize([0], 1.0, 3, scheme=scheme, rng=0)  # type: ignore[arg-type]


@given(
    scheme=schemes,
    eps=st.floats(min_value=0.01, max_value=10.0),
    other_eps=st.floats(min_value=0.01, max_value=10.0),
    k=st.integers(min_value=2, max_value=9),
    other_k=st.integers(min_value=2, max_value=9),
)
def test_mismatched_reports(scheme: str, eps: float, other_eps: float, k: int, other_k: int) -> None:
    reports = sdp.local.randomize([0, 1, 1], eps, k, scheme=scheme, rng=0)
    if other_eps != eps:
        with pytest.raises(sdp.InvalidParameter, match="epsilon") as err:
            sdp.local.estimate(reports, epsilon=other_eps, categories=k)
        assert repr(eps) in str(err.value)
        assert repr(other_eps) in str(err.value)
    if other_k != k:
        with pytest.raises(sdp.InvalidParameter, match="categories") as err:
            sdp.local.estimate(reports, epsilon=eps, categories=other_k)
        assert f"categories={k}" in str(err.value)
        assert f"categories={other_k}" in str(err.value)


def test_bad_reports_and_rng() -> None:
    with pytest.raises(sdp.InvalidParameter, match="reports"):
        sdp.local.estimate([0, 1], epsilon=1.0, categories=3)  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="rng"):
        sdp.local.randomize([0], 1.0, 3, rng="seed")  # type: ignore[arg-type]
    with pytest.raises(sdp.InvalidParameter, match="rng"):
        sdp.local.randomize([0], 1.0, 3, rng=-1)
    bad = [
        ("rr", np.array([3]), 1),  # outside [0, k)
        ("rr", np.array([0.5]), 1),
        ("rr", np.array([0, 1]), 1),  # n mismatch
        ("rr", np.array([True]), 1),
        ("hadamard", np.array([4]), 1),  # K = 4 for k = 3
        ("oue", np.array([[0b00010000]], dtype=np.uint8), 1),  # bit 4 set: beyond k = 3
        ("oue", np.array([[1, 0]], dtype=np.uint8), 1),  # wrong width
        ("auto", np.array([0]), 1),
        ("rr", np.array([0]), 0),
    ]
    sdp.local.Reports("oue", 1.0, 3, np.array([[0b11100000]], dtype=np.uint8), 1)  # k bits: ok
    for scheme, data, n in bad:
        with pytest.raises(sdp.InvalidParameter):
            sdp.local.Reports(scheme, 1.0, 3, data, n)


@given(level=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(math.nan)))
def test_bad_interval_and_query(level: float) -> None:
    est = sdp.local.estimate(sdp.local.randomize([0, 1, 2], 1.0, 3, rng=0), 1.0, 3)
    with pytest.raises(sdp.InvalidParameter, match="level"):
        est.interval(level)
    with pytest.raises(sdp.InvalidParameter, match="level"):
        est.query([0]).interval(level)


def test_bad_method_subset_and_frequencies() -> None:
    est = sdp.local.estimate(sdp.local.randomize([0, 1, 2], 1.0, 3, rng=0), 1.0, 3)
    with pytest.raises(sdp.InvalidParameter, match="method"):
        est.interval(0.9, method="wald")
    for subset in ([], [0, 0], [3], [-1], [0.5], "a"):
        with pytest.raises(sdp.InvalidParameter, match="subset"):
            est.query(subset)
    for f in ([0.5, 0.5], [0.5, 0.5, math.nan], [1.5, 0, 0], [-0.1, 0.5, 0.6], "abc"):
        with pytest.raises(sdp.InvalidParameter, match="true_frequencies"):
            est.variance_at(f)
