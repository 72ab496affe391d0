"""Fuzzing every public entry point of sharpdp with hostile input (issue 5, item 5).

Property, for every call: it either returns a valid value — no NaN anywhere, ε ≥ 0, δ ∈ [0, 1],
Rényi divergences ≥ 0, probabilities ≥ 0 summing to 1 within float error (and none on an excluded
candidate), released values of the right type and shape, selections among the candidates with a
finite score — or raises a subclass of :class:`sharpdp.SharpDPError`. Never ``TypeError``,
``ValueError``, ``ZeroDivisionError``, ``OverflowError``, ``RecursionError`` or a numpy error, never
a warning (pytest runs with ``filterwarnings = error``, so a warning is an exception here), and never
a hang: each call runs under a SIGALRM time limit and fails the example when it is exceeded.

Arguments are drawn all valid (half the time, edges of the domain included: 0, subnormals, 1e308,
``inf`` where allowed), with one hostile argument, or each independently valid or hostile. Hostile
values: NaN, ±inf, negatives, booleans, strings, ``None``, numpy scalars, ``Fraction``,
``Decimal``, integers beyond the float range, complex numbers, containers, empty and ragged arrays
(:mod:`fuzz_support`).

Hypothesis runs derandomized (the same examples in every run, as CI needs). The number of calls
per entry point (tried, and rejected with a SharpDPError) is printed in the terminal summary.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sharpdp as sdp
from fuzz_support import (
    ALPHAS,
    BAD_SCORES,
    COUNTS,
    DELTAS,
    EPSILONS,
    FINITE,
    FUZZ,
    NONNEGATIVE,
    OPEN_PROBABILITIES,
    POSITIVE,
    REALS,
    REJECTED,
    SCORES,
    arg,
    call,
    check_delta,
    check_epsilon,
    check_nonnegative,
    check_probabilities,
    draw_args,
    either,
    hostile,
    install_summary,
    probe,
    short,
)
from sharpdp import audit

install = pytest.fixture(scope="module", autouse=True)(install_summary)


# -- the constructors -------------------------------------------------------------------------------


@st.composite
def rdp_curves(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    n = draw(st.integers(1, 6))
    return draw(st.lists(ALPHAS, min_size=n, max_size=n)), draw(
        st.lists(EPSILONS, min_size=n, max_size=n)
    )


# name: (constructor, valid strategies of its positional parameters, how many are required)
Table = dict[str, tuple[Callable[..., Any], list[st.SearchStrategy[Any]], int]]

GUARANTEES: Table = {
    "PureDP": (sdp.PureDP, [EPSILONS], 1),
    "ApproxDP": (sdp.ApproxDP, [EPSILONS, OPEN_PROBABILITIES], 2),
    "ZCDP": (sdp.ZCDP, [NONNEGATIVE, REALS], 1),
    "ApproxZCDP": (sdp.ApproxZCDP, [NONNEGATIVE, OPEN_PROBABILITIES, REALS], 2),
    "MCDP": (sdp.MCDP, [FINITE, FINITE], 2),
    "BoundedRange": (sdp.BoundedRange, [EPSILONS], 1),
    "GDP": (sdp.GDP, [NONNEGATIVE], 1),
}

GRANULARITIES = st.one_of(st.none(), st.integers(-1074, 1023).map(lambda e: math.ldexp(1.0, e)))
EXACT_PARAMETERS = st.one_of(
    POSITIVE,
    st.fractions(min_value=0, max_value=2**53),
    st.integers(1, 2**53),
    st.decimals(min_value=0, max_value=10**16, allow_nan=False),
)
INTEGER_SENSITIVITIES = st.one_of(st.integers(0, 5), st.integers(0, 2**63), st.floats(0.0, 10.0))
NOISES = st.sampled_from(["gumbel", "exponential", "laplace"])
SMALL_INTS = st.one_of(st.integers(-2, 12), st.integers(-(2**70), 2**70))
KS = st.one_of(st.integers(1, 3), st.integers(1, 9))

MECHANISMS: Table = {
    "Laplace": (sdp.Laplace, [POSITIVE, FINITE, GRANULARITIES], 1),
    "Gaussian": (sdp.Gaussian, [POSITIVE, FINITE, GRANULARITIES], 1),
    "DiscreteLaplace": (sdp.DiscreteLaplace, [EXACT_PARAMETERS, INTEGER_SENSITIVITIES], 1),
    "DiscreteGaussian": (sdp.DiscreteGaussian, [EXACT_PARAMETERS, INTEGER_SENSITIVITIES], 1),
    "RandomizedResponse": (sdp.RandomizedResponse, [FINITE, st.integers(2, 10**6)], 1),
    "Exponential": (sdp.Exponential, [FINITE, FINITE, st.booleans()], 1),
    "PermuteAndFlip": (sdp.PermuteAndFlip, [FINITE, FINITE, st.booleans()], 1),
    "ReportNoisyMax": (sdp.ReportNoisyMax, [FINITE, NOISES, FINITE, st.booleans()], 1),
    "TopK": (sdp.TopK, [KS, FINITE, FINITE, st.booleans()], 2),
}
ALL = GUARANTEES | MECHANISMS


def construct(kind: str, data: st.DataObject) -> Any:
    """Draw constructor arguments (the required ones, then optionally more) and construct."""
    factory, params, required = ALL[kind]
    args = draw_args(data, params)
    n_args = data.draw(st.integers(required, len(args)))
    return call(f"{kind}()", factory, *args[:n_args])


def draw_item(data: st.DataObject) -> Any:
    """A guarantee or mechanism (from drawn arguments; a default if rejected), or a hostile value."""
    kind = data.draw(st.sampled_from([*ALL, "hostile"]))
    if kind == "hostile":
        return data.draw(hostile())
    item = construct(kind, data)
    return sdp.PureDP(1.0) if item is REJECTED else item


# -- guarantees -------------------------------------------------------------------------------------


@FUZZ
@pytest.mark.parametrize("kind", list(GUARANTEES))
@given(data=st.data())
def test_guarantee_constructors_and_queries(kind: str, data: st.DataObject) -> None:
    g = construct(kind, data)
    if g is not REJECTED:
        assert isinstance(g, sdp.Guarantee)
        probe(kind, g, data)


@FUZZ
@given(data=st.data())
def test_rdp_curves(data: st.DataObject) -> None:
    orders, epsilons = data.draw(rdp_curves())
    mode = data.draw(st.sampled_from(["valid", "hostile-entry", "hostile-argument", "ragged"]))
    if mode == "hostile-entry":
        target = orders if data.draw(st.booleans()) else epsilons
        target[data.draw(st.integers(0, len(target) - 1))] = data.draw(hostile())
    elif mode == "hostile-argument":
        if data.draw(st.booleans()):
            orders = data.draw(hostile())
        else:
            epsilons = data.draw(hostile())
    elif mode == "ragged":
        epsilons = [*epsilons, 1.0]
    g = call("RDP()", sdp.RDP, orders, epsilons)
    if g is not REJECTED:
        probe("RDP", g, data)


def _curve(kind: str) -> Callable[[float], Any]:
    """User-supplied RDP curves: valid ones and ones returning garbage."""
    curves: dict[str, Callable[[float], Any]] = {
        "gaussian": lambda a: 0.5 * a if a < math.inf else math.inf,
        "constant": lambda a: 0.3,
        "zero": lambda a: 0.0,
        "huge": lambda a: 1e308,
        "infinite": lambda a: math.inf,
        "capped": lambda a: min(1.0, a * 0.1),
        "numpy": lambda a: np.float64(0.25),
        "nan": lambda a: math.nan,
        "negative": lambda a: -1.0,
        "string": lambda a: "0.5",
        "none": lambda a: None,
        "complex": lambda a: 1j,
        "bool": lambda a: True,
        "float32": lambda a: np.float32(0.5),
        "nan-above-2": lambda a: 0.5 if a < 2 else math.nan,
    }
    return curves[kind]


CURVES = [
    "gaussian", "constant", "zero", "huge", "infinite", "capped", "numpy",
    "nan", "negative", "string", "none", "complex", "bool", "float32", "nan-above-2",
]  # fmt: skip


@FUZZ
@given(kind=st.sampled_from(CURVES), data=st.data())
def test_rdp_from_function(kind: str, data: st.DataObject) -> None:
    g = call("RDP.from_function()", sdp.RDP.from_function, _curve(kind))
    assert g is not REJECTED
    probe("RDP.from_function", g, data)
    assert call("RDP.from_function()", sdp.RDP.from_function, data.draw(hostile())) is REJECTED


# -- mechanisms: constructors and privacy queries ---------------------------------------------------


@FUZZ
@pytest.mark.parametrize("kind", list(MECHANISMS))
@given(data=st.data())
def test_mechanism_constructors_and_queries(kind: str, data: st.DataObject) -> None:
    m = construct(kind, data)
    if m is not REJECTED:
        assert isinstance(m, sdp.Mechanism)
        probe(kind, m, data)


# -- selection: exact laws and samplers --------------------------------------------------------------

SELECTIONS = ["Exponential", "PermuteAndFlip", "ReportNoisyMax", "TopK"]
RNGS = st.one_of(
    st.integers(0, 2**64),
    st.integers(0, 100).map(np.random.default_rng),
    st.integers(0, 100).map(np.random.SeedSequence),
    st.integers(0, 100).map(np.random.PCG64),
)
# Absurd sizes (2**63 draws) are a resource limit, not an input error: sizes stay ≤ 50 here.
SIZES = st.one_of(st.none(), st.integers(0, 50))
HOSTILE_SIZES = st.one_of(
    st.integers(-5, -1), hostile().filter(lambda v: not isinstance(v, int | np.integer))
)


def finite_scores(scores: Any) -> np.ndarray:
    return np.isfinite(np.asarray(scores, dtype=np.float64))


def check_selection(name: str, m: Any, scores: Any, out: Any, size: Any) -> None:
    """A draw (or ``size`` draws) of indices of candidates with a finite score (k distinct for
    top-k), as an int (a k-tuple), or an int64 array of shape (size,) or (size, k)."""
    live = finite_scores(scores)
    k = getattr(m, "k", None)
    if size is None:
        if k is not None:
            assert isinstance(out, tuple), f"{name}: {out!r}"
            assert len(out) == k, f"{name}: {out!r}"
            rows = [list(out)]
        else:
            assert isinstance(out, int), f"{name}: {out!r}"
            assert not isinstance(out, bool), f"{name}: {out!r}"
            rows = [[out]]
    else:
        assert isinstance(out, np.ndarray), f"{name}: {out!r}"
        assert out.dtype == np.int64, f"{name}: {out!r}"
        n = int(size)
        assert out.shape == ((n,) if k is None else (n, k)), f"{name}: shape {out.shape}"
        rows = out.reshape(n, k or 1).tolist()
    for row in rows:
        assert len(set(row)) == len(row), f"{name}: repeated index in {row}"
        for i in row:
            assert 0 <= i < live.size, f"{name}: index {i} of {live.size}"
            assert live[i], f"{name}: selected candidate {i}, whose score is not finite"


@FUZZ
@pytest.mark.parametrize("kind", SELECTIONS)
@given(data=st.data())
def test_selection_laws_and_samplers(kind: str, data: st.DataObject) -> None:
    m = construct(kind, data)
    if m is REJECTED:
        return
    scores, rng, size = data.draw(SCORES), data.draw(RNGS), data.draw(SIZES)
    if data.draw(st.integers(0, 5)) == 0:
        scores = data.draw(BAD_SCORES)
    elif data.draw(st.integers(0, 5)) == 0:
        rng = data.draw(hostile())
    if kind != "TopK":
        p = call(f"{kind}.probabilities", m.probabilities, scores)
        if p is not REJECTED:
            check_probabilities(f"{kind}.probabilities", p)
            live = finite_scores(scores)
            assert np.all(np.asarray(p)[~live] == 0.0), f"{kind}: mass on a -inf candidate"
    else:
        n = len(scores) if isinstance(scores, list | np.ndarray) else 3
        bad = st.one_of(
            st.lists(st.integers(-1, 8), min_size=min(m.k, 9), max_size=min(m.k, 9)), hostile()
        )
        valid = st.permutations(list(range(n))).map(lambda v: v[: m.k])
        outcome = data.draw(either(valid, bad, odds=3))
        v = call("TopK.probability", m.probability, scores, outcome)
        if v is not REJECTED:
            assert isinstance(v, float), f"TopK.probability: {v!r}"
            assert 0.0 <= v <= 1.0, f"TopK.probability: {v!r}"
    if size is None and data.draw(st.booleans()):
        out = call(f"{kind}.select", m.select, scores, rng)
    else:
        if size is None or data.draw(st.integers(0, 5)) == 0:
            size = data.draw(HOSTILE_SIZES)
        out = call(f"{kind}.select", m.select, scores, rng, size=size)
    if out is not REJECTED:
        check_selection(f"{kind}.select", m, scores, out, size)
    if kind == "Exponential":
        n, beta = draw_args(data, [st.integers(1, 10**9), st.floats(0.0, 1.0)])
        v = call("Exponential.utility_bound", m.utility_bound, n, beta)
        if v is not REJECTED:
            check_nonnegative("Exponential.utility_bound", v)


# -- additive mechanisms and randomized response: releases -----------------------------------------

REAL_VALUES = st.one_of(
    st.floats(-1e6, 1e6),
    st.lists(st.floats(-1e6, 1e6), max_size=6),
    st.lists(st.lists(st.floats(-10.0, 10.0), min_size=2, max_size=2), max_size=3).map(np.array),
    st.sampled_from([0.0, -0.0, 5e-324, 1e15, -1e15, 1e308, np.float32(1.5), 3]),
)
INTEGER_VALUES = st.one_of(
    st.integers(-(2**62) + 1, 2**62 - 1),
    st.lists(st.integers(-(2**62) + 1, 2**62 - 1), max_size=6),
    st.lists(st.integers(-3, 3), max_size=6).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.lists(st.integers(-5, 5), min_size=2, max_size=2), max_size=3),
    st.sampled_from([0, np.int64(7), np.int8(-3), 3.0, np.array([], dtype=np.int64)]),
)
CATEGORIES = st.one_of(
    st.integers(0, 3), st.lists(st.integers(0, 1), max_size=6), st.just(np.array([0, 1, 1]))
)
BAD_VALUES = st.one_of(
    hostile(),
    st.lists(st.floats(), max_size=4),
    st.sampled_from([[[1], [2, 3]], [1, "a"], [None], [True], np.array(["1"]), [2**70]]),
)
RELEASES = {
    "Laplace": REAL_VALUES,
    "Gaussian": REAL_VALUES,
    "DiscreteLaplace": INTEGER_VALUES,
    "DiscreteGaussian": INTEGER_VALUES,
    "RandomizedResponse": CATEGORIES,
}


def check_release(name: str, value: Any, out: Any, integer: bool) -> None:
    if isinstance(out, np.ndarray):
        assert out.shape == np.shape(value), f"{name}: shape {out.shape} for {short(value)}"
        assert out.dtype == (np.int64 if integer else np.float64), f"{name}: dtype {out.dtype}"
        if not integer:
            assert np.all(np.isfinite(out)), f"{name}: released {short(out)}"
    elif integer:
        assert isinstance(out, int), f"{name}: released {out!r}"
        assert not isinstance(out, bool), f"{name}: released {out!r}"
    else:
        assert isinstance(out, float), f"{name}: released {out!r}"
        assert math.isfinite(out), f"{name}: released {out!r}"


@FUZZ
@pytest.mark.parametrize("kind", [k for k in RELEASES if hasattr(MECHANISMS[k][0], "release")])
@given(data=st.data())
def test_releases(kind: str, data: st.DataObject) -> None:
    m = construct(kind, data)
    if m is REJECTED:
        return
    value, rng = draw_args(data, [RELEASES[kind], RNGS])
    if data.draw(st.integers(0, 3)) == 0:
        value = data.draw(BAD_VALUES)
    out = call(f"{kind}.release", m.release, value, rng)
    if out is not REJECTED:
        check_release(f"{kind}.release", value, out, kind not in ("Laplace", "Gaussian"))
    if kind == "RandomizedResponse":
        p = call("RandomizedResponse.probabilities", m.probabilities, data.draw(arg(SMALL_INTS)))
        if p is not REJECTED:
            check_probabilities("RandomizedResponse.probabilities", p)
            assert len(p) == m.categories


# -- conversions ------------------------------------------------------------------------------------

TARGETS = [
    sdp.PureDP, sdp.ApproxDP, sdp.ZCDP, sdp.ApproxZCDP, sdp.RDP, sdp.GDP, sdp.BoundedRange,
    sdp.MCDP,
]  # fmt: skip
BAD_TARGETS = st.one_of(
    st.sampled_from([sdp.Guarantee, sdp.Laplace, sdp.Composition, int, "ZCDP"]), hostile()
)
METHODS = st.sampled_from(
    ["via-pure-dp", "cks20", "bs16", "rs21-lemma3", "hm25", "certified-rdp-sup", "nope"]
)


@FUZZ
@given(data=st.data())
def test_convert(data: st.DataObject) -> None:
    source = draw_item(data)
    target = data.draw(st.sampled_from(TARGETS))
    kwargs: dict[str, Any] = {}
    if target is sdp.ApproxDP:
        if data.draw(st.booleans()):
            kwargs["delta"] = data.draw(arg(DELTAS))
        else:
            kwargs["epsilon"] = data.draw(arg(EPSILONS))
    mode = data.draw(st.integers(0, 5))
    if mode == 0:
        target = data.draw(BAD_TARGETS)
    elif mode == 1:
        kwargs["method"] = data.draw(st.one_of(METHODS, hostile()))
    elif mode == 2:
        kwargs[data.draw(st.sampled_from(["delta", "epsilon"]))] = data.draw(hostile())
    out = call("convert", sdp.convert, source, target, **kwargs)
    if out is not REJECTED:
        assert isinstance(out, target), f"convert returned {out!r} for target {target!r}"
        probe(f"convert→{target.__name__}", out, data, group=False)


# -- calibration --------------------------------------------------------------------------------------

FAMILIES = [
    sdp.Laplace, sdp.Gaussian, sdp.DiscreteLaplace, sdp.DiscreteGaussian, sdp.Exponential,
    sdp.PermuteAndFlip, sdp.ReportNoisyMax, sdp.TopK, sdp.RandomizedResponse,
]  # fmt: skip
CALIBRATION_TARGETS = st.one_of(
    st.builds(sdp.PureDP, st.floats(0.0, 20.0)),
    st.builds(sdp.ApproxDP, st.floats(0.0, 20.0), st.floats(0.0, 0.5)),
    st.builds(sdp.ZCDP, st.floats(0.0, 20.0)),
    st.builds(sdp.GDP, st.floats(0.0, 20.0)),
    st.builds(sdp.PureDP, st.sampled_from([5e-324, 1e-300, 1e300, math.inf])),
    st.builds(sdp.ApproxDP, st.sampled_from([0.0, 1e-300, 1e300]), st.sampled_from([0.0, 1e-300])),
)
FIXED = {  # the family-specific constructor arguments calibrate passes through
    sdp.TopK: {"k": KS, "monotonic": st.booleans()},
    sdp.ReportNoisyMax: {"noise": NOISES, "monotonic": st.booleans()},
    sdp.Exponential: {"monotonic": st.booleans()},
    sdp.PermuteAndFlip: {"monotonic": st.booleans()},
    sdp.RandomizedResponse: {"categories": st.integers(2, 100)},
    sdp.Laplace: {"granularity": GRANULARITIES},
    sdp.Gaussian: {"granularity": GRANULARITIES},
}
UNRELATED = ["k", "categories", "noise", "monotonic", "granularity", "scale", "bogus"]


@FUZZ
@given(data=st.data())
def test_calibrate(data: st.DataObject) -> None:
    family = data.draw(st.sampled_from(FAMILIES))
    target = data.draw(CALIBRATION_TARGETS)
    sensitivity = data.draw(st.one_of(st.floats(0.0, 10.0), FINITE))
    fixed = {
        name: data.draw(values)
        for name, values in FIXED.get(family, {}).items()
        if name == "k" or data.draw(st.booleans())
    }
    mode = data.draw(st.integers(0, 5))
    if mode == 0:
        family = data.draw(st.one_of(st.sampled_from([sdp.PureDP, sdp.Composition]), hostile()))
    elif mode == 1:
        target = draw_item(data)
    elif mode == 2:
        sensitivity = data.draw(hostile())
    elif mode == 3:
        fixed[data.draw(st.sampled_from(UNRELATED))] = data.draw(st.one_of(hostile(), KS))
    elif mode == 4:
        fixed["method"] = data.draw(st.one_of(st.sampled_from(["exact", "classical"]), hostile()))
    m = call("calibrate", sdp.calibrate, family, target, sensitivity, **fixed)
    if m is not REJECTED:
        assert isinstance(m, family), f"calibrate returned {m!r}"
        probe(f"calibrate→{family.__name__}", m, data, group=False)


# -- composition --------------------------------------------------------------------------------------


def draw_items(data: st.DataObject) -> Any:
    mode = data.draw(
        st.sampled_from(["valid", "valid", "many", "hostile-entry", "hostile", "nested"])
    )
    if mode == "hostile":
        return data.draw(hostile())
    if mode == "many":  # one mechanism run very many times (a count is not an allocation)
        return [(draw_item(data), data.draw(st.integers(10**5, 10**12)))]
    items: list[Any] = []
    for _ in range(data.draw(st.integers(0, 3))):
        item = draw_item(data)
        items.append((item, data.draw(COUNTS)) if data.draw(st.booleans()) else item)
    if mode == "hostile-entry":
        entry = data.draw(
            st.one_of(
                hostile(),
                st.tuples(st.just(sdp.PureDP(1.0)), hostile()),
                st.tuples(hostile(), st.integers(0, 3)),
                st.just((sdp.PureDP(1.0), 1, 2)),
            )
        )
        items.insert(data.draw(st.integers(0, len(items))), entry)
    if mode == "nested" and items:
        c = call("compose", sdp.compose, items[:1])
        if c is not REJECTED:
            items.append((c, data.draw(COUNTS)) if data.draw(st.booleans()) else c)
    return items


@FUZZ
@given(data=st.data())
def test_compose(data: st.DataObject) -> None:
    items = draw_items(data)
    adaptive = data.draw(st.booleans()) if data.draw(st.integers(0, 4)) else data.draw(hostile())
    c = call("compose", sdp.compose, items, adaptive)
    if c is REJECTED:
        return
    assert isinstance(c, sdp.Composition)
    probe("Composition", c, data, group=False)
    d, e = data.draw(arg(DELTAS)), data.draw(arg(EPSILONS))
    for kwargs, check in (({"delta": d}, check_epsilon), ({"epsilon": e}, check_delta)):
        ex = call("Composition.explain", c.explain, **kwargs)
        if ex is not REJECTED:
            for row in ex.rows:
                if row.value is not None:
                    check(f"Composition.explain row {row.name}", row.value)
            text = call("Composition.explain (str)", str, ex)
            assert text is REJECTED or isinstance(text, str)
    assert call("Composition.explain", c.explain) is REJECTED  # neither delta nor epsilon
    v = call("Composition.certifies", c.certifies, data.draw(arg(EPSILONS)), d)
    if v is not REJECTED:
        assert isinstance(v, bool)


BUDGETS = st.one_of(
    st.builds(sdp.ApproxDP, st.floats(0.0, 10.0), st.floats(0.0, 0.1)),
    st.builds(sdp.PureDP, st.floats(0.0, 10.0)),
    st.builds(
        sdp.ApproxDP,
        st.sampled_from([0.0, 5e-324, 1e-6, 50.0, math.inf]),
        DELTAS.filter(lambda d: d < 1),
    ),
)


@FUZZ
@given(data=st.data())
def test_max_compositions(data: st.DataObject) -> None:
    item = draw_item(data)
    budget, adaptive = data.draw(BUDGETS), data.draw(st.booleans())
    mode = data.draw(st.integers(0, 3))
    if mode == 0:
        budget = draw_item(data)
    elif mode == 1:
        adaptive = data.draw(hostile())
    k = call("max_compositions", sdp.max_compositions, item, budget, adaptive)
    if k is not REJECTED:
        assert isinstance(k, int), f"max_compositions returned {k!r}"
        assert k >= 0, f"max_compositions returned {k!r}"


# -- accountant -------------------------------------------------------------------------------------

ACCOUNTANT_BUDGETS = st.one_of(BUDGETS, st.builds(sdp.ZCDP, st.floats(0.0, 5.0)))
NAMES = st.text(min_size=1, max_size=8)


@FUZZ
@given(data=st.data())
def test_accountant(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    directory = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    budget, ledger, analyst, period = draw_args(
        data,
        [
            ACCOUNTANT_BUDGETS,
            st.sampled_from([str(directory / "ledger.sqlite"), directory / "l.db", None]),
            NAMES,
            NAMES,
        ],
    )
    if isinstance(ledger, str | bytes) and not str(ledger).startswith(str(directory)):
        ledger = directory  # a hostile string is a path: keep every ledger in the temporary folder
    if data.draw(st.integers(0, 5)) == 0:
        budget = draw_item(data)
    acc = call("Accountant()", sdp.Accountant, budget, ledger, analyst, period=period)
    if acc is REJECTED:
        return
    try:
        for _ in range(data.draw(st.integers(1, 4))):
            item, count = draw_item(data), data.draw(arg(st.integers(1, 10**6)))
            fits = call("Accountant.would_fit", acc.would_fit, item, count)
            if fits is not REJECTED:
                assert isinstance(fits, bool)
            after = call("Accountant.projected", acc.projected, item, count)
            if after is not REJECTED:
                check_nonnegative("Accountant.projected", after)
            call("Accountant.spend", acc.spend, item, count)
        v = call("Accountant.epsilon", acc.epsilon, data.draw(arg(DELTAS)))
        if v is not REJECTED:
            check_epsilon("Accountant.epsilon", v)
        v = call("Accountant.delta", acc.delta, data.draw(arg(EPSILONS)))
        if v is not REJECTED:
            check_delta("Accountant.delta", v)
        for name, query in (
            ("Accountant.remaining", acc.remaining),
            ("Accountant.spent", acc.spent),
        ):
            v = call(name, query)
            if v is not REJECTED:
                check_nonnegative(name, v)
        h = call("Accountant.history", acc.history)
        assert h is REJECTED or isinstance(h, tuple)
    finally:
        acc.close()


# -- auditing -------------------------------------------------------------------------------------


@st.composite
def laws(draw: st.DrawFn, n: int | None = None) -> Any:
    """A probability vector (normalised), or log-probabilities, or a mapping."""
    size = n if n is not None else draw(st.integers(1, 5))
    weights = draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size))
    total = math.fsum(weights)
    if total == 0.0:
        weights, total = [1.0] * size, float(size)
    return [w / total for w in weights]


def check_report(name: str, r: Any, data: st.DataObject) -> None:
    probe(name, r, data, group=False)
    for what, fn in (("bounded_range", r.bounded_range), ("max_divergence", r.max_divergence)):
        v = call(f"{name}.{what}", fn)
        if v is not REJECTED:
            check_nonnegative(f"{name}.{what}", v)
    claim = draw_item(data) if data.draw(st.booleans()) else None
    result = call(f"{name}.check", r.check, claim)
    if result is not REJECTED:
        assert isinstance(result.ok, bool)


@st.composite
def neighbours(draw: st.DrawFn, m: Any) -> tuple[Any, Any]:
    """Inputs that are neighbours for m (score vectors within Δ; integers within Δ; categories)."""
    if isinstance(m, sdp.RandomizedResponse):
        k = min(m.categories, 50)
        return draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
    if isinstance(m, sdp.DiscreteLaplace | sdp.DiscreteGaussian):
        x = draw(st.integers(-100, 100))
        d = draw(st.integers(-min(m.sensitivity, 5), min(m.sensitivity, 5)))
        return x, x + d
    q = draw(st.lists(st.floats(-10.0, 10.0), min_size=1, max_size=5))
    if draw(st.booleans()):
        q[0] = -math.inf
        q.append(0.0)
    step = st.floats(0.0, 1.0) if m.monotonic else st.floats(-1.0, 1.0)
    sign = -1.0 if m.monotonic and draw(st.booleans()) else 1.0
    qp = [v if math.isinf(v) else v + sign * m.sensitivity * draw(step) for v in q]
    return q, qp


AUDITED = [
    "Exponential", "PermuteAndFlip", "ReportNoisyMax", "TopK", "RandomizedResponse",
    "DiscreteLaplace", "DiscreteGaussian",
]  # fmt: skip


@FUZZ
@given(data=st.data())
def test_audit_exact(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from([*AUDITED, "callable", "hostile"]))
    x: Any
    x_prime: Any
    if kind == "hostile":
        m: Any = data.draw(hostile())
        x, x_prime = data.draw(SCORES), data.draw(SCORES)
    elif kind == "callable":
        n = data.draw(st.integers(1, 5))
        pair = [data.draw(laws(n)), data.draw(laws(n))]
        # a law function defined on the two datasets it is audited on (any other input: the first)
        m = lambda x: pair[1] if isinstance(x, int) and x == 1 else pair[0]  # noqa: E731
        x, x_prime = 0, 1
    else:
        m = construct(kind, data)
        if m is REJECTED or (kind == "TopK" and m.k > 3):
            return
        x, x_prime = data.draw(neighbours(m))
    kwargs = {}
    mode = data.draw(st.integers(0, 4))
    if mode == 0:
        x_prime = data.draw(st.one_of(BAD_SCORES, SMALL_INTS))
    elif mode == 1:
        kwargs["require_neighbours"] = data.draw(st.one_of(st.booleans(), hostile()))
    r = call("audit.exact", audit.exact, m, x, x_prime, **kwargs)
    if r is not REJECTED:
        check_report("audit.exact", r, data)


@FUZZ
@given(data=st.data())
def test_audit_exact_pair(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 6))
    p, q = data.draw(laws(n)), data.draw(laws(n))
    log = data.draw(st.booleans())
    if log:
        with np.errstate(divide="ignore"):
            p, q = np.log(p).tolist(), np.log(q).tolist()
    if data.draw(st.booleans()):
        p, q = dict(enumerate(p)), dict(enumerate(q))
    mode = data.draw(st.integers(0, 5))
    if mode == 0:
        p = data.draw(st.one_of(hostile(), BAD_SCORES))
    elif mode == 1:
        log = data.draw(hostile())
    elif mode == 2:
        q = data.draw(st.lists(st.floats(), min_size=1, max_size=6))
    r = call("audit.exact_pair", audit.exact_pair, p, q, log=log)
    if r is not REJECTED:
        check_report("audit.exact_pair", r, data)


# -- regressions: every failure the fuzzing found, pinned ------------------------------------------
#
# Each entry is a call that once broke the property (the entry point and its hostile argument), with
# an optional check of the value where the right answer is known independently.


def _expect(check: Callable[[Any], bool], why: str) -> Callable[[Any], None]:
    def run(value: Any) -> None:
        assert check(value), f"{why}: got {value!r}"

    return run


def _no_check(value: Any) -> None:
    del value


REGRESSIONS: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {
    # fixed here -------------------------------------------------------------------------------
    "huge int epsilon is inf": (
        lambda: sdp.PureDP(10**400).epsilon_,
        _expect(lambda v: v == math.inf, "10**400 as a float is +inf"),
    ),
    "group of 10**400": (lambda: sdp.PureDP(0.0).group(10**400), _no_check),
    "noise given as an array": (lambda: sdp.ReportNoisyMax(0.0, np.array([])), _no_check),
    "laplace noisy max with a score of 9e307": (
        lambda: sdp.ReportNoisyMax(1.0, "laplace").probabilities([0.0, 8.98e307]),
        _expect(lambda p: list(p) == [0.0, 1.0], "the score 9e307 wins surely"),
    ),
    "laplace noisy max at epsilon 0 is uniform": (
        lambda: sdp.ReportNoisyMax(0.0, "laplace").probabilities([0.0, 1.0, -math.inf]),
        _expect(lambda p: list(p) == [0.5, 0.5, 0.0], "no information: uniform on the finite"),
    ),
    "scores with 1e308 and -1e308": (
        lambda: sdp.PermuteAndFlip(1.0).probabilities([1e308, -1.7976931348623157e308]),
        _expect(lambda p: list(p) == [1.0, 0.0], "the top score wins surely"),
    ),
    "utility bound with a subnormal coefficient": (
        lambda: sdp.Exponential(5e-324).utility_bound(10, 0.5),
        _expect(lambda v: v == math.inf, "c = ε/(2Δ) underflows: no utility guarantee"),
    ),
    "top-k probability of an integer outcome": (
        lambda: sdp.TopK(2, 1.0).probability([0.0, 1.0], -1596),
        _no_check,
    ),
    "top-k with sensitivity 0 is the sorted order": (
        # c = ∞: the sampler returns the two highest scores in order, so (0, 1) has probability 1
        lambda: sdp.TopK(2, 1.0, sensitivity=0.0).probability([0.0, -1.0, -2.0], (0, 1)),
        _expect(lambda v: v == 1.0, "peeling at c = ∞ takes the best remaining score"),
    ),
    "exact audit of top-k with sensitivity 0": (
        lambda: audit.exact(
            sdp.TopK(2, 1e-8, sensitivity=0.0), [-math.inf, -5.8, 0.0], [-math.inf, -5.8, 0.0]
        ).max_divergence(),
        _expect(lambda v: v == 0.0, "identical inputs"),
    ),
    "select with epsilon 0 and sensitivity 0": (
        lambda: sdp.ReportNoisyMax(0.0, sensitivity=0.0).select([0.0, 1.0], 0),
        _expect(lambda v: v in (0, 1), "an index"),
    ),
    "select with a subnormal sensitivity": (
        lambda: sdp.PermuteAndFlip(16.46, 5e-324, monotonic=True).select([0.0, -1e-300, 0.0], 1),
        _expect(lambda v: v in (0, 2), "c = ∞ chooses among the maxima"),
    ),
    "calibrate with an argument of another family": (
        lambda: sdp.calibrate(sdp.Gaussian, sdp.ApproxDP(1.0, 1e-6), k=2),
        _no_check,
    ),
    "calibrate top-k without k": (lambda: sdp.calibrate(sdp.TopK, sdp.PureDP(1.0)), _no_check),
    "calibrate an array": (lambda: sdp.calibrate(np.zeros(2), sdp.PureDP(1.0)), _no_check),  # type: ignore[type-var]
    "calibrate with method=array": (
        lambda: sdp.calibrate(sdp.TopK, sdp.PureDP(1.0), k=2, method=np.zeros(2)),
        _no_check,
    ),
    "discrete Gaussian with sigma 5e-324": (
        lambda: sdp.DiscreteGaussian(5e-324).delta(1.0),
        _no_check,
    ),
    "bounded range 1e308 at alpha 10": (
        lambda: sdp.BoundedRange(1e308).renyi(10.0),
        _expect(lambda v: v == 1e308, "D_α ≤ η, and D_α rounds to η here"),
    ),
    "exact pair with huge log-probabilities": (
        lambda: audit.exact_pair({0: -710.0, 1: -1.1}, [-3.7e-125, 4.3e16], log=True),
        _no_check,
    ),
    "exact pair at alpha 1e308": (
        lambda: audit.exact_pair([0.5, 0.5], [0.9, 0.1]).renyi(1e308),
        _expect(lambda v: abs(v - math.log(5.0)) < 1e-9, "→ D_∞ = log(0.5/0.1)"),
    ),
    "exact audit of a discrete Laplace with scale 1/4096": (
        lambda: audit.exact(sdp.DiscreteLaplace(Fraction(1, 4096)), 0, 1).renyi(1.0),
        # KL of the pair = ε0·tanh(ε0/2) (binary RR's law), ε0 = 4096: 4096 up to e^-4096
        _expect(lambda v: v == pytest.approx(4096.0, rel=1e-12), "KL = ε0·tanh(ε0/2)"),
    ),
    "exact audit of a discrete Laplace with scale 1e-319": (
        lambda: audit.exact(sdp.DiscreteLaplace(1e-319), 0, 1).renyi(2.0),
        _no_check,
    ),
    "bounded-range profile does not underflow to 0": (
        # δ(0) = (1 − e^{−η/2})²/(1 − e^{−η}) = η/4 + O(η³) for η = 3.14e-162; 0 would claim pure DP
        lambda: sdp.BoundedRange(3.14e-162).delta(0.0),
        _expect(lambda v: v >= 3.14e-162 / 4 * (1 - 1e-12), "δ(0) ≈ η/4"),
    ),
    "calibration cannot meet a target its profile underflows": (
        # the ε-BR profile at ε′ < ε is positive, so (1e-300, 0)-DP needs ε ≤ 1e-300
        lambda: sdp.calibrate(sdp.Exponential, sdp.ApproxDP(1e-300, 0.0)).epsilon_,
        _expect(lambda v: 0.99e-300 <= v <= 1e-300, "ε ≤ 1e-300 (and close to it)"),
    ),
    "zCDP of a tiny pure DP guarantee is positive": (
        lambda: sdp.convert(sdp.PureDP(1e-200), sdp.ZCDP).rho,
        _expect(lambda v: v > 0.0, "ε·tanh(ε/2) > 0 (rounded up, not to 0)"),
    ),
    "report-noisy-max with Gumbel noise is epsilon-BR": (
        lambda: sdp.convert(sdp.ReportNoisyMax(1.0, "gumbel"), sdp.BoundedRange).eta,
        _expect(lambda v: v == 1.0, "it is the exponential mechanism (Gumbel-max)"),
    ),
    "calibrate to a 1e-300 target": (
        lambda: sdp.calibrate(sdp.RandomizedResponse, sdp.PureDP(1e-300)).epsilon_,
        _expect(lambda v: 0.99e-300 <= v <= 1e-300, "ε ≤ 1e-300 (and close to it)"),
    ),
    "calibrate to a 1e-259 zCDP target": (
        lambda: sdp.calibrate(sdp.ReportNoisyMax, sdp.ZCDP(3.4e-259), 1e300, noise="gumbel"),
        _no_check,
    ),
    "composition with an MGF overflow": (
        lambda: sdp.compose([sdp.Exponential(1e308)]).explain(epsilon=5e-324),
        _no_check,
    ),
    # fixed in src/sharpdp/mechanisms/additive.py and _grid.py --------------------------------------
    "regression: Laplace with scale 5e-324 (grid step underflows to 0)": (
        lambda: sdp.Laplace(5e-324).epsilon(0.0),
        _no_check,
    ),
    "regression: Gaussian with sigma 5e-324 (grid step underflows to 0)": (
        lambda: sdp.Gaussian(5e-324).epsilon(1e-6),
        _no_check,
    ),
    "regression: Laplace release of 1e308 on a fine grid": (
        lambda: sdp.Laplace(1e-300).release(1e308, 0),
        _no_check,
    ),
    "regression: Gaussian release with sigma 1.7e308 overflows": (
        lambda: sdp.Gaussian(1.7e308).release(np.zeros(20), 0),
        _expect(lambda v: bool(np.all(np.isfinite(v))), "a released value is finite"),
    ),
    # fixed in src/sharpdp/mechanisms/randomized_response.py ---------------------------------------
    "regression: randomized response probabilities at epsilon 1000": (
        lambda: sdp.RandomizedResponse(1000.0).probabilities(0),
        _expect(lambda p: p == [1.0, 0.0], "e^1000/(e^1000 + 1) rounds to 1"),
    ),
    "regression: randomized response release of a ragged list": (
        lambda: sdp.RandomizedResponse(1.0).release([[1], [2, 3]], 0),
        _no_check,
    ),
    "regression: randomized response with 2**80 categories": (
        lambda: sdp.RandomizedResponse(1.0, 2**80).release(0, 0),
        _no_check,
    ),
    # fixed in src/sharpdp/composition.py ------------------------------------------------------------
    "regression: compose(5)": (lambda: sdp.compose(5), _no_check),  # type: ignore[arg-type]
    "regression: explain(delta=Fraction) prints": (
        lambda: str(sdp.compose([sdp.PureDP(1.0)]).explain(delta=Fraction(1, 10**6))),
        _no_check,
    ),
    "regression: KOV delta underflows to 0": (
        # 800,000 × 1e-5-DP: the loss reaches 8 > 7.9 with positive probability (randomized
        # response attains it), so (7.9, 0)-DP does not hold
        lambda: sdp.compose([(sdp.PureDP(1e-5), 800_000)]).certifies(7.9, 0.0),
        _expect(lambda v: v is False, "Σε = 8 > 7.9 is not (7.9, 0)-DP"),
    ),
    "regression: max_compositions against a pure budget": (
        # k·ε0 ≤ 7.9 exactly iff k ≤ ⌊7.9/1e-5⌋ = 789,999 (as exact rationals of the floats)
        lambda: sdp.max_compositions(sdp.PureDP(1e-5), sdp.PureDP(7.9)),
        _expect(lambda k: 789_000 <= k <= 789_999, "pure DP adds: k ≤ 789,999"),
    ),
    "regression: KOV with epsilon0 = 1e308": (
        # η-BR with η = 1e308: δ(1) = (1 − e^{(1−η)/2})²/(1 − e^{−η}) = 1 in floating point
        lambda: sdp.compose([sdp.Exponential(1e308)]).delta(1.0),
        _expect(lambda v: v == 1.0, "a mechanism with ε = 1e308 is not private at ε = 1"),
    ),
    "regression: KOV allocates k/2 floats": (
        lambda: sdp.compose([(sdp.PureDP(0.01), 10**9)]).epsilon(1e-6),
        _no_check,
    ),
    "regression: PLD of 1.7e7 discrete Gaussians (13 s: slow but bounded)": (
        lambda: sdp.compose([(sdp.DiscreteGaussian(1), 17_377_187)], adaptive=False).epsilon(
            0.0844
        ),
        _no_check,
    ),
}


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_regressions(name: str) -> None:
    thunk, check = REGRESSIONS[name]
    value = call(f"regression: {name}", thunk)
    if value is not REJECTED:
        check(value)
